//! Background tasks (`spawn`): each one's cancellation token and whether it finished, so a
//! front end can wait for them before it exits, or cancel them and say so.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// A background task still running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenTask {
    /// The task's id, as `spawn` returned it.
    pub id: String,
    /// The label it was given when spawned.
    pub label: String,
}

struct Task {
    open: OpenTask,
    cancel: CancellationToken,
    done: Arc<AtomicBool>,
}

#[derive(Default)]
pub(super) struct Tasks {
    list: Mutex<Vec<Task>>,
    tracker: TaskTracker,
}

impl Tasks {
    pub(super) fn spawn<F>(&self, open: OpenTask, cancel: CancellationToken, work: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let done = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&done);
        self.lock().push(Task { open, cancel, done });
        self.tracker.spawn(async move {
            work.await;
            flag.store(true, Ordering::Release);
        });
    }

    pub(super) fn open(&self) -> Vec<OpenTask> {
        self.lock()
            .iter()
            .filter(|t| !t.done.load(Ordering::Acquire))
            .map(|t| t.open.clone())
            .collect()
    }

    pub(super) async fn wait(&self) {
        // Closing only lets `wait` return once empty; tasks may still be added after.
        self.tracker.close();
        self.tracker.wait().await;
        self.tracker.reopen();
    }

    pub(super) fn cancel_all(&self) {
        for t in self.lock().iter() {
            t.cancel.cancel();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Task>> {
        self.list.lock().unwrap_or_else(|e| e.into_inner())
    }
}
