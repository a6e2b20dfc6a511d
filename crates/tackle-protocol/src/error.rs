//! The one error type a tool call can end in. Its kinds are exactly the JSON `kind`s of `tools call --json` (README, "Using it"); the CLI's exit-code table maps them to codes.

use crate::decision::Decision;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The JSON `kind` of a failed call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The arguments do not match the tool's schema or make no sense; the model should fix them.
    InvalidArguments,
    /// The file, tool or thing named does not exist.
    NotFound,
    /// The policy (or a person asked) refused the call; it did not run.
    Denied,
    /// The call needs a person's approval and none could be given; it did not run.
    NeedsApproval,
    /// The call ran past its time limit.
    Timeout,
    /// Anything else that went wrong while the call ran.
    Failed,
}

impl ErrorKind {
    /// The `snake_case` name used in JSON and messages (`invalid_arguments`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::InvalidArguments => "invalid_arguments",
            ErrorKind::NotFound => "not_found",
            ErrorKind::Denied => "denied",
            ErrorKind::NeedsApproval => "needs_approval",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Failed => "failed",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The start of the rule of a denial a person gave at an approval prompt.
const DECLINED_RULE: &str = "approval: ";

/// A tool call that did not produce a result.
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize)]
#[error("{kind}: {message}")]
pub struct ToolError {
    /// What kind of failure, for the model, the JSON output and the exit code.
    pub kind: ErrorKind,
    /// The message shown to the model and the user; says what to do when it can.
    pub message: String,
    /// The policy decision behind a `denied` or `needs_approval`, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
}

impl ToolError {
    /// An error of `kind` with no policy decision attached.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            decision: None,
        }
    }

    /// Bad arguments: the model should fix them and call again.
    pub fn invalid_arguments(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidArguments, message)
    }

    /// The thing named does not exist.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotFound, message)
    }

    /// The call ran and failed.
    pub fn failed(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Failed, message)
    }

    /// The call ran past its time limit.
    pub fn timeout(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Timeout, message)
    }

    /// A denial that carries the decision (rule and why) for the model, the CLI and the audit log.
    pub fn denied(decision: Decision) -> Self {
        Self {
            kind: ErrorKind::Denied,
            message: decision.why.clone(),
            decision: Some(decision),
        }
    }

    /// The call needs an approval it could not get (no one to ask, or the wait ran out).
    pub fn needs_approval(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NeedsApproval, message)
    }

    /// The person asked answered no: a denial (the call did not run) whose rule names the
    /// approver, so front ends can tell it from a policy's (`approval: NAME`).
    pub fn declined(approver: &str, why: impl Into<String>) -> Self {
        Self::denied(Decision::deny(format!("{DECLINED_RULE}{approver}"), why))
    }

    /// Whether this is a [`ToolError::declined`]: a person's no, not a policy's.
    pub fn is_declined(&self) -> bool {
        self.kind == ErrorKind::Denied
            && self
                .decision
                .as_ref()
                .is_some_and(|d| d.rule.starts_with(DECLINED_RULE))
    }
}
