//! The agents a long-running process answers for (the HTTP API's turns, the chat channels'):
//! one runtime per agent, built at its first turn (as the schedule runner builds one per
//! fire's agent), and its turns one at a time. A runtime's loop has one iteration pool,
//! reset at each turn's start and shared with the agents its tree spawns, so two turns at
//! once would refill and drain each other's; turns of different agents run at once.

use crate::app::Selection;
use crate::cli::Global;
use crate::runtime::Runtime;
use std::collections::HashMap;
use std::sync::Arc;
use tackle_agent::{AgentEvent, LoopError, Session, TurnOutcome};
use tackle_protocol::config::Config;
use tackle_protocol::Approver;
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub struct AgentPool {
    global: Global,
    config: Config,
    runtimes: tokio::sync::Mutex<HashMap<String, PooledAgent>>,
    /// Cancelled when the process's drain grace is over: every running turn ends.
    all: CancellationToken,
}

/// An agent's runtime and the lock its turns take in turn.
#[derive(Clone)]
pub struct PooledAgent {
    pub runtime: Arc<Runtime>,
    turn: Arc<tokio::sync::Mutex<()>>,
}

/// One turn to run: where, what, who answers its calls' approvals, where its events go.
pub struct TurnRequest {
    /// The session, stored already (resumed, or created with that id).
    pub session: String,
    /// The chat channel and chat the turn came from, which its calls carry.
    pub origin: Option<(String, String)>,
    /// Who wrote `task`, when it was not an operator (an inbound chat message from an
    /// allowed sender who is not an approver): the session is tainted by it
    /// (docs/decisions/0033-taint-gates-sinks.md).
    pub untrusted_author: Option<String>,
    pub task: String,
    pub approver: Arc<dyn Approver>,
    pub events: UnboundedSender<AgentEvent>,
    pub cancel: CancellationToken,
}

impl AgentPool {
    pub fn new(global: Global, config: Config) -> Self {
        Self {
            global,
            config,
            runtimes: tokio::sync::Mutex::new(HashMap::new()),
            all: CancellationToken::new(),
        }
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The agents a request may name: those under `agents:`, or the built-in `default`.
    pub fn agents(&self) -> Vec<String> {
        if self.config.agents.is_empty() {
            vec!["default".to_string()]
        } else {
            self.config.agents.iter().map(|a| a.name.clone()).collect()
        }
    }

    /// `agent`'s runtime, built at its first use.
    pub async fn agent(&self, agent: &str) -> anyhow::Result<PooledAgent> {
        let mut runtimes = self.runtimes.lock().await;
        if let Some(known) = runtimes.get(agent) {
            return Ok(known.clone());
        }
        let selection = Selection {
            agent: (!self.config.agents.is_empty()).then(|| agent.to_string()),
            watch_plugins: true,
            ..Selection::default()
        };
        let known = PooledAgent {
            runtime: Arc::new(Runtime::build(&self.global, &selection).await?),
            turn: Arc::default(),
        };
        runtimes.insert(agent.to_string(), known.clone());
        Ok(known)
    }

    /// A token for one turn: cancelled with it alone, or with every turn at the drain.
    pub fn turn_token(&self) -> CancellationToken {
        self.all.child_token()
    }

    /// The drain has begun: no new turns.
    pub fn stopping(&self) -> bool {
        self.all.is_cancelled()
    }

    /// Ends every running turn (cancelled, recorded): the drain's grace is over.
    pub fn cancel_all(&self) {
        self.all.cancel();
    }

    /// The MCP servers the runtimes built so far started (one set per agent); none while a
    /// runtime is being built (which can take a server's start-up time), as those re-read
    /// their pins on their own within seconds.
    pub fn mcp_managers(&self) -> Vec<Arc<tackle_mcp::McpManager>> {
        let Ok(runtimes) = self.runtimes.try_lock() else {
            return Vec::new();
        };
        runtimes
            .values()
            .filter_map(|known| known.runtime.app.mcp.clone())
            .collect()
    }

    /// Stops what the runtimes started (MCP servers, background work).
    pub async fn shutdown(&self) {
        self.all.cancel();
        for known in self.runtimes.lock().await.values() {
            known.runtime.app.shutdown().await;
        }
    }
}

impl PooledAgent {
    /// Runs the turn once the agent's previous one has ended. Waiting ends like the turn
    /// would, cancelled; the session is read after the wait, so a turn of the same session
    /// that ran meanwhile is in it.
    pub fn spawn_turn(&self, t: TurnRequest) -> JoinHandle<Result<TurnOutcome, LoopError>> {
        let (rt, turn) = (Arc::clone(&self.runtime), Arc::clone(&self.turn));
        tokio::spawn(async move {
            let _one_at_a_time = tokio::select! {
                held = turn.lock_owned() => held,
                () = t.cancel.cancelled() => return Ok(not_started()),
            };
            // Across daemons sharing the sessions, one at a time serves this one.
            let hold = crate::session_lease::hold(&rt.store, &t.session, &t.cancel).await?;
            if hold.is_none() && rt.store.shared_poll().is_some() {
                return Ok(not_started());
            }
            let outcome = run(&rt, &t).await;
            if let Some(hold) = hold {
                hold.release().await;
            }
            outcome
        })
    }
}

/// The turn itself, on the session as stored now.
async fn run(rt: &Runtime, t: &TurnRequest) -> Result<TurnOutcome, LoopError> {
    let mut stored = Session::resume(rt.store.clone(), &t.session, &rt.agent_name).await?;
    if let Some((channel, chat)) = &t.origin {
        stored.set_origin(channel, chat);
    }
    if let Some(author) = &t.untrusted_author {
        stored
            .taint_with(format!("a message from {author}"))
            .await?;
    }
    rt.agent_loop
        .run_turn(
            &mut stored,
            &t.task,
            Arc::clone(&t.approver),
            &t.events,
            &t.cancel,
        )
        .await
}

/// The outcome of a turn cancelled before it started.
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
