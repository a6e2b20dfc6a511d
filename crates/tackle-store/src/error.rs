//! What can go wrong with the state store.

use std::path::PathBuf;

/// Every failure of a [`Store`](crate::Store) operation, on either engine; the message says
/// what the operator can do about it.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The state directory does not exist and cannot be created.
    #[error("cannot create the state directory {path}: {source}; set `state_dir` to a writable directory")]
    StateDir {
        /// The state directory.
        path: PathBuf,
        /// Why creating it failed.
        #[source]
        source: std::io::Error,
    },

    /// The database file cannot be created (it is created `0600` before SQLite opens it).
    #[error("cannot create the state database {path}: {source}; set `state_dir` to a writable directory")]
    File {
        /// The file concerned.
        path: PathBuf,
        /// Why creating or narrowing it failed.
        #[source]
        source: std::io::Error,
    },

    /// SQLite cannot open, configure or migrate the database file.
    #[error("state database {path}: {source}")]
    Open {
        /// The database file.
        path: PathBuf,
        /// SQLite's refusal.
        #[source]
        source: rusqlite::Error,
    },

    /// A statement on the SQLite file failed (busy past the 5 s timeout, disk full, corrupt).
    #[error("state database: {0}")]
    Sqlite(#[from] rusqlite::Error),

    #[error("state database is at schema version {found}, newer than this tackle knows ({known}); upgrade tackle or use another `state_dir`")]
    /// The file was migrated by a newer build; this one refuses it rather than misread it.
    NewerSchema {
        /// The schema version stored in the file.
        found: i64,
        /// The newest schema version this build knows.
        known: i64,
    },

    /// No session has this id.
    #[error("no session `{0}`; `tackle run` without --session starts a new one")]
    UnknownSession(String),

    #[error("stored entry {id} holds content that is not JSON: {source}")]
    /// A stored entry's content does not parse as JSON: the row was written outside Tackle.
    BadContent {
        /// The entry's row id.
        id: i64,
        /// The parse error.
        #[source]
        source: serde_json::Error,
    },

    #[error("stored value `{value}` is not a known {what}")]
    /// A stored enum column holds a value this build does not know (a newer build wrote it,
    /// or the file was edited).
    BadValue {
        /// Which kind of value (`schedule kind`, `approval status`, …).
        what: &'static str,
        /// The stored text.
        value: String,
    },

    #[error("agent `{agent}` already has a schedule named `{name}`; pick another name or modify that one")]
    /// Schedule names are unique per agent.
    DuplicateSchedule {
        /// The agent that owns both schedules.
        agent: String,
        /// The name already taken.
        name: String,
    },

    #[error("`{value}` is not a time: {why}; give an RFC 3339 time such as 2026-01-02T03:04:05Z")]
    /// A time given (or stored) is not RFC 3339.
    BadTime {
        /// The text given.
        value: String,
        /// The parser's complaint.
        why: String,
    },

    /// A bank this agent has no grant on (or that does not exist): the same answer either
    /// way, so a name reveals nothing.
    #[error("no memory bank {name:?} for this agent; its banks are: {}", .available.join(", "))]
    UnknownBank {
        /// The bank asked for.
        name: String,
        /// The banks this agent may use, for the message.
        available: Vec<String>,
    },

    #[error("memory bank {name:?} is granted read-only to this agent; ask the operator for write access (`memory_banks.{name}.write`)")]
    /// A write to a bank this agent is granted only read on.
    BankReadOnly {
        /// The bank written to.
        name: String,
    },

    #[error("{name:?} is not a valid memory bank name: {why}")]
    /// A bank name [`check_bank_name`](crate::check_bank_name) refuses.
    InvalidBankName {
        /// The name given.
        name: String,
        /// Which rule it breaks.
        why: String,
    },

    /// A memory or long-term entry the store refuses (empty key, over a size or tag limit); the
    /// text says why.
    #[error("{0}")]
    InvalidMemory(String),

    /// A session id, schedule id or bank name the one id rule refuses.
    #[error(transparent)]
    InvalidId(#[from] tackle_protocol::ids::InvalidId),

    /// A skill the store will not keep (empty name, too large, its place full).
    #[error("{0}")]
    InvalidSkill(String),

    /// The store holds its maximum of memories or banks; delete some before writing more.
    #[error("this memory store has no room for more memories or banks")]
    ScopeFull,

    /// No approval has this id.
    #[error("no approval `{0}`; `tackle approvals list` shows those pending")]
    UnknownApproval(String),

    /// The first answer won (or the deadline passed) before this one.
    #[error("approval {id} was already answered: {}{}", .status.as_str(), .by.as_deref().map(|b| format!(" by {b}")).unwrap_or_default())]
    AlreadyAnswered {
        /// The approval's id.
        id: String,
        /// How it was settled.
        status: crate::approvals::ApprovalStatus,
        /// Who answered it, when someone did (not for an expiry).
        by: Option<String>,
    },

    /// The audit chain's signing key cannot be read or made.
    #[error("audit key: {0}")]
    AuditKey(String),

    /// An agent's identity key (which signs its session entries) cannot be read, made or
    /// rotated.
    #[error("agent identity key: {0}")]
    AgentKey(String),

    /// The shared database (`state_url: postgres://…`) refused or could not be reached.
    #[error("shared state database {url}: {why}")]
    Shared {
        /// The URL, without its password.
        url: String,
        /// The server's or driver's complaint.
        why: String,
    },

    /// A `state_url` this build cannot open.
    #[error("state_url {0}")]
    StateUrl(String),

    /// The thread running a query panicked, was cancelled or could not start, or a row just
    /// written could not be read back.
    #[error("the state store's worker thread failed: {0}")]
    Task(String),
}
