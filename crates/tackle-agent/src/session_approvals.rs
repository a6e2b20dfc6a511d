//! "Allow for the rest of this session" answers, held by the session that gave them: each
//! call carries its session's set, so an answer in one chat or one MCP session never covers
//! another, and the set goes when the session does (the dispatcher keeps no per-session state).

use std::collections::HashSet;
use std::sync::Mutex;

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
    pub fn taint(&self) -> &crate::taint::SessionTaint {
        &self.taint
    }

    pub fn freeze(&self) -> &crate::honeytoken::Freeze {
        &self.freeze
    }

    pub fn extensions(&self) -> &crate::session_extensions::SessionExtensions {
        &self.extensions
    }

    /// A person allowed `tool` for the rest of this session.
    pub fn allows(&self, tool: &str) -> bool {
        self.tools.lock().is_ok_and(|set| set.contains(tool))
    }

    pub fn allow(&self, tool: &str) {
        if let Ok(mut set) = self.tools.lock() {
            set.insert(tool.to_string());
        }
    }
}
