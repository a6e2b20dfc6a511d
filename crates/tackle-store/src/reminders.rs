//! Reminders: titled to-dos per agent with an optional due time. The store keeps the rows;
//! the `reminder` tool pairs a due one with a schedule that fires it.

use crate::error::StoreError;
use crate::schedules::{from_ms, to_ms};
use crate::{now_rfc3339, Store};
use rusqlite::{params, OptionalExtension};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReminderStatus {
    Pending,
    Done,
    Snoozed,
}

impl ReminderStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ReminderStatus::Pending => "pending",
            ReminderStatus::Done => "done",
            ReminderStatus::Snoozed => "snoozed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "pending" => ReminderStatus::Pending,
            "done" => ReminderStatus::Done,
            "snoozed" => ReminderStatus::Snoozed,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reminder {
    /// `r<n>`.
    pub id: String,
    pub title: String,
    pub description: String,
    pub category: String,
    #[serde(with = "time::serde::timestamp::milliseconds::option")]
    pub due_at: Option<OffsetDateTime>,
    pub recurrence: Option<String>,
    pub status: ReminderStatus,
    pub created_at: String,
}

/// A reminder to add.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewReminder {
    pub title: String,
    pub description: String,
    pub category: String,
    pub due_at: Option<OffsetDateTime>,
    pub recurrence: Option<String>,
}

const COLUMNS: &str = "n, title, description, category, due_ms, recurrence, status, created_at";

impl Store {
    /// Adds a reminder for `agent` under the next free `r<n>`.
    pub async fn add_reminder(
        &self,
        agent: &str,
        new: NewReminder,
    ) -> Result<Reminder, StoreError> {
        let agent = agent.to_string();
        self.with_conn(move |conn| {
            let tx = conn.transaction()?;
            let n: i64 = tx.query_row(
                "SELECT COALESCE(MAX(n), 0) + 1 FROM reminders WHERE agent = ?1",
                params![agent],
                |r| r.get(0),
            )?;
            tx.execute(
                "INSERT INTO reminders (agent, n, title, description, category, due_ms, recurrence, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    agent,
                    n,
                    new.title,
                    new.description,
                    new.category,
                    new.due_at.map(to_ms),
                    new.recurrence,
                    now_rfc3339()
                ],
            )?;
            let r = get(&tx, &agent, n)?.ok_or_else(|| StoreError::Task("reminder vanished".into()))?;
            tx.commit()?;
            Ok(r)
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
        self.with_conn(move |conn| {
            let sql = format!(
                "SELECT {COLUMNS} FROM reminders WHERE agent = ?1 AND (?2 IS NULL OR status = ?2)
                 AND (?3 IS NULL OR category = ?3) ORDER BY n"
            );
            let mut stmt = conn.prepare(&sql)?;
            let rows = stmt.query_map(params![agent, status.map(|s| s.as_str()), category], raw)?;
            rows.map(|r| typed(r?)).collect()
        })
        .await
    }

    pub async fn get_reminder(
        &self,
        agent: &str,
        id: &str,
    ) -> Result<Option<Reminder>, StoreError> {
        let agent = agent.to_string();
        let Some(n) = parse_id(id) else {
            return Ok(None);
        };
        self.with_conn(move |conn| get(conn, &agent, n)).await
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
        self.with_conn(move |conn| {
            let changed = conn.execute(
                "UPDATE reminders SET status = ?3, due_ms = COALESCE(?4, due_ms) WHERE agent = ?1 AND n = ?2",
                params![agent, n, status.as_str(), due.map(to_ms)],
            )?;
            Ok(changed > 0)
        })
        .await
    }

    pub async fn remove_reminder(&self, agent: &str, id: &str) -> Result<bool, StoreError> {
        let agent = agent.to_string();
        let Some(n) = parse_id(id) else {
            return Ok(false);
        };
        self.with_conn(move |conn| {
            let n = conn.execute(
                "DELETE FROM reminders WHERE agent = ?1 AND n = ?2",
                params![agent, n],
            )?;
            Ok(n > 0)
        })
        .await
    }
}

fn parse_id(id: &str) -> Option<i64> {
    id.trim().strip_prefix('r')?.parse().ok()
}

fn get(conn: &rusqlite::Connection, agent: &str, n: i64) -> Result<Option<Reminder>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM reminders WHERE agent = ?1 AND n = ?2");
    let row = conn.query_row(&sql, params![agent, n], raw).optional()?;
    row.map(typed).transpose()
}

type Raw = (Reminder, String);

fn raw(r: &rusqlite::Row<'_>) -> rusqlite::Result<Raw> {
    let n: i64 = r.get(0)?;
    Ok((
        Reminder {
            id: format!("r{n}"),
            title: r.get(1)?,
            description: r.get(2)?,
            category: r.get(3)?,
            due_at: r.get::<_, Option<i64>>(4)?.and_then(from_ms),
            recurrence: r.get(5)?,
            status: ReminderStatus::Pending,
            created_at: r.get(7)?,
        },
        r.get(6)?,
    ))
}

fn typed((mut rem, status): Raw) -> Result<Reminder, StoreError> {
    rem.status = ReminderStatus::parse(&status).ok_or(StoreError::BadValue {
        what: "reminder status",
        value: status,
    })?;
    Ok(rem)
}
