//! `skill_save`: the agent writes a skill into its own store, or into a bank it may write
//! (docs/decisions/0037-skill-sources.md). The skill goes through the same parser and limits
//! as a skill file on disk, and a name another skill already holds is refused, as an install's
//! is (docs/decisions/0027-skill-names-unique.md); saving a skill of its place again updates it.

use super::names::name_key;
use super::stored::{label, Meta};
use super::{file, tool_available, Shared};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;
use tackle_protocol::skills::MAX_SKILL_FILE_BYTES;
use tackle_protocol::{ToolContext, ToolError, ToolOutput, ToolSpec};
use tackle_store::{NewSkill, StoreError, SELF_BANK};

pub(crate) struct SkillSave {
    shared: Arc<Shared>,
}

impl SkillSave {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }
}

// Arguments of `skill_save`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The skill's name, e.g. "release-steps".
    name: Option<String>,
    /// One line: what it is for.
    description: Option<String>,
    /// The instructions (Markdown).
    body: Option<String>,
    /// Words that should bring it to mind.
    triggers: Option<Vec<String>>,
    /// Tools it needs; it is hidden where they are not available.
    requires_tools: Option<Vec<String>>,
    #[schemars(
        description = "Instead of the fields above: a whole skill file (YAML front matter between `---` lines, then the body)."
    )]
    content: Option<String>,
    /// A bank you may write; omit for your own store.
    bank: Option<String>,
}

impl Args {
    /// The skill file these arguments describe: `content` as given, or front matter (as JSON,
    /// which YAML reads, so no value can break out of it) and the body.
    fn skill_file(&self) -> Result<String, ToolError> {
        let fields = self.name.is_some()
            || self.description.is_some()
            || self.body.is_some()
            || self.triggers.is_some()
            || self.requires_tools.is_some();
        match (&self.content, fields) {
            (Some(_), true) => Err(ToolError::invalid_arguments(
                "give either `content` (a whole skill file) or `name`, `body` and the other fields, not both",
            )),
            (Some(content), false) => Ok(content.clone()),
            (None, _) => {
                let (Some(name), Some(body)) = (&self.name, &self.body) else {
                    return Err(ToolError::invalid_arguments(
                        "`name` and `body` are required (or `content`, a whole skill file)",
                    ));
                };
                let front = json!({
                    "name": name,
                    "description": self.description.clone().unwrap_or_default(),
                    "triggers": self.triggers.clone().unwrap_or_default(),
                    "requires_tools": self.requires_tools.clone().unwrap_or_default(),
                });
                Ok(format!("---\n{front}\n---\n{body}"))
            }
        }
    }
}

/// The store's refusals in the kinds the model acts on; a grant refusal names the
/// `memory_banks` rule, the grant that skill banks share.
fn store_error(e: StoreError) -> ToolError {
    match e {
        StoreError::InvalidSkill(m) => ToolError::invalid_arguments(m),
        other => crate::memory::store_error(other),
    }
}

#[async_trait]
impl tackle_protocol::Tool for SkillSave {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "skill_save",
            "Saves a skill (instructions to follow later, with a name and a description) into your own store, or into a shared skill bank you may write (`bank`, as list_memory_banks shows it). Saving a name your store (or that bank) already has updates it; a name another skill holds is refused. Example: {\"name\": \"release-steps\", \"description\": \"How to cut a release\", \"body\": \"1. Run the tests...\"}.",
            super::NAME,
        )
        .parameters(crate::args::schema::<Args>())
    }

    fn sink(&self, args: &Value) -> Option<String> {
        // A skill is instructions a later session follows: planting one is work for later.
        // Arguments that do not read may name a shared bank, which the words allow for.
        let unread =
            "saves a skill into a store or shared bank that later sessions follow".to_string();
        crate::args::decide(args, Some(unread), |a: Args| {
            Some(match a.bank.as_deref() {
                Some(bank) if bank != SELF_BANK => format!(
                    "saves a skill into the shared bank `{}`, which other agents follow",
                    tackle_protocol::text::preview(bank, 60)
                ),
                _ => "saves a skill into the agent's own store, which later sessions follow".into(),
            })
        })
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = crate::args::parse(args)?;
        let stored = self
            .shared
            .settings
            .stored
            .as_ref()
            .ok_or_else(|| ToolError::failed("there is no store to save skills in here"))?;
        let text = args.skill_file()?;
        if text.len() as u64 > MAX_SKILL_FILE_BYTES {
            return Err(ToolError::invalid_arguments(format!(
                "the skill is {} bytes; a skill is at most {MAX_SKILL_FILE_BYTES}",
                text.len()
            )));
        }
        let parsed = file::parse(text.as_bytes(), "").map_err(|e| {
            ToolError::invalid_arguments(format!("the skill was refused: {e}; nothing was saved"))
        })?;
        let place = args.bank.as_deref().unwrap_or(SELF_BANK);

        let view = self.shared.view(cx).await?;
        if let Some(other) = view
            .catalogue
            .claimants(&parsed.name)
            .find(|e| view.place(e.source) != Some(place))
        {
            return Err(ToolError::failed(format!(
                "refused: `{}` from {} already has the name `{}`; nothing was saved (choose another name)",
                tackle_protocol::text::preview(&other.meta.name, 100),
                other.origin(),
                tackle_protocol::text::preview(&parsed.name, 100),
            )));
        }

        let access = stored.access(cx).await?;
        let new = NewSkill {
            key: name_key(&parsed.name),
            name: parsed.name.clone(),
            description: parsed.description.clone(),
            meta: serde_json::to_string(&Meta::of(&parsed)).unwrap_or_else(|_| "{}".into()),
            body: parsed.body.clone(),
        };
        let saved = stored
            .store
            .save_skill(&access, Some(place), &new)
            .await
            .map_err(store_error)?;
        let view = self.shared.view(cx).await?;
        let available = tool_available(cx);
        let visible = view
            .catalogue
            .visible(&available)
            .iter()
            .any(|e| view.place(e.source) == Some(place) && e.meta.name == saved.name);
        let mut text = format!(
            "Saved skill `{}` in {}{}.\n",
            saved.name,
            label(&saved.place, access.agent()),
            if saved.replaced {
                ", replacing the earlier version"
            } else {
                ""
            }
        );
        text.push_str(if visible {
            "It is in the catalogue now; skill_show reads it.\n"
        } else {
            "It is not visible here: it needs tools (or a system) that are not available.\n"
        });
        Ok(ToolOutput::text(text).with_structured(json!({
            "name": saved.name,
            "bank": saved.place,
            "replaced": saved.replaced,
            "visible": visible,
            "time": saved.updated_at,
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skills::SkillsSettings;
    use tackle_protocol::Tool;

    fn tool() -> SkillSave {
        let settings = SkillsSettings::new(Arc::new(tackle_host::DiskSkillDirs));
        SkillSave::new(Arc::new(Shared::new(settings)))
    }

    /// Every call is a sink; the words follow the typed `bank`, and arguments that do not read
    /// are still a sink, in words that allow for a shared bank.
    #[test]
    fn the_sink_words_follow_the_typed_bank_and_unread_arguments_are_a_sink() {
        let t = tool();
        let schema = t.spec().parameters;
        let own = "saves a skill into the agent's own store, which later sessions follow";
        let team = "saves a skill into the shared bank `team`, which other agents follow";
        for (args, said) in [
            (json!({"name": "n", "body": "b"}), own),
            (json!({"name": "n", "body": "b", "bank": "self"}), own),
            (
                json!({"content": "---\nname: n\n---\nb", "bank": "team"}),
                team,
            ),
        ] {
            assert!(crate::args::contract::accepts(&schema, &args), "{args}");
            assert_eq!(t.sink(&args).as_deref(), Some(said), "{args}");
        }
        for unread in [
            json!({"name": "n", "body": "b", "bank": "team", "later": 1}),
            json!({"name": "n", "body": "b", "bank": 7}),
        ] {
            assert_eq!(
                t.sink(&unread).as_deref(),
                Some("saves a skill into a store or shared bank that later sessions follow"),
                "{unread}"
            );
        }
    }
}
