//! Extensions switched off for one session (`/disable EXT` in `tackle chat`), held with the
//! session's other per-call state ([`crate::SessionApprovals`]): their tools are left out of
//! what the model is sent, and the dispatcher refuses a call to one in that session, so a
//! model that names the tool anyway (it saw it earlier, or guesses) gets nothing run.

use std::collections::BTreeSet;
use std::sync::Mutex;

/// The rule a refusal of a tool of a disabled extension is recorded with.
pub const RULE: &str = "session: extension disabled";

/// The extensions switched off for one session; empty by default.
#[derive(Debug, Default)]
pub struct SessionExtensions(Mutex<BTreeSet<String>>);

impl SessionExtensions {
    /// Turns `extension` off for the session; false when it was off already.
    pub fn disable(&self, extension: &str) -> bool {
        self.0
            .lock()
            .is_ok_and(|mut off| off.insert(extension.to_string()))
    }

    /// Turns `extension` back on; false when it was not off.
    pub fn enable(&self, extension: &str) -> bool {
        self.0.lock().is_ok_and(|mut off| off.remove(extension))
    }

    /// Whether the tools `extension` owns (a tool spec's `owner`) are off in this session.
    pub fn is_disabled(&self, extension: &str) -> bool {
        self.0.lock().is_ok_and(|off| off.contains(extension))
    }

    /// The extensions off in this session, by name.
    pub fn disabled(&self) -> Vec<String> {
        self.0
            .lock()
            .map(|off| off.iter().cloned().collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_extension_is_off_until_enabled_again() {
        let s = SessionExtensions::default();
        assert!(!s.is_disabled("web"));
        assert!(s.disable("web"));
        assert!(!s.disable("web"), "already off");
        assert!(s.is_disabled("web"));
        assert!(!s.is_disabled("fs"));
        assert_eq!(s.disabled(), ["web"]);
        assert!(s.enable("web"));
        assert!(!s.enable("web"), "already on");
        assert!(!s.is_disabled("web"));
    }
}
