//! Who is running on this state directory: a daemon that fires schedules, and the chats that
//! have a session open. Each holds a shared `flock` on a file beside the database for as long
//! as it runs; the kernel drops the lock when the process ends, however it ends, so a crashed
//! daemon or chat never looks alive. Asking is trying an exclusive lock without waiting.
//!
//! Only processes on this machine are seen: over a shared database (`schedules.engine:
//! postgres`) the answer about daemons is unknown, and a chat elsewhere is not seen. Claiming a
//! fire stays the one guarantee that it runs once; presence only decides who should try.

use crate::Store;
use std::fs::{File, OpenOptions, TryLockError};
use std::path::PathBuf;

/// The file a running daemon holds, in the state directory.
pub const DAEMON_LOCK: &str = "daemon.lock";
/// The directory of the files open chats hold, one per session.
pub const CHATS_DIR: &str = "chats";

/// A held presence; dropping it (or the process ending) releases it.
#[derive(Debug)]
pub struct Presence {
    _file: File,
}

impl Store {
    /// Marks a daemon as running on this state directory until the returned guard drops.
    /// `None` for an in-memory store, or when the file cannot be opened.
    pub fn hold_daemon_presence(&self) -> Option<Presence> {
        hold(self.presence_dir()?.join(DAEMON_LOCK))
    }

    /// Whether a daemon runs on this state directory: `None` when that cannot be known (an
    /// in-memory store, or a database shared with other machines).
    pub fn daemon_running(&self) -> Option<bool> {
        if self.shared_poll().is_some() {
            return None;
        }
        held(self.presence_dir()?.join(DAEMON_LOCK))
    }

    /// Marks `session` as open in a chat of this process until the returned guard drops.
    pub fn hold_session_presence(&self, session: &str) -> Option<Presence> {
        let dir = self.presence_dir()?.join(CHATS_DIR);
        std::fs::create_dir_all(&dir).ok()?;
        hold(self.session_file(session)?)
    }

    /// Whether a chat (in any process on this machine) has `session` open.
    pub fn session_open_in_chat(&self, session: &str) -> bool {
        self.session_file(session).and_then(held).unwrap_or(false)
    }

    fn presence_dir(&self) -> Option<PathBuf> {
        self.path().and_then(|p| p.parent()).map(PathBuf::from)
    }

    /// `chats/<session>.lock`; none for an id that is not a valid session id (it names a file).
    fn session_file(&self, session: &str) -> Option<PathBuf> {
        tackle_protocol::ids::check(tackle_protocol::ids::IdKind::Session, session).ok()?;
        Some(
            self.presence_dir()?
                .join(CHATS_DIR)
                .join(format!("{session}.lock")),
        )
    }
}

/// Shared, so several daemons (or chats on one session) may hold it together. Waiting is
/// bounded: an exclusive holder is only ever a [`held`] probe, which lets go at once.
fn hold(path: PathBuf) -> Option<Presence> {
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .ok()?;
    file.lock_shared().ok()?;
    Some(Presence { _file: file })
}

/// `Some(true)` when someone holds `path`; a missing file is nobody.
fn held(path: PathBuf) -> Option<bool> {
    let file = match OpenOptions::new().write(true).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Some(false),
        Err(_) => return None,
    };
    match file.try_lock() {
        // Ours for an instant; released when `file` drops here.
        Ok(()) => Some(false),
        Err(TryLockError::WouldBlock) => Some(true),
        Err(TryLockError::Error(_)) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presence_lasts_as_long_as_its_guard_and_is_seen_from_another_handle() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let other = Store::open(dir.path()).unwrap();
        assert_eq!(other.daemon_running(), Some(false));
        let daemon = store.hold_daemon_presence().expect("held");
        let second = store.hold_daemon_presence().expect("two daemons may run");
        assert_eq!(other.daemon_running(), Some(true));
        drop(daemon);
        assert_eq!(other.daemon_running(), Some(true), "one still runs");
        drop(second);
        assert_eq!(other.daemon_running(), Some(false));

        let id = "20260102-030405-0a1b2c3d";
        assert!(!other.session_open_in_chat(id));
        let chat = store.hold_session_presence(id).expect("held");
        assert!(other.session_open_in_chat(id));
        assert!(!other.session_open_in_chat("20260102-030405-ffffffff"));
        drop(chat);
        assert!(!other.session_open_in_chat(id));
        assert!(store.hold_session_presence("../escape").is_none());
        assert!(!dir.path().join("escape.lock").exists());
        assert_eq!(Store::open_in_memory().unwrap().daemon_running(), None);
    }
}
