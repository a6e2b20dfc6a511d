//! The directories Tackle's client lists as MCP roots (`roots/list`), which may change while
//! servers are connected: a granted directory that appears, disappears or is replaced. Each
//! change is announced to every connected server with `notifications/roots/list_changed`.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use tokio::sync::watch;

/// A short name and an absolute, canonical directory (`("workspace", /abs/ws)`).
pub type Root = (String, PathBuf);

/// The roots servers are told about. Cheap to clone; every clone sees the same list.
#[derive(Clone)]
pub struct Roots {
    inner: Arc<Inner>,
}

struct Inner {
    current: RwLock<Vec<Root>>,
    /// Whether servers are told Tackle has roots at all (the capability is declared at
    /// `initialize`, so this cannot change later).
    declared: bool,
    /// Bumped on every change; each connection sends one notification per bump it sees.
    changes: watch::Sender<u64>,
}

impl Roots {
    /// A list that never changes; the capability is declared only when it has an entry.
    pub fn fixed(roots: Vec<Root>) -> Self {
        let declared = !roots.is_empty();
        Self::new(roots, declared)
    }

    /// A list that [`Roots::set`] may change: the capability (with `listChanged`) is declared
    /// even while it is empty, because a granted directory may appear later.
    pub fn changing(roots: Vec<Root>) -> Self {
        Self::new(roots, true)
    }

    fn new(roots: Vec<Root>, declared: bool) -> Self {
        Self {
            inner: Arc::new(Inner {
                current: RwLock::new(roots),
                declared,
                changes: watch::Sender::new(0),
            }),
        }
    }

    /// Replace the list; says whether it changed (and so was announced).
    pub fn set(&self, roots: Vec<Root>) -> bool {
        let Ok(mut current) = self.inner.current.write() else {
            return false;
        };
        if *current == roots {
            return false;
        }
        *current = roots;
        drop(current);
        self.inner.changes.send_modify(|n| *n = n.wrapping_add(1));
        true
    }

    /// The list now.
    pub fn current(&self) -> Vec<Root> {
        self.inner
            .current
            .read()
            .map(|r| r.clone())
            .unwrap_or_default()
    }

    pub(crate) fn declared(&self) -> bool {
        self.inner.declared
    }

    /// Wakes on every change after the call.
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.inner.changes.subscribe()
    }
}

impl Default for Roots {
    fn default() -> Self {
        Self::fixed(Vec::new())
    }
}

impl std::fmt::Debug for Roots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Roots")
            .field("current", &self.current())
            .field("declared", &self.declared())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(name: &str) -> Root {
        (name.to_string(), PathBuf::from(format!("/{name}")))
    }

    #[tokio::test]
    async fn a_change_wakes_subscribers_and_an_equal_list_does_not() {
        let roots = Roots::changing(vec![root("a")]);
        let mut rx = roots.subscribe();
        assert!(!roots.set(vec![root("a")]));
        assert!(!rx.has_changed().unwrap_or(true));
        assert!(roots.set(vec![root("a"), root("b")]));
        assert!(rx.has_changed().unwrap_or(false));
        rx.borrow_and_update();
        assert_eq!(roots.current(), vec![root("a"), root("b")]);
    }

    #[test]
    fn a_fixed_empty_list_is_not_declared_but_a_changing_one_is() {
        assert!(!Roots::fixed(Vec::new()).declared());
        assert!(Roots::fixed(vec![root("a")]).declared());
        assert!(Roots::changing(Vec::new()).declared());
    }
}
