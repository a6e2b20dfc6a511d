//! The audit log: one row per tool decision (allowed, denied and why, approved by whom,
//! failed), appended by the dispatcher.

use crate::error::StoreError;
use crate::{now_rfc3339, Store};
use rusqlite::params;
use serde::{Deserialize, Serialize};
use tackle_protocol::text::truncate_at_char_boundary;
use tackle_protocol::Verdict;

/// The longest argument summary kept; longer ones are cut at a char boundary.
pub const ARGS_SUMMARY_MAX_BYTES: usize = 1_024;

/// One decision as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// RFC 3339 UTC; left empty, the store fills in now.
    pub ts: String,
    pub session_id: Option<String>,
    pub agent: String,
    pub tool: String,
    /// A short, already-redacted summary of the arguments, never the arguments themselves.
    pub args_summary: String,
    pub verdict: Verdict,
    /// The rule that decided (the decision's `rule`).
    pub rule: String,
    /// The decision's `why`.
    pub why: String,
    /// Who said yes (`tty`, `--yes`, `mcp-elicitation`), when someone was asked.
    pub approver: Option<String>,
    /// `ok`, or the error kind the call ended in (`denied`, `failed`, …).
    pub outcome: String,
    pub duration_ms: Option<u64>,
}

impl Store {
    /// Appends one record. The argument summary is cut to [`ARGS_SUMMARY_MAX_BYTES`].
    pub async fn append_audit(&self, record: AuditRecord) -> Result<(), StoreError> {
        self.with_conn(move |conn| {
            let ts = if record.ts.is_empty() {
                now_rfc3339()
            } else {
                record.ts
            };
            let summary = truncate_at_char_boundary(&record.args_summary, ARGS_SUMMARY_MAX_BYTES);
            let duration = record.duration_ms.map(|d| i64::try_from(d).unwrap_or(i64::MAX));
            conn.execute(
                "INSERT INTO audit (ts, session_id, agent, tool, args_summary, verdict, rule, why, approver, outcome, duration_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                params![
                    ts,
                    record.session_id,
                    record.agent,
                    record.tool,
                    summary,
                    verdict_str(record.verdict),
                    record.rule,
                    record.why,
                    record.approver,
                    record.outcome,
                    duration
                ],
            )?;
            Ok(())
        })
        .await
    }

    /// The last `n` records, oldest first.
    pub async fn audit_tail(&self, n: usize) -> Result<Vec<AuditRecord>, StoreError> {
        let limit = i64::try_from(n).unwrap_or(i64::MAX);
        self.with_conn(move |conn| {
            let mut stmt = conn.prepare(
                "SELECT ts, session_id, agent, tool, args_summary, verdict, rule, why, approver, outcome, duration_ms
                 FROM (SELECT * FROM audit ORDER BY id DESC LIMIT ?1) ORDER BY id",
            )?;
            let rows = stmt.query_map([limit], |r| {
                Ok((
                    AuditRecord {
                        ts: r.get(0)?,
                        session_id: r.get(1)?,
                        agent: r.get(2)?,
                        tool: r.get(3)?,
                        args_summary: r.get(4)?,
                        verdict: Verdict::Allow,
                        rule: r.get(6)?,
                        why: r.get(7)?,
                        approver: r.get(8)?,
                        outcome: r.get(9)?,
                        duration_ms: r.get::<_, Option<i64>>(10)?.map(|d| d.max(0) as u64),
                    },
                    r.get::<_, String>(5)?,
                ))
            })?;
            let mut out = Vec::new();
            for row in rows {
                let (mut record, verdict) = row?;
                record.verdict = parse_verdict(&verdict).ok_or(StoreError::BadValue {
                    what: "verdict",
                    value: verdict,
                })?;
                out.push(record);
            }
            Ok(out)
        })
        .await
    }
}

fn verdict_str(v: Verdict) -> &'static str {
    match v {
        Verdict::Allow => "allow",
        Verdict::Deny => "deny",
        Verdict::Ask => "ask",
    }
}

fn parse_verdict(s: &str) -> Option<Verdict> {
    Some(match s {
        "allow" => Verdict::Allow,
        "deny" => Verdict::Deny,
        "ask" => Verdict::Ask,
        _ => return None,
    })
}
