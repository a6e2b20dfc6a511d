//! Calls that write the same file run one after another; calls on different files still run
//! concurrently. Without this, two `edit_file` calls in one model turn both read the old text
//! and the second write silently drops the first edit.
//!
//! The lock is per process (every dispatcher, every session), keyed by the file's canonical
//! path (the host resolves it) so two spellings of one file share it. The host's check at rename time catches what
//! a lock cannot: a change by a process outside the dispatcher (a shell command).

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, Weak};
use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};

type Slot = Arc<AsyncMutex<()>>;

static LOCKS: LazyLock<Mutex<HashMap<PathBuf, Weak<AsyncMutex<()>>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// Held while a call runs; dropping it lets the next writer of these files in.
pub struct PathGuards {
    _guards: Vec<OwnedMutexGuard<()>>,
}

/// Wait until this call may write every one of `paths`. Locks are taken in one global order
/// (sorted keys), so two calls writing overlapping sets cannot deadlock.
pub async fn lock_paths(paths: &[PathBuf]) -> PathGuards {
    let mut keys: Vec<PathBuf> = paths.iter().map(|p| lexical(p)).collect();
    keys.sort();
    keys.dedup();
    let slots: Vec<Slot> = keys.iter().map(|k| slot(k)).collect();
    let mut guards = Vec::with_capacity(slots.len());
    for s in slots {
        guards.push(s.lock_owned().await);
    }
    PathGuards { _guards: guards }
}

fn slot(key: &Path) -> Slot {
    let Ok(mut map) = LOCKS.lock() else {
        // A poisoned map only means another thread panicked mid-insert; a private lock
        // still serialises nothing but lets the call run rather than fail.
        return Arc::new(AsyncMutex::new(()));
    };
    if let Some(existing) = map.get(key).and_then(Weak::upgrade) {
        return existing;
    }
    // Forget the files no call holds any more, so the map stays as small as the work.
    map.retain(|_, w| w.strong_count() > 0);
    let fresh = Arc::new(AsyncMutex::new(()));
    map.insert(key.to_path_buf(), Arc::downgrade(&fresh));
    fresh
}

/// `.` and `..` folded without touching the file system (the host has resolved links).
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn two_spellings_of_one_file_share_a_lock() {
        let dir = Path::new("/ws");
        let a = dir.join("f.txt");
        let b = dir.join("sub/../f.txt");
        let held = lock_paths(&[a]).await;
        let second = tokio::time::timeout(Duration::from_millis(100), lock_paths(&[b])).await;
        assert!(
            second.is_err(),
            "the second spelling got in while the first was held"
        );
        drop(held);
        let b = dir.join("./f.txt");
        assert!(
            tokio::time::timeout(Duration::from_secs(5), lock_paths(&[b]))
                .await
                .is_ok()
        );
    }

    #[tokio::test]
    async fn different_files_do_not_wait_for_each_other() {
        let dir = Path::new("/ws-two");
        let _a = lock_paths(&[dir.join("a")]).await;
        let b = tokio::time::timeout(Duration::from_secs(5), lock_paths(&[dir.join("b")])).await;
        assert!(b.is_ok());
    }

    #[tokio::test]
    async fn overlapping_sets_in_opposite_order_do_not_deadlock() {
        let dir = Path::new("/ws-three");
        let (x, y) = (dir.join("x"), dir.join("y"));
        let mut tasks = Vec::new();
        for i in 0..20 {
            let set = if i % 2 == 0 {
                vec![x.clone(), y.clone()]
            } else {
                vec![y.clone(), x.clone()]
            };
            tasks.push(tokio::spawn(async move {
                let _g = lock_paths(&set).await;
                tokio::task::yield_now().await;
            }));
        }
        let all = futures::future::join_all(tasks);
        assert!(tokio::time::timeout(Duration::from_secs(10), all)
            .await
            .is_ok());
    }
}
