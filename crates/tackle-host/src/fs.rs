//! File reads and atomic writes, confined to the canonical grant roots.
//!
//! Everything here is blocking `std::fs`; the host runs it on the blocking pool.

use crate::paths::PathGuard;
use crate::safe_open::{open_no_links, Dir};
use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use tackle_policy::path::Access;
use tackle_protocol::{
    FileContent, FileVersion, HostError, ReadRequest, WriteReport, WriteRequest,
};

fn io_err(path: &Path, e: io::Error) -> HostError {
    if e.kind() == io::ErrorKind::NotFound {
        HostError::NotFound {
            path: path.to_path_buf(),
        }
    } else if e.raw_os_error() == Some(libc::ELOOP) {
        // A link appeared on the way after the path was resolved (openat2 / O_NOFOLLOW).
        HostError::Io(format!(
            "{}: refusing to follow a symbolic link",
            path.display()
        ))
    } else {
        HostError::Io(format!("{}: {e}", path.display()))
    }
}

/// Read up to `min(req.max_bytes, ceiling)` bytes from `req.offset`.
pub(crate) fn read(
    guard: &PathGuard,
    req: &ReadRequest,
    ceiling: u64,
) -> Result<FileContent, HostError> {
    let canon = guard.resolve(&req.path).map_err(|e| e.into_host_error())?;
    if !canon.exists {
        return Err(HostError::NotFound {
            path: req.path.clone(),
        });
    }
    guard.require(&canon.path, Access::Read)?;
    let path = canon.path;
    let meta = fs::symlink_metadata(&path).map_err(|e| io_err(&path, e))?;
    if meta.is_dir() {
        return Err(HostError::Invalid(format!(
            "{} is a directory, not a file",
            path.display()
        )));
    }
    if !meta.is_file() {
        return Err(HostError::Invalid(format!(
            "{} is not a regular file",
            path.display()
        )));
    }
    let fd =
        open_no_links(&path, libc::O_RDONLY | libc::O_NONBLOCK).map_err(|e| io_err(&path, e))?;
    let mut file = File::from(fd);
    let meta = file.metadata().map_err(|e| io_err(&path, e))?;
    if !meta.is_file() {
        // Swapped for a FIFO or device since the check above.
        return Err(HostError::Invalid(format!(
            "{} is not a regular file",
            path.display()
        )));
    }
    let total_size = meta.len();
    let cap = req.max_bytes.unwrap_or(ceiling).min(ceiling);
    file.seek(SeekFrom::Start(req.offset))
        .map_err(|e| io_err(&path, e))?;
    let mut bytes = Vec::new();
    file.take(cap)
        .read_to_end(&mut bytes)
        .map_err(|e| io_err(&path, e))?;
    let whole = req.offset == 0 && bytes.len() as u64 == total_size;
    let version = version_of(&meta, whole.then(|| digest(&bytes)));
    Ok(FileContent {
        path,
        bytes,
        total_size,
        version: Some(version),
    })
}

/// Change detection, not integrity against an adversary: whoever could forge a collision
/// could as well have written the file after the check.
fn digest(bytes: &[u8]) -> u64 {
    use std::hash::Hasher;
    let mut h = std::hash::DefaultHasher::new();
    h.write(bytes);
    h.finish()
}

fn version_of(meta: &fs::Metadata, digest: Option<u64>) -> FileVersion {
    use std::os::unix::fs::MetadataExt;
    let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
    FileVersion {
        dev: meta.dev(),
        ino: meta.ino(),
        size: meta.size(),
        mtime_ns: ns(meta.mtime(), meta.mtime_nsec()),
        ctime_ns: ns(meta.ctime(), meta.ctime_nsec()),
        digest,
    }
}

/// The version of `name` in `dir` now (`None`: absent), read through a descriptor that
/// refuses a link; with a digest when `with_digest`.
fn current_version(dir: &Dir, name: &OsStr, with_digest: bool) -> io::Result<Option<FileVersion>> {
    let mut file = match dir.open_file(name) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    let digest = if with_digest && meta.is_file() {
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        Some(digest(&bytes))
    } else {
        None
    };
    Ok(Some(version_of(&meta, digest)))
}

/// Write a whole file atomically; see `write_atomic` for how.
pub(crate) fn write(guard: &PathGuard, req: &WriteRequest) -> Result<WriteReport, HostError> {
    let canon = guard.resolve(&req.path).map_err(|e| e.into_host_error())?;
    guard.require(&canon.path, Access::Write)?;
    let name = canon
        .path
        .file_name()
        .ok_or_else(|| HostError::Invalid(format!("{} names no file", req.path.display())))?
        .to_os_string();
    let parent = canon.path.parent().unwrap_or(Path::new("/")).to_path_buf();
    let parent = ensure_parent(guard, &parent, req.create_dirs)?;
    let target = parent.join(name);
    let previous = match fs::symlink_metadata(&target) {
        Ok(m) if m.is_dir() => {
            return Err(HostError::Invalid(format!(
                "{} is a directory",
                target.display()
            )));
        }
        Ok(m) if m.file_type().is_symlink() => {
            // `resolve` followed every link, so a link here appeared since: refuse.
            return Err(HostError::Io(format!(
                "{}: refusing to write through a symbolic link",
                target.display()
            )));
        }
        Ok(m) => Some(m),
        Err(_) => None,
    };
    // What must still be there at the rename: the version the caller read, else what was
    // there when this write began (nothing, or that file unchanged).
    let before = Precondition {
        expected: req.expected,
        seen: previous.as_ref().map(|m| version_of(m, None)),
    };
    let perms = previous.as_ref().map(|m| m.permissions());
    write_atomic(&target, &req.data, perms, &before)?;
    Ok(WriteReport {
        path: target,
        bytes_written: req.data.len() as u64,
        created: previous.is_none(),
    })
}

/// The canonical parent directory, created (inside the write grant only) when asked to.
fn ensure_parent(guard: &PathGuard, parent: &Path, create: bool) -> Result<PathBuf, HostError> {
    let canon = guard.resolve(parent).map_err(|e| e.into_host_error())?;
    if !canon.exists {
        if !create {
            return Err(HostError::NotFound {
                path: parent.to_path_buf(),
            });
        }
        create_dirs_inside_grant(guard, &canon.path)?;
    }
    // Resolve again: what exists now is what the write goes through.
    let now = guard.resolve(parent).map_err(|e| e.into_host_error())?;
    if !now.exists {
        return Err(HostError::NotFound {
            path: parent.to_path_buf(),
        });
    }
    guard.require(&now.path, Access::Write)?;
    Ok(now.path)
}

/// `mkdir` each missing ancestor of `dir`, all checked against the write grant first. Each
/// is created and opened relative to its parent's descriptor (no links followed), so a
/// directory swapped for a link meanwhile cannot carry the creation outside the grant.
fn create_dirs_inside_grant(guard: &PathGuard, dir: &Path) -> Result<(), HostError> {
    let mut missing: Vec<&Path> = dir
        .ancestors()
        .take_while(|p| fs::symlink_metadata(p).is_err())
        .collect();
    missing.reverse();
    for d in &missing {
        guard.require(d, Access::Write)?;
    }
    let Some(first) = missing.first() else {
        return Ok(());
    };
    let base = first.parent().unwrap_or(Path::new("/"));
    let mut at = Dir::open(base).map_err(|e| io_err(base, e))?;
    for d in missing {
        let name = d
            .file_name()
            .ok_or_else(|| HostError::Invalid(format!("{} names no directory", d.display())))?;
        at = at.mkdir_open(name).map_err(|e| io_err(d, e))?;
    }
    Ok(())
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// The state the target must be in for the rename to go ahead.
struct Precondition {
    expected: Option<FileVersion>,
    seen: Option<FileVersion>,
}

impl Precondition {
    /// Checked immediately before the rename, through the held directory: a file changed or
    /// created since it was read (or since this write began) is reported, not overwritten.
    fn holds(&self, dir: &Dir, name: &OsStr) -> io::Result<bool> {
        let want_digest = self.expected.is_some_and(|e| e.digest.is_some());
        let now = current_version(dir, name, want_digest)?;
        let matches = |want: &Option<FileVersion>| match (want, &now) {
            (None, None) => true,
            (Some(w), Some(n)) => w.same_as(n),
            _ => false,
        };
        Ok(match self.expected {
            Some(_) => matches(&self.expected),
            None => matches(&self.seen),
        })
    }

    fn target_absent(&self) -> bool {
        self.expected.is_none() && self.seen.is_none()
    }
}

/// Temp file in the same directory, fsync, rename over the target, fsync the directory, so a
/// reader sees the old file or the new one and never half of one. The directory is held open
/// (reached without links) and the temp file and rename are relative to it; the rename
/// replaces a final-component link rather than writing through it.
fn write_atomic(
    target: &Path,
    data: &[u8],
    perms: Option<fs::Permissions>,
    before: &Precondition,
) -> Result<(), HostError> {
    let dir_path = target.parent().unwrap_or(Path::new("/"));
    let name = target.file_name().unwrap_or_default();
    let dir = Dir::open(dir_path).map_err(|e| io_err(dir_path, e))?;
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let tmp = OsString::from(format!(
        ".{}.tackle-{}-{n}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = write_temp(&dir, &tmp, data, perms).and_then(|()| {
        if !before.holds(&dir, name)? {
            return Ok(false);
        }
        if before.target_absent() {
            match dir.rename_noreplace(&tmp, name) {
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
                other => other.map(|()| true),
            }
        } else {
            dir.rename(&tmp, name).map(|()| true)
        }
    });
    match result {
        Ok(true) => {}
        Ok(false) => {
            let _ = dir.remove(&tmp);
            return Err(HostError::Conflict {
                path: target.to_path_buf(),
            });
        }
        Err(e) => {
            let _ = dir.remove(&tmp);
            return Err(io_err(target, e));
        }
    }
    let _ = dir.sync();
    Ok(())
}

fn write_temp(
    dir: &Dir,
    tmp: &OsStr,
    data: &[u8],
    perms: Option<fs::Permissions>,
) -> io::Result<()> {
    let mut file = dir.create_new(tmp, 0o644)?;
    file.write_all(data)?;
    if let Some(p) = perms {
        file.set_permissions(fs::Permissions::from_mode(p.mode() & 0o7777))?;
    }
    file.sync_all()
}
