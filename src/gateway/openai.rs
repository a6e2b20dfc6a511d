//! The OpenAI-compatible endpoints: `GET /v1/models` (each agent as `tackle:NAME`) and
//! `POST /v1/chat/completions`, whole or streamed (`stream: true`, see `sse.rs`). The last
//! user message is the task; the agent's tool calls run here, through the dispatcher; the
//! answer is the assistant's text. What OpenAI's format has no field for (the session, each
//! tool call, a call that needs approval) is in an extra `tackle` object, which OpenAI
//! clients keep and ignore.

use super::audit::TurnNote;
use super::errors::ApiError;
use super::Gateway;
use axum::extract::rejection::JsonRejection;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::Json;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use tackle_agent::{AgentEvent, DoneReason, TurnOutcome};
use tackle_protocol::ErrorKind;

/// The header naming the session a completion continues.
pub const SESSION_HEADER: &str = "x-tackle-session";
/// The header that sets the extensions switched off in the session (comma-separated; empty
/// turns them all back on), kept with the session for its later turns.
pub const DISABLED_EXTENSIONS_HEADER: &str = "x-tackle-disabled-extensions";

/// The extensions [`DISABLED_EXTENSIONS_HEADER`] names; `None` without the header.
pub fn disabled_extensions(headers: &HeaderMap) -> Result<Option<Vec<String>>, ApiError> {
    headers
        .get(DISABLED_EXTENSIONS_HEADER)
        .map(|v| {
            let text = v
                .to_str()
                .map_err(|_| ApiError::bad_request("X-Tackle-Disabled-Extensions is not text"))?;
            Ok(text
                .split(',')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(str::to_string)
                .collect())
        })
        .transpose()
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ModelList {
    pub object: String,
    pub data: Vec<Model>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Model {
    /// `tackle:NAME`.
    pub id: String,
    pub object: String,
    pub created: i64,
    pub owned_by: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ChatCompletionRequest {
    /// The agent: `tackle:NAME` (as `GET /v1/models` lists them) or `NAME`.
    pub model: String,
    pub messages: Vec<ChatMessage>,
    /// Stream the answer as server-sent events of `ChatCompletionChunk`s.
    #[serde(default)]
    pub stream: bool,
}

/// One message of the request. Only the last `user` message is read: the session holds the
/// conversation (a new one per request unless `X-Tackle-Session` names one).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ChatMessage {
    pub role: String,
    #[serde(default)]
    pub content: Option<MessageContent>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum MessageContent {
    Text(String),
    Parts(Vec<ContentPart>),
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ContentPart {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub text: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ChatCompletion {
    pub id: String,
    pub object: String,
    pub created: i64,
    pub model: String,
    pub choices: Vec<Choice>,
    pub usage: Usage,
    pub tackle: TurnInfo,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Choice {
    pub index: u32,
    pub message: AssistantMessage,
    /// `stop`, or `length` when the agent used all its iterations.
    pub finish_reason: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct AssistantMessage {
    pub role: String,
    pub content: String,
}

#[derive(Debug, Clone, Copy, Default, Serialize, JsonSchema)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
}

/// What the turn did, beyond the answer.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct TurnInfo {
    /// The session the turn ran in (send it as `X-Tackle-Session` to continue).
    pub session: String,
    /// `ok`, `needs_approval`, `denied`, `declined`, `failed` or `cancelled`, as the exit
    /// codes of `tackle run` say.
    pub outcome: String,
    pub tool_calls: Vec<ToolCallNote>,
}

/// One tool call of the turn as it ended.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ToolCallNote {
    pub id: String,
    pub name: String,
    pub ok: bool,
    /// The error kind when it did not run to a result (`needs_approval`, `denied`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<String>,
    /// The result or the error, shortened.
    pub preview: String,
}

pub async fn models(State(gw): State<Arc<Gateway>>) -> Json<ModelList> {
    let created = now_secs();
    Json(ModelList {
        object: "list".into(),
        data: gw
            .turns
            .agents()
            .into_iter()
            .map(|name| Model {
                id: format!("tackle:{name}"),
                object: "model".into(),
                created,
                owned_by: "tackle".into(),
            })
            .collect(),
    })
}

pub async fn chat_completions(
    State(gw): State<Arc<Gateway>>,
    headers: HeaderMap,
    body: Result<Json<ChatCompletionRequest>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(req) = body?;
    let agent = gw.turns.agent_for_model(&req.model)?;
    let task = task_of(&req.messages)?;
    let session = headers
        .get(SESSION_HEADER)
        .map(|v| {
            v.to_str()
                .map_err(|_| ApiError::bad_request("X-Tackle-Session is not text"))
        })
        .transpose()?;
    let running = gw
        .turns
        .start(&agent, session, task, disabled_extensions(&headers)?)
        .await?;
    let note = TurnNote {
        agent: running.agent.clone(),
        session: running.session.clone(),
    };
    let mut response = if req.stream {
        super::sse::stream(running, req.model).into_response()
    } else {
        whole(running, req.model).await?.into_response()
    };
    response.extensions_mut().insert(note);
    Ok(response)
}

/// The turn to its end, as one `chat.completion`.
async fn whole(
    running: super::turns::Running,
    model: String,
) -> Result<Json<ChatCompletion>, ApiError> {
    let Finished {
        outcome,
        usage,
        info,
    } = finish(running).await?;
    Ok(Json(ChatCompletion {
        id: completion_id(&info.session),
        object: "chat.completion".into(),
        created: now_secs(),
        model,
        choices: vec![Choice {
            index: 0,
            message: AssistantMessage {
                role: "assistant".into(),
                content: outcome.text.clone(),
            },
            finish_reason: finish_reason(&outcome).into(),
        }],
        usage,
        tackle: info,
    }))
}

/// A turn run to its end: how it ended, what it cost and what its calls did.
pub struct Finished {
    pub outcome: TurnOutcome,
    pub usage: Usage,
    pub info: TurnInfo,
}

/// Runs the turn to its end, collecting its usage and finished calls (every whole answer,
/// whichever endpoint asked); a model backend that failed is a 502, a store that failed a 500.
pub async fn finish(mut running: super::turns::Running) -> Result<Finished, ApiError> {
    // The client going away drops this future: the turn is cancelled and recorded so.
    let _cancel_on_drop = running.cancel.clone().drop_guard();
    let mut usage = Usage::default();
    let mut calls = Vec::new();
    while let Some(event) = running.events.recv().await {
        match event {
            AgentEvent::Usage {
                input_tokens,
                output_tokens,
            } => usage.add(input_tokens, output_tokens),
            AgentEvent::ToolCallFinished { .. } => calls.extend(ToolCallNote::of(&event)),
            _ => {}
        }
    }
    let outcome = ended(running.done.await)?;
    let info = TurnInfo {
        session: running.session.clone(),
        outcome: outcome_word(&outcome).to_string(),
        tool_calls: calls,
    };
    if outcome.reason == DoneReason::Error {
        return Err(ApiError::new(
            axum::http::StatusCode::BAD_GATEWAY,
            ErrorKind::Failed,
            format!("the turn failed: {}", outcome.text),
        ));
    }
    Ok(Finished {
        outcome,
        usage,
        info,
    })
}

/// The turn's outcome, or the error a loop that could not run ends in.
pub fn ended(
    joined: Result<Result<TurnOutcome, tackle_agent::LoopError>, tokio::task::JoinError>,
) -> Result<TurnOutcome, ApiError> {
    match joined {
        Ok(Ok(outcome)) => Ok(outcome),
        // The model backend failed: the upstream's failure (502), not this server's.
        Ok(Err(e @ tackle_agent::LoopError::Llm(_))) => Err(ApiError::new(
            axum::http::StatusCode::BAD_GATEWAY,
            tackle_protocol::ErrorKind::Failed,
            format!("the turn failed: {}", crate::errors::render_error(&e)),
        )),
        Ok(Err(e)) => Err(ApiError::failed(format!(
            "the turn failed: {}",
            crate::errors::render_error(&e)
        ))),
        Err(e) => Err(ApiError::failed(format!("the turn stopped: {e}"))),
    }
}

impl Usage {
    pub fn add(&mut self, input: u64, output: u64) {
        self.prompt_tokens += input;
        self.completion_tokens += output;
        self.total_tokens = self.prompt_tokens + self.completion_tokens;
    }
}

impl ToolCallNote {
    /// The note for a finished call; `None` for any other event.
    pub fn of(event: &AgentEvent) -> Option<Self> {
        match event {
            AgentEvent::ToolCallFinished {
                id,
                name,
                ok,
                error_kind,
                preview,
                ..
            } => Some(Self {
                id: id.clone(),
                name: name.clone(),
                ok: *ok,
                error_kind: error_kind.map(|k| k.as_str().to_string()),
                preview: preview.clone(),
            }),
            _ => None,
        }
    }
}

/// The text of the last `user` message: the task.
fn task_of(messages: &[ChatMessage]) -> Result<String, ApiError> {
    let last = messages
        .iter()
        .rev()
        .find(|m| m.role == "user")
        .ok_or_else(|| {
            ApiError::bad_request("messages holds no `user` message: the last one is the task")
        })?;
    let text = match &last.content {
        Some(MessageContent::Text(t)) => t.clone(),
        Some(MessageContent::Parts(parts)) => parts
            .iter()
            .filter(|p| p.kind == "text")
            .filter_map(|p| p.text.as_deref())
            .collect::<Vec<_>>()
            .join("\n"),
        None => String::new(),
    };
    if text.trim().is_empty() {
        return Err(ApiError::bad_request("the last `user` message has no text"));
    }
    Ok(text)
}

/// The word `tackle run`'s exit code stands for (`crate::exit`).
pub fn outcome_word(outcome: &TurnOutcome) -> &'static str {
    match outcome.reason {
        DoneReason::Cancelled => "cancelled",
        DoneReason::LoopGuard | DoneReason::MaxIterations | DoneReason::Error => "failed",
        _ if outcome.needs_approval > 0 => ErrorKind::NeedsApproval.as_str(),
        _ if outcome.denied > 0 => ErrorKind::Denied.as_str(),
        _ if outcome.declined > 0 => "declined",
        _ => "ok",
    }
}

pub fn finish_reason(outcome: &TurnOutcome) -> &'static str {
    match outcome.reason {
        DoneReason::MaxIterations => "length",
        _ => "stop",
    }
}

pub fn completion_id(session: &str) -> String {
    format!("chatcmpl-{session}-{}", now_millis())
}

pub fn now_secs() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

fn now_millis() -> i128 {
    time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000
}
