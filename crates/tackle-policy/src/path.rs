//! The path guard.
use std::path::{Component, Path, PathBuf};
use tackle_protocol::{Decision, FsGrant};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FsRoots {
    pub read: Vec<PathBuf>,
    pub write: Vec<PathBuf>,
}

pub fn roots(_grant: Option<&FsGrant>, _workspace: &Path, _home: Option<&Path>) -> FsRoots {
    FsRoots::default()
}

pub fn check_path(_path: &Path, _access: Access, _roots: &FsRoots) -> Decision {
    Decision::deny("grants.fs", "the path guard is not ready")
}

/// Resolves `.` and `..` lexically (no file system access); `..` never climbs above the root.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() && !path.is_absolute() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}
