//! `GET /v1/audit`: the audit log with `tackle audit`'s filters as query parameters
//! (`session`, `tool`, `since`, `limit`), read through the same store query; oldest first.

use super::errors::ApiError;
use super::query;
use super::Gateway;
use axum::extract::State;
use axum::http::Uri;
use axum::Json;
use schemars::JsonSchema;
use serde::Serialize;
use std::sync::Arc;
use tackle_protocol::ids::IdKind;
use tackle_protocol::Verdict;
use tackle_store::{AuditEntry, AuditQuery, AuditSince, StoreError};

/// One tool call as recorded.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AuditView {
    /// RFC 3339.
    pub ts: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    pub agent: String,
    /// `model`, `mcp` or `cli`; empty in records written before callers were kept.
    pub caller: String,
    pub tool: String,
    /// A short, redacted summary of the arguments.
    pub args_summary: String,
    /// `allow`, `deny` or `ask`.
    pub decision: String,
    pub rule: String,
    pub why: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approver: Option<String>,
    /// `ok`, or the error kind the call ended in; `running` or `interrupted`.
    pub outcome: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct AuditList {
    pub records: Vec<AuditView>,
}

impl From<AuditEntry> for AuditView {
    fn from(e: AuditEntry) -> Self {
        let r = e.record;
        Self {
            ts: r.ts,
            session: r.session_id,
            agent: r.agent,
            caller: e.caller,
            tool: r.tool,
            args_summary: r.args_summary,
            decision: match r.verdict {
                Verdict::Allow => "allow",
                Verdict::Deny => "deny",
                Verdict::Ask => "ask",
            }
            .to_string(),
            rule: r.rule,
            why: r.why,
            approver: r.approver,
            outcome: r.outcome,
            duration_ms: r.duration_ms,
        }
    }
}

pub const QUERY: &[query::Param] = &[
    query::Param {
        name: "session",
        about: "Only this session's records",
        kind: query::ParamKind::Id(IdKind::Session),
    },
    query::Param {
        name: "tool",
        about: "Only this tool's records",
        kind: query::ParamKind::Text,
    },
    query::Param {
        name: "since",
        about: "Only records since a duration ago (`30m`, `2h`, `7d`) or an RFC 3339 time",
        kind: query::ParamKind::Text,
    },
    query::LIMIT,
];

/// `since` as `tackle audit --since` reads it: a duration back from now (`30m`, `2h`, `7d`),
/// else a time the store parses.
fn since(text: &str) -> AuditSince {
    match crate::commands::audit::parse_duration(text.trim()) {
        Some(ago) => AuditSince::Ago(ago),
        None => AuditSince::At(text.to_string()),
    }
}

pub async fn list(State(gw): State<Arc<Gateway>>, uri: Uri) -> Result<Json<AuditList>, ApiError> {
    let mut pairs = query::pairs(&uri, QUERY)?;
    let limit = query::limit(&pairs)?;
    if let Some(session) = pairs.get("session") {
        query::checked_id(IdKind::Session, session)?;
    }
    let q = AuditQuery {
        session: pairs.remove("session"),
        tool: pairs.remove("tool"),
        since: pairs.remove("since").as_deref().map(since),
        limit,
    };
    match gw.store.audit_entries(q).await {
        Ok(records) => Ok(Json(AuditList {
            records: records.into_iter().map(AuditView::from).collect(),
        })),
        Err(e @ StoreError::BadTime { .. }) => Err(ApiError::bad_request(format!(
            "since {e}, or a duration such as 30m, 2h or 7d"
        ))),
        Err(e) => Err(ApiError::failed(format!("cannot read the audit log: {e}"))),
    }
}
