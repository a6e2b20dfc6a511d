//! Reloading plugins while a front end runs: the plugin directories are watched, and a quiet
//! moment after a change the manifests are read again.
//!
//! Why a worker thread rather than reloading inside the watcher's callback: the inotify backend
//! calls back for a new directory *before* it adds a watch on it, so a plugin copied in as a
//! directory (`cp -r`) is written while nobody is looking. Reloading a little later, once more
//! after the change settles, reads what was written in that gap.
//! A configured directory that does not exist yet is waited for through its nearest existing
//! parent, and watched from the moment it appears.

use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tackle_tools::plugins::{LoadReport, Manifest, Plugins};

/// How long the directories must stay quiet before the manifests are read.
const QUIET: Duration = Duration::from_millis(100);
/// When the manifests are read once more after a change, for writes the watcher could not see.
const SETTLE: Duration = Duration::from_secs(1);

/// Watches the plugin directories while it lives; dropping it stops the worker.
pub struct Watch {
    _watcher: Arc<Mutex<RecommendedWatcher>>,
}

/// Reload `plugins` whenever something under one of its directories changes.
pub fn watch(plugins: Arc<Plugins>) -> Option<Watch> {
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let handler = move |event: notify::Result<notify::Event>| {
        if event.is_ok_and(|e| !e.kind.is_access()) {
            let _ = tx.send(());
        }
    };
    let watcher = match notify::recommended_watcher(handler) {
        Ok(w) => Arc::new(Mutex::new(w)),
        Err(e) => {
            tracing::warn!("plugins will not reload on change: {e}");
            return None;
        }
    };
    let mut dirs = Dirs {
        watcher: Arc::downgrade(&watcher),
        missing: Vec::new(),
    };
    for dir in plugins.dirs() {
        dirs.add(dir.path);
    }
    let spawned = std::thread::Builder::new()
        .name("plugin-watch".into())
        .spawn(move || worker(&plugins, &rx, dirs));
    if let Err(e) = spawned {
        tracing::warn!("plugins will not reload on change: {e}");
        return None;
    }
    Some(Watch { _watcher: watcher })
}

/// The directories being watched, and those waited for through a parent.
struct Dirs {
    /// Weak, so that dropping the [`Watch`] drops the watcher, its sender, and so ends the worker.
    watcher: Weak<Mutex<RecommendedWatcher>>,
    /// Configured directories that did not exist yet, each with the parent watched for it.
    missing: Vec<(PathBuf, Option<PathBuf>)>,
}

impl Dirs {
    fn add(&mut self, path: PathBuf) {
        if path.is_dir() {
            self.watch(&path, RecursiveMode::Recursive);
        } else {
            self.missing.push((path, None));
            self.wait_for_missing();
        }
    }

    fn watch(&self, path: &Path, mode: RecursiveMode) {
        let Some(watcher) = self.watcher.upgrade() else {
            return;
        };
        let Ok(mut watcher) = watcher.lock() else {
            return;
        };
        if let Err(e) = watcher.watch(path, mode) {
            tracing::debug!("not watching {}: {e}", path.display());
        }
    }

    fn unwatch(&self, path: &Path) {
        if let Some(watcher) = self.watcher.upgrade() {
            if let Ok(mut watcher) = watcher.lock() {
                let _ = watcher.unwatch(path);
            }
        }
    }

    /// Start watching the directories that have appeared; for the others, watch the nearest
    /// parent that exists now. Says whether a directory appeared.
    fn wait_for_missing(&mut self) -> bool {
        let mut appeared = false;
        let missing = std::mem::take(&mut self.missing);
        for (path, parent) in missing {
            if path.is_dir() {
                if let Some(p) = &parent {
                    self.unwatch(p);
                }
                self.watch(&path, RecursiveMode::Recursive);
                appeared = true;
                continue;
            }
            let nearest = path
                .ancestors()
                .skip(1)
                .find(|a| a.is_dir())
                .map(Path::to_path_buf);
            if nearest != parent {
                if let Some(p) = &parent {
                    self.unwatch(p);
                }
                if let Some(n) = &nearest {
                    self.watch(n, RecursiveMode::NonRecursive);
                }
            }
            self.missing.push((path, nearest));
        }
        appeared
    }
}

/// Wait for changes; after each burst read the manifests, and once more when it has settled.
fn worker(plugins: &Plugins, changes: &Receiver<()>, mut dirs: Dirs) {
    let mut last = summary(&plugins.report());
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
            dirs.wait_for_missing();
            reload(plugins, &mut last);
            match changes.recv_timeout(SETTLE) {
                Ok(()) => continue,
                Err(RecvTimeoutError::Timeout) => {
                    dirs.wait_for_missing();
                    reload(plugins, &mut last);
                    break;
                }
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }
}

fn reload(plugins: &Plugins, last: &mut Summary) {
    let report = plugins.reload();
    let now = summary(&report);
    if *last != now {
        tracing::info!(
            "plugins reloaded: {} plugin(s), {} problem(s)",
            report.plugins.len(),
            report.errors.len()
        );
        crate::plugins::log(&report);
        *last = now;
    }
}

/// What a reload is compared by: the manifests loaded (a changed command counts), the tools
/// they got and the problems found.
type Summary = (Vec<Manifest>, Vec<String>, Vec<String>);

fn summary(report: &LoadReport) -> Summary {
    use tackle_protocol::Tool;
    let manifests = report.plugins.iter().map(|p| p.manifest.clone()).collect();
    let tools = report
        .plugins
        .iter()
        .flat_map(|p| p.tools.iter().map(|t| t.spec().name))
        .collect();
    let problems = report
        .errors
        .iter()
        .map(|e| e.to_string())
        .chain(report.warnings.iter().cloned())
        .collect();
    (manifests, tools, problems)
}
