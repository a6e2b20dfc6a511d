//! Tackle's durable state in one SQLite file (`tackle.db` in the state directory): sessions
//! as append-only entry logs, the audit log of every tool decision, memory (each agent's own
//! and shared banks reached only through grants) with full-text search, long-term entries,
//! and schedules. Schema changes go through versioned migrations.
//!
//! [`Store`] is cheap to clone and safe to share across tasks; its async methods run the
//! SQLite work on tokio's blocking pool, so they never stall the runtime. The one exception
//! is the audit insert on every tool call: it runs in the calling task when SQLite's locks are
//! free at once, and goes to the pool otherwise (checkpoints, with their fsyncs, always do).
//! It is not a cache or a general key-value store, and it decides nothing: callers redact and
//! summarise what they write (the audit log keeps an argument *summary*, never full
//! arguments).
//!
//! ```
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! use tackle_store::{Entry, EntryKind, Store};
//! let store = Store::open_in_memory()?;
//! let session = store.create_session("default").await?;
//! store.append(&session, Entry::new(EntryKind::User, serde_json::json!({"text": "hi"}))).await?;
//! assert_eq!(store.entries(&session).await?.len(), 1);
//! # Ok::<(), tackle_store::StoreError>(()) }).unwrap();
//! ```

// Every public item says what it is for: undocumented API fails CI.
#![warn(missing_docs)]
// Outside tests, data from outside never panics the process: no unwrap, expect or panic.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod approvals;
mod audit;
mod checkpoint;
mod error;
mod fires;
mod identity;
mod inbox;
mod leases;
mod links;
mod longterm;
mod memory;
mod migrations;
mod perms;
#[cfg(feature = "postgres")]
mod pg;
mod pins;
mod presence;
pub mod private_file;
mod reminders;
mod schedules;
mod session_extensions;
mod session_lease;
mod session_taint;
mod session_verify;
mod sessions;
mod skills;
mod sql;

pub use approvals::{
    Approval, ApprovalReply, ApprovalStatus, NewApproval, APPROVALS_MARKER, PREVIEW_MAX_BYTES,
};
pub use audit::{
    hex, json_digest, text_digest, unhex, AuditDetail, AuditSigner, AuditVerification,
    ChainProblem, ExportedEntry, ARGUMENTS_MAX_BYTES, CHECKPOINT_EVERY, KEY_FILE,
};
pub use audit::{
    AuditEntry, AuditOutcome, AuditQuery, AuditRecord, AuditSince, IntentId,
    ARGS_SUMMARY_MAX_BYTES, INTERRUPTED, RUNNING,
};
pub use error::StoreError;
pub use fires::{Claimed, FireClaim, FireRecord, FireStatus};
pub use identity::{key_file, KeyRotation, KEYS_DIR};
pub use inbox::{ChannelState, InboxMessage, NewInboxMessage};
pub use links::SessionLink;
pub use longterm::{pinned_block, LongtermEntry, LongtermHit, LongtermSet, PINNED};
pub use memory::{
    check_bank_name, normalize_tags, BankListing, BankPerm, MemoryAccess, MemoryHit, RecallQuery,
    StoredGrant, MAX_KEY_CHARS, MAX_TAGS, MAX_TAG_CHARS, MAX_VALUE_BYTES, SELF_BANK,
};
pub use pins::ToolPin;
pub use presence::{Presence, CHATS_DIR, DAEMON_LOCK};
pub use reminders::{NewReminder, Reminder, ReminderStatus};
pub use schedules::{
    NewSchedule, Schedule, ScheduleKind, ScheduleUpdate, Target, SCHEDULES_MARKER,
};
pub use session_taint::TaintRecord;
pub use session_verify::{EntryFailure, EntryProblem, KeyAnchor, SessionVerification};
pub use sessions::{Entry, EntryKind, SessionId, SessionInfo, SessionSummary, StoredEntry};
pub use skills::{NewSkill, SavedSkill, StoredSkill, MAX_SKILLS_PER_PLACE, MAX_STORED_SKILL_BYTES};

use checkpoint::CheckpointDue;
use rusqlite::Connection;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// The file name inside the state directory.
pub const DB_FILE: &str = "tackle.db";

/// How long a write waits for another connection's lock before it fails.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// A handle on the state database. Clones share one connection.
#[derive(Clone)]
pub struct Store {
    /// Set once the database is open: at once by [`Store::open`], on first use by
    /// [`Store::open_deferred`].
    conn: Arc<OnceLock<Mutex<Connection>>>,
    /// Set by the connection when its log needs a checkpoint (see `checkpoint`).
    checkpoint: CheckpointDue,
    /// The audit chain's head as this connection last wrote it (see `audit::chain`).
    chain_head: audit::HeadCache,
    /// The agents' identity keys, loaded once, that sign session entries.
    agent_keys: identity::KeyCache,
    /// The state directory a deferred store opens its database in.
    deferred: Option<PathBuf>,
    path: Option<PathBuf>,
    /// Where schedules and their fires live when several daemons share them
    /// (`state_url: postgres://…`); `None`: in the SQLite file with everything else.
    #[cfg(feature = "postgres")]
    shared: Option<Arc<pg::Shared>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

impl Store {
    /// Opens (creating if needed) `state_dir/tackle.db`, in WAL mode, migrated to the latest
    /// schema. Blocks briefly; call it at start-up.
    ///
    /// A state directory it creates is `0700`; the database file is created `0600` before
    /// SQLite opens it, and an existing one (with its `-wal` and `-shm` files, which SQLite
    /// creates with the database's mode) is narrowed to `0600`. An existing directory keeps
    /// its mode (`tackle doctor` warns when others can reach it).
    pub fn open(state_dir: &Path) -> Result<Self, StoreError> {
        let checkpoint = CheckpointDue::default();
        let conn = open_file(state_dir, &checkpoint)?;
        Ok(Self {
            conn: Arc::new(OnceLock::from(Mutex::new(conn))),
            checkpoint,
            chain_head: audit::HeadCache::default(),
            agent_keys: identity::KeyCache::new(Some(state_dir.to_path_buf())),
            deferred: None,
            path: Some(state_dir.join(DB_FILE)),
            #[cfg(feature = "postgres")]
            shared: None,
        })
    }

    /// A store that opens (and creates, and migrates) `state_dir/tackle.db` only when it is
    /// first used, for commands that usually never touch it (`tackle tools list`). An open
    /// that fails is the error of that first use, and is tried again by the next.
    pub fn open_deferred(state_dir: &Path) -> Self {
        Self {
            conn: Arc::default(),
            checkpoint: CheckpointDue::default(),
            chain_head: audit::HeadCache::default(),
            agent_keys: identity::KeyCache::new(Some(state_dir.to_path_buf())),
            deferred: Some(state_dir.to_path_buf()),
            path: Some(state_dir.join(DB_FILE)),
            #[cfg(feature = "postgres")]
            shared: None,
        }
    }

    /// A private database that lives as long as the handle; for tests and dry runs.
    pub fn open_in_memory() -> Result<Self, StoreError> {
        let conn = prepare(Connection::open_in_memory()?)?;
        Ok(Self {
            conn: Arc::new(OnceLock::from(Mutex::new(conn))),
            checkpoint: CheckpointDue::default(),
            chain_head: audit::HeadCache::default(),
            agent_keys: identity::KeyCache::new(None),
            deferred: None,
            path: None,
            #[cfg(feature = "postgres")]
            shared: None,
        })
    }

    /// As [`Store::open`], with schedules and their fires in the database `state_url` names
    /// when it is a `postgres://` (or `postgresql://`) URL, shared with every daemon that
    /// names it; `sqlite://`, empty or `None` keep them in the file. Connects and migrates
    /// both: call it at start-up, off the async threads.
    pub fn open_with_url(state_dir: &Path, state_url: Option<&str>) -> Result<Self, StoreError> {
        match engine_of(state_url)? {
            Engine::Sqlite => Self::open(state_dir),
            Engine::Postgres(url) => Self::open_shared(state_dir, url),
        }
    }

    #[cfg(feature = "postgres")]
    fn open_shared(state_dir: &Path, url: &str) -> Result<Self, StoreError> {
        // The file first: a database that cannot be reached still leaves the state directory
        // made, so `tackle doctor` reports that one problem, not two.
        let mut store = Self::open(state_dir)?;
        let shared = pg::Shared::connect(url)?;
        // As `open_file` does for the file: this host's calls whose process died mid-run are
        // closed as interrupted (best effort: one that fails stays open for the next open).
        let db_path = store.path.clone();
        let _ = shared.run_blocking(move |db| audit::close_interrupted_shared(db, db_path));
        store.shared = Some(Arc::new(shared));
        Ok(store)
    }

    #[cfg(not(feature = "postgres"))]
    fn open_shared(_state_dir: &Path, _url: &str) -> Result<Self, StoreError> {
        Err(StoreError::StateUrl(
            "names PostgreSQL, and this build has no PostgreSQL support (build with the `postgres` feature)".into(),
        ))
    }

    /// Which engine holds the state daemons share: `sqlite` or `postgresql URL` (no
    /// password).
    pub fn state_engine(&self) -> String {
        #[cfg(feature = "postgres")]
        if let Some(shared) = &self.shared {
            return format!("postgresql {}", shared.shown());
        }
        "sqlite".to_string()
    }

    /// For a shared engine: the server's version and the shared schema's version (and the
    /// newest this build knows), asked now; `None` when everything is in the SQLite file.
    pub async fn shared_status(&self) -> Option<Result<SharedStatus, StoreError>> {
        #[cfg(feature = "postgres")]
        if let Some(shared) = self.shared.clone() {
            let asked = shared.status().await;
            return Some(asked.map(|(server, schema)| SharedStatus {
                server,
                schema,
                known: pg::latest_version(),
            }));
        }
        None
    }

    /// Whether schedules are shared with other processes through a server: a daemon then
    /// looks for changes it was not told about (another machine's) at least this often.
    pub fn shared_poll(&self) -> Option<Duration> {
        #[cfg(feature = "postgres")]
        if self.shared.is_some() {
            return Some(SHARED_POLL);
        }
        None
    }

    /// Runs `f` on the engine that holds schedules, off the async threads.
    async fn with_db<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut dyn sql::Db) -> Result<T, StoreError> + Send + 'static,
    {
        #[cfg(feature = "postgres")]
        if let Some(shared) = &self.shared {
            return shared.run(f).await;
        }
        self.with_conn(move |conn| f(&mut sql::Lite(conn))).await
    }

    /// The database file, or `None` for an in-memory store.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The database file and those of its `-wal` and `-shm` files that exist now; empty for
    /// an in-memory store.
    pub fn files(&self) -> Vec<PathBuf> {
        self.path
            .as_deref()
            .map(perms::db_files)
            .unwrap_or_default()
            .into_iter()
            .filter(|p| p.exists())
            .collect()
    }

    /// Whether the database is open: a deferred store opens at its first use.
    pub fn is_open(&self) -> bool {
        self.conn.get().is_some()
    }

    /// Runs `f` on the connection on the blocking pool.
    async fn with_conn<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let cell = Arc::clone(&self.conn);
        let deferred = self.deferred.clone();
        let checkpoint = self.checkpoint.clone();
        tokio::task::spawn_blocking(move || {
            let conn = match (cell.get(), deferred) {
                (Some(conn), _) => conn,
                (None, Some(state_dir)) => {
                    let opened = open_file(&state_dir, &checkpoint)?;
                    // Two first uses at once may both open; one connection is kept.
                    cell.get_or_init(|| Mutex::new(opened))
                }
                (None, None) => return Err(StoreError::Task("the store was never opened".into())),
            };
            let mut guard = lock(conn);
            let result = f(&mut guard);
            checkpoint.run_if_due(&guard);
            result
        })
        .await
        .map_err(|e| StoreError::Task(e.to_string()))?
    }

    /// Runs `f` on the connection in the calling task, for short writes on the path of every
    /// tool call: it saves the two thread hand-offs of [`Self::with_conn`]. Only when that
    /// cannot stall the task: the database is open, no other task holds the connection, and
    /// SQLite gets its locks at once (the busy timeout is off while `f` runs). `None` means
    /// `f` did not run or SQLite refused it as busy (nothing was written); the caller then
    /// goes through [`Self::with_conn`], which waits for the lock.
    fn try_inline<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, StoreError>,
    ) -> Option<Result<T, StoreError>> {
        let mut conn = self.conn.get()?.try_lock().ok()?;
        conn.busy_timeout(Duration::ZERO).ok()?;
        let result = f(&mut conn);
        if let Err(e) = conn.busy_timeout(BUSY_TIMEOUT) {
            return Some(Err(e.into()));
        }
        drop(conn);
        if self.checkpoint.is_due() {
            self.checkpoint_in_background();
        }
        match result {
            Err(StoreError::Sqlite(e)) if is_busy(&e) => None,
            other => Some(other),
        }
    }

    /// Runs a due checkpoint on the blocking pool, where its fsyncs hold no task's thread.
    /// Outside a runtime it waits for the next pooled operation.
    fn checkpoint_in_background(&self) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let cell = Arc::clone(&self.conn);
        let checkpoint = self.checkpoint.clone();
        runtime.spawn_blocking(move || {
            if let Some(conn) = cell.get() {
                checkpoint.run_if_due(&lock(conn));
            }
        });
    }
}

/// What a shared engine answered when asked ([`Store::shared_status`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedStatus {
    /// The server's version (`15.18 (Debian …)`).
    pub server: String,
    /// The shared schema's version.
    pub schema: i64,
    /// The newest shared schema version this build knows.
    pub known: i64,
}

/// How often a daemon over a shared engine re-reads the schedules even when nothing woke it:
/// a schedule added on another machine fires at most this late.
#[cfg(feature = "postgres")]
const SHARED_POLL: Duration = Duration::from_secs(1);

enum Engine<'u> {
    Sqlite,
    Postgres(&'u str),
}

/// The engine a `state_url` names.
fn engine_of(url: Option<&str>) -> Result<Engine<'_>, StoreError> {
    let Some(url) = url.map(str::trim).filter(|u| !u.is_empty()) else {
        return Ok(Engine::Sqlite);
    };
    let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
    match scheme.as_deref() {
        Some("postgres" | "postgresql") => Ok(Engine::Postgres(url)),
        Some("sqlite") => Ok(Engine::Sqlite),
        _ => Err(StoreError::StateUrl(
            "must start with postgres:// or postgresql:// (state shared in PostgreSQL) or sqlite:// (the file in state_dir, the default)".into(),
        )),
    }
}

/// The connection, locked. A panic while holding the lock cannot leave SQLite half-written
/// (transactions roll back on drop), so a poisoned lock is still safe to use.
fn lock(conn: &Mutex<Connection>) -> std::sync::MutexGuard<'_, Connection> {
    conn.lock().unwrap_or_else(|p| p.into_inner())
}

/// Another connection holds the lock this statement needs.
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// Opens (creating if needed) `state_dir/tackle.db`, in WAL mode, migrated to the latest schema.
fn open_file(state_dir: &Path, checkpoint: &CheckpointDue) -> Result<Connection, StoreError> {
    perms::create_private_dir(state_dir).map_err(|source| StoreError::StateDir {
        path: state_dir.to_path_buf(),
        source,
    })?;
    let path = state_dir.join(DB_FILE);
    perms::prepare_db_files(&path)?;
    let open_err = |source| StoreError::Open {
        path: path.clone(),
        source,
    };
    let mut conn = Connection::open(&path).map_err(open_err)?;
    // WAL lets readers (a second `tackle` process) work while the daemon writes.
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(open_err)?;
    checkpoint.watch(&mut conn).map_err(open_err)?;
    let conn = prepare(conn).map_err(|e| match e {
        StoreError::Sqlite(source) => StoreError::Open { path, source },
        other => other,
    })?;
    // Calls whose process died mid-run are closed as interrupted by the next process to
    // open the store. Best effort: one that fails here (the database busy past the timeout)
    // stays open for the next open to close.
    let _ = audit::close_interrupted(&conn);
    Ok(conn)
}

/// The connection settings every store has, and the schema migrated to the latest.
fn prepare(mut conn: Connection) -> Result<Connection, StoreError> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    migrations::migrate(&mut conn)?;
    Ok(conn)
}

/// Now, as RFC 3339 UTC with fixed microseconds (`2026-01-02T03:04:05.678901Z`), so text
/// order is time order.
pub(crate) fn now_rfc3339() -> String {
    format_ts(time::OffsetDateTime::now_utc())
}

/// `at` in UTC in the stored format of [`now_rfc3339`].
pub(crate) fn format_ts(at: time::OffsetDateTime) -> String {
    let at = at.to_offset(time::UtcOffset::UTC);
    let fmt = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]Z"
    );
    at.format(&fmt)
        .unwrap_or_else(|_| at.unix_timestamp().to_string())
}
