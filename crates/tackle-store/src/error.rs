//! What can go wrong with the state store.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot create the state directory {path}: {source}; set `state_dir` to a writable directory")]
    StateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("cannot create the state database {path}: {source}; set `state_dir` to a writable directory")]
    File {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("state database {path}: {source}")]
    Open {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },

    #[error("state database: {0}")]
    Sqlite(#[from] rusqlite::Error),

    #[error("state database is at schema version {found}, newer than this tackle knows ({known}); upgrade tackle or use another `state_dir`")]
    NewerSchema { found: i64, known: i64 },

    #[error("no session `{0}`; `tackle run` without --session starts a new one")]
    UnknownSession(String),

    #[error("stored entry {id} holds content that is not JSON: {source}")]
    BadContent {
        id: i64,
        #[source]
        source: serde_json::Error,
    },

    #[error("stored value `{value}` is not a known {what}")]
    BadValue { what: &'static str, value: String },

    #[error("agent `{agent}` already has a schedule named `{name}`; pick another name or modify that one")]
    DuplicateSchedule { agent: String, name: String },

    #[error("`{value}` is not a time: {why}; give an RFC 3339 time such as 2026-01-02T03:04:05Z")]
    BadTime { value: String, why: String },

    /// A bank this agent has no grant on (or that does not exist): the same answer either
    /// way, so a name reveals nothing.
    #[error("no memory bank {name:?} for this agent; its banks are: {}", .available.join(", "))]
    UnknownBank {
        name: String,
        available: Vec<String>,
    },

    #[error("memory bank {name:?} is granted read-only to this agent; ask the operator for write access (`memory_banks.{name}.write`)")]
    BankReadOnly { name: String },

    #[error("{name:?} is not a valid memory bank name: {why}")]
    InvalidBankName { name: String, why: String },

    #[error("{0}")]
    InvalidMemory(String),

    /// A session id, schedule id or bank name the one id rule refuses.
    #[error(transparent)]
    InvalidId(#[from] tackle_protocol::ids::InvalidId),

    /// A skill the store will not keep (empty name, too large, its place full).
    #[error("{0}")]
    InvalidSkill(String),

    #[error("this memory store has no room for more memories or banks")]
    ScopeFull,

    #[error("no approval `{0}`; `tackle approvals list` shows those pending")]
    UnknownApproval(String),

    /// The first answer won (or the deadline passed) before this one.
    #[error("approval {id} was already answered: {}{}", .status.as_str(), .by.as_deref().map(|b| format!(" by {b}")).unwrap_or_default())]
    AlreadyAnswered {
        id: String,
        status: crate::approvals::ApprovalStatus,
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
    Shared { url: String, why: String },

    /// A `state_url` this build cannot open.
    #[error("state_url {0}")]
    StateUrl(String),

    #[error("the state store's worker thread failed: {0}")]
    Task(String),
}
