//! Reminders: titled to-dos per agent with an optional due time. The store keeps the rows;
//! the `reminder` tool pairs a due one with a schedule that fires it.

use crate::error::StoreError;
use crate::schedules::{from_ms, to_ms};
use crate::sql::{in_tx, vals, Db, Row};
use crate::{now_rfc3339, Store};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// Where a reminder stands; only `pending` ones are shown as open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReminderStatus {
    /// Open, waiting for its due time (or for no time at all).
    Pending,
    /// Done; kept for the record until removed.
    Done,
    /// Put off: open again at its new due time.
    Snoozed,
}

impl ReminderStatus {
    /// The name stored in the `status` column and taken by the `reminder` tool.
    pub fn as_str(self) -> &'static str {
        match self {
            ReminderStatus::Pending => "pending",
            ReminderStatus::Done => "done",
            ReminderStatus::Snoozed => "snoozed",
        }
    }

    /// The status a stored or given name means; `None` for an unknown one.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "pending" => ReminderStatus::Pending,
            "done" => ReminderStatus::Done,
            "snoozed" => ReminderStatus::Snoozed,
            _ => return None,
        })
    }
}

/// A stored reminder, addressed by its per-agent id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reminder {
    /// `r<n>`.
    pub id: String,
    /// One-line title.
    pub title: String,
    /// Free text; empty when none was given.
    pub description: String,
    /// Grouping label (`general` unless the agent names one).
    pub category: String,
    /// When it is due (`None`: no due time).
    #[serde(with = "time::serde::timestamp::milliseconds::option")]
    pub due_at: Option<OffsetDateTime>,
    /// The cron expression it repeats on (`None`: it does not repeat).
    pub recurrence: Option<String>,
    /// Where it stands.
    pub status: ReminderStatus,
    /// When it was added, RFC 3339 UTC.
    pub created_at: String,
}

/// A reminder to add.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewReminder {
    /// One-line title.
    pub title: String,
    /// Free text; may be empty.
    pub description: String,
    /// Grouping label; the `reminder` tool gives `general` when the agent names none.
    pub category: String,
    /// When it is due (`None`: no due time).
    pub due_at: Option<OffsetDateTime>,
    /// The cron expression it repeats on (`None`: it does not repeat).
    pub recurrence: Option<String>,
}

/// How often an add races another daemon for a number before it gives up.
const ADD_TRIES: u32 = 8;

const COLUMNS: &str = "n, title, description, category, due_ms, recurrence, status, created_at";

impl Store {
    /// Adds a reminder for `agent` under the next free `r<n>`. Two daemons adding at once
    /// over a shared engine: the loser of the key (agent, n) fails its insert and tries
    /// again with the next number (up to [`ADD_TRIES`] times).
    pub async fn add_reminder(
        &self,
        agent: &str,
        new: NewReminder,
    ) -> Result<Reminder, StoreError> {
        let agent = agent.to_string();
        self.with_db(move |db| {
            let mut tries = 0;
            loop {
                let added = in_tx(db, |db| {
                    let n = db
                        .query_opt(
                            "SELECT COALESCE(MAX(n), 0) + 1 FROM reminders WHERE agent = ?1",
                            vals![&agent],
                        )?
                        .map(|r| r.int(0))
                        .transpose()?
                        .unwrap_or(1);
                    db.execute(
                        "INSERT INTO reminders (agent, n, title, description, category, due_ms, recurrence, created_at)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                        vals![
                            &agent,
                            n,
                            &new.title,
                            &new.description,
                            &new.category,
                            new.due_at.map(to_ms),
                            new.recurrence.clone(),
                            now_rfc3339()
                        ],
                    )?;
                    get(db, &agent, n)?
                        .ok_or_else(|| StoreError::Task("reminder vanished".into()))
                });
                match added {
                    Err(e) if tries + 1 < ADD_TRIES && !matches!(e, StoreError::Task(_)) => {
                        tries += 1;
                    }
                    other => return other,
                }
            }
        })
        .await
    }

    /// `agent`'s reminders, oldest first, optionally of one status and category.
    pub async fn list_reminders(
        &self,
        agent: &str,
        status: Option<ReminderStatus>,
        category: Option<&str>,
    ) -> Result<Vec<Reminder>, StoreError> {
        let agent = agent.to_string();
        let category = category.map(str::to_string);
        self.with_db(move |db| {
            let sql = format!(
                "SELECT {COLUMNS} FROM reminders WHERE agent = ?1
                 AND (CAST(?2 AS TEXT) IS NULL OR status = ?2)
                 AND (CAST(?3 AS TEXT) IS NULL OR category = ?3) ORDER BY n"
            );
            db.query(&sql, vals![agent, status.map(|s| s.as_str()), category])?
                .iter()
                .map(typed)
                .collect()
        })
        .await
    }

    /// `agent`'s reminder `r<n>`; `None` when there is none or `id` is not of that form.
    pub async fn get_reminder(
        &self,
        agent: &str,
        id: &str,
    ) -> Result<Option<Reminder>, StoreError> {
        let agent = agent.to_string();
        let Some(n) = parse_id(id) else {
            return Ok(None);
        };
        self.with_db(move |db| get(db, &agent, n)).await
    }

    /// Sets the status (and, with `due`, the due time); `false` when there is no such one.
    pub async fn update_reminder(
        &self,
        agent: &str,
        id: &str,
        status: ReminderStatus,
        due: Option<OffsetDateTime>,
    ) -> Result<bool, StoreError> {
        let agent = agent.to_string();
        let Some(n) = parse_id(id) else {
            return Ok(false);
        };
        self.with_db(move |db| {
            let changed = db.execute(
                "UPDATE reminders SET status = ?3, due_ms = COALESCE(?4, due_ms) WHERE agent = ?1 AND n = ?2",
                vals![agent, n, status.as_str(), due.map(to_ms)],
            )?;
            Ok(changed > 0)
        })
        .await
    }

    /// Deletes `agent`'s reminder `r<n>`; `false` when there was none.
    pub async fn remove_reminder(&self, agent: &str, id: &str) -> Result<bool, StoreError> {
        let agent = agent.to_string();
        let Some(n) = parse_id(id) else {
            return Ok(false);
        };
        self.with_db(move |db| {
            let n = db.execute(
                "DELETE FROM reminders WHERE agent = ?1 AND n = ?2",
                vals![agent, n],
            )?;
            Ok(n > 0)
        })
        .await
    }
}

fn parse_id(id: &str) -> Option<i64> {
    id.trim().strip_prefix('r')?.parse().ok()
}

fn get(db: &mut dyn Db, agent: &str, n: i64) -> Result<Option<Reminder>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM reminders WHERE agent = ?1 AND n = ?2");
    db.query_opt(&sql, vals![agent, n])?
        .as_ref()
        .map(typed)
        .transpose()
}

/// A row in the order of [`COLUMNS`].
fn typed(r: &Row) -> Result<Reminder, StoreError> {
    let status = r.text(6)?;
    Ok(Reminder {
        id: format!("r{}", r.int(0)?),
        title: r.text(1)?,
        description: r.text(2)?,
        category: r.text(3)?,
        due_at: r.opt_int(4)?.and_then(from_ms),
        recurrence: r.opt_text(5)?,
        status: ReminderStatus::parse(&status).ok_or(StoreError::BadValue {
            what: "reminder status",
            value: status,
        })?,
        created_at: r.text(7)?,
    })
}
