//! `stream: true`: the turn as server-sent events in OpenAI's `chat.completion.chunk` format,
//! ending with `data: [DONE]`. Text deltas are `delta.content`; each tool call's start and end
//! is a chunk with an empty delta and a `tackle` object; a call that waits in the approval
//! queue says so with its id and where to answer (`"event": "approval_pending"`), and one
//! that got no answer in time ends `"needs_approval"` before the turn goes on without it. The last chunk
//! carries `finish_reason`, `usage` and the turn's outcome. A turn that fails mid-stream ends
//! with `data: {"error": {"kind", "message"}}`, which OpenAI clients raise as an error.

use super::openai::{self, ToolCallNote, Usage};
use super::turns::Running;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use schemars::JsonSchema;
use serde::Serialize;
use std::convert::Infallible;
use tackle_agent::{AgentEvent, DoneReason};
use tackle_protocol::ErrorKind;
use tokio::sync::mpsc;

#[derive(Debug, Serialize, JsonSchema)]
pub struct ChatCompletionChunk {
    pub id: String,
    pub object: String,
    pub created: i64,
    pub model: String,
    pub choices: Vec<ChunkChoice>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tackle: Option<ChunkInfo>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ChunkChoice {
    pub index: u32,
    pub delta: Delta,
    pub finish_reason: Option<String>,
}

#[derive(Debug, Default, Serialize, JsonSchema)]
pub struct Delta {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

/// What a chunk says beyond OpenAI's fields.
#[derive(Debug, Default, Serialize, JsonSchema)]
pub struct ChunkInfo {
    /// `session`, `tool_call_started`, `approval_pending`, `tool_call_finished`,
    /// `needs_approval` or `done`.
    pub event: String,
    pub session: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call: Option<ToolCallNote>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// On `approval_pending`: the queued approval's id (`POST /v1/approvals/ID` answers it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval: Option<String>,
    /// On `done`: the turn's outcome, as in a whole completion's `tackle.outcome`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
}

/// The SSE response for a running turn. A client that disconnects drops the stream, which
/// cancels the turn (recorded as cancelled).
pub fn stream(
    running: Running,
    model: String,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let (tx, rx) = mpsc::channel::<Event>(64);
    tokio::spawn(forward(running, model, tx));
    let events = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|e| (Ok::<_, Infallible>(e), rx))
    });
    Sse::new(events).keep_alive(KeepAlive::default())
}

struct Chunks {
    id: String,
    model: String,
    session: String,
    created: i64,
}

impl Chunks {
    fn chunk(&self, delta: Delta, info: Option<ChunkInfo>) -> ChatCompletionChunk {
        ChatCompletionChunk {
            id: self.id.clone(),
            object: "chat.completion.chunk".into(),
            created: self.created,
            model: self.model.clone(),
            choices: vec![ChunkChoice {
                index: 0,
                delta,
                finish_reason: None,
            }],
            usage: None,
            tackle: info,
        }
    }

    fn info(&self, event: &str) -> ChunkInfo {
        ChunkInfo {
            event: event.into(),
            session: self.session.clone(),
            ..ChunkInfo::default()
        }
    }
}

fn data(value: &impl Serialize) -> Event {
    Event::default().data(serde_json::to_string(value).unwrap_or_default())
}

/// Turns the turn's events into chunks until it ends or the client is gone.
async fn forward(mut running: Running, model: String, tx: mpsc::Sender<Event>) {
    let _cancel_on_drop = running.cancel.clone().drop_guard();
    let c = Chunks {
        id: openai::completion_id(&running.session),
        model,
        session: running.session.clone(),
        created: openai::now_secs(),
    };
    let first = Delta {
        role: Some("assistant".into()),
        content: None,
    };
    if tx
        .send(data(&c.chunk(first, Some(c.info("session")))))
        .await
        .is_err()
    {
        return;
    }
    let mut usage = Usage::default();
    let mut streamed = false;
    while let Some(event) = running.events.recv().await {
        let chunk = match &event {
            AgentEvent::TextDelta { text } if !text.is_empty() => {
                streamed = true;
                c.chunk(
                    Delta {
                        content: Some(text.clone()),
                        ..Delta::default()
                    },
                    None,
                )
            }
            AgentEvent::Usage {
                input_tokens,
                output_tokens,
            } => {
                usage.add(*input_tokens, *output_tokens);
                continue;
            }
            AgentEvent::ToolCallStarted { id, name, .. } => {
                let mut info = c.info("tool_call_started");
                info.message = Some(format!("{name} ({id})"));
                c.chunk(Delta::default(), Some(info))
            }
            AgentEvent::ToolCallFinished { .. } => {
                let note = ToolCallNote::of(&event);
                let needs = note.as_ref().is_some_and(|n| {
                    n.error_kind.as_deref() == Some(ErrorKind::NeedsApproval.as_str())
                });
                let mut info = c.info(if needs {
                    "needs_approval"
                } else {
                    "tool_call_finished"
                });
                if needs {
                    info.message = Some(
                        "this call needed approval and none was given in time: it ended needs_approval and the turn goes on without it".into(),
                    );
                }
                info.call = note;
                c.chunk(Delta::default(), Some(info))
            }
            AgentEvent::ApprovalQueued {
                id,
                tool,
                deadline_secs,
            } => {
                let mut info = c.info("approval_pending");
                info.approval = Some(id.clone());
                info.message = Some(super::approvals::where_to_answer(id, tool, *deadline_secs));
                c.chunk(Delta::default(), Some(info))
            }
            _ => continue,
        };
        if tx.send(data(&chunk)).await.is_err() {
            return;
        }
    }
    let outcome = match openai::ended(running.done.await) {
        Ok(outcome) => outcome,
        Err(e) => {
            let _ = tx.send(data(&e.body())).await;
            return;
        }
    };
    if outcome.reason == DoneReason::Error {
        let e = super::errors::ApiError::failed(format!("the turn failed: {}", outcome.text));
        let _ = tx.send(data(&e.body())).await;
        return;
    }
    if !streamed && !outcome.text.is_empty() {
        let text = Delta {
            content: Some(outcome.text.clone()),
            ..Delta::default()
        };
        if tx.send(data(&c.chunk(text, None))).await.is_err() {
            return;
        }
    }
    let mut info = c.info("done");
    info.outcome = Some(openai::outcome_word(&outcome).into());
    let mut last = c.chunk(Delta::default(), Some(info));
    last.usage = Some(usage);
    if let Some(choice) = last.choices.first_mut() {
        choice.finish_reason = Some(openai::finish_reason(&outcome).into());
    }
    if tx.send(data(&last)).await.is_ok() {
        let _ = tx.send(Event::default().data("[DONE]")).await;
    }
}
