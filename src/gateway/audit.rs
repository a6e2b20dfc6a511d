//! One audit line per API request: who (the token's name, never the token), what (method,
//! path, status), for which agent and session, and how it ended. The tool calls a turn makes
//! are audited by the dispatcher as always; the request's line carries the same session id.
//! A streamed completion's line is written when its stream starts (its status is known then),
//! so its duration is the time to the first byte; the turn's calls follow in their own lines.

use axum::response::Response;
use std::time::Duration;
use tackle_protocol::{ErrorKind, Verdict};
use tackle_store::{AuditEntry, AuditRecord, Store};

/// What a handler tells the request's audit line: the agent and session a turn ran as.
#[derive(Debug, Clone, Default)]
pub struct TurnNote {
    pub agent: String,
    pub session: String,
}

/// The request's line, read from its response before the body goes out.
pub fn entry(
    token: Option<&str>,
    method: &str,
    path: &str,
    response: &Response,
    took: Duration,
) -> AuditEntry {
    let status = response.status();
    let note = response.extensions().get::<TurnNote>();
    let kind = response.extensions().get::<ErrorKind>();
    let who = token.unwrap_or("-");
    let record = AuditRecord {
        ts: String::new(),
        session_id: note.map(|n| n.session.clone()).filter(|s| !s.is_empty()),
        agent: note.map_or_else(|| "-".to_string(), |n| n.agent.clone()),
        tool: "api".to_string(),
        args_summary: format!(
            "{method} {} → {}",
            tackle_protocol::text::preview(path, 200),
            status.as_u16()
        ),
        verdict: if status.is_client_error() && kind == Some(&ErrorKind::Denied) {
            Verdict::Deny
        } else {
            Verdict::Allow
        },
        rule: "gateway".to_string(),
        why: format!("token `{who}`"),
        approver: None,
        outcome: match kind {
            Some(kind) => kind.as_str().to_string(),
            None if status.is_success() => "ok".to_string(),
            None => ErrorKind::Failed.as_str().to_string(),
        },
        duration_ms: u64::try_from(took.as_millis()).ok(),
    };
    AuditEntry {
        record,
        caller: format!("api:{who}"),
    }
}

/// Appends the request's line; a store that cannot take it is logged, not fatal: the request
/// was already answered.
pub async fn append(store: &Store, entry: AuditEntry) {
    let summary = entry.record.args_summary.clone();
    if let Err(e) = store.append_audit_entry(entry).await {
        tracing::warn!("cannot audit the API request {summary}: {e}");
    }
}
