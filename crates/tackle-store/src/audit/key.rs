//! The Ed25519 key that signs the audit chain's checkpoints: a 32-byte seed, hex, in
//! `audit-key` in the state directory (mode 0600), made on first use. A store with no state
//! directory (in memory) signs with a key that lives as long as the process.

use crate::error::StoreError;
use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{Ed25519KeyPair, KeyPair, UnparsedPublicKey, ED25519};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// The key file's name in the state directory.
pub const KEY_FILE: &str = "audit-key";

/// What a checkpoint's signature covers, before its position, hash and time.
const DOMAIN: &[u8] = b"tackle-audit-checkpoint-v1";

/// A loaded signing key.
pub(crate) struct AuditKey {
    pair: Ed25519KeyPair,
}

impl AuditKey {
    fn from_seed(seed: &[u8]) -> Result<Self, StoreError> {
        Ed25519KeyPair::from_seed_unchecked(seed)
            .map(|pair| Self { pair })
            .map_err(|_| StoreError::AuditKey("the key file does not hold an Ed25519 seed".into()))
    }

    pub(crate) fn public(&self) -> [u8; 32] {
        let mut out = [0u8; 32];
        out.copy_from_slice(self.pair.public_key().as_ref());
        out
    }

    pub(crate) fn sign(&self, seq: i64, hash: &[u8], signed_at: &str) -> Vec<u8> {
        self.pair
            .sign(&message(seq, hash, signed_at))
            .as_ref()
            .to_vec()
    }
}

fn message(seq: i64, hash: &[u8], signed_at: &str) -> Vec<u8> {
    let mut m = Vec::with_capacity(DOMAIN.len() + 8 + hash.len() + signed_at.len());
    m.extend_from_slice(DOMAIN);
    m.extend_from_slice(&seq.to_be_bytes());
    m.extend_from_slice(hash);
    m.extend_from_slice(signed_at.as_bytes());
    m
}

/// Whether `signature` is `public`'s over a checkpoint.
pub(crate) fn verify(
    public: &[u8; 32],
    seq: i64,
    hash: &[u8],
    signed_at: &str,
    signature: &[u8],
) -> bool {
    UnparsedPublicKey::new(&ED25519, public)
        .verify(&message(seq, hash, signed_at), signature)
        .is_ok()
}

/// The key of the store whose database is `db_path` (`None` or empty: in memory), made when
/// `create` and there is none yet. Loaded once per process.
pub(crate) fn key_for(
    db_path: Option<&Path>,
    create: bool,
) -> Result<Option<Arc<AuditKey>>, StoreError> {
    static KEYS: OnceLock<Mutex<HashMap<PathBuf, Arc<AuditKey>>>> = OnceLock::new();
    let in_memory = |p: &Path| p.as_os_str().is_empty() || p == Path::new(":memory:");
    let state_dir = match db_path.filter(|p| !in_memory(p)) {
        Some(db) => db.parent().map(Path::to_path_buf).unwrap_or_default(),
        // One key per process for every in-memory store.
        None => PathBuf::new(),
    };
    let keys = KEYS.get_or_init(Mutex::default);
    let mut keys = keys.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(key) = keys.get(&state_dir) {
        return Ok(Some(Arc::clone(key)));
    }
    let key = if state_dir.as_os_str().is_empty() {
        Some(AuditKey::from_seed(&fresh_seed()?)?)
    } else {
        load(&state_dir.join(KEY_FILE), create)?
    };
    let Some(key) = key else { return Ok(None) };
    let key = Arc::new(key);
    keys.insert(state_dir, Arc::clone(&key));
    Ok(Some(key))
}

fn fresh_seed() -> Result<[u8; 32], StoreError> {
    let mut seed = [0u8; 32];
    SystemRandom::new()
        .fill(&mut seed)
        .map_err(|_| StoreError::AuditKey("the system's random source failed".into()))?;
    Ok(seed)
}

/// Reads the key file, or (when `create`) writes a new one: to a private temporary file
/// first, then linked into place, so two processes making it at once both end up with the
/// one that was linked first and none reads a half-written file.
fn load(path: &Path, create: bool) -> Result<Option<AuditKey>, StoreError> {
    let io = |what: &str, e: std::io::Error| {
        StoreError::AuditKey(format!("cannot {what} {}: {e}", path.display()))
    };
    match std::fs::read_to_string(path) {
        Ok(text) => return parse(&text, path).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && create => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io("read", e)),
    }
    let seed = fresh_seed()?;
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let written = options.open(&tmp).and_then(|mut f| {
        f.write_all(format!("{}\n", hex(&seed)).as_bytes())?;
        f.sync_all()
    });
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(io("write", e));
    }
    let linked = std::fs::hard_link(&tmp, path);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => AuditKey::from_seed(&seed).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let text = std::fs::read_to_string(path).map_err(|e| io("read", e))?;
            parse(&text, path).map(Some)
        }
        Err(e) => Err(io("create", e)),
    }
}

fn parse(text: &str, path: &Path) -> Result<AuditKey, StoreError> {
    let seed = unhex(text.trim())
        .filter(|s| s.len() == 32)
        .ok_or_else(|| {
            StoreError::AuditKey(format!(
                "{} does not hold a key (64 hex digits)",
                path.display()
            ))
        })?;
    AuditKey::from_seed(&seed)
}

/// Lower-case hex. By table, not `write!`: every chained write encodes two hashes.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    s
}

/// Bytes from hex, `None` when it is not hex.
pub fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.is_ascii() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| {
            text.get(i..i + 2)
                .and_then(|b| u8::from_str_radix(b, 16).ok())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_file_is_private_and_read_back_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(KEY_FILE);
        assert!(load(&path, false).unwrap().is_none());
        let made = load(&path, true).unwrap().unwrap();
        let again = load(&path, true).unwrap().unwrap();
        assert_eq!(made.public(), again.public());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let sig = made.sign(7, &[1; 32], "t");
        assert!(verify(&made.public(), 7, &[1; 32], "t", &sig));
        assert!(!verify(&made.public(), 8, &[1; 32], "t", &sig));
    }

    #[test]
    fn hex_round_trips_and_refuses_what_is_not_hex() {
        assert_eq!(unhex(&hex(&[0, 255, 16])), Some(vec![0, 255, 16]));
        for bad in ["0", "zz", "é1"] {
            assert_eq!(unhex(bad), None, "{bad}");
        }
    }
}
