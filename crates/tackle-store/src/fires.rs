//! Firing a schedule: claiming one due fire under a lease, and recording what became of it.
//!
//! Every step is one `IMMEDIATE` transaction whose `UPDATE … WHERE next_fire_ms = due AND
//! lease expired` only one process can win, so two daemons over one database never fire a
//! schedule twice; the fire record and `fire_count` are written in that same transaction, so
//! a crash right after the claim can neither lose the count nor repeat the fire. The same
//! statements run on any SQL backend with row-level conditional updates.

use crate::error::StoreError;
use crate::schedules::{from_ms, to_ms, typed, Schedule, ScheduleKind, COLUMNS};
use crate::sql::{in_tx, vals, Db, Row};
use crate::Store;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// What became of one due fire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FireStatus {
    /// Claimed; the run has not reported back (or its daemon died).
    Running,
    /// The run finished.
    Ok,
    /// The run failed; `detail` says why.
    Failed,
    /// Not run: the previous run of the schedule was still going.
    Skipped,
    /// Not run: it fell due while no daemon was running (`catch_up: skip`).
    Missed,
    /// Not run: a bound (`max_fires`, `expires_at`) was reached, the schedule was disabled.
    Retired,
}

impl FireStatus {
    /// The name stored in the `status` column.
    pub fn as_str(self) -> &'static str {
        match self {
            FireStatus::Running => "running",
            FireStatus::Ok => "ok",
            FireStatus::Failed => "failed",
            FireStatus::Skipped => "skipped",
            FireStatus::Missed => "missed",
            FireStatus::Retired => "retired",
        }
    }

    /// The status a stored name means; `None` for an unknown one.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "running" => FireStatus::Running,
            "ok" => FireStatus::Ok,
            "failed" => FireStatus::Failed,
            "skipped" => FireStatus::Skipped,
            "missed" => FireStatus::Missed,
            "retired" => FireStatus::Retired,
            _ => return None,
        })
    }
}

/// One row of the fire log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FireRecord {
    /// Row id of this fire.
    pub id: i64,
    /// The schedule that fired.
    pub schedule_id: i64,
    /// The agent it ran as.
    pub agent: String,
    /// The schedule's name when it fired.
    pub name: String,
    /// The instant the schedule was due.
    #[serde(with = "time::serde::timestamp::milliseconds")]
    pub due: OffsetDateTime,
    /// When the run started (`None`: not run).
    #[serde(with = "time::serde::timestamp::milliseconds::option")]
    pub started: Option<OffsetDateTime>,
    /// When the run finished (`None`: not run, or still running).
    #[serde(with = "time::serde::timestamp::milliseconds::option")]
    pub finished: Option<OffsetDateTime>,
    /// What became of it.
    pub status: FireStatus,
    /// Why it failed, was skipped or missed; empty for a plain `ok`.
    pub detail: String,
    /// The daemon that claimed it.
    pub owner: Option<String>,
}

/// A claim on one due fire of one schedule.
#[derive(Debug, Clone)]
pub struct FireClaim {
    /// The schedule to fire.
    pub schedule_id: i64,
    /// The `next_fire` the caller saw; the claim fails if another process moved it.
    pub due: OffsetDateTime,
    /// The claimer's clock: leases and bounds are judged against it.
    pub now: OffsetDateTime,
    /// When the schedule fires after this one; `None` when it never does again.
    pub next: Option<OffsetDateTime>,
    /// Who claims (unique per daemon process).
    pub owner: String,
    /// How long the claim holds without renewal.
    pub lease: time::Duration,
}

/// The answer to a [`FireClaim`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claimed {
    /// Run it: the schedule as it was claimed (`fire_count` already counts this run).
    Run {
        /// The fire record to report the outcome on.
        fire_id: i64,
        /// The schedule as claimed.
        schedule: Box<Schedule>,
    },
    /// The previous run still holds the lease; recorded as skipped, moved to `next`.
    Skipped,
    /// A bound was reached before this fire: disabled, recorded, not run.
    Retired,
    /// Someone else claimed or changed it first (or it is gone): nothing to do.
    Lost,
}

impl Store {
    /// Claims the fire of `claim.schedule_id` due at `claim.due`; see [`Claimed`].
    pub async fn claim_fire(&self, claim: FireClaim) -> Result<Claimed, StoreError> {
        self.with_db(move |db| in_tx(db, |tx| claim_in(tx, &claim)))
            .await
    }

    /// Records that the fire of `schedule_id` due at `due` was missed while no daemon ran,
    /// and moves the schedule to `next` (disabling it when there is none). `false` when
    /// another process moved it first.
    pub async fn record_missed(
        &self,
        schedule_id: i64,
        due: OffsetDateTime,
        next: Option<OffsetDateTime>,
        detail: String,
    ) -> Result<bool, StoreError> {
        self.with_db(move |db| {
            in_tx(db, |tx| {
                let Some(s) = schedule_at(tx, schedule_id, due)? else {
                    return Ok(false);
                };
                advance(tx, s.id, next)?;
                insert_fire(tx, &s, due, None, FireStatus::Missed, &detail, None)?;
                Ok(true)
            })
        })
        .await
    }

    /// Extends the lease `owner` holds on `schedule_id` to `until`; `false` when it holds none.
    pub async fn renew_lease(
        &self,
        schedule_id: i64,
        owner: &str,
        until: OffsetDateTime,
    ) -> Result<bool, StoreError> {
        let owner = owner.to_string();
        self.with_db(move |db| {
            let n = db.execute(
                "UPDATE schedules SET lease_until_ms = ?3 WHERE id = ?1 AND lease_owner = ?2",
                vals![schedule_id, owner, to_ms(until)],
            )?;
            Ok(n > 0)
        })
        .await
    }

    /// Records the outcome of the run claimed as `fire_id` and releases its lease. A one-shot
    /// schedule is deleted here, after its run, so a crash before this leaves it listed.
    pub async fn finish_fire(
        &self,
        fire_id: i64,
        status: FireStatus,
        detail: String,
        finished: OffsetDateTime,
    ) -> Result<(), StoreError> {
        self.with_db(move |db| {
            in_tx(db, |tx| {
                let Some(row) = tx.query_opt(
                    "SELECT schedule_id, owner FROM schedule_fires WHERE id = ?1",
                    vals![fire_id],
                )?
                else {
                    return Ok(());
                };
                let (schedule_id, owner) = (row.int(0)?, row.opt_text(1)?);
                tx.execute(
                    "UPDATE schedule_fires SET status = ?2, detail = ?3, finished_ms = ?4 WHERE id = ?1",
                    vals![fire_id, status.as_str(), detail, to_ms(finished)],
                )?;
                tx.execute(
                    "UPDATE schedules SET lease_owner = NULL, lease_until_ms = NULL
                     WHERE id = ?1 AND lease_owner IS NOT DISTINCT FROM ?2",
                    vals![schedule_id, owner],
                )?;
                tx.execute(
                    "DELETE FROM schedules WHERE id = ?1 AND kind = 'once' AND next_fire_ms IS NULL",
                    vals![schedule_id],
                )?;
                Ok(())
            })
        })
        .await
    }

    /// The newest `limit` fire records of `agent`'s schedule `name`, newest first.
    pub async fn fires(
        &self,
        agent: &str,
        name: &str,
        limit: usize,
    ) -> Result<Vec<FireRecord>, StoreError> {
        let (agent, name) = (agent.to_string(), name.to_string());
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.with_db(move |db| {
            db.query(
                "SELECT id, schedule_id, agent, name, due_ms, started_ms, finished_ms, status, detail, owner
                 FROM schedule_fires WHERE agent = ?1 AND name = ?2 ORDER BY id DESC LIMIT ?3",
                vals![agent, name, limit],
            )?
            .iter()
            .map(typed_fire)
            .collect()
        })
        .await
    }
}

/// In the caller's transaction: a claim that returns early changes nothing.
fn claim_in(tx: &mut dyn Db, claim: &FireClaim) -> Result<Claimed, StoreError> {
    let Some(mut s) = schedule_at(tx, claim.schedule_id, claim.due)? else {
        return Ok(Claimed::Lost);
    };
    if s.bound_reached(claim.due) {
        // Re-enabled past its bound, or expired before this fire: retire again, do not run.
        tx.execute(
            "UPDATE schedules SET enabled = 0, next_fire_ms = NULL WHERE id = ?1",
            vals![s.id],
        )?;
        let why = if s.max_fires.is_some_and(|m| s.fire_count >= m) {
            format!("max_fires {} reached", s.fire_count)
        } else {
            "expires_at passed".to_string()
        };
        insert_fire(tx, &s, claim.due, None, FireStatus::Retired, &why, None)?;
        return Ok(Claimed::Retired);
    }
    let now = to_ms(claim.now);
    let next = claim.next.filter(|n| s.expires_at.is_none_or(|e| *n < e));
    // The next fire is the last one a bound allows: keep the row, disabled, after this run.
    let last = next.is_none()
        || s.max_fires
            .is_some_and(|m| s.fire_count.saturating_add(1) >= m);
    let next = if last { None } else { next };
    let won = tx.execute(
        "UPDATE schedules SET fire_count = fire_count + 1, last_fired_ms = ?3, next_fire_ms = ?4,
                enabled = CASE WHEN CAST(?4 AS BIGINT) IS NULL AND kind != 'once' THEN 0 ELSE enabled END,
                lease_owner = ?5, lease_until_ms = ?6
         WHERE id = ?1 AND next_fire_ms = ?2 AND enabled = 1
           AND (lease_until_ms IS NULL OR lease_until_ms <= ?7)",
        vals![
            s.id,
            to_ms(claim.due),
            to_ms(claim.due),
            next.map(to_ms),
            &claim.owner,
            to_ms(claim.now + claim.lease),
            now
        ],
    )?;
    if won == 0 {
        // Still leased: the previous run is going. Skip this fire, do not stack it.
        advance(tx, s.id, claim.next)?;
        let detail = "the previous run was still going";
        insert_fire(tx, &s, claim.due, None, FireStatus::Skipped, detail, None)?;
        return Ok(Claimed::Skipped);
    }
    // A run whose daemon died (its lease expired) never reported back: say so, and who
    // took the schedule over.
    tx.execute(
        "UPDATE schedule_fires SET status = 'failed', finished_ms = ?2,
                detail = 'interrupted: the daemon stopped during the run; taken over by ' || ?3
         WHERE schedule_id = ?1 AND status = 'running'",
        vals![s.id, now, &claim.owner],
    )?;
    let fire_id = insert_fire(
        tx,
        &s,
        claim.due,
        Some(claim.now),
        FireStatus::Running,
        "",
        Some(&claim.owner),
    )?;
    s.fire_count = s.fire_count.saturating_add(1);
    s.next_fire = next;
    if s.kind != ScheduleKind::Once && next.is_none() {
        s.enabled = false;
    }
    Ok(Claimed::Run {
        fire_id,
        schedule: Box::new(s),
    })
}

/// The enabled schedule `id` if it is still due at `due` (nobody moved it), locked for the
/// rest of the transaction: a second claimant waits and then finds it moved.
fn schedule_at(
    tx: &mut dyn Db,
    id: i64,
    due: OffsetDateTime,
) -> Result<Option<Schedule>, StoreError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM schedules WHERE id = ?1 AND enabled = 1 AND next_fire_ms = ?2{}",
        tx.for_update()
    );
    tx.query_opt(&sql, vals![id, to_ms(due)])?
        .map(|r| typed(&r))
        .transpose()
}

/// Moves a schedule to `next`; with none, a recurring one is disabled (a one-shot is
/// deleted by the caller's finish, or here when it never ran).
fn advance(tx: &mut dyn Db, id: i64, next: Option<OffsetDateTime>) -> Result<(), StoreError> {
    tx.execute(
        "UPDATE schedules SET next_fire_ms = ?2,
                enabled = CASE WHEN CAST(?2 AS BIGINT) IS NULL THEN 0 ELSE enabled END
         WHERE id = ?1",
        vals![id, next.map(to_ms)],
    )?;
    Ok(())
}

fn insert_fire(
    tx: &mut dyn Db,
    s: &Schedule,
    due: OffsetDateTime,
    started: Option<OffsetDateTime>,
    status: FireStatus,
    detail: &str,
    owner: Option<&str>,
) -> Result<i64, StoreError> {
    tx.insert(
        "INSERT INTO schedule_fires (schedule_id, agent, name, due_ms, started_ms, status, detail, owner)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        vals![
            s.id,
            &s.agent,
            &s.name,
            to_ms(due),
            started.map(to_ms),
            status.as_str(),
            detail,
            owner
        ],
    )
}

fn typed_fire(r: &Row) -> Result<FireRecord, StoreError> {
    let status = r.text(7)?;
    let due = r.int(4)?;
    Ok(FireRecord {
        id: r.int(0)?,
        schedule_id: r.int(1)?,
        agent: r.text(2)?,
        name: r.text(3)?,
        due: from_ms(due).ok_or(StoreError::BadValue {
            what: "fire time",
            value: due.to_string(),
        })?,
        started: r.opt_int(5)?.and_then(from_ms),
        finished: r.opt_int(6)?.and_then(from_ms),
        status: FireStatus::parse(&status).ok_or(StoreError::BadValue {
            what: "fire status",
            value: status,
        })?,
        detail: r.text(8)?,
        owner: r.opt_text(9)?,
    })
}
