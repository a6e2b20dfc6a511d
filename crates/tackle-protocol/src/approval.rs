//! Asking a person (or a client) for a yes. Every front end implements [`Approver`]: the TTY
//! prompt, `--yes`, MCP elicitation, and the non-interactive one that says no one can be asked.

use crate::grants::Grants;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What the person is asked to approve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRequest {
    /// The tool the call is for.
    pub tool: String,
    /// The call's arguments as the model sent them, shown to the person.
    pub arguments: Value,
    /// One line per capability the call plans to use (`shell ls -la`, `GET https://…`).
    pub summary: String,
    /// The grants the call will run under, shown so the person knows what a yes allows.
    pub grants: Grants,
    /// Why approval is needed (the approval decision's `why`).
    pub why: String,
    /// What would let such a call run without asking, in the config's terms (empty when no
    /// setting can: the call needs a person every time). An approver that cannot ask puts it
    /// in its error, beside what its own front end offers (`--yes`, a terminal, elicitation).
    pub remedy: String,
}

/// What the person answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalAnswer {
    /// `y`: this call only.
    Once,
    /// `n`.
    Deny,
    /// `a`: this tool for the rest of the session.
    ForSession,
}

/// No one can be asked (no TTY, no `--yes`, client without elicitation): the call ends as
/// `needs_approval` instead of hanging.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ApprovalUnavailable(pub String);

/// A front end that can put an [`ApprovalRequest`] to a person (or say no one can answer).
#[async_trait]
pub trait Approver: Send + Sync {
    /// The name recorded in the audit log as who approved (`tty`, `--yes`, `mcp-elicitation`).
    fn name(&self) -> &str;
    /// Asks and waits for the answer; [`ApprovalUnavailable`] when no one can be asked.
    async fn ask(&self, req: &ApprovalRequest) -> Result<ApprovalAnswer, ApprovalUnavailable>;

    /// As [`Approver::ask`], with who answered, which the audit log records: [`Approver::name`]
    /// unless the front end knows the person (a queued approval answered by `cli:alice` is
    /// `queue:cli:alice`).
    async fn ask_who(
        &self,
        req: &ApprovalRequest,
    ) -> Result<(ApprovalAnswer, String), ApprovalUnavailable> {
        let answer = self.ask(req).await?;
        Ok((answer, self.name().to_string()))
    }

    /// The same person, for a form a third party wants filled in during the call (an MCP
    /// server's elicitation), when this front end can pass one on; `None` (the default)
    /// leaves such forms to the process's own handler.
    fn forms(&self) -> Option<std::sync::Arc<dyn FormAsker>> {
        None
    }
}

/// The answer to a relayed form.
#[derive(Debug, Clone, PartialEq)]
pub enum FormReply {
    /// Filled in: one value per answered field.
    Accept(serde_json::Map<String, Value>),
    /// The person declined to fill it in.
    Decline,
    /// The person dismissed it without answering.
    Cancel,
}

/// A relayed form could not be put to anyone.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FormUnavailable(pub String);

/// Puts a form (a message and the JSON Schema of the answer) to the person at a call's front
/// end, on behalf of `from` (who is named to them).
#[async_trait]
pub trait FormAsker: Send + Sync {
    /// Asks the person and waits; [`FormUnavailable`] when this front end cannot put it to anyone.
    async fn ask_form(
        &self,
        from: &str,
        message: &str,
        schema: &Value,
    ) -> Result<FormReply, FormUnavailable>;
}
