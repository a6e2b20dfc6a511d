//! One pool of model iterations shared by a whole tree of agents: a child draws from what
//! its parent has left instead of starting a fresh count, so spawning cannot multiply the
//! work a task may do.
//!
//! The root's handle is refilled at each of its user turns by starting a *new* pool, not by
//! topping up the old one: a child (a background task above all) keeps the pool of the turn
//! that started it ([`Budget::pinned`]) and gains nothing when the root starts a new turn.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

#[derive(Debug)]
pub struct Budget {
    pool: Mutex<Arc<AtomicU32>>,
}

impl Budget {
    pub fn new(iterations: u32) -> Self {
        Self {
            pool: Mutex::new(Arc::new(AtomicU32::new(iterations))),
        }
    }

    fn current(&self) -> Arc<AtomicU32> {
        // The lock only guards swapping the pool; a panic elsewhere cannot leave it torn.
        Arc::clone(&self.pool.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Take one iteration; `false` when the pool is empty.
    pub fn take(&self) -> bool {
        self.current()
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok()
    }

    pub fn remaining(&self) -> u32 {
        self.current().load(Ordering::Acquire)
    }

    /// A new user turn of the root starts with a full pool of its own.
    pub fn reset(&self, iterations: u32) {
        *self.pool.lock().unwrap_or_else(|e| e.into_inner()) = Arc::new(AtomicU32::new(iterations));
    }

    /// A handle on the pool as it is now, for a child: it shares what is left of this turn
    /// and is not refilled by a later [`Budget::reset`] of this handle.
    pub fn pinned(&self) -> Arc<Budget> {
        Arc::new(Self {
            pool: Mutex::new(self.current()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_that_uses_eight_of_ten_leaves_two() {
        let pool = Budget::new(10);
        for _ in 0..8 {
            assert!(pool.take());
        }
        assert_eq!(pool.remaining(), 2);
        assert!(pool.take() && pool.take());
        assert!(!pool.take(), "an empty pool gives nothing");
        assert_eq!(pool.remaining(), 0);
    }

    #[test]
    fn a_child_shares_its_turns_pool_and_a_new_turn_does_not_refill_it() {
        let root = Budget::new(3);
        let child = root.pinned();
        assert!(child.take());
        assert_eq!(root.remaining(), 2, "one pool for the turn");
        root.reset(3);
        assert_eq!(root.remaining(), 3);
        assert_eq!(child.remaining(), 2, "the child keeps its turn's pool");
        assert!(child.take() && child.take());
        assert!(!child.take());
        assert_eq!(root.remaining(), 3);
    }
}
