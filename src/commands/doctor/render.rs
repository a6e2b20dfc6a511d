//! The text report: one line per check, checks of one name and state in a row under one
//! heading, a detail's further lines indented under it, then the verdict with each broken
//! name once and its count.

use super::{Check, Status};
use std::fmt::Write as _;

/// The whole text report, ending with a newline.
pub(super) fn text(checks: &[Check]) -> String {
    let mut out = String::new();
    for group in groups(checks) {
        let Some(first) = group.first() else {
            continue;
        };
        if let [only] = group {
            let _ = writeln!(
                out,
                "{}: {} — {}",
                only.name,
                only.label(),
                indented(&only.detail, "    ")
            );
            continue;
        }
        let _ = writeln!(out, "{}: {} ({}):", first.name, first.label(), group.len());
        for c in group {
            let _ = writeln!(out, "  - {}", indented(&c.detail, "    "));
        }
    }
    out.push_str(&verdict(checks));
    out.push('\n');
    out
}

/// `doctor: nothing broken (2 warnings)`, `doctor: 5 broken: plugins (4), mcp.remote`.
pub(super) fn verdict(checks: &[Check]) -> String {
    let warned = checks.iter().filter(|c| c.status == Status::Warn).count();
    let warnings = match warned {
        0 => String::new(),
        1 => " (1 warning)".to_string(),
        n => format!(" ({n} warnings)"),
    };
    let mut failed: Vec<(&str, usize)> = Vec::new();
    for c in checks.iter().filter(|c| c.status == Status::Fail) {
        match failed.iter_mut().find(|(name, _)| *name == c.name) {
            Some((_, n)) => *n += 1,
            None => failed.push((&c.name, 1)),
        }
    }
    if failed.is_empty() {
        return format!("doctor: nothing broken{warnings}");
    }
    let total: usize = failed.iter().map(|(_, n)| n).sum();
    let names: Vec<String> = failed
        .iter()
        .map(|(name, n)| match n {
            1 => (*name).to_string(),
            n => format!("{name} ({n})"),
        })
        .collect();
    format!("doctor: {total} broken: {}{warnings}", names.join(", "))
}

/// Runs of checks with the same name and the same label, in report order.
fn groups(checks: &[Check]) -> Vec<&[Check]> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=checks.len() {
        let same = match (checks.get(i), checks.get(start)) {
            (Some(a), Some(b)) => a.name == b.name && a.label() == b.label(),
            _ => false,
        };
        if !same {
            if let Some(run) = checks.get(start..i) {
                if !run.is_empty() {
                    out.push(run);
                }
            }
            start = i;
        }
    }
    out
}

/// `text` with every line after the first indented by `indent` (a YAML error's snippet, a
/// list of problems), trailing blank lines dropped.
fn indented(text: &str, indent: &str) -> String {
    let mut lines = text.trim_end().lines();
    let mut out = lines.next().unwrap_or("").to_string();
    for line in lines {
        out.push('\n');
        if !line.trim().is_empty() {
            out.push_str(indent);
            out.push_str(line);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_names_are_counted_once_and_grouped() {
        let checks = vec![
            Check::ok("config", "here"),
            Check::fail("plugins", "a broken"),
            Check::fail("plugins", "b broken\nsecond line"),
            Check::fail("mcp.x", "down"),
        ];
        let out = text(&checks);
        assert!(
            out.contains("plugins: FAIL (2):\n  - a broken\n  - b broken\n    second line\n"),
            "{out}"
        );
        assert!(
            out.ends_with("doctor: 3 broken: plugins (2), mcp.x\n"),
            "{out}"
        );
        assert_eq!(
            verdict(&[Check::warn("x", "y")]),
            "doctor: nothing broken (1 warning)"
        );
    }
}
