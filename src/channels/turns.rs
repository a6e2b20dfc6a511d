//! Runs the turns of chat channels: one runtime per agent (built at its first message, as the
//! HTTP API's turns are), a stored session per chat, the real agent loop and dispatcher. An
//! agent's turns run one at a time (its loop has one iteration pool); each can be cancelled
//! by the daemon's drain.

use crate::app::Selection;
use crate::approval_queue::{ApprovalQueue, OnChange, QueueApprover};
use crate::cli::Global;
use crate::runtime::Runtime;
use anyhow::Result;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tackle_agent::{AgentEvent, LoopError, Session, TurnOutcome};
use tackle_protocol::config::Config;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub struct ChannelTurns {
    global: Global,
    config: Config,
    runtimes: tokio::sync::Mutex<HashMap<String, Agent>>,
    /// Cancelled when the daemon's drain grace is over: every running turn ends.
    all: CancellationToken,
}

#[derive(Clone)]
struct Agent {
    runtime: Arc<Runtime>,
    turn: Arc<tokio::sync::Mutex<()>>,
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
            global,
            config,
            runtimes: tokio::sync::Mutex::new(HashMap::new()),
            all: CancellationToken::new(),
        }
    }

    /// The agents a channel may name: those under `agents:`, or the built-in `default`.
    pub fn agents(&self) -> Vec<String> {
        if self.config.agents.is_empty() {
            vec!["default".to_string()]
        } else {
            self.config.agents.iter().map(|a| a.name.clone()).collect()
        }
    }

    pub fn default_agent(&self) -> String {
        self.config
            .agents
            .first()
            .map_or_else(|| "default".to_string(), |a| a.name.clone())
    }

    async fn runtime(&self, agent: &str) -> Result<Agent> {
        let mut runtimes = self.runtimes.lock().await;
        if let Some(known) = runtimes.get(agent) {
            return Ok(known.clone());
        }
        let selection = Selection {
            agent: (!self.config.agents.is_empty()).then(|| agent.to_string()),
            watch_plugins: true,
            ..Selection::default()
        };
        let known = Agent {
            runtime: Arc::new(Runtime::build(&self.global, &selection).await?),
            turn: Arc::default(),
        };
        runtimes.insert(agent.to_string(), known.clone());
        Ok(known)
    }

    /// Starts `task` as a turn of `agent` in session `session` (resumed, or created with
    /// that id), from chat `chat` of channel `channel`.
    pub async fn start(
        &self,
        agent: &str,
        session: &str,
        (channel, chat): (&str, &str),
        task: String,
        asking: Asking,
    ) -> Result<Running> {
        let Agent { runtime: rt, turn } = self.runtime(agent).await?;
        let (tx, events) = tokio::sync::mpsc::unbounded_channel();
        let cancel = self.all.child_token();
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
        let session = session.to_string();
        let (channel, chat) = (channel.to_string(), chat.to_string());
        let done = tokio::spawn(async move {
            let _one_at_a_time = tokio::select! {
                held = turn.lock_owned() => held,
                () = cancel.cancelled() => return Ok(not_started()),
            };
            // Read once the turn is ours: the chat's previous turn is in it.
            let mut stored = Session::resume(rt.store.clone(), &session, &rt.agent_name).await?;
            // Its calls carry the chat they came from (a `message` answers there).
            stored.set_origin(&channel, &chat);
            rt.agent_loop
                .run_turn(&mut stored, &task, approver, &tx, &cancel)
                .await
        });
        Ok(Running { events, done })
    }

    /// Ends every running turn (cancelled, recorded): the drain's grace is over.
    pub fn cancel_all(&self) {
        self.all.cancel();
    }

    /// Stops what the runtimes started (MCP servers, background work).
    pub async fn shutdown(&self) {
        self.all.cancel();
        for known in self.runtimes.lock().await.values() {
            known.runtime.app.shutdown().await;
        }
    }
}

fn not_started() -> TurnOutcome {
    TurnOutcome {
        reason: tackle_agent::DoneReason::Cancelled,
        text: String::new(),
        iterations: 0,
        denied: 0,
        needs_approval: 0,
        declined: 0,
    }
}
