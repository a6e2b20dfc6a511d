//! Checking a session's signed entries (`tackle sessions verify`), and rotating an agent's
//! identity key (docs/decisions/0036-signed-session-entries.md).

use crate::error::StoreError;
use crate::identity::{entry_message, rotation_message, verify, KeyRotation};
use crate::sessions::SessionId;
use crate::Store;
use rusqlite::{Connection, OptionalExtension};
use serde::Serialize;
use std::collections::{HashMap, HashSet};

/// The schema version that began signing entries.
const SIGNING_VERSION: i64 = 18;

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
}

/// Why one entry fails.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EntryProblem {
    /// The signature does not match the entry as stored: it was edited after it was written.
    Altered,
    /// Signed by a key that is neither the agent's current one nor reached from it by a
    /// signed rotation.
    UnknownKey { key_id: String },
    /// Signed by a key after that key was rotated out.
    RetiredKey { key_id: String, rotated_at: String },
    /// No signature, yet written after signing began (or after signed entries): removed.
    SignatureRemoved,
    /// Entries before this one are missing (the numbers jump from `after`).
    Gap { after: i64 },
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
    pub entry: i64,
    pub problem: EntryProblem,
}

/// What `sessions verify` found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionVerification {
    pub session: SessionId,
    pub agent: String,
    pub entries: u64,
    /// Entries whose signature verifies under a key of the agent.
    pub signed: u64,
    /// Entries written before signing began (schema version 18): not covered.
    pub unsigned_legacy: u64,
    pub anchor: KeyAnchor,
    /// The agent's keys the check accepts: the current one first, then each it rotated from.
    pub keys: Vec<String>,
    /// A recorded rotation that does not carry both keys' signatures, where the chain of keys
    /// stops (a key file that was lost and made again): `(old key, new key)`.
    pub unproven_rotation: Option<(String, String)>,
    pub failures: Vec<EntryFailure>,
}

impl SessionVerification {
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
        self.with_conn(move |conn| {
            let agent: String = conn
                .query_row("SELECT agent FROM sessions WHERE id = ?1", [&id.0], |r| {
                    r.get(0)
                })
                .optional()?
                .ok_or_else(|| StoreError::UnknownSession(id.0.clone()))?;
            let file = if keys.is_in_memory() {
                None
            } else {
                keys.file_key(&agent)?
            };
            let (anchor, start) = match file {
                Some(key) => (KeyAnchor::KeyFile, Some(key)),
                None => match recorded_current(conn, &agent)? {
                    Some(key) => (KeyAnchor::Recorded, Some(key)),
                    None => (KeyAnchor::None, None),
                },
            };
            let chain = key_chain(conn, &agent, start)?;
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
            check_entries(conn, &id.0, &chain.retired, &mut v)?;
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
        self.with_conn(move |conn| keys.rotate(conn, &agent)).await
    }
}

fn recorded_current(conn: &Connection, agent: &str) -> Result<Option<String>, StoreError> {
    Ok(conn
        .query_row(
            "SELECT key_id FROM agent_keys WHERE agent = ?1 AND successor IS NULL",
            [agent],
            |r| r.get(0),
        )
        .optional()?)
}

/// The keys reached from the trusted one.
struct Chain {
    order: Vec<String>,
    /// Each accepted key and when it was rotated out (`None`: the current one).
    retired: HashMap<String, Option<String>>,
    unproven: Option<(String, String)>,
}

/// From the trusted key back through each recorded rotation whose two signatures verify:
/// the new key's signature is what a forged predecessor cannot have.
fn key_chain(conn: &Connection, agent: &str, start: Option<String>) -> Result<Chain, StoreError> {
    let mut chain = Chain {
        order: Vec::new(),
        retired: HashMap::new(),
        unproven: None,
    };
    let Some(mut current) = start else {
        return Ok(chain);
    };
    chain.order.push(current.clone());
    chain.retired.insert(current.clone(), None);
    let mut seen = HashSet::from([current.clone()]);
    let mut stmt = conn.prepare(
        "SELECT key_id, rotated_at, old_signature, new_signature FROM agent_keys
          WHERE agent = ?1 AND successor = ?2",
    )?;
    loop {
        let row = stmt
            .query_row([agent, &current], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, Option<String>>(1)?,
                    r.get::<_, Option<Vec<u8>>>(2)?,
                    r.get::<_, Option<Vec<u8>>>(3)?,
                ))
            })
            .optional()?;
        let Some((old, at, old_sig, new_sig)) = row else {
            return Ok(chain);
        };
        let at = at.unwrap_or_default();
        let message = rotation_message(agent, &old, &current, &at);
        let proven = matches!((&old_sig, &new_sig), (Some(o), Some(n))
            if verify(&old, &message, o) && verify(&current, &message, n));
        if !proven || !seen.insert(old.clone()) {
            chain.unproven = Some((old, current));
            return Ok(chain);
        }
        chain.order.push(old.clone());
        chain.retired.insert(old.clone(), Some(at));
        current = old;
    }
}

fn check_entries(
    conn: &Connection,
    session: &str,
    keys: &HashMap<String, Option<String>>,
    v: &mut SessionVerification,
) -> Result<(), StoreError> {
    // When signing began here: an unsigned entry written since had its signature removed.
    let signing_since: Option<String> = conn
        .query_row(
            "SELECT applied_at FROM schema_migrations WHERE version = ?1",
            [SIGNING_VERSION],
            |r| r.get(0),
        )
        .optional()?;
    let mut stmt = conn.prepare(
        "SELECT seq, kind, content, created_at, key_id, signature FROM entries
          WHERE session_id = ?1 ORDER BY seq",
    )?;
    let mut rows = stmt.query([session])?;
    let mut last = 0i64;
    let mut seen_signed = false;
    while let Some(r) = rows.next()? {
        let seq: i64 = r.get(0)?;
        let kind: String = r.get(1)?;
        let content: String = r.get(2)?;
        let created_at: String = r.get(3)?;
        let key_id: Option<String> = r.get(4)?;
        let signature: Option<Vec<u8>> = r.get(5)?;
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
                let after_signing = signing_since
                    .as_deref()
                    .is_some_and(|s| created_at.as_str() >= s);
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
