//! The request and event types every provider speaks, independent of wire format.

use crate::error::LlmError;
use crate::timeouts::ProgressHook;
use futures_util::stream::BoxStream;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tackle_protocol::message::Message;

/// A tool as the model sees it: the subset of a `ToolSpec` a provider sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDef {
    /// The name the model calls the tool by.
    pub name: String,
    /// What the tool does, written for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
}

impl From<&tackle_protocol::ToolSpec> for ToolDef {
    fn from(spec: &tackle_protocol::ToolSpec) -> Self {
        Self {
            name: spec.name.clone(),
            description: spec.description.clone(),
            parameters: spec.parameters.clone(),
        }
    }
}

/// One model turn to ask for.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    /// The model name as the backend knows it (e.g. `gpt-4o-mini`, `qwen2.5:7b`).
    pub model: String,
    /// The conversation; `system` messages become the provider's system prompt.
    pub messages: Vec<Message>,
    /// The tools the model may call; empty sends none.
    pub tools: Vec<ToolDef>,
    /// Cap on output tokens; `None` leaves it to the server (Anthropic requires one, so
    /// [`crate::anthropic::DEFAULT_MAX_TOKENS`] is sent there).
    pub max_tokens: Option<u32>,
    /// Sampling temperature; `None` leaves the server's default.
    pub temperature: Option<f32>,
    /// Ask the server to stream. Servers that ignore it and answer with plain JSON still work.
    pub stream: bool,
    /// Where "waiting for the model…" and "retrying…" notices go while this request has no
    /// answer yet; `None` logs them as warnings.
    pub progress: Option<ProgressHook>,
}

impl ChatRequest {
    /// A streaming request with no tools and provider-default limits.
    pub fn new(model: impl Into<String>, messages: Vec<Message>) -> Self {
        Self {
            model: model.into(),
            messages,
            tools: Vec::new(),
            max_tokens: None,
            temperature: None,
            stream: true,
            progress: None,
        }
    }

    /// The same request, with its progress notices going to `hook`.
    pub fn with_progress(mut self, hook: ProgressHook) -> Self {
        self.progress = Some(hook);
        self
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished its answer (or hit a stop sequence).
    EndTurn,
    /// The model wants tool results before it goes on.
    ToolUse,
    /// `max_tokens` cut the answer.
    MaxTokens,
    /// The provider filtered or refused the output.
    ContentFilter,
    /// A reason this crate does not know, as the provider spelled it.
    Other(String),
}

/// Token counts for one model turn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens of the prompt (history, tools and system prompt) as the provider counted them.
    pub input_tokens: u64,
    /// Tokens the model generated in this turn.
    pub output_tokens: u64,
}

/// One streamed piece of a model turn.
///
/// `index` identifies a tool call within the turn (0, 1, … in the order the calls started);
/// argument deltas of several calls may interleave. A stream ends with exactly one `Stop`,
/// or with an error.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// The next piece of the answer's text.
    TextDelta(String),
    /// A tool call begins; its arguments follow as [`StreamEvent::ToolCallArgsDelta`]s.
    ToolCallStart {
        /// The call's position in the turn, from 0.
        index: usize,
        /// The provider's id for the call, to be echoed with its result.
        id: String,
        /// The tool the model calls.
        name: String,
    },
    /// The next piece of a tool call's JSON arguments, as raw text.
    ToolCallArgsDelta {
        /// The call the piece belongs to.
        index: usize,
        /// Raw argument text; only the concatenation of all pieces is meaningful.
        delta: String,
    },
    /// A tool call's arguments are complete.
    ToolCallEnd {
        /// The call that ended.
        index: usize,
    },
    /// Token counts so far; a later event replaces an earlier one.
    Usage(Usage),
    /// The turn is over and why; always the last event.
    Stop(StopReason),
}

impl StreamEvent {
    /// Whether the event carries something the caller may already have shown or acted on;
    /// after such an event a request is never retried.
    pub fn is_content(&self) -> bool {
        !matches!(self, StreamEvent::Usage(_))
    }
}

/// The events of one model turn.
pub type EventStream = BoxStream<'static, Result<StreamEvent, LlmError>>;

/// A tool call put together from its streamed pieces. `arguments_raw` is exactly what the
/// model produced (`{}` when it sent nothing); the caller parses it and reports malformed
/// JSON back to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssembledToolCall {
    /// The provider's id for the call, to be echoed with its result.
    pub id: String,
    /// The tool the model calls.
    pub name: String,
    /// The arguments exactly as sent, possibly malformed JSON.
    pub arguments_raw: String,
}

/// A whole model turn, as [`crate::complete`] returns it.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// The answer's text, all deltas joined; empty when the model only called tools.
    pub text: String,
    /// The tool calls in index order.
    pub tool_calls: Vec<AssembledToolCall>,
    /// The last token counts the provider reported (zero when it reported none).
    pub usage: Usage,
    /// Why the model stopped.
    pub stop: StopReason,
}
