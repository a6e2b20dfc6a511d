//! `longterm_memory {action: set|get|search|delete|list|categories|pin, …}`: the calling
//! agent's key → entry store with categories, tags, importance, access counts and pins.

use super::{store_error, MemorySettings};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;
use tackle_protocol::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use tackle_store::{LongtermEntry, LongtermSet, PINNED};

/// Most entries one `search` or `list` returns.
const MAX_RESULTS: usize = 50;

/// The `longterm_memory` tool: the calling agent's key → entry store.
pub struct LongtermMemory(pub(super) Arc<MemorySettings>);

#[derive(Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq)]
#[schemars(inline)]
#[serde(rename_all = "snake_case")]
enum Action {
    Set,
    Get,
    Search,
    Delete,
    List,
    Categories,
    Pin,
}

// Arguments of `longterm_memory`; which fields each action reads is in the tool's
// description.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    action: Action,
    key: Option<String>,
    value: Option<String>,
    /// For set (required) and list (a filter).
    category: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    /// Default 1; decays by half per 30 days unread, except pinned.
    #[schemars(range(min = 0))]
    importance: Option<f64>,
    /// For search.
    query: Option<String>,
}

fn required<'a>(
    field: &str,
    value: &'a Option<String>,
    action: &str,
) -> Result<&'a str, ToolError> {
    match value.as_deref() {
        Some(v) if !v.trim().is_empty() => Ok(v),
        _ => Err(ToolError::invalid_arguments(format!(
            "`{field}` is required for action `{action}`"
        ))),
    }
}

fn entry_json(e: &LongtermEntry) -> Value {
    json!({
        "key": e.key, "value": e.value, "category": e.category, "tags": e.tags,
        "importance": e.importance, "created_at": e.created_at, "last_accessed": e.last_accessed,
        "access_count": e.access_count,
    })
}

fn entry_line(e: &LongtermEntry) -> String {
    let tags = if e.tags.is_empty() {
        String::new()
    } else {
        format!(" [tags: {}]", e.tags.join(", "))
    };
    format!(
        "- **{}** ({}): {}{tags} (importance {}, read {} times)",
        e.key, e.category, e.value, e.importance, e.access_count
    )
}

#[async_trait]
impl Tool for LongtermMemory {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "longterm_memory",
            "Your long-term notes: entries with a category, tags and importance. \
             Actions: set (key, value, category), get (key), search (query), delete (key), \
             list (category?), categories, pin (key, value: an entry kept at full importance). \
             Example: {\"action\": \"set\", \"key\": \"editor\", \"value\": \"helix\", \"category\": \"prefs\"}.",
            super::NAME,
        )
        .parameters(crate::args::schema::<Args>())
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = crate::args::parse(args)?;
        let store = &self.0.store;
        let agent = cx.agent.as_str();
        match args.action {
            Action::Set | Action::Pin => {
                let name = if args.action == Action::Pin {
                    "pin"
                } else {
                    "set"
                };
                let key = required("key", &args.key, name)?;
                let value = args.value.as_deref().ok_or_else(|| {
                    ToolError::invalid_arguments(format!("`value` is required for action `{name}`"))
                })?;
                let category = if args.action == Action::Pin {
                    PINNED
                } else {
                    required("category", &args.category, name)?
                };
                let importance = args.importance.unwrap_or(1.0);
                if !importance.is_finite() || importance < 0.0 {
                    return Err(ToolError::invalid_arguments("`importance` must be ≥ 0"));
                }
                let e = store
                    .longterm_set(
                        agent,
                        LongtermSet {
                            key: key.to_string(),
                            value: value.to_string(),
                            category: category.trim().to_string(),
                            tags: args.tags,
                            importance,
                        },
                    )
                    .await
                    .map_err(store_error)?;
                let verb = if args.action == Action::Pin {
                    "Pinned"
                } else {
                    "Stored"
                };
                Ok(
                    ToolOutput::text(format!("{verb} `{}` in category `{}`.", e.key, e.category))
                        .with_structured(entry_json(&e)),
                )
            }
            Action::Get => {
                let key = required("key", &args.key, "get")?;
                let e = store
                    .longterm_get(agent, key)
                    .await
                    .map_err(store_error)?
                    .ok_or_else(|| ToolError::not_found(format!("no long-term entry `{key}`")))?;
                let j = entry_json(&e);
                Ok(ToolOutput::text(j.to_string()).with_structured(j))
            }
            Action::Search => {
                let query = required("query", &args.query, "search")?;
                let hits = store
                    .longterm_search(agent, query, MAX_RESULTS)
                    .await
                    .map_err(store_error)?;
                if hits.is_empty() {
                    return Ok(ToolOutput::text(format!(
                        "No long-term entries match `{query}`."
                    )));
                }
                let text = hits
                    .iter()
                    .map(|h| format!("{} score {:.2}", entry_line(&h.entry), h.score))
                    .collect::<Vec<_>>()
                    .join("\n");
                Ok(ToolOutput::text(text).with_structured(json!({
                    "entries": hits.iter().map(|h| json!({"entry": entry_json(&h.entry), "score": h.score})).collect::<Vec<_>>()
                })))
            }
            Action::Delete => {
                let key = required("key", &args.key, "delete")?;
                if store
                    .longterm_delete(agent, key)
                    .await
                    .map_err(store_error)?
                {
                    Ok(ToolOutput::text(format!("Deleted `{key}`.")))
                } else {
                    Err(ToolError::not_found(format!("no long-term entry `{key}`")))
                }
            }
            Action::List => {
                let entries = store
                    .longterm_list(agent, args.category.as_deref(), MAX_RESULTS)
                    .await
                    .map_err(store_error)?;
                if entries.is_empty() {
                    return Ok(ToolOutput::text("No long-term entries."));
                }
                let text = entries
                    .iter()
                    .map(entry_line)
                    .collect::<Vec<_>>()
                    .join("\n");
                Ok(ToolOutput::text(text).with_structured(json!({
                    "entries": entries.iter().map(entry_json).collect::<Vec<_>>()
                })))
            }
            Action::Categories => {
                let cats = store
                    .longterm_categories(agent)
                    .await
                    .map_err(store_error)?;
                if cats.is_empty() {
                    return Ok(ToolOutput::text("No categories yet."));
                }
                let text = cats
                    .iter()
                    .map(|(c, n)| format!("- {c} ({n})"))
                    .collect::<Vec<_>>()
                    .join("\n");
                Ok(ToolOutput::text(text).with_structured(json!({
                    "categories": cats.iter().map(|(c, n)| json!({"category": c, "entries": n})).collect::<Vec<_>>()
                })))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::settings;
    use super::*;
    use crate::mock_host::MockHost;
    use tackle_protocol::ErrorKind;

    #[tokio::test]
    async fn set_get_search_list_categories_pin_and_delete_work_per_agent() {
        let tool = LongtermMemory(Arc::new(settings(&[])));
        let cx = Arc::new(MockHost::new()).context();
        let ok = |v: Value| {
            let tool = &tool;
            let cx = &cx;
            async move { tool.call(v, cx).await }
        };
        ok(json!({"action": "set", "key": "editor", "value": "helix", "category": "prefs", "tags": ["Tools"]}))
            .await
            .unwrap();
        let out = ok(json!({"action": "pin", "key": "rule", "value": "no friday deploys"}))
            .await
            .unwrap();
        assert_eq!(out.content, "Pinned `rule` in category `pinned`.");
        let got = ok(json!({"action": "get", "key": "editor"})).await.unwrap();
        let j: Value = serde_json::from_str(&got.content).unwrap();
        assert_eq!(j["value"], "helix");
        assert_eq!(j["access_count"], 1);
        assert_eq!(j["tags"], json!(["tools"]));
        let found = ok(json!({"action": "search", "query": "helix"}))
            .await
            .unwrap();
        assert!(
            found.content.starts_with("- **editor** (prefs): helix"),
            "{}",
            found.content
        );
        let cats = ok(json!({"action": "categories"})).await.unwrap();
        assert_eq!(cats.content, "- pinned (1)\n- prefs (1)");
        let list = ok(json!({"action": "list", "category": "pinned"}))
            .await
            .unwrap();
        assert!(list.content.contains("no friday deploys"));
        assert!(!list.content.contains("helix"));
        ok(json!({"action": "delete", "key": "editor"}))
            .await
            .unwrap();
        let err = ok(json!({"action": "get", "key": "editor"}))
            .await
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::NotFound);
    }

    #[tokio::test]
    async fn missing_fields_and_negative_importance_are_invalid_arguments() {
        let tool = LongtermMemory(Arc::new(settings(&[])));
        let cx = Arc::new(MockHost::new()).context();
        for args in [
            json!({"action": "set", "key": "k", "value": "v"}),
            json!({"action": "set", "key": "k", "category": "c"}),
            json!({"action": "get"}),
            json!({"action": "search"}),
            json!({"action": "set", "key": "k", "value": "v", "category": "c", "importance": -1}),
            json!({"action": "explode"}),
        ] {
            let err = tool.call(args.clone(), &cx).await.unwrap_err();
            assert_eq!(err.kind, ErrorKind::InvalidArguments, "{args}");
        }
    }
}
