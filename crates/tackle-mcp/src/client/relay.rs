//! Passing a server's forms on to the front end of the call that made it ask: under
//! `tackle mcp serve`, the MCP client whose `tools/call` reached this server.
//!
//! A server's `elicitation/create` does not say which of our calls it belongs to, so each call
//! in flight registers its front end (when that front end can pass forms on) for as long as it
//! runs. A form goes to the one session with calls in flight on the server; with calls from
//! two sessions at once it cannot be told whose it is, and it is declined rather than shown to
//! the wrong person.

use std::sync::{Arc, Mutex};
use tackle_protocol::FormAsker;

/// The front ends of a server's calls in flight.
#[derive(Default)]
pub(crate) struct Relays {
    inner: Mutex<Vec<Entry>>,
    next: std::sync::atomic::AtomicU64,
}

struct Entry {
    id: u64,
    session: String,
    asker: Arc<dyn FormAsker>,
}

/// Who a form goes to.
pub(crate) enum Pick {
    /// No call in flight came from a front end that can pass forms on.
    Nobody,
    One(Arc<dyn FormAsker>),
    /// Calls from more than one session are in flight.
    Ambiguous,
}

/// Removes its call's entry when the call ends, however it ends.
pub(crate) struct Registered<'a> {
    relays: &'a Relays,
    id: u64,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        let mut entries = self.relays.lock();
        entries.retain(|e| e.id != self.id);
    }
}

impl Relays {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Entry>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A call from `session` is in flight, its front end `asker`, until the guard drops.
    pub fn register(&self, session: &str, asker: Arc<dyn FormAsker>) -> Registered<'_> {
        let id = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.lock().push(Entry {
            id,
            session: session.to_string(),
            asker,
        });
        Registered { relays: self, id }
    }

    /// Where a form from the server goes now: the latest call's front end when every call in
    /// flight is from one session.
    pub fn pick(&self) -> Pick {
        let entries = self.lock();
        let Some(last) = entries.last() else {
            return Pick::Nobody;
        };
        if entries.iter().any(|e| e.session != last.session) {
            return Pick::Ambiguous;
        }
        Pick::One(Arc::clone(&last.asker))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_trait::async_trait;
    use serde_json::Value;
    use tackle_protocol::{FormReply, FormUnavailable};

    struct Named(&'static str);

    #[async_trait]
    impl FormAsker for Named {
        async fn ask_form(
            &self,
            _: &str,
            _: &str,
            _: &Value,
        ) -> Result<FormReply, FormUnavailable> {
            Err(FormUnavailable(self.0.into()))
        }
    }

    async fn who(relays: &Relays) -> Option<String> {
        match relays.pick() {
            Pick::One(a) => a.ask_form("s", "m", &Value::Null).await.err().map(|e| e.0),
            Pick::Nobody => Some("nobody".into()),
            Pick::Ambiguous => Some("ambiguous".into()),
        }
    }

    #[tokio::test]
    async fn a_form_goes_to_the_one_session_in_flight_and_never_to_a_guess() {
        let relays = Relays::default();
        assert_eq!(who(&relays).await.as_deref(), Some("nobody"));
        let a1 = relays.register("a", Arc::new(Named("a1")));
        assert_eq!(who(&relays).await.as_deref(), Some("a1"));
        let a2 = relays.register("a", Arc::new(Named("a2")));
        assert_eq!(who(&relays).await.as_deref(), Some("a2"));
        let b = relays.register("b", Arc::new(Named("b")));
        assert_eq!(who(&relays).await.as_deref(), Some("ambiguous"));
        drop(a1);
        drop(a2);
        assert_eq!(who(&relays).await.as_deref(), Some("b"));
        drop(b);
        assert_eq!(who(&relays).await.as_deref(), Some("nobody"));
    }
}
