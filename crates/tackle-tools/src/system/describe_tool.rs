use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tackle_protocol::{ToolContext, ToolError, ToolOutput, ToolSpec};

/// `describe_tool`: the full description and JSON Schema of any registered tool, for when a
/// tool profile sent only its name or first sentence.
pub struct DescribeTool;

// Arguments of `describe_tool` (a plain comment, so not sent as the schema's description).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The tool's exact name, e.g. "filesystem__read_file".
    tool: String,
}

#[async_trait]
impl tackle_protocol::Tool for DescribeTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "describe_tool",
            "Returns the full description and JSON Schema of a registered tool. Use it when a tool was shown to you by name only.",
            super::NAME,
        )
        .parameters(crate::args::schema::<Args>())
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = crate::args::parse(args)?;
        let name = args.tool.as_str();
        let catalog = cx.catalog()?;
        let Some(spec) = catalog.spec(name) else {
            let suggestions = catalog.suggest(name);
            let hint = tackle_protocol::suggest::hint(&suggestions);
            return Err(ToolError::not_found(format!(
                "no tool named `{name}`{hint}"
            )));
        };
        let schema = serde_json::to_string_pretty(&spec.parameters)
            .map_err(|e| ToolError::failed(format!("could not render the schema: {e}")))?;
        let text = format!(
            "{name} (owner: {owner}, risk: {risk}, approval: {approval})\n\n{desc}\n\nParameters (JSON Schema):\n{schema}",
            name = spec.name,
            owner = spec.owner,
            risk = spec.risk,
            approval = spec.approval,
            desc = spec.description,
        );
        let structured = serde_json::to_value(&spec)
            .map_err(|e| ToolError::failed(format!("could not render the spec: {e}")))?;
        Ok(ToolOutput::text(text).with_structured(structured))
    }
}
