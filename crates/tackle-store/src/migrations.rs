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
    (
        // Memory per owner: an agent's own (`agent`) or a shared bank (`bank`), with tags;
        // stored bank grants; long-term entries. Notes of the version-3 table move to the
        // shared bank of the same name, reachable only through a grant.
        5,
        "CREATE TABLE memory_scopes (
            id INTEGER PRIMARY KEY,
            owner_kind TEXT NOT NULL CHECK (owner_kind IN ('agent', 'bank')),
            owner TEXT NOT NULL,
            UNIQUE (owner_kind, owner)
        );
        -- id = (scope << 32) + n: one scope's memories are one rowid range, which FTS5
        -- filters on while it ranks, without reading other scopes' rows.
        CREATE TABLE memories (
            id INTEGER PRIMARY KEY,
            scope INTEGER NOT NULL REFERENCES memory_scopes(id),
            key TEXT NOT NULL,
            value TEXT NOT NULL,
            tags TEXT NOT NULL DEFAULT '[]',
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            UNIQUE (scope, key)
        );
        CREATE INDEX memories_newest ON memories (scope, updated_at);
        CREATE VIRTUAL TABLE memories_fts USING fts5(
            key, value, tags, content='memories', content_rowid='id', tokenize='unicode61'
        );
        CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
            INSERT INTO memories_fts(rowid, key, value, tags) VALUES (new.id, new.key, new.value, new.tags);
        END;
        CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, key, value, tags) VALUES ('delete', old.id, old.key, old.value, old.tags);
        END;
        CREATE TRIGGER memories_au AFTER UPDATE ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, key, value, tags) VALUES ('delete', old.id, old.key, old.value, old.tags);
            INSERT INTO memories_fts(rowid, key, value, tags) VALUES (new.id, new.key, new.value, new.tags);
        END;
        INSERT INTO memory_scopes (owner_kind, owner) SELECT DISTINCT 'bank', bank FROM memory ORDER BY bank;
        INSERT INTO memories (id, scope, key, value, tags, created_at, updated_at)
            SELECT (s.id << 32) + ROW_NUMBER() OVER (PARTITION BY s.id ORDER BY m.updated_at, m.rowid),
                   s.id, m.key, m.value, '[]', m.updated_at, m.updated_at
            FROM memory m JOIN memory_scopes s ON s.owner_kind = 'bank' AND s.owner = m.bank;
        DROP TRIGGER memory_ai;
        DROP TRIGGER memory_ad;
        DROP TRIGGER memory_au;
        DROP TABLE memory_fts;
        DROP TABLE memory;
        CREATE TABLE memory_grants (
            bank TEXT NOT NULL,
            agent TEXT NOT NULL,
            perm TEXT NOT NULL CHECK (perm IN ('read', 'write')),
            granted_at TEXT NOT NULL,
            PRIMARY KEY (bank, agent)
        );
        CREATE TABLE longterm_memory (
            agent TEXT NOT NULL,
            key TEXT NOT NULL,
            value TEXT NOT NULL,
            category TEXT NOT NULL,
            tags TEXT NOT NULL DEFAULT '[]',
            importance REAL NOT NULL DEFAULT 1.0,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            last_accessed TEXT NOT NULL,
            access_count INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (agent, key)
        );",
    ),
    (
        // Schedules that fire: bounds, the session a pinned one reports to, a lease that a
        // daemon holds while the run it claimed is going, and one row per fire outcome.
        // `schedule_fires` has no foreign key: a one-shot is deleted after firing, its
        // record stays. The partial unique index is the last line against a double fire.
        6,
        "ALTER TABLE schedules ADD COLUMN target TEXT NOT NULL DEFAULT 'fresh';
        ALTER TABLE schedules ADD COLUMN session_id TEXT;
        ALTER TABLE schedules ADD COLUMN max_fires INTEGER;
        ALTER TABLE schedules ADD COLUMN expires_at_ms INTEGER;
        ALTER TABLE schedules ADD COLUMN fire_count INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE schedules ADD COLUMN lease_owner TEXT;
        ALTER TABLE schedules ADD COLUMN lease_until_ms INTEGER;
        CREATE TABLE schedule_fires (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            schedule_id INTEGER NOT NULL,
            agent TEXT NOT NULL,
            name TEXT NOT NULL,
            due_ms INTEGER NOT NULL,
            started_ms INTEGER,
            finished_ms INTEGER,
            status TEXT NOT NULL CHECK (status IN ('running', 'ok', 'failed', 'skipped', 'missed', 'retired')),
            detail TEXT NOT NULL DEFAULT '',
            owner TEXT
        );
        CREATE INDEX schedule_fires_by_schedule ON schedule_fires (schedule_id, id);
        CREATE UNIQUE INDEX schedule_fires_once ON schedule_fires (schedule_id, due_ms)
            WHERE status IN ('running', 'ok', 'failed');
        -- Reminders (`reminder` tool): `r<n>` per agent; one with a due time owns the
        -- schedule `reminder-r<n>` that fires it.
        CREATE TABLE reminders (
            agent TEXT NOT NULL,
            n INTEGER NOT NULL,
            title TEXT NOT NULL,
            description TEXT NOT NULL DEFAULT '',
            category TEXT NOT NULL DEFAULT 'general',
            due_ms INTEGER,
            recurrence TEXT,
            status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done', 'snoozed')),
            created_at TEXT NOT NULL,
            PRIMARY KEY (agent, n)
        );",
    ),
    (
        // A child agent's session names the session that started it and its path in the
        // tree (`default › researcher`); a root session has neither.
        7,
        "CREATE TABLE session_links (
            id TEXT PRIMARY KEY REFERENCES sessions(id),
            parent_id TEXT NOT NULL,
            tree_path TEXT NOT NULL
        );
        CREATE INDEX session_links_by_parent ON session_links (parent_id);",
    ),
    (
        // Audit intents: a call's record is written before it runs (outcome `running`) with
        // the process that runs it as `owner`, and completed after. An owner that is gone
        // leaves its intents to be closed as `interrupted`; the partial index keeps finding
        // them an empty look-up on every open. `caller` says who made the call.
        8,
        "ALTER TABLE audit ADD COLUMN caller TEXT NOT NULL DEFAULT '';
        ALTER TABLE audit ADD COLUMN owner TEXT;
        CREATE INDEX audit_open_intents ON audit (owner) WHERE owner IS NOT NULL;",
    ),
    (
        // Schedules belong to the agent that planted them
        // (docs/decisions/0028-schedules-belong-to-their-planter.md): `created_by` is that
        // agent (its tree path for a child) when it is not the agent the schedule fires as;
        // NULL (every schedule stored before) means the agent itself.
        9,
        "ALTER TABLE schedules ADD COLUMN created_by TEXT;",
    ),
    (
        // The approval queue (docs/decisions/0030-one-approval-queue.md): one row per call
        // waiting for a person, answered once. The partial index keeps the pending look-up
        // and the expiry sweep off the answered history.
        10,
        "CREATE TABLE approvals (
            id TEXT PRIMARY KEY,
            created_ms INTEGER NOT NULL,
            deadline_ms INTEGER NOT NULL,
            agent TEXT NOT NULL,
            session_id TEXT NOT NULL DEFAULT '',
            tool TEXT NOT NULL,
            preview TEXT NOT NULL,
            approvers TEXT NOT NULL DEFAULT '[]',
            status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN
                ('pending', 'allowed', 'allowed_for_session', 'denied', 'expired', 'cancelled')),
            answered_by TEXT,
            answered_ms INTEGER
        );
        CREATE INDEX approvals_pending ON approvals (deadline_ms) WHERE status = 'pending';
        CREATE INDEX approvals_recent ON approvals (created_ms);",
    ),
    (
        // MCP tool pins (docs/decisions/0031-mcp-tool-pinning.md): the digest and canonical
        // definition of each configured server's tool as first used or accepted by the
        // operator; a tool offered with another definition is quarantined until accepted.
        11,
        "CREATE TABLE mcp_pins (
            server TEXT NOT NULL,
            tool TEXT NOT NULL,
            digest TEXT NOT NULL,
            definition TEXT NOT NULL,
            pinned_ms INTEGER NOT NULL,
            pinned_by TEXT NOT NULL,
            PRIMARY KEY (server, tool)
        );",
    ),
    (
        // The tamper-evident audit log (docs/decisions/0032-tamper-evident-audit.md): a record
        // joins the hash chain when its call ends (`chain_seq`, `prev_hash`, `hash`); signed
        // checkpoints cover the chain. Records written before this version stay outside it,
        // up to `audit_chain_origin.legacy_max_id`.
        12,
        "ALTER TABLE audit ADD COLUMN chain_seq INTEGER;
        ALTER TABLE audit ADD COLUMN prev_hash BLOB;
        ALTER TABLE audit ADD COLUMN hash BLOB;
        CREATE UNIQUE INDEX audit_chain ON audit (chain_seq) WHERE chain_seq IS NOT NULL;
        CREATE TABLE audit_checkpoints (
            seq INTEGER PRIMARY KEY,
            hash BLOB NOT NULL,
            signed_at TEXT NOT NULL,
            public_key BLOB NOT NULL,
            signature BLOB NOT NULL
        );
        CREATE TABLE audit_chain_origin (legacy_max_id INTEGER NOT NULL);
        INSERT INTO audit_chain_origin SELECT COALESCE(MAX(id), 0) FROM audit;",
    ),
    (
        // Who waits for a queued approval (`host/boot/pid/start`), so a waiter that died
        // (kill -9) is seen and its entry closed instead of looking answerable until its
        // deadline (docs/decisions/0030-one-approval-queue.md).
        14,
        "ALTER TABLE approvals ADD COLUMN waiter TEXT;",
    ),
    (
        // What chat channels received and have not finished answering, and where each reads
        // on, written together (docs/decisions/0035-channel-inbox.md); with when each last
        // read and its last error, for doctor and the console.
        15,
        "CREATE TABLE channel_inbox (
            id INTEGER PRIMARY KEY,
            channel TEXT NOT NULL,
            chat TEXT NOT NULL,
            sender TEXT NOT NULL,
            text TEXT NOT NULL,
            received_ms INTEGER NOT NULL,
            -- Set when its turn starts: the newest session entry id then, so a restart can
            -- tell a turn that ended (its answer stored after the mark) from one cut off.
            started_mark INTEGER
        );
        CREATE INDEX channel_inbox_by_channel ON channel_inbox (channel, id);
        CREATE TABLE channel_state (
            channel TEXT PRIMARY KEY,
            position TEXT,
            polled_ms INTEGER,
            error TEXT,
            error_ms INTEGER
        );",
    ),
    (
        // What an audit record proves about its call (docs/decisions/0032-tamper-evident-audit.md):
        // the layer that decided, digests of the full arguments and of the result, the
        // redacted arguments whole up to 16 KiB (`arguments_cut` when longer), all in the
        // hash of records chained with `chain_version` 2; NULL is version 1, as hashed before.
        16,
        "ALTER TABLE audit ADD COLUMN layer TEXT NOT NULL DEFAULT '';
        ALTER TABLE audit ADD COLUMN args_digest TEXT;
        ALTER TABLE audit ADD COLUMN result_digest TEXT;
        ALTER TABLE audit ADD COLUMN arguments TEXT;
        ALTER TABLE audit ADD COLUMN arguments_cut INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE audit ADD COLUMN chain_version INTEGER;",
    ),
    (
        // Where a session's untrusted content came from, so a resumed session starts as
        // tainted as it ended (docs/decisions/0033-taint-gates-sinks.md).
        17,
        "ALTER TABLE sessions ADD COLUMN taint TEXT;",
    ),
    (
        // Signed session entries (docs/decisions/0036-signed-session-entries.md): each
        // agent's identity keys by public key (hex), the current one without a successor, a
        // rotation signed by the old key and the new; each entry's signature and its key.
        18,
        "CREATE TABLE agent_keys (
            key_id TEXT PRIMARY KEY,
            agent TEXT NOT NULL,
            created_at TEXT NOT NULL,
            successor TEXT REFERENCES agent_keys(key_id) DEFERRABLE INITIALLY DEFERRED,
            rotated_at TEXT,
            old_signature BLOB,
            new_signature BLOB
        );
        CREATE UNIQUE INDEX agent_keys_current ON agent_keys (agent) WHERE successor IS NULL;
        CREATE INDEX agent_keys_by_successor ON agent_keys (successor);
        ALTER TABLE entries ADD COLUMN key_id TEXT;
        ALTER TABLE entries ADD COLUMN signature BLOB;",
    ),
    (
        // Skills kept in the store: an agent's own (`agent`, its name) and a shared bank's
        // (`bank`, its name, reached through the memory bank grants). One name per place, by
        // the catalogue's name key (docs/decisions/0037-skill-sources.md).
        19,
        "CREATE TABLE stored_skills (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            owner_kind TEXT NOT NULL CHECK (owner_kind IN ('agent', 'bank')),
            owner TEXT NOT NULL,
            name TEXT NOT NULL,
            name_key TEXT NOT NULL,
            description TEXT NOT NULL,
            meta TEXT NOT NULL,
            body TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            UNIQUE (owner_kind, owner, name_key)
        );",
    ),
    (
        // Named leases (crates/tackle-store/src/leases.rs): one holder at a time for work
        // that must not run twice, such as a chat channel's poller.
        20,
        "CREATE TABLE leases (
            name TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            until_ms INTEGER NOT NULL
        );",
    ),
    (
        // The extensions switched off for one session (a JSON list; NULL: none), so a
        // resumed chat or the next API request of the session starts with them off.
        21,
        "ALTER TABLE sessions ADD COLUMN disabled_extensions TEXT;",
    ),
];

/// The newest schema version this build knows.
pub(crate) fn latest() -> i64 {
    MIGRATIONS.last().map(|(v, _)| *v).unwrap_or(0)
}

pub(crate) fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    migrate_to(conn, latest())
}

/// Applies the migrations up to and including `target`.
pub(crate) fn migrate_to(conn: &mut Connection, target: i64) -> Result<(), StoreError> {
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
    for (version, sql) in MIGRATIONS
        .iter()
        .filter(|(v, _)| *v > current && *v <= target)
    {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::{MemoryAccess, RecallQuery};
    use crate::Store;
    use std::collections::BTreeMap;
    use tackle_protocol::config::MemoryBankConfig;

    #[tokio::test]
    async fn version_5_moves_the_notes_of_version_4_into_banks_reachable_only_by_grant() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(crate::DB_FILE);
        {
            let mut conn = Connection::open(&path).unwrap();
            migrate_to(&mut conn, 4).unwrap();
            conn.execute_batch(
                "INSERT INTO memory (bank, key, value, updated_at) VALUES
                    ('team', 'deadline', 'friday noon', '2026-01-01T00:00:00.000000Z'),
                    ('team', 'owner', 'alice', '2026-01-02T00:00:00.000000Z'),
                    ('other', 'secret', 'launch codes', '2026-01-03T00:00:00.000000Z');",
            )
            .unwrap();
        }
        let store = Store::open(dir.path()).unwrap();
        let mut config = BTreeMap::new();
        config.insert(
            "team".to_string(),
            MemoryBankConfig {
                read: vec!["default".into()],
                write: vec![],
            },
        );
        let access = MemoryAccess::from_grants("default", &config, &[]);
        let q = |query: &str| RecallQuery {
            query: query.into(),
            tags: vec![],
            limit: 10,
        };
        let hits = store
            .recall(&access, Some("team"), &q("friday"))
            .await
            .unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].key, "deadline");
        assert_eq!(hits[0].updated_at, "2026-01-01T00:00:00.000000Z");
        let newest = store.recall(&access, Some("team"), &q("")).await.unwrap();
        let keys: Vec<&str> = newest.iter().map(|h| h.key.as_str()).collect();
        assert_eq!(keys, ["owner", "deadline"]);
        assert!(store
            .recall(&access, Some("other"), &q("launch"))
            .await
            .is_err());
        assert!(store
            .recall(&access, None, &q("launch"))
            .await
            .unwrap()
            .is_empty());
        let conn = Connection::open(&path).unwrap();
        let old: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE name IN ('memory', 'memory_fts')",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(old, 0);
    }
}
