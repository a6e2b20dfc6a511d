//! The audit log's hash chain (docs/decisions/0032-tamper-evident-audit.md). A record joins
//! the chain when its call ends: a refusal when it is written, a call that ran when its
//! outcome is (or when it is closed as interrupted). Its position (`chain_seq`, 1, 2, …),
//! the previous record's hash and its own are written with it, in one IMMEDIATE transaction
//! that reads the head first: two processes appending at once take turns, so the chain
//! never forks, and a process killed mid-write leaves the transaction rolled back.
//!
//! `hash = SHA-256(prev_hash ‖ content)`, where content is, in this order: a version tag,
//! the position, the row id, then every column that says what happened (ts, session, agent,
//! tool, argument summary, decision, rule, why, approver, outcome, duration, caller, and
//! since version 2 the layer, the argument and result digests and the kept arguments), each
//! length-prefixed so no two records share an encoding. `owner` is left out: it is the
//! bookkeeping of a running call, empty once the call ends. A record's version is stored
//! beside it (`chain_version`): records chained before version 2 verify as they were hashed.
//!
//! Every [`CHECKPOINT_EVERY`] positions, and whenever a process opens the store with records
//! past the last checkpoint, the head is signed with the store's key (`key`).
//!
//! The statements are written once for SQLite and for the shared engine (PostgreSQL, where
//! several daemons append to one chain; docs/scale-out.md). Hashes travel as hex text
//! (`hex()` / `unhex()` on both engines), stored as bytes. What differs is how writers take
//! turns: SQLite's IMMEDIATE transaction holds the whole file; on PostgreSQL each chained
//! write takes a transaction advisory lock ([`CHAIN_LOCK`]) before it reads the head, so the
//! head it builds on is the one every other daemon left, and the lock is released by its
//! commit or rollback.

use super::detail::{self, AuditDetail};
use super::key::{self, AuditKey};
use super::{verdict_str, AuditEntry};
use crate::error::StoreError;
use crate::sql::{in_tx, vals, Db, Engine};
use sha2::{Digest, Sha256};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// The previous hash of the first record.
pub(crate) const GENESIS: [u8; 32] = [0; 32];

/// Positions between signed checkpoints (and one more when a process opens the store).
pub const CHECKPOINT_EVERY: i64 = 1_000;

/// The version every record is chained with now: the detail columns are in the hash.
pub(crate) const VERSION: i64 = 2;

/// A record's hash given the one before it, as `version` hashes it (1: without `detail`).
/// `None` for a version this build does not know.
pub(crate) fn link_hash(
    prev: &[u8],
    seq: i64,
    id: i64,
    version: i64,
    entry: &AuditEntry,
    detail: &AuditDetail,
) -> Option<[u8; 32]> {
    let tag: &[u8] = match version {
        1 => b"tackle-audit-v1",
        2 => b"tackle-audit-v2",
        _ => return None,
    };
    let r = &entry.record;
    let mut h = Sha256::new();
    h.update(prev);
    h.update(tag);
    h.update(seq.to_be_bytes());
    h.update(id.to_be_bytes());
    let text = |h: &mut Sha256, s: &str| {
        h.update((s.len() as u64).to_be_bytes());
        h.update(s.as_bytes());
    };
    let opt = |h: &mut Sha256, s: Option<&str>| match s {
        None => h.update([0]),
        Some(s) => {
            h.update([1]);
            text(h, s);
        }
    };
    text(&mut h, &r.ts);
    opt(&mut h, r.session_id.as_deref());
    text(&mut h, &r.agent);
    text(&mut h, &r.tool);
    text(&mut h, &r.args_summary);
    text(&mut h, verdict_str(r.verdict));
    text(&mut h, &r.rule);
    text(&mut h, &r.why);
    opt(&mut h, r.approver.as_deref());
    text(&mut h, &r.outcome);
    match r.duration_ms {
        None => h.update([0]),
        Some(d) => {
            h.update([1]);
            h.update(d.to_be_bytes());
        }
    }
    text(&mut h, &entry.caller);
    if version >= 2 {
        text(&mut h, &detail.layer);
        opt(&mut h, detail.args_digest.as_deref());
        opt(&mut h, detail.result_digest.as_deref());
        opt(&mut h, detail.arguments.as_deref());
        h.update([u8::from(detail.arguments_cut)]);
    }
    Some(h.finalize().into())
}

/// [`link_hash`] at the current [`VERSION`].
fn current_hash(
    prev: &[u8],
    seq: i64,
    id: i64,
    entry: &AuditEntry,
    detail: &AuditDetail,
) -> [u8; 32] {
    // The current version is always known.
    link_hash(prev, seq, id, VERSION, entry, detail).unwrap_or_default()
}

/// The advisory lock PostgreSQL appends hold until they commit ("audit" in ASCII).
const CHAIN_LOCK: i64 = 0x61_7564_6974;

/// What a chained write needs besides the connection: the engine, and the database file
/// whose state directory holds the signing key (`None`: an in-memory store).
#[derive(Debug, Clone)]
pub(crate) struct Ctx {
    pub engine: Engine,
    pub db_path: Option<PathBuf>,
}

impl Ctx {
    /// The key that signs checkpoints written through this context, made when missing.
    fn key(&self) -> Option<Arc<AuditKey>> {
        key::key_for(self.db_path.as_deref(), true).ok().flatten()
    }
}

/// The chain's last position and hash, the last signed position, and (SQLite, from the
/// cache) the row id the next inserted record gets.
#[derive(Clone)]
pub(crate) struct Head {
    pub seq: i64,
    pub hash: Vec<u8>,
    pub checkpointed: i64,
    pub next_id: Option<i64>,
}

/// Bytes from the hex text both engines' `hex()` return (SQLite's is upper case); empty for
/// none (SQLite's `hex(NULL)` is `''`).
pub(crate) fn bytes(text: Option<String>) -> Vec<u8> {
    text.and_then(|t| key::unhex(&t)).unwrap_or_default()
}

/// One statement in the common case: on the path of every call, each extra one costs.
pub(crate) fn head(db: &mut dyn Db) -> Result<Head, StoreError> {
    let last = db.query_opt(
        "SELECT chain_seq, hex(hash), (SELECT MAX(seq) FROM audit_checkpoints)
         FROM audit WHERE chain_seq IS NOT NULL ORDER BY chain_seq DESC LIMIT 1",
        &[],
    )?;
    let (seq, hash, checkpointed) = match last {
        Some(r) => (r.int(0)?, bytes(r.opt_text(1)?), r.opt_int(2)?),
        None => {
            let cp = db.query_opt("SELECT MAX(seq) FROM audit_checkpoints", &[])?;
            let cp = match cp {
                Some(r) => r.opt_int(0)?,
                None => None,
            };
            (0, GENESIS.to_vec(), cp)
        }
    };
    Ok(Head {
        seq,
        hash: if seq == 0 { GENESIS.to_vec() } else { hash },
        checkpointed: checkpointed.unwrap_or(0),
        next_id: None,
    })
}

/// The row id the next chained insert takes. SQLite: the AUTOINCREMENT high-water mark plus
/// one, which no other writer moves while the IMMEDIATE transaction holds the lock.
/// PostgreSQL: a fresh value of the id's sequence, which no other writer is ever given.
fn next_id(db: &mut dyn Db, engine: Engine) -> Result<i64, StoreError> {
    let sql = match engine {
        Engine::Sqlite => {
            "SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'audit'), 0) + 1"
        }
        Engine::Postgres => "SELECT nextval(pg_get_serial_sequence('audit', 'id'))",
    };
    match db.query_opt(sql, &[])? {
        Some(r) => r.int(0),
        None => Err(StoreError::BadValue {
            what: "audit id",
            value: "none".into(),
        }),
    }
}

/// [`head`] and a fresh value of the id's sequence (see [`next_id`]) in one statement, for a
/// shared engine's append: one round trip to the server less on the path of every call.
fn shared_head_with_id(db: &mut dyn Db) -> Result<Head, StoreError> {
    let row = db.query_opt(
        "SELECT last.chain_seq, hex(last.hash), (SELECT MAX(seq) FROM audit_checkpoints),
                nextval(pg_get_serial_sequence('audit', 'id'))
         FROM (SELECT 1 AS one) AS one
         LEFT JOIN (SELECT chain_seq, hash FROM audit WHERE chain_seq IS NOT NULL
                    ORDER BY chain_seq DESC LIMIT 1) AS last ON TRUE",
        &[],
    )?;
    let Some(r) = row else {
        return Err(StoreError::BadValue {
            what: "audit head",
            value: "none".into(),
        });
    };
    let seq = r.opt_int(0)?.unwrap_or(0);
    Ok(Head {
        seq,
        hash: if seq == 0 {
            GENESIS.to_vec()
        } else {
            bytes(r.opt_text(1)?)
        },
        checkpointed: r.opt_int(2)?.unwrap_or(0),
        next_id: Some(r.int(3)?),
    })
}

/// Takes the chain's turn inside the caller's transaction. SQLite's IMMEDIATE transaction
/// already has it.
pub(crate) fn lock(db: &mut dyn Db, engine: Engine) -> Result<(), StoreError> {
    if engine == Engine::Postgres {
        db.query("SELECT pg_advisory_xact_lock(?1)", vals![CHAIN_LOCK])?;
    }
    Ok(())
}

/// The head as this connection's last chained write left it, with the connection's
/// `PRAGMA data_version` then: while no other connection has committed (the version is
/// unchanged), the head is known without reading it, which saved the statement that did on
/// every call. Taken out while a write uses it, so a write that fails leaves it empty.
/// SQLite only: on a shared engine another daemon may have appended without this connection
/// seeing any sign of it, so the head is always read there, under the chain lock.
#[derive(Clone, Default)]
pub(crate) struct HeadCache(Arc<Mutex<Option<(i64, Head)>>>);

impl HeadCache {
    /// The data version and the head, from memory when it is still current. Call inside the
    /// chain's transaction, after [`lock`]: no one else can append until it ends.
    /// `with_id`: a shared engine's head comes with the id the next insert takes.
    fn take(
        &self,
        db: &mut dyn Db,
        engine: Engine,
        with_id: bool,
    ) -> Result<(i64, Head), StoreError> {
        if engine == Engine::Postgres {
            let head = if with_id {
                shared_head_with_id(db)?
            } else {
                head(db)?
            };
            return Ok((0, head));
        }
        let version = match db.query_opt("PRAGMA data_version", &[])? {
            Some(r) => r.int(0)?,
            None => 0,
        };
        let cached = self.0.lock().ok().and_then(|mut c| c.take());
        match cached {
            Some((v, h)) if v == version => Ok((version, h)),
            _ => Ok((version, head(db)?)),
        }
    }

    fn put(&self, engine: Engine, version: i64, head: Head) {
        if engine == Engine::Postgres {
            return;
        }
        if let Ok(mut c) = self.0.lock() {
            *c = Some((version, head));
        }
    }

    /// This connection inserted row `id` outside the chain (an intent): the next id is past it.
    pub(crate) fn inserted(&self, id: i64) {
        if let Ok(mut c) = self.0.lock() {
            if let Some((_, h)) = c.as_mut() {
                h.next_id = h.next_id.map(|n| n.max(id + 1));
            }
        }
    }

    pub(crate) fn clear(&self) {
        if let Ok(mut c) = self.0.lock() {
            *c = None;
        }
    }
}

/// Inserts a finished record at the head of the chain. Returns its row id.
pub(crate) fn append(
    db: &mut dyn Db,
    ctx: &Ctx,
    cache: &HeadCache,
    entry: &AuditEntry,
    detail: &AuditDetail,
) -> Result<i64, StoreError> {
    let (version, head, id) = in_tx(db, |db| {
        lock(db, ctx.engine)?;
        let (version, head) = cache.take(db, ctx.engine, true)?;
        // The id is part of the hash, so it is taken before the insert (see `next_id`).
        let id = match head.next_id {
            Some(id) => id,
            None => next_id(db, ctx.engine)?,
        };
        let seq = head.seq + 1;
        let hash = current_hash(&head.hash, seq, id, entry, detail);
        let r = &entry.record;
        db.execute(
            "INSERT INTO audit (id, ts, session_id, agent, tool, args_summary, verdict, rule, why, approver, outcome, duration_ms, caller, chain_seq, prev_hash, hash,
                                chain_version, layer, args_digest, result_digest, arguments, arguments_cut)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, unhex(?15), unhex(?16), ?17, ?18, ?19, ?20, ?21, ?22)",
            vals![
                id,
                &r.ts,
                r.session_id.as_deref(),
                &r.agent,
                &r.tool,
                &r.args_summary,
                verdict_str(r.verdict),
                &r.rule,
                &r.why,
                r.approver.as_deref(),
                &r.outcome,
                super::millis(r.duration_ms),
                &entry.caller,
                seq,
                key::hex(&head.hash),
                key::hex(&hash),
                VERSION,
                &detail.layer,
                detail.args_digest.as_deref(),
                detail.result_digest.as_deref(),
                detail.arguments.as_deref(),
                detail.arguments_cut,
            ],
        )?;
        let signed = checkpoint_if_due(db, ctx, seq, &hash, head.checkpointed, false)?;
        let head = Head {
            seq,
            hash: hash.to_vec(),
            checkpointed: if signed { seq } else { head.checkpointed },
            next_id: Some(id + 1),
        };
        Ok((version, head, id))
    })?;
    cache.put(ctx.engine, version, head);
    Ok(id)
}

/// Ends the open record `id` with `finish` applied to it, at the head of the chain. A
/// record already in the chain (or gone) is left alone: its end was written before.
pub(crate) fn close(
    db: &mut dyn Db,
    ctx: &Ctx,
    cache: &HeadCache,
    id: i64,
    finish: impl FnOnce(&mut AuditEntry, &mut AuditDetail),
) -> Result<(), StoreError> {
    let (version, head) = in_tx(db, |db| {
        lock(db, ctx.engine)?;
        let (version, head) = cache.take(db, ctx.engine, false)?;
        let head = close_in(db, ctx, head, id, finish)?;
        Ok((version, head))
    })?;
    cache.put(ctx.engine, version, head);
    Ok(())
}

/// [`close`] inside a transaction the caller holds (with the chain's turn, [`lock`]), on the
/// chain's `head` as it is in that transaction; returns the head after it.
pub(crate) fn close_in(
    db: &mut dyn Db,
    ctx: &Ctx,
    head: Head,
    id: i64,
    finish: impl FnOnce(&mut AuditEntry, &mut AuditDetail),
) -> Result<Head, StoreError> {
    let row = db.query_opt(
        &format!(
            "SELECT {}, {} FROM audit WHERE id = ?1 AND chain_seq IS NULL",
            super::ENTRY_COLUMNS,
            detail::DETAIL_COLUMNS
        ),
        vals![id],
    )?;
    let Some(row) = row else {
        return Ok(head);
    };
    let mut entry = super::checked(super::entry_from(&row, 0)?)?;
    let mut detail = detail::detail_from(&row, super::ENTRY_COLUMN_COUNT)?;
    finish(&mut entry, &mut detail);
    let seq = head.seq + 1;
    let hash = current_hash(&head.hash, seq, id, &entry, &detail);
    let r = &entry.record;
    db.execute(
        "UPDATE audit SET outcome = ?2, rule = ?3, why = ?4, duration_ms = ?5, owner = NULL,
                          chain_seq = ?6, prev_hash = unhex(?7), hash = unhex(?8),
                          chain_version = ?9, layer = ?10, result_digest = ?11
         WHERE id = ?1",
        vals![
            id,
            &r.outcome,
            &r.rule,
            &r.why,
            super::millis(r.duration_ms),
            seq,
            key::hex(&head.hash),
            key::hex(&hash),
            VERSION,
            &detail.layer,
            detail.result_digest.as_deref()
        ],
    )?;
    let signed = checkpoint_if_due(db, ctx, seq, &hash, head.checkpointed, false)?;
    Ok(Head {
        seq,
        hash: hash.to_vec(),
        checkpointed: if signed { seq } else { head.checkpointed },
        next_id: head.next_id,
    })
}

/// Signs the head at `seq` when [`CHECKPOINT_EVERY`] positions have passed since the last
/// checkpoint, or (`tail`) when any have. A key that cannot be read or made skips the
/// checkpoint rather than the record: `tackle audit verify` reports the unsigned tail.
/// Returns whether it signed.
fn checkpoint_if_due(
    db: &mut dyn Db,
    ctx: &Ctx,
    seq: i64,
    hash: &[u8],
    checkpointed: i64,
    tail: bool,
) -> Result<bool, StoreError> {
    let due = seq - checkpointed >= CHECKPOINT_EVERY || (tail && seq > checkpointed);
    if !due {
        return Ok(false);
    }
    let Some(key) = ctx.key() else {
        return Ok(false);
    };
    write_checkpoint(db, ctx, &key, seq, hash)?;
    Ok(true)
}

/// Writes a checkpoint of `seq` signed by `key`, with the key's public half beside it. On a
/// shared engine the key is registered too (with this host and state directory), so every
/// daemon's `audit verify` knows whose it is.
pub(crate) fn write_checkpoint(
    db: &mut dyn Db,
    ctx: &Ctx,
    key: &AuditKey,
    seq: i64,
    hash: &[u8],
) -> Result<(), StoreError> {
    let signed_at = crate::now_rfc3339();
    let signature = key.sign(seq, hash, &signed_at);
    let public = key::hex(&key.public());
    db.execute(
        "INSERT INTO audit_checkpoints (seq, hash, signed_at, public_key, signature)
         VALUES (?1, unhex(?2), ?3, unhex(?4), unhex(?5)) ON CONFLICT DO NOTHING",
        vals![
            seq,
            key::hex(hash),
            &signed_at,
            &public,
            key::hex(&signature)
        ],
    )?;
    if ctx.engine == Engine::Postgres {
        let state_dir = ctx
            .db_path
            .as_deref()
            .and_then(std::path::Path::parent)
            .map(|d| d.display().to_string())
            .unwrap_or_default();
        db.execute(
            "INSERT INTO audit_keys (public_key, host, state_dir, first_used)
             VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING",
            vals![&public, super::owner::host(), state_dir, &signed_at],
        )?;
    }
    Ok(())
}

/// Signs the chain's head if records were added since the last checkpoint: what an earlier
/// process left (it may have been killed before its next checkpoint).
pub(crate) fn seal_tail(db: &mut dyn Db, ctx: &Ctx) -> Result<(), StoreError> {
    // Reading first keeps the common case (nothing to seal) free of the write lock.
    let h = head(db)?;
    if h.seq <= h.checkpointed {
        return Ok(());
    }
    in_tx(db, |db| {
        lock(db, ctx.engine)?;
        let h = head(db)?;
        checkpoint_if_due(db, ctx, h.seq, &h.hash, h.checkpointed, true)?;
        Ok(())
    })
}
