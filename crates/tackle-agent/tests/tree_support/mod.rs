//! A tree of agents in-process: a scripted model, the real core tools, the real host (real
//! processes), the real SQLite store, the real dispatcher and loop.
#![allow(dead_code)]

use async_trait::async_trait;
use futures::stream;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tackle_agent::tree::Budget;
use tackle_agent::{
    AgentLoop, BudgetMode, Dispatcher, DispatcherConfig, LoopConfig, Registry, Sanitizer, Session,
    Tree, TreeNode, TreeSettings,
};
use tackle_llm::{ChatRequest, EventStream, LlmError, Provider, StopReason, StreamEvent};
use tackle_protocol::config::Config;
use tackle_protocol::message::Role;
use tackle_protocol::{Approver, Extension};
use tackle_store::Store;
use tokio_util::sync::CancellationToken;

/// What the scripted model says next.
pub enum Reply {
    Text(String),
    Calls(Vec<(&'static str, Value)>),
    /// Calls whose argument text is sent as written (it need not be JSON).
    RawCalls(Vec<(&'static str, String)>),
}

pub type Script = dyn Fn(&ChatRequest) -> Reply + Send + Sync;

/// A model that answers by `script`, after `delay` (one model turn's wall time).
pub struct Scripted {
    pub script: Box<Script>,
    pub delay: Duration,
}

#[async_trait]
impl Provider for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }

    async fn stream(&self, req: ChatRequest) -> Result<EventStream, LlmError> {
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        let events: Vec<Result<StreamEvent, LlmError>> = match (self.script)(&req) {
            Reply::Text(t) => vec![
                Ok(StreamEvent::TextDelta(t)),
                Ok(StreamEvent::Stop(StopReason::EndTurn)),
            ],
            Reply::Calls(calls) => call_events(
                calls
                    .into_iter()
                    .map(|(name, args)| (name, args.to_string()))
                    .collect(),
            ),
            Reply::RawCalls(calls) => call_events(calls),
        };
        Ok(Box::pin(stream::iter(events)))
    }
}

/// The stream of one model turn that asks for `calls` (name, argument text).
fn call_events(calls: Vec<(&'static str, String)>) -> Vec<Result<StreamEvent, LlmError>> {
    let mut ev = Vec::new();
    for (i, (name, args)) in calls.into_iter().enumerate() {
        ev.push(Ok(StreamEvent::ToolCallStart {
            index: i,
            id: format!("c{i}"),
            name: name.to_string(),
        }));
        ev.push(Ok(StreamEvent::ToolCallArgsDelta {
            index: i,
            delta: args,
        }));
        ev.push(Ok(StreamEvent::ToolCallEnd { index: i }));
    }
    ev.push(Ok(StreamEvent::Stop(StopReason::ToolUse)));
    ev
}

/// The system prompt of a request.
pub fn system(req: &ChatRequest) -> &str {
    req.messages
        .iter()
        .find(|m| m.role == Role::System)
        .map_or("", |m| m.content.as_str())
}

/// Tool results so far, in order.
pub fn results(req: &ChatRequest) -> Vec<&str> {
    req.messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.as_str())
        .collect()
}

/// The tools the model is shown.
pub fn tool_names(req: &ChatRequest) -> Vec<String> {
    req.tools.iter().map(|t| t.name.clone()).collect()
}

pub struct Harness {
    pub dir: tempfile::TempDir,
    pub store: Store,
    pub tree: Arc<Tree>,
    pub root: Arc<TreeNode>,
    pub dispatcher: Arc<Dispatcher>,
    pub agent_loop: AgentLoop,
}

impl Harness {
    /// A tree rooted at the first agent of `yaml` (a config), driven by `script`.
    pub fn new(yaml: &str, script: Box<Script>, delay: Duration) -> Self {
        Self::build(yaml, script, delay, false)
    }

    /// As [`Harness::new`], with a compactor: the `compact` tool summarises through `script`.
    pub fn with_compactor(yaml: &str, script: Box<Script>, delay: Duration) -> Self {
        Self::build(yaml, script, delay, true)
    }

    fn build(yaml: &str, script: Box<Script>, delay: Duration, compact: bool) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = dir.path().join("ws");
        let state = dir.path().join("state");
        std::fs::create_dir_all(&ws).expect("ws");
        std::fs::create_dir_all(&state).expect("state");
        let ws = std::fs::canonicalize(&ws).expect("ws");
        let config: Config = serde_saphyr::from_str(yaml).expect("config parses");
        let store = Store::open(&state).expect("store");
        let agent = config.agents.first().cloned();
        let provider: Arc<dyn Provider> = Arc::new(Scripted { script, delay });
        let extensions: Vec<Arc<dyn Extension>> = vec![
            tackle_tools::core::extension_with_channels(config.channels.clone()),
            tackle_tools::system::extension(),
            tackle_tools::memory::extension(tackle_tools::memory::MemorySettings {
                store: store.clone(),
                banks: config.memory_banks.clone(),
            }),
        ];
        let registry = Arc::new(Registry::new(extensions).expect("registry"));
        let host = Arc::new(tackle_host::NativeHostProvider::new(
            tackle_host::HostConfig::new(&state)
                .with_config(&config)
                .hide(&state),
        ));
        let max_iterations = agent.as_ref().and_then(|a| a.max_iterations).unwrap_or(25);
        let tree = Tree::new(TreeSettings {
            config: Arc::new(config.clone()),
            agent: agent.clone(),
            provider: Arc::clone(&provider),
            backend: None,
            model: "scripted-model".into(),
            stream: true,
            tool_profile: tackle_agent::ToolProfile::full(),
            context_tokens: 100_000,
            store: store.clone(),
            compactor: compact.then(|| {
                Arc::new(tackle_agent::Compactor::new(
                    Arc::clone(&provider),
                    "scripted-model".into(),
                    Some(store.clone()),
                ))
            }),
        });
        let budget = Arc::new(Budget::new(max_iterations));
        let root = tree.root_node(Arc::clone(&budget));
        let dispatcher = Arc::new(
            Dispatcher::new(
                registry,
                host,
                DispatcherConfig {
                    workspace: ws,
                    security: config.security.clone(),
                    agent: agent.as_ref().map_or("default".into(), |a| a.name.clone()),
                    agent_grants: agent.as_ref().map(|a| a.grants.clone()),
                    default_timeout: Duration::from_secs(60),
                    sanitizer: Sanitizer::new(50_000),
                },
            )
            .with_audit(Arc::new(store.clone()))
            .with_agents(Arc::clone(&root) as Arc<dyn tackle_protocol::AgentServices>),
        );
        tree.attach(&dispatcher);
        let mut lc = LoopConfig::new("scripted-model");
        lc.max_iterations = max_iterations;
        lc.system_prompt = agent.as_ref().and_then(|a| a.system_prompt.clone());
        lc.budget = BudgetMode::PerTurn(budget);
        let agent_loop = AgentLoop::new(provider, Arc::clone(&dispatcher), lc)
            .with_inbox(Arc::clone(tree.inbox()));
        Self {
            dir,
            store,
            tree,
            root,
            dispatcher,
            agent_loop,
        }
    }

    pub fn workspace(&self) -> std::path::PathBuf {
        self.dispatcher.config().workspace.clone()
    }

    /// One root turn; returns the outcome and the root session.
    pub async fn run(
        &self,
        input: &str,
        approver: Arc<dyn Approver>,
        cancel: &CancellationToken,
    ) -> (tackle_agent::TurnOutcome, Session) {
        let mut session = Session::create(self.store.clone(), "default")
            .await
            .expect("session");
        let out = self.run_in(&mut session, input, approver, cancel).await;
        (out, session)
    }

    /// One more root turn in `session`.
    pub async fn run_in(
        &self,
        session: &mut Session,
        input: &str,
        approver: Arc<dyn Approver>,
        cancel: &CancellationToken,
    ) -> tackle_agent::TurnOutcome {
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        self.agent_loop
            .run_turn(session, input, approver, &tx, cancel)
            .await
            .expect("turn runs")
    }
}
