//! Bash's readings of recent lines, so a line checked again (before approval and when it runs,
//! or an agent repeating a command) needs no second bash.
//!
//! Bash's `--pretty-print` of a line is a function of the line's bytes, the bash binary and the
//! locale alone (no start-up file, no other inherited variable), so an answer is reused only for
//! the very same bytes read by the very same binary in the same locale: entries are keyed on the
//! exact line, and all are dropped when the binary at bash's path is no longer the file that
//! answered (an upgrade while a daemon runs) or the locale changed. Only bash's own answers are
//! kept (a reading, or a refusal of the line); a failure to ask bash (it could not start, was
//! killed, timed out) is never kept, so it is asked again and fails closed again.

use hashlink::LruCache;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// How many lines are remembered.
pub(super) const MAX_LINES: usize = 256;
/// How many bytes of lines and answers are remembered in all.
pub(super) const MAX_BYTES: usize = 1 << 20;
/// A line whose line and answer together are longer than this is not remembered (one such line
/// would push out many ordinary ones, and it is rarely repeated).
pub(super) const MAX_ENTRY_BYTES: usize = 64 << 10;

/// Which bash answered: its path, the identity of the file there and the locale it was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct BashIdentity {
    path: PathBuf,
    file: (u64, u64, u64, i64, i64, i64, i64),
    locale: Vec<(OsString, OsString)>,
}

impl BashIdentity {
    /// The identity of the file at `path` now, or `None` when it cannot be read (nothing is
    /// then reused or remembered).
    pub(super) fn of(path: &Path, locale: &[(OsString, OsString)]) -> Option<Self> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path).ok()?;
        Some(Self {
            path: path.to_path_buf(),
            file: (
                m.dev(),
                m.ino(),
                m.size(),
                m.mtime(),
                m.mtime_nsec(),
                m.ctime(),
                m.ctime_nsec(),
            ),
            locale: locale.to_vec(),
        })
    }
}

/// A bounded map from a line's exact text to bash's answer, least recently used out first.
pub(super) struct ReadBackCache<A> {
    bash: Option<BashIdentity>,
    lines: LruCache<Box<str>, (A, usize)>,
    bytes: usize,
}

impl<A: Clone> ReadBackCache<A> {
    pub(super) fn new() -> Self {
        Self {
            bash: None,
            lines: LruCache::new(MAX_LINES),
            bytes: 0,
        }
    }

    /// Bash's remembered answer for exactly this line from exactly this bash.
    pub(super) fn lookup(&mut self, bash: &BashIdentity, line: &str) -> Option<A> {
        if self.bash.as_ref() != Some(bash) {
            return None;
        }
        self.lines.get(line).map(|(answer, _)| answer.clone())
    }

    /// Remembers bash's answer; `size` is the answer's length in bytes.
    pub(super) fn remember(&mut self, bash: &BashIdentity, line: &str, answer: A, size: usize) {
        let cost = line.len().saturating_add(size);
        if cost > MAX_ENTRY_BYTES {
            return;
        }
        if self.bash.as_ref() != Some(bash) {
            self.lines.clear();
            self.bytes = 0;
            self.bash = Some(bash.clone());
        }
        if let Some((_, old)) = self.lines.remove(line) {
            self.bytes -= old;
        }
        while self.lines.len() >= MAX_LINES || self.bytes + cost > MAX_BYTES {
            match self.lines.remove_lru() {
                Some((_, (_, old))) => self.bytes -= old,
                None => break,
            }
        }
        self.lines.insert(line.into(), (answer, cost));
        self.bytes += cost;
    }

    /// How many lines and how many bytes are remembered.
    #[cfg(test)]
    pub(super) fn size(&self) -> (usize, usize) {
        (self.lines.len(), self.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bash() -> BashIdentity {
        BashIdentity {
            path: "/usr/bin/bash".into(),
            file: (1, 2, 3, 4, 5, 6, 7),
            locale: vec![("LANG".into(), "C.UTF-8".into())],
        }
    }

    #[test]
    fn distinct_lines_never_grow_the_cache_past_its_bounds() {
        let mut cache = ReadBackCache::new();
        let b = bash();
        // Many distinct short lines: the count bound holds.
        for i in 0..(MAX_LINES * 20) {
            let line = format!("echo {i}");
            cache.remember(&b, &line, line.clone(), line.len());
            let (lines, bytes) = cache.size();
            assert!(lines <= MAX_LINES, "{lines} lines remembered");
            assert!(bytes <= MAX_BYTES, "{bytes} bytes remembered");
        }
        // Many distinct lines just under the per-entry size: the byte bound holds.
        let filler = "x".repeat(MAX_ENTRY_BYTES / 2 - 16);
        for i in 0..200 {
            let line = format!("echo {i} {filler}");
            cache.remember(&b, &line, line.clone(), line.len());
            let (lines, bytes) = cache.size();
            assert!(lines <= MAX_LINES, "{lines} lines remembered");
            assert!(bytes <= MAX_BYTES, "{bytes} bytes remembered");
        }
        assert!(cache.size().1 > MAX_BYTES / 2, "the cache is used at all");
    }

    #[test]
    fn a_line_too_long_to_keep_is_not_kept() {
        let mut cache = ReadBackCache::new();
        let b = bash();
        let line = format!("echo {}", "y".repeat(MAX_ENTRY_BYTES));
        cache.remember(&b, &line, line.clone(), line.len());
        assert_eq!(cache.size(), (0, 0));
        assert_eq!(cache.lookup(&b, &line), None);
    }

    #[test]
    fn only_the_exact_bytes_from_the_same_bash_are_reused() {
        let mut cache = ReadBackCache::new();
        let b = bash();
        cache.remember(&b, "ls", "ls\n".to_string(), 3);
        assert_eq!(cache.lookup(&b, "ls"), Some("ls\n".to_string()));
        for other in ["ls ", " ls", "LS", "ls\n", "l\u{0073}\u{0301}", "ls\0"] {
            assert_eq!(cache.lookup(&b, other), None, "{other:?}");
        }
        let mut upgraded = bash();
        upgraded.file.3 += 1;
        assert_eq!(cache.lookup(&upgraded, "ls"), None);
        let mut elsewhere = bash();
        elsewhere.path = "/usr/local/bin/bash".into();
        assert_eq!(cache.lookup(&elsewhere, "ls"), None);
        let mut other_locale = bash();
        other_locale.locale = vec![("LANG".into(), "de_DE.ISO-8859-1".into())];
        assert_eq!(cache.lookup(&other_locale, "ls"), None);
        // An answer from another binary replaces the old ones rather than mixing with them.
        cache.remember(&upgraded, "pwd", "pwd\n".to_string(), 4);
        assert_eq!(cache.size(), (1, 7));
        assert_eq!(cache.lookup(&b, "ls"), None);
    }

    #[test]
    fn the_least_recently_used_line_goes_first() {
        let mut cache = ReadBackCache::new();
        let b = bash();
        for i in 0..MAX_LINES {
            let line = format!("echo {i}");
            cache.remember(&b, &line, i, 1);
        }
        // Touch the oldest so it survives the next insertion.
        assert_eq!(cache.lookup(&b, "echo 0"), Some(0));
        cache.remember(&b, "echo new", 9999, 1);
        assert_eq!(cache.lookup(&b, "echo 0"), Some(0));
        assert_eq!(cache.lookup(&b, "echo 1"), None);
        assert_eq!(cache.size().0, MAX_LINES);
    }
}
