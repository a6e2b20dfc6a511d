//! Policy resolution.
use tackle_protocol::config::SecurityConfig;
use tackle_protocol::{ApprovalMode, Decision, Grants, NetworkGrant, ShellGrant, ToolPolicy};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPolicy {
    pub approval: ApprovalMode,
    pub grants: Grants,
    pub sources: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegacyGrants {
    pub shell: Option<ShellGrant>,
    pub network: Option<NetworkGrant>,
    pub warning: String,
}

pub fn resolve(
    _tool: &str,
    default: &ToolPolicy,
    _security: &SecurityConfig,
    _agent_grants: Option<&Grants>,
) -> ResolvedPolicy {
    ResolvedPolicy {
        approval: ApprovalMode::Always,
        grants: default.grants.clone(),
        sources: vec![],
    }
}

pub fn legacy_grants(_security: &SecurityConfig) -> Option<LegacyGrants> {
    None
}

pub fn approval_decision(
    _tool: &str,
    _mode: ApprovalMode,
    _auto_approved: &[String],
    _allowed_for_session: bool,
) -> Decision {
    Decision::ask("approval", "not ready")
}
