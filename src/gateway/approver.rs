//! Who answers an approval an API turn's call asks for. Until the approval queue in the store
//! answers them (its approver replaces this one in [`super::approver_for_api`]), nobody can:
//! the call ends `needs_approval` at once, the turn goes on without it, and the response says
//! so (`tackle.tool_calls`, and a `needs_approval` chunk when streamed).

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
            "{}; this turn came over the HTTP API, where no one can approve a call yet: do the task without this call, or say that it needs approval{remedy}",
            req.why
        )))
    }
}
