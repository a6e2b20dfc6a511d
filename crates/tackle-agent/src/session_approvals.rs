//! "Allow for the rest of this session" answers, held by the session that gave them: each
//! call carries its session's set, so an answer in one chat or one MCP session never covers
//! another, and the set goes when the session does (the dispatcher keeps no per-session state).

use std::collections::HashSet;
use std::sync::Mutex;

/// One session's per-session security state: its "allow for the session" answers, its taint,
/// its freeze and the extensions switched off for it. Shared by every call of the session.
#[derive(Debug, Default)]
pub struct SessionApprovals {
    tools: Mutex<HashSet<String>>,
    /// What untrusted content the session has read (crate::taint), held beside the answers
    /// because it lives exactly as long and travels with every call the same way.
    taint: crate::taint::SessionTaint,
    /// Set once a call of the session carried a decoy credential (crate::honeytoken).
    freeze: crate::honeytoken::Freeze,
    /// Extensions switched off for this session alone (crate::session_extensions).
    extensions: crate::session_extensions::SessionExtensions,
}

impl SessionApprovals {
    /// What untrusted content the session has read.
    pub fn taint(&self) -> &crate::taint::SessionTaint {
        &self.taint
    }

    /// Whether a decoy credential froze the session.
    pub fn freeze(&self) -> &crate::honeytoken::Freeze {
        &self.freeze
    }

    /// Extensions switched off for this session alone.
    pub fn extensions(&self) -> &crate::session_extensions::SessionExtensions {
        &self.extensions
    }

    /// A person allowed `tool` for the rest of this session.
    pub fn allows(&self, tool: &str) -> bool {
        self.tools.lock().is_ok_and(|set| set.contains(tool))
    }

    /// Remembers "allow for the session" for `tool`: later calls of it skip the approval prompt.
    pub fn allow(&self, tool: &str) {
        if let Ok(mut set) = self.tools.lock() {
            set.insert(tool.to_string());
        }
    }
}
