//! Unpacking a downloaded skill archive (a zip) in memory, refusing anything that could write
//! outside the skill or exhaust the machine: absolute paths, `..`, backslashes, drive letters,
//! links and other special files, too many entries, entries (or a total) larger than the caps,
//! whether declared or found while inflating. Nothing is written until every entry passed.

use std::collections::HashSet;
use std::io::{Cursor, Read};

/// The caps an archive must stay under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArchiveLimits {
    /// Most entries (files and directories) an archive may hold.
    pub max_entries: usize,
    /// Most bytes one entry may unpack to.
    pub max_entry_bytes: u64,
    /// Most bytes all entries together may unpack to.
    pub max_total_bytes: u64,
}

impl Default for ArchiveLimits {
    fn default() -> Self {
        Self {
            max_entries: 500,
            max_entry_bytes: 10 * 1024 * 1024,
            max_total_bytes: 50 * 1024 * 1024,
        }
    }
}

/// Why a skill archive is refused; nothing is unpacked then.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArchiveError {
    /// The data is not a readable zip.
    #[error("the download is not a zip archive: {0}")]
    NotZip(String),
    /// More entries (first) than the limit (second).
    #[error("the archive has {0} entries, more than the {1} allowed")]
    TooManyEntries(usize, usize),
    /// An entry name is not UTF-8.
    #[error("entry {0:?} has a name that is not UTF-8")]
    NotUtf8(String),
    /// An entry name is an absolute path.
    #[error("entry {0:?} is an absolute path")]
    Absolute(String),
    /// An entry name climbs out with `..`.
    #[error("entry {0:?} climbs out with `..`")]
    ParentDir(String),
    /// An entry name has a backslash, colon or NUL.
    #[error("entry {0:?} has a backslash, a colon or a NUL in its name")]
    BadCharacter(String),
    /// An entry is a symbolic link.
    #[error("entry {0:?} is a symbolic link; archives may hold only files and directories")]
    Link(String),
    /// An entry is neither file nor directory.
    #[error("entry {0:?} is neither a file nor a directory")]
    Special(String),
    /// One entry unpacks to more than the per-entry limit.
    #[error("entry {name:?} is {size} bytes, more than the {max} allowed for one file")]
    EntryTooLarge {
        /// The entry's path in the archive.
        name: String,
        /// Its unpacked size, in bytes.
        size: u64,
        /// The per-entry limit, in bytes.
        max: u64,
    },
    /// All entries together exceed the total limit (bytes).
    #[error("the archive unpacks to more than {0} bytes")]
    TotalTooLarge(u64),
    /// Two entries have the same name.
    #[error("entry {0:?} appears twice")]
    Duplicate(String),
    /// An entry cannot be read.
    #[error("entry {name:?} cannot be read: {message}")]
    Corrupt {
        /// The entry's path in the archive.
        name: String,
        /// The zip reader's complaint.
        message: String,
    },
    /// No `SKILL.md` at the top or in the single top folder.
    #[error("the archive has no SKILL.md at its top (or inside its single top folder)")]
    NoSkillFile,
}

/// One file of a checked archive: its `/`-separated path inside the skill and its content.
pub type ArchiveFile = (String, Vec<u8>);

/// Check a name and return it without `./` parts; `None` for a directory entry.
fn checked_name(raw: &[u8], is_dir: bool) -> Result<Option<String>, ArchiveError> {
    let name = std::str::from_utf8(raw)
        .map_err(|_| ArchiveError::NotUtf8(String::from_utf8_lossy(raw).into_owned()))?;
    let shown = || tackle_protocol::text::preview(name, 120);
    if name.contains(['\\', ':', '\0']) {
        return Err(ArchiveError::BadCharacter(shown()));
    }
    if name.starts_with('/') {
        return Err(ArchiveError::Absolute(shown()));
    }
    let mut parts = Vec::new();
    for part in name.split('/') {
        match part {
            ".." => return Err(ArchiveError::ParentDir(shown())),
            "" | "." => {}
            p => parts.push(p),
        }
    }
    if is_dir || parts.is_empty() {
        return Ok(None);
    }
    Ok(Some(parts.join("/")))
}

/// Unpack `bytes` into checked files, with the skill's `SKILL.md` at the top: an archive whose
/// files all sit in one folder (`slug/SKILL.md`, …) has that folder removed.
pub fn unpack(bytes: &[u8], limits: ArchiveLimits) -> Result<Vec<ArchiveFile>, ArchiveError> {
    let mut zip = zip::ZipArchive::new(Cursor::new(bytes))
        .map_err(|e| ArchiveError::NotZip(e.to_string()))?;
    if zip.len() > limits.max_entries {
        return Err(ArchiveError::TooManyEntries(zip.len(), limits.max_entries));
    }
    // Declared sizes first, so a bomb is refused before anything is inflated.
    let mut declared_total: u64 = 0;
    for i in 0..zip.len() {
        let entry = zip.by_index_raw(i).map_err(|e| ArchiveError::Corrupt {
            name: format!("#{i}"),
            message: e.to_string(),
        })?;
        let name = String::from_utf8_lossy(entry.name_raw()).into_owned();
        if entry.size() > limits.max_entry_bytes {
            return Err(ArchiveError::EntryTooLarge {
                name: tackle_protocol::text::preview(&name, 120),
                size: entry.size(),
                max: limits.max_entry_bytes,
            });
        }
        declared_total = declared_total.saturating_add(entry.size());
    }
    if declared_total > limits.max_total_bytes {
        return Err(ArchiveError::TotalTooLarge(limits.max_total_bytes));
    }
    let mut files: Vec<ArchiveFile> = Vec::new();
    let mut seen = HashSet::new();
    let mut total: u64 = 0;
    for i in 0..zip.len() {
        let entry = zip.by_index(i).map_err(|e| ArchiveError::Corrupt {
            name: format!("#{i}"),
            message: e.to_string(),
        })?;
        let raw_name = entry.name_raw().to_vec();
        let shown = tackle_protocol::text::preview(&String::from_utf8_lossy(&raw_name), 120);
        if entry.is_symlink() {
            return Err(ArchiveError::Link(shown));
        }
        let kind = entry.unix_mode().map(|m| m & 0o170_000);
        let is_dir = entry.is_dir();
        if !is_dir && !matches!(kind, None | Some(0) | Some(0o100_000)) {
            return Err(ArchiveError::Special(shown));
        }
        let Some(name) = checked_name(&raw_name, is_dir)? else {
            continue;
        };
        if !seen.insert(name.clone()) {
            return Err(ArchiveError::Duplicate(shown));
        }
        // The declared size may lie: inflate at most one byte past the cap.
        let mut data = Vec::new();
        entry
            .take(limits.max_entry_bytes.saturating_add(1))
            .read_to_end(&mut data)
            .map_err(|e| ArchiveError::Corrupt {
                name: shown.clone(),
                message: e.to_string(),
            })?;
        let size = data.len() as u64;
        if size > limits.max_entry_bytes {
            return Err(ArchiveError::EntryTooLarge {
                name: shown,
                size,
                max: limits.max_entry_bytes,
            });
        }
        total = total.saturating_add(size);
        if total > limits.max_total_bytes {
            return Err(ArchiveError::TotalTooLarge(limits.max_total_bytes));
        }
        files.push((name, data));
    }
    strip_single_folder(files)
}

/// `SKILL.md` at the top as is; else, when every file is inside one folder that has it,
/// without that folder.
fn strip_single_folder(files: Vec<ArchiveFile>) -> Result<Vec<ArchiveFile>, ArchiveError> {
    if files.iter().any(|(n, _)| n == "SKILL.md") {
        return Ok(files);
    }
    let Some(top) = files
        .first()
        .and_then(|(n, _)| n.split_once('/'))
        .map(|(t, _)| format!("{t}/"))
    else {
        return Err(ArchiveError::NoSkillFile);
    };
    if !files.iter().all(|(n, _)| n.starts_with(&top))
        || !files.iter().any(|(n, _)| *n == format!("{top}SKILL.md"))
    {
        return Err(ArchiveError::NoSkillFile);
    }
    Ok(files
        .into_iter()
        .filter_map(|(n, d)| n.strip_prefix(&top).map(|rest| (rest.to_string(), d)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use zip::write::SimpleFileOptions;

    fn build(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
        let opts =
            SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
        for (name, data) in entries {
            w.start_file(*name, opts).unwrap();
            w.write_all(data).unwrap();
        }
        w.finish().unwrap().into_inner()
    }

    #[test]
    fn a_plain_archive_unpacks_with_skill_md_at_the_top() {
        let z = build(&[("SKILL.md", b"---\nname: x\n---\n"), ("docs/a.md", b"A")]);
        let files = unpack(&z, ArchiveLimits::default()).unwrap();
        let names: Vec<_> = files.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["SKILL.md", "docs/a.md"]);
    }

    #[test]
    fn a_single_top_folder_is_removed() {
        let z = build(&[("demo/SKILL.md", b"s"), ("demo/ref/b.txt", b"b")]);
        let files = unpack(&z, ArchiveLimits::default()).unwrap();
        let names: Vec<_> = files.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["SKILL.md", "ref/b.txt"]);
    }

    #[test]
    fn hostile_names_are_refused() {
        for (bad, want) in [
            ("../evil.md", "`..`"),
            ("a/../../evil.md", "`..`"),
            ("/etc/evil.md", "absolute"),
            ("a\\..\\evil.md", "backslash"),
            ("C:/evil.md", "backslash, a colon"),
        ] {
            let z = build(&[("SKILL.md", b"s"), (bad, b"x")]);
            let err = unpack(&z, ArchiveLimits::default()).unwrap_err();
            assert!(err.to_string().contains(want), "{bad}: {err}");
        }
    }

    #[test]
    fn symlink_entries_are_refused() {
        let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
        w.start_file("SKILL.md", SimpleFileOptions::default())
            .unwrap();
        w.write_all(b"s").unwrap();
        w.add_symlink("link", "/etc/passwd", SimpleFileOptions::default())
            .unwrap();
        let z = w.finish().unwrap().into_inner();
        let err = unpack(&z, ArchiveLimits::default()).unwrap_err();
        assert!(matches!(err, ArchiveError::Link(_)), "{err}");
    }

    #[test]
    fn entries_over_the_caps_are_refused_before_or_while_inflating() {
        let big = vec![b'a'; 4096];
        let z = build(&[("SKILL.md", b"s"), ("big.txt", &big)]);
        let limits = ArchiveLimits {
            max_entry_bytes: 1000,
            ..ArchiveLimits::default()
        };
        assert!(matches!(
            unpack(&z, limits),
            Err(ArchiveError::EntryTooLarge { .. })
        ));
        let limits = ArchiveLimits {
            max_total_bytes: 2000,
            ..ArchiveLimits::default()
        };
        assert!(matches!(
            unpack(&z, limits),
            Err(ArchiveError::TotalTooLarge(_))
        ));
        let limits = ArchiveLimits {
            max_entries: 1,
            ..ArchiveLimits::default()
        };
        assert!(matches!(
            unpack(&z, limits),
            Err(ArchiveError::TooManyEntries(2, 1))
        ));
    }

    #[test]
    fn an_archive_without_skill_md_or_not_a_zip_is_refused() {
        let z = build(&[("README.md", b"r")]);
        assert_eq!(
            unpack(&z, ArchiveLimits::default()),
            Err(ArchiveError::NoSkillFile)
        );
        assert!(matches!(
            unpack(b"<html>not a zip</html>", ArchiveLimits::default()),
            Err(ArchiveError::NotZip(_))
        ));
    }
}
