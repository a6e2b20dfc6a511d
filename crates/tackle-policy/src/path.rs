//! The path guard: is a path inside the roots an fs grant allows?
//!
//! [`roots`] turns a grant into absolute, lexically normalised roots (`~` expanded, relative
//! entries taken from the workspace); a missing grant or an empty list means the workspace
//! only. Each list stands alone: `allow_read` never opens writes and `allow_write` never opens
//! reads. [`check_path`] compares whole
//! components (`/work/ab` is not inside `/work/a`). The caller resolves symlinks first: it
//! passes canonical paths and canonical roots; this module never touches the file system.

use std::path::{Component, Path, PathBuf};
use tackle_protocol::{Decision, FsGrant};

/// Which kind of access a path check is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Reading or listing, checked against `grants.fs.allow_read`.
    Read,
    /// Creating or modifying, checked against `grants.fs.allow_write`.
    Write,
}

/// The absolute roots a grant allows, per access kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FsRoots {
    /// Roots reads may happen under (from `allow_read`, else the workspace).
    pub read: Vec<PathBuf>,
    /// Roots writes may happen under (from `allow_write`, else the workspace).
    pub write: Vec<PathBuf>,
}

/// Resolves a grant's entries into absolute roots. Entries that cannot be expanded (`~` with no
/// home, `~user`, anything relative to a relative workspace) are dropped, which only ever
/// narrows the grant.
pub fn roots(grant: Option<&FsGrant>, workspace: &Path, home: Option<&Path>) -> FsRoots {
    let workspace = normalize(workspace);
    let expand = |list: &[String]| -> Vec<PathBuf> {
        if list.is_empty() {
            // A relative workspace (`.` normalises to an empty path, which every path
            // "starts with") cannot be compared with canonical paths: it opens nothing.
            return Some(workspace.clone())
                .filter(|w| w.is_absolute())
                .into_iter()
                .collect();
        }
        list.iter()
            .filter_map(|e| expand_entry(e, &workspace, home))
            .collect()
    };
    let empty = Vec::new();
    let (read, write) = match grant {
        Some(g) => (&g.allow_read, &g.allow_write),
        None => (&empty, &empty),
    };
    FsRoots {
        read: expand(read),
        write: expand(write),
    }
}

fn expand_entry(entry: &str, workspace: &Path, home: Option<&Path>) -> Option<PathBuf> {
    let entry = entry.trim();
    if entry.is_empty() {
        return None;
    }
    let path = if entry == "~" {
        home?.to_path_buf()
    } else if let Some(rest) = entry.strip_prefix("~/") {
        home?.join(rest)
    } else if entry.starts_with('~') {
        return None;
    } else {
        workspace.join(entry)
    };
    let path = normalize(&path);
    path.is_absolute().then_some(path)
}

/// Decides whether `path` (canonical, absolute) may be accessed under `roots`.
pub fn check_path(path: &Path, access: Access, roots: &FsRoots) -> Decision {
    let (list, kind, rule) = match access {
        Access::Read => (&roots.read, "readable", "grants.fs.allow_read"),
        Access::Write => (&roots.write, "writable", "grants.fs.allow_write"),
    };
    let shown = path.display();
    let lexical = path
        .components()
        .any(|c| matches!(c, Component::ParentDir | Component::CurDir));
    if !path.is_absolute() || lexical {
        return Decision::deny(
            rule,
            format!("`{shown}` is denied: only absolute paths without `.` or `..` can be checked"),
        );
    }
    match list
        .iter()
        .find(|root| root.is_absolute() && path.starts_with(root))
    {
        Some(root) => Decision::allow(
            format!("{rule} {:?}", root.display().to_string()),
            format!(
                "`{shown}` is allowed: it is inside the {kind} root `{}`",
                root.display()
            ),
        ),
        None => {
            let all: Vec<String> = list.iter().map(|r| r.display().to_string()).collect();
            Decision::deny(
                rule,
                format!(
                    "`{shown}` is denied: it is outside the {kind} roots ({}); add its directory to {} to allow it",
                    all.join(", "),
                    rule.trim_start_matches("grants.")
                ),
            )
        }
    }
}

/// Resolves `.` and `..` lexically (no file system access); `..` never climbs above the root.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                let last_is_parent =
                    matches!(out.components().next_back(), Some(Component::ParentDir));
                if last_is_parent || (!out.pop() && !path.has_root()) {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_resolves_dots_without_climbing_above_the_root() {
        assert_eq!(normalize(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
        assert_eq!(normalize(Path::new("/../../x")), PathBuf::from("/x"));
        assert_eq!(normalize(Path::new("../../x")), PathBuf::from("../../x"));
        assert_eq!(normalize(Path::new("a/../../x")), PathBuf::from("../x"));
    }

    #[test]
    fn sibling_with_a_common_string_prefix_is_outside() {
        let r = FsRoots {
            read: vec![PathBuf::from("/work/a")],
            write: vec![],
        };
        assert!(check_path(Path::new("/work/ab"), Access::Read, &r).is_denied());
        assert!(check_path(Path::new("/work/a/b"), Access::Read, &r).is_allowed());
    }
}
