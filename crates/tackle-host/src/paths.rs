//! Turning a requested path into the canonical path the grant is checked against.
//!
//! The path guard in `tackle-policy` is lexical; it is only sound when both the roots and the
//! target are canonical (symlinks resolved, no `.`/`..`). A target that does not exist yet
//! (a file about to be written) is its nearest existing ancestor, canonicalised, plus the
//! remaining components; a dangling symlink on the way is refused, because where it would
//! lead cannot be known.

use std::ffi::OsString;
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};
use tackle_policy::path::{check_path, Access, FsRoots};
use tackle_protocol::{Decision, HostError};

/// A path with symlinks resolved, and whether it exists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Canonical {
    pub path: PathBuf,
    pub exists: bool,
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum PathError {
    #[error("{0} is a symbolic link whose target does not exist or cannot be resolved")]
    DanglingSymlink(PathBuf),
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("the path is {0} bytes long, over the system limit of {PATH_LIMIT} bytes")]
    TooLong(usize),
}

/// `PATH_MAX`: longer paths cannot be opened by name anyway, and creating directories
/// relative to descriptors would otherwise build trees deeper than other tools can handle.
pub(crate) const PATH_LIMIT: usize = 4096;

impl PathError {
    /// A denial for `--explain` and for refusals: an unresolvable link is a policy matter.
    pub fn into_decision(self) -> Decision {
        Decision::deny("grants.fs", self.to_string())
    }

    pub fn into_host_error(self) -> HostError {
        match self {
            PathError::DanglingSymlink(_) => HostError::Denied(self.into_decision()),
            PathError::Io { .. } => HostError::Io(self.to_string()),
            PathError::TooLong(_) => HostError::Invalid(self.to_string()),
        }
    }
}

/// `~` and `~/x` become `home` and `home/x` when a home is known.
pub(crate) fn expand_tilde(path: &Path, home: Option<&Path>) -> PathBuf {
    let Some(home) = home else {
        return path.to_path_buf();
    };
    let mut comps = path.components();
    match comps.next() {
        Some(Component::Normal(first)) if first == "~" => home.join(comps.as_path()),
        _ => path.to_path_buf(),
    }
}

/// Absolute form of a requested path: `~` expanded, relative paths taken from `base`.
pub(crate) fn absolutize(path: &Path, base: &Path, home: Option<&Path>) -> PathBuf {
    let expanded = expand_tilde(path, home);
    if expanded.is_absolute() {
        expanded
    } else {
        base.join(expanded)
    }
}

/// Canonicalise `path` (absolute) component by component; see the module doc.
pub(crate) fn canonicalize_lenient(path: &Path) -> Result<Canonical, PathError> {
    if !path.is_absolute() {
        // Rooting it at `/` would turn a relative workspace `.` into the whole file system.
        return Err(PathError::Io {
            path: path.to_path_buf(),
            source: io::Error::new(io::ErrorKind::InvalidInput, "the path is not absolute"),
        });
    }
    let len = path.as_os_str().len();
    if len >= PATH_LIMIT {
        return Err(PathError::TooLong(len));
    }
    let mut base = PathBuf::from("/");
    let mut tail: Vec<OsString> = Vec::new();
    for comp in path.components() {
        match comp {
            Component::Prefix(_) | Component::RootDir | Component::CurDir => {}
            Component::ParentDir => {
                // Below a missing component everything is lexical (missing dirs cannot be
                // links); above it, `base` is canonical so popping it is what the kernel does.
                if tail.pop().is_none() {
                    base.pop();
                }
            }
            Component::Normal(name) if !tail.is_empty() => tail.push(name.to_os_string()),
            Component::Normal(name) => step(&mut base, &mut tail, name)?,
        }
    }
    let exists = tail.is_empty();
    let mut out = base;
    out.extend(tail);
    // Links can lengthen the path: `short/link/x` may resolve past the limit.
    if out.as_os_str().len() >= PATH_LIMIT {
        return Err(PathError::TooLong(out.as_os_str().len()));
    }
    Ok(Canonical { path: out, exists })
}

/// One existing-prefix step: follow `name` under the canonical `base`.
fn step(
    base: &mut PathBuf,
    tail: &mut Vec<OsString>,
    name: &std::ffi::OsStr,
) -> Result<(), PathError> {
    let candidate = base.join(name);
    match fs::symlink_metadata(&candidate) {
        Ok(meta) if meta.file_type().is_symlink() => match fs::canonicalize(&candidate) {
            Ok(resolved) => *base = resolved,
            Err(_) => return Err(PathError::DanglingSymlink(candidate)),
        },
        Ok(_) => *base = candidate,
        Err(e) if is_missing(&e) => tail.push(name.to_os_string()),
        Err(source) => {
            return Err(PathError::Io {
                path: candidate,
                source,
            })
        }
    }
    Ok(())
}

fn is_missing(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

/// The grant's roots, canonicalised where they exist so they compare with canonical targets.
/// A root that cannot be resolved stays as written (it then matches nothing real).
pub(crate) fn canonical_roots(roots: FsRoots) -> FsRoots {
    let canon = |p: PathBuf| canonicalize_lenient(&p).map(|c| c.path).unwrap_or(p);
    FsRoots {
        read: roots.read.into_iter().map(canon).collect(),
        write: roots.write.into_iter().map(canon).collect(),
    }
}

/// Where the host resolves and checks paths for one scoped call.
#[derive(Debug, Clone)]
pub(crate) struct PathGuard {
    pub workspace: PathBuf,
    pub home: Option<PathBuf>,
    pub roots: FsRoots,
}

impl PathGuard {
    /// The canonical form of a requested path.
    pub fn resolve(&self, requested: &Path) -> Result<Canonical, PathError> {
        let abs = absolutize(requested, &self.workspace, self.home.as_deref());
        canonicalize_lenient(&abs)
    }

    /// The policy decision for `canonical` (already resolved).
    pub fn decide(&self, canonical: &Path, access: Access) -> Decision {
        check_path(canonical, access, &self.roots)
    }

    /// Resolve and check in one step, as `--explain` does.
    pub fn explain(&self, requested: &Path, access: Access) -> Decision {
        match self.resolve(requested) {
            Ok(c) => self.decide(&c.path, access),
            Err(e) => e.into_decision(),
        }
    }

    /// `Ok` only when the grant allows `access` to `canonical`.
    pub fn require(&self, canonical: &Path, access: Access) -> Result<(), HostError> {
        let decision = self.decide(canonical, access);
        if decision.is_allowed() {
            Ok(())
        } else {
            Err(HostError::Denied(decision))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_tail_is_appended_to_the_canonical_ancestor() {
        let dir = tempfile::tempdir().unwrap();
        let real = fs::canonicalize(dir.path()).unwrap();
        let c = canonicalize_lenient(&dir.path().join("a/b/../c.txt")).unwrap();
        assert_eq!(c.path, real.join("a/c.txt"));
        assert!(!c.exists);
    }

    #[test]
    fn dotdot_through_a_symlinked_dir_follows_the_real_parent() {
        let dir = tempfile::tempdir().unwrap();
        let real = fs::canonicalize(dir.path()).unwrap();
        fs::create_dir_all(real.join("x/y")).unwrap();
        std::os::unix::fs::symlink(real.join("x/y"), real.join("link")).unwrap();
        let c = canonicalize_lenient(&real.join("link/../z")).unwrap();
        assert_eq!(c.path, real.join("x/z"));
    }

    #[test]
    fn dangling_symlink_on_the_way_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let real = fs::canonicalize(dir.path()).unwrap();
        std::os::unix::fs::symlink("/nonexistent-tackle-target", real.join("dangle")).unwrap();
        let err = canonicalize_lenient(&real.join("dangle/file")).unwrap_err();
        assert!(matches!(err, PathError::DanglingSymlink(_)));
    }

    #[test]
    fn a_relative_path_is_refused_rather_than_rooted_at_slash() {
        for p in [".", "ws", "./x", ""] {
            assert!(canonicalize_lenient(Path::new(p)).is_err(), "{p:?}");
        }
    }

    #[test]
    fn tilde_expands_only_as_the_first_component() {
        let home = Path::new("/home/u");
        assert_eq!(
            expand_tilde(Path::new("~/notes"), Some(home)),
            PathBuf::from("/home/u/notes")
        );
        assert_eq!(
            expand_tilde(Path::new("a/~/b"), Some(home)),
            PathBuf::from("a/~/b")
        );
        assert_eq!(expand_tilde(Path::new("~/x"), None), PathBuf::from("~/x"));
    }
}
