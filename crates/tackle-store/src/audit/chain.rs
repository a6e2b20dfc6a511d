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

use super::detail::{self, AuditDetail};
use super::key::{self, AuditKey};
use super::{verdict_str, AuditEntry};
use crate::error::StoreError;
use rusqlite::{params, Connection, OptionalExtension, Transaction, TransactionBehavior};
use sha2::{Digest, Sha256};
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

/// The chain's last position and hash, the last signed position, and the row id the next
/// inserted record gets.
#[derive(Clone)]
pub(crate) struct Head {
    pub seq: i64,
    pub hash: Vec<u8>,
    pub checkpointed: i64,
    pub next_id: i64,
}

/// One statement: on the path of every call, each extra one cost about a microsecond.
pub(crate) fn head(conn: &Connection) -> Result<Head, StoreError> {
    // The next id is the AUTOINCREMENT high-water mark plus one, which no other writer moves
    // while the caller's IMMEDIATE transaction holds the lock.
    let mut stmt = conn.prepare_cached(
        "SELECT last.chain_seq, last.hash,
                (SELECT MAX(seq) FROM audit_checkpoints),
                COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'audit'), 0) + 1
         FROM (SELECT 1) LEFT JOIN
              (SELECT chain_seq, hash FROM audit WHERE chain_seq IS NOT NULL
               ORDER BY chain_seq DESC LIMIT 1) AS last",
    )?;
    let (seq, hash, checkpointed, next_id) = stmt.query_row([], |r| {
        Ok((
            r.get::<_, Option<i64>>(0)?,
            r.get::<_, Option<Vec<u8>>>(1)?,
            r.get::<_, Option<i64>>(2)?,
            r.get::<_, i64>(3)?,
        ))
    })?;
    Ok(Head {
        seq: seq.unwrap_or(0),
        hash: hash.unwrap_or_else(|| GENESIS.to_vec()),
        checkpointed: checkpointed.unwrap_or(0),
        next_id,
    })
}

/// The head as this connection's last chained write left it, with the connection's
/// `PRAGMA data_version` then: while no other connection has committed (the version is
/// unchanged), the head is known without reading it, which saved the statement that did on
/// every call. Taken out while a write uses it, so a write that fails leaves it empty.
#[derive(Clone, Default)]
pub(crate) struct HeadCache(Arc<Mutex<Option<(i64, Head)>>>);

impl HeadCache {
    /// The data version and the head, from memory when it is still current. Call inside the
    /// IMMEDIATE transaction: no one else can commit until it ends.
    fn take(&self, tx: &Connection) -> Result<(i64, Head), StoreError> {
        let version: i64 = tx
            .prepare_cached("PRAGMA data_version")?
            .query_row([], |r| r.get(0))?;
        let cached = self.0.lock().ok().and_then(|mut c| c.take());
        match cached {
            Some((v, h)) if v == version => Ok((version, h)),
            _ => Ok((version, head(tx)?)),
        }
    }

    fn put(&self, version: i64, head: Head) {
        if let Ok(mut c) = self.0.lock() {
            *c = Some((version, head));
        }
    }

    /// This connection inserted row `id` outside the chain (an intent): the next id is past it.
    pub(crate) fn inserted(&self, id: i64) {
        if let Ok(mut c) = self.0.lock() {
            if let Some((_, h)) = c.as_mut() {
                h.next_id = h.next_id.max(id + 1);
            }
        }
    }

    pub(crate) fn clear(&self) {
        if let Ok(mut c) = self.0.lock() {
            *c = None;
        }
    }
}

/// An IMMEDIATE transaction on a shared connection: the write lock is taken before the head
/// is read. Rolled back when dropped uncommitted.
pub(crate) fn immediate(conn: &Connection) -> Result<Transaction<'_>, StoreError> {
    Ok(Transaction::new_unchecked(
        conn,
        TransactionBehavior::Immediate,
    )?)
}

/// Inserts a finished record at the head of the chain. Returns its row id.
pub(crate) fn append(
    conn: &Connection,
    cache: &HeadCache,
    entry: &AuditEntry,
    detail: &AuditDetail,
) -> Result<i64, StoreError> {
    let tx = immediate(conn)?;
    let (version, head) = cache.take(&tx)?;
    // The id is part of the hash, so it is taken before the insert (see `head`).
    let id = head.next_id;
    let seq = head.seq + 1;
    let hash = current_hash(&head.hash, seq, id, entry, detail);
    let r = &entry.record;
    tx.prepare_cached(
        "INSERT INTO audit (id, ts, session_id, agent, tool, args_summary, verdict, rule, why, approver, outcome, duration_ms, caller, chain_seq, prev_hash, hash,
                            chain_version, layer, args_digest, result_digest, arguments, arguments_cut)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22)",
    )?
    .execute(params![
        id,
        r.ts,
        r.session_id,
        r.agent,
        r.tool,
        r.args_summary,
        verdict_str(r.verdict),
        r.rule,
        r.why,
        r.approver,
        r.outcome,
        super::millis(r.duration_ms),
        entry.caller,
        seq,
        head.hash,
        hash.as_slice(),
        VERSION,
        detail.layer,
        detail.args_digest,
        detail.result_digest,
        detail.arguments,
        detail.arguments_cut,
    ])?;
    let signed = checkpoint_if_due(&tx, seq, &hash, head.checkpointed, false)?;
    tx.commit()?;
    cache.put(
        version,
        Head {
            seq,
            hash: hash.to_vec(),
            checkpointed: if signed { seq } else { head.checkpointed },
            next_id: id + 1,
        },
    );
    Ok(id)
}

/// Ends the open record `id` with `finish` applied to it, at the head of the chain. A
/// record already in the chain (or gone) is left alone: its end was written before.
pub(crate) fn close(
    conn: &Connection,
    cache: &HeadCache,
    id: i64,
    finish: impl FnOnce(&mut AuditEntry, &mut AuditDetail),
) -> Result<(), StoreError> {
    let tx = immediate(conn)?;
    let (version, head) = cache.take(&tx)?;
    let head = close_in(&tx, head, id, finish)?;
    tx.commit()?;
    cache.put(version, head);
    Ok(())
}

/// [`close`] inside a transaction the caller holds, on the chain's `head` as it is in that
/// transaction; returns the head after it.
pub(crate) fn close_in(
    tx: &Transaction<'_>,
    head: Head,
    id: i64,
    finish: impl FnOnce(&mut AuditEntry, &mut AuditDetail),
) -> Result<Head, StoreError> {
    let row = tx
        .prepare_cached(&format!(
            "SELECT {}, {} FROM audit WHERE id = ?1 AND chain_seq IS NULL",
            super::ENTRY_COLUMNS,
            detail::DETAIL_COLUMNS
        ))?
        .query_row([id], |r| {
            Ok((
                super::entry_from_row(r, 0)?,
                detail::detail_from_row(r, super::ENTRY_COLUMN_COUNT)?,
            ))
        })
        .optional()?;
    let Some((row, mut detail)) = row else {
        return Ok(head);
    };
    let mut entry = super::checked(row)?;
    finish(&mut entry, &mut detail);
    let seq = head.seq + 1;
    let hash = current_hash(&head.hash, seq, id, &entry, &detail);
    let r = &entry.record;
    tx.prepare_cached(
        "UPDATE audit SET outcome = ?2, rule = ?3, why = ?4, duration_ms = ?5, owner = NULL,
                          chain_seq = ?6, prev_hash = ?7, hash = ?8,
                          chain_version = ?9, layer = ?10, result_digest = ?11
         WHERE id = ?1",
    )?
    .execute(params![
        id,
        r.outcome,
        r.rule,
        r.why,
        super::millis(r.duration_ms),
        seq,
        head.hash,
        hash.as_slice(),
        VERSION,
        detail.layer,
        detail.result_digest
    ])?;
    let signed = checkpoint_if_due(tx, seq, &hash, head.checkpointed, false)?;
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
    conn: &Connection,
    seq: i64,
    hash: &[u8],
    checkpointed: i64,
    tail: bool,
) -> Result<bool, StoreError> {
    let due = seq - checkpointed >= CHECKPOINT_EVERY || (tail && seq > checkpointed);
    if !due {
        return Ok(false);
    }
    let Ok(Some(key)) = key::key_for(conn.path(), true) else {
        return Ok(false);
    };
    write_checkpoint(conn, &key, seq, hash)?;
    Ok(true)
}

pub(crate) fn write_checkpoint(
    conn: &Connection,
    key: &AuditKey,
    seq: i64,
    hash: &[u8],
) -> Result<(), StoreError> {
    let signed_at = crate::now_rfc3339();
    let signature = key.sign(seq, hash, &signed_at);
    conn.prepare_cached(
        "INSERT OR IGNORE INTO audit_checkpoints (seq, hash, signed_at, public_key, signature)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![
        seq,
        hash,
        signed_at,
        key.public().as_slice(),
        signature
    ])?;
    Ok(())
}

/// Signs the chain's head if records were added since the last checkpoint: what an earlier
/// process left (it may have been killed before its next checkpoint).
pub(crate) fn seal_tail(conn: &Connection) -> Result<(), StoreError> {
    // Reading first keeps the common case (nothing to seal) free of the write lock.
    let h = head(conn)?;
    if h.seq <= h.checkpointed {
        return Ok(());
    }
    let tx = immediate(conn)?;
    let h = head(&tx)?;
    checkpoint_if_due(&tx, h.seq, &h.hash, h.checkpointed, true)?;
    tx.commit()?;
    Ok(())
}
