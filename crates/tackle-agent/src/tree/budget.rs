//! One pool of model iterations shared by a whole tree of agents: a child draws from what
//! its parent has left instead of starting a fresh count, so spawning cannot multiply the
//! work a task may do.

use std::sync::atomic::{AtomicU32, Ordering};

#[derive(Debug)]
pub struct Budget {
    remaining: AtomicU32,
}

impl Budget {
    pub fn new(iterations: u32) -> Self {
        Self {
            remaining: AtomicU32::new(iterations),
        }
    }

    /// Take one iteration; `false` when the pool is empty.
    pub fn take(&self) -> bool {
        self.remaining
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok()
    }

    pub fn remaining(&self) -> u32 {
        self.remaining.load(Ordering::Acquire)
    }

    /// A new user turn of the root starts with a full pool.
    pub fn reset(&self, iterations: u32) {
        self.remaining.store(iterations, Ordering::Release);
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
}
