//! `tackle mcp serve`'s adapter: Tackle's tools served over MCP go through the same dispatcher
//! as every other front end: validation, policy, approval (MCP elicitation), host, sanitizer,
//! audit. It lives in the binary so the agent crate does not depend on the MCP server (and
//! its HTTP stack).

use async_trait::async_trait;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::{Arc, Mutex};
use tackle_agent::{CallRequest, Dispatcher, SessionApprovals};
use tackle_mcp::ToolService;
use tackle_protocol::{Approver, ToolCall, ToolError, ToolOutput, ToolSpec};
use tokio_util::sync::CancellationToken;

pub struct DispatcherService {
    dispatcher: Arc<Dispatcher>,
    session_id: String,
    /// Each MCP session's "allow for the session" answers.
    approvals: Mutex<HashMap<String, Arc<SessionApprovals>>>,
}

impl DispatcherService {
    /// `prefix` starts every session id this server records; a per-process suffix keeps two
    /// runs' sessions apart (in the audit log and in their `TMPDIR`s).
    pub fn new(dispatcher: Arc<Dispatcher>, prefix: &str) -> Self {
        Self {
            dispatcher,
            session_id: format!("{prefix}-{}", process_tag()),
            approvals: Mutex::new(HashMap::new()),
        }
    }

    fn approvals_of(&self, session: &str) -> Arc<SessionApprovals> {
        match self.approvals.lock() {
            Ok(mut map) => Arc::clone(map.entry(session.to_string()).or_default()),
            // Poisoned: ask again rather than fail the call.
            Err(_) => Arc::default(),
        }
    }
}

/// The start time in seconds and 32 random bits, in hex: distinct for each run.
fn process_tag() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_u64(secs);
    format!("{secs:x}-{:08x}", h.finish() as u32)
}

#[async_trait]
impl ToolService for DispatcherService {
    fn tools(&self) -> Vec<ToolSpec> {
        self.dispatcher.registry().refresh();
        self.dispatcher.registry().specs()
    }

    async fn call(
        &self,
        call: ToolCall,
        approver: Arc<dyn Approver>,
        session: &str,
    ) -> Result<ToolOutput, ToolError> {
        self.call_cancellable(call, approver, session, CancellationToken::new())
            .await
    }

    /// The client's cancellation is the call's: the dispatcher stops the tool (killing the
    /// process group of anything it runs) and records the call as cancelled.
    async fn call_cancellable(
        &self,
        call: ToolCall,
        approver: Arc<dyn Approver>,
        session: &str,
        cancel: CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        // Each MCP session is a session of its own: approvals and TMPDIR do not leak across.
        let req = CallRequest::new(call, approver)
            .session(format!("{}-{session}", self.session_id))
            .approvals(self.approvals_of(session))
            .channel("mcp")
            .cancel(cancel);
        self.dispatcher.dispatch(req).await
    }
}
