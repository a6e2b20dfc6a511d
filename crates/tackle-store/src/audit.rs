//! The audit log: one row per tool call: the decision (allowed, denied and why, approved by
//! whom), who made the call, and how it ended. A call that runs is written before it runs (an
//! intent, outcome `running`, owned by this process) and completed after; an intent whose
//! process is gone is closed as `interrupted` the next time a process opens the store.
//!
//! With a shared engine (`state_url: postgres://…`) the log is in that database: one table,
//! one chain, written by every daemon that names it (see `chain`); an intent there names its
//! host as well, and only a process of the same host judges whether it is gone.

mod chain;
mod detail;
mod export;
mod key;
mod owner;
mod verify;

use crate::sql::Engine;
use chain::Ctx;
pub(crate) use chain::HeadCache;
pub use chain::CHECKPOINT_EVERY;
pub use detail::{json_digest, text_digest, AuditDetail, ARGUMENTS_MAX_BYTES};
pub use export::ExportedEntry;
pub use key::{hex, unhex, KEY_FILE};
pub use verify::{AuditSigner, AuditVerification, ChainProblem};

use crate::error::StoreError;
use crate::sql::{in_tx, vals, Db, Lite, Row};
use crate::{format_ts, now_rfc3339, Store};
use serde::{Deserialize, Serialize};
use std::time::Duration;
use tackle_protocol::text::truncate_at_char_boundary;
use tackle_protocol::Verdict;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// The longest argument summary kept; longer ones are cut at a char boundary.
pub const ARGS_SUMMARY_MAX_BYTES: usize = 1_024;

/// The outcome of a call whose intent is recorded and that has not ended yet.
pub const RUNNING: &str = "running";

/// The outcome of a call whose process ended before the call did: what it did is unknown.
pub const INTERRUPTED: &str = "interrupted";

/// One decision as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// RFC 3339 UTC; left empty, the store fills in now.
    pub ts: String,
    /// The calling session (`None`: a call outside one).
    pub session_id: Option<String>,
    /// The agent that called.
    pub agent: String,
    /// The tool called.
    pub tool: String,
    /// A short, already-redacted summary of the arguments, never the arguments themselves.
    pub args_summary: String,
    /// What policy decided.
    pub verdict: Verdict,
    /// The rule that decided (the decision's `rule`).
    pub rule: String,
    /// The decision's `why`.
    pub why: String,
    /// Who said yes (`tty`, `--yes`, `mcp-elicitation`), when someone was asked.
    pub approver: Option<String>,
    /// `ok`, or the error kind the call ended in (`denied`, `failed`, …), [`RUNNING`] or
    /// [`INTERRUPTED`].
    pub outcome: String,
    /// Wall-clock time of the call in milliseconds (`None` while running or when unknown).
    pub duration_ms: Option<u64>,
}

/// A record with who made the call, as `tackle audit` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// The call as recorded.
    #[serde(flatten)]
    pub record: AuditRecord,
    /// `model` (an agent's model), `mcp` (an MCP client), `cli` (`tackle tools call`); empty
    /// in records written before callers were kept.
    pub caller: String,
}

/// How a call whose intent was recorded ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditOutcome {
    /// `ok`, or the error kind the call ended in.
    pub outcome: String,
    /// The rule that decided in the end (it may differ from the intent's after an approval).
    pub rule: String,
    /// The decision's `why`, final.
    pub why: String,
    /// Wall-clock time of the call in milliseconds.
    pub duration_ms: Option<u64>,
    /// The layer whose rule the record names now (see [`AuditDetail::layer`]); empty keeps
    /// the one the intent recorded.
    pub layer: String,
    /// See [`AuditDetail::result_digest`].
    pub result_digest: Option<String>,
}

/// The row an intent was written to, for its outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntentId(i64);

impl Store {
    /// Appends one record with no caller. The argument summary is cut to
    /// [`ARGS_SUMMARY_MAX_BYTES`].
    pub async fn append_audit(&self, record: AuditRecord) -> Result<(), StoreError> {
        self.append_audit_entry(AuditEntry {
            record,
            caller: String::new(),
        })
        .await
    }

    /// Appends one finished record: a call refused before it ran, or one whose intent could
    /// not be written.
    /// It joins the hash chain as it is written (see `chain`).
    pub async fn append_audit_entry(&self, entry: AuditEntry) -> Result<(), StoreError> {
        self.append_audit_with(entry, AuditDetail::default()).await
    }

    /// [`Self::append_audit_entry`] with what the record proves about the call.
    pub async fn append_audit_with(
        &self,
        mut entry: AuditEntry,
        mut detail: AuditDetail,
    ) -> Result<(), StoreError> {
        normalize(&mut entry);
        detail.normalize();
        let cache = self.chain_head.clone();
        self.audit_write(move |db, ctx| chain::append(db, ctx, &cache, &entry, &detail).map(drop))
            .await
    }

    /// Records a call about to run, before it runs: its outcome is [`RUNNING`] and this process
    /// owns it until [`Self::finish_audit`]. Should the process end first, the next process to
    /// open the store (on a shared engine: on the same host) closes it as [`INTERRUPTED`].
    pub async fn begin_audit(&self, entry: AuditEntry) -> Result<IntentId, StoreError> {
        self.begin_audit_with(entry, AuditDetail::default()).await
    }

    /// [`Self::begin_audit`] with what the record proves about the call; its result digest
    /// comes with the outcome.
    pub async fn begin_audit_with(
        &self,
        mut entry: AuditEntry,
        mut detail: AuditDetail,
    ) -> Result<IntentId, StoreError> {
        RUNNING.clone_into(&mut entry.record.outcome);
        entry.record.duration_ms = None;
        detail.normalize();
        detail.result_digest = None;
        let cache = self.chain_head.clone();
        self.audit_write(move |db, ctx| {
            let owner = match ctx.engine {
                Engine::Sqlite => owner::this_process(),
                Engine::Postgres => owner::this_process_on_host(),
            };
            let id = insert_audit(db, &entry, &detail, Some(owner))?;
            cache.inserted(id);
            Ok(id)
        })
        .await
        .map(IntentId)
    }

    /// Completes an intent with how its call ended; the record joins the hash chain.
    pub async fn finish_audit(
        &self,
        id: IntentId,
        outcome: AuditOutcome,
    ) -> Result<(), StoreError> {
        let cache = self.chain_head.clone();
        self.audit_write(move |db, ctx| {
            let outcome = outcome.clone();
            chain::close(db, ctx, &cache, id.0, move |entry, detail| {
                entry.record.outcome = outcome.outcome;
                entry.record.rule = outcome.rule;
                entry.record.why = outcome.why;
                entry.record.duration_ms = outcome.duration_ms;
                if !outcome.layer.is_empty() {
                    detail.layer = outcome.layer;
                }
                detail.result_digest = outcome.result_digest;
            })
        })
        .await
    }

    /// Signs the chain's head if records were added since the last checkpoint: a process
    /// ending normally covers its own tail rather than leaving it to the next open.
    pub async fn seal_audit(&self) -> Result<(), StoreError> {
        // A store this process never opened holds nothing it wrote: opening it now would
        // create a database for a command that records nothing (`tools list`).
        if !self.is_open() {
            return Ok(());
        }
        let cache = self.chain_head.clone();
        let ctx = self.audit_ctx();
        self.with_db(move |db| {
            // The checkpoint it may write is not in the cached head.
            cache.clear();
            chain::seal_tail(db, &ctx)
        })
        .await
    }

    /// One write on the path of every call. On SQLite it is done in the calling task when the
    /// lock is free at once, so the call's result does not wait on two thread hand-offs (see
    /// `try_inline`); on a shared engine it goes to the server's connection.
    async fn audit_write<T: Send + 'static>(
        &self,
        write: impl Fn(&mut dyn Db, &Ctx) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let ctx = self.audit_ctx();
        if ctx.engine == Engine::Sqlite {
            if let Some(done) = self.try_inline(|conn| write(&mut Lite(conn), &ctx)) {
                return done;
            }
        }
        self.with_db(move |db| write(db, &ctx)).await
    }

    /// The engine that holds the audit log, and where this store's signing key lives.
    fn audit_ctx(&self) -> Ctx {
        #[cfg(feature = "postgres")]
        let engine = if self.shared.is_some() {
            Engine::Postgres
        } else {
            Engine::Sqlite
        };
        #[cfg(not(feature = "postgres"))]
        let engine = Engine::Sqlite;
        Ctx {
            engine,
            db_path: self.path.clone(),
        }
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
        let entries = self.audit_entries(query).await?;
        Ok(entries.into_iter().map(|e| e.record).collect())
    }

    /// [`Self::audit_query`] with who made each call.
    pub async fn audit_entries(&self, query: AuditQuery) -> Result<Vec<AuditEntry>, StoreError> {
        let matching = Matching::of(query)?;
        self.with_db(move |db| {
            let rows = matching.newest(db, ENTRY_COLUMNS)?;
            rows.iter().map(|r| checked(entry_from(r, 0)?)).collect()
        })
        .await
    }
}

/// An [`AuditQuery`] as statement values: the one filtered read that `audit query`, `audit
/// export` and the API's audit routes share.
pub(crate) struct Matching {
    session: Option<String>,
    tool: Option<String>,
    since: Option<String>,
    limit: i64,
}

impl Matching {
    pub(crate) fn of(query: AuditQuery) -> Result<Self, StoreError> {
        let since = match &query.since {
            None => None,
            Some(since) => since.lower_bound()?,
        };
        Ok(Self {
            session: query.session,
            tool: query.tool,
            since,
            limit: limit_of(query.limit),
        })
    }

    /// `columns` of the newest matching records (at most the limit), oldest first.
    pub(crate) fn newest(
        &self,
        db: &mut dyn crate::sql::Db,
        columns: &str,
    ) -> Result<Vec<Row>, StoreError> {
        db.query(
            &format!(
                // The casts tell PostgreSQL the type of a value that may be NULL.
                "SELECT {columns}
                 FROM (SELECT * FROM audit
                       WHERE (CAST(?1 AS TEXT) IS NULL OR session_id = ?1)
                         AND (CAST(?2 AS TEXT) IS NULL OR tool = ?2)
                         AND (CAST(?3 AS TEXT) IS NULL OR ts >= ?3)
                       ORDER BY id DESC LIMIT ?4) AS newest
                 ORDER BY id"
            ),
            vals![
                self.session.clone(),
                self.tool.clone(),
                self.since.clone(),
                self.limit
            ],
        )
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
        Err(_) => {
            let date_only = time::macros::format_description!("[year]-[month]-[day]");
            match time::Date::parse(text, &date_only) {
                Ok(date) => Ok(date.midnight().assume_utc()),
                // The parser's own words name its internals ("the 'year' component").
                Err(_) => Err(bad(
                    "it is neither a date (2026-01-02) nor a date and time".to_string()
                )),
            }
        }
    }
}

/// The columns [`entry_from_row`] reads, in its order.
const ENTRY_COLUMNS: &str =
    "ts, session_id, agent, tool, args_summary, verdict, rule, why, approver, outcome, duration_ms, caller";

/// How many columns [`ENTRY_COLUMNS`] names: what follows them in a row starts here.
const ENTRY_COLUMN_COUNT: usize = 12;

/// The bound of a query's `LIMIT`: none is the largest (both engines read it alike, where a
/// negative one is "no limit" only in SQLite).
fn limit_of(limit: Option<usize>) -> i64 {
    limit.map_or(i64::MAX, |n| i64::try_from(n).unwrap_or(i64::MAX))
}

/// A record from [`ENTRY_COLUMNS`] starting at column `at`, with its stored verdict text
/// (see [`checked`]).
fn entry_from(r: &Row, at: usize) -> Result<(AuditEntry, String), StoreError> {
    Ok((
        AuditEntry {
            record: AuditRecord {
                ts: r.text(at)?,
                session_id: r.opt_text(at + 1)?,
                agent: r.text(at + 2)?,
                tool: r.text(at + 3)?,
                args_summary: r.text(at + 4)?,
                verdict: Verdict::Allow,
                rule: r.text(at + 6)?,
                why: r.text(at + 7)?,
                approver: r.opt_text(at + 8)?,
                outcome: r.text(at + 9)?,
                duration_ms: r.opt_int(at + 10)?.map(|d| d.max(0) as u64),
            },
            caller: r.text(at + 11)?,
        },
        r.text(at + 5)?,
    ))
}

/// [`entry_from`] on a row SQLite returned directly, for tests that rewrite the file.
#[cfg(test)]
fn entry_from_row(r: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<(AuditEntry, String)> {
    Ok((
        AuditEntry {
            record: AuditRecord {
                ts: r.get(at)?,
                session_id: r.get(at + 1)?,
                agent: r.get(at + 2)?,
                tool: r.get(at + 3)?,
                args_summary: r.get(at + 4)?,
                verdict: Verdict::Allow,
                rule: r.get(at + 6)?,
                why: r.get(at + 7)?,
                approver: r.get(at + 8)?,
                outcome: r.get(at + 9)?,
                duration_ms: r.get::<_, Option<i64>>(at + 10)?.map(|d| d.max(0) as u64),
            },
            caller: r.get(at + 11)?,
        },
        r.get::<_, String>(at + 5)?,
    ))
}

/// The record with its stored verdict parsed.
fn checked((mut entry, verdict): (AuditEntry, String)) -> Result<AuditEntry, StoreError> {
    entry.record.verdict = parse_verdict(&verdict).ok_or(StoreError::BadValue {
        what: "verdict",
        value: verdict,
    })?;
    Ok(entry)
}

/// Fills in the time and cuts the summary, before the record is written (and hashed).
fn normalize(entry: &mut AuditEntry) {
    if entry.record.ts.is_empty() {
        entry.record.ts = now_rfc3339();
    }
    if entry.record.args_summary.len() > ARGS_SUMMARY_MAX_BYTES {
        entry.record.args_summary =
            truncate_at_char_boundary(&entry.record.args_summary, ARGS_SUMMARY_MAX_BYTES)
                .to_string();
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

/// Inserts one record; `owner`, for an intent, is the process that runs the call. Returns the
/// row's id.
fn insert_audit(
    db: &mut dyn Db,
    entry: &AuditEntry,
    detail: &AuditDetail,
    owner: Option<&str>,
) -> Result<i64, StoreError> {
    let record = &entry.record;
    let ts = if record.ts.is_empty() {
        now_rfc3339()
    } else {
        record.ts.clone()
    };
    let summary = truncate_at_char_boundary(&record.args_summary, ARGS_SUMMARY_MAX_BYTES);
    // Kept compiled on the SQLite connection (`Lite` prepares through its cache): parsing
    // the statement was a quarter of the insert.
    db.insert(
        "INSERT INTO audit (ts, session_id, agent, tool, args_summary, verdict, rule, why, approver, outcome, duration_ms, caller, owner,
                            layer, args_digest, arguments, arguments_cut)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
        vals![
            ts,
            record.session_id.as_deref(),
            &record.agent,
            &record.tool,
            summary,
            verdict_str(record.verdict),
            &record.rule,
            &record.why,
            record.approver.as_deref(),
            &record.outcome,
            millis(record.duration_ms),
            &entry.caller,
            owner,
            &detail.layer,
            detail.args_digest.as_deref(),
            detail.arguments.as_deref(),
            detail.arguments_cut
        ],
    )
}

fn millis(duration_ms: Option<u64>) -> Option<i64> {
    duration_ms.map(|d| i64::try_from(d).unwrap_or(i64::MAX))
}

/// Closes as [`INTERRUPTED`] the intents whose process is gone; those of running processes
/// (this one, a daemon, a concurrent `tackle run`) stay open. Normally no intent is open and
/// this is one look-up in an empty index. Each closed record joins the hash chain; then the
/// chain's head is signed if an earlier process left records past the last checkpoint.
/// Returns how many were closed.
pub(crate) fn close_interrupted(conn: &rusqlite::Connection) -> Result<usize, StoreError> {
    let ctx = Ctx {
        engine: Engine::Sqlite,
        db_path: conn
            .path()
            .filter(|p| !p.is_empty())
            .map(std::path::PathBuf::from),
    };
    close_interrupted_in(&mut Lite(conn), &ctx)
}

/// [`close_interrupted`] on a shared engine, for a daemon whose database file is `db_path`
/// (its state directory holds the key that signs). Only intents of processes on this host
/// are judged (see `owner::is_gone_here`): another machine's running calls stay open.
#[cfg(feature = "postgres")]
pub(crate) fn close_interrupted_shared(
    db: &mut dyn Db,
    db_path: Option<std::path::PathBuf>,
) -> Result<usize, StoreError> {
    let ctx = Ctx {
        engine: Engine::Postgres,
        db_path,
    };
    close_interrupted_in(db, &ctx)
}

fn close_interrupted_in(db: &mut dyn Db, ctx: &Ctx) -> Result<usize, StoreError> {
    let owners = db
        .query(
            "SELECT DISTINCT owner FROM audit WHERE owner IS NOT NULL",
            &[],
        )?
        .iter()
        .map(|r| r.text(0))
        .collect::<Result<Vec<_>, _>>()?;
    let gone = |o: &str| match ctx.engine {
        Engine::Sqlite => owner::is_gone(o),
        Engine::Postgres => owner::is_gone_here(o),
    };
    let mut closed = 0;
    for gone in owners.iter().filter(|o| gone(o)) {
        let pid = gone.split(' ').next().unwrap_or_default();
        let why = format!(
            "the process running the call (pid {pid}) ended before the call did; what the call did is unknown"
        );
        closed += in_tx(db, |db| {
            chain::lock(db, ctx.engine)?;
            // Keyed on the owner, read with the chain's turn held: another process closing
            // the same intents meanwhile leaves none here.
            let ids = db
                .query(
                    "SELECT id FROM audit WHERE owner = ?1 ORDER BY id",
                    vals![gone],
                )?
                .iter()
                .map(|r| r.int(0))
                .collect::<Result<Vec<_>, _>>()?;
            let mut head = chain::head(db)?;
            for id in &ids {
                head = chain::close_in(db, ctx, head, *id, |entry, _| {
                    INTERRUPTED.clone_into(&mut entry.record.outcome);
                    entry.record.why.clone_from(&why);
                })?;
            }
            Ok(ids.len())
        })?;
    }
    chain::seal_tail(db, ctx)?;
    Ok(closed)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod chain_tests;

#[cfg(test)]
mod detail_tests;
