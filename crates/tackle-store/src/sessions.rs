//! Sessions: append-only logs of what was said and done, numbered per session.

use crate::error::StoreError;
use crate::identity::{entry_message, KeyCache};
use crate::{now_rfc3339, Store};
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use tackle_protocol::message::{Message, Role};

/// A session's id, as users pass it to `--session`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SessionId(pub String);

impl SessionId {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A new id: the UTC start time (readable, sortable) and 32 random bits.
    pub(crate) fn generate() -> Self {
        let stamp = time::OffsetDateTime::now_utc();
        let mut h = RandomState::new().build_hasher();
        h.write_i128(stamp.unix_timestamp_nanos());
        let rand = h.finish() as u32;
        Self(format!(
            "{:04}{:02}{:02}-{:02}{:02}{:02}-{rand:08x}",
            stamp.year(),
            u8::from(stamp.month()),
            stamp.day(),
            stamp.hour(),
            stamp.minute(),
            stamp.second()
        ))
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for SessionId {
    fn from(s: &str) -> Self {
        Self(s.to_string())
    }
}

/// What an entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    User,
    Assistant,
    ToolCall,
    ToolResult,
    /// A compaction summary: history before it is replaced by it when the loop resumes.
    Summary,
    System,
}

impl EntryKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EntryKind::User => "user",
            EntryKind::Assistant => "assistant",
            EntryKind::ToolCall => "tool_call",
            EntryKind::ToolResult => "tool_result",
            EntryKind::Summary => "summary",
            EntryKind::System => "system",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "user" => EntryKind::User,
            "assistant" => EntryKind::Assistant,
            "tool_call" => EntryKind::ToolCall,
            "tool_result" => EntryKind::ToolResult,
            "summary" => EntryKind::Summary,
            "system" => EntryKind::System,
            _ => return None,
        })
    }
}

/// An entry to append: its kind and JSON content (the caller's shape, e.g. a `Message`).
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub kind: EntryKind,
    pub content: Value,
}

impl Entry {
    pub fn new(kind: EntryKind, content: Value) -> Self {
        Self { kind, content }
    }

    /// A conversation message stored as itself: kind from its role (`tool` → `tool_result`).
    pub fn message(message: &Message) -> Self {
        let kind = match message.role {
            Role::System => EntryKind::System,
            Role::User => EntryKind::User,
            Role::Assistant => EntryKind::Assistant,
            Role::Tool => EntryKind::ToolResult,
        };
        // A `Message` is plain data (strings, a JSON value); serialising it cannot fail.
        let content = serde_json::to_value(message).unwrap_or(Value::Null);
        Self { kind, content }
    }
}

impl StoredEntry {
    /// The message this entry holds, when it was stored with [`Entry::message`].
    pub fn message(&self) -> Option<Message> {
        serde_json::from_value(self.content.clone()).ok()
    }
}

/// An entry as stored, with its place in the session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredEntry {
    pub id: i64,
    pub session_id: SessionId,
    /// 1, 2, 3, … within the session, in append order, without gaps.
    pub seq: i64,
    pub kind: EntryKind,
    pub content: Value,
    /// RFC 3339 UTC.
    pub created_at: String,
}

/// A session as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionInfo {
    pub id: SessionId,
    pub agent: String,
    pub created_at: String,
    /// When the last entry was appended (or the session created).
    pub updated_at: String,
    pub entries: i64,
}

/// A session as `tackle sessions list` shows it: its times, how many messages it holds and
/// the start of its first user message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionSummary {
    pub id: SessionId,
    pub agent: String,
    pub created_at: String,
    pub updated_at: String,
    /// Every entry, messages or not.
    pub entries: i64,
    /// User, assistant and tool-result entries.
    pub messages: i64,
    /// The first user message's text, cut to 200 characters.
    pub first_user_message: Option<String>,
}

impl Store {
    /// Starts a new session for `agent`.
    pub async fn create_session(&self, agent: &str) -> Result<SessionId, StoreError> {
        let agent = agent.to_string();
        self.with_conn(move |conn| {
            loop {
                let id = SessionId::generate();
                let now = now_rfc3339();
                let inserted = conn.execute(
                    "INSERT OR IGNORE INTO sessions (id, agent, created_at, updated_at) VALUES (?1, ?2, ?3, ?3)",
                    params![id.0, agent, now],
                )?;
                if inserted == 1 {
                    return Ok(id);
                }
            }
        })
        .await
    }

    /// Creates the session `id` for `agent` unless it exists; returns whether it was created.
    /// For `--session NAME` naming a session that should start now.
    pub async fn ensure_session(&self, id: &SessionId, agent: &str) -> Result<bool, StoreError> {
        // Where a chosen id is first written: only ids the one rule accepts are ever stored.
        tackle_protocol::ids::check(tackle_protocol::ids::IdKind::Session, &id.0)?;
        let (id, agent) = (id.0.clone(), agent.to_string());
        self.with_conn(move |conn| {
            let n = conn.execute(
                "INSERT OR IGNORE INTO sessions (id, agent, created_at, updated_at) VALUES (?1, ?2, ?3, ?3)",
                params![id, agent, now_rfc3339()],
            )?;
            Ok(n == 1)
        })
        .await
    }

    pub async fn session_exists(&self, id: &SessionId) -> Result<bool, StoreError> {
        let id = id.0.clone();
        self.with_conn(move |conn| exists(conn, &id)).await
    }

    /// Appends `entry` as the session's next entry and returns it as stored.
    pub async fn append(
        &self,
        session: &SessionId,
        entry: Entry,
    ) -> Result<StoredEntry, StoreError> {
        let session = session.clone();
        let keys = self.agent_keys.clone();
        self.with_conn(move |conn| append(conn, &keys, session, entry))
            .await
    }

    /// Every entry of the session, in order.
    pub async fn entries(&self, session: &SessionId) -> Result<Vec<StoredEntry>, StoreError> {
        let id = session.0.clone();
        self.with_conn(move |conn| {
            ensure_exists(conn, &id)?;
            query_entries(conn, &id, 0)
        })
        .await
    }

    /// The latest `summary` entry and everything after it; every entry when there is no
    /// summary. This is what the loop replays to resume a compacted session.
    pub async fn entries_since_last_summary(
        &self,
        session: &SessionId,
    ) -> Result<Vec<StoredEntry>, StoreError> {
        let id = session.0.clone();
        self.with_conn(move |conn| {
            ensure_exists(conn, &id)?;
            let from: i64 = conn.query_row(
                "SELECT COALESCE(MAX(seq), 0) FROM entries WHERE session_id = ?1 AND kind = 'summary'",
                [&id],
                |r| r.get(0),
            )?;
            query_entries(conn, &id, from)
        })
        .await
    }

    /// All sessions, most recently active first.
    pub async fn list_sessions(&self) -> Result<Vec<SessionInfo>, StoreError> {
        self.with_conn(|conn| {
            let mut stmt = conn.prepare(
                "SELECT s.id, s.agent, s.created_at, s.updated_at,
                        (SELECT COUNT(*) FROM entries e WHERE e.session_id = s.id)
                 FROM sessions s ORDER BY s.updated_at DESC, s.rowid DESC",
            )?;
            let rows = stmt.query_map([], |r| {
                Ok(SessionInfo {
                    id: SessionId(r.get(0)?),
                    agent: r.get(1)?,
                    created_at: r.get(2)?,
                    updated_at: r.get(3)?,
                    entries: r.get(4)?,
                })
            })?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
        .await
    }
}

impl Store {
    /// Every session with its message count and first user message, most recently active
    /// first.
    pub async fn session_summaries(&self) -> Result<Vec<SessionSummary>, StoreError> {
        self.with_conn(|conn| {
            let mut stmt = conn.prepare(SUMMARY_SQL)?;
            let rows = stmt.query_map(params![None::<String>], summary_row)?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
        .await
    }

    /// One session's summary; [`StoreError::UnknownSession`] when there is none by that id.
    pub async fn session_summary(&self, id: &SessionId) -> Result<SessionSummary, StoreError> {
        let id = id.0.clone();
        self.with_conn(move |conn| {
            let mut stmt = conn.prepare(SUMMARY_SQL)?;
            stmt.query_row(params![Some(&id)], summary_row)
                .optional()?
                .ok_or(StoreError::UnknownSession(id))
        })
        .await
    }

    /// Deletes the session and every entry of it, in one transaction; returns how many
    /// entries went. The audit log keeps its records of the session's calls.
    pub async fn delete_session(&self, id: &SessionId) -> Result<usize, StoreError> {
        let id = id.0.clone();
        self.with_conn(move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            ensure_exists(&tx, &id)?;
            let entries = tx.execute("DELETE FROM entries WHERE session_id = ?1", [&id])?;
            tx.execute("DELETE FROM session_links WHERE id = ?1", [&id])?;
            tx.execute("DELETE FROM sessions WHERE id = ?1", [&id])?;
            tx.commit()?;
            Ok(entries)
        })
        .await
    }
}

/// `?1` NULL lists every session, else only that one. The preview is the text of the first
/// `user` entry that has one: a message's `content` or a plain entry's `text`. Content that is
/// not a JSON object (which the store never writes) is skipped rather than an error.
const SUMMARY_SQL: &str = "SELECT s.id, s.agent, s.created_at, s.updated_at,
        (SELECT COUNT(*) FROM entries e WHERE e.session_id = s.id),
        (SELECT COUNT(*) FROM entries e WHERE e.session_id = s.id
            AND e.kind IN ('user', 'assistant', 'tool_result')),
        (SELECT substr(CASE WHEN json_type(e.content, '$.content') = 'text'
                            THEN json_extract(e.content, '$.content')
                            ELSE json_extract(e.content, '$.text') END, 1, 200)
           FROM entries e
          WHERE e.session_id = s.id AND e.kind = 'user'
            AND json_valid(e.content) AND json_type(e.content) = 'object'
            AND (json_type(e.content, '$.content') = 'text'
                 OR json_type(e.content, '$.text') = 'text')
          ORDER BY e.seq LIMIT 1)
   FROM sessions s
  WHERE ?1 IS NULL OR s.id = ?1
  ORDER BY s.updated_at DESC, s.rowid DESC";

fn summary_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<SessionSummary> {
    let preview = match r.get_ref(6)? {
        rusqlite::types::ValueRef::Text(t) => Some(String::from_utf8_lossy(t).into_owned()),
        _ => None,
    };
    Ok(SessionSummary {
        id: SessionId(r.get(0)?),
        agent: r.get(1)?,
        created_at: r.get(2)?,
        updated_at: r.get(3)?,
        entries: r.get(4)?,
        messages: r.get(5)?,
        first_user_message: preview,
    })
}

fn exists(conn: &Connection, id: &str) -> Result<bool, StoreError> {
    Ok(conn
        .query_row("SELECT 1 FROM sessions WHERE id = ?1", [id], |_| Ok(()))
        .optional()?
        .is_some())
}

fn ensure_exists(conn: &Connection, id: &str) -> Result<(), StoreError> {
    if exists(conn, id)? {
        Ok(())
    } else {
        Err(StoreError::UnknownSession(id.to_string()))
    }
}

fn append(
    conn: &mut Connection,
    keys: &KeyCache,
    session: SessionId,
    entry: Entry,
) -> Result<StoredEntry, StoreError> {
    // IMMEDIATE: the next seq is read and written under one write lock, even when another
    // process appends to the same database.
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let agent: String = tx
        .prepare_cached("SELECT agent FROM sessions WHERE id = ?1")?
        .query_row([&session.0], |r| r.get(0))
        .optional()?
        .ok_or_else(|| StoreError::UnknownSession(session.0.clone()))?;
    let seq: i64 = tx.query_row(
        "SELECT COALESCE(MAX(seq), 0) + 1 FROM entries WHERE session_id = ?1",
        [&session.0],
        |r| r.get(0),
    )?;
    let now = now_rfc3339();
    let id = insert_signed(&tx, keys, &agent, &session.0, seq, &entry, &now)?;
    tx.execute(
        "UPDATE sessions SET updated_at = ?2 WHERE id = ?1",
        params![session.0, now],
    )?;
    tx.commit()?;
    Ok(StoredEntry {
        id,
        session_id: session,
        seq,
        kind: entry.kind,
        content: entry.content,
        created_at: now,
    })
}

/// Inserts `entry` at `seq`, signed with `agent`'s current key (the caller's transaction
/// holds the write lock); returns its row id.
pub(crate) fn insert_signed(
    tx: &Connection,
    keys: &KeyCache,
    agent: &str,
    session: &str,
    seq: i64,
    entry: &Entry,
    now: &str,
) -> Result<i64, StoreError> {
    let key = keys.current(tx, agent)?;
    let kind = entry.kind.as_str();
    let content = entry.content.to_string();
    let signature = key.sign(&entry_message(session, seq, kind, now, &content, key.id()));
    tx.prepare_cached(
        "INSERT INTO entries (session_id, seq, kind, content, created_at, key_id, signature)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        session,
        seq,
        kind,
        content,
        now,
        key.id(),
        signature
    ])?;
    Ok(tx.last_insert_rowid())
}

fn query_entries(
    conn: &Connection,
    id: &str,
    from_seq: i64,
) -> Result<Vec<StoredEntry>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT id, seq, kind, content, created_at FROM entries
         WHERE session_id = ?1 AND seq >= ?2 ORDER BY seq",
    )?;
    let rows = stmt.query_map(params![id, from_seq], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, i64>(1)?,
            r.get::<_, String>(2)?,
            r.get::<_, String>(3)?,
            r.get::<_, String>(4)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (entry_id, seq, kind, content, created_at) = row?;
        let kind = EntryKind::parse(&kind).ok_or(StoreError::BadValue {
            what: "entry kind",
            value: kind,
        })?;
        let content = serde_json::from_str(&content).map_err(|source| StoreError::BadContent {
            id: entry_id,
            source,
        })?;
        out.push(StoredEntry {
            id: entry_id,
            session_id: SessionId(id.to_string()),
            seq,
            kind,
            content,
            created_at,
        });
    }
    Ok(out)
}
