//! The `system` extension: `get_time`, `calculate`, `describe_tool`. Low risk, no approval,
//! no host capability used.

mod calculate;
mod describe_tool;
mod get_time;

pub use calculate::{evaluate, CalcError, Calculate, MAX_EXPRESSION_LEN};
pub use describe_tool::DescribeTool;
pub use get_time::GetTime;

use std::sync::Arc;
use tackle_protocol::{Extension, Tool};

pub const NAME: &str = "system";

struct SystemExtension;

impl Extension for SystemExtension {
    fn name(&self) -> &str {
        NAME
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        vec![
            Arc::new(GetTime),
            Arc::new(Calculate),
            Arc::new(DescribeTool),
        ]
    }
}

pub fn extension() -> Arc<dyn Extension> {
    Arc::new(SystemExtension)
}
