//! Acting on changes under some directories while a front end runs: plugin directories
//! (reload the manifests), the directories listed as MCP roots (tell the servers).
//!
//! Why a worker thread rather than acting inside the watcher's callback: the inotify backend
//! calls back for a new directory *before* it adds a watch on it, so a directory copied in
//! (`cp -r`) is written while nobody is looking. Acting a little later, and once more after the
//! change settles, sees what was written in that gap.
//! A directory that does not exist yet is waited for through its nearest existing parent: the
//! places to watch are asked for again after every change.

pub use notify::RecursiveMode;
use notify::{RecommendedWatcher, Watcher};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

/// How long the directories must stay quiet before acting.
const QUIET: Duration = Duration::from_millis(100);
/// When to act once more after a change, for writes the watcher could not see.
const SETTLE: Duration = Duration::from_secs(1);

/// A place to watch and how deep.
pub type Point = (PathBuf, RecursiveMode);

/// Watches while it lives; dropping it stops the worker.
pub struct FsWatch {
    _watcher: Arc<Mutex<RecommendedWatcher>>,
}

/// Call `on_change` after every burst of changes under the places `points` names (asked again
/// after each burst, so a directory that appears is watched from then on).
pub fn watch<P, C>(name: &str, points: P, on_change: C) -> Result<FsWatch, String>
where
    P: Fn() -> Vec<Point> + Send + 'static,
    C: FnMut() + Send + 'static,
{
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let handler = move |event: notify::Result<notify::Event>| {
        if event.is_ok_and(|e| !e.kind.is_access()) {
            let _ = tx.send(());
        }
    };
    let watcher = notify::recommended_watcher(handler)
        .map(|w| Arc::new(Mutex::new(w)))
        .map_err(|e| e.to_string())?;
    let mut watched = Watched {
        watcher: Arc::downgrade(&watcher),
        points: Vec::new(),
    };
    watched.update(points());
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || worker(&rx, watched, &points, on_change))
        .map_err(|e| e.to_string())?;
    Ok(FsWatch { _watcher: watcher })
}

/// Where to watch for `dir`: itself with `mode` when it is a directory, else its nearest
/// existing parent (to see it appear).
pub fn point_for(dir: &Path, mode: RecursiveMode) -> Option<Point> {
    if dir.is_dir() {
        return Some((dir.to_path_buf(), mode));
    }
    dir.ancestors()
        .skip(1)
        .find(|a| a.is_dir())
        .map(|a| (a.to_path_buf(), RecursiveMode::NonRecursive))
}

/// The places being watched.
struct Watched {
    /// Weak, so that dropping the [`FsWatch`] drops the watcher, its sender, and so ends the
    /// worker.
    watcher: Weak<Mutex<RecommendedWatcher>>,
    points: Vec<Point>,
}

impl Watched {
    /// Watch exactly `points` from now on.
    fn update(&mut self, mut points: Vec<Point>) {
        points.sort();
        points.dedup();
        let Some(watcher) = self.watcher.upgrade() else {
            return;
        };
        let Ok(mut watcher) = watcher.lock() else {
            return;
        };
        for (path, _) in self.points.iter().filter(|p| !points.contains(p)) {
            let _ = watcher.unwatch(path);
        }
        for (path, mode) in points.iter().filter(|p| !self.points.contains(p)) {
            if let Err(e) = watcher.watch(path, *mode) {
                tracing::debug!("not watching {}: {e}", path.display());
            }
        }
        self.points = points;
    }
}

/// Wait for changes; after each burst act, and once more when it has settled.
fn worker<P, C>(changes: &Receiver<()>, mut watched: Watched, points: &P, mut on_change: C)
where
    P: Fn() -> Vec<Point>,
    C: FnMut(),
{
    while changes.recv().is_ok() {
        loop {
            // Let the burst end: a copy of a directory is many events.
            loop {
                match changes.recv_timeout(QUIET) {
                    Ok(()) => continue,
                    Err(RecvTimeoutError::Timeout) => break,
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            }
            watched.update(points());
            on_change();
            match changes.recv_timeout(SETTLE) {
                Ok(()) => continue,
                Err(RecvTimeoutError::Timeout) => {
                    watched.update(points());
                    on_change();
                    break;
                }
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }
}
