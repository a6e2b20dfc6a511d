//! WAL checkpoints kept off the path of a tool call.
//!
//! SQLite checkpoints inside the commit that takes the log past 1 000 pages, and with
//! `synchronous = NORMAL` that checkpoint is where the fsyncs happen (3–12 ms measured here,
//! more on slow disks). The audit insert commits in the calling task (see
//! `Store::try_inline`), so that commit would hold the task's thread for the fsyncs. The hook
//! below replaces the automatic checkpoint: a commit only marks one as due, and it runs on the
//! blocking pool, right after a pooled operation or handed there after an inline one.

use rusqlite::Connection;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The log size at which a checkpoint is due: SQLite's own automatic threshold.
const DUE_AT_PAGES: i32 = 1_000;

/// Whether the log has grown past [`DUE_AT_PAGES`] since the last checkpoint.
#[derive(Clone, Default)]
pub(crate) struct CheckpointDue(Arc<AtomicBool>);

impl CheckpointDue {
    /// Takes over checkpointing on `conn`: commits mark a checkpoint as due instead of running it.
    pub(crate) fn watch(&self, conn: &mut Connection) -> rusqlite::Result<()> {
        let due = Arc::clone(&self.0);
        conn.wal_hook(Some(move |_: &mut rusqlite::hooks::Wal, pages: i32| {
            if pages >= DUE_AT_PAGES {
                due.store(true, Ordering::Relaxed);
            }
            Ok(())
        }))
    }

    pub(crate) fn is_due(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Checkpoints if one is due. Call only where blocking is fine (the blocking pool).
    pub(crate) fn run_if_due(&self, conn: &Connection) {
        if !self.0.swap(false, Ordering::Relaxed) {
            return;
        }
        // PASSIVE, as the automatic checkpoint: it copies what no reader still needs and
        // never waits for readers or writers of other connections.
        // One that fails (as SQLite's own would, silently) is tried again after the next
        // operation; until then the log only grows.
        if conn
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
            .is_err()
        {
            self.0.store(true, Ordering::Relaxed);
        }
    }
}
