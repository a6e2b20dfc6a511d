//! The audit log's hash chain (docs/decisions/0032-tamper-evident-audit.md). A record joins
//! the chain when its call ends: a refusal when it is written, a call that ran when its
//! outcome is (or when it is closed as interrupted). Its position (`chain_seq`, 1, 2, …),
//! the previous record's hash and its own are written with it, in one IMMEDIATE transaction
//! that reads the head first: two processes appending at once take turns, so the chain
//! never forks, and a process killed mid-write leaves the transaction rolled back.
//!
//! `hash = SHA-256(prev_hash ‖ content)`, where content is, in this order: a version tag,
//! the position, the row id, then every column that says what happened (ts, session, agent,
//! tool, argument summary, decision, rule, why, approver, outcome, duration, caller), each
//! length-prefixed so no two records share an encoding. `owner` is left out: it is the
//! bookkeeping of a running call, empty once the call ends.
//!
//! Every [`CHECKPOINT_EVERY`] positions, and whenever a process opens the store with records
//! past the last checkpoint, the head is signed with the store's key (`key`).

use super::key::{self, AuditKey};
use super::{verdict_str, AuditEntry};
use crate::error::StoreError;
use rusqlite::{params, Connection, OptionalExtension, Transaction, TransactionBehavior};
use sha2::{Digest, Sha256};

/// The previous hash of the first record.
pub(crate) const GENESIS: [u8; 32] = [0; 32];

/// Positions between signed checkpoints (and one more when a process opens the store).
pub const CHECKPOINT_EVERY: i64 = 1_000;

const VERSION: &[u8] = b"tackle-audit-v1";

/// A record's hash given the one before it.
pub(crate) fn link_hash(prev: &[u8], seq: i64, id: i64, entry: &AuditEntry) -> [u8; 32] {
    let r = &entry.record;
    let mut h = Sha256::new();
    h.update(prev);
    h.update(VERSION);
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
    h.finalize().into()
}

/// The chain's last position and hash, and the last signed position.
pub(crate) struct Head {
    pub seq: i64,
    pub hash: Vec<u8>,
    pub checkpointed: i64,
}

pub(crate) fn head(conn: &Connection) -> Result<Head, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT (SELECT chain_seq FROM audit WHERE chain_seq IS NOT NULL ORDER BY chain_seq DESC LIMIT 1),
                (SELECT hash FROM audit WHERE chain_seq IS NOT NULL ORDER BY chain_seq DESC LIMIT 1),
                (SELECT MAX(seq) FROM audit_checkpoints)",
    )?;
    let (seq, hash, checkpointed) = stmt.query_row([], |r| {
        Ok((
            r.get::<_, Option<i64>>(0)?,
            r.get::<_, Option<Vec<u8>>>(1)?,
            r.get::<_, Option<i64>>(2)?,
        ))
    })?;
    Ok(Head {
        seq: seq.unwrap_or(0),
        hash: hash.unwrap_or_else(|| GENESIS.to_vec()),
        checkpointed: checkpointed.unwrap_or(0),
    })
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
pub(crate) fn append(conn: &Connection, entry: &AuditEntry) -> Result<i64, StoreError> {
    let tx = immediate(conn)?;
    let head = head(&tx)?;
    // The id is part of the hash, so it is taken before the insert: the AUTOINCREMENT
    // high-water mark, which no other writer moves while this transaction holds the lock.
    let id: i64 = tx
        .prepare_cached(
            "SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'audit'), 0) + 1",
        )?
        .query_row([], |r| r.get(0))?;
    let seq = head.seq + 1;
    let hash = link_hash(&head.hash, seq, id, entry);
    let r = &entry.record;
    tx.prepare_cached(
        "INSERT INTO audit (id, ts, session_id, agent, tool, args_summary, verdict, rule, why, approver, outcome, duration_ms, caller, chain_seq, prev_hash, hash)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
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
    ])?;
    checkpoint_if_due(&tx, seq, &hash, head.checkpointed, false)?;
    tx.commit()?;
    Ok(id)
}

/// Ends the open record `id` with `finish` applied to it, at the head of the chain. A
/// record already in the chain (or gone) is left alone: its end was written before.
pub(crate) fn close(
    conn: &Connection,
    id: i64,
    finish: impl FnOnce(&mut AuditEntry),
) -> Result<(), StoreError> {
    let tx = immediate(conn)?;
    close_in(&tx, id, finish)?;
    tx.commit()?;
    Ok(())
}

/// [`close`] inside a transaction the caller holds.
pub(crate) fn close_in(
    tx: &Transaction<'_>,
    id: i64,
    finish: impl FnOnce(&mut AuditEntry),
) -> Result<(), StoreError> {
    let row = tx
        .prepare_cached(&format!(
            "SELECT {} FROM audit WHERE id = ?1 AND chain_seq IS NULL",
            super::ENTRY_COLUMNS
        ))?
        .query_row([id], |r| super::entry_from_row(r, 0))
        .optional()?;
    let Some(row) = row else { return Ok(()) };
    let mut entry = super::checked(row)?;
    finish(&mut entry);
    let head = head(tx)?;
    let seq = head.seq + 1;
    let hash = link_hash(&head.hash, seq, id, &entry);
    let r = &entry.record;
    tx.prepare_cached(
        "UPDATE audit SET outcome = ?2, rule = ?3, why = ?4, duration_ms = ?5, owner = NULL,
                          chain_seq = ?6, prev_hash = ?7, hash = ?8
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
        hash.as_slice()
    ])?;
    checkpoint_if_due(tx, seq, &hash, head.checkpointed, false)
}

/// Signs the head at `seq` when [`CHECKPOINT_EVERY`] positions have passed since the last
/// checkpoint, or (`tail`) when any have. A key that cannot be read or made skips the
/// checkpoint rather than the record: `tackle audit verify` reports the unsigned tail.
fn checkpoint_if_due(
    conn: &Connection,
    seq: i64,
    hash: &[u8],
    checkpointed: i64,
    tail: bool,
) -> Result<(), StoreError> {
    let due = seq - checkpointed >= CHECKPOINT_EVERY || (tail && seq > checkpointed);
    if !due {
        return Ok(());
    }
    let Ok(Some(key)) = key::key_for(conn.path(), true) else {
        return Ok(());
    };
    write_checkpoint(conn, &key, seq, hash)
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
