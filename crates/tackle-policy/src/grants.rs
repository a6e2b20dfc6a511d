//! The grant algebra: layering grants ([`merge_over`]) and narrowing them for a child
//! ([`attenuate`]).
//!
//! Internally every list is an [`Allowlist`]: `Permissive` or `Only(list)`, so "empty means
//! everything" is decided in one place. When an intersection leaves nothing, the result holds
//! [`NOTHING`], an entry no command, host or path can match, because an empty list would
//! mean the opposite.

use std::path::{Path, PathBuf};
use tackle_protocol::{Endpoint, FsGrant, Grants, NetworkGrant, ShellGrant};

/// An entry that matches nothing: no command word, host name or path can contain a NUL.
pub const NOTHING: &str = "\u{0}nothing";

/// A three-state list: everything, or only these entries (possibly none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Allowlist<T> {
    /// No restriction: every entry is allowed (a config list left empty).
    Permissive,
    /// Only these entries; an empty vector allows nothing.
    Only(Vec<T>),
}

impl<T: Clone> Allowlist<T> {
    /// Reads a config list where empty means everything.
    pub fn from_list(list: &[T]) -> Self {
        if list.is_empty() {
            Self::Permissive
        } else {
            Self::Only(list.to_vec())
        }
    }

    /// The narrower of two lists; `meet` gives the common part of two entries, if any.
    fn narrow(&self, other: &Self, meet: impl Fn(&T, &T) -> Option<T>) -> Self {
        match (self, other) {
            (Self::Permissive, x) | (x, Self::Permissive) => x.clone(),
            (Self::Only(a), Self::Only(b)) => {
                let mut out = Vec::new();
                for x in a {
                    for y in b {
                        out.extend(meet(x, y));
                    }
                }
                Self::Only(out)
            }
        }
    }

    /// Writes the list back in config form, using [`NOTHING`] for an empty `Only`.
    fn into_list(self, nothing: impl FnOnce() -> T) -> Vec<T> {
        match self {
            Self::Permissive => Vec::new(),
            Self::Only(v) if v.is_empty() => vec![nothing()],
            Self::Only(v) => v,
        }
    }
}

/// Layers `overlay` over `base` kind by kind: a kind the overlay sets replaces the base's.
pub fn merge_over(base: &Grants, overlay: &Grants) -> Grants {
    Grants {
        shell: overlay.shell.clone().or_else(|| base.shell.clone()),
        network: overlay.network.clone().or_else(|| base.network.clone()),
        fs: overlay.fs.clone().or_else(|| base.fs.clone()),
    }
}

/// A child's grants, narrowed so they never allow more than the parent's. A kind the child
/// does not set inherits the parent's; a kind the parent does not set is that kind's default
/// (shell and network permissive, fs the workspace only), which the child's setting narrows.
pub fn attenuate(parent: &Grants, child: &Grants) -> Grants {
    Grants {
        shell: both(&parent.shell, &child.shell, shell_meet),
        network: both(&parent.network, &child.network, network_meet),
        fs: fs_meet(parent.fs.as_ref(), child.fs.as_ref()),
    }
}

/// What both `a` and `b` allow: a peer agent's own grants narrowed to its caller's. Unlike
/// [`attenuate`], a kind one side leaves unset is that kind's default on that side (shell and
/// network permissive, fs the workspace only), never the other side's setting: a peer that
/// sets no fs grant keeps the workspace-only default even when its caller may read more.
pub fn intersect(a: &Grants, b: &Grants) -> Grants {
    attenuate(&explicit(a), &explicit(b))
}

/// Every kind set, each unset one to its default.
fn explicit(g: &Grants) -> Grants {
    Grants {
        shell: Some(g.shell.clone().unwrap_or_default()),
        network: Some(g.network.clone().unwrap_or_default()),
        fs: Some(g.fs.clone().unwrap_or_default()),
    }
}

fn both<T: Clone + Default>(p: &Option<T>, c: &Option<T>, meet: fn(&T, &T) -> T) -> Option<T> {
    match (p, c) {
        (Some(p), Some(c)) => Some(meet(p, c)),
        (None, Some(c)) => Some(meet(&T::default(), c)),
        (p, None) => p.clone(),
    }
}

fn shell_meet(p: &ShellGrant, c: &ShellGrant) -> ShellGrant {
    let allow = Allowlist::from_list(&p.allow).narrow(&Allowlist::from_list(&c.allow), |a, b| {
        let (wa, wb) = (crate::shell::rule_words(a)?, crate::shell::rule_words(b)?);
        // The more specific of two rules where one is a word prefix of the other.
        if wb.starts_with(&wa) {
            Some(b.clone())
        } else if wa.starts_with(&wb) {
            Some(a.clone())
        } else {
            None
        }
    });
    let mut deny = p.deny.clone();
    deny.extend(c.deny.iter().filter(|d| !p.deny.contains(d)).cloned());
    ShellGrant {
        allow: allow.into_list(|| NOTHING.to_string()),
        deny,
        // `deny` is the narrower of the two.
        opaque: p.opaque.min(c.opaque),
    }
}

fn network_meet(p: &NetworkGrant, c: &NetworkGrant) -> NetworkGrant {
    let endpoints = Allowlist::from_list(&p.endpoints)
        .narrow(&Allowlist::from_list(&c.endpoints), endpoint_meet);
    NetworkGrant {
        endpoints: endpoints.into_list(|| Endpoint {
            host: NOTHING.to_string(),
            path_prefix: None,
            methods: None,
        }),
        allow_private: p.allow_private && c.allow_private,
    }
}

fn endpoint_meet(a: &Endpoint, b: &Endpoint) -> Option<Endpoint> {
    let host = host_meet(&a.host, &b.host)?;
    let path_prefix = match (&a.path_prefix, &b.path_prefix) {
        (None, x) | (x, None) => x.clone(),
        (Some(x), Some(y)) => {
            let (sx, sy) = (segments(x), segments(y));
            if sy.starts_with(&sx) {
                Some(y.clone())
            } else if sx.starts_with(&sy) {
                Some(x.clone())
            } else {
                return None;
            }
        }
    };
    let methods = match (&a.methods, &b.methods) {
        (None, x) | (x, None) => x.clone(),
        (Some(x), Some(y)) => {
            let common: Vec<String> = x
                .iter()
                .filter(|m| y.iter().any(|n| n.eq_ignore_ascii_case(m)))
                .cloned()
                .collect();
            if common.is_empty() {
                return None;
            }
            Some(common)
        }
    };
    Some(Endpoint {
        host,
        path_prefix,
        methods,
    })
}

/// The narrower of two host patterns, or `None` when they share no host.
fn host_meet(a: &str, b: &str) -> Option<String> {
    let (la, lb) = (host_key(a), host_key(b));
    if la == "*" {
        return Some(b.to_string());
    }
    if lb == "*" || la == lb {
        return Some(a.to_string());
    }
    if covers(&la, &lb) {
        Some(b.to_string())
    } else if covers(&lb, &la) {
        Some(a.to_string())
    } else {
        None
    }
}

fn host_key(h: &str) -> String {
    h.trim().trim_end_matches('.').to_ascii_lowercase()
}

/// Whether glob `pattern` (`*.x`) covers every host `other` can match.
fn covers(pattern: &str, other: &str) -> bool {
    let Some(suffix) = pattern.strip_prefix("*.") else {
        return false;
    };
    let other = other.strip_prefix("*.").map_or(other, |o| o);
    other
        .strip_suffix(suffix)
        .is_some_and(|sub| sub.len() > 1 && sub.ends_with('.'))
}

fn segments(p: &str) -> Vec<&str> {
    p.split('/').filter(|s| !s.is_empty()).collect()
}

/// fs lists default to the workspace (`.`), so a missing or empty list is `["."]`, and two
/// entries meet at the deeper one when one contains the other, compared by component.
fn fs_meet(p: Option<&FsGrant>, c: Option<&FsGrant>) -> Option<FsGrant> {
    let Some(c) = c else {
        return p.cloned();
    };
    let c = Some(c);
    let list = |g: Option<&FsGrant>, read: bool| -> Vec<String> {
        let l = g.map(|g| if read { &g.allow_read } else { &g.allow_write });
        match l {
            Some(l) if !l.is_empty() => l.clone(),
            _ => vec![".".to_string()],
        }
    };
    let meet = |a: Vec<String>, b: Vec<String>| -> Vec<String> {
        let out = Allowlist::Only(a).narrow(&Allowlist::Only(b), |x, y| {
            let (px, py) = (symbolic(x)?, symbolic(y)?);
            if py.starts_with(&px) {
                Some(y.clone())
            } else if px.starts_with(&py) {
                Some(x.clone())
            } else {
                None
            }
        });
        out.into_list(|| NOTHING.to_string())
    };
    Some(FsGrant {
        allow_read: meet(list(p, true), list(c, true)),
        allow_write: meet(list(p, false), list(c, false)),
    })
}

/// A path entry in a form comparable without knowing the workspace or home: `~` and the
/// workspace become marker directories, then `.` and `..` are resolved lexically. Entries that
/// climb out of their base (`../x`) are not comparable, which drops them (narrowing).
fn symbolic(entry: &str) -> Option<PathBuf> {
    const HOME: &str = "/\u{0}home";
    const WORKSPACE: &str = "/\u{0}workspace";
    let entry = entry.trim();
    if entry.contains('\u{0}') {
        return None;
    }
    let (base, rest) = if entry == "~" {
        (HOME, "")
    } else if let Some(r) = entry.strip_prefix("~/") {
        (HOME, r)
    } else if entry.starts_with('~') {
        return None;
    } else if entry.starts_with('/') {
        ("/", entry)
    } else {
        (WORKSPACE, entry)
    };
    let normal = crate::path::normalize(&Path::new(base).join(rest));
    normal.starts_with(base).then_some(normal)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell(allow: &[&str], deny: &[&str]) -> Grants {
        Grants {
            shell: Some(ShellGrant {
                allow: allow.iter().map(|s| s.to_string()).collect(),
                deny: deny.iter().map(|s| s.to_string()).collect(),
                ..Default::default()
            }),
            ..Grants::default()
        }
    }

    #[test]
    fn overlay_replaces_only_the_kinds_it_sets() {
        let base = Grants {
            network: Some(NetworkGrant::default()),
            ..shell(&["git"], &[])
        };
        let merged = merge_over(&base, &shell(&["ls"], &[]));
        assert_eq!(merged.shell, shell(&["ls"], &[]).shell);
        assert_eq!(merged.network, Some(NetworkGrant::default()));
    }

    #[test]
    fn disjoint_allow_lists_attenuate_to_nothing_not_to_everything() {
        let g = attenuate(&shell(&["git"], &[]), &shell(&["ls"], &[]));
        let s = g.shell.unwrap_or_default();
        assert_eq!(s.allow, vec![NOTHING.to_string()]);
        assert!(crate::shell::check_shell("ls", &s).is_denied());
        assert!(crate::shell::check_shell("git status", &s).is_denied());
    }

    #[test]
    fn child_rule_more_specific_than_parent_survives() {
        let g = attenuate(
            &shell(&["git"], &["rm"]),
            &shell(&["git status", "ls"], &["curl"]),
        );
        let s = g.shell.unwrap_or_default();
        assert_eq!(s.allow, vec!["git status".to_string()]);
        assert_eq!(s.deny, vec!["rm".to_string(), "curl".to_string()]);
    }

    #[test]
    fn fs_entries_meet_by_component_not_by_string_prefix() {
        let p = Grants {
            fs: Some(FsGrant {
                allow_read: vec!["/work/a".into()],
                allow_write: vec![],
            }),
            ..Grants::default()
        };
        let c = Grants {
            fs: Some(FsGrant {
                allow_read: vec!["/work/ab".into()],
                allow_write: vec![],
            }),
            ..Grants::default()
        };
        let fs = attenuate(&p, &c).fs.unwrap_or_default();
        assert_eq!(fs.allow_read, vec![NOTHING.to_string()]);
        assert_eq!(fs.allow_write, vec![".".to_string()]);
    }
}
