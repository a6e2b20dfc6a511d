//! Schedules: what an agent should be told to do, and when. The store keeps them and answers
//! "what is due" and "when is the next one"; computing the next fire time from a cron
//! expression or interval is the routine engine's job. Claiming a fire and recording its
//! outcome live in [`crate::fires`].

use crate::error::StoreError;
use crate::sql::{in_tx, vals, Db, Row};
use crate::{now_rfc3339, Store};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// How `spec` is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScheduleKind {
    /// `spec` is a cron expression.
    Cron,
    /// `spec` is an interval in seconds.
    Interval,
    /// Fires once, at `next_fire`; `spec` is free text (the instant as the user wrote it).
    Once,
}

impl ScheduleKind {
    /// The name stored in the `kind` column and shown by `tackle schedules`.
    pub fn as_str(self) -> &'static str {
        match self {
            ScheduleKind::Cron => "cron",
            ScheduleKind::Interval => "interval",
            ScheduleKind::Once => "once",
        }
    }

    /// The kind a stored `kind` column names; `None` for an unknown one.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "cron" => ScheduleKind::Cron,
            "interval" => ScheduleKind::Interval,
            "once" => ScheduleKind::Once,
            _ => return None,
        })
    }
}

/// Which session a fire runs in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// The session that created the schedule (`session_id`); a fresh one when there is none.
    Pinned,
    /// A new session for every fire.
    #[default]
    Fresh,
}

impl Target {
    /// The name stored in the `target` column.
    pub fn as_str(self) -> &'static str {
        match self {
            Target::Pinned => "pinned",
            Target::Fresh => "fresh",
        }
    }

    /// The target a stored `target` column names; `None` for an unknown one.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "pinned" => Target::Pinned,
            "fresh" => Target::Fresh,
            _ => return None,
        })
    }
}

/// A schedule to add. `name` is unique per agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSchedule {
    /// The agent the fire runs as.
    pub agent: String,
    /// Its name, unique per agent; how users and tools refer to it.
    pub name: String,
    /// How `spec` is read.
    pub kind: ScheduleKind,
    /// The cron expression, interval in seconds or `once` text, per `kind`.
    pub spec: String,
    /// The task the agent is given when it fires.
    pub message: String,
    /// The first fire time, computed by the caller: the store never reads `spec`.
    pub next_fire: Option<OffsetDateTime>,
    /// Which session each fire runs in.
    pub target: Target,
    /// The session a pinned schedule reports to.
    pub session_id: Option<String>,
    /// Retire after this many fires.
    pub max_fires: Option<u32>,
    /// Retire at this instant.
    pub expires_at: Option<OffsetDateTime>,
}

/// A stored schedule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schedule {
    /// Row id; stable, but users name schedules by `agent` and `name`.
    pub id: i64,
    /// The agent each fire runs as.
    pub agent: String,
    /// Unique per agent.
    pub name: String,
    /// How `spec` is read.
    pub kind: ScheduleKind,
    /// The cron expression, interval in seconds or `once` text, per `kind`.
    pub spec: String,
    /// The task the agent is given when it fires.
    pub message: String,
    /// A disabled schedule keeps its place but is never due.
    pub enabled: bool,
    /// `None`: nothing planned (a `once` that fired, or not computed yet).
    #[serde(with = "time::serde::timestamp::milliseconds::option")]
    pub next_fire: Option<OffsetDateTime>,
    /// When it last fired (`None`: never).
    #[serde(with = "time::serde::timestamp::milliseconds::option")]
    pub last_fired: Option<OffsetDateTime>,
    /// When it was added, RFC 3339 UTC.
    pub created_at: String,
    /// Which session each fire runs in.
    pub target: Target,
    /// The session a pinned schedule reports to.
    pub session_id: Option<String>,
    /// Retire after this many fires (`None`: no bound).
    pub max_fires: Option<u32>,
    /// Retire at this instant (`None`: no bound).
    #[serde(with = "time::serde::timestamp::milliseconds::option")]
    pub expires_at: Option<OffsetDateTime>,
    /// Runs started; written in the same transaction that claims the fire.
    pub fire_count: u32,
    /// Until when a daemon's run of this schedule holds it (`None`: no run is going).
    #[serde(with = "time::serde::timestamp::milliseconds::option")]
    pub lease_until: Option<OffsetDateTime>,
    /// Who planted it: the agent (its path in a tree, `a › b`, for a child) whose schedule
    /// tools alone may see and change it. `agent` for schedules planted as themselves and for
    /// those stored before owners were recorded.
    #[serde(default)]
    pub owner: String,
}

impl Schedule {
    /// Whether a bound stops it from firing at `at`: `max_fires` reached or `expires_at` passed.
    pub fn bound_reached(&self, at: OffsetDateTime) -> bool {
        self.max_fires.is_some_and(|m| self.fire_count >= m)
            || self.expires_at.is_some_and(|e| at >= e)
    }
}

/// Changes to a schedule; `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScheduleUpdate {
    /// A new kind; give it together with a matching `spec`.
    pub kind: Option<ScheduleKind>,
    /// A new cron expression, interval or `once` text.
    pub spec: Option<String>,
    /// A new task for the agent.
    pub message: Option<String>,
    /// Enables or disables it without losing its place.
    pub enabled: Option<bool>,
    /// `Some(None)` clears the next fire time.
    pub next_fire: Option<Option<OffsetDateTime>>,
    /// A new target session policy.
    pub target: Option<Target>,
    /// `Some(None)` clears the bound.
    pub max_fires: Option<Option<u32>>,
    /// `Some(None)` clears the bound.
    pub expires_at: Option<Option<OffsetDateTime>>,
}

pub(crate) const COLUMNS: &str =
    "id, agent, name, kind, spec, message, enabled, next_fire_ms, last_fired_ms, created_at, \
     target, session_id, max_fires, expires_at_ms, fire_count, lease_until_ms, \
     COALESCE(created_by, agent)";

impl Store {
    /// The file touched after every change made through [`Store::add_schedule`],
    /// [`Store::modify_schedule`] and [`Store::remove_schedule`], so that a daemon in another
    /// process can watch it and re-plan its sleep instead of polling the database. `None`
    /// for an in-memory store.
    pub fn schedules_marker(&self) -> Option<std::path::PathBuf> {
        self.path()
            .and_then(|p| p.parent())
            .map(|d| d.join(SCHEDULES_MARKER))
    }

    /// Best effort, so a failure is not an error: the change is committed either way, and a
    /// daemon that misses one touch still wakes at its next planned fire.
    fn touch_schedules_marker(&self) {
        if let Some(marker) = self.schedules_marker() {
            let _ = std::fs::write(&marker, to_ms(OffsetDateTime::now_utc()).to_string());
        }
    }

    /// The schedule with row id `id`.
    pub async fn schedule_by_id(&self, id: i64) -> Result<Option<Schedule>, StoreError> {
        self.with_db(move |db| {
            let sql = format!("SELECT {COLUMNS} FROM schedules WHERE id = ?1");
            db.query_opt(&sql, vals![id])?
                .map(|r| typed(&r))
                .transpose()
        })
        .await
    }

    /// Adds a schedule; a name the agent already uses is [`StoreError::DuplicateSchedule`].
    pub async fn add_schedule(&self, new: NewSchedule) -> Result<Schedule, StoreError> {
        self.add_owned_schedule(new, None).await
    }

    /// As [`Store::add_schedule`], planted by `owner` (`None`: by `new.agent` itself).
    pub async fn add_owned_schedule(
        &self,
        new: NewSchedule,
        owner: Option<&str>,
    ) -> Result<Schedule, StoreError> {
        tackle_protocol::ids::check(tackle_protocol::ids::IdKind::Schedule, &new.name)?;
        let owner = owner.filter(|o| *o != new.agent).map(str::to_string);
        let added = self.add_schedule_quietly(new, owner).await;
        if added.is_ok() {
            self.touch_schedules_marker();
        }
        added
    }

    async fn add_schedule_quietly(
        &self,
        new: NewSchedule,
        owner: Option<String>,
    ) -> Result<Schedule, StoreError> {
        self.with_db(move |db| {
            let inserted = db.execute(
                "INSERT INTO schedules (agent, name, kind, spec, message, next_fire_ms, created_at,
                                        target, session_id, max_fires, expires_at_ms, created_by)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
                 ON CONFLICT DO NOTHING",
                vals![
                    &new.agent,
                    &new.name,
                    new.kind.as_str(),
                    &new.spec,
                    &new.message,
                    new.next_fire.map(to_ms),
                    now_rfc3339(),
                    new.target.as_str(),
                    new.session_id.clone(),
                    new.max_fires,
                    new.expires_at.map(to_ms),
                    owner,
                ],
            )?;
            if inserted == 0 {
                return Err(StoreError::DuplicateSchedule {
                    agent: new.agent,
                    name: new.name,
                });
            }
            get(db, &new.agent, &new.name, None)?
                .ok_or_else(|| StoreError::Task("schedule vanished after insert".into()))
        })
        .await
    }

    /// The schedules of `agent` (every agent's for `None`), by agent then name.
    pub async fn list_schedules(&self, agent: Option<&str>) -> Result<Vec<Schedule>, StoreError> {
        self.list_owned_schedules(None, agent).await
    }

    /// As [`Store::list_schedules`], only those `owner` planted (`None`: whoever did).
    pub async fn list_owned_schedules(
        &self,
        owner: Option<&str>,
        agent: Option<&str>,
    ) -> Result<Vec<Schedule>, StoreError> {
        let agent = agent.map(str::to_string);
        let owner = owner.map(str::to_string);
        self.with_db(move |db| {
            let sql = format!(
                "SELECT {COLUMNS} FROM schedules WHERE (CAST(?1 AS TEXT) IS NULL OR agent = ?1)
                 AND (CAST(?2 AS TEXT) IS NULL OR COALESCE(created_by, agent) = ?2) ORDER BY agent, name"
            );
            query(db, &sql, vals![agent, owner])
        })
        .await
    }

    /// The schedule `agent` calls `name`, whoever planted it; `None` when there is none.
    pub async fn get_schedule(
        &self,
        agent: &str,
        name: &str,
    ) -> Result<Option<Schedule>, StoreError> {
        self.get_owned_schedule(None, agent, name).await
    }

    /// As [`Store::get_schedule`], `None` unless `owner` planted it (`None`: whoever did).
    pub async fn get_owned_schedule(
        &self,
        owner: Option<&str>,
        agent: &str,
        name: &str,
    ) -> Result<Option<Schedule>, StoreError> {
        let (agent, name) = (agent.to_string(), name.to_string());
        let owner = owner.map(str::to_string);
        self.with_db(move |db| get(db, &agent, &name, owner.as_deref()))
            .await
    }

    /// Applies `update`; returns the schedule as it now is, or `None` if there is no such one.
    pub async fn modify_schedule(
        &self,
        agent: &str,
        name: &str,
        update: ScheduleUpdate,
    ) -> Result<Option<Schedule>, StoreError> {
        self.modify_owned_schedule(None, agent, name, update).await
    }

    /// As [`Store::modify_schedule`], `None` unless `owner` planted it (`None`: whoever did).
    pub async fn modify_owned_schedule(
        &self,
        owner: Option<&str>,
        agent: &str,
        name: &str,
        update: ScheduleUpdate,
    ) -> Result<Option<Schedule>, StoreError> {
        let (agent, name) = (agent.to_string(), name.to_string());
        let owner = owner.map(str::to_string);
        let changed = self.with_db(move |db| in_tx(db, |tx| {
            let Some(mut s) = get(tx, &agent, &name, owner.as_deref())? else {
                return Ok(None);
            };
            s.kind = update.kind.unwrap_or(s.kind);
            s.spec = update.spec.unwrap_or(s.spec);
            s.message = update.message.unwrap_or(s.message);
            s.enabled = update.enabled.unwrap_or(s.enabled);
            s.next_fire = update.next_fire.unwrap_or(s.next_fire);
            s.target = update.target.unwrap_or(s.target);
            s.max_fires = update.max_fires.unwrap_or(s.max_fires);
            s.expires_at = update.expires_at.unwrap_or(s.expires_at);
            tx.execute(
                "UPDATE schedules SET kind = ?2, spec = ?3, message = ?4, enabled = ?5, next_fire_ms = ?6,
                        target = ?7, max_fires = ?8, expires_at_ms = ?9
                 WHERE id = ?1",
                vals![
                    s.id,
                    s.kind.as_str(),
                    &s.spec,
                    &s.message,
                    s.enabled,
                    s.next_fire.map(to_ms),
                    s.target.as_str(),
                    s.max_fires,
                    s.expires_at.map(to_ms)
                ],
            )?;
            Ok(Some(s))
        }))
        .await;
        if matches!(changed, Ok(Some(_))) {
            self.touch_schedules_marker();
        }
        changed
    }

    /// Removes a schedule; returns whether it existed.
    pub async fn remove_schedule(&self, agent: &str, name: &str) -> Result<bool, StoreError> {
        self.remove_owned_schedule(None, agent, name).await
    }

    /// As [`Store::remove_schedule`], only when `owner` planted it (`None`: whoever did).
    pub async fn remove_owned_schedule(
        &self,
        owner: Option<&str>,
        agent: &str,
        name: &str,
    ) -> Result<bool, StoreError> {
        let (agent, name) = (agent.to_string(), name.to_string());
        let owner = owner.map(str::to_string);
        let removed = self
            .with_db(move |db| {
                let n = db.execute(
                    "DELETE FROM schedules WHERE agent = ?1 AND name = ?2
                     AND (CAST(?3 AS TEXT) IS NULL OR COALESCE(created_by, agent) = ?3)",
                    vals![agent, name, owner],
                )?;
                Ok(n > 0)
            })
            .await;
        if matches!(removed, Ok(true)) {
            self.touch_schedules_marker();
        }
        removed
    }

    /// Enabled schedules whose next fire time is at or before `now`, earliest first.
    pub async fn due_schedules(&self, now: OffsetDateTime) -> Result<Vec<Schedule>, StoreError> {
        self.with_db(move |db| {
            let sql = format!(
                "SELECT {COLUMNS} FROM schedules
                 WHERE enabled = 1 AND next_fire_ms IS NOT NULL AND next_fire_ms <= ?1
                 ORDER BY next_fire_ms, id"
            );
            query(db, &sql, vals![to_ms(now)])
        })
        .await
    }

    /// The earliest next fire time of any enabled schedule: how long the engine may sleep.
    pub async fn next_fire(&self) -> Result<Option<OffsetDateTime>, StoreError> {
        self.with_db(|db| {
            let ms = db
                .query_opt(
                    "SELECT MIN(next_fire_ms) FROM schedules WHERE enabled = 1 AND next_fire_ms IS NOT NULL",
                    &[],
                )?
                .map(|r| r.opt_int(0))
                .transpose()?
                .flatten();
            Ok(ms.and_then(from_ms))
        })
        .await
    }

    /// Records that schedule `id` fired at `fired`, and when it fires next. `next: None`
    /// (a `once` schedule) disables it so it cannot fire twice.
    pub async fn record_fire(
        &self,
        id: i64,
        fired: OffsetDateTime,
        next: Option<OffsetDateTime>,
    ) -> Result<(), StoreError> {
        self.with_db(move |db| {
            db.execute(
                "UPDATE schedules SET last_fired_ms = ?2, next_fire_ms = ?3,
                        enabled = CASE WHEN CAST(?3 AS BIGINT) IS NULL THEN 0 ELSE enabled END
                 WHERE id = ?1",
                vals![id, to_ms(fired), next.map(to_ms)],
            )?;
            Ok(())
        })
        .await
    }
}

/// The name of the file [`Store::schedules_marker`] returns, beside the database.
pub const SCHEDULES_MARKER: &str = "schedules.changed";

pub(crate) fn to_ms(t: OffsetDateTime) -> i64 {
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX)
}

pub(crate) fn from_ms(ms: i64) -> Option<OffsetDateTime> {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000).ok()
}

/// `agent`'s schedule `name`, when `owner` (if given) planted it.
pub(crate) fn get(
    db: &mut dyn Db,
    agent: &str,
    name: &str,
    owner: Option<&str>,
) -> Result<Option<Schedule>, StoreError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM schedules WHERE agent = ?1 AND name = ?2
         AND (CAST(?3 AS TEXT) IS NULL OR COALESCE(created_by, agent) = ?3)"
    );
    db.query_opt(&sql, vals![agent, name, owner])?
        .map(|r| typed(&r))
        .transpose()
}

pub(crate) fn query(
    db: &mut dyn Db,
    sql: &str,
    args: &[crate::sql::Val],
) -> Result<Vec<Schedule>, StoreError> {
    db.query(sql, args)?.iter().map(typed).collect()
}

/// A row of [`COLUMNS`] as a schedule; a bad `kind` or `target` is a [`StoreError`].
pub(crate) fn typed(r: &Row) -> Result<Schedule, StoreError> {
    let kind = r.text(3)?;
    let target = r.text(10)?;
    Ok(Schedule {
        id: r.int(0)?,
        agent: r.text(1)?,
        name: r.text(2)?,
        kind: ScheduleKind::parse(&kind).ok_or(StoreError::BadValue {
            what: "schedule kind",
            value: kind,
        })?,
        spec: r.text(4)?,
        message: r.text(5)?,
        enabled: r.flag(6)?,
        next_fire: r.opt_int(7)?.and_then(from_ms),
        last_fired: r.opt_int(8)?.and_then(from_ms),
        created_at: r.text(9)?,
        target: Target::parse(&target).ok_or(StoreError::BadValue {
            what: "schedule target",
            value: target,
        })?,
        session_id: r.opt_text(11)?,
        max_fires: r.opt_u32(12)?,
        expires_at: r.opt_int(13)?.and_then(from_ms),
        fire_count: r.u32(14)?,
        lease_until: r.opt_int(15)?.and_then(from_ms),
        owner: r.text(16)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new(agent: &str, name: &str) -> NewSchedule {
        NewSchedule {
            agent: agent.into(),
            name: name.into(),
            kind: ScheduleKind::Cron,
            spec: "0 0 9 * * *".into(),
            message: "m".into(),
            next_fire: None,
            target: Target::Fresh,
            session_id: None,
            max_fires: None,
            expires_at: None,
        }
    }

    #[tokio::test]
    async fn only_the_planter_finds_changes_or_removes_a_schedule() {
        let store = Store::open_in_memory().unwrap();
        let own = store.add_schedule(new("bob", "own")).await.unwrap();
        assert_eq!(own.owner, "bob");
        let planted = store
            .add_owned_schedule(new("bob", "planted"), Some("alice"))
            .await
            .unwrap();
        assert_eq!(planted.owner, "alice");
        // An owner equal to the agent is stored as the agent's own.
        let same = store
            .add_owned_schedule(new("bob", "same"), Some("bob"))
            .await
            .unwrap();
        assert_eq!(same.owner, "bob");

        let names = |list: Vec<Schedule>| list.into_iter().map(|s| s.name).collect::<Vec<_>>();
        assert_eq!(
            names(
                store
                    .list_owned_schedules(Some("alice"), None)
                    .await
                    .unwrap()
            ),
            ["planted"]
        );
        assert_eq!(
            names(
                store
                    .list_owned_schedules(Some("bob"), Some("bob"))
                    .await
                    .unwrap()
            ),
            ["own", "same"]
        );
        assert_eq!(store.list_schedules(None).await.unwrap().len(), 3);

        assert!(store
            .get_owned_schedule(Some("alice"), "bob", "own")
            .await
            .unwrap()
            .is_none());
        let off = ScheduleUpdate {
            enabled: Some(false),
            ..ScheduleUpdate::default()
        };
        assert!(store
            .modify_owned_schedule(Some("alice"), "bob", "own", off.clone())
            .await
            .unwrap()
            .is_none());
        assert!(!store
            .remove_owned_schedule(Some("alice"), "bob", "own")
            .await
            .unwrap());
        assert!(
            store
                .get_schedule("bob", "own")
                .await
                .unwrap()
                .unwrap()
                .enabled
        );
        assert!(!store
            .remove_owned_schedule(Some("bob"), "bob", "planted")
            .await
            .unwrap());
        assert!(store
            .remove_owned_schedule(Some("alice"), "bob", "planted")
            .await
            .unwrap());
        // The operator (no owner) reaches every schedule.
        assert!(store
            .modify_owned_schedule(None, "bob", "own", off)
            .await
            .unwrap()
            .is_some());
    }
}
