//! What tools that need the agent (spawn, compact, message) may ask of it, without
//! depending on `tackle-agent` (docs/architecture.md).

use crate::error::ToolError;
use crate::tool::ToolContext;
use async_trait::async_trait;

/// What a child run is made from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChildKind {
    /// A named peer agent (`spawn_agent`): its own config, prompt, grants and memory, each
    /// narrowed to the caller's.
    Agent(String),
    /// A worker template from the caller's `workers:` (`spawn_worker`).
    Worker(String),
    /// A `delegate` role: the worker template of that name, else a generic prompt; it
    /// starts nothing itself.
    Role(String),
    /// A background copy of the caller (`spawn`): its tools minus the spawning ones.
    Background,
}

/// One child run to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnRequest {
    /// What the child is made from (a peer agent, a worker template, a role, a background copy).
    pub kind: ChildKind,
    /// The task the child is given as its first user message.
    pub task: String,
    /// Appended to the task, for what the child needs to know.
    pub context: Option<String>,
    /// Narrows the child's tools further; every name must be in its scope.
    pub tools: Option<Vec<String>>,
    /// A model of the child's backend; unset: what its template or agent sets, else the caller's.
    pub model: Option<String>,
    /// A name under `presets:`; unknown names are refused before anything starts.
    pub preset: Option<String>,
    /// Return at once with the child's id; its answer is posted into the caller's session.
    pub background: bool,
    /// The name a background run is reported under.
    pub label: Option<String>,
}

impl SpawnRequest {
    /// A foreground request for `kind` to do `task`, with no other narrowing.
    pub fn new(kind: ChildKind, task: impl Into<String>) -> Self {
        Self {
            kind,
            task: task.into(),
            context: None,
            tools: None,
            model: None,
            preset: None,
            background: false,
            label: None,
        }
    }
}

/// A finished child run, or where a background one can be found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnResult {
    /// The child's session id.
    pub session_id: String,
    /// The child's final answer (empty for a background run, which reports later).
    pub text: String,
    /// The short id and label of a background run.
    pub task: Option<(String, String)>,
}

/// The agent runtime as tools see it: compaction, children and messages to the session.
#[async_trait]
pub trait AgentServices: Send + Sync {
    /// Summarise the calling session's history and write a Summary entry; returns the summary.
    async fn compact(&self, cx: &ToolContext) -> Result<String, ToolError>;

    /// Run a child agent in a child session of the caller's, under grants no wider than the
    /// caller's. Front ends without an agent tree cannot.
    async fn spawn(&self, _cx: &ToolContext, _req: SpawnRequest) -> Result<SpawnResult, ToolError> {
        Err(ToolError::failed(
            "this front end runs no agent tree, so agents cannot be spawned here",
        ))
    }

    /// Whether the caller may spawn at all (not a background run, depth left), checked before
    /// a fan-out starts so it fails as one.
    fn can_spawn(&self, _cx: &ToolContext) -> Result<(), ToolError> {
        Ok(())
    }

    /// The most children the caller may run at once (`max_concurrent_children`).
    fn max_concurrent_children(&self) -> usize {
        1
    }

    /// A proactive message to the caller's own front end: an event to a live one and an
    /// entry in the session log.
    async fn message_session(&self, _cx: &ToolContext, _content: &str) -> Result<(), ToolError> {
        Err(ToolError::failed(
            "this front end has no session to send a message to",
        ))
    }
}
