//! The one rule for an id a person or a model passes: a session id (`--session`), a schedule
//! id, an agent's name, a memory bank's name. Every front end checks with [`check`] before it
//! acts, and the store checks again where an id is first written, so no id that names a path
//! (`../../etc/passwd`), is empty, or cannot be typed back on a command line is ever stored.
//!
//! ```
//! use tackle_protocol::ids::{check, IdKind};
//! assert!(check(IdKind::Session, "20260102-030405-0a1b2c3d").is_ok());
//! assert!(check(IdKind::Session, "../../etc/passwd").is_err());
//! assert!(check(IdKind::Schedule, "bad id!").is_err());
//! assert!(check(IdKind::Bank, "Team").is_err());
//! ```

use std::fmt;

/// The longest id (bank names: [`BANK_MAX`]).
pub const MAX_LEN: usize = 128;
/// The longest memory bank name.
pub const BANK_MAX: usize = 64;

/// What an id names; it picks the wording of the error and, for banks, the stricter rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdKind {
    /// A session id (`--session`).
    Session,
    /// A schedule id.
    Schedule,
    /// An agent's name.
    Agent,
    /// A shared memory bank: lowercase only, so one bank has exactly one spelling.
    Bank,
}

impl IdKind {
    fn label(self) -> &'static str {
        match self {
            IdKind::Session => "session id",
            IdKind::Schedule => "schedule id",
            IdKind::Agent => "agent name",
            IdKind::Bank => "memory bank name",
        }
    }

    fn max_len(self) -> usize {
        match self {
            IdKind::Bank => BANK_MAX,
            _ => MAX_LEN,
        }
    }

    fn allowed(self) -> &'static str {
        match self {
            IdKind::Bank => "a-z, 0-9, `-` and `_`",
            _ => "letters a-z A-Z, digits, `-`, `_` and `.`",
        }
    }
}

/// An id the rule refuses, with the reason in plain words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct InvalidId {
    /// What the id was meant to name.
    pub kind: IdKind,
    /// The id as given, shortened and with control characters escaped for display.
    pub shown: String,
    /// Why it was refused (`it is empty`, `it reads as a path`, …).
    pub why: &'static str,
}

impl fmt::Display for InvalidId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} `{}` is not valid: {} (use 1 to {} of {}, starting with a letter or digit)",
            self.kind.label(),
            self.shown,
            self.why,
            self.kind.max_len(),
            self.kind.allowed()
        )
    }
}

/// `Ok` when `id` may be used as a `kind`: 1 to [`MAX_LEN`] (banks: [`BANK_MAX`]) ASCII
/// letters, digits, `-`, `_` or `.` (banks: lowercase letters, digits, `-`, `_`), the first a
/// letter or digit. No `/`, no space, no leading `.`: nothing that reads as a path or needs
/// quoting.
pub fn check(kind: IdKind, id: &str) -> Result<(), InvalidId> {
    let bad = |why| InvalidId {
        kind,
        shown: shown(id),
        why,
    };
    let mut chars = id.chars();
    let Some(first) = chars.next() else {
        return Err(bad("it is empty"));
    };
    if id.len() > kind.max_len() {
        return Err(bad("it is too long"));
    }
    if kind == IdKind::Bank && id.chars().any(|c| c.is_ascii_uppercase()) {
        return Err(bad("it has capital letters"));
    }
    let letter = |c: char| match kind {
        IdKind::Bank => c.is_ascii_lowercase(),
        _ => c.is_ascii_alphabetic(),
    };
    if !(letter(first) || first.is_ascii_digit()) {
        return Err(bad(if id.starts_with('.') || id.contains('/') {
            "it reads as a path"
        } else {
            "it must start with a letter or digit"
        }));
    }
    let other = |c: char| c == '-' || c == '_' || (c == '.' && kind != IdKind::Bank);
    if id.contains('/') || id.contains('\\') {
        return Err(bad("it reads as a path"));
    }
    if !chars.all(|c| letter(c) || c.is_ascii_digit() || other(c)) {
        return Err(bad("it has a character that is not allowed"));
    }
    Ok(())
}

/// A regular expression (ECMA 262, as JSON Schema uses) matching exactly the ids [`check`]
/// accepts, for documents that describe them (the HTTP API's OpenAPI document).
pub fn pattern(kind: IdKind) -> String {
    let rest = kind.max_len().saturating_sub(1);
    match kind {
        IdKind::Bank => format!("^[a-z0-9][a-z0-9_-]{{0,{rest}}}$"),
        _ => format!("^[A-Za-z0-9][A-Za-z0-9._-]{{0,{rest}}}$"),
    }
}

/// An id made from free text (a task's first words) that [`check`] accepts: lowercase ASCII
/// letters and digits, each other run of characters one `-`, at most `max` characters
/// (at least 1); `fallback` when the text has no letter or digit.
pub fn slug(text: &str, max: usize, fallback: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if out.len() >= max.clamp(1, MAX_LEN) {
            break;
        }
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_end_matches('-');
    if out.is_empty() {
        fallback.to_string()
    } else {
        out.to_string()
    }
}

/// The id for a message: at most 60 characters, control characters escaped.
fn shown(id: &str) -> String {
    let mut out: String = id.chars().take(60).flat_map(char::escape_default).collect();
    if id.chars().count() > 60 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_that_read_as_paths_or_need_quoting_are_refused() {
        for bad in [
            "",
            "../../etc/passwd",
            "..",
            ".hidden",
            "a/b",
            "a\\b",
            "bad id!",
            "-flag",
            "tab\there",
            "ünïcode",
        ] {
            for kind in [
                IdKind::Session,
                IdKind::Schedule,
                IdKind::Agent,
                IdKind::Bank,
            ] {
                assert!(check(kind, bad).is_err(), "{kind:?} {bad:?}");
            }
        }
        assert!(check(IdKind::Session, &"a".repeat(MAX_LEN + 1)).is_err());
        assert!(check(IdKind::Bank, &"a".repeat(BANK_MAX + 1)).is_err());
    }

    #[test]
    fn generated_and_hand_picked_ids_pass() {
        for good in [
            "20260102-030405-0a1b2c3d",
            "nightly",
            "My_Task-2",
            "v1.2",
            "7",
        ] {
            assert!(check(IdKind::Session, good).is_ok(), "{good}");
            assert!(check(IdKind::Schedule, good).is_ok(), "{good}");
            assert!(check(IdKind::Agent, good).is_ok(), "{good}");
        }
        assert!(check(IdKind::Bank, "team-notes_2").is_ok());
        let e = check(IdKind::Bank, "Team").unwrap_err().to_string();
        assert!(e.contains("capital letters"), "{e}");
        assert!(check(IdKind::Bank, "a.b").is_err());
    }

    #[test]
    fn a_slug_of_free_text_is_a_valid_id() {
        assert_eq!(
            slug("Check the news, then mail me!", 30, "job"),
            "check-the-news-then-mail-me"
        );
        assert_eq!(slug("  ../../etc  ", 30, "job"), "etc");
        assert_eq!(slug("¿¿¿", 30, "job"), "job");
        assert_eq!(slug("abcdef", 3, "job"), "abc");
        for text in ["a b", "Ünïcode task", "-x-", "x".repeat(500).as_str()] {
            assert!(
                check(IdKind::Schedule, &slug(text, 30, "job")).is_ok(),
                "{text}"
            );
        }
    }

    #[test]
    fn the_message_names_the_kind_and_says_why_in_words() {
        let e = check(IdKind::Session, "").unwrap_err().to_string();
        assert!(
            e.starts_with("session id `` is not valid: it is empty"),
            "{e}"
        );
        let e = check(IdKind::Schedule, "bad id!").unwrap_err().to_string();
        assert!(e.contains("schedule id `bad id!`"), "{e}");
        let e = check(IdKind::Session, "../x").unwrap_err().to_string();
        assert!(e.contains("reads as a path"), "{e}");
        let e = check(IdKind::Agent, "a\nb").unwrap_err().to_string();
        assert!(e.contains("a\\nb") && !e.contains('\n'), "{e}");
    }
}
