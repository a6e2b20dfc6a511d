//! A policy decision with its explanation, shared by the CLI, the audit log and the model.

use serde::{Deserialize, Serialize};

/// The outcome of one policy check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The action may go ahead.
    Allow,
    /// The action is refused.
    Deny,
    /// Allowed only with a person's yes.
    Ask,
}

/// `Decision { verdict, rule, why }` (docs/architecture.md): every check returns one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    /// Allow, deny or ask.
    pub verdict: Verdict,
    /// The rule that decided, in config terms (e.g. `tool_policies.shell.grants.shell.deny[0] = "rm"`).
    pub rule: String,
    /// A sentence for a person and for the model: what was decided and why.
    pub why: String,
}

impl Decision {
    /// An allowing decision by `rule`, explained by `why`.
    pub fn allow(rule: impl Into<String>, why: impl Into<String>) -> Self {
        Self {
            verdict: Verdict::Allow,
            rule: rule.into(),
            why: why.into(),
        }
    }

    /// A denying decision by `rule`, explained by `why`.
    pub fn deny(rule: impl Into<String>, why: impl Into<String>) -> Self {
        Self {
            verdict: Verdict::Deny,
            rule: rule.into(),
            why: why.into(),
        }
    }

    /// A decision to ask a person first, by `rule`, explained by `why`.
    pub fn ask(rule: impl Into<String>, why: impl Into<String>) -> Self {
        Self {
            verdict: Verdict::Ask,
            rule: rule.into(),
            why: why.into(),
        }
    }

    /// Whether the verdict is [`Verdict::Allow`] (`Ask` is not).
    pub fn is_allowed(&self) -> bool {
        self.verdict == Verdict::Allow
    }

    /// Whether the verdict is [`Verdict::Deny`].
    pub fn is_denied(&self) -> bool {
        self.verdict == Verdict::Deny
    }
}
