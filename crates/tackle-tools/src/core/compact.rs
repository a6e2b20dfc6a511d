//! `compact`: summarise the conversation through the model; the context then starts from the
//! summary. The agent runtime does the work (`cx.agents()`); this tool only asks.

use async_trait::async_trait;
use serde_json::Value;
use tackle_protocol::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

/// The `compact` tool: the runtime summarises the conversation and restarts from the summary.
pub struct Compact;

#[async_trait]
impl Tool for Compact {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "compact",
            "Summarises the conversation so far and continues from the summary, freeing context space. Use it when the conversation has grown long. No arguments.",
            "core",
        )
        .conversation_only()
    }

    async fn call(&self, _args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let summary = cx.agents()?.compact(cx).await?;
        Ok(ToolOutput::text(format!(
            "Conversation compacted. Summary:\n{summary}"
        )))
    }
}
