//! The dispatcher's audit seam: every decision is handed to an [`AuditSink`] (the binary
//! connects it to the SQLite audit log in `tackle-store`).

use serde::Serialize;
use tackle_protocol::Verdict;

/// One decision about one call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditEvent {
    pub session_id: String,
    pub agent: String,
    pub tool: String,
    /// A short, redacted summary of the arguments (never the full arguments).
    pub args_summary: String,
    /// `allowed`, `denied`, `needs_approval`, `approved`, `rejected`, `failed`, `ok`, `timeout`, `invalid_arguments`, `not_found`.
    pub verdict: String,
    pub rule: String,
    pub why: String,
    /// Who approved (`policy`, `tty`, `--yes`, `session`, `mcp-elicitation`).
    pub approver: String,
    pub duration_ms: u64,
}

#[async_trait::async_trait]
pub trait AuditSink: Send + Sync {
    /// Append one event. Awaited by the dispatcher before the call's result is returned, so an
    /// outcome is never reported without its record.
    async fn record(&self, event: AuditEvent);
}

/// The SQLite audit log in the state store.
#[async_trait::async_trait]
impl AuditSink for tackle_store::Store {
    async fn record(&self, event: AuditEvent) {
        let verdict = match event.verdict.as_str() {
            "denied" => Verdict::Deny,
            "needs_approval" => Verdict::Ask,
            _ => Verdict::Allow,
        };
        let record = tackle_store::AuditRecord {
            ts: String::new(),
            session_id: (!event.session_id.is_empty()).then_some(event.session_id),
            agent: event.agent,
            tool: event.tool,
            args_summary: event.args_summary,
            verdict,
            rule: event.rule,
            why: event.why,
            approver: (!event.approver.is_empty()).then_some(event.approver),
            outcome: event.verdict,
            duration_ms: Some(event.duration_ms),
        };
        if let Err(e) = self.append_audit(record).await {
            tracing::error!("could not append to the audit log: {e}");
        }
    }
}
