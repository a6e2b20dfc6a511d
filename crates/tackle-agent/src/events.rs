//! The one event stream every front end renders (docs/architecture.md): chat, `run`, `run --json`,
//! and later the TUI and HTTP API all consume [`AgentEvent`]s; none re-implements the loop.

use serde::Serialize;
use serde_json::Value;
use tackle_protocol::ErrorKind;

/// What happens during an agent's turn, in order, serialized as `{"event": "snake_case_name", …}`
/// for `run --json` and the API.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum AgentEvent {
    /// A new model turn starts (1-based).
    Iteration {
        /// The turn's number.
        n: u32,
    },
    /// Streamed answer text.
    TextDelta {
        /// The text since the last delta.
        text: String,
    },
    /// A tool call is about to go through the dispatcher.
    ToolCallStarted {
        /// The model's id for the call, repeated in its `ToolCallFinished`.
        id: String,
        /// The tool called.
        name: String,
        /// The arguments as the model gave them (before validation).
        arguments: Value,
    },
    /// A tool call ended; `error_kind` is set when it did not produce a result.
    ToolCallFinished {
        /// The model's id for the call.
        id: String,
        /// The tool called.
        name: String,
        /// Whether the tool produced a result.
        ok: bool,
        /// Why it did not (denied, failed, timed out, …).
        error_kind: Option<ErrorKind>,
        /// The result, or the error message (with the why for denials), shortened.
        preview: String,
        /// Wall-clock time of the call, in milliseconds.
        duration_ms: u64,
    },
    /// Nothing of the model's answer has arrived yet (said every 15 s while waiting).
    ModelWaiting {
        /// The backend asked (its name in the config).
        backend: String,
        /// Seconds since the request was sent.
        elapsed_secs: u64,
        /// The try under way, from 1.
        attempt: u32,
    },
    /// A try at the model failed in a way worth retrying; the next starts after `wait_ms`.
    ModelRetrying {
        /// The backend asked (its name in the config).
        backend: String,
        /// The try that failed, from 1.
        attempt: u32,
        /// Tries allowed in all.
        max_attempts: u32,
        /// Milliseconds until the next try.
        wait_ms: u64,
        /// What failed, for the user.
        reason: String,
    },
    /// Token usage of one model turn.
    Usage {
        /// Tokens the model read this turn, as the provider counts them.
        input_tokens: u64,
        /// Tokens the model wrote this turn.
        output_tokens: u64,
    },
    /// A call waits in the approval queue (docs/decisions/0030-one-approval-queue.md) for an
    /// answer from any front end: approval `id`, until `deadline_secs` from now.
    ApprovalQueued {
        /// The approval's id in the queue (`tackle approvals list` shows it).
        id: String,
        /// The tool whose call waits.
        tool: String,
        /// Seconds until it expires unanswered.
        deadline_secs: u64,
    },
    /// A queued approval was settled: answered (`allowed`, `allowed_for_session`, `denied`,
    /// with who answered), `expired` or `cancelled`.
    ApprovalSettled {
        /// The approval's id.
        id: String,
        /// How it was settled, as [`tackle_store::ApprovalStatus`] names it.
        status: String,
        /// Who answered (`None`: it expired or was cancelled).
        #[serde(skip_serializing_if = "Option::is_none")]
        answered_by: Option<String>,
    },
    /// A proactive message from an agent of the tree to this front end (`message`).
    Message {
        /// The sending agent's path in the tree.
        from: String,
        /// The message text.
        content: String,
    },
    /// A background task (`spawn`) finished; its result is also in the parent session.
    BackgroundTask {
        /// The task's id, as `spawn` returned it.
        id: String,
        /// The label it was given when spawned.
        label: String,
        /// Whether it finished with a result.
        ok: bool,
        /// Its result, or its error.
        text: String,
    },
    /// The turn ended.
    Done {
        /// Why it ended.
        reason: DoneReason,
        /// The answer (at `max_iterations`, the closing summary); empty when there is none.
        text: String,
        /// Model requests this turn made.
        iterations: u32,
        /// Why the turn ended without an answer (the provider's error, the step limit, the
        /// loop guard, Ctrl-C); absent when it answered.
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// A tool call of an agent this one started (at any depth), relayed so the front end can
    /// show it under the call that started the agent. `agent` is the child's path in the tree
    /// (`root › worker`), `depth` its distance from the root (1 for a direct child), and
    /// `call` its own `tool_call_started` or `tool_call_finished` event.
    Child {
        /// The child's path in the tree (`root › worker`).
        agent: String,
        /// Distance from the root; 1 for a direct child.
        depth: usize,
        /// The child's own `tool_call_started` or `tool_call_finished` event.
        call: Box<AgentEvent>,
    },
}

/// Why a turn ended (in [`AgentEvent::Done`]).
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

impl AgentEvent {
    /// The event a provider's progress notice becomes (none for a kind this version does not
    /// know).
    pub fn from_progress(p: &tackle_llm::Progress) -> Option<Self> {
        Some(match p {
            tackle_llm::Progress::Waiting {
                backend,
                elapsed,
                attempt,
            } => AgentEvent::ModelWaiting {
                backend: backend.clone(),
                elapsed_secs: elapsed.as_secs(),
                attempt: *attempt,
            },
            tackle_llm::Progress::Retrying {
                backend,
                attempt,
                max_attempts,
                wait,
                reason,
            } => AgentEvent::ModelRetrying {
                backend: backend.clone(),
                attempt: *attempt,
                max_attempts: *max_attempts,
                wait_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                reason: reason.clone(),
            },
            _ => return None,
        })
    }
}

/// Where the loop sends events. Sending never blocks the loop; a closed receiver is ignored.
pub type EventSink = tokio::sync::mpsc::UnboundedSender<AgentEvent>;

pub(crate) fn emit(sink: &EventSink, event: AgentEvent) {
    let _ = sink.send(event);
}
