//! A dispatcher over the `system` tools and the real host, for the benches.

use std::sync::Arc;
use std::time::Duration;
use tackle_agent::{Dispatcher, DispatcherConfig, Registry, Sanitizer};

pub fn dispatcher(state: &std::path::Path) -> Dispatcher {
    let registry = Registry::new(vec![tackle_tools::system::extension()]).expect("registry");
    let host = tackle_host::NativeHostProvider::new(tackle_host::HostConfig::new(state));
    Dispatcher::new(
        Arc::new(registry),
        Arc::new(host),
        DispatcherConfig {
            workspace: std::env::temp_dir(),
            security: Default::default(),
            agent: "bench".into(),
            agent_grants: None,
            default_timeout: Duration::from_secs(10),
            sanitizer: Sanitizer::default(),
        },
    )
}
