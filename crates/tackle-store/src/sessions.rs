//! Sessions: append-only logs of what was said and done, numbered per session. They live
//! on the store's engine ([`Store::with_db`]): the SQLite file, or the PostgreSQL database
//! that several daemons share (`state_url: postgres://…`), so any daemon can take a
//! conversation's next turn (docs/scale-out.md).

use crate::error::StoreError;
use crate::identity::{entry_message, KeyCache};
use crate::sql::{in_tx, vals, Db, Row};
use crate::{now_rfc3339, Store};
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
    /// The id as text, as stored and shown.
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
    /// A user's message.
    User,
    /// A model's reply (text and any tool calls it asked for).
    Assistant,
    /// A tool call the model made, before its result.
    ToolCall,
    /// A tool's result as the model sees it (sanitized).
    ToolResult,
    /// A compaction summary: history before it is replaced by it when the loop resumes.
    Summary,
    /// A system message (instructions, or a note the runtime adds to the history).
    System,
}

impl EntryKind {
    /// The name stored in the `kind` column.
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

    /// The kind a stored `kind` column names; `None` for an unknown one.
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
    /// What sort of entry it is.
    pub kind: EntryKind,
    /// The content, in the caller's JSON shape.
    pub content: Value,
}

impl Entry {
    /// An entry of `kind` holding `content`.
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
    /// Row id, unique across sessions.
    pub id: i64,
    /// The session it belongs to.
    pub session_id: SessionId,
    /// 1, 2, 3, … within the session, in append order, without gaps.
    pub seq: i64,
    /// What sort of entry it is.
    pub kind: EntryKind,
    /// The content, in the caller's JSON shape.
    pub content: Value,
    /// RFC 3339 UTC.
    pub created_at: String,
}

/// A session as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionInfo {
    /// The session's id.
    pub id: SessionId,
    /// The agent it belongs to.
    pub agent: String,
    /// When it was created, RFC 3339 UTC.
    pub created_at: String,
    /// When the last entry was appended (or the session created).
    pub updated_at: String,
    /// How many entries it holds.
    pub entries: i64,
}

/// A session as `tackle sessions list` shows it: its times, how many messages it holds and
/// the start of its first user message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionSummary {
    /// The session's id.
    pub id: SessionId,
    /// The agent it belongs to.
    pub agent: String,
    /// When it was created, RFC 3339 UTC.
    pub created_at: String,
    /// When the last entry was appended (or the session created), RFC 3339 UTC.
    pub updated_at: String,
    /// Every entry, messages or not.
    pub entries: i64,
    /// User, assistant and tool-result entries.
    pub messages: i64,
    /// The first user message's text, cut to 200 characters.
    pub first_user_message: Option<String>,
}

impl Store {
    /// Whether sessions live in a database shared with other daemons.
    pub(crate) fn sessions_shared(&self) -> bool {
        #[cfg(feature = "postgres")]
        if self.shared.is_some() {
            return true;
        }
        false
    }

    /// Starts a new session for `agent`.
    pub async fn create_session(&self, agent: &str) -> Result<SessionId, StoreError> {
        let agent = agent.to_string();
        self.with_db(move |db| {
            let now = now_rfc3339();
            insert_new_session(db, &agent, &now)
        })
        .await
    }

    /// Creates the session `id` for `agent` unless it exists; returns whether it was created.
    /// For `--session NAME` naming a session that should start now.
    pub async fn ensure_session(&self, id: &SessionId, agent: &str) -> Result<bool, StoreError> {
        // Where a chosen id is first written: only ids the one rule accepts are ever stored.
        tackle_protocol::ids::check(tackle_protocol::ids::IdKind::Session, &id.0)?;
        let (id, agent) = (id.0.clone(), agent.to_string());
        self.with_db(move |db| {
            let n = db.execute(INSERT_SESSION, vals![id, agent, now_rfc3339()])?;
            Ok(n == 1)
        })
        .await
    }

    /// Whether a session with this id exists, on either engine.
    pub async fn session_exists(&self, id: &SessionId) -> Result<bool, StoreError> {
        let id = id.0.clone();
        self.with_db(move |db| exists(db, &id)).await
    }

    /// Appends `entry` as the session's next entry and returns it as stored.
    pub async fn append(
        &self,
        session: &SessionId,
        entry: Entry,
    ) -> Result<StoredEntry, StoreError> {
        let session = session.clone();
        let keys = self.agent_keys.clone();
        let shared = self.sessions_shared();
        self.with_db(move |db| append(db, &keys, shared, session, entry))
            .await
    }

    /// Every entry of the session, in order.
    pub async fn entries(&self, session: &SessionId) -> Result<Vec<StoredEntry>, StoreError> {
        let id = session.0.clone();
        self.with_db(move |db| {
            ensure_exists(db, &id)?;
            query_entries(db, &id, 0)
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
        self.with_db(move |db| {
            ensure_exists(db, &id)?;
            let from = db
                .query_opt(
                    "SELECT COALESCE(MAX(seq), 0) FROM entries WHERE session_id = ?1 AND kind = 'summary'",
                    vals![&id],
                )?
                .map(|r| r.int(0))
                .transpose()?
                .unwrap_or(0);
            query_entries(db, &id, from)
        })
        .await
    }

    /// All sessions, most recently active first.
    pub async fn list_sessions(&self) -> Result<Vec<SessionInfo>, StoreError> {
        self.with_db(|db| {
            db.query(
                "SELECT s.id, s.agent, s.created_at, s.updated_at,
                        (SELECT COUNT(*) FROM entries e WHERE e.session_id = s.id)
                 FROM sessions s ORDER BY s.updated_at DESC, s.rowid DESC",
                &[],
            )?
            .iter()
            .map(|r| {
                Ok(SessionInfo {
                    id: SessionId(r.text(0)?),
                    agent: r.text(1)?,
                    created_at: r.text(2)?,
                    updated_at: r.text(3)?,
                    entries: r.int(4)?,
                })
            })
            .collect()
        })
        .await
    }
}

impl Store {
    /// Every session with its message count and first user message, most recently active
    /// first.
    pub async fn session_summaries(&self) -> Result<Vec<SessionSummary>, StoreError> {
        self.with_db(|db| summaries(db, None)).await
    }

    /// One session's summary; [`StoreError::UnknownSession`] when there is none by that id.
    pub async fn session_summary(&self, id: &SessionId) -> Result<SessionSummary, StoreError> {
        let id = id.0.clone();
        self.with_db(move |db| {
            summaries(db, Some(&id))?
                .into_iter()
                .next()
                .ok_or(StoreError::UnknownSession(id))
        })
        .await
    }

    /// Deletes the session and every entry of it, in one transaction; returns how many
    /// entries went. The audit log keeps its records of the session's calls.
    pub async fn delete_session(&self, id: &SessionId) -> Result<usize, StoreError> {
        let id = id.0.clone();
        self.with_db(move |db| {
            in_tx(db, |tx| {
                ensure_exists(tx, &id)?;
                let entries =
                    tx.execute("DELETE FROM entries WHERE session_id = ?1", vals![&id])?;
                tx.execute("DELETE FROM session_links WHERE id = ?1", vals![&id])?;
                tx.execute("DELETE FROM sessions WHERE id = ?1", vals![&id])?;
                Ok(entries)
            })
        })
        .await
    }
}

/// A session row unless one has the id; `?3` is both its creation and its last activity.
pub(crate) const INSERT_SESSION: &str =
    "INSERT INTO sessions (id, agent, created_at, updated_at) VALUES (?1, ?2, ?3, ?3)
     ON CONFLICT (id) DO NOTHING";

/// A new session for `agent` under a fresh id (drawn again on the rare collision).
pub(crate) fn insert_new_session(
    db: &mut dyn Db,
    agent: &str,
    now: &str,
) -> Result<SessionId, StoreError> {
    loop {
        let id = SessionId::generate();
        if db.execute(INSERT_SESSION, vals![&id.0, agent, now])? == 1 {
            return Ok(id);
        }
    }
}

/// `?1` NULL lists every session, else only that one; the last column is the content of the
/// session's first `user` entry, from which the preview is taken (see [`preview`]). The text
/// of JSON is read here rather than in SQL, whose JSON functions differ between engines.
const SUMMARY_SQL: &str = "SELECT s.id, s.agent, s.created_at, s.updated_at,
        (SELECT COUNT(*) FROM entries e WHERE e.session_id = s.id),
        (SELECT COUNT(*) FROM entries e WHERE e.session_id = s.id
            AND e.kind IN ('user', 'assistant', 'tool_result')),
        (SELECT e.content FROM entries e
          WHERE e.session_id = s.id AND e.kind = 'user'
          ORDER BY e.seq LIMIT 1)
   FROM sessions s
  WHERE CAST(?1 AS TEXT) IS NULL OR s.id = ?1
  ORDER BY s.updated_at DESC, s.rowid DESC";

/// How many characters of the first user message a summary shows.
const PREVIEW_CHARS: usize = 200;

fn summaries(db: &mut dyn Db, only: Option<&str>) -> Result<Vec<SessionSummary>, StoreError> {
    let rows = db.query(SUMMARY_SQL, vals![only])?;
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        let id = r.text(0)?;
        let first = r.opt_text(6)?;
        let first_user_message = match first.as_deref().map(preview) {
            Some(Some(p)) => Some(p),
            // The first user entry has no text (parts only): a later one may.
            Some(None) => later_preview(db, &id)?,
            None => None,
        };
        out.push(summary_of(&r, id, first_user_message)?);
    }
    Ok(out)
}

fn summary_of(
    r: &Row,
    id: String,
    first_user_message: Option<String>,
) -> Result<SessionSummary, StoreError> {
    Ok(SessionSummary {
        id: SessionId(id),
        agent: r.text(1)?,
        created_at: r.text(2)?,
        updated_at: r.text(3)?,
        entries: r.int(4)?,
        messages: r.int(5)?,
        first_user_message,
    })
}

/// The first preview among the session's user entries.
fn later_preview(db: &mut dyn Db, id: &str) -> Result<Option<String>, StoreError> {
    Ok(db
        .query(
            "SELECT content FROM entries WHERE session_id = ?1 AND kind = 'user' ORDER BY seq",
            vals![id],
        )?
        .iter()
        .find_map(|r| r.opt_text(0).ok().flatten().as_deref().and_then(preview)))
}

/// The text of a user entry: a message's `content` or a plain entry's `text`, cut to
/// [`PREVIEW_CHARS`]. Content that is not a JSON object (which the store never writes) has
/// none rather than being an error.
fn preview(content: &str) -> Option<String> {
    let value: Value = serde_json::from_str(content).ok()?;
    let object = value.as_object()?;
    let text = match object.get("content") {
        Some(Value::String(t)) => t,
        _ => object.get("text")?.as_str()?,
    };
    Some(text.chars().take(PREVIEW_CHARS).collect())
}

fn exists(db: &mut dyn Db, id: &str) -> Result<bool, StoreError> {
    Ok(db
        .query_opt("SELECT 1 FROM sessions WHERE id = ?1", vals![id])?
        .is_some())
}

fn ensure_exists(db: &mut dyn Db, id: &str) -> Result<(), StoreError> {
    if exists(db, id)? {
        Ok(())
    } else {
        Err(StoreError::UnknownSession(id.to_string()))
    }
}

fn append(
    db: &mut dyn Db,
    keys: &KeyCache,
    shared: bool,
    session: SessionId,
    entry: Entry,
) -> Result<StoredEntry, StoreError> {
    // The next seq is read and written in one transaction that excludes every other writer
    // of this session: SQLite's IMMEDIATE lock; on PostgreSQL the session's row, locked.
    in_tx(db, |tx| {
        let lock = format!(
            "SELECT agent FROM sessions WHERE id = ?1{}",
            tx.for_update()
        );
        let agent = tx
            .query_opt(&lock, vals![&session.0])?
            .ok_or_else(|| StoreError::UnknownSession(session.0.clone()))?
            .text(0)?;
        let seq = tx
            .query_opt(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM entries WHERE session_id = ?1",
                vals![&session.0],
            )?
            .map(|r| r.int(0))
            .transpose()?
            .unwrap_or(1);
        let now = now_rfc3339();
        let signer = Signer { keys, shared };
        let id = insert_signed(tx, signer, &agent, &session.0, seq, &entry, &now)?;
        tx.execute(
            "UPDATE sessions SET updated_at = ?2 WHERE id = ?1",
            vals![&session.0, &now],
        )?;
        Ok(StoredEntry {
            id,
            session_id: session,
            seq,
            kind: entry.kind,
            content: entry.content,
            created_at: now,
        })
    })
}

/// The keys an entry is signed with, and whether their record is shared (several current
/// keys per agent, one per daemon).
#[derive(Clone, Copy)]
pub(crate) struct Signer<'k> {
    pub(crate) keys: &'k KeyCache,
    pub(crate) shared: bool,
}

/// Inserts `entry` at `seq`, signed with `agent`'s current key (the caller's transaction
/// excludes other writers of the session); returns its row id.
pub(crate) fn insert_signed(
    tx: &mut dyn Db,
    signer: Signer<'_>,
    agent: &str,
    session: &str,
    seq: i64,
    entry: &Entry,
    now: &str,
) -> Result<i64, StoreError> {
    let key = signer.keys.current(tx, agent, signer.shared)?;
    let kind = entry.kind.as_str();
    let content = entry.content.to_string();
    let signature = key.sign(&entry_message(session, seq, kind, now, &content, key.id()));
    tx.insert(
        "INSERT INTO entries (session_id, seq, kind, content, created_at, key_id, signature)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, unhex(?7))",
        vals![
            session,
            seq,
            kind,
            content,
            now,
            key.id(),
            crate::audit::hex(&signature)
        ],
    )
}

fn query_entries(db: &mut dyn Db, id: &str, from_seq: i64) -> Result<Vec<StoredEntry>, StoreError> {
    let rows = db.query(
        "SELECT id, seq, kind, content, created_at FROM entries
         WHERE session_id = ?1 AND seq >= ?2 ORDER BY seq",
        vals![id, from_seq],
    )?;
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        let entry_id = r.int(0)?;
        let kind = r.text(2)?;
        let kind = EntryKind::parse(&kind).ok_or(StoreError::BadValue {
            what: "entry kind",
            value: kind,
        })?;
        let content =
            serde_json::from_str(&r.text(3)?).map_err(|source| StoreError::BadContent {
                id: entry_id,
                source,
            })?;
        out.push(StoredEntry {
            id: entry_id,
            session_id: SessionId(id.to_string()),
            seq: r.int(1)?,
            kind,
            content,
            created_at: r.text(4)?,
        });
    }
    Ok(out)
}
