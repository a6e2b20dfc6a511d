//! `tackle audit`: the audit log, one line per tool call, oldest first, under a header; its
//! subcommands check and export it (`evidence`).

mod evidence;
mod ocsf;

pub use evidence::AuditCommand;

use crate::app::{load_config, open_store};
use crate::cli::{AuditArgs, Global};
use crate::exit::{self, usage};
use anyhow::Result;
use std::time::Duration;
use tackle_protocol::text::preview;
use tackle_protocol::Verdict;
use tackle_store::{AuditQuery, AuditSince, ExportedEntry, StoreError};

pub async fn run(global: &Global, mut args: AuditArgs) -> Result<i32> {
    if let Some(command) = args.command.take() {
        return evidence::run(global, command).await;
    }
    let loaded = load_config(global)?;
    let store = open_store(&loaded.config)?;
    let query = AuditQuery {
        session: args.session,
        tool: args.tool,
        since: args.since.as_deref().map(parse_since),
        limit: args.limit,
    };
    // Opening the store closed the intents of calls whose process is gone as interrupted.
    // Read as exported: `--json` shows each record's id, chain place and evidence too.
    let records = match store.audit_export(query).await {
        Ok(records) => records,
        Err(e @ StoreError::BadTime { .. }) => {
            return Err(usage(format!(
                "--since {e}, or a duration such as 30m, 2h or 7d"
            )))
        }
        Err(e) => return Err(anyhow::anyhow!("cannot read the audit log: {e}")),
    };
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&records)?)?;
        return Ok(exit::OK);
    }
    if records.is_empty() {
        if !global.quiet {
            eprintln!("no audit records match");
        }
        return Ok(exit::OK);
    }
    for line in lines(&records) {
        outln!("{line}")?;
    }
    Ok(exit::OK)
}

/// A duration (`90s`, `30m`, `2h`, `7d`, `1w`, or several: `1h30m`) counts back from now;
/// anything else is a time the store parses (and refuses with a message if it is not one).
pub(crate) fn parse_since(text: &str) -> AuditSince {
    match parse_duration(text.trim()) {
        Some(ago) => AuditSince::Ago(ago),
        None => AuditSince::At(text.to_string()),
    }
}

pub(crate) fn parse_duration(text: &str) -> Option<Duration> {
    if text.is_empty() {
        return None;
    }
    let mut total: u64 = 0;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let (number, after) = rest.split_at(digits);
        let unit_len = after.bytes().take_while(u8::is_ascii_alphabetic).count();
        let (unit, after) = after.split_at(unit_len);
        let scale: u64 = match unit {
            "s" => 1,
            "m" => 60,
            "h" => 3_600,
            "d" => 86_400,
            "w" => 604_800,
            _ => return None,
        };
        // Longer than any time can be written is "everything": saturate, the store copes.
        let n: u64 = number.parse().unwrap_or(u64::MAX);
        total = total.saturating_add(n.saturating_mul(scale));
        rest = after;
    }
    Some(Duration::from_secs(total))
}

/// The columns of the text view, in order.
const HEADER: [&str; 12] = [
    "TIME", "AGENT", "SESSION", "CALLER", "TOOL", "DECISION", "APPROVER", "OUTCOME", "DURATION",
    "LAYER", "RULE", "ARGS",
];

/// A header, then one aligned line per record. Every field is flattened to one line of
/// printable text; an empty one shows as `-`.
fn lines(records: &[ExportedEntry]) -> Vec<String> {
    let dash = |text: &str, max: usize| {
        if text.is_empty() {
            "-".to_string()
        } else {
            preview(text, max)
        }
    };
    let mut rows: Vec<[String; 12]> = vec![HEADER.map(String::from)];
    rows.extend(records.iter().map(|x| {
        let e = &x.entry;
        let r = &e.record;
        [
            short_time(&r.ts),
            dash(&r.agent, 40),
            dash(r.session_id.as_deref().unwrap_or_default(), 40),
            dash(&e.caller, 12),
            dash(&r.tool, 40),
            verdict(r.verdict).to_string(),
            dash(r.approver.as_deref().unwrap_or_default(), 20),
            outcome(&r.outcome),
            r.duration_ms.map(duration).unwrap_or_else(|| "-".into()),
            // The protection layer whose rule decided (the dispatcher's `Layer`), so a
            // refusal reads as policy, taint, sandbox… without `--json`.
            dash(&x.detail.layer, 12),
            dash(&r.rule, 48),
            dash(&r.args_summary, 160),
        ]
    }));
    let mut widths = [0usize; 12];
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    rows.iter()
        .map(|row| {
            let mut line = String::new();
            for (i, (cell, width)) in row.iter().zip(widths).enumerate() {
                line.push_str(cell);
                if i + 1 < row.len() {
                    let pad = width.saturating_sub(cell.chars().count()) + 2;
                    line.extend(std::iter::repeat_n(' ', pad));
                }
            }
            line.trim_end().to_string()
        })
        .collect()
}

/// The stored outcome in words (`--json` keeps the stored kind).
fn outcome(kind: &str) -> String {
    match kind {
        "ok_error" => "tool error".to_string(),
        "not_found" => "not found".to_string(),
        "invalid_arguments" => "invalid arguments".to_string(),
        "needs_approval" => "needs approval".to_string(),
        "timeout" => "timed out".to_string(),
        other => preview(other, 24),
    }
}

/// `850ms`, `12.3s`, `4m05s`.
fn duration(ms: u64) -> String {
    match ms {
        0..=999 => format!("{ms}ms"),
        1_000..=59_999 => format!("{:.1}s", ms as f64 / 1_000.0),
        _ => format!("{}m{:02}s", ms / 60_000, (ms / 1_000) % 60),
    }
}

/// `2026-01-02T03:04:05.678901Z` as `2026-01-02 03:04:05Z`; anything else as stored.
pub fn short_time(ts: &str) -> String {
    match (ts.get(..10), ts.get(11..19)) {
        (Some(date), Some(time)) if ts.get(10..11) == Some("T") => format!("{date} {time}Z"),
        _ => preview(ts, 40),
    }
}

fn verdict(v: Verdict) -> &'static str {
    match v {
        Verdict::Allow => "allow",
        Verdict::Deny => "deny",
        Verdict::Ask => "ask",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_units_added_up() {
        assert_eq!(parse_duration("90s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("1h30m"), Some(Duration::from_secs(5_400)));
        assert_eq!(parse_duration("2d"), Some(Duration::from_secs(172_800)));
        assert_eq!(parse_duration("1w"), Some(Duration::from_secs(604_800)));
        assert!(parse_duration("99999999999999999999999w").is_some());
        for not in ["", "5", "m", "5x", "2026-01-02", "1h 30m", "-1h", "1.5h"] {
            assert_eq!(parse_duration(not), None, "{not}");
        }
    }

    #[test]
    fn durations_read_at_a_glance() {
        assert_eq!(duration(0), "0ms");
        assert_eq!(duration(850), "850ms");
        assert_eq!(duration(12_345), "12.3s");
        assert_eq!(duration(245_000), "4m05s");
    }

    #[test]
    fn times_are_shortened_only_when_they_have_the_stored_shape() {
        assert_eq!(
            short_time("2026-01-02T03:04:05.678901Z"),
            "2026-01-02 03:04:05Z"
        );
        assert_eq!(short_time("garbage"), "garbage");
        assert_eq!(short_time("2026-01-02é03:04:05"), "2026-01-02é03:04:05");
    }
}
