//! The dispatcher's audit seam: every decision is handed to an [`AuditSink`] (the binary
//! connects it to the SQLite audit log in `tackle-store`).

use serde::Serialize;

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

pub trait AuditSink: Send + Sync {
    /// Must not block for long: implementations queue or write quickly.
    fn record(&self, event: AuditEvent);
}
