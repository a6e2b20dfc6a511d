//! Each agent's Ed25519 identity key, which signs the entries written to its sessions
//! (docs/decisions/0036-signed-session-entries.md). The secret is a 32-byte seed, hex, in
//! `keys/<agent>.ed25519` in the state directory (0600, in a 0700 directory), made on first
//! use; its public half (hex, also the key's id) is recorded in `agent_keys`. A rotation
//! records the successor, signed by the old key and by the new one. A store with no state
//! directory (in memory) keeps its keys as long as the handle.

use crate::audit::{hex, unhex};
use crate::error::StoreError;
use crate::now_rfc3339;
use crate::private_file::{private_dir, read_private, write_private, Publish};
use crate::sql::{vals, Db};
use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{Ed25519KeyPair, KeyPair, UnparsedPublicKey, ED25519};
use serde::Serialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The directory of the key files, in the state directory.
pub const KEYS_DIR: &str = "keys";

/// What an entry's signature covers, before the entry's fields.
const ENTRY_DOMAIN: &[u8] = b"tackle-session-entry-v1";
/// What a rotation's two signatures cover, before its fields.
const ROTATION_DOMAIN: &[u8] = b"tackle-agent-key-rotation-v1";

/// A loaded identity key.
pub(crate) struct AgentKey {
    /// Kept to put the file back when a rotation's commit fails.
    seed: [u8; 32],
    pair: Ed25519KeyPair,
    id: String,
}

impl AgentKey {
    fn from_seed(seed: [u8; 32]) -> Result<Self, StoreError> {
        let pair = Ed25519KeyPair::from_seed_unchecked(&seed)
            .map_err(|_| StoreError::AgentKey("not an Ed25519 seed".into()))?;
        let id = hex(pair.public_key().as_ref());
        Ok(Self { seed, pair, id })
    }

    fn fresh() -> Result<Self, StoreError> {
        let mut seed = [0u8; 32];
        SystemRandom::new()
            .fill(&mut seed)
            .map_err(|_| StoreError::AgentKey("the system's random source failed".into()))?;
        Self::from_seed(seed)
    }

    /// The public key, hex: the key's id.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    pub(crate) fn sign(&self, message: &[u8]) -> Vec<u8> {
        self.pair.sign(message).as_ref().to_vec()
    }
}

/// Whether `signature` over `message` is the key's whose id (public key, hex) is `key_id`.
pub(crate) fn verify(key_id: &str, message: &[u8], signature: &[u8]) -> bool {
    let Some(public) = unhex(key_id).filter(|p| p.len() == 32) else {
        return false;
    };
    UnparsedPublicKey::new(&ED25519, public)
        .verify(message, signature)
        .is_ok()
}

/// The bytes an entry's signature covers: every stored field that says what the entry is
/// and where it stands, each length-prefixed so no two entries give the same bytes. The
/// content is the JSON text as stored, not re-serialised.
pub(crate) fn entry_message(
    session: &str,
    seq: i64,
    kind: &str,
    created_at: &str,
    content: &str,
    key_id: &str,
) -> Vec<u8> {
    let mut m = Vec::with_capacity(
        ENTRY_DOMAIN.len() + 48 + session.len() + kind.len() + created_at.len() + content.len(),
    );
    m.extend_from_slice(ENTRY_DOMAIN);
    for field in [session, kind, created_at, content, key_id] {
        m.extend_from_slice(&(field.len() as u64).to_be_bytes());
        m.extend_from_slice(field.as_bytes());
    }
    m.extend_from_slice(&seq.to_be_bytes());
    m
}

/// The bytes a rotation's signatures cover.
pub(crate) fn rotation_message(agent: &str, old: &str, new: &str, at: &str) -> Vec<u8> {
    let mut m = Vec::from(ROTATION_DOMAIN);
    for field in [agent, old, new, at] {
        m.extend_from_slice(&(field.len() as u64).to_be_bytes());
        m.extend_from_slice(field.as_bytes());
    }
    m
}

/// The key file of `agent`. A name the id rule accepts is its own file name; any other
/// (stored before names were checked) is hex behind `_`, which no accepted name starts with.
pub fn key_file(state_dir: &Path, agent: &str) -> PathBuf {
    let name = match tackle_protocol::ids::check(tackle_protocol::ids::IdKind::Agent, agent) {
        Ok(()) => format!("{agent}.ed25519"),
        Err(_) => format!("_{}.ed25519", hex(agent.as_bytes())),
    };
    state_dir.join(KEYS_DIR).join(name)
}

/// The key in `path`; `None` when there is no file.
fn read_key(path: &Path) -> Result<Option<AgentKey>, StoreError> {
    let text = read_private(path)
        .map_err(|e| StoreError::AgentKey(format!("cannot read {}: {e}", path.display())))?;
    let Some(text) = text else { return Ok(None) };
    let seed = unhex(text.trim())
        .and_then(|s| <[u8; 32]>::try_from(s).ok())
        .ok_or_else(|| {
            StoreError::AgentKey(format!(
                "{} does not hold a key (64 hex digits)",
                path.display()
            ))
        })?;
    AgentKey::from_seed(seed).map(Some)
}

/// The key in `path`, made there first when there is none. Of two processes making it at
/// once, both end up with the one placed first.
fn read_or_create(path: &Path) -> Result<AgentKey, StoreError> {
    if let Some(key) = read_key(path)? {
        return Ok(key);
    }
    let key = AgentKey::fresh()?;
    write_key(path, &key, Publish::IfAbsent)?;
    read_key(path)?
        .ok_or_else(|| StoreError::AgentKey(format!("{} vanished as it was made", path.display())))
}

fn write_key(path: &Path, key: &AgentKey, publish: Publish) -> Result<(), StoreError> {
    let io =
        |e: std::io::Error| StoreError::AgentKey(format!("cannot write {}: {e}", path.display()));
    if let Some(dir) = path.parent() {
        private_dir(dir).map_err(io)?;
    }
    write_private(path, &format!("{}\n", hex(&key.seed)), publish).map_err(io)?;
    Ok(())
}

/// The agents' keys this store has loaded, so an append signs without reading a file.
#[derive(Clone, Default)]
pub(crate) struct KeyCache {
    keys: Arc<Mutex<HashMap<String, Arc<AgentKey>>>>,
    /// Where the key files are; `None` for an in-memory store.
    state_dir: Option<PathBuf>,
}

/// The current key of `agent` as recorded (in the SQLite file, where it has one).
fn recorded_current(db: &mut dyn Db, agent: &str) -> Result<Option<String>, StoreError> {
    db.query_opt(
        "SELECT key_id FROM agent_keys WHERE agent = ?1 AND successor IS NULL",
        vals![agent],
    )?
    .map(|r| r.text(0))
    .transpose()
}

/// Whether `key_id` is recorded as a current key of `agent`.
fn is_current(db: &mut dyn Db, agent: &str, key_id: &str) -> Result<bool, StoreError> {
    Ok(db
        .query_opt(
            "SELECT 1 FROM agent_keys WHERE key_id = ?1 AND agent = ?2 AND successor IS NULL",
            vals![key_id, agent],
        )?
        .is_some())
}

impl KeyCache {
    pub(crate) fn new(state_dir: Option<PathBuf>) -> Self {
        Self {
            keys: Arc::default(),
            state_dir,
        }
    }

    fn cached(&self, agent: &str) -> Option<Arc<AgentKey>> {
        self.keys
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(agent)
            .cloned()
    }

    fn keep(&self, agent: &str, key: Arc<AgentKey>) {
        self.keys
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(agent.to_string(), key);
    }

    /// The key `agent` signs with now, inside the caller's write transaction: the cached one
    /// while the store still records it as current (one indexed read), else the key file's
    /// (made on first use), recorded as current. Another process's rotation is seen here, so
    /// a retired key never signs after its rotation.
    ///
    /// `shared`: the record is shared by daemons that each have their own key file, so the
    /// agent has one current key per daemon; a key file's key not yet recorded joins them
    /// rather than retiring another daemon's.
    pub(crate) fn current(
        &self,
        db: &mut dyn Db,
        agent: &str,
        shared: bool,
    ) -> Result<Arc<AgentKey>, StoreError> {
        if shared {
            return self.current_shared(db, agent);
        }
        let recorded = recorded_current(db, agent)?;
        let cached = self.cached(agent);
        if let Some(key) = &cached {
            if recorded.as_deref() == Some(key.id()) {
                return Ok(Arc::clone(key));
            }
        }
        let key = self.load(agent, cached)?;
        if recorded.as_deref() != Some(key.id()) {
            refuse_known(db, key.id())?;
            // The file holds a key the store has not recorded (it was lost and made again,
            // or the database came from elsewhere): it becomes current, linked to the one
            // before without the signatures that would prove the succession.
            if let Some(old) = &recorded {
                retire(db, old, key.id(), &now_rfc3339(), None)?;
            }
            record(db, agent, key.id())?;
        }
        self.keep(agent, Arc::clone(&key));
        Ok(key)
    }

    /// [`Self::current`] on a shared record.
    fn current_shared(&self, db: &mut dyn Db, agent: &str) -> Result<Arc<AgentKey>, StoreError> {
        let cached = self.cached(agent);
        if let Some(key) = &cached {
            if is_current(db, agent, key.id())? {
                return Ok(Arc::clone(key));
            }
        }
        let key = self.load(agent, cached)?;
        if !is_current(db, agent, key.id())? {
            // Rotated out, or another agent's: it does not sign again.
            refuse_known(db, key.id())?;
            // Not recorded yet: this daemon's key joins the agent's current keys (a lost key
            // file made again leaves the old key current too: without its secret it signs
            // nothing new).
            record(db, agent, key.id())?;
        }
        self.keep(agent, Arc::clone(&key));
        Ok(key)
    }

    /// The key to sign with: the key file's (made on first use), or in memory the one held.
    fn load(
        &self,
        agent: &str,
        cached: Option<Arc<AgentKey>>,
    ) -> Result<Arc<AgentKey>, StoreError> {
        Ok(match (&self.state_dir, cached) {
            (Some(dir), _) => Arc::new(read_or_create(&key_file(dir, agent))?),
            (None, Some(key)) => key,
            (None, None) => Arc::new(AgentKey::fresh()?),
        })
    }

    /// Makes a new key for `agent` and records it as the successor of its current one (made
    /// first if it has none), signed by both; the new key's file replaces the old one.
    pub(crate) fn rotate(
        &self,
        db: &mut dyn Db,
        agent: &str,
        shared: bool,
    ) -> Result<KeyRotation, StoreError> {
        db.begin()?;
        let staged = match self.stage_rotation(db, agent, shared) {
            Ok(staged) => staged,
            Err(e) => {
                db.rollback();
                return Err(e);
            }
        };
        let (old, new, rotated_at, file) = staged;
        if let Err(e) = db.commit() {
            db.rollback();
            // The store still names the old key: so must the file.
            if let Some(path) = &file {
                let _ = write_key(path, &old, Publish::Replace);
            }
            return Err(e);
        }
        self.keep(agent, Arc::clone(&new));
        Ok(KeyRotation {
            agent: agent.to_string(),
            old_key: old.id().to_string(),
            new_key: new.id().to_string(),
            rotated_at,
        })
    }

    /// A rotation's writes inside the caller's transaction, and the new key's file placed:
    /// the old key, the new one, when, and the file (to put back should the commit fail).
    #[allow(clippy::type_complexity)]
    fn stage_rotation(
        &self,
        db: &mut dyn Db,
        agent: &str,
        shared: bool,
    ) -> Result<(Arc<AgentKey>, Arc<AgentKey>, String, Option<PathBuf>), StoreError> {
        let old = self.current(db, agent, shared)?;
        let new = Arc::new(AgentKey::fresh()?);
        let at = now_rfc3339();
        let message = rotation_message(agent, old.id(), new.id(), &at);
        let signatures = (old.sign(&message), new.sign(&message));
        retire(db, old.id(), new.id(), &at, Some(&signatures))?;
        record(db, agent, new.id())?;
        let file = self.state_dir.as_deref().map(|dir| key_file(dir, agent));
        if let Some(path) = &file {
            write_key(path, &new, Publish::Replace)?;
        }
        Ok((old, new, at, file))
    }

    /// The key id in `agent`'s key file (none when there is no file or no state directory);
    /// for an in-memory store, the key it holds.
    pub(crate) fn file_key(&self, agent: &str) -> Result<Option<String>, StoreError> {
        match &self.state_dir {
            Some(dir) => Ok(read_key(&key_file(dir, agent))?.map(|k| k.id)),
            None => Ok(self.cached(agent).map(|k| k.id().to_string())),
        }
    }

    pub(crate) fn is_in_memory(&self) -> bool {
        self.state_dir.is_none()
    }
}

/// A key rotation as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeyRotation {
    /// The agent whose key was rotated.
    pub agent: String,
    /// The retired key (public key, hex).
    pub old_key: String,
    /// Its successor, which signs from now on.
    pub new_key: String,
    /// When it was rotated, RFC 3339 UTC.
    pub rotated_at: String,
}

/// Records `key_id` as `agent`'s current key; in the SQLite file, fails (unique index) while
/// another is current.
fn record(db: &mut dyn Db, agent: &str, key_id: &str) -> Result<(), StoreError> {
    // Two handles on one state directory may record its key file's key at once: once is
    // enough.
    db.execute(
        "INSERT INTO agent_keys (key_id, agent, created_at) VALUES (?1, ?2, ?3)
         ON CONFLICT (key_id) DO NOTHING",
        vals![key_id, agent, now_rfc3339()],
    )?;
    Ok(())
}

/// `old` is retired at `at`; `new` succeeds it, with the rotation's two signatures when the
/// old key could give one (binary, passed as hex: see `unhex` in the shared schema).
fn retire(
    db: &mut dyn Db,
    old: &str,
    new: &str,
    at: &str,
    signatures: Option<&(Vec<u8>, Vec<u8>)>,
) -> Result<(), StoreError> {
    db.execute(
        "UPDATE agent_keys SET successor = ?2, rotated_at = ?3, old_signature = unhex(?4),
                new_signature = unhex(?5)
          WHERE key_id = ?1",
        vals![
            old,
            new,
            at,
            signatures.map(|s| hex(&s.0)),
            signatures.map(|s| hex(&s.1))
        ],
    )?;
    Ok(())
}

/// A key file holding a key already on record but not current (an old file put back, or
/// another agent's) does not sign again.
fn refuse_known(db: &mut dyn Db, key_id: &str) -> Result<(), StoreError> {
    let known = db
        .query_opt("SELECT 1 FROM agent_keys WHERE key_id = ?1", vals![key_id])?
        .is_some();
    if known {
        return Err(StoreError::AgentKey(format!(
            "the key file holds key {}…, which was rotated out or is another agent's; `tackle sessions rotate-key` makes a new one",
            key_id.get(..16).unwrap_or(key_id)
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_file_is_private_and_read_back_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let path = key_file(dir.path(), "default");
        assert!(read_key(&path).unwrap().is_none());
        let made = read_or_create(&path).unwrap();
        let again = read_or_create(&path).unwrap();
        assert_eq!(made.id(), again.id());
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&dir.path().join(KEYS_DIR)), 0o700);
        let m = entry_message("s", 1, "user", "t", "{}", made.id());
        let sig = made.sign(&m);
        assert!(verify(made.id(), &m, &sig));
        let other = entry_message("s", 2, "user", "t", "{}", made.id());
        assert!(!verify(made.id(), &other, &sig));
    }

    #[test]
    fn a_name_that_reads_as_a_path_stays_inside_the_keys_directory() {
        let dir = Path::new("/state");
        assert_eq!(key_file(dir, "ops"), Path::new("/state/keys/ops.ed25519"));
        let odd = key_file(dir, "../../etc/x");
        assert_eq!(odd.parent(), Some(Path::new("/state/keys")));
        assert!(
            odd.to_string_lossy().contains("/_2e2e"),
            "{}",
            odd.display()
        );
    }

    #[test]
    fn fields_cannot_slide_into_one_another() {
        assert_ne!(
            entry_message("ab", 1, "c", "t", "{}", "k"),
            entry_message("a", 1, "bc", "t", "{}", "k")
        );
    }
}
