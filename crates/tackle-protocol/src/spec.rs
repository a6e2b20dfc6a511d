//! What a tool is, as the model and the policy engine see it.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

/// How much harm a tool can do (docs/architecture.md, "Tools").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    /// Safe operations with no side effects.
    Low,
    /// Operations that modify state or access the network.
    Medium,
    /// Operations that execute arbitrary code.
    High,
}

impl fmt::Display for Risk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Risk::Low => "low",
            Risk::Medium => "medium",
            Risk::High => "high",
        })
    }
}

/// When a call needs a person's yes (docs/architecture.md, "The call pipeline").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalMode {
    /// Runs without asking.
    Never,
    /// Runs if listed in `security.auto_approved_tools`, else asks.
    UnlessAutoApproved,
    /// Always asks.
    Always,
}

impl fmt::Display for ApprovalMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ApprovalMode::Never => "never",
            ApprovalMode::UnlessAutoApproved => "unless_auto_approved",
            ApprovalMode::Always => "always",
        })
    }
}

/// A tool name valid for every provider: `^[a-zA-Z0-9_-]{1,64}$`.
///
/// OpenAI-compatible providers reject dots and long names, so the registry only accepts
/// names that pass [`ToolName::parse`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct ToolName(String);

/// Why a string is not a valid [`ToolName`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// The name is the empty string.
    #[error("a tool name cannot be empty")]
    Empty,
    /// The name is longer than [`ToolName::MAX_LEN`] bytes.
    #[error("tool name `{name}` is {len} bytes long; providers accept at most 64")]
    TooLong {
        /// The name as given.
        name: String,
        /// Its length in bytes.
        len: usize,
    },
    /// The name holds a character other than an ASCII letter, a digit, `_` or `-`.
    #[error("tool name `{name}` contains `{ch}`; only ASCII letters, digits, `_` and `-` are accepted by every provider")]
    BadChar {
        /// The name as given.
        name: String,
        /// The first character outside the allowed set.
        ch: char,
    },
}

impl ToolName {
    /// The longest name every provider accepts.
    pub const MAX_LEN: usize = 64;

    /// Checks `name` against `^[a-zA-Z0-9_-]{1,64}$`; the error says which rule it breaks.
    pub fn parse(name: &str) -> Result<Self, NameError> {
        if name.is_empty() {
            return Err(NameError::Empty);
        }
        if let Some(ch) = name
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
        {
            return Err(NameError::BadChar {
                name: name.to_string(),
                ch,
            });
        }
        if name.len() > Self::MAX_LEN {
            return Err(NameError::TooLong {
                name: name.to_string(),
                len: name.len(),
            });
        }
        Ok(Self(name.to_string()))
    }

    /// The validated name, as sent to providers.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Everything the model and the policy engine know about a tool before calling it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The name the model calls it by; must pass [`ToolName::parse`].
    pub name: String,
    /// What the tool does, written for the model (profiles may shorten it to its first sentence).
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
    /// How much harm a call can do, as shown in tool listings.
    pub risk: Risk,
    /// The tool's default approval; config may change it (docs/architecture.md, "The call pipeline").
    pub approval: ApprovalMode,
    /// The extension that owns the tool (`system`, `fs`, an MCP server name, …).
    pub owner: String,
    /// The tool asks the running agent for its work (a child, a summary, a message to the
    /// parent), so only an agent's conversation can run it: `tackle tools call` and
    /// `tackle mcp serve` cannot, and `tackle tools list` marks it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub conversation_only: bool,
    /// The tool starts child agents (`spawn_*`, `delegate`): a background task and a delegated
    /// role are never given it, so neither nests.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub spawns_children: bool,
}

impl ToolSpec {
    /// A spec with an empty-object schema, low risk and no approval; refine with the builders.
    pub fn new(name: &str, description: &str, owner: &str) -> Self {
        Self {
            name: name.to_string(),
            description: description.to_string(),
            parameters: serde_json::json!({"type": "object", "properties": {}, "additionalProperties": false}),
            risk: Risk::Low,
            approval: ApprovalMode::Never,
            owner: owner.to_string(),
            conversation_only: false,
            spawns_children: false,
        }
    }

    /// Sets the JSON Schema of the arguments object.
    pub fn parameters(mut self, schema: Value) -> Self {
        self.parameters = schema;
        self
    }

    /// Sets the risk (default [`Risk::Low`]).
    pub fn risk(mut self, risk: Risk) -> Self {
        self.risk = risk;
        self
    }

    /// Sets the default approval (default [`ApprovalMode::Never`]).
    pub fn approval(mut self, approval: ApprovalMode) -> Self {
        self.approval = approval;
        self
    }

    /// Mark the tool as one only an agent's conversation can run (the field of that name).
    pub fn conversation_only(mut self) -> Self {
        self.conversation_only = true;
        self
    }

    /// Marks the tool as starting child agents (see [`ToolSpec::spawns_children`]).
    pub fn spawns_children(mut self) -> Self {
        self.spawns_children = true;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_valid_for_every_provider_are_accepted() {
        for ok in ["get_time", "time__get_current_time", "a-b", "A1"] {
            assert!(ToolName::parse(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn names_with_dots_spaces_or_unicode_are_refused() {
        for bad in ["a.b", "a b", "é", "", "x/y"] {
            assert!(ToolName::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn names_over_64_bytes_are_refused() {
        assert!(ToolName::parse(&"a".repeat(64)).is_ok());
        assert!(matches!(
            ToolName::parse(&"a".repeat(65)),
            Err(NameError::TooLong { len: 65, .. })
        ));
    }
}
