//! Which shell rules the sandbox enforces at exec and which only the analyser can.
//!
//! A rule of one word (`rm`, `/usr/bin/curl`) names a program: the command's sandbox makes
//! that program absent, whatever path the line takes to it. A rule with more words
//! (`git push`) constrains a program's arguments, which only the analyser sees.

use super::rules::Rule;
use serde::Serialize;
use tackle_protocol::ShellGrant;

/// The layer that makes a rule true.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleLayer {
    /// The program is masked (deny) or is all there is (allow) inside the command's sandbox.
    Kernel,
    /// Enforced by the shell analyser before the command runs; what it cannot see fails closed.
    Analyser,
}

impl std::fmt::Display for RuleLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RuleLayer::Kernel => "kernel",
            RuleLayer::Analyser => "analyser",
        })
    }
}

/// One rule of a grant and the layer that enforces it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuleEnforcement {
    /// `allow` or `deny`.
    pub list: &'static str,
    /// The rule as written in the grant.
    pub rule: String,
    /// Whether the sandbox or only the analyser enforces it.
    pub layer: RuleLayer,
}

/// The programs a grant's rules name, as the sandbox applies them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProgramRules {
    /// Programs denied outright (one-word deny rules), by name.
    pub denied: Vec<String>,
    /// Under an allow list, the programs it names (the first word of each rule), minus the
    /// denied ones; `None` when every program may run.
    pub allowed: Option<Vec<String>>,
}

impl ProgramRules {
    /// True when the grant names no program: nothing to mask or confine in the sandbox.
    pub fn is_empty(&self) -> bool {
        self.denied.is_empty() && self.allowed.is_none()
    }
}

/// The program rules of `grant`. Rules that do not parse name no program and are left to the
/// analyser (which refuses what it cannot read).
pub fn program_rules(grant: &ShellGrant) -> ProgramRules {
    let mut denied: Vec<String> = grant
        .deny
        .iter()
        .filter_map(|r| Rule::parse(r))
        .filter(|r| r.words.len() == 1)
        .filter_map(|r| r.words.into_iter().next())
        .collect();
    denied.sort();
    denied.dedup();
    let allowed = (!grant.allow.is_empty()).then(|| {
        let mut names: Vec<String> = grant
            .allow
            .iter()
            .filter_map(|r| Rule::parse(r))
            .filter_map(|r| r.words.into_iter().next())
            .filter(|name| !denied.iter().any(|d| d.eq_ignore_ascii_case(name)))
            .collect();
        names.sort();
        names.dedup();
        names
    });
    ProgramRules { denied, allowed }
}

/// Every rule of `grant` with the layer that enforces it, allow rules first.
pub fn rule_layers(grant: &ShellGrant) -> Vec<RuleEnforcement> {
    let layer = |raw: &str| match Rule::parse(raw) {
        Some(r) if r.words.len() == 1 => RuleLayer::Kernel,
        _ => RuleLayer::Analyser,
    };
    let allow = grant.allow.iter().map(|r| RuleEnforcement {
        list: "allow",
        rule: r.clone(),
        // An allow rule's program is all the sandbox shows; its arguments are the analyser's.
        layer: layer(r),
    });
    let deny = grant.deny.iter().map(|r| RuleEnforcement {
        list: "deny",
        rule: r.clone(),
        layer: layer(r),
    });
    allow.chain(deny).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(allow: &[&str], deny: &[&str]) -> ShellGrant {
        ShellGrant {
            allow: allow.iter().map(|s| s.to_string()).collect(),
            deny: deny.iter().map(|s| s.to_string()).collect(),
            ..ShellGrant::default()
        }
    }

    #[test]
    fn one_word_rules_are_programs_and_longer_ones_arguments() {
        let g = grant(&[], &["rm", "/usr/bin/curl", "git push", "'wget'"]);
        let p = program_rules(&g);
        assert_eq!(p.denied, ["curl", "rm", "wget"]);
        assert_eq!(p.allowed, None);
        let layers: Vec<_> = rule_layers(&g).into_iter().map(|r| r.layer).collect();
        assert_eq!(
            layers,
            [
                RuleLayer::Kernel,
                RuleLayer::Kernel,
                RuleLayer::Analyser,
                RuleLayer::Kernel
            ]
        );
    }

    #[test]
    fn an_allow_list_names_programs_and_deny_wins() {
        let g = grant(&["git status", "git log", "ls", "rm"], &["rm"]);
        let p = program_rules(&g);
        assert_eq!(
            p.allowed.as_deref(),
            Some(&["git".to_string(), "ls".into()][..])
        );
    }
}
