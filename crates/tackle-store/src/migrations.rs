//! Versioned schema migrations. Each runs once, in order, inside a transaction, and is
//! recorded in `schema_migrations`. Never edit a shipped migration: add the next one.

use crate::error::StoreError;
use rusqlite::{params, Connection, TransactionBehavior};

/// `(version, SQL)`.
const MIGRATIONS: &[(i64, &str)] = &[
    (
        1,
        "CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            agent TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );
        CREATE TABLE entries (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT NOT NULL REFERENCES sessions(id),
            seq INTEGER NOT NULL,
            kind TEXT NOT NULL,
            content TEXT NOT NULL,
            created_at TEXT NOT NULL,
            UNIQUE (session_id, seq)
        );
        CREATE INDEX entries_by_kind ON entries (session_id, kind, seq);",
    ),
    (
        2,
        "CREATE TABLE audit (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            ts TEXT NOT NULL,
            session_id TEXT,
            agent TEXT NOT NULL,
            tool TEXT NOT NULL,
            args_summary TEXT NOT NULL,
            verdict TEXT NOT NULL,
            rule TEXT NOT NULL,
            why TEXT NOT NULL,
            approver TEXT,
            outcome TEXT NOT NULL,
            duration_ms INTEGER
        );",
    ),
    (
        3,
        "CREATE TABLE memory (
            bank TEXT NOT NULL,
            key TEXT NOT NULL,
            value TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (bank, key)
        );
        CREATE VIRTUAL TABLE memory_fts USING fts5(
            key, value, content='memory', content_rowid='rowid', tokenize='unicode61'
        );
        CREATE TRIGGER memory_ai AFTER INSERT ON memory BEGIN
            INSERT INTO memory_fts(rowid, key, value) VALUES (new.rowid, new.key, new.value);
        END;
        CREATE TRIGGER memory_ad AFTER DELETE ON memory BEGIN
            INSERT INTO memory_fts(memory_fts, rowid, key, value) VALUES ('delete', old.rowid, old.key, old.value);
        END;
        CREATE TRIGGER memory_au AFTER UPDATE ON memory BEGIN
            INSERT INTO memory_fts(memory_fts, rowid, key, value) VALUES ('delete', old.rowid, old.key, old.value);
            INSERT INTO memory_fts(rowid, key, value) VALUES (new.rowid, new.key, new.value);
        END;",
    ),
    (
        4,
        "CREATE TABLE schedules (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            agent TEXT NOT NULL,
            name TEXT NOT NULL,
            kind TEXT NOT NULL,
            spec TEXT NOT NULL,
            message TEXT NOT NULL,
            enabled INTEGER NOT NULL DEFAULT 1,
            next_fire_ms INTEGER,
            last_fired_ms INTEGER,
            created_at TEXT NOT NULL,
            UNIQUE (agent, name)
        );
        CREATE INDEX schedules_due ON schedules (enabled, next_fire_ms);",
    ),
];

/// The newest schema version this build knows.
pub(crate) fn latest() -> i64 {
    MIGRATIONS.last().map(|(v, _)| *v).unwrap_or(0)
}

pub(crate) fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS schema_migrations (
            version INTEGER PRIMARY KEY,
            applied_at TEXT NOT NULL
        );",
    )?;
    let current: i64 = conn.query_row(
        "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
        [],
        |r| r.get(0),
    )?;
    if current > latest() {
        return Err(StoreError::NewerSchema {
            found: current,
            known: latest(),
        });
    }
    for (version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > current) {
        // IMMEDIATE takes the write lock first, so two processes opening a fresh database
        // at once apply each migration exactly once.
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let applied: bool = tx.query_row(
            "SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = ?1)",
            [version],
            |r| r.get(0),
        )?;
        if !applied {
            tx.execute_batch(sql)?;
            tx.execute(
                "INSERT INTO schema_migrations (version, applied_at) VALUES (?1, ?2)",
                params![version, crate::now_rfc3339()],
            )?;
        }
        tx.commit()?;
    }
    Ok(())
}
