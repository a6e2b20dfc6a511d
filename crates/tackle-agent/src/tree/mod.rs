//! A tree of agents: `spawn_agent`, `spawn_worker`, `spawn` and `delegate` start children
//! that run through the same [`AgentLoop`](crate::AgentLoop) and a child
//! [`Dispatcher`](crate::Dispatcher) of the root's (same registry, host and audit log).
//!
//! What keeps a tree safe, each in one place:
//! - grants only narrow: a child's dispatcher carries its ancestors' grants as ceilings and
//!   intersects every resolved policy with theirs ([`TreePlace::ceilings`]);
//! - tools only narrow: a child's tools are a subset of its parent's ([`scope`]);
//! - one iteration pool for the whole tree ([`Budget`]), and `max_depth` /
//!   `max_concurrent_children` limits that end in `denied` naming the limit;
//! - a child's approvals go to the root's front end, labelled with its path ([`approver`]);
//! - a child's cancellation token is a child of its caller's: cancelling a run cancels its
//!   whole tree, and the host kills the processes of cancelled calls.

pub mod approver;
mod budget;
mod inbox;
mod node;
mod relay;
pub mod scope;
mod tasks;

pub use budget::Budget;
pub use inbox::Inbox;
pub use node::TreeNode;
pub use tasks::OpenTask;

use crate::compaction::Compactor;
use crate::events::{emit, AgentEvent, EventSink};
use crate::Dispatcher;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use tackle_llm::Provider;
use tackle_protocol::config::{AgentConfig, Config};
use tackle_protocol::Grants;
use tackle_store::Store;

/// Where one agent sits in a tree. The root's is empty: no ceilings, every tool.
#[derive(Debug, Clone, Default)]
pub struct TreePlace {
    /// Labels from the root down to this agent (`["default", "researcher"]`); empty for a
    /// root.
    pub path: Vec<String>,
    /// Each agent above this one, root first: its name and grants overlay. Every policy this
    /// agent's calls resolve is intersected with what each of them would get.
    pub ceilings: Vec<(String, Option<Grants>)>,
    /// The tools this agent may call; `None` = every registered tool.
    pub tools: Option<BTreeSet<String>>,
}

impl TreePlace {
    /// How the agent is named in audit records and approval prompts: its path, or its name
    /// for a root.
    pub fn label(&self, agent: &str) -> String {
        if self.path.is_empty() {
            agent.to_string()
        } else {
            self.path.join(" › ")
        }
    }
}

/// The root's settings every node of the tree shares.
pub struct TreeSettings {
    /// The whole configuration, for children's agent configs, presets and backends.
    pub config: Arc<Config>,
    /// The root agent (`None`: the built-in default agent).
    pub agent: Option<AgentConfig>,
    /// The root's model provider; children on the same backend share it.
    pub provider: Arc<dyn Provider>,
    /// The configured backend `provider` talks to (`None`: found from the environment), so
    /// a child naming the same backend shares the provider and one naming another gets its own.
    pub backend: Option<String>,
    /// The root's model.
    pub model: String,
    /// Whether loops stream answer text.
    pub stream: bool,
    /// How much of each tool definition the model is shown.
    pub tool_profile: crate::ToolProfile,
    /// The root model's context window in tokens.
    pub context_tokens: usize,
    /// The state store every node's sessions (and their links to parents) are kept in.
    pub store: Store,
    /// Serves every node's `compact` tool and hands its loop the summaries (`None`: the tool
    /// fails).
    pub compactor: Option<Arc<Compactor>>,
}

/// What the nodes of one tree share.
pub struct Tree {
    settings: TreeSettings,
    /// The root's dispatcher, which children's dispatchers are made from. Weak: the
    /// dispatcher holds the root node, which holds this.
    root: OnceLock<Weak<Dispatcher>>,
    /// The live front end, while one is rendering a turn.
    front_end: Mutex<Option<EventSink>>,
    inbox: Arc<Inbox>,
    tasks: tasks::Tasks,
    max_depth: u32,
    max_children: usize,
}

impl Tree {
    /// A tree with the root's settings; its depth and child limits come from the root agent's
    /// config (or the defaults).
    pub fn new(settings: TreeSettings) -> Arc<Self> {
        let agent = settings.agent.as_ref();
        let max_depth = agent
            .and_then(|a| a.max_depth)
            .unwrap_or(AgentConfig::DEFAULT_MAX_DEPTH);
        let max_children = agent
            .and_then(|a| a.max_concurrent_children)
            .unwrap_or(AgentConfig::DEFAULT_MAX_CONCURRENT_CHILDREN)
            .max(1) as usize;
        Arc::new(Self {
            settings,
            root: OnceLock::new(),
            front_end: Mutex::new(None),
            inbox: Arc::default(),
            tasks: tasks::Tasks::default(),
            max_depth,
            max_children,
        })
    }

    /// The root node: the agent services to build the root dispatcher with.
    pub fn root_node(self: &Arc<Self>, budget: Arc<Budget>) -> Arc<TreeNode> {
        TreeNode::root(Arc::clone(self), budget)
    }

    /// Children are made from `dispatcher` (the root's); call once it is built.
    pub fn attach(&self, dispatcher: &Arc<Dispatcher>) {
        let _ = self.root.set(Arc::downgrade(dispatcher));
    }

    /// Events for a live front end (`None` when its turn ends, so its renderer can finish).
    pub fn set_front_end(&self, sink: Option<EventSink>) {
        *self.front_end.lock().unwrap_or_else(|e| e.into_inner()) = sink;
    }

    /// Where loops of this tree hold background results until a safe point.
    pub fn inbox(&self) -> &Arc<Inbox> {
        &self.inbox
    }

    /// Background tasks still running.
    pub fn open_tasks(&self) -> Vec<OpenTask> {
        self.tasks.open()
    }

    /// Wait until every background task has finished and posted its result.
    pub async fn wait_tasks(&self) {
        self.tasks.wait().await;
    }

    /// Cancel every background task (each posts `failed`); then [`Tree::wait_tasks`].
    pub fn cancel_tasks(&self) {
        self.tasks.cancel_all();
    }

    pub(crate) fn notify(&self, event: AgentEvent) {
        if let Some(sink) = self
            .front_end
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            emit(sink, event);
        }
    }
}
