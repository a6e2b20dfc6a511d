//! Runs API turns on the agent pool (src/agent_pool.rs: one runtime per agent, its turns one
//! at a time): a stored session per request (or the one `X-Tackle-Session` names), the real
//! agent loop and dispatcher. Every turn is a task of its own with a cancellation token: a
//! client that goes away or the daemon's drain ends it as cancelled, recorded like any other.
//! Its events are published live as they come (`GET /v1/events`).

use super::errors::ApiError;
use super::events::Live;
use crate::agent_pool::{AgentPool, TurnRequest};
use crate::approval_queue::{ApprovalQueue, QueueApprover, APPROVE_SCOPE};
use crate::cli::Global;
use std::sync::Arc;
use std::time::Duration;
use tackle_agent::{AgentEvent, LoopError, TurnOutcome};
use tackle_protocol::config::Config;
use tackle_protocol::Approver;
use tackle_store::ApprovalStatus;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub struct Turns {
    pool: AgentPool,
    approvals: Approvals,
    /// Every turn's events, for `GET /v1/events` and the console.
    pub live: Arc<Live>,
}

/// Who answers what an API turn's calls ask: the approval queue (any front end with the
/// `approve` scope, waiting up to the timeout), or, with `gateway.approval_timeout_secs: 0`,
/// no one (the call ends `needs_approval` at once).
pub enum Approvals {
    Queue {
        queue: Arc<ApprovalQueue>,
        timeout: Duration,
    },
    NoOne,
}

/// A turn under way: its session, its events as they come, and its end.
pub struct Running {
    pub agent: String,
    pub session: String,
    pub events: UnboundedReceiver<AgentEvent>,
    pub done: JoinHandle<Result<TurnOutcome, LoopError>>,
    /// Cancels this turn only; dropped guards cancel it when the client goes away.
    pub cancel: CancellationToken,
}

impl Turns {
    pub fn new(global: Global, config: Config, approvals: Approvals) -> Self {
        Self {
            pool: AgentPool::new(global, config),
            approvals,
            live: Arc::default(),
        }
    }

    /// The agents a request may name: those under `agents:`, or the built-in `default`.
    pub fn agents(&self) -> Vec<String> {
        self.pool.agents()
    }

    /// Has every agent's running copy of MCP server `server` read its pins again, so a tool
    /// accepted through the API is offered from the next turn on (without waiting for the
    /// periodic re-read).
    pub async fn reload_mcp_pins(&self, server: &str) {
        for mcp in self.pool.mcp_managers() {
            mcp.reload_pins(server).await;
        }
    }

    /// The agent a `model` names: `tackle:NAME`, or `NAME` alone.
    pub fn agent_for_model(&self, model: &str) -> Result<String, ApiError> {
        let name = model.strip_prefix("tackle:").unwrap_or(model);
        if self.agents().iter().any(|a| a == name) {
            return Ok(name.to_string());
        }
        let config = self.pool.config();
        let message = match crate::exit::unknown_agent(config, name).to_string() {
            m if config.agents.is_empty() => {
                format!("{m}; with no agents configured, the one model is `tackle:default`")
            }
            m => m,
        };
        Err(ApiError::not_found(message))
    }

    /// Starts `task` as a turn of `agent` in a new session, or in `session` (resumed, or
    /// created with that id). `disabled`, when given, becomes the session's set of
    /// extensions switched off (kept with it), before the turn starts.
    pub async fn start(
        &self,
        agent: &str,
        session: Option<&str>,
        task: String,
        disabled: Option<Vec<String>>,
    ) -> Result<Running, ApiError> {
        if let Some(id) = session {
            tackle_protocol::ids::check(tackle_protocol::ids::IdKind::Session, id)
                .map_err(|e| ApiError::bad_request(format!("X-Tackle-Session: {e}")))?;
        }
        if self.pool.stopping() {
            return Err(ApiError::new(
                axum::http::StatusCode::SERVICE_UNAVAILABLE,
                tackle_protocol::ErrorKind::Failed,
                "the daemon is stopping and takes no new turns",
            ));
        }
        let pooled = self
            .pool
            .agent(agent)
            .await
            .map_err(|e| ApiError::failed(crate::errors::render(&e)))?;
        // Made (or checked) now, so the response can name it before the turn starts.
        let stored = pooled
            .runtime
            .session(session)
            .await
            .map_err(|e| ApiError::failed(crate::errors::render(&e)))?;
        if let Some(off) = disabled {
            let known: std::collections::BTreeSet<String> = pooled
                .runtime
                .app
                .dispatcher
                .registry()
                .specs()
                .into_iter()
                .map(|s| s.owner)
                .collect();
            if let Some(unknown) = off.iter().find(|name| !known.contains(*name)) {
                return Err(ApiError::bad_request(format!(
                    "{}: no extension `{}` with tools for agent `{agent}`; those with tools: {}",
                    super::openai::DISABLED_EXTENSIONS_HEADER,
                    tackle_protocol::text::preview(unknown, 40),
                    known.into_iter().collect::<Vec<_>>().join(", ")
                )));
            }
            stored
                .set_disabled_extensions(&off)
                .await
                .map_err(|e| ApiError::failed(e.to_string()))?;
        }
        let (tx, from_loop) = tokio::sync::mpsc::unbounded_channel();
        let cancel = self.pool.turn_token();
        let id = stored.id().to_string();
        self.live.turn_started(&id, agent, &task);
        let events = relay(from_loop, Arc::clone(&self.live), &id, agent);
        let approver = self.approver(agent, &id, &cancel, &tx);
        let done = pooled.spawn_turn(TurnRequest {
            session: id.clone(),
            origin: None,
            untrusted_author: None,
            task,
            approver,
            events: tx,
            cancel: cancel.clone(),
        });
        Ok(Running {
            agent: agent.to_string(),
            session: id,
            events,
            done,
            cancel,
        })
    }

    /// The approver of one turn's calls: each ask queued under the turn's session and
    /// cancelled with the turn; the stream is told where to answer it.
    fn approver(
        &self,
        agent: &str,
        session: &str,
        cancel: &CancellationToken,
        events: &tokio::sync::mpsc::UnboundedSender<AgentEvent>,
    ) -> Arc<dyn Approver> {
        let Approvals::Queue { queue, timeout } = &self.approvals else {
            return Arc::new(crate::approval::NoOneToAsk::API);
        };
        let events = events.clone();
        let secs = timeout.as_secs();
        let tell: crate::approval_queue::OnChange = Arc::new(move |entry| {
            let event = if entry.status == ApprovalStatus::Pending {
                AgentEvent::ApprovalQueued {
                    id: entry.id.clone(),
                    tool: entry.tool.clone(),
                    deadline_secs: secs,
                }
            } else {
                AgentEvent::ApprovalSettled {
                    id: entry.id.clone(),
                    status: entry.status.as_str().to_string(),
                    answered_by: entry.answered_by.clone(),
                }
            };
            let _ = events.send(event);
        });
        Arc::new(
            QueueApprover::new(
                Arc::clone(queue),
                agent,
                session,
                vec![APPROVE_SCOPE.to_string()],
                *timeout,
                cancel.clone(),
            )
            .on_change(tell),
        )
    }

    /// Ends every running turn (cancelled, recorded): the drain's grace is over.
    pub fn cancel_all(&self) {
        self.pool.cancel_all();
    }

    /// Stops what the runtimes started (MCP servers, background work).
    pub async fn shutdown(&self) {
        self.pool.shutdown().await;
    }
}

/// The turn's events as the request's handler reads them, each also published live.
fn relay(
    mut from_loop: UnboundedReceiver<AgentEvent>,
    live: Arc<Live>,
    session: &str,
    agent: &str,
) -> UnboundedReceiver<AgentEvent> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let (session, agent) = (session.to_string(), agent.to_string());
    tokio::spawn(async move {
        while let Some(event) = from_loop.recv().await {
            live.publish(&session, &agent, &event);
            // The handler may be gone (a client that left); the others still hear the rest.
            let _ = tx.send(event);
        }
    });
    rx
}
