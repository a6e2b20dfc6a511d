//! A stand-in for the agent's dispatcher: three tools, one of which asks for approval.

use async_trait::async_trait;
use serde_json::{json, Value};
use std::sync::Arc;
use tackle_mcp::ToolService;
use tackle_protocol::{
    ApprovalAnswer, ApprovalMode, ApprovalRequest, Approver, Decision, Grants, ToolCall, ToolError,
    ToolOutput, ToolSpec,
};

pub struct FakeService;

#[async_trait]
impl ToolService for FakeService {
    fn tools(&self) -> Vec<ToolSpec> {
        let text_schema = json!({
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"]
        });
        vec![
            ToolSpec::new("echo", "Echo the text", "test").parameters(text_schema),
            ToolSpec::new("guarded", "Needs a yes", "test").approval(ApprovalMode::Always),
            ToolSpec::new("broken", "Always fails", "test"),
        ]
    }

    async fn call(
        &self,
        call: ToolCall,
        approver: Arc<dyn Approver>,
        _session: &str,
    ) -> Result<ToolOutput, ToolError> {
        match call.name.as_str() {
            "echo" => {
                let text = call.arguments["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                Ok(ToolOutput::text(text.clone()).with_structured(json!({"echoed": text})))
            }
            "guarded" => guarded(call.arguments, approver.as_ref()).await,
            "broken" => Err(ToolError::failed("it broke on purpose")),
            other => Err(ToolError::not_found(format!("no tool `{other}`"))),
        }
    }
}

async fn guarded(arguments: Value, approver: &dyn Approver) -> Result<ToolOutput, ToolError> {
    let req = ApprovalRequest {
        tool: "guarded".into(),
        arguments,
        summary: "exec guarded".into(),
        grants: Grants::default(),
        why: "`guarded` always asks".into(),
        remedy: String::new(),
    };
    match approver.ask(&req).await {
        Ok(ApprovalAnswer::Once) => Ok(ToolOutput::text(format!(
            "ran once, approved via {}",
            approver.name()
        ))),
        Ok(ApprovalAnswer::ForSession) => Ok(ToolOutput::text(format!(
            "ran, approved for the session via {}",
            approver.name()
        ))),
        Ok(ApprovalAnswer::Deny) => Err(ToolError::denied(Decision::deny(
            "approval",
            "the person said no to `guarded`",
        ))),
        Err(unavailable) => Err(ToolError::needs_approval(unavailable.0)),
    }
}
