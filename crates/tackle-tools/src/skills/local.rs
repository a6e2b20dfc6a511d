//! `skill_list`, `skill_search`, `skill_show`: the catalogue, Low risk, no approval.

use super::catalogue::{matches, nearest, Catalogue, Entry};
use super::names::name_key;
use super::{tool_available, Shared};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;
use tackle_protocol::{ToolContext, ToolError, ToolOutput, ToolSpec};

/// `name — description (triggers: …)`, numbered; never a body. The structured rows add where
/// each skill comes from and the skills of the same name it hides (`shadows`), all of them
/// ones this caller can reach.
fn render(entries: &[&Entry], cat: &Catalogue) -> (String, Value) {
    let mut text = String::new();
    let mut rows = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let m = &e.meta;
        let mut line = format!("{}. {}", i + 1, m.name);
        if !m.description.is_empty() {
            line.push_str(&format!(" — {}", m.description));
        }
        if !m.triggers.is_empty() {
            line.push_str(&format!(" (triggers: {})", m.triggers.join(", ")));
        }
        text.push_str(&line);
        text.push('\n');
        let shadows: Vec<Value> = cat
            .shadowed
            .iter()
            .filter(|s| s.by.source == e.source && s.by.meta.name == m.name)
            .map(|s| {
                json!({
                    "name": s.entry.meta.name,
                    "source": s.entry.source_label,
                    "origin": s.entry.origin(),
                })
            })
            .collect();
        rows.push(json!({
            "name": m.name,
            "description": m.description,
            "triggers": m.triggers,
            "source": e.source_label,
            "origin": e.origin(),
            "shadows": shadows,
        }));
    }
    (text, Value::Array(rows))
}

pub(crate) struct SkillList {
    shared: Arc<Shared>,
}

impl SkillList {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }
}

// `skill_list` takes nothing; its schema is the spec's default empty object, which a derived
// one would write without `properties`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

#[async_trait]
impl tackle_protocol::Tool for SkillList {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "skill_list",
            "Lists the skills available to you, one line each: name — description (triggers). Bodies are not included; fetch one with skill_show.",
            super::NAME,
        )
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let NoArgs {} = crate::args::parse(args)?;
        let view = self.shared.view(cx).await?;
        let cat = &view.catalogue;
        let available = tool_available(cx);
        let visible = cat.visible(&available);
        if visible.is_empty() {
            return Ok(ToolOutput::text("No skills are available.").with_structured(json!([])));
        }
        let (text, rows) = render(&visible, cat);
        Ok(ToolOutput::text(text).with_structured(rows))
    }
}

pub(crate) struct SkillSearch {
    shared: Arc<Shared>,
}

impl SkillSearch {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }
}

// Arguments of `skill_search`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    /// Text to look for, e.g. "git".
    query: String,
}

#[async_trait]
impl tackle_protocol::Tool for SkillSearch {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "skill_search",
            "Searches the skill catalogue: skills whose name, description or triggers contain the query (case-insensitive). Bodies are not included; fetch one with skill_show.",
            super::NAME,
        )
        .parameters(crate::args::schema::<SearchArgs>())
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let SearchArgs { query } = crate::args::parse(args)?;
        let query = query.as_str();
        let view = self.shared.view(cx).await?;
        let cat = &view.catalogue;
        let available = tool_available(cx);
        let hits: Vec<&Entry> = cat
            .visible(&available)
            .into_iter()
            .filter(|e| matches(&e.meta, query))
            .collect();
        if hits.is_empty() {
            return Ok(ToolOutput::text(format!(
                "No skill matches `{}`.",
                tackle_protocol::text::preview(query, 80)
            ))
            .with_structured(json!([])));
        }
        let (text, rows) = render(&hits, cat);
        Ok(ToolOutput::text(text).with_structured(rows))
    }
}

pub(crate) struct SkillShow {
    shared: Arc<Shared>,
}

impl SkillShow {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }
}

// Arguments of `skill_show`: one of the two names is needed (checked in `call`).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ShowArgs {
    /// The skill's name, e.g. "release-checklist".
    name: Option<String>,
    /// Same as `name`.
    skill: Option<String>,
}

#[async_trait]
impl tackle_protocol::Tool for SkillShow {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "skill_show",
            "Returns a skill's full instructions (its body) by name, as skill_list or skill_search showed it. Call it when a skill fits the task, then follow it.",
            super::NAME,
        )
        .parameters(crate::args::schema::<ShowArgs>())
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: ShowArgs = crate::args::parse(args)?;
        let name = args
            .name
            .as_deref()
            .or(args.skill.as_deref())
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .ok_or_else(|| {
                ToolError::invalid_arguments(
                    "`name` is required: the skill's name as skill_list shows it",
                )
            })?;
        let view = self.shared.view(cx).await?;
        let available = tool_available(cx);
        let visible = view.catalogue.visible(&available);
        let key = name_key(name);
        let Some(entry) = visible.iter().find(|e| name_key(&e.meta.name) == key) else {
            let near = nearest(name, visible.iter().map(|e| e.meta.name.as_str()));
            let hint = if near.is_empty() {
                "; skill_list shows every skill".to_string()
            } else {
                tackle_protocol::suggest::hint(&near)
            };
            return Err(ToolError::not_found(format!(
                "no skill named `{}`{hint}",
                tackle_protocol::text::preview(name, 80)
            )));
        };
        let body = self.shared.body(&view, entry, cx).await?;
        let m = &entry.meta;
        // Which file was read, so a person (and the model) can tell one `deploy` from another.
        let from = format!("Source: {}", entry.origin());
        let text = if m.description.is_empty() {
            format!("# Skill: {}\n{from}\n\n{body}", m.name)
        } else {
            format!("# Skill: {}\n{}\n{from}\n\n{body}", m.name, m.description)
        };
        Ok(ToolOutput::text(text).with_structured(json!({
            "name": m.name,
            "description": m.description,
            "source": entry.source_label,
            "path": m.locator,
            "text": body,
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::super::{extension, SkillDir, SkillsSettings};
    use crate::mock_host::MockHost;
    use serde_json::json;
    use std::path::Path;
    use std::sync::Arc;
    use tackle_protocol::{ErrorKind, Tool, ToolCatalog, ToolContext, ToolSpec};

    /// A registry that knows only these tool names.
    struct Names(Vec<&'static str>);

    impl ToolCatalog for Names {
        fn spec(&self, name: &str) -> Option<ToolSpec> {
            self.0
                .contains(&name)
                .then(|| ToolSpec::new(name, "", "test"))
        }
        fn suggest(&self, _name: &str) -> Vec<String> {
            Vec::new()
        }
    }

    fn write(dir: &Path, rel: &str, text: &str) {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn skill(name: &str, desc: &str, extra: &str, body: &str) -> String {
        format!("---\nname: {name}\ndescription: {desc}\n{extra}---\n{body}")
    }

    struct Setup {
        _dirs: tempfile::TempDir,
        tools: Vec<Arc<dyn Tool>>,
        cx: ToolContext,
    }

    impl Setup {
        fn tool(&self, name: &str) -> Arc<dyn Tool> {
            self.tools
                .iter()
                .find(|t| t.spec().name == name)
                .cloned()
                .unwrap()
        }
    }

    /// Two skills dirs (`first`, `second`) filled by `fill`, and a registry with `tools`.
    fn setup(fill: impl FnOnce(&Path, &Path), tools: Vec<&'static str>) -> Setup {
        let d = tempfile::tempdir().unwrap();
        let (first, second) = (d.path().join("first"), d.path().join("second"));
        fill(&first, &second);
        let mut settings = SkillsSettings::new(Arc::new(tackle_host::DiskSkillDirs));
        settings.dirs = vec![
            SkillDir {
                label: "first".into(),
                path: first,
            },
            SkillDir {
                label: "second".into(),
                path: second,
            },
        ];
        let host = Arc::new(MockHost::new());
        let cx = host.context().with_catalog(Arc::new(Names(tools)));
        Setup {
            _dirs: d,
            tools: extension(settings).tools(),
            cx,
        }
    }

    const BODY: &str = "SECRET-BODY-MARKER: run the release script.";

    #[tokio::test]
    async fn list_and_search_never_show_a_body_and_show_does() {
        let s = setup(
            |first, _| {
                write(
                    first,
                    "release/SKILL.md",
                    &skill("release", "Cut a release", "triggers: [ship]\n", BODY),
                );
                write(
                    first,
                    "notes.md",
                    &skill("notes", "Take notes", "", "notes body"),
                );
            },
            vec![],
        );
        let list = s.tool("skill_list").call(json!({}), &s.cx).await.unwrap();
        assert_eq!(
            list.content,
            "1. notes — Take notes\n2. release — Cut a release (triggers: ship)\n"
        );
        let search = s
            .tool("skill_search")
            .call(json!({"query": "SHIP"}), &s.cx)
            .await
            .unwrap();
        assert!(search.content.contains("release"), "{}", search.content);
        assert!(!search.content.contains("notes"), "{}", search.content);
        for out in [&list, &search] {
            assert!(!out.content.contains("SECRET-BODY-MARKER"));
            let structured = out.structured.as_ref().unwrap().to_string();
            assert!(!structured.contains("SECRET-BODY-MARKER"));
        }
        let shown = s
            .tool("skill_show")
            .call(json!({"skill": "release"}), &s.cx)
            .await
            .unwrap();
        assert!(shown.content.contains(BODY), "{}", shown.content);
        let st = shown.structured.unwrap();
        assert_eq!(st["name"], "release");
        assert_eq!(st["description"], "Cut a release");
        assert_eq!(st["text"], BODY);
    }

    #[tokio::test]
    async fn the_first_directory_wins_a_name_both_have() {
        let s = setup(
            |first, second| {
                write(
                    first,
                    "deploy/SKILL.md",
                    &skill("deploy", "from first", "", "FIRST"),
                );
                write(
                    second,
                    "deploy/SKILL.md",
                    &skill("deploy", "from second", "", "SECOND"),
                );
                write(second, "other.md", &skill("other", "only second", "", "O"));
            },
            vec![],
        );
        let list = s.tool("skill_list").call(json!({}), &s.cx).await.unwrap();
        assert_eq!(
            list.content,
            "1. deploy — from first\n2. other — only second\n"
        );
        let shown = s
            .tool("skill_show")
            .call(json!({"name": "deploy"}), &s.cx)
            .await
            .unwrap();
        assert!(shown.content.contains("FIRST") && !shown.content.contains("SECOND"));
    }

    #[tokio::test]
    async fn a_skill_needing_an_unregistered_tool_is_invisible_to_every_tool() {
        let s = setup(
            |first, _| {
                write(
                    first,
                    "gated/SKILL.md",
                    &skill("gated", "needs git", "requires_tools: [git, shell]\n", "G"),
                );
                write(
                    first,
                    "open/SKILL.md",
                    &skill("open", "needs shell", "requires_tools: [shell]\n", "O"),
                );
            },
            vec!["shell"],
        );
        let list = s.tool("skill_list").call(json!({}), &s.cx).await.unwrap();
        assert_eq!(list.content, "1. open — needs shell\n");
        let search = s
            .tool("skill_search")
            .call(json!({"query": "needs"}), &s.cx)
            .await
            .unwrap();
        assert!(!search.content.contains("gated"), "{}", search.content);
        let err = s
            .tool("skill_show")
            .call(json!({"name": "gated"}), &s.cx)
            .await
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::NotFound);
    }

    #[tokio::test]
    async fn an_unknown_name_is_not_found_with_the_nearest_names() {
        let s = setup(
            |first, _| {
                write(
                    first,
                    "release-checklist/SKILL.md",
                    &skill("release-checklist", "d", "", "b"),
                );
            },
            vec![],
        );
        let err = s
            .tool("skill_show")
            .call(json!({"name": "release-check"}), &s.cx)
            .await
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::NotFound);
        assert!(
            err.message.contains("did you mean release-checklist"),
            "{err}"
        );
        let err = s
            .tool("skill_show")
            .call(json!({}), &s.cx)
            .await
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidArguments);
    }

    #[tokio::test]
    async fn base_dir_in_a_body_becomes_the_skill_directory() {
        let s = setup(
            |first, _| {
                write(
                    first,
                    "tpl/SKILL.md",
                    &skill("tpl", "d", "", "see {baseDir}/ref.md"),
                );
            },
            vec![],
        );
        let shown = s
            .tool("skill_show")
            .call(json!({"name": "tpl"}), &s.cx)
            .await
            .unwrap();
        assert!(
            shown.content.contains("/first/tpl/ref.md"),
            "{}",
            shown.content
        );
        assert!(!shown.content.contains("{baseDir}"));
    }

    #[tokio::test]
    async fn a_file_with_bad_front_matter_is_skipped_and_the_rest_still_load() {
        let s = setup(
            |first, _| {
                write(first, "bad/SKILL.md", "---\nname: [oops\n---\nbody");
                write(first, "good.md", &skill("good", "fine", "", "g"));
            },
            vec![],
        );
        let list = s.tool("skill_list").call(json!({}), &s.cx).await.unwrap();
        assert_eq!(list.content, "1. good — fine\n");
    }
}
