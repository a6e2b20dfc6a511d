//! `remember`, `recall`, `list_memory_banks`: the agent's own memory (`self`) and the shared
//! banks an operator granted it.

use super::{store_error, MemorySettings};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use tackle_protocol::config::MemoryBankConfig;
use tackle_protocol::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use tackle_store::{MemoryAccess, MemoryHit, RecallQuery, Store};

/// Most memories one `recall` returns.
const MAX_LIMIT: usize = 100;

/// The caller's memory access, narrowed to each agent above it in its tree: a peer agent
/// started by another reaches only the banks both reach.
async fn access(s: &MemorySettings, cx: &ToolContext) -> Result<MemoryAccess, ToolError> {
    access_for(&s.store, &s.banks, cx).await
}

/// [`access`] from a store and grants, for the other tools that reach banks (skills).
pub(crate) async fn access_for(
    store: &Store,
    banks: &BTreeMap<String, MemoryBankConfig>,
    cx: &ToolContext,
) -> Result<MemoryAccess, ToolError> {
    let mut access = store
        .memory_access(&cx.agent, banks)
        .await
        .map_err(store_error)?;
    for above in &cx.ancestors {
        let theirs = store
            .memory_access(above, banks)
            .await
            .map_err(store_error)?;
        access = access.narrow(&theirs);
    }
    Ok(access)
}

/// `remember {key, value, tags?, bank?}`.
pub struct Remember(pub(super) Arc<MemorySettings>);

// Arguments of `remember`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RememberArgs {
    /// A short name for the fact.
    key: String,
    /// The fact.
    value: String,
    /// Labels to filter by in recall.
    #[serde(default)]
    tags: Vec<String>,
    /// A bank from list_memory_banks; omit for your own memory (`self`).
    bank: Option<String>,
}

#[async_trait]
impl Tool for Remember {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "remember",
            "Store a fact as key = value in your own memory (or in a shared bank you may write). \
             A later value for the same key replaces it. Example: {\"key\": \"user_timezone\", \"value\": \"America/New_York\"}.",
            super::NAME,
        )
        .parameters(crate::args::schema::<RememberArgs>())
    }

    fn sink(&self, args: &Value) -> Option<String> {
        // The agent's own memory stays with it; a shared bank is read by other agents.
        args.get("bank").and_then(Value::as_str).map(|bank| {
            format!(
                "writes into the shared memory bank `{}`",
                tackle_protocol::text::preview(bank, 60)
            )
        })
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: RememberArgs = crate::args::parse(args)?;
        let access = access(&self.0, cx).await?;
        let hit = self
            .0
            .store
            .remember(
                &access,
                args.bank.as_deref(),
                &args.key,
                &args.value,
                &args.tags,
            )
            .await
            .map_err(store_error)?;
        Ok(ToolOutput::text(format!(
            "Remembered in {}: `{} = {}`",
            hit.bank, hit.key, hit.value
        ))
        .with_structured(json!({"bank": hit.bank, "key": hit.key, "value": hit.value, "tags": hit.tags, "time": hit.updated_at})))
    }
}

/// `recall {query, tags?, limit?, bank?}`.
pub struct Recall(pub(super) Arc<MemorySettings>);

// Arguments of `recall`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RecallArgs {
    /// Keywords; "" lists the newest first.
    query: String,
    /// Only memories that carry every one of these tags (case-insensitive).
    #[serde(default)]
    tags: Vec<String>,
    /// At most this many (default 10).
    #[schemars(range(min = 1, max = MAX_LIMIT))]
    limit: Option<u64>,
    /// A bank from list_memory_banks; omit for your own memory (`self`).
    bank: Option<String>,
}

#[async_trait]
impl Tool for Recall {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "recall",
            "Search your own memory (or a shared bank you may read) by keywords over keys, values and tags, best match first. \
             An empty query lists the newest memories. Example: {\"query\": \"timezone\"}.",
            super::NAME,
        )
        .parameters(crate::args::schema::<RecallArgs>())
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: RecallArgs = crate::args::parse(args)?;
        let limit = match args.limit {
            None => 10,
            Some(n @ 1..=100) => usize::try_from(n).unwrap_or(MAX_LIMIT),
            Some(n) => {
                return Err(ToolError::invalid_arguments(format!(
                    "`limit` must be between 1 and {MAX_LIMIT}, not {n}"
                )))
            }
        };
        let access = access(&self.0, cx).await?;
        let query = RecallQuery {
            query: args.query,
            tags: args.tags,
            limit,
        };
        let hits = self
            .0
            .store
            .recall(&access, args.bank.as_deref(), &query)
            .await
            .map_err(store_error)?;
        let bank = args.bank.as_deref().unwrap_or(tackle_store::SELF_BANK);
        Ok(ToolOutput::text(render_hits(bank, &hits)).with_structured(json!({
            "bank": bank,
            "memories": hits.iter().map(|h| json!({"key": h.key, "value": h.value, "tags": h.tags, "time": h.updated_at})).collect::<Vec<_>>(),
        })))
    }
}

/// `- **key**: value [tags: a, b] (time)`, one line per memory.
fn render_hits(bank: &str, hits: &[MemoryHit]) -> String {
    if hits.is_empty() {
        return format!("No memories match in {bank}.");
    }
    hits.iter()
        .map(|h| {
            let tags = if h.tags.is_empty() {
                String::new()
            } else {
                format!(" [tags: {}]", h.tags.join(", "))
            };
            format!("- **{}**: {}{tags} ({})", h.key, h.value, h.updated_at)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `list_memory_banks {}`.
pub struct ListMemoryBanks(pub(super) Arc<MemorySettings>);

#[async_trait]
impl Tool for ListMemoryBanks {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "list_memory_banks",
            "List the memory banks you may use with remember/recall's `bank` argument and your permission on each (Read or Write). \
             `self` is your own memory. No arguments.",
            super::NAME,
        )
    }

    async fn call(&self, _args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let banks = access(&self.0, cx).await?.banks();
        let text = banks
            .iter()
            .map(|b| format!("- {} ({}, id {})", b.name, b.perm.label(), b.id))
            .collect::<Vec<_>>()
            .join("\n");
        Ok(ToolOutput::text(text).with_structured(json!({
            "banks": banks.iter().map(|b| json!({"name": b.name, "permission": b.perm.label(), "id": b.id})).collect::<Vec<_>>(),
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::settings;
    use super::*;
    use crate::mock_host::MockHost;
    use tackle_protocol::ErrorKind;

    fn tools(s: super::super::MemorySettings) -> (Remember, Recall, ListMemoryBanks) {
        let s = Arc::new(s);
        (
            Remember(Arc::clone(&s)),
            Recall(Arc::clone(&s)),
            ListMemoryBanks(s),
        )
    }

    #[tokio::test]
    async fn remember_then_recall_returns_the_value_with_tags_and_time() {
        let (remember, recall, _) = tools(settings(&[]));
        let cx = Arc::new(MockHost::new()).context();
        let out = remember
            .call(
                json!({"key": "user_timezone", "value": "America/New_York", "tags": ["Prefs"]}),
                &cx,
            )
            .await
            .unwrap();
        assert_eq!(
            out.content,
            "Remembered in self: `user_timezone = America/New_York`"
        );
        let out = recall
            .call(json!({"query": "timezone"}), &cx)
            .await
            .unwrap();
        assert!(
            out.content
                .starts_with("- **user_timezone**: America/New_York [tags: prefs] (20"),
            "{}",
            out.content
        );
        let none = recall
            .call(json!({"query": "nothing here"}), &cx)
            .await
            .unwrap();
        assert_eq!(none.content, "No memories match in self.");
    }

    #[tokio::test]
    async fn an_unknown_bank_is_not_found_and_a_read_only_bank_is_denied() {
        let (remember, recall, list) = tools(settings(&[
            ("team", &["default"], &[]),
            ("ops", &[], &["default"]),
        ]));
        let cx = Arc::new(MockHost::new()).context();
        let err = recall
            .call(json!({"query": "x", "bank": "Team"}), &cx)
            .await
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::NotFound);
        assert!(err.message.contains("self, ops, team"), "{}", err.message);
        let err = remember
            .call(json!({"key": "k", "value": "v", "bank": "team"}), &cx)
            .await
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::Denied);
        assert!(err.decision.is_some());
        assert!(remember
            .call(json!({"key": "k", "value": "v", "bank": "ops"}), &cx)
            .await
            .is_ok());
        let out = list.call(json!({}), &cx).await.unwrap();
        assert_eq!(
            out.content,
            "- self (Write, id agent:default)\n- ops (Write, id bank:ops)\n- team (Read, id bank:team)"
        );
    }

    #[tokio::test]
    async fn a_limit_out_of_range_is_invalid() {
        let (_, recall, _) = tools(settings(&[]));
        let cx = Arc::new(MockHost::new()).context();
        for limit in [0, 101] {
            let err = recall
                .call(json!({"query": "", "limit": limit}), &cx)
                .await
                .unwrap_err();
            assert_eq!(err.kind, ErrorKind::InvalidArguments);
        }
    }
}
