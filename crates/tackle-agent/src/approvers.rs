//! Approvers that need no front end: `--yes`, and the one that says no one can be asked.

use async_trait::async_trait;
use tackle_protocol::{ApprovalAnswer, ApprovalRequest, ApprovalUnavailable, Approver};

/// `--yes`: approves every call once.
pub struct AutoApprover;

#[async_trait]
impl Approver for AutoApprover {
    fn name(&self) -> &str {
        "--yes"
    }

    async fn ask(&self, _req: &ApprovalRequest) -> Result<ApprovalAnswer, ApprovalUnavailable> {
        Ok(ApprovalAnswer::Once)
    }
}

/// No TTY and no `--yes`: the call ends as `needs_approval` at once instead of hanging.
pub struct NonInteractiveApprover;

#[async_trait]
impl Approver for NonInteractiveApprover {
    fn name(&self) -> &str {
        "non-interactive"
    }

    async fn ask(&self, req: &ApprovalRequest) -> Result<ApprovalAnswer, ApprovalUnavailable> {
        let remedy = if req.remedy.is_empty() {
            String::new()
        } else {
            format!(", or {}", req.remedy)
        };
        Err(ApprovalUnavailable(format!(
            "{}; no one can be asked here: run in a terminal to answer the prompt, pass --yes{remedy}",
            req.why
        )))
    }
}
