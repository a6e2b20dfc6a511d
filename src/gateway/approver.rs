//! The approver of API turns when the operator turned the approval queue off for them
//! (`gateway.approval_timeout_secs: 0`): nobody can answer, so a call that needs approval
//! ends `needs_approval` at once, the turn goes on without it, and the response says so
//! (`tackle.tool_calls`, and a `needs_approval` chunk when streamed).

use async_trait::async_trait;
use tackle_protocol::{ApprovalAnswer, ApprovalRequest, ApprovalUnavailable, Approver};

pub struct NoOneToAsk;

#[async_trait]
impl Approver for NoOneToAsk {
    fn name(&self) -> &str {
        "api"
    }

    async fn ask(&self, req: &ApprovalRequest) -> Result<ApprovalAnswer, ApprovalUnavailable> {
        let remedy = if req.remedy.is_empty() {
            String::new()
        } else {
            format!("; the operator can let such calls run: {}", req.remedy)
        };
        Err(ApprovalUnavailable(format!(
            "{}; this turn came over the HTTP API, where gateway.approval_timeout_secs is 0, so no one is asked: do the task without this call, or say that it needs approval{remedy}",
            req.why
        )))
    }
}
