//! Runs the turns of chat channels on the agent pool (src/agent_pool.rs, shared in spirit
//! with the HTTP API's turns): a stored session per chat, the real agent loop and
//! dispatcher, each turn cancellable by the daemon's drain; its calls carry the chat they
//! came from, and their approvals are asked through the queue naming the chat's approvers.

use crate::agent_pool::{AgentPool, TurnRequest};
use crate::approval_queue::{ApprovalQueue, OnChange, QueueApprover};
use crate::cli::Global;
use anyhow::Result;
use std::sync::Arc;
use std::time::Duration;
use tackle_agent::{AgentEvent, LoopError, TurnOutcome};
use tackle_protocol::config::Config;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::task::JoinHandle;

pub struct ChannelTurns {
    pool: AgentPool,
}

/// Who answers a turn's calls: the queue, naming these approvers, waiting this long; each
/// entry told to `on_change` as it is queued and as it settles.
pub struct Asking {
    pub queue: Arc<ApprovalQueue>,
    pub approvers: Vec<String>,
    pub timeout: Duration,
    pub on_change: OnChange,
}

/// A turn under way: its events as they come, and its end.
pub struct Running {
    pub events: UnboundedReceiver<AgentEvent>,
    pub done: JoinHandle<Result<TurnOutcome, LoopError>>,
}

impl ChannelTurns {
    pub fn new(global: Global, config: Config) -> Self {
        Self {
            pool: AgentPool::new(global, config),
        }
    }

    /// The agents a channel may name: those under `agents:`, or the built-in `default`.
    pub fn agents(&self) -> Vec<String> {
        self.pool.agents()
    }

    pub fn default_agent(&self) -> String {
        self.pool
            .config()
            .agents
            .first()
            .map_or_else(|| "default".to_string(), |a| a.name.clone())
    }

    /// Starts `task` as a turn of `agent` in session `session` (resumed, or created with
    /// that id), from chat `chat` of channel `channel`; `untrusted_author` names who wrote it
    /// when that is not an operator.
    pub async fn start(
        &self,
        agent: &str,
        session: &str,
        (channel, chat): (&str, &str),
        (task, untrusted_author): (String, Option<String>),
        asking: Asking,
    ) -> Result<Running> {
        let pooled = self.pool.agent(agent).await?;
        let (tx, events) = tokio::sync::mpsc::unbounded_channel();
        let cancel = self.pool.turn_token();
        let approver = Arc::new(
            QueueApprover::new(
                asking.queue,
                agent,
                session,
                asking.approvers,
                asking.timeout,
                cancel.clone(),
            )
            .on_change(asking.on_change),
        );
        let done = pooled.spawn_turn(TurnRequest {
            session: session.to_string(),
            // Its calls carry the chat they came from (a `message` answers there).
            origin: Some((channel.to_string(), chat.to_string())),
            untrusted_author,
            task,
            approver,
            events: tx,
            cancel,
        });
        Ok(Running { events, done })
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
