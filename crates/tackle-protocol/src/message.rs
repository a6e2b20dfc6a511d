//! Conversation messages, as the loop, the providers and the session store exchange them.

use crate::call::ToolCall;
use serde::{Deserialize, Serialize};

/// Who a message is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions that frame the conversation; providers send them as the system prompt.
    System,
    /// The person (or the front end speaking for them).
    User,
    /// The model's turn: text and the tool calls it asks for.
    Assistant,
    /// A tool's result, answering one call by id.
    Tool,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who the message is from; decides which other fields matter.
    pub role: Role,
    /// The text; may be empty for an assistant turn that only calls tools.
    #[serde(default)]
    pub content: String,
    /// Calls the assistant asked for (role `assistant`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// The call this message answers (role `tool`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// The tool result reports failure.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
}

impl Message {
    /// Instructions for the model; providers send them as the system prompt.
    pub fn system(content: impl Into<String>) -> Self {
        Self::plain(Role::System, content)
    }

    /// A message from the person, with no tool calls.
    pub fn user(content: impl Into<String>) -> Self {
        Self::plain(Role::User, content)
    }

    /// An assistant turn with its text and the calls it asks for (possibly none).
    pub fn assistant(content: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        Self {
            tool_calls,
            ..Self::plain(Role::Assistant, content)
        }
    }

    /// The result of the call `call_id`; `is_error` marks a failed call for the model.
    pub fn tool_result(
        call_id: impl Into<String>,
        content: impl Into<String>,
        is_error: bool,
    ) -> Self {
        Self {
            tool_call_id: Some(call_id.into()),
            is_error,
            ..Self::plain(Role::Tool, content)
        }
    }

    fn plain(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            is_error: false,
        }
    }
}
