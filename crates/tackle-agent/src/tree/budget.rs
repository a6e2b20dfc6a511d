//! One pool of model requests shared by a whole tree of agents: every node — the root, its
//! sub-agents and workers, their children, siblings running in parallel, background tasks —
//! claims one unit *before* it sends a model request, so spawning cannot multiply the work a
//! task may do and `max_iterations` bounds the requests the backend sees for one user turn.
//!
//! A claim is one atomic compare-and-swap on the pool ([`AtomicU32::fetch_update`]): there is
//! no check-then-act window in which two parallel siblings could both take the last unit.
//!
//! The pool's last unit is kept for the root's closing request ([`Budget::claim_closing`]):
//! when the tree runs dry the person who asked still gets the root's summary of what was done,
//! and that summary is inside the pool, not one more request beyond it. Every other request
//! ([`Budget::claim_step`]: a tool turn of any node, a compaction) leaves that unit alone.
//!
//! The root's handle is refilled at each of its user turns by starting a *new* pool, not by
//! topping up the old one: a child (a background task above all) keeps the pool of the turn
//! that started it ([`Budget::pinned`]) and gains nothing when the root starts a new turn.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

/// Units of the pool that only the root's closing request may take.
const CLOSING_RESERVE: u32 = 1;

/// A tree's pool of model requests; every node claims a unit before each request.
#[derive(Debug)]
pub struct Budget {
    pool: Mutex<Arc<AtomicU32>>,
}

impl Budget {
    /// A pool of `iterations` requests, the last of them kept for the root's closing summary.
    pub fn new(iterations: u32) -> Self {
        Self {
            pool: Mutex::new(Arc::new(AtomicU32::new(iterations))),
        }
    }

    fn current(&self) -> Arc<AtomicU32> {
        // The lock only guards swapping the pool; a panic elsewhere cannot leave it torn.
        Arc::clone(&self.pool.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Take one unit, only if at least `keep` units stay in the pool afterwards.
    fn claim(&self, keep: u32) -> bool {
        self.current()
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                n.checked_sub(1).filter(|left| *left >= keep)
            })
            .is_ok()
    }

    /// Claim one model request of a tool turn (any node) or a compaction: `false` when only
    /// the root's closing request is left, and then nothing may be sent.
    pub fn claim_step(&self) -> bool {
        self.claim(CLOSING_RESERVE)
    }

    /// Claim the root's closing request (its summary without tools): the pool's last unit.
    pub fn claim_closing(&self) -> bool {
        self.claim(0)
    }

    /// Whether a step could be claimed now (a hint to refuse work early; the claim itself
    /// still decides).
    pub fn has_steps(&self) -> bool {
        self.remaining() > CLOSING_RESERVE
    }

    /// Units left in the pool this handle draws from, the closing reserve included.
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
    fn steps_leave_the_last_unit_for_the_roots_closing_request() {
        let pool = Budget::new(10);
        for _ in 0..8 {
            assert!(pool.claim_step());
        }
        assert_eq!(pool.remaining(), 2);
        assert!(pool.claim_step());
        assert!(!pool.claim_step(), "the last unit is the closing request's");
        assert!(!pool.has_steps());
        assert!(pool.claim_closing());
        assert!(!pool.claim_closing(), "an empty pool gives nothing");
        assert_eq!(pool.remaining(), 0);
    }

    #[test]
    fn a_child_shares_its_turns_pool_and_a_new_turn_does_not_refill_it() {
        let root = Budget::new(4);
        let child = root.pinned();
        assert!(child.claim_step());
        assert_eq!(root.remaining(), 3, "one pool for the turn");
        root.reset(4);
        assert_eq!(root.remaining(), 4);
        assert_eq!(child.remaining(), 3, "the child keeps its turn's pool");
        assert!(child.claim_step() && child.claim_step());
        assert!(!child.claim_step());
        assert_eq!(root.remaining(), 4);
    }

    #[test]
    fn parallel_claims_never_take_more_than_the_pool() {
        // Many threads race for a small pool: exactly what it holds is handed out.
        for size in [1u32, 2, 7, 64] {
            let pool = Arc::new(Budget::new(size));
            let granted = Arc::new(AtomicU32::new(0));
            let threads: Vec<_> = (0..16)
                .map(|i| {
                    let (pool, granted) = (pool.pinned(), Arc::clone(&granted));
                    std::thread::spawn(move || {
                        for _ in 0..100 {
                            let ok = if i % 4 == 0 {
                                pool.claim_closing()
                            } else {
                                pool.claim_step()
                            };
                            if ok {
                                granted.fetch_add(1, Ordering::SeqCst);
                            }
                        }
                    })
                })
                .collect();
            for t in threads {
                t.join().expect("claimer");
            }
            assert_eq!(granted.load(Ordering::SeqCst), size, "pool of {size}");
            assert_eq!(pool.remaining(), 0);
        }
    }
}
