//! A call the model made and what came back.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One tool call as the model asked for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Provider-assigned id, echoed back with the result.
    pub id: String,
    /// The tool the model asked for.
    pub name: String,
    /// The arguments object as the model sent it (not yet checked against the schema).
    pub arguments: Value,
}

/// What a tool returns to the model.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolOutput {
    /// Text for the model (sanitized by the dispatcher before it leaves).
    pub content: String,
    /// Optional machine-readable result (MCP `structuredContent`, `--json`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
    /// The tool ran but reports failure in-band (e.g. a non-zero exit the model should read).
    #[serde(default)]
    pub is_error: bool,
}

impl ToolOutput {
    /// A successful result with this text for the model.
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            structured: None,
            is_error: false,
        }
    }

    /// Adds a machine-readable result beside the text.
    pub fn with_structured(mut self, value: Value) -> Self {
        self.structured = Some(value);
        self
    }

    /// A result the tool reports as a failure in-band (the call itself completed).
    pub fn error_text(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            structured: None,
            is_error: true,
        }
    }
}
