//! Checking the audit chain and its checkpoints (`tackle audit verify`).

use super::chain::{link_hash, GENESIS};
use super::detail::{detail_from_row, DETAIL_COLUMNS};
use super::key;
use super::{checked, entry_from_row, ENTRY_COLUMNS, ENTRY_COLUMN_COUNT, RUNNING};
use crate::error::StoreError;
use crate::Store;

/// The first thing found wrong, in chain order. Records are named by their row id (`#17`),
/// as `tackle audit export` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChainProblem {
    /// The record's content no longer gives its stored hash.
    Altered { id: i64, seq: i64 },
    /// Chain positions `from..=to` are missing.
    Removed {
        from: i64,
        to: i64,
        after: Option<i64>,
        before: i64,
    },
    /// The record does not link to the one before it in the chain.
    Unlinked {
        id: i64,
        seq: i64,
        after: Option<i64>,
    },
    /// The chain up to a checkpoint hashes to something else than was signed: rewritten as a
    /// whole (hashes recomputed) somewhere at or before `seq`.
    Rewritten { seq: i64, id: i64 },
    /// A signed checkpoint names a position past the end of the chain: records were removed
    /// from its end.
    Truncated {
        checkpoint: i64,
        last: i64,
        last_id: Option<i64>,
    },
    /// A checkpoint whose signature does not verify with the trusted key.
    BadSignature { seq: i64 },
    /// A checkpoint signed by a key other than the trusted one.
    OtherKey { seq: i64, public_key: String },
    /// A finished record written after the chain began that is not in it.
    Outside { id: i64 },
}

impl std::fmt::Display for ChainProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let id = |i: &Option<i64>| {
            i.map(|i| format!("#{i}"))
                .unwrap_or_else(|| "the start".into())
        };
        match self {
            Self::Altered { id, seq } => write!(
                f,
                "record #{id} (chain position {seq}) was altered: its content does not match its hash"
            ),
            Self::Removed { from, to, after, before } => {
                let what = if from == to {
                    format!("chain position {from} is")
                } else {
                    format!("chain positions {from}–{to} are")
                };
                write!(
                    f,
                    "{what} missing: the record between {} and #{before} was removed",
                    id(after)
                )
            }
            Self::Unlinked { id: this, seq, after } => write!(
                f,
                "record #{this} (chain position {seq}) does not follow {} in the chain: records were removed or reordered",
                id(after)
            ),
            Self::Rewritten { seq, id } => write!(
                f,
                "the chain up to record #{id} (position {seq}) differs from the signed checkpoint at that position: records at or before it were rewritten"
            ),
            Self::Truncated { checkpoint, last, last_id } => write!(
                f,
                "records after {} (chain position {last}) were removed: a signed checkpoint covers position {checkpoint}",
                id(last_id)
            ),
            Self::BadSignature { seq } => write!(
                f,
                "the checkpoint at chain position {seq} has a signature that does not verify"
            ),
            Self::OtherKey { seq, public_key } => write!(
                f,
                "the checkpoint at chain position {seq} was signed by another key ({public_key})"
            ),
            Self::Outside { id } => write!(
                f,
                "record #{id} is finished but not in the chain: its chain fields were removed"
            ),
        }
    }
}

/// What `audit verify` found.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AuditVerification {
    /// Records in the chain.
    pub chained: u64,
    /// Signed checkpoints checked.
    pub checkpoints: u64,
    /// Calls still running (they join the chain when they end).
    pub running: u64,
    /// Records written before the chain existed (schema version 12), not covered.
    pub before_chain: u64,
    /// Records past the last checkpoint: covered by the chain, not yet by a signature.
    pub unsigned_tail: u64,
    /// The first problem, `None` when the log verifies.
    pub problem: Option<ChainProblem>,
}

struct Checkpoint {
    seq: i64,
    hash: Vec<u8>,
    signed_at: String,
    public_key: Vec<u8>,
    signature: Vec<u8>,
}

impl Store {
    /// The public half of the key that signs this store's checkpoints, made if there is none.
    pub async fn audit_public_key(&self) -> Result<[u8; 32], StoreError> {
        self.with_conn(|conn| {
            key::key_for(conn.path(), true)?
                .map(|k| k.public())
                .ok_or_else(|| StoreError::AuditKey("no key".into()))
        })
        .await
    }

    /// Checks the whole chain and every checkpoint against `trusted` (default: this store's
    /// own key; none at all when it has none yet, and then any checkpoint fails).
    pub async fn verify_audit(
        &self,
        trusted: Option<[u8; 32]>,
    ) -> Result<AuditVerification, StoreError> {
        self.with_conn(move |conn| {
            let trusted = match trusted {
                Some(k) => Some(k),
                None => key::key_for(conn.path(), false)?.map(|k| k.public()),
            };
            // One read transaction: a consistent snapshot while writers go on.
            let tx = conn.transaction()?;
            let out = verify(&tx, trusted)?;
            tx.commit()?;
            Ok(out)
        })
        .await
    }
}

fn verify(
    conn: &rusqlite::Connection,
    trusted: Option<[u8; 32]>,
) -> Result<AuditVerification, StoreError> {
    let mut out = AuditVerification::default();
    let checkpoints: Vec<Checkpoint> = conn
        .prepare("SELECT seq, hash, signed_at, public_key, signature FROM audit_checkpoints ORDER BY seq")?
        .query_map([], |r| {
            Ok(Checkpoint {
                seq: r.get(0)?,
                hash: r.get(1)?,
                signed_at: r.get(2)?,
                public_key: r.get(3)?,
                signature: r.get(4)?,
            })
        })?
        .collect::<Result<_, _>>()?;
    let mut problems: Vec<(i64, ChainProblem)> = Vec::new();
    for cp in &checkpoints {
        let problem = match trusted {
            Some(k) if k.as_slice() != cp.public_key.as_slice() => Some(ChainProblem::OtherKey {
                seq: cp.seq,
                public_key: key::hex(&cp.public_key),
            }),
            None => Some(ChainProblem::OtherKey {
                seq: cp.seq,
                public_key: key::hex(&cp.public_key),
            }),
            Some(k) if !key::verify(&k, cp.seq, &cp.hash, &cp.signed_at, &cp.signature) => {
                Some(ChainProblem::BadSignature { seq: cp.seq })
            }
            Some(_) => None,
        };
        if let Some(p) = problem {
            problems.push((cp.seq, p));
        }
    }
    out.checkpoints = checkpoints.len() as u64;

    let mut stmt = conn.prepare(&format!(
        "SELECT id, chain_seq, prev_hash, hash, COALESCE(chain_version, 1), {ENTRY_COLUMNS}, {DETAIL_COLUMNS}
         FROM audit WHERE chain_seq IS NOT NULL ORDER BY chain_seq"
    ))?;
    let mut rows = stmt.query([])?;
    let mut expected = 1i64;
    let mut prev = GENESIS.to_vec();
    let mut prev_id: Option<i64> = None;
    let mut next_cp = checkpoints.iter().peekable();
    while let Some(r) = rows.next()? {
        let id: i64 = r.get(0)?;
        let seq: i64 = r.get(1)?;
        let stored_prev: Option<Vec<u8>> = r.get(2)?;
        let stored: Option<Vec<u8>> = r.get(3)?;
        let version: i64 = r.get(4)?;
        let entry = checked(entry_from_row(r, 5)?)?;
        let detail = detail_from_row(r, 5 + ENTRY_COLUMN_COUNT)?;
        out.chained += 1;
        let at = |p| (seq, p);
        if seq != expected {
            problems.push(at(ChainProblem::Removed {
                from: expected,
                to: seq - 1,
                after: prev_id,
                before: id,
            }));
        }
        let stored_prev = stored_prev.unwrap_or_default();
        let stored = stored.unwrap_or_default();
        let hash = link_hash(&stored_prev, seq, id, version, &entry, &detail);
        if hash.as_ref().map(|h| h.as_slice()) != Some(stored.as_slice()) {
            problems.push(at(ChainProblem::Altered { id, seq }));
        } else if stored_prev != prev && seq == expected {
            problems.push(at(ChainProblem::Unlinked {
                id,
                seq,
                after: prev_id,
            }));
        }
        while let Some(cp) = next_cp.next_if(|cp| cp.seq <= seq) {
            if cp.seq == seq && cp.hash != stored {
                problems.push(at(ChainProblem::Rewritten { seq, id }));
            }
        }
        if !problems.is_empty() {
            // Everything after the first problem links to a record that cannot be trusted.
            break;
        }
        prev = stored;
        prev_id = Some(id);
        expected = seq + 1;
    }
    drop(rows);
    let last = expected - 1;
    if problems.is_empty() {
        if let Some(cp) = checkpoints.iter().rev().find(|cp| cp.seq > last) {
            problems.push((
                cp.seq,
                ChainProblem::Truncated {
                    checkpoint: cp.seq,
                    last,
                    last_id: prev_id,
                },
            ));
        }
    }
    let signed = checkpoints.iter().map(|c| c.seq).max().unwrap_or(0);
    out.unsigned_tail = u64::try_from(last - signed).unwrap_or(0);

    let legacy: i64 = conn.query_row(
        "SELECT COALESCE(MAX(legacy_max_id), 0) FROM audit_chain_origin",
        [],
        |r| r.get(0),
    )?;
    let (running, before, outside): (i64, i64, Option<i64>) = conn.query_row(
        "SELECT (SELECT COUNT(*) FROM audit WHERE chain_seq IS NULL AND outcome = ?1 AND id > ?2),
                (SELECT COUNT(*) FROM audit WHERE id <= ?2),
                (SELECT MIN(id) FROM audit WHERE chain_seq IS NULL AND outcome <> ?1 AND id > ?2)",
        rusqlite::params![RUNNING, legacy],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    out.running = u64::try_from(running).unwrap_or(0);
    out.before_chain = u64::try_from(before).unwrap_or(0);
    if let Some(id) = outside {
        problems.push((i64::MAX, ChainProblem::Outside { id }));
    }
    // The earliest problem in chain order is the one named.
    problems.sort_by_key(|(seq, _)| *seq);
    out.problem = problems.into_iter().next().map(|(_, p)| p);
    Ok(out)
}
