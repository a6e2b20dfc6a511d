//! File modes of the state store: sessions and the audit log are readable by their owner only.

use crate::error::StoreError;
use std::fs::{self, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

#[cfg(unix)]
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};

/// The mode of a state directory Tackle creates.
pub(crate) const DIR_MODE: u32 = 0o700;
/// The mode of the database and its `-wal` / `-shm` files.
pub(crate) const FILE_MODE: u32 = 0o600;

/// The database file and its WAL companions (which may not exist).
pub(crate) fn db_files(db: &Path) -> Vec<PathBuf> {
    let mut out = vec![db.to_path_buf()];
    for suffix in ["-wal", "-shm"] {
        let mut name = db.as_os_str().to_os_string();
        name.push(suffix);
        out.push(PathBuf::from(name));
    }
    out
}

/// Creates `dir` (and its missing parents) unless it is already a directory; `dir` itself
/// gets [`DIR_MODE`] exactly, whatever the umask. An existing directory is left as it is.
pub(crate) fn create_private_dir(dir: &Path) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent)?;
    }
    let mut builder = fs::DirBuilder::new();
    #[cfg(unix)]
    builder.mode(DIR_MODE);
    match builder.create(dir) {
        Ok(()) => {
            #[cfg(unix)]
            fs::set_permissions(dir, fs::Permissions::from_mode(DIR_MODE))?;
            Ok(())
        }
        // Another process made it meanwhile: theirs is as good as ours.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        Err(e) => Err(e),
    }
}

/// Creates the database file with [`FILE_MODE`] before SQLite opens it (SQLite would create
/// it world-readable under the usual umask, and gives its `-wal` and `-shm` files the
/// database's mode), and narrows existing files that others can reach. Narrowing is best
/// effort: a file this user cannot chmod is still opened, and `tackle doctor` reports it.
pub(crate) fn prepare_db_files(db: &Path) -> Result<(), StoreError> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    options.mode(FILE_MODE);
    match options.open(db) {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(source) => {
            return Err(StoreError::File {
                path: db.to_path_buf(),
                source,
            })
        }
    }
    #[cfg(unix)]
    for file in db_files(db) {
        if let Ok(meta) = fs::metadata(&file) {
            if meta.permissions().mode() & 0o077 != 0 {
                let _ = fs::set_permissions(&file, fs::Permissions::from_mode(FILE_MODE));
            }
        }
    }
    Ok(())
}
