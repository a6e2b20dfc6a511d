//! The audit log: one row per tool decision (allowed, denied and why, approved by whom,
//! failed), appended by the dispatcher.

use crate::error::StoreError;
use crate::{format_ts, now_rfc3339, Store};
use rusqlite::params;
use serde::{Deserialize, Serialize};
use std::time::Duration;
use tackle_protocol::text::truncate_at_char_boundary;
use tackle_protocol::Verdict;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

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
        // One insert on the path of every call: done here when the lock is free at once, so
        // the call's result does not wait on two thread hand-offs (see `try_inline`).
        if let Some(done) = self.try_inline(|conn| insert_audit(conn, &record)) {
            return done;
        }
        self.with_conn(move |conn| insert_audit(conn, &record))
            .await
    }

    /// The last `n` records, oldest first.
    pub async fn audit_tail(&self, n: usize) -> Result<Vec<AuditRecord>, StoreError> {
        self.audit_query(AuditQuery {
            limit: Some(n),
            ..AuditQuery::default()
        })
        .await
    }

    /// The newest records matching `query` (at most its `limit`), oldest first.
    pub async fn audit_query(&self, query: AuditQuery) -> Result<Vec<AuditRecord>, StoreError> {
        let since = match &query.since {
            None => None,
            Some(since) => since.lower_bound()?,
        };
        // A negative LIMIT is no limit in SQLite.
        let limit = query
            .limit
            .map(|n| i64::try_from(n).unwrap_or(i64::MAX))
            .unwrap_or(-1);
        self.with_conn(move |conn| {
            let mut stmt = conn.prepare(
                "SELECT ts, session_id, agent, tool, args_summary, verdict, rule, why, approver, outcome, duration_ms
                 FROM (SELECT * FROM audit
                       WHERE (?1 IS NULL OR session_id = ?1)
                         AND (?2 IS NULL OR tool = ?2)
                         AND (?3 IS NULL OR ts >= ?3)
                       ORDER BY id DESC LIMIT ?4)
                 ORDER BY id",
            )?;
            let rows = stmt.query_map(params![query.session, query.tool, since, limit], |r| {
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

/// Which audit records [`Store::audit_query`] returns; every field left `None` matches all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditQuery {
    /// Only this session's calls.
    pub session: Option<String>,
    /// Only calls of this tool (its registry name).
    pub tool: Option<String>,
    /// Only records at or after this time.
    pub since: Option<AuditSince>,
    /// At most the newest `limit` of the matching records.
    pub limit: Option<usize>,
}

/// The start of an audit query's time window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuditSince {
    /// This long before now.
    Ago(Duration),
    /// An RFC 3339 time (`2026-01-02T03:04:05Z`, any offset) or a date (`2026-01-02`, UTC
    /// midnight).
    At(String),
}

impl AuditSince {
    /// The bound in the stored `ts` format (whose text order is time order); `None` when it
    /// lies before any representable time, which every record is after.
    fn lower_bound(&self) -> Result<Option<String>, StoreError> {
        let at = match self {
            AuditSince::Ago(ago) => {
                let Ok(ago) = time::Duration::try_from(*ago) else {
                    return Ok(None);
                };
                match OffsetDateTime::now_utc().checked_sub(ago) {
                    Some(at) => at,
                    None => return Ok(None),
                }
            }
            AuditSince::At(text) => parse_time(text)?,
        };
        Ok(Some(format_ts(at)))
    }
}

fn parse_time(text: &str) -> Result<OffsetDateTime, StoreError> {
    let text = text.trim();
    let bad = |why: String| StoreError::BadTime {
        value: text.to_string(),
        why,
    };
    match OffsetDateTime::parse(text, &Rfc3339) {
        Ok(at) => Ok(at),
        Err(rfc) => {
            let date_only = time::macros::format_description!("[year]-[month]-[day]");
            match time::Date::parse(text, &date_only) {
                Ok(date) => Ok(date.midnight().assume_utc()),
                Err(_) => Err(bad(rfc.to_string())),
            }
        }
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

fn insert_audit(conn: &rusqlite::Connection, record: &AuditRecord) -> Result<(), StoreError> {
    let ts = if record.ts.is_empty() {
        now_rfc3339()
    } else {
        record.ts.clone()
    };
    let summary = truncate_at_char_boundary(&record.args_summary, ARGS_SUMMARY_MAX_BYTES);
    let duration = record
        .duration_ms
        .map(|d| i64::try_from(d).unwrap_or(i64::MAX));
    // Kept compiled on the connection: parsing the statement was a quarter of the insert.
    let mut insert = conn.prepare_cached(
        "INSERT INTO audit (ts, session_id, agent, tool, args_summary, verdict, rule, why, approver, outcome, duration_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?;
    insert.execute(params![
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
    ])?;
    Ok(())
}
