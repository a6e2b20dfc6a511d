//! The injection defence without a judge (docs/decisions/0033-taint-gates-sinks.md): a session
//! that has read content someone else wrote (a web page, a search result, an MCP server's
//! answer: [`tackle_protocol::Provenance::Untrusted`]) is tainted for the rest of its life, and
//! from then on every call that can carry data out or plant work for later (a sink: a network
//! request with a body or a query, a write outside the workspace, a command that can reach the
//! network, `git push`, and what tools declare: a message, a schedule, a new agent, a shared
//! memory bank) needs a person's yes, whatever the auto-approved list or an earlier "allow for
//! the session" says, or is refused, as `security.tool_policies.TOOL.taint` says.

use crate::plan::Plan;
use serde_json::Value;
use std::sync::Mutex;
use tackle_protocol::{Capability, Provenance};

/// Sources kept to name in a prompt; later ones only count.
const NAMED_SOURCES: usize = 3;

/// One session's taint: where its untrusted content came from, first first.
#[derive(Debug, Default)]
pub struct SessionTaint {
    sources: Mutex<Vec<String>>,
    count: std::sync::atomic::AtomicUsize,
}

impl SessionTaint {
    /// A result of this provenance entered the session's context.
    pub fn record(&self, provenance: &Provenance) {
        let Provenance::Untrusted(source) = provenance else {
            return;
        };
        self.count
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Ok(mut sources) = self.sources.lock() {
            if sources.len() < NAMED_SOURCES && !sources.contains(source) {
                sources.push(source.clone());
            }
        }
    }

    /// Whether the session has read any untrusted content.
    pub fn is_tainted(&self) -> bool {
        self.count.load(std::sync::atomic::Ordering::Relaxed) > 0
    }

    /// "https://a.example, MCP server docs and 2 more".
    pub fn described(&self) -> String {
        let named = self.sources.lock().map(|s| s.clone()).unwrap_or_default();
        let total = self.count.load(std::sync::atomic::Ordering::Relaxed);
        let mut text = tackle_protocol::text::preview(&named.join(", "), 300);
        let more = total.saturating_sub(named.len());
        if more > 0 {
            text.push_str(&format!(
                " and {more} more result{}",
                if more == 1 { "" } else { "s" }
            ));
        }
        text
    }

    /// The sources to hand to an agent this session starts (empty when clean).
    pub fn sources(&self) -> Vec<String> {
        if !self.is_tainted() {
            return Vec::new();
        }
        match self.sources.lock() {
            Ok(named) if !named.is_empty() => named.clone(),
            _ => vec!["an earlier result".to_string()],
        }
    }

    /// How many untrusted results entered, and the sources named: what the store keeps.
    pub fn snapshot(&self) -> (Vec<String>, usize) {
        let named = self.sources.lock().map(|s| s.clone()).unwrap_or_default();
        (named, self.count.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// Starts a resumed session as tainted as it was kept ([`Self::snapshot`]).
    pub fn restore(&self, sources: Vec<String>, count: usize) {
        if let Ok(mut named) = self.sources.lock() {
            for source in sources.into_iter().take(NAMED_SOURCES) {
                if named.len() < NAMED_SOURCES && !named.contains(&source) {
                    named.push(source);
                }
            }
        }
        self.count
            .fetch_max(count, std::sync::atomic::Ordering::Relaxed);
    }

    /// Starts this (a child's) session tainted by what its parent read: an agent given work
    /// by a tainted session may be carrying it.
    pub fn inherit(&self, parent_sources: &[String]) {
        for source in parent_sources {
            self.record(&Provenance::Untrusted(format!(
                "{source} (read by the agent that started this one)"
            )));
        }
    }
}

/// Where this call's result comes from: what the tool says (a page, an MCP server), or, for a
/// tool that calls its own output trusted, an untrusted file it reads: one outside the
/// workspace (compared as the host resolves it, so links and `..` count), or one matching
/// `security.untrusted_paths` (globs relative to the workspace, or absolute).
pub fn provenance(plan: &Plan, args: &Value, untrusted_paths: &[String]) -> Provenance {
    let said = plan.entry.tool.provenance(args);
    if matches!(said, Provenance::Untrusted(_)) {
        return said;
    }
    let workspace = plan.host.canonical(&plan.scope.workspace);
    let marked = marked_paths(untrusted_paths, &workspace);
    plan.capabilities
        .iter()
        .find_map(|(cap, _)| {
            let Capability::FileRead { path } = cap else {
                return None;
            };
            let real = plan.host.canonical(path);
            if !real.starts_with(&workspace) {
                return Some(format!(
                    "the file {} (outside the workspace)",
                    real.display()
                ));
            }
            let inside = real.strip_prefix(&workspace).unwrap_or(&real);
            marked
                .as_ref()
                .is_some_and(|m| m.is_match(&real) || m.is_match(inside))
                .then(|| format!("the file {} (security.untrusted_paths)", inside.display()))
        })
        .map_or(said, Provenance::Untrusted)
}

/// Why a `security.untrusted_paths` entry cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a glob: {0}")]
pub struct NotAGlob(String);

/// Whether `pattern` can be a `security.untrusted_paths` entry.
pub fn check_marked_path(pattern: &str) -> Result<(), NotAGlob> {
    globset::Glob::new(pattern)
        .map(drop)
        .map_err(|e| NotAGlob(e.kind().to_string()))
}

/// The marked paths as one set (each pattern was checked to be a glob when the config loaded).
fn marked_paths(patterns: &[String], workspace: &std::path::Path) -> Option<globset::GlobSet> {
    if patterns.is_empty() {
        return None;
    }
    let mut set = globset::GlobSetBuilder::new();
    for p in patterns {
        // A directory marks what is under it; an absolute one is taken as written, and also
        // under the workspace's resolved path so `vendor/**` and `/ws/vendor/**` both work.
        let p = p.trim_end_matches('/');
        for pattern in [p.to_string(), format!("{p}/**")] {
            if let Ok(g) = globset::GlobBuilder::new(&pattern)
                .literal_separator(true)
                .build()
            {
                set.add(g);
            }
        }
        if !p.starts_with('/') {
            if let Ok(g) = globset::Glob::new(&format!("{}/{p}/**", workspace.display())) {
                set.add(g);
            }
        }
    }
    set.build().ok()
}

/// What this call can carry out of the session, in words; `None` when it is not a sink.
pub fn sink(plan: &Plan, args: &Value) -> Option<String> {
    if let Some(said) = plan.entry.tool.sink(args) {
        return Some(said);
    }
    let network_grant = plan.policy.grants.network.is_some();
    plan.capabilities.iter().find_map(|(cap, _)| match cap {
        Capability::Network { method, url } => {
            let reads_only =
                method.eq_ignore_ascii_case("GET") || method.eq_ignore_ascii_case("HEAD");
            let query = url
                .split_once('?')
                .is_some_and(|(_, q)| !q.split('#').next().unwrap_or_default().is_empty());
            (!reads_only || query).then(|| format!("sends data to {}", preview_url(url)))
        }
        // Compared as the host will resolve them: `ws/../x` and links leaving it are outside.
        Capability::FileWrite { path }
            if !plan
                .host
                .canonical(path)
                .starts_with(plan.host.canonical(&plan.scope.workspace)) =>
        {
            Some(format!("writes {} outside the workspace", path.display()))
        }
        Capability::Exec { program, args }
            if program == "git" && args.iter().any(|a| a == "push") =>
        {
            Some("pushes to a git remote".to_string())
        }
        Capability::Shell { .. } | Capability::Exec { .. } if network_grant => {
            Some("runs a command that can reach the network".to_string())
        }
        _ => None,
    })
}

fn preview_url(url: &str) -> String {
    tackle_protocol::text::preview(url, 120)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_is_tainted_by_untrusted_results_only_and_names_its_first_sources() {
        let t = SessionTaint::default();
        t.record(&Provenance::Trusted);
        assert!(!t.is_tainted());
        for s in [
            "https://a.example/",
            "https://a.example/",
            "MCP server docs",
            "x",
            "y",
        ] {
            t.record(&Provenance::Untrusted(s.into()));
        }
        assert!(t.is_tainted());
        let said = t.described();
        assert!(
            said.starts_with("https://a.example/, MCP server docs, x"),
            "{said}"
        );
        assert!(said.ends_with("and 2 more results"), "{said}");
        let child = SessionTaint::default();
        assert!(SessionTaint::default().sources().is_empty());
        child.inherit(&t.sources());
        assert!(child.is_tainted());
        assert!(child.described().contains("MCP server docs"));
    }
}
