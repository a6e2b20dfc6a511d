//! Small files of the state directory that only this user may read (0600, in a 0700
//! directory): written aside and put in place, so never half written and never readable by
//! others, even for a moment. The store owns the state directory; crates that keep a file
//! there (the decoy credentials of `security.honeytokens`) come here for the I/O.

use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

/// How a written file takes its place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Publish {
    /// Over whatever is there.
    Replace,
    /// Only where nothing is: of two first writers at once, one file is kept.
    IfAbsent,
}

/// `dir` and its parents, made 0700 where missing.
pub fn private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Writes `text` to `path` as `publish` says; `false` when `IfAbsent` found a file there.
pub fn write_private(path: &Path, text: &str, publish: Publish) -> std::io::Result<bool> {
    if let Some(dir) = path.parent() {
        private_dir(dir)?;
    }
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let aside = path.with_extension(format!("tmp.{}.{n}", std::process::id()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&aside)?;
    if let Err(e) = file
        .write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
    {
        let _ = std::fs::remove_file(&aside);
        return Err(e);
    }
    let placed = match publish {
        Publish::Replace => std::fs::rename(&aside, path).map(|()| true),
        // A hard link fails when the name exists, where a rename would replace it.
        Publish::IfAbsent => match std::fs::hard_link(&aside, path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(e),
        },
    };
    if publish == Publish::IfAbsent {
        let _ = std::fs::remove_file(&aside);
    }
    placed
}

/// Appends `line` and a newline to `path`, made 0600 if new.
pub fn append_private(path: &Path, line: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        private_dir(dir)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(format!("{line}\n").as_bytes())
}

/// The file's text; `None` when there is no such file.
pub fn read_private(path: &Path) -> std::io::Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// `n` bytes from the kernel's random generator.
pub fn random_bytes(n: usize) -> std::io::Result<Vec<u8>> {
    let mut bytes = vec![0u8; n];
    std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes))?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_private_file_is_0600_kept_if_present_and_replaced_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/secret");
        assert!(write_private(&path, "one", Publish::IfAbsent).unwrap());
        assert!(!write_private(&path, "two", Publish::IfAbsent).unwrap());
        assert_eq!(read_private(&path).unwrap().as_deref(), Some("one"));
        assert!(write_private(&path, "three", Publish::Replace).unwrap());
        assert_eq!(read_private(&path).unwrap().as_deref(), Some("three"));
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dir_mode = std::fs::metadata(dir.path().join("sub"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(dir_mode, 0o700);
        append_private(&dir.path().join("sub/log"), "a").unwrap();
        append_private(&dir.path().join("sub/log"), "b").unwrap();
        assert_eq!(
            read_private(&dir.path().join("sub/log"))
                .unwrap()
                .as_deref(),
            Some("a\nb\n")
        );
        assert_eq!(read_private(&dir.path().join("none")).unwrap(), None);
        assert_eq!(random_bytes(32).unwrap().len(), 32);
        // No file of this process's own is left aside.
        let left: Vec<_> = std::fs::read_dir(dir.path().join("sub"))
            .unwrap()
            .flatten()
            .collect();
        assert_eq!(left.len(), 2, "{left:?}");
    }
}
