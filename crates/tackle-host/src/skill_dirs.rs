//! [`DiskSkillDirs`]: the skill directories on disk (`skills.dirs`), for the skill catalogue
//! and `install_skill`.
//!
//! Reading never follows a link: an entry that is a link is skipped with a warning, and files
//! are opened with no link in any component. Installing writes every file into a fresh hidden
//! directory beside the target (same file system), then moves it into place with one rename
//! (`RENAME_NOREPLACE` for a new skill, `RENAME_EXCHANGE` to replace a previous install), so
//! a reader sees the old skill or the new one, never half of either. Files are written `0644`:
//! nothing installed is executable.

use crate::safe_open::open_no_links;
use std::ffi::CString;
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path};
use std::sync::Arc;
use tackle_protocol::skills::{
    FoundSkill, InstallReport, ScanReport, SkillDirError, SkillDirs, SkillInstall,
};

/// Asked before a skills or plugins directory (or a file under one) is read or written:
/// `Some(why)` refuses it. The binary builds it (a directory nobody named that resolves inside
/// the workspace is refused); the host applies it at the moment of each access.
pub type DirGuard = Arc<dyn Fn(&Path) -> Option<String> + Send + Sync>;

/// Why `path` may not be touched: a relative path (it would be read from the current directory,
/// whatever that is), else whatever `guard` says.
pub(crate) fn refusal(guard: &DirGuard, path: &Path) -> Option<String> {
    if !path.is_absolute() {
        return Some(guard(path).unwrap_or_else(|| {
            "not an absolute path, so it would be read from the current directory".to_string()
        }));
    }
    guard(path)
}

/// The skill directories on the local disk.
#[derive(Debug, Clone, Copy, Default)]
pub struct DiskSkillDirs;

pub(crate) enum ReadError {
    Missing,
    TooLarge,
    Io(io::Error),
}

pub(crate) fn read_capped(path: &Path, max: u64) -> Result<Vec<u8>, ReadError> {
    let fd = open_no_links(path, libc::O_RDONLY | libc::O_NONBLOCK).map_err(|e| {
        if e.kind() == io::ErrorKind::NotFound {
            ReadError::Missing
        } else {
            ReadError::Io(e)
        }
    })?;
    let file = std::fs::File::from(fd);
    let meta = file.metadata().map_err(ReadError::Io)?;
    if !meta.is_file() {
        return Err(ReadError::Io(io::Error::other("not a regular file")));
    }
    if meta.len() > max {
        return Err(ReadError::TooLarge);
    }
    let mut bytes = Vec::new();
    file.take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(ReadError::Io)?;
    if bytes.len() as u64 > max {
        return Err(ReadError::TooLarge);
    }
    Ok(bytes)
}

impl DiskSkillDirs {
    /// The skill directories on disk, asking `guard` before each scan, read and install: a
    /// refused directory is not read (its refusal is a scan warning) and nothing is installed
    /// into it. A relative directory is always refused.
    pub fn guarded(guard: DirGuard) -> Arc<dyn SkillDirs> {
        Arc::new(Guarded { guard })
    }
}

struct Guarded {
    guard: DirGuard,
}

impl SkillDirs for Guarded {
    fn scan(&self, dir: &Path, max_bytes: u64) -> ScanReport {
        match refusal(&self.guard, dir) {
            // A refused directory that is not there is no news.
            Some(_) if std::fs::symlink_metadata(dir).is_err() => ScanReport::default(),
            Some(why) => ScanReport {
                found: Vec::new(),
                warnings: vec![format!("{}: refused, {why}", dir.display())],
            },
            None => DiskSkillDirs.scan(dir, max_bytes),
        }
    }

    fn read(&self, path: &Path, max_bytes: u64) -> Result<Vec<u8>, SkillDirError> {
        match refusal(&self.guard, path) {
            Some(why) => Err(io_err(path, format!("refused, {why}"))),
            None => DiskSkillDirs.read(path, max_bytes),
        }
    }

    fn install(&self, req: &SkillInstall) -> Result<InstallReport, SkillDirError> {
        match refusal(&self.guard, &req.dir) {
            Some(why) => Err(io_err(&req.dir, format!("refused, {why}"))),
            None => DiskSkillDirs.install(req),
        }
    }
}

fn io_err(path: &Path, e: impl std::fmt::Display) -> SkillDirError {
    SkillDirError::Io {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

impl SkillDirs for DiskSkillDirs {
    fn scan(&self, dir: &Path, max_bytes: u64) -> ScanReport {
        let mut report = ScanReport::default();
        for crate::dir_entries::Entry {
            name: entry,
            path,
            meta,
        } in crate::dir_entries::entries(dir, "skills dir", &mut report.warnings)
        {
            let root = path.parent().map(Path::to_path_buf).unwrap_or_default();
            let (file, base_dir, entry) = if meta.file_type().is_symlink() {
                report.warnings.push(format!(
                    "{}: skipped, links in skills dirs are not followed",
                    path.display()
                ));
                continue;
            } else if meta.is_dir() {
                (path.join("SKILL.md"), path.clone(), entry.to_string())
            } else if let Some(stem) = entry.strip_suffix(".md").filter(|_| meta.is_file()) {
                (path.clone(), root.clone(), stem.to_string())
            } else {
                continue;
            };
            match read_capped(&file, max_bytes) {
                Ok(bytes) => report.found.push(FoundSkill {
                    entry,
                    path: file,
                    base_dir,
                    bytes,
                }),
                Err(ReadError::Missing) => {}
                Err(ReadError::TooLarge) => report.warnings.push(format!(
                    "{}: skipped, larger than {max_bytes} bytes",
                    file.display()
                )),
                Err(ReadError::Io(e)) => report
                    .warnings
                    .push(format!("{}: skipped, {e}", file.display())),
            }
        }
        report
    }

    fn read(&self, path: &Path, max_bytes: u64) -> Result<Vec<u8>, SkillDirError> {
        read_capped(path, max_bytes).map_err(|e| match e {
            ReadError::Missing => io_err(path, "no longer exists"),
            ReadError::TooLarge => io_err(path, format!("larger than {max_bytes} bytes")),
            ReadError::Io(e) => io_err(path, e),
        })
    }

    fn install(&self, req: &SkillInstall) -> Result<InstallReport, SkillDirError> {
        check_request(req)?;
        std::fs::create_dir_all(&req.dir).map_err(|e| io_err(&req.dir, e))?;
        let dir = std::fs::canonicalize(&req.dir).map_err(|e| io_err(&req.dir, e))?;
        let target = dir.join(&req.name);
        let replacing = match std::fs::symlink_metadata(&target) {
            Ok(meta) => {
                let ours = meta.is_dir()
                    && std::fs::symlink_metadata(target.join(&req.marker))
                        .is_ok_and(|m| m.is_file());
                if !ours {
                    return Err(SkillDirError::NotOurs {
                        path: target,
                        marker: req.marker.clone(),
                    });
                }
                true
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => false,
            Err(e) => return Err(io_err(&target, e)),
        };
        let tmp = dir.join(format!(".install-{}-{}", req.name, unique()));
        std::fs::create_dir(&tmp).map_err(|e| io_err(&tmp, e))?;
        let placed = write_tree(&tmp, req).and_then(|()| place(&tmp, &target, replacing));
        // After an exchange `tmp` holds the previous install; after a failure, the partial one.
        if let Err(e) = std::fs::remove_dir_all(&tmp) {
            if e.kind() != io::ErrorKind::NotFound {
                tracing::warn!("could not remove {}: {e}", tmp.display());
            }
        }
        placed?;
        if let Ok(d) = std::fs::File::open(&dir) {
            let _ = d.sync_all();
        }
        Ok(InstallReport {
            path: target,
            replaced: replacing,
        })
    }
}

/// The caller checked these; a host does not trust its callers' checks.
fn check_request(req: &SkillInstall) -> Result<(), SkillDirError> {
    let simple = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
            && !s.starts_with('.')
    };
    if !simple(&req.name) {
        return Err(SkillDirError::Invalid(format!(
            "{:?} is not a skill directory name",
            req.name
        )));
    }
    if req.marker.is_empty() || req.marker.contains(['/', '\\']) || req.marker == ".." {
        return Err(SkillDirError::Invalid("bad marker name".into()));
    }
    for (rel, _) in &req.files {
        let p = Path::new(rel);
        let normal = !rel.is_empty()
            && !rel.contains('\\')
            && p.components().all(|c| matches!(c, Component::Normal(_)));
        if !normal {
            return Err(SkillDirError::Invalid(format!(
                "{rel:?} is not a relative path inside the skill"
            )));
        }
    }
    Ok(())
}

fn unique() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{}-{nanos}", std::process::id())
}

fn write_tree(tmp: &Path, req: &SkillInstall) -> Result<(), SkillDirError> {
    let marker = (req.marker.clone(), req.marker_body.clone());
    for (rel, data) in req.files.iter().chain(std::iter::once(&marker)) {
        let path = tmp.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io_err(parent, e))?;
        }
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(|e| io_err(&path, e))?;
        file.write_all(data).map_err(|e| io_err(&path, e))?;
        file.sync_all().map_err(|e| io_err(&path, e))?;
    }
    Ok(())
}

fn cstr(p: &Path) -> Result<CString, SkillDirError> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| io_err(p, "path contains a NUL byte"))
}

/// Move `tmp` to `target` in one step: no replace for a new skill, an exchange for an update
/// (the previous install then sits at `tmp`, removed by the caller).
fn place(tmp: &Path, target: &Path, replacing: bool) -> Result<(), SkillDirError> {
    let (from, to) = (cstr(tmp)?, cstr(target)?);
    #[cfg(target_os = "linux")]
    {
        let flags = if replacing {
            libc::RENAME_EXCHANGE
        } else {
            libc::RENAME_NOREPLACE
        };
        // SAFETY: valid C strings; AT_FDCWD with absolute paths.
        let rc = unsafe {
            libc::renameat2(
                libc::AT_FDCWD,
                from.as_ptr(),
                libc::AT_FDCWD,
                to.as_ptr(),
                flags,
            )
        };
        if rc == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        if !matches!(err.raw_os_error(), Some(libc::EINVAL) | Some(libc::ENOSYS)) {
            return Err(io_err(target, err));
        }
    }
    // No renameat2 here: move the old install aside first (a short window without it).
    let _ = (from, to);
    if replacing {
        let aside = tmp.with_extension("old");
        std::fs::rename(target, &aside).map_err(|e| io_err(target, e))?;
        if let Err(e) = std::fs::rename(tmp, target) {
            let _ = std::fs::rename(&aside, target);
            return Err(io_err(target, e));
        }
        std::fs::rename(&aside, tmp).map_err(|e| io_err(&aside, e))
    } else if std::fs::symlink_metadata(target).is_ok() {
        Err(io_err(target, "appeared during the install"))
    } else {
        std::fs::rename(tmp, target).map_err(|e| io_err(target, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(dir: &Path, files: &[(&str, &str)]) -> SkillInstall {
        SkillInstall {
            dir: dir.to_path_buf(),
            name: "demo".into(),
            files: files
                .iter()
                .map(|(p, d)| (p.to_string(), d.as_bytes().to_vec()))
                .collect(),
            marker: ".clawhub.json".into(),
            marker_body: b"{}".to_vec(),
        }
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .map(|r| {
                r.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }

    #[test]
    fn scan_reads_both_layouts_and_skips_links_and_hidden_names() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("a")).unwrap();
        std::fs::write(d.path().join("a/SKILL.md"), "A").unwrap();
        std::fs::write(d.path().join("b.md"), "B").unwrap();
        std::fs::create_dir_all(d.path().join(".hidden")).unwrap();
        std::fs::write(d.path().join(".hidden/SKILL.md"), "H").unwrap();
        std::os::unix::fs::symlink(d.path().join("a"), d.path().join("c")).unwrap();
        std::fs::write(d.path().join("big.md"), "x".repeat(100)).unwrap();
        let r = DiskSkillDirs.scan(d.path(), 50);
        let entries: Vec<_> = r.found.iter().map(|f| f.entry.as_str()).collect();
        assert_eq!(entries, ["a", "b"]);
        assert!(r.warnings.iter().any(|w| w.contains("links")), "{r:?}");
        assert!(r.warnings.iter().any(|w| w.contains("larger")), "{r:?}");
    }

    #[test]
    fn a_guarded_dir_is_neither_read_nor_installed_into() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("b.md"), "B").unwrap();
        let refused = d.path().to_path_buf();
        let guard: DirGuard = Arc::new(move |p: &Path| {
            p.starts_with(&refused)
                .then(|| "inside the workspace".to_string())
        });
        let disk = DiskSkillDirs::guarded(guard);
        let r = disk.scan(d.path(), 50);
        assert!(r.found.is_empty(), "{r:?}");
        assert!(
            r.warnings
                .iter()
                .any(|w| w.contains("refused, inside the workspace")),
            "{r:?}"
        );
        assert!(disk.read(&d.path().join("b.md"), 50).is_err());
        let err = disk
            .install(&req(&d.path().join("sub"), &[("SKILL.md", "x")]))
            .unwrap_err();
        assert!(err.to_string().contains("refused"), "{err}");
        assert!(!d.path().join("sub").exists());
        let open = DiskSkillDirs::guarded(Arc::new(|_: &Path| None));
        assert_eq!(open.scan(d.path(), 50).found.len(), 1);
        // A relative dir is refused; one that is not there is simply empty.
        assert_eq!(
            open.scan(Path::new("no/such/skills"), 50),
            ScanReport::default()
        );
        assert!(open.read(Path::new("b.md"), 50).is_err());
    }

    #[test]
    fn a_missing_skills_dir_holds_nothing_and_warns_nothing() {
        let r = DiskSkillDirs.scan(Path::new("/nonexistent/tackle/skills"), 50);
        assert_eq!(r, ScanReport::default());
    }

    #[test]
    fn install_places_files_replaces_only_its_own_installs_and_leaves_no_temp_dir() {
        let d = tempfile::tempdir().unwrap();
        let r = DiskSkillDirs
            .install(&req(d.path(), &[("SKILL.md", "one"), ("ref/a.txt", "x")]))
            .unwrap();
        assert!(!r.replaced);
        assert_eq!(
            std::fs::read_to_string(d.path().join("demo/SKILL.md")).unwrap(),
            "one"
        );
        let r = DiskSkillDirs
            .install(&req(d.path(), &[("SKILL.md", "two")]))
            .unwrap();
        assert!(r.replaced);
        assert_eq!(
            std::fs::read_to_string(d.path().join("demo/SKILL.md")).unwrap(),
            "two"
        );
        assert!(!d.path().join("demo/ref").exists());
        assert_eq!(names(d.path()), ["demo"]);
        // A hand-made skill of the same name is never replaced.
        std::fs::create_dir_all(d.path().join("mine")).unwrap();
        let mut other = req(d.path(), &[("SKILL.md", "three")]);
        other.name = "mine".into();
        let err = DiskSkillDirs.install(&other).unwrap_err();
        assert!(matches!(err, SkillDirError::NotOurs { .. }), "{err}");
        assert_eq!(names(d.path()), ["demo", "mine"]);
    }

    #[test]
    fn install_refuses_paths_that_leave_the_skill() {
        let d = tempfile::tempdir().unwrap();
        for bad in ["../x", "/etc/x", "a\\b", ""] {
            let err = DiskSkillDirs
                .install(&req(d.path(), &[(bad, "x")]))
                .unwrap_err();
            assert!(matches!(err, SkillDirError::Invalid(_)), "{bad}: {err}");
        }
        assert!(names(d.path()).is_empty());
    }
}
