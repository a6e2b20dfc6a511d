//! The `core` extension: `shell` and the agent tools (`compact`, `spawn_*`, `delegate`,
//! `message`), each in its own file, listed in [`CoreExtension::tools`].

mod channels;
mod compact;
#[cfg(test)]
mod contract_tests;
mod delegate;
mod message;
mod shell;
mod spawn;

pub use compact::Compact;
pub use delegate::Delegate;
pub use message::SendMessage;
pub(crate) use shell::finish as finish_exec;
pub use shell::Shell;
pub use spawn::{Spawn, SpawnAgent, SpawnWorker};

use std::collections::BTreeMap;
use std::sync::Arc;
use tackle_protocol::config::ChannelConfig;
use tackle_protocol::{Extension, Tool};

/// The `core` extension, with no `channels:` configured.
pub fn extension() -> Arc<dyn Extension> {
    extension_with_channels(BTreeMap::new())
}

/// The `core` extension whose `message` tool may also send to `channels`.
pub fn extension_with_channels(channels: BTreeMap<String, ChannelConfig>) -> Arc<dyn Extension> {
    let channels = Arc::new(channels);
    Arc::new(CoreExtension {
        tools: vec![
            Arc::new(compact::Compact),
            Arc::new(Shell),
            Arc::new(SpawnAgent),
            Arc::new(SpawnWorker),
            Arc::new(Spawn),
            Arc::new(Delegate),
            Arc::new(SendMessage { channels }),
        ],
    })
}

struct CoreExtension {
    /// Made once: the registry re-reads every extension's tools before each model request
    /// and keeps an entry (its spec, its compiled schema) only for the same objects, so
    /// fresh ones each time would rebuild every spec on every request.
    tools: Vec<Arc<dyn Tool>>,
}

impl Extension for CoreExtension {
    fn name(&self) -> &str {
        "core"
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.tools.clone()
    }
}

#[cfg(test)]
mod tests {
    /// Exactly the tools that ask the running agent for their work say so in their spec;
    /// `shell` runs anywhere.
    #[test]
    fn the_agent_tools_are_marked_conversation_only() {
        let mut marked: Vec<String> = super::extension()
            .tools()
            .iter()
            .map(|t| t.spec())
            .filter(|s| s.conversation_only)
            .map(|s| s.name)
            .collect();
        marked.sort();
        assert_eq!(
            marked,
            [
                "compact",
                "delegate",
                "message",
                "spawn",
                "spawn_agent",
                "spawn_worker"
            ]
        );
    }

    /// Exactly the tools that start child agents say so (a background task and a delegated
    /// role are given none of them).
    #[test]
    fn the_tools_that_start_children_are_marked() {
        let mut marked: Vec<String> = super::extension()
            .tools()
            .iter()
            .map(|t| t.spec())
            .filter(|s| s.spawns_children)
            .map(|s| s.name)
            .collect();
        marked.sort();
        assert_eq!(marked, ["delegate", "spawn", "spawn_agent", "spawn_worker"]);
    }
}
