//! Live events: every event of the daemon's API turns, as server-sent events. `GET
//! /v1/events` streams them all (`?session=ID`: one session's), `GET /v1/sessions/{id}/events`
//! one session's. Each message is `event: KIND` with JSON data holding the session, the agent
//! and the event's own fields: `turn_started`, `text_delta`, `tool_call_started`,
//! `tool_call_finished`, `approval_queued`, `approval_settled`, `done`, and the rest of the
//! agent loop's events. A client too slow to keep up is told how many it missed (`lagged`)
//! rather than holding the turns back.

use super::errors::ApiError;
use super::query;
use super::Gateway;
use axum::extract::{Path, State};
use axum::http::Uri;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};
use std::convert::Infallible;
use std::sync::Arc;
use tackle_agent::AgentEvent;
use tackle_protocol::ids::IdKind;
use tokio::sync::broadcast;

/// Events kept for a slow subscriber before it is told it lagged.
const BACKLOG: usize = 4096;

/// One live event as a subscriber gets it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LiveEvent {
    pub session: String,
    pub agent: String,
    /// The kind (also the SSE `event:` name).
    pub event: String,
    /// The event's own fields (`text` of a `text_delta`, `name` and `arguments` of a
    /// `tool_call_started`, …).
    #[serde(flatten)]
    pub fields: Map<String, Value>,
}

/// Where turns publish and subscribers listen.
pub struct Live {
    tx: broadcast::Sender<Arc<LiveEvent>>,
}

impl Default for Live {
    fn default() -> Self {
        Self {
            tx: broadcast::channel(BACKLOG).0,
        }
    }
}

impl Live {
    /// Publishes `event` of `agent`'s turn in `session` (nothing when no one listens).
    pub fn publish(&self, session: &str, agent: &str, event: &AgentEvent) {
        if self.tx.receiver_count() == 0 {
            return;
        }
        let Ok(Value::Object(mut fields)) = serde_json::to_value(event) else {
            return;
        };
        let kind = match fields.remove("event") {
            Some(Value::String(kind)) => kind,
            _ => return,
        };
        // A child agent's call names the child by its path in the tree; `agent` is the
        // turn's own agent.
        if let Some(child) = fields.remove("agent") {
            fields.insert("child".into(), child);
        }
        self.send(session, agent, kind, fields);
    }

    /// Publishes that a turn began, with the task it was given.
    pub fn turn_started(&self, session: &str, agent: &str, content: &str) {
        let mut fields = Map::new();
        fields.insert("content".into(), Value::String(content.to_string()));
        self.send(session, agent, "turn_started".into(), fields);
    }

    fn send(&self, session: &str, agent: &str, event: String, fields: Map<String, Value>) {
        let _ = self.tx.send(Arc::new(LiveEvent {
            session: session.to_string(),
            agent: agent.to_string(),
            event,
            fields,
        }));
    }

    fn subscribe(&self) -> broadcast::Receiver<Arc<LiveEvent>> {
        self.tx.subscribe()
    }
}

pub const QUERY: &[query::Param] = &[query::Param {
    name: "session",
    about: "Only this session's events",
    kind: query::ParamKind::Id(IdKind::Session),
}];

pub async fn all(
    State(gw): State<Arc<Gateway>>,
    uri: Uri,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let pairs = query::pairs(&uri, QUERY)?;
    let session = pairs.get("session").cloned();
    if let Some(id) = &session {
        query::checked_id(IdKind::Session, id)?;
    }
    Ok(stream(&gw, session))
}

pub async fn one(
    State(gw): State<Arc<Gateway>>,
    Path(id): Path<String>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    super::sessions::summary(&gw, &id).await?;
    Ok(stream(&gw, Some(id)))
}

fn stream(
    gw: &Gateway,
    session: Option<String>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let rx = gw.turns.live.subscribe();
    let events = futures::stream::unfold((rx, session), |(mut rx, session)| async move {
        loop {
            let event = match rx.recv().await {
                Ok(e) if session.as_ref().is_none_or(|s| *s == e.session) => sse(&e),
                Ok(_) => continue,
                Err(broadcast::error::RecvError::Lagged(missed)) => Event::default()
                    .event("lagged")
                    .data(serde_json::json!({ "missed": missed }).to_string()),
                Err(broadcast::error::RecvError::Closed) => return None,
            };
            return Some((Ok::<_, Infallible>(event), (rx, session)));
        }
    });
    Sse::new(events).keep_alive(KeepAlive::default())
}

fn sse(e: &LiveEvent) -> Event {
    let data = serde_json::to_string(e).unwrap_or_else(|_| "{}".into());
    Event::default().event(e.event.clone()).data(data)
}
