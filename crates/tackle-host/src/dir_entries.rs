//! The entries of a configured directory of extensions (skills, plugins), in name order: the
//! directory resolved once, hidden and non-UTF-8 names left out, each entry's own metadata
//! (a link is reported as a link, never followed). What was skipped and why goes to `warnings`.

use std::fs::Metadata;
use std::io;
use std::path::{Path, PathBuf};

/// One entry: its name, its path under the resolved directory, its `lstat`.
pub(crate) struct Entry {
    pub name: String,
    pub path: PathBuf,
    pub meta: Metadata,
}

/// The entries of `dir` (`kind` names it in warnings: `skills dir`, `plugins dir`); none when
/// it does not exist.
pub(crate) fn entries(dir: &Path, kind: &str, warnings: &mut Vec<String>) -> Vec<Entry> {
    let root = match std::fs::canonicalize(dir) {
        Ok(p) => p,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            warnings.push(format!("{kind} {}: {e}", dir.display()));
            return Vec::new();
        }
    };
    let mut names: Vec<_> = match std::fs::read_dir(&root) {
        Ok(entries) => entries.flatten().map(|e| e.file_name()).collect(),
        Err(e) => {
            warnings.push(format!("{kind} {}: {e}", root.display()));
            return Vec::new();
        }
    };
    names.sort();
    let mut out = Vec::new();
    for name in names {
        let path = root.join(&name);
        let Some(entry) = name.to_str() else {
            warnings.push(format!(
                "{}: skipped, the name is not UTF-8",
                path.display()
            ));
            continue;
        };
        if entry.starts_with('.') {
            continue;
        }
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        out.push(Entry {
            name: entry.to_string(),
            path,
            meta,
        });
    }
    out
}
