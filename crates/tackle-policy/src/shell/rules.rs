//! Matching commands against `allow` and `deny` rules, word by word.
//!
//! Deny rules over-approximate (a word computed at run time may be anything, options may sit
//! between the rule's words, `-rf` matches `-r -f`); allow rules under-approximate (every rule
//! word must be literally there, and a path-qualified program only counts when it lives in a
//! system directory). Both err towards denying.

use super::walk::Cmd;
use super::words::Word;
use super::wrappers::program_name;

/// One rule, unquoted the way command words are.
#[derive(Debug, Clone)]
pub(crate) struct Rule {
    pub raw: String,
    pub words: Vec<String>,
}

impl Rule {
    pub(crate) fn parse(raw: &str) -> Option<Self> {
        let mut words: Vec<String> = raw
            .split_whitespace()
            .map(brush_parser::unquote_str)
            .collect();
        let first = words.first_mut()?;
        *first = program_name(&Word::literal(first.clone()))?;
        Some(Self {
            raw: raw.to_string(),
            words,
        })
    }
}

/// A rule's words as the matcher sees them, for comparing rules with each other.
pub(crate) fn rule_words(raw: &str) -> Option<Vec<String>> {
    Rule::parse(raw).map(|r| r.words)
}

/// Directories whose programs are the ones a bare name finds.
const SYSTEM_DIRS: &[&str] = &[
    "/bin",
    "/usr/bin",
    "/usr/local/bin",
    "/sbin",
    "/usr/sbin",
    "/usr/local/sbin",
    "/opt/homebrew/bin",
];

/// Whether an allow rule covers `cmd`: its words are a literal prefix of the command's.
pub(crate) fn allow_matches(rule: &Rule, cmd: &Cmd) -> bool {
    let Some(first) = cmd.words.first() else {
        return false;
    };
    if first.dynamic || !trusted_location(&first.text) {
        return false;
    }
    if program_name(first).as_deref() != rule.words.first().map(String::as_str) {
        return false;
    }
    rule.words.iter().skip(1).enumerate().all(|(i, rw)| {
        cmd.words
            .get(i + 1)
            .is_some_and(|w| !w.dynamic && &w.text == rw)
    })
}

/// `git` or `/usr/bin/git`, but not `./git` or `/tmp/x/git`.
fn trusted_location(program: &str) -> bool {
    match program.rsplit_once('/') {
        None => true,
        Some((dir, _)) => {
            let dir = crate::path::normalize(std::path::Path::new(dir));
            SYSTEM_DIRS.iter().any(|d| dir == std::path::Path::new(d))
        }
    }
}

/// Whether a deny rule could match `cmd` once the shell has expanded it.
pub(crate) fn deny_matches(rule: &Rule, cmd: &Cmd) -> bool {
    let Some(first) = cmd.words.first() else {
        return false;
    };
    let Some(name) = program_name(first) else {
        return false;
    };
    let Some(rule_name) = rule.words.first() else {
        return false;
    };
    // Case-insensitive: on case-insensitive file systems `RM` runs `rm`.
    if !name.eq_ignore_ascii_case(rule_name) {
        return false;
    }
    let args = cmd.words.get(1..).unwrap_or(&[]);
    let mut from = 0;
    for rw in rule.words.iter().skip(1) {
        if rw.starts_with('-') && rw.len() > 1 {
            if !option_present(&name, rw, args, cmd.open_tail) {
                return false;
            }
            continue;
        }
        match find_operand(rw, args, from) {
            Some(next) => from = next,
            None if cmd.open_tail => from = args.len(),
            None => return false,
        }
    }
    true
}

/// Finds `rw` at or after `from`, allowing only options (and their values) in between.
fn find_operand(rw: &str, args: &[Word], from: usize) -> Option<usize> {
    let mut j = from;
    while let Some(w) = args.get(j) {
        if w.dynamic || w.text == rw {
            return Some(j + 1);
        }
        let is_opt = w.text.starts_with('-');
        let after_opt = j > 0 && args.get(j - 1).is_some_and(|p| p.text.starts_with('-'));
        if !(is_opt || after_opt) {
            return None;
        }
        j += 1;
    }
    None
}

/// Short options and the long options they abbreviate, for programs whose deny rules often
/// name options (`rm -rf` is `rm --recursive --force`).
const LONG_NAMES: &[(&str, char, &str)] = &[
    ("rm", 'r', "recursive"),
    ("rm", 'R', "recursive"),
    ("rm", 'f', "force"),
    ("rm", 'd', "dir"),
    ("rm", 'v', "verbose"),
    ("cp", 'r', "recursive"),
    ("cp", 'R', "recursive"),
    ("cp", 'f', "force"),
    ("mv", 'f', "force"),
    ("ln", 's', "symbolic"),
    ("ln", 'f', "force"),
    ("chmod", 'R', "recursive"),
    ("chown", 'R', "recursive"),
    ("chgrp", 'R', "recursive"),
    ("rmdir", 'p', "parents"),
    ("shred", 'u', "remove"),
    ("git", 'f', "force"),
    ("git", 'd', "delete"),
    ("sed", 'i', "in-place"),
];

/// `--force` present (or `--force=…`, or an abbreviation such as `--for`, or its short form);
/// `-rf` present as the letters of any short options, or as their long forms.
fn option_present(program: &str, rw: &str, args: &[Word], open_tail: bool) -> bool {
    if open_tail || args.iter().any(|w| w.dynamic) {
        return true;
    }
    let longs: Vec<&str> = args
        .iter()
        .filter_map(|w| w.text.strip_prefix("--"))
        .map(|l| l.split('=').next().unwrap_or(l))
        .filter(|l| !l.is_empty())
        .collect();
    // GNU programs accept any unambiguous prefix of a long option.
    let long_present = |name: &str| longs.iter().any(|l| name.starts_with(l));
    let letters: std::collections::HashSet<char> = args
        .iter()
        .filter(|w| w.text.starts_with('-') && !w.text.starts_with("--"))
        .flat_map(|w| w.text.chars().skip(1))
        .collect();
    let program = program.to_ascii_lowercase();
    let aliases = LONG_NAMES.iter().filter(|(p, _, _)| *p == program);
    if let Some(long) = rw.strip_prefix("--") {
        let long = long.split('=').next().unwrap_or(long);
        return long_present(long)
            || aliases
                .clone()
                .any(|(_, c, l)| *l == long && letters.contains(c));
    }
    if args.iter().any(|w| w.text == rw) {
        return true;
    }
    // `r` is present as `-r`, as `--recursive`, or as `-R`, which is also `--recursive`.
    rw.chars().skip(1).all(|c| {
        letters.contains(&c)
            || aliases
                .clone()
                .filter(|(_, s, _)| *s == c)
                .any(|(_, _, l)| {
                    long_present(l)
                        || aliases
                            .clone()
                            .any(|(_, s2, l2)| l2 == l && letters.contains(s2))
                })
    })
}
