//! Where a background task's result goes: straight into its parent's stored session when
//! the parent is idle, or held until the parent's loop reaches a point between model turns
//! (after every tool result is written), so a note never lands between a tool call and its
//! result, which no model would accept when the session is resumed. Notes written while the
//! parent was idle are also handed to its next turn, so a live conversation (`tackle chat`)
//! sees them without being resumed.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

/// Background results waiting for their parent session to reach a point between model turns.
#[derive(Default)]
pub struct Inbox {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Sessions whose loop is inside a turn.
    active: HashSet<String>,
    pending: HashMap<String, Vec<String>>,
    /// Written to the store while the session was idle; not yet in its loop's context.
    posted: HashMap<String, Vec<String>>,
}

impl Inbox {
    /// A turn of `session` starts: notes for it wait for [`Inbox::drain`]. Returns the notes
    /// already stored while it was idle, for the loop's context only.
    pub fn enter(&self, session: &str) -> Vec<String> {
        let mut st = self.lock();
        st.active.insert(session.to_string());
        st.posted.remove(session).unwrap_or_default()
    }

    /// The turn ended; returns the notes still held, which the loop writes now.
    pub fn leave(&self, session: &str) -> Vec<String> {
        let mut st = self.lock();
        st.active.remove(session);
        st.pending.remove(session).unwrap_or_default()
    }

    /// Notes held for `session`, taken at a safe point of its loop.
    pub fn drain(&self, session: &str) -> Vec<String> {
        self.lock().pending.remove(session).unwrap_or_default()
    }

    /// Hold `note` when `session` is in a turn (`true`); otherwise the caller writes it to
    /// the store, and the session's next turn in this process gets it too.
    pub fn hold_if_active(&self, session: &str, note: &str) -> bool {
        let mut st = self.lock();
        if !st.active.contains(session) {
            st.posted
                .entry(session.to_string())
                .or_default()
                .push(note.to_string());
            return false;
        }
        st.pending
            .entry(session.to_string())
            .or_default()
            .push(note.to_string());
        true
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding this lock cannot leave the sets half-updated.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}
