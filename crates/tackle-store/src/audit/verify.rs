//! Checking the audit chain and its checkpoints (`tackle audit verify`).
//!
//! Which keys are trusted. Each checkpoint stores the public key that signed it; it counts
//! only when that key is trusted and the signature verifies with it. On SQLite one store
//! signs, with its own key. On a shared engine each daemon signs with the key of its own
//! state directory and registers it (`audit_keys`: key, host, state directory) when it first
//! signs, so by default every daemon trusts its own key and the registered ones and checks
//! every checkpoint. That catches edits by anyone who changes records, or checkpoints,
//! without also registering a key of their own; someone with full write access to the
//! database could do that, so an operator who needs more pins the keys, kept outside the
//! database ([`Store::verify_audit_pinned`], or `verify_audit(Some(key))` for one key), and
//! [`Store::audit_signers`] lists what is registered to compare against.

use super::chain::{bytes, link_hash, GENESIS};
use super::detail::{detail_from, DETAIL_COLUMNS};
use super::key;
use super::{checked, entry_from, ENTRY_COLUMNS, ENTRY_COLUMN_COUNT, RUNNING};
use crate::error::StoreError;
use crate::sql::Engine;
use crate::sql::{in_tx, vals, Db, Lite};
use crate::Store;

/// The first thing found wrong, in chain order. Records are named by their row id (`#17`),
/// as `tackle audit export` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChainProblem {
    /// The record's content no longer gives its stored hash.
    Altered {
        /// The record's row id.
        id: i64,
        /// Its chain position.
        seq: i64,
    },
    /// Chain positions `from..=to` are missing.
    Removed {
        /// First missing chain position.
        from: i64,
        /// Last missing chain position.
        to: i64,
        /// Row id of the record before the gap (`None`: the gap is at the start).
        after: Option<i64>,
        /// Row id of the record after the gap.
        before: i64,
    },
    /// The record does not link to the one before it in the chain.
    Unlinked {
        /// The record's row id.
        id: i64,
        /// Its chain position.
        seq: i64,
        /// Row id of the record before it in the chain (`None`: it is first).
        after: Option<i64>,
    },
    /// The chain up to a checkpoint hashes to something else than was signed: rewritten as a
    /// whole (hashes recomputed) somewhere at or before `seq`.
    Rewritten {
        /// The checkpoint's chain position.
        seq: i64,
        /// Row id of the record at that position.
        id: i64,
    },
    /// A signed checkpoint names a position past the end of the chain: records were removed
    /// from its end.
    Truncated {
        /// The chain position the signed checkpoint covers.
        checkpoint: i64,
        /// The last chain position present.
        last: i64,
        /// Row id of the last record present (`None`: the chain is empty).
        last_id: Option<i64>,
    },
    /// A checkpoint whose signature does not verify with the trusted key that it names.
    BadSignature {
        /// The checkpoint's chain position.
        seq: i64,
    },
    /// A checkpoint signed by a key that is not trusted.
    OtherKey {
        /// The checkpoint's chain position.
        seq: i64,
        /// The untrusted key, hex Ed25519.
        public_key: String,
    },
    /// A finished record written after the chain began that is not in it.
    Outside {
        /// The record's row id.
        id: i64,
    },
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
                "the checkpoint at chain position {seq} was signed by another key ({public_key}), not a trusted one"
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

/// Chain rows read per statement: the log is checked in pages, never held whole.
const PAGE: i64 = 500;

struct Checkpoint {
    seq: i64,
    hash: Vec<u8>,
    signed_at: String,
    public_key: Vec<u8>,
    signature: Vec<u8>,
}

/// A daemon's checkpoint key registered in a shared audit log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditSigner {
    /// Hex Ed25519 public key.
    pub public_key: String,
    /// The host it signed from, and its state directory there.
    pub host: String,
    /// The state directory it signed from, on `host`.
    pub state_dir: String,
    /// When it first signed (RFC 3339).
    pub first_used: String,
}

impl Store {
    /// The public half of the key that signs this store's checkpoints, made if there is none.
    pub async fn audit_public_key(&self) -> Result<[u8; 32], StoreError> {
        let db_path = self.path.clone();
        // Through the file's connection: a store opened on first use makes its state
        // directory, where the key goes, before the key is made.
        self.with_conn(move |_| {
            key::key_for(db_path.as_deref(), true)?
                .map(|k| k.public())
                .ok_or_else(|| StoreError::AuditKey("no key".into()))
        })
        .await
    }

    /// Checks the whole chain and every checkpoint. A checkpoint must be signed by a trusted
    /// key: `trusted` alone when given; by default this store's own key (none at all when it
    /// has none yet, and then any checkpoint fails) and, on a shared engine, the keys every
    /// daemon registered when it first signed (see [`Self::audit_signers`]), so any daemon
    /// checks every checkpoint. [`Self::verify_audit_pinned`] trusts only the keys given.
    pub async fn verify_audit(
        &self,
        trusted: Option<[u8; 32]>,
    ) -> Result<AuditVerification, StoreError> {
        if let Some(k) = trusted {
            return self.verify_with(vec![k], false).await;
        }
        let db_path = self.path.clone();
        let own = tokio::task::spawn_blocking(move || key::key_for(db_path.as_deref(), false))
            .await
            .map_err(|e| StoreError::Task(e.to_string()))??
            .map(|k| k.public());
        self.verify_with(own.into_iter().collect(), true).await
    }

    /// [`Self::verify_audit`] trusting exactly `keys`, nothing registered in the database: what
    /// an operator who keeps the daemons' public keys elsewhere checks against, so that whoever
    /// can write the database cannot add a key of their own to sign a rewritten chain.
    pub async fn verify_audit_pinned(
        &self,
        keys: Vec<[u8; 32]>,
    ) -> Result<AuditVerification, StoreError> {
        self.verify_with(keys, false).await
    }

    /// The keys registered in a shared audit log, oldest first; empty on SQLite, where only
    /// this store's own key signs.
    pub async fn audit_signers(&self) -> Result<Vec<AuditSigner>, StoreError> {
        if self.audit_ctx().engine == Engine::Sqlite {
            return Ok(Vec::new());
        }
        self.with_db(|db| {
            db.query(
                "SELECT public_key, host, state_dir, first_used FROM audit_keys ORDER BY first_used, public_key",
                &[],
            )?
            .iter()
            .map(|r| {
                Ok(AuditSigner {
                    public_key: r.text(0)?,
                    host: r.text(1)?,
                    state_dir: r.text(2)?,
                    first_used: r.text(3)?,
                })
            })
            .collect()
        })
        .await
    }

    async fn verify_with(
        &self,
        mut trusted: Vec<[u8; 32]>,
        registered: bool,
    ) -> Result<AuditVerification, StoreError> {
        match self.audit_ctx().engine {
            Engine::Sqlite => {
                self.with_conn(move |conn| {
                    // One read transaction: a consistent snapshot while writers go on.
                    let tx = conn.transaction()?;
                    let out = verify(&mut Lite(&tx), &trusted)?;
                    tx.commit()?;
                    Ok(out)
                })
                .await
            }
            Engine::Postgres => {
                self.with_db(move |db| {
                    in_tx(db, |db| {
                        // One snapshot, as on SQLite: appends of other daemons go on.
                        db.execute(
                            "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY",
                            &[],
                        )?;
                        if registered {
                            for r in db.query("SELECT public_key FROM audit_keys", &[])? {
                                if let Some(k) = key::unhex(&r.text(0)?)
                                    .and_then(|k| <[u8; 32]>::try_from(k).ok())
                                {
                                    trusted.push(k);
                                }
                            }
                        }
                        verify(db, &trusted)
                    })
                })
                .await
            }
        }
    }
}

fn verify(db: &mut dyn Db, trusted: &[[u8; 32]]) -> Result<AuditVerification, StoreError> {
    let mut out = AuditVerification::default();
    let checkpoints = db
        .query(
            "SELECT seq, hex(hash), signed_at, hex(public_key), hex(signature) FROM audit_checkpoints ORDER BY seq",
            &[],
        )?
        .iter()
        .map(|r| {
            Ok(Checkpoint {
                seq: r.int(0)?,
                hash: bytes(r.opt_text(1)?),
                signed_at: r.text(2)?,
                public_key: bytes(r.opt_text(3)?),
                signature: bytes(r.opt_text(4)?),
            })
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    let mut problems: Vec<(i64, ChainProblem)> = Vec::new();
    for cp in &checkpoints {
        let problem = match trusted
            .iter()
            .find(|k| k.as_slice() == cp.public_key.as_slice())
        {
            None => Some(ChainProblem::OtherKey {
                seq: cp.seq,
                public_key: key::hex(&cp.public_key),
            }),
            Some(k) if !key::verify(k, cp.seq, &cp.hash, &cp.signed_at, &cp.signature) => {
                Some(ChainProblem::BadSignature { seq: cp.seq })
            }
            Some(_) => None,
        };
        if let Some(p) = problem {
            problems.push((cp.seq, p));
        }
    }
    out.checkpoints = checkpoints.len() as u64;

    let page = format!(
        "SELECT id, chain_seq, hex(prev_hash), hex(hash), COALESCE(chain_version, 1), {ENTRY_COLUMNS}, {DETAIL_COLUMNS}
         FROM audit WHERE chain_seq IS NOT NULL AND chain_seq > ?1 ORDER BY chain_seq LIMIT ?2"
    );
    let mut expected = 1i64;
    let mut prev = GENESIS.to_vec();
    let mut prev_id: Option<i64> = None;
    let mut next_cp = checkpoints.iter().peekable();
    let mut after = i64::MIN;
    'pages: loop {
        let rows = db.query(&page, vals![after, PAGE])?;
        let Some(last) = rows.last() else { break };
        after = last.int(1)?;
        let full = rows.len() as i64 == PAGE;
        for r in &rows {
            let id = r.int(0)?;
            let seq = r.int(1)?;
            let stored_prev = bytes(r.opt_text(2)?);
            let stored = bytes(r.opt_text(3)?);
            let version = r.int(4)?;
            let entry = checked(entry_from(r, 5)?)?;
            let detail = detail_from(r, 5 + ENTRY_COLUMN_COUNT)?;
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
                break 'pages;
            }
            prev = stored;
            prev_id = Some(id);
            expected = seq + 1;
        }
        if !full {
            break;
        }
    }
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

    let legacy = match db.query_opt(
        "SELECT COALESCE(MAX(legacy_max_id), 0) FROM audit_chain_origin",
        &[],
    )? {
        Some(r) => r.int(0)?,
        None => 0,
    };
    let counts = db.query_opt(
        "SELECT (SELECT COUNT(*) FROM audit WHERE chain_seq IS NULL AND outcome = ?1 AND id > ?2),
                (SELECT COUNT(*) FROM audit WHERE id <= ?2),
                (SELECT MIN(id) FROM audit WHERE chain_seq IS NULL AND outcome <> ?1 AND id > ?2)",
        vals![RUNNING, legacy],
    )?;
    let (running, before, outside) = match counts {
        Some(r) => (r.int(0)?, r.int(1)?, r.opt_int(2)?),
        None => (0, 0, None),
    };
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
