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

/// The extension's name, for `agents[].extensions`.
pub const NAME: &str = "system";

/// Its tools are made once, for the registry's re-reads (see the `core` extension).
struct SystemExtension {
    tools: Vec<Arc<dyn Tool>>,
}

impl Extension for SystemExtension {
    fn name(&self) -> &str {
        NAME
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.tools.clone()
    }
}

/// The `system` extension, with its tools made once.
pub fn extension() -> Arc<dyn Extension> {
    Arc::new(SystemExtension {
        tools: vec![
            Arc::new(GetTime),
            Arc::new(Calculate),
            Arc::new(DescribeTool),
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn system_schemas_keep_their_names_and_refuse_unknown_or_missing_arguments() {
        let schema = Calculate.spec().parameters;
        crate::args::contract::assert_names(&schema, &["expression"], &["expression"]);
        crate::args::contract::assert_refusals(
            &Calculate,
            json!({"expression": "1+1"}),
            &["expression"],
        )
        .await;
        let accepts = crate::args::contract::accepts;
        assert!(!accepts(&schema, &json!({"expression": ""})));
        let long = "1".repeat(MAX_EXPRESSION_LEN + 1);
        assert!(!accepts(&schema, &json!({ "expression": long })));

        let schema = DescribeTool.spec().parameters;
        crate::args::contract::assert_names(&schema, &["tool"], &["tool"]);
        crate::args::contract::assert_refusals(&DescribeTool, json!({"tool": "shell"}), &["tool"])
            .await;
    }
}
