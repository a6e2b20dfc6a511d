//! Tackle's tools served over MCP go through the same dispatcher as every other front end:
//! validation, policy, approval (MCP elicitation), host, sanitizer, audit.

use crate::dispatcher::{CallRequest, Dispatcher};
use async_trait::async_trait;
use std::sync::Arc;
use tackle_mcp::ToolService;
use tackle_protocol::{Approver, ToolCall, ToolError, ToolOutput, ToolSpec};

pub struct DispatcherService {
    dispatcher: Arc<Dispatcher>,
    session_id: String,
}

impl DispatcherService {
    pub fn new(dispatcher: Arc<Dispatcher>, session_id: impl Into<String>) -> Self {
        Self {
            dispatcher,
            session_id: session_id.into(),
        }
    }
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
        // Each MCP session is a session of its own: approvals and TMPDIR do not leak across.
        let req = CallRequest::new(call, approver)
            .session(format!("{}-{session}", self.session_id))
            .channel("mcp");
        self.dispatcher.dispatch(req).await
    }
}
