//! The one event stream every front end renders (ARCHITECTURE.md): chat, `run`, `run --json`,
//! and later the TUI and HTTP API all consume [`AgentEvent`]s; none re-implements the loop.

use serde::Serialize;
use serde_json::Value;
use tackle_protocol::ErrorKind;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum AgentEvent {
    /// A new model turn starts (1-based).
    Iteration { n: u32 },
    /// Streamed answer text.
    TextDelta { text: String },
    /// A tool call is about to go through the dispatcher.
    ToolCallStarted {
        id: String,
        name: String,
        arguments: Value,
    },
    /// A tool call ended; `error_kind` is set when it did not produce a result.
    ToolCallFinished {
        id: String,
        name: String,
        ok: bool,
        error_kind: Option<ErrorKind>,
        /// The result, or the error message (with the why for denials), shortened.
        preview: String,
        duration_ms: u64,
    },
    /// Token usage of one model turn.
    Usage {
        input_tokens: u64,
        output_tokens: u64,
    },
    /// A proactive message from an agent of the tree to this front end (`message`).
    Message { from: String, content: String },
    /// A background task (`spawn`) finished; its result is also in the parent session.
    BackgroundTask {
        id: String,
        label: String,
        ok: bool,
        text: String,
    },
    /// The turn ended.
    Done {
        reason: DoneReason,
        text: String,
        iterations: u32,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DoneReason {
    /// The model gave a final answer.
    Answer,
    /// `max_iterations` was reached; the text is the model's closing summary.
    MaxIterations,
    /// The same call was made three times in a row; the loop stopped it.
    LoopGuard,
    /// Ctrl-C.
    Cancelled,
    /// The turn could not go on (the provider failed, the session store failed); the text
    /// says why.
    Error,
}

/// Where the loop sends events. Sending never blocks the loop; a closed receiver is ignored.
pub type EventSink = tokio::sync::mpsc::UnboundedSender<AgentEvent>;

pub(crate) fn emit(sink: &EventSink, event: AgentEvent) {
    let _ = sink.send(event);
}
