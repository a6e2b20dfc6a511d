//! Checking a session's signed entries (`tackle sessions verify`), and rotating an agent's
//! identity key (docs/decisions/0036-signed-session-entries.md).

use crate::audit::unhex;
use crate::error::StoreError;
use crate::identity::{entry_message, rotation_message, verify, KeyRotation};
use crate::sessions::SessionId;
use crate::sql::{vals, Db};
use crate::Store;
use serde::Serialize;
use std::collections::HashMap;

/// The schema version that began signing entries.
const SIGNING_VERSION: i64 = 18;
/// The shared schema's version that brought sessions there: every entry since is signed.
const SHARED_SIGNING_VERSION: i64 = 4;

/// Where the key the check starts from came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyAnchor {
    /// The agent's key file in the state directory: what the database says cannot move it.
    KeyFile,
    /// No key file: the key the database records as current (a database copied elsewhere).
    Recorded,
    /// The agent has no key at all.
    None,
    /// Sessions are shared by several daemons (`state_url: postgres://…`), each signing with
    /// its own key file: this daemon's key file (when it has one) and the current keys the
    /// daemons recorded in the shared database. Whoever can write that database could add a
    /// key there, as it could add a session.
    Shared,
}

/// Why one entry fails.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EntryProblem {
    /// The signature does not match the entry as stored: it was edited after it was written.
    Altered,
    /// Signed by a key that is neither the agent's current one nor reached from it by a
    /// signed rotation.
    UnknownKey {
        /// The signing key's id.
        key_id: String,
    },
    /// Signed by a key after that key was rotated out.
    RetiredKey {
        /// The signing key's id.
        key_id: String,
        /// When it was rotated out, RFC 3339 UTC.
        rotated_at: String,
    },
    /// No signature, yet written after signing began (or after signed entries): removed.
    SignatureRemoved,
    /// Entries before this one are missing (the numbers jump from `after`).
    Gap {
        /// The last entry number present before the gap.
        after: i64,
    },
}

impl std::fmt::Display for EntryProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let short = |k: &str| k.get(..16).unwrap_or(k).to_string();
        match self {
            Self::Altered => f.write_str(
                "its signature does not match its content: it was changed after it was written",
            ),
            Self::UnknownKey { key_id } => write!(
                f,
                "signed by key {}…, which is not the agent's key nor one it rotated from",
                short(key_id)
            ),
            Self::RetiredKey { key_id, rotated_at } => write!(
                f,
                "signed by key {}… after that key was rotated out at {rotated_at}",
                short(key_id)
            ),
            Self::SignatureRemoved => f.write_str(
                "it has no signature but was written after entries were signed: its signature was removed",
            ),
            Self::Gap { after } => write!(
                f,
                "the entries between {after} and it are missing: removed or renumbered"
            ),
        }
    }
}

/// One entry that fails, by its number in the session (`seq`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EntryFailure {
    /// The entry's number in the session (`seq`).
    pub entry: i64,
    /// What is wrong with it.
    pub problem: EntryProblem,
}

/// What `sessions verify` found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionVerification {
    /// The session checked.
    pub session: SessionId,
    /// The agent it belongs to, whose keys sign it.
    pub agent: String,
    /// Entries checked.
    pub entries: u64,
    /// Entries whose signature verifies under a key of the agent.
    pub signed: u64,
    /// Entries written before signing began (schema version 18): not covered.
    pub unsigned_legacy: u64,
    /// Where the chain of trusted keys starts.
    pub anchor: KeyAnchor,
    /// The agent's keys the check accepts: the current one first, then each it rotated from.
    pub keys: Vec<String>,
    /// A recorded rotation that does not carry both keys' signatures, where the chain of keys
    /// stops (a key file that was lost and made again): `(old key, new key)`.
    pub unproven_rotation: Option<(String, String)>,
    /// Every failing entry, in session order; empty when the session verifies.
    pub failures: Vec<EntryFailure>,
}

impl SessionVerification {
    /// Whether no entry failed; `unsigned_legacy` and `unproven_rotation` are reported apart.
    pub fn ok(&self) -> bool {
        self.failures.is_empty()
    }
}

impl Store {
    /// Checks every entry of session `id`: signed by its agent's key (or one the key was
    /// rotated from), unchanged since, numbered without gaps.
    pub async fn verify_session(&self, id: &SessionId) -> Result<SessionVerification, StoreError> {
        let id = id.clone();
        let keys = self.agent_keys.clone();
        let shared = self.sessions_shared();
        self.with_db(move |db| {
            let agent = db
                .query_opt("SELECT agent FROM sessions WHERE id = ?1", vals![&id.0])?
                .ok_or_else(|| StoreError::UnknownSession(id.0.clone()))?
                .text(0)?;
            let file = if keys.is_in_memory() {
                None
            } else {
                keys.file_key(&agent)?
            };
            let (anchor, starts) = if shared {
                // Every daemon's current key, this one's key file's first.
                let mut starts: Vec<String> = file.into_iter().collect();
                for key in recorded_current(db, &agent)? {
                    if !starts.contains(&key) {
                        starts.push(key);
                    }
                }
                let anchor = if starts.is_empty() {
                    KeyAnchor::None
                } else {
                    KeyAnchor::Shared
                };
                (anchor, starts)
            } else {
                match file {
                    Some(key) => (KeyAnchor::KeyFile, vec![key]),
                    None => match recorded_current(db, &agent)?.into_iter().next() {
                        Some(key) => (KeyAnchor::Recorded, vec![key]),
                        None => (KeyAnchor::None, Vec::new()),
                    },
                }
            };
            let mut chain = Chain {
                order: Vec::new(),
                retired: HashMap::new(),
                unproven: None,
            };
            for start in starts {
                key_chain(db, &agent, start, &mut chain)?;
            }
            let mut v = SessionVerification {
                session: id.clone(),
                agent,
                entries: 0,
                signed: 0,
                unsigned_legacy: 0,
                anchor,
                keys: chain.order,
                unproven_rotation: chain.unproven,
                failures: Vec::new(),
            };
            let signing_since = signing_since(db, shared)?;
            check_entries(db, &id.0, &chain.retired, signing_since.as_deref(), &mut v)?;
            Ok(v)
        })
        .await
    }

    /// Makes a new identity key for `agent`, recorded as its current key's successor (signed
    /// by both); entries signed by the old key still verify.
    pub async fn rotate_agent_key(&self, agent: &str) -> Result<KeyRotation, StoreError> {
        tackle_protocol::ids::check(tackle_protocol::ids::IdKind::Agent, agent)?;
        let agent = agent.to_string();
        let keys = self.agent_keys.clone();
        let shared = self.sessions_shared();
        self.with_db(move |db| keys.rotate(db, &agent, shared))
            .await
    }
}

/// When signing began where the sessions are: an unsigned entry written since had its
/// signature removed.
fn signing_since(db: &mut dyn Db, shared: bool) -> Result<Option<String>, StoreError> {
    let (sql, version) = if shared {
        (
            "SELECT applied_at FROM tackle_schema WHERE version = ?1",
            SHARED_SIGNING_VERSION,
        )
    } else {
        (
            "SELECT applied_at FROM schema_migrations WHERE version = ?1",
            SIGNING_VERSION,
        )
    };
    db.query_opt(sql, vals![version])?
        .map(|r| r.text(0))
        .transpose()
}

/// The agent's current keys as recorded: one in the SQLite file, one per daemon on a shared
/// engine; oldest first.
fn recorded_current(db: &mut dyn Db, agent: &str) -> Result<Vec<String>, StoreError> {
    db.query(
        "SELECT key_id FROM agent_keys WHERE agent = ?1 AND successor IS NULL
          ORDER BY created_at, key_id",
        vals![agent],
    )?
    .iter()
    .map(|r| r.text(0))
    .collect()
}

/// The keys reached from the trusted one.
struct Chain {
    order: Vec<String>,
    /// Each accepted key and when it was rotated out (`None`: the current one).
    retired: HashMap<String, Option<String>>,
    unproven: Option<(String, String)>,
}

/// From a trusted key back through each recorded rotation whose two signatures verify: the
/// new key's signature is what a forged predecessor cannot have. Adds to `chain` (several
/// trusted keys on a shared engine); the first unproven rotation met is the one reported.
fn key_chain(
    db: &mut dyn Db,
    agent: &str,
    start: String,
    chain: &mut Chain,
) -> Result<(), StoreError> {
    if chain.retired.contains_key(&start) {
        return Ok(());
    }
    let mut current = start;
    chain.order.push(current.clone());
    chain.retired.insert(current.clone(), None);
    loop {
        let row = db.query_opt(
            "SELECT key_id, rotated_at,
                    CASE WHEN old_signature IS NULL THEN NULL ELSE hex(old_signature) END,
                    CASE WHEN new_signature IS NULL THEN NULL ELSE hex(new_signature) END
               FROM agent_keys WHERE agent = ?1 AND successor = ?2",
            vals![agent, &current],
        )?;
        let Some(row) = row else {
            return Ok(());
        };
        let old = row.text(0)?;
        let at = row.opt_text(1)?.unwrap_or_default();
        let old_sig = row.opt_text(2)?.and_then(|h| unhex(&h));
        let new_sig = row.opt_text(3)?.and_then(|h| unhex(&h));
        let message = rotation_message(agent, &old, &current, &at);
        let proven = matches!((&old_sig, &new_sig), (Some(o), Some(n))
            if verify(&old, &message, o) && verify(&current, &message, n));
        if !proven || chain.retired.contains_key(&old) {
            if chain.unproven.is_none() {
                chain.unproven = Some((old, current));
            }
            return Ok(());
        }
        chain.order.push(old.clone());
        chain.retired.insert(old.clone(), Some(at));
        current = old;
    }
}

fn check_entries(
    db: &mut dyn Db,
    session: &str,
    keys: &HashMap<String, Option<String>>,
    signing_since: Option<&str>,
    v: &mut SessionVerification,
) -> Result<(), StoreError> {
    let rows = db.query(
        "SELECT seq, kind, content, created_at, key_id,
                CASE WHEN signature IS NULL THEN NULL ELSE hex(signature) END
           FROM entries WHERE session_id = ?1 ORDER BY seq",
        vals![session],
    )?;
    let mut last = 0i64;
    let mut seen_signed = false;
    for r in rows {
        let seq = r.int(0)?;
        let kind = r.text(1)?;
        let content = r.text(2)?;
        let created_at = r.text(3)?;
        let key_id = r.opt_text(4)?;
        // Hex that does not read back (it always does) counts as a signature that fails.
        let signature = r.opt_text(5)?.map(|h| unhex(&h).unwrap_or_default());
        v.entries += 1;
        let mut fail = |problem| {
            v.failures.push(EntryFailure {
                entry: seq,
                problem,
            })
        };
        if seq != last + 1 {
            fail(EntryProblem::Gap { after: last });
        }
        last = seq;
        let (key_id, signature) = match (key_id, signature) {
            (None, None) => {
                let after_signing = signing_since.is_some_and(|s| created_at.as_str() >= s);
                if seen_signed || after_signing {
                    fail(EntryProblem::SignatureRemoved);
                } else {
                    v.unsigned_legacy += 1;
                }
                continue;
            }
            (Some(k), Some(s)) => (k, s),
            _ => {
                fail(EntryProblem::Altered);
                continue;
            }
        };
        seen_signed = true;
        let message = entry_message(session, seq, &kind, &created_at, &content, &key_id);
        match keys.get(&key_id) {
            None => fail(EntryProblem::UnknownKey { key_id }),
            Some(_) if !verify(&key_id, &message, &signature) => fail(EntryProblem::Altered),
            Some(Some(rotated_at)) if created_at.as_str() > rotated_at.as_str() => {
                fail(EntryProblem::RetiredKey {
                    key_id,
                    rotated_at: rotated_at.clone(),
                })
            }
            Some(_) => v.signed += 1,
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "session_verify_tests.rs"]
mod tests;
