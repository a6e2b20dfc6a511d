//! What tools that need the agent (spawn, compact, message) may ask of it, without
//! depending on `tackle-agent` (ARCHITECTURE.md).

use crate::error::ToolError;
use crate::tool::ToolContext;
use async_trait::async_trait;

#[async_trait]
pub trait AgentServices: Send + Sync {
    /// Summarise the calling session's history and write a Summary entry; returns the summary.
    async fn compact(&self, cx: &ToolContext) -> Result<String, ToolError>;
}
