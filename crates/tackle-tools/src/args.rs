//! A tool's arguments as one type: its JSON Schema (what the model and MCP clients see) is
//! derived from the same `Args` struct that reads them, so the two cannot disagree, and every
//! tool reads its arguments the same way.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tackle_protocol::ToolError;

/// The JSON Schema of a tool's `Args`, without the `$schema` and `title` keys, which providers
/// do not want in tool definitions.
pub(crate) fn schema<T: JsonSchema>() -> Value {
    let mut schema =
        schemars::SchemaGenerator::new(schemars::generate::SchemaSettings::draft2020_12())
            .into_root_schema_for::<T>()
            .to_value();
    if let Some(obj) = schema.as_object_mut() {
        obj.remove("$schema");
        obj.remove("title");
    }
    schema
}

/// Reads a tool's arguments, serde's message becoming an `invalid_arguments` the model can act
/// on. The dispatcher validates against the schema first; this is the second line for callers
/// that skip it (tests, other crates).
pub(crate) fn parse<T: DeserializeOwned>(args: Value) -> Result<T, ToolError> {
    serde_json::from_value(args)
        .map_err(|e| ToolError::invalid_arguments(format!("invalid arguments: {e}")))
}

/// [`parse`], the message naming the tool (for tools that share one `Args` reader).
pub(crate) fn parse_for<T: DeserializeOwned>(tool: &str, args: Value) -> Result<T, ToolError> {
    serde_json::from_value(args)
        .map_err(|e| ToolError::invalid_arguments(format!("invalid arguments for `{tool}`: {e}")))
}
