//! One [`Plan`] per call: everything the dispatcher decided before running it. `dispatch`,
//! `--explain` and the approval prompt all read the same plan, so what `--explain` says is
//! what a call does.

use crate::registry::Entry;
use serde::Serialize;
use std::path::PathBuf;
use std::sync::Arc;
use tackle_policy::resolve::ResolvedPolicy;
use tackle_protocol::{
    ApprovalMode, CallScope, Capability, Decision, ToolContext, ToolHost, Verdict,
};

/// Everything decided about one call before it runs: the entry, resolved policy, scope and
/// host, and each layer's decision. `--explain` shows the same plan.
pub struct Plan {
    pub(crate) entry: Arc<Entry>,
    /// The tool's policy after every overlay and ceiling.
    pub policy: ResolvedPolicy,
    pub(crate) scope: CallScope,
    pub(crate) host: Arc<dyn ToolHost>,
    /// The context the tool planned with; the run reuses it, with the caller's channel and
    /// front-end hooks added, rather than building a second one.
    pub(crate) cx: ToolContext,
    /// Each capability the tool said it will use, with the host's decision for it.
    pub capabilities: Vec<(Capability, Decision)>,
    /// The approval decision for this tool, these arguments and this session.
    pub approval: Decision,
    /// The approval comes from the arguments (e.g. `git push`), above the tool's own mode:
    /// neither the auto-approved list nor an "allow for the session" covers it.
    pub escalated: bool,
    /// The approval was raised by the taint gate (crate::taint), not by the tool or policy.
    pub(crate) taint_gated: bool,
}

/// The protection layers of the call pipeline (docs/architecture.md, "The call pipeline"), by
/// the name `--explain` and the audit log give the one whose rule decided a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Layer {
    /// The tool is unknown to this agent, or cannot be offered (quarantined, its server down).
    Lookup,
    /// The arguments fail the tool's JSON Schema.
    Schema,
    /// A planned capability checked against the grants (`grants.*`, `opaque`).
    Policy,
    /// The taint gate: a sink called by a session that read untrusted content.
    Taint,
    /// The approval mode, the auto-approved list, a session's answer, a person.
    Approval,
    /// The tool's own rule for these arguments (e.g. `git push` always asks).
    Tool,
    /// The host refused while the call ran (the sandbox, the network guard).
    Sandbox,
}

impl Layer {
    /// The layer's name in the audit log and `--explain` (`lookup`, `policy`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Layer::Lookup => "lookup",
            Layer::Schema => "schema",
            Layer::Policy => "policy",
            Layer::Taint => "taint",
            Layer::Approval => "approval",
            Layer::Tool => "tool",
            Layer::Sandbox => "sandbox",
        }
    }
}

impl Plan {
    /// A capability the grant denies: the call stops here, whoever would approve.
    pub fn denial(&self) -> Option<&Decision> {
        self.first(Verdict::Deny)
    }

    /// A capability the policy could not check (e.g. an opaque shell line under
    /// `opaque: ask`): a person must approve this very call.
    pub fn unchecked(&self) -> Option<&Decision> {
        self.first(Verdict::Ask)
    }

    fn first(&self, verdict: Verdict) -> Option<&Decision> {
        self.capabilities
            .iter()
            .find(|(_, d)| d.verdict == verdict)
            .map(|(_, d)| d)
    }

    /// What must be approved before the call runs, and whether only a person for this call
    /// can do it (never remembered for the session). Allow = nothing to ask.
    pub fn approval_needed(&self) -> (&Decision, bool) {
        match self.unchecked() {
            Some(d) => (d, true),
            None => (&self.approval, self.escalated),
        }
    }

    /// The layer whose rule gives [`Self::decision`].
    pub fn layer(&self) -> Layer {
        if self.denial().is_some() || self.unchecked().is_some() {
            Layer::Policy
        } else if self.taint_gated {
            Layer::Taint
        } else if self.escalated {
            Layer::Tool
        } else {
            Layer::Approval
        }
    }

    /// The overall outcome: a denial stands, else what approval needs.
    pub fn decision(&self) -> Decision {
        self.denial()
            .unwrap_or_else(|| self.approval_needed().0)
            .clone()
    }

    /// What setting would let such a call run unasked; empty when none can (see
    /// [`tackle_protocol::ApprovalRequest::remedy`]).
    pub fn remedy(&self) -> String {
        let name = &self.entry.spec.name;
        if self.unchecked().is_some() || self.escalated {
            // Neither the auto list nor a session answer covers these: a person must look.
            return String::new();
        }
        match self.policy.approval {
            ApprovalMode::Always => format!(
                "set `security.tool_policies.{name}.approval: unless_auto_approved` and add `{name}` to `security.auto_approved_tools` (an `always` tool asks whatever the list says)"
            ),
            ApprovalMode::UnlessAutoApproved => {
                format!("add `{name}` to `security.auto_approved_tools`")
            }
            ApprovalMode::Never => String::new(),
        }
    }

    /// The planned capabilities, one per line, for the approval prompt.
    pub fn summary(&self) -> Option<String> {
        if self.capabilities.is_empty() {
            return None;
        }
        Some(
            self.capabilities
                .iter()
                .map(|(c, _)| c.summary())
                .collect::<Vec<_>>()
                .join("\n"),
        )
    }

    /// The files this call will write: calls writing the same file run one at a time.
    pub fn written_paths(&self) -> Vec<PathBuf> {
        self.capabilities
            .iter()
            .filter_map(|(c, _)| match c {
                Capability::FileWrite { path } => Some(path.clone()),
                _ => None,
            })
            .collect()
    }
}
