//! Policy resolution: which approval mode and grants a tool call runs under, and why.
//!
//! Layers, lowest first: the tool's `default_policy()`, the deprecated `security.shell_*` keys
//! (for `shell`) and `allowed_endpoints` (for `web_fetch` and `http_request`), synthesised into
//! grants, `security.tool_policies.TOOL` (merged
//! field by field: setting only `grants` keeps the default approval, and its grants replace
//! kind by kind), then the agent's `grants` overlay, kind by kind.

use crate::grants::merge_over;
use tackle_protocol::config::SecurityConfig;
use tackle_protocol::{
    ApprovalMode, Decision, Endpoint, Grants, NetworkGrant, ShellGrant, ToolPolicy,
};

/// The policy a call runs under, with the layers that shaped it (for `--explain`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPolicy {
    /// Whether the call must be approved by a person first, after every layer.
    pub approval: ApprovalMode,
    /// The grants the call runs under, after every layer.
    pub grants: Grants,
    /// Config paths of every layer that contributed, lowest first.
    pub sources: Vec<String>,
}

/// Grants synthesised from the deprecated keys, and the warning to print once at start-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegacyGrants {
    /// From `security.shell_allowlist` / `shell_denylist`; applies to the `shell` tool only.
    pub shell: Option<ShellGrant>,
    /// From `security.allowed_endpoints`; applies to `web_fetch` and `http_request` only.
    pub network: Option<NetworkGrant>,
    /// The deprecation notice naming the keys used and where the setting now belongs.
    pub warning: String,
}

/// Tools the deprecated `shell_allowlist` / `shell_denylist` keys apply to.
const LEGACY_SHELL_TOOLS: &[&str] = &["shell"];
/// Tools the deprecated `allowed_endpoints` key applies to: those that fetch a model's URL.
const LEGACY_NETWORK_TOOLS: &[&str] = &["web_fetch", "http_request"];

/// Resolves `tool`'s policy from its default, the security config and the agent's overlay.
pub fn resolve(
    tool: &str,
    default: &ToolPolicy,
    security: &SecurityConfig,
    agent_grants: Option<&Grants>,
) -> ResolvedPolicy {
    let mut approval = default.approval;
    let mut grants = default.grants.clone();
    let mut sources = vec![format!("{tool} default policy")];
    if let Some(legacy) = legacy_grants(security) {
        // The deprecated keys governed the shell tool and the URL-fetching tools, as in the
        // seed; applying them to every tool would, say, deny `web_search`'s configured
        // backends or `git` under a shell allowlist written for `shell`.
        let layer = Grants {
            shell: legacy.shell.filter(|_| LEGACY_SHELL_TOOLS.contains(&tool)),
            network: legacy
                .network
                .filter(|_| LEGACY_NETWORK_TOOLS.contains(&tool)),
            fs: None,
        };
        if layer != Grants::default() {
            grants = merge_over(&grants, &layer);
            sources.push(
                "security.shell_allowlist/shell_denylist/allowed_endpoints (deprecated)".into(),
            );
        }
    }
    if let Some(policy) = security.tool_policies.get(tool) {
        if let Some(a) = policy.approval {
            approval = a;
            sources.push(format!("security.tool_policies.{tool}.approval"));
        }
        if let Some(g) = &policy.grants {
            grants = merge_over(&grants, g);
            sources.push(format!(
                "security.tool_policies.{tool}.grants ({})",
                kinds(g)
            ));
        }
    }
    if let Some(agent) = agent_grants.filter(|g| **g != Grants::default()) {
        grants = merge_over(&grants, agent);
        sources.push(format!("agent grants ({})", kinds(agent)));
    }
    ResolvedPolicy {
        approval,
        grants,
        sources,
    }
}

fn kinds(g: &Grants) -> String {
    let mut k = Vec::new();
    if g.shell.is_some() {
        k.push("shell");
    }
    if g.network.is_some() {
        k.push("network");
    }
    if g.fs.is_some() {
        k.push("fs");
    }
    if k.is_empty() {
        "no kinds".into()
    } else {
        k.join(", ")
    }
}

/// Synthesises grants from `shell_allowlist`, `shell_denylist` and `allowed_endpoints`.
pub fn legacy_grants(security: &SecurityConfig) -> Option<LegacyGrants> {
    let (allow, deny, endpoints) = (
        &security.shell_allowlist,
        &security.shell_denylist,
        &security.allowed_endpoints,
    );
    if allow.is_none() && deny.is_none() && endpoints.is_none() {
        return None;
    }
    let shell = (allow.is_some() || deny.is_some()).then(|| ShellGrant {
        allow: allow.clone().unwrap_or_default(),
        deny: deny.clone().unwrap_or_default(),
        ..Default::default()
    });
    let network = endpoints.as_ref().map(|list| NetworkGrant {
        endpoints: list.iter().filter_map(|e| legacy_endpoint(e)).collect(),
        allow_private: false,
    });
    // Each key set, with the grant it becomes for the tools `resolve` applies it to, so the
    // warning says what the code does and where the setting belongs instead.
    let mut moves = Vec::new();
    for (set, key, tools, grant) in [
        (allow, "shell_allowlist", LEGACY_SHELL_TOOLS, "shell.allow"),
        (deny, "shell_denylist", LEGACY_SHELL_TOOLS, "shell.deny"),
        (
            endpoints,
            "allowed_endpoints",
            LEGACY_NETWORK_TOOLS,
            "network.endpoints",
        ),
    ] {
        if set.is_some() {
            let to: Vec<String> = tools
                .iter()
                .map(|t| format!("security.tool_policies.{t}.grants.{grant}"))
                .collect();
            moves.push(format!("security.{key} → {}", to.join(" and ")));
        }
    }
    let warning = format!(
        "deprecated config {}, applied only as these grants: {}; move {} there",
        if moves.len() == 1 { "key" } else { "keys" },
        moves.join("; "),
        if moves.len() == 1 { "it" } else { "them" }
    );
    Some(LegacyGrants {
        shell,
        network,
        warning,
    })
}

/// `api.github.com`, `api.github.com/v1` or `https://api.github.com/v1` as an endpoint.
fn legacy_endpoint(e: &str) -> Option<Endpoint> {
    let e = e.trim();
    let rest = e.split_once("://").map_or(e, |(_, r)| r);
    let (host, path) = match rest.find('/') {
        Some(i) => (rest.get(..i)?, rest.get(i..).filter(|p| *p != "/")),
        None => (rest, None),
    };
    (!host.is_empty()).then(|| Endpoint {
        host: host.to_string(),
        path_prefix: path.map(String::from),
        methods: None,
    })
}

/// The approval gate: `Allow` to run now, `Ask` to ask a person first.
pub fn approval_decision(
    tool: &str,
    mode: ApprovalMode,
    auto_approved: &[String],
    allowed_for_session: bool,
) -> Decision {
    let rule = format!("security.tool_policies.{tool}.approval = {mode}");
    if allowed_for_session {
        return Decision::allow(
            "approval: allowed for this session",
            format!("`{tool}` runs without asking: it was allowed for the rest of this session"),
        );
    }
    match mode {
        ApprovalMode::Never => Decision::allow(rule, format!("`{tool}` runs without asking: its approval mode is never")),
        ApprovalMode::UnlessAutoApproved if auto_approved.iter().any(|t| t == tool) => Decision::allow(
            "security.auto_approved_tools",
            format!("`{tool}` runs without asking: it is listed in security.auto_approved_tools"),
        ),
        ApprovalMode::UnlessAutoApproved => Decision::ask(
            rule,
            format!("`{tool}` needs approval: its mode is unless_auto_approved and it is not in security.auto_approved_tools"),
        ),
        ApprovalMode::Always => Decision::ask(rule, format!("`{tool}` needs approval: its approval mode is always")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tackle_protocol::config::ToolPolicyConfig;
    use tackle_protocol::Verdict;

    fn shell_grant(allow: &[&str]) -> Grants {
        Grants {
            shell: Some(ShellGrant {
                allow: allow.iter().map(|s| s.to_string()).collect(),
                deny: vec![],
                ..Default::default()
            }),
            ..Grants::default()
        }
    }

    #[test]
    fn policy_setting_only_grants_keeps_the_default_approval() {
        let mut sec = SecurityConfig::default();
        sec.tool_policies.insert(
            "shell".into(),
            ToolPolicyConfig {
                approval: None,
                grants: Some(shell_grant(&["git"])),
                taint: None,
            },
        );
        let r = resolve("shell", &ToolPolicy::new(ApprovalMode::Always), &sec, None);
        assert_eq!(r.approval, ApprovalMode::Always);
        assert_eq!(r.grants, shell_grant(&["git"]));
        assert_eq!(r.sources.len(), 2);
    }

    #[test]
    fn approval_changes_only_when_set_and_agent_overlay_replaces_its_kinds() {
        let mut sec = SecurityConfig::default();
        sec.tool_policies.insert(
            "shell".into(),
            ToolPolicyConfig {
                approval: Some(ApprovalMode::Never),
                grants: None,
                taint: None,
            },
        );
        let default = ToolPolicy::new(ApprovalMode::Always).with_grants(Grants {
            network: Some(NetworkGrant::default()),
            ..shell_grant(&["git"])
        });
        let r = resolve("shell", &default, &sec, Some(&shell_grant(&["ls"])));
        assert_eq!(r.approval, ApprovalMode::Never);
        assert_eq!(r.grants.shell, shell_grant(&["ls"]).shell);
        assert_eq!(r.grants.network, Some(NetworkGrant::default()));
        assert!(r.sources.iter().any(|s| s.starts_with("agent grants")));
    }

    #[test]
    fn legacy_keys_become_grants_with_a_warning() {
        let sec = SecurityConfig {
            shell_denylist: Some(vec!["rm".into()]),
            allowed_endpoints: Some(vec!["https://api.github.com/v1".into()]),
            ..SecurityConfig::default()
        };
        let l = legacy_grants(&sec).unwrap_or_else(|| panic!("legacy keys were ignored"));
        assert_eq!(l.shell.map(|s| s.deny), Some(vec!["rm".to_string()]));
        let ep = l.network.map(|n| n.endpoints).unwrap_or_default();
        assert_eq!(ep[0].host, "api.github.com");
        assert_eq!(ep[0].path_prefix.as_deref(), Some("/v1"));
        assert_eq!(
            l.warning,
            "deprecated config keys, applied only as these grants: security.shell_denylist → \
             security.tool_policies.shell.grants.shell.deny; security.allowed_endpoints → \
             security.tool_policies.web_fetch.grants.network.endpoints and \
             security.tool_policies.http_request.grants.network.endpoints; move them there"
        );
        assert!(legacy_grants(&SecurityConfig::default()).is_none());
    }

    #[test]
    fn legacy_keys_apply_only_to_the_tools_they_governed() {
        let sec = SecurityConfig {
            shell_denylist: Some(vec!["rm".into()]),
            allowed_endpoints: Some(vec!["api.github.com".into()]),
            ..SecurityConfig::default()
        };
        let default = ToolPolicy::new(ApprovalMode::Never);
        let shell = resolve("shell", &default, &sec, None);
        assert!(shell.grants.shell.is_some() && shell.grants.network.is_none());
        let fetch = resolve("web_fetch", &default, &sec, None);
        assert!(fetch.grants.network.is_some() && fetch.grants.shell.is_none());
        let search = resolve("web_search", &default, &sec, None);
        assert_eq!(search.grants, Grants::default());
        assert_eq!(search.sources.len(), 1);
    }

    #[test]
    fn approval_modes_decide_allow_or_ask() {
        let auto = vec!["write_file".to_string()];
        let v = |t, m, s| approval_decision(t, m, &auto, s).verdict;
        assert_eq!(v("x", ApprovalMode::Never, false), Verdict::Allow);
        assert_eq!(
            v("write_file", ApprovalMode::UnlessAutoApproved, false),
            Verdict::Allow
        );
        assert_eq!(
            v("shell", ApprovalMode::UnlessAutoApproved, false),
            Verdict::Ask
        );
        assert_eq!(v("write_file", ApprovalMode::Always, false), Verdict::Ask);
        assert_eq!(v("shell", ApprovalMode::Always, true), Verdict::Allow);
    }
}
