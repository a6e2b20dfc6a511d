//! The `core` extension: `shell` today; the agent tools (`compact`, `spawn_*`, `message`)
//! join it as they are written, each in its own file, listed in [`CoreExtension::tools`].

mod compact;
mod shell;

pub use compact::Compact;
pub(crate) use shell::finish as finish_exec;
pub use shell::Shell;

use std::sync::Arc;
use tackle_protocol::{Extension, Tool};

/// The `core` extension.
pub fn extension() -> Arc<dyn Extension> {
    Arc::new(CoreExtension)
}

struct CoreExtension;

impl Extension for CoreExtension {
    fn name(&self) -> &str {
        "core"
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        vec![Arc::new(compact::Compact), Arc::new(Shell)]
    }
}
