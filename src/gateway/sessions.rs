//! Sessions over HTTP: list them (newest first), read one's messages, delete one (scope
//! `admin`), and post a message to one, which runs a turn in it exactly as a chat completion
//! with `X-Tackle-Session` does ([`super::turns::Turns::start`], [`super::openai::finish`]).

use super::audit::TurnNote;
use super::errors::ApiError;
use super::openai::{self, ToolCallNote, Usage};
use super::query;
use super::Gateway;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::Uri;
use axum::response::{IntoResponse, Response};
use axum::Json;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use tackle_protocol::ids::IdKind;
use tackle_store::{SessionId, SessionSummary, StoreError};

/// A session as listed.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SessionView {
    pub id: String,
    pub agent: String,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339: when its last entry was written.
    pub updated_at: String,
    /// User, assistant and tool-result entries.
    pub messages: i64,
    /// The start of its first user message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_user_message: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SessionList {
    pub sessions: Vec<SessionView>,
}

/// One session with every entry, in order.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SessionDetail {
    #[serde(flatten)]
    pub session: SessionView,
    pub entries: Vec<EntryView>,
}

/// One stored entry: a message (`user`, `assistant`, `tool_result`, …) as the store holds it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EntryView {
    /// 1, 2, 3, … in the order written.
    pub seq: i64,
    pub kind: String,
    pub content: serde_json::Value,
    /// RFC 3339.
    pub created_at: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Deleted {
    pub id: String,
    /// How many entries went with it (the audit log keeps its records).
    pub entries_deleted: usize,
}

/// A session to create, empty until a message is posted to it.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewSession {
    /// The agent whose session it is (`NAME` or `tackle:NAME`); `default` when absent.
    #[serde(default)]
    pub agent: Option<String>,
}

/// A message to run as a turn in the session.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PostMessage {
    /// The agent that answers (`NAME` or `tackle:NAME`); the session's own by default.
    #[serde(default)]
    pub agent: Option<String>,
    pub content: String,
}

/// The turn's answer.
#[derive(Debug, Serialize, JsonSchema)]
pub struct MessageReply {
    pub session: String,
    pub agent: String,
    /// The assistant's text.
    pub text: String,
    /// `ok`, `needs_approval`, `denied`, `declined`, `failed` or `cancelled`.
    pub outcome: String,
    pub tool_calls: Vec<ToolCallNote>,
    pub usage: Usage,
}

impl From<SessionSummary> for SessionView {
    fn from(s: SessionSummary) -> Self {
        Self {
            id: s.id.0,
            agent: s.agent,
            created_at: s.created_at,
            updated_at: s.updated_at,
            messages: s.messages,
            first_user_message: s.first_user_message,
        }
    }
}

fn store_failed(e: StoreError) -> ApiError {
    ApiError::failed(format!("cannot read the sessions: {e}"))
}

/// The session `id` names, or 400 (not an id) / 404 (no such session).
pub(super) async fn summary(gw: &Gateway, id: &str) -> Result<SessionSummary, ApiError> {
    query::checked_id(IdKind::Session, id)?;
    match gw.store.session_summary(&SessionId(id.to_string())).await {
        Ok(s) => Ok(s),
        Err(StoreError::UnknownSession(_)) => Err(ApiError::not_found(format!(
            "no session `{id}`; GET /v1/sessions lists them"
        ))),
        Err(e) => Err(store_failed(e)),
    }
}

pub async fn list(State(gw): State<Arc<Gateway>>, uri: Uri) -> Result<Json<SessionList>, ApiError> {
    let pairs = query::pairs(&uri, &[query::LIMIT])?;
    let limit = query::limit(&pairs)?.unwrap_or(usize::MAX);
    let all = gw.store.session_summaries().await.map_err(store_failed)?;
    Ok(Json(SessionList {
        sessions: all.into_iter().take(limit).map(SessionView::from).collect(),
    }))
}

/// Creates an empty session of an agent: a place to post messages to and to watch
/// (`/v1/sessions/{id}/events`) before its first turn.
pub async fn create(
    State(gw): State<Arc<Gateway>>,
    body: Result<Json<NewSession>, JsonRejection>,
) -> Result<Json<SessionView>, ApiError> {
    let Json(req) = body?;
    let agent = gw
        .turns
        .agent_for_model(req.agent.as_deref().unwrap_or("default"))?;
    let id = gw
        .store
        .create_session(&agent)
        .await
        .map_err(store_failed)?;
    let created = gw.store.session_summary(&id).await.map_err(store_failed)?;
    Ok(Json(created.into()))
}

pub async fn show(
    State(gw): State<Arc<Gateway>>,
    Path(id): Path<String>,
) -> Result<Json<SessionDetail>, ApiError> {
    let session = summary(&gw, &id).await?;
    let entries = gw.store.entries(&session.id).await.map_err(store_failed)?;
    Ok(Json(SessionDetail {
        session: session.into(),
        entries: entries
            .into_iter()
            .map(|e| EntryView {
                seq: e.seq,
                kind: e.kind.as_str().to_string(),
                content: e.content,
                created_at: e.created_at,
            })
            .collect(),
    }))
}

pub async fn delete(
    State(gw): State<Arc<Gateway>>,
    Path(id): Path<String>,
) -> Result<Json<Deleted>, ApiError> {
    let session = summary(&gw, &id).await?;
    match gw.store.delete_session(&session.id).await {
        Ok(entries_deleted) => Ok(Json(Deleted {
            id,
            entries_deleted,
        })),
        // Deleted by someone else between the look-up and now.
        Err(StoreError::UnknownSession(_)) => {
            Err(ApiError::not_found(format!("no session `{id}`")))
        }
        Err(e) => Err(store_failed(e)),
    }
}

pub async fn post_message(
    State(gw): State<Arc<Gateway>>,
    Path(id): Path<String>,
    headers: axum::http::HeaderMap,
    body: Result<Json<PostMessage>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(req) = body?;
    let session = summary(&gw, &id).await?;
    if req.content.trim().is_empty() {
        return Err(ApiError::bad_request("content is empty: it is the task"));
    }
    let agent = match req.agent.as_deref() {
        Some(name) => gw.turns.agent_for_model(name)?,
        None => gw.turns.agent_for_model(&session.agent)?,
    };
    let running = gw
        .turns
        .start(
            &agent,
            Some(&id),
            req.content,
            openai::disabled_extensions(&headers)?,
        )
        .await?;
    let note = TurnNote {
        agent: running.agent.clone(),
        session: running.session.clone(),
    };
    let agent = running.agent.clone();
    let finished = openai::finish(running).await?;
    let mut response = Json(MessageReply {
        session: finished.info.session,
        agent,
        text: finished.outcome.text,
        outcome: finished.info.outcome,
        tool_calls: finished.info.tool_calls,
        usage: finished.usage,
    })
    .into_response();
    response.extensions_mut().insert(note);
    Ok(response)
}
