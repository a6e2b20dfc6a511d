//! `security:` approvals, tool policies, the sandbox mode and taint rules.

use crate::grants::Grants;
use crate::spec::ApprovalMode;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `security:`: approvals, per-tool policies and grants, the sandbox, env and taint rules.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecurityConfig {
    /// Tools whose `unless_auto_approved` calls run without asking (default none).
    #[serde(default)]
    pub auto_approved_tools: Vec<String>,
    /// Per-tool approval, grants and taint rule (`tool_policies.TOOL`), over each tool's default.
    #[serde(default)]
    pub tool_policies: BTreeMap<String, ToolPolicyConfig>,
    /// Deprecated: synthesised into `shell` grants with one warning.
    #[serde(default)]
    pub shell_allowlist: Option<Vec<String>>,
    /// Deprecated: synthesised into `shell` grants with one warning.
    #[serde(default)]
    pub shell_denylist: Option<Vec<String>>,
    /// Deprecated: synthesised into `network` grants with one warning.
    #[serde(default)]
    pub allowed_endpoints: Option<Vec<String>>,
    /// Environment variables passed through to child processes on top of the scrubbed base.
    #[serde(default)]
    pub env_passthrough: Vec<String>,
    /// Whether commands may run with part of the OS sandbox missing.
    #[serde(default)]
    pub sandbox: SandboxMode,
    /// Plant decoy credentials in commands' environment and sandbox home, and refuse (and
    /// freeze the session of) any call that carries one
    /// (docs/decisions/0034-honeytokens.md).
    #[serde(default)]
    pub honeytokens: bool,
    /// Files someone else wrote (globs relative to the workspace, or absolute: a vendored
    /// dependency, a cloned repository's docs): reading one taints the session, as a web
    /// page does (docs/decisions/0033-taint-gates-sinks.md). Files outside the workspace
    /// always do.
    #[serde(default)]
    pub untrusted_paths: Vec<String>,
}

/// `security.sandbox`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxMode {
    /// Run with every layer this machine has, saying which are missing (`tackle doctor`, and
    /// a warning at the first command).
    #[default]
    BestEffort,
    /// Refuse to run commands without the namespace sandbox.
    Required,
}

/// `security.tool_policies.TOOL`: merged field by field over the tool's default policy.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolPolicyConfig {
    /// `never`, `unless_auto_approved` or `always`; unset: the tool's default approval.
    #[serde(default)]
    pub approval: Option<ApprovalMode>,
    /// Replaces the default grants kind by kind (`shell`, `network`, `fs`); unset: the default
    /// grants.
    #[serde(default)]
    pub grants: Option<Grants>,
    /// What a call of this tool that can carry data out (a sink) does once the session has
    /// read untrusted content (docs/decisions/0033-taint-gates-sinks.md); `ask` by default.
    #[serde(default)]
    pub taint: Option<TaintRule>,
}

/// `security.tool_policies.TOOL.taint`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaintRule {
    /// Decided as in a clean session.
    Ignore,
    /// A person must approve this call, whatever the auto-approved list or an earlier
    /// "allow for the session" says.
    #[default]
    Ask,
    /// Refused.
    Deny,
}
