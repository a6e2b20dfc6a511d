//! The dispatcher's audit seam: every decision is handed to an [`AuditSink`] (the binary
//! connects it to the SQLite audit log in `tackle-store`).

use serde::Serialize;
use tackle_protocol::Verdict;

/// The outcome of a call that has been allowed and not ended yet (see [`AuditSink::intent`]).
pub const RUNNING: &str = tackle_store::RUNNING;

/// One decision about one call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditEvent {
    /// The calling session (empty: none).
    pub session_id: String,
    /// The calling agent.
    pub agent: String,
    /// Who made the call: `model` (an agent's model), `mcp` (an MCP client), `cli`.
    pub caller: String,
    /// The tool called.
    pub tool: String,
    /// A short, redacted summary of the arguments (the redacted arguments whole, bounded, are
    /// in `detail`).
    pub args_summary: String,
    /// The decision: `Allow` (the call ran), `Deny` (refused before it ran: unknown tool,
    /// invalid arguments, policy, a person's no), `Ask` (it needed an approval no one gave).
    pub decision: Verdict,
    /// The outcome: [`RUNNING`], `ok`, `ok_error`, or the error kind (`denied`,
    /// `needs_approval`, `failed`, `timeout`, `invalid_arguments`, `not_found`).
    pub verdict: String,
    /// The rule that decided, as the decision names it.
    pub rule: String,
    /// Why it decided so, for the person reading the log.
    pub why: String,
    /// Who approved (`policy`, `session`, `tty`, `--yes`, `mcp-elicitation`), or who said no.
    pub approver: String,
    /// Milliseconds from dispatch to the end of the call (0 in an intent, written before it runs).
    pub duration_ms: u64,
    /// The layer that decided, the digests of the arguments and the result, the redacted
    /// arguments whole (bounded).
    pub detail: tackle_store::AuditDetail,
}

/// Where an intent was written, for its outcome (see [`AuditSink::intent`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntentId(pub tackle_store::IntentId);

/// Where the dispatcher writes what it decided and what came of it; implemented by
/// [`tackle_store::Store`] for the audit log.
#[async_trait::async_trait]
pub trait AuditSink: Send + Sync {
    /// Append one finished event: a call refused before it ran, or a call that ran without
    /// an intent. Awaited by the dispatcher before the call's result is returned, so an
    /// outcome is never reported without its record.
    async fn record(&self, event: AuditEvent);

    /// Record a call about to run (`event.verdict` is [`RUNNING`]), before anything runs; the
    /// returned id takes its outcome in [`Self::finish`]. `None`: nothing was written (the
    /// default), and the dispatcher records the call whole with [`Self::record`] when it ends.
    async fn intent(&self, _event: &AuditEvent) -> Option<IntentId> {
        None
    }

    /// The outcome of a call whose intent was written.
    async fn finish(&self, _id: IntentId, event: AuditEvent) {
        self.record(event).await;
    }
}

/// The SQLite audit log in the state store.
#[async_trait::async_trait]
impl AuditSink for tackle_store::Store {
    async fn record(&self, event: AuditEvent) {
        let (entry, detail) = entry(event);
        if let Err(e) = self.append_audit_with(entry, detail).await {
            tracing::error!("could not append to the audit log: {e}");
        }
    }

    async fn intent(&self, event: &AuditEvent) -> Option<IntentId> {
        let (entry, detail) = entry(event.clone());
        match self.begin_audit_with(entry, detail).await {
            Ok(id) => Some(IntentId(id)),
            Err(e) => {
                // The call is recorded whole when it ends instead.
                tracing::error!("could not append to the audit log: {e}");
                None
            }
        }
    }

    async fn finish(&self, id: IntentId, event: AuditEvent) {
        let outcome = tackle_store::AuditOutcome {
            outcome: event.verdict,
            rule: event.rule,
            why: event.why,
            duration_ms: Some(event.duration_ms),
            layer: event.detail.layer,
            result_digest: event.detail.result_digest,
        };
        if let Err(e) = self.finish_audit(id.0, outcome).await {
            tracing::error!("could not record a call's outcome in the audit log: {e}");
        }
    }
}

fn entry(event: AuditEvent) -> (tackle_store::AuditEntry, tackle_store::AuditDetail) {
    let entry = tackle_store::AuditEntry {
        record: tackle_store::AuditRecord {
            ts: String::new(),
            session_id: (!event.session_id.is_empty()).then_some(event.session_id),
            agent: event.agent,
            tool: event.tool,
            args_summary: event.args_summary,
            verdict: event.decision,
            rule: event.rule,
            why: event.why,
            approver: (!event.approver.is_empty()).then_some(event.approver),
            outcome: event.verdict,
            duration_ms: Some(event.duration_ms),
        },
        caller: event.caller,
    };
    (entry, event.detail)
}
