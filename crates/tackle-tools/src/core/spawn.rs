//! `spawn_agent`, `spawn_worker`, `spawn`: start a child agent. The agent runtime
//! (`cx.agents()`) does the work under the tree's rules; these tools parse and ask.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::time::Duration;
use tackle_protocol::{
    ApprovalMode, ChildKind, Risk, SpawnRequest, SpawnResult, Tool, ToolContext, ToolError,
    ToolOutput, ToolSpec,
};

/// How long a spawned child may run before the call gives up on it (the README's "Agent trees").
const CHILD_TIMEOUT: Duration = Duration::from_secs(300);

fn spec(name: &str, description: &str, parameters: Value) -> ToolSpec {
    ToolSpec::new(name, description, "core")
        .parameters(parameters)
        .risk(Risk::Medium)
        .approval(ApprovalMode::UnlessAutoApproved)
        .conversation_only()
        .spawns_children()
}

/// The result as the model sees it: the child's answer, or where a background run is.
pub(super) fn render(result: SpawnResult) -> ToolOutput {
    match result.task {
        Some((id, label)) => ToolOutput::text(format!(
            "Started background task '{label}' (id {id}). Its result will be posted into this session as `[Background task '{label}' completed|failed]`."
        )),
        None => ToolOutput::text(result.text),
    }
}

// Arguments of `spawn_agent`. `agent_ref` is a second name for `agent`; the schema lists both
// (neither is required there) and `call` asks for exactly one.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct AgentArgs {
    /// A configured agent (under `agents:`).
    agent: Option<String>,
    /// Alias of `agent`.
    agent_ref: Option<String>,
    /// What the child should do.
    task: String,
    /// What the child needs to know, appended to the task.
    context: Option<String>,
    /// A model of the same backend, instead of the default.
    model: Option<String>,
    #[schemars(
        description = "A preset under `presets:` (model, backend, tool profile, prompt addition) for the child; `model` and `tools` given here still win. An unknown name is refused with the list."
    )]
    preset: Option<String>,
    /// Accepted for compatibility; the tree shares one iteration pool.
    #[allow(dead_code)]
    max_iterations: Option<u32>,
    /// Return at once; the answer is posted into this session later.
    #[serde(default, rename = "async")]
    background: bool,
}

impl AgentArgs {
    /// The agent named by `agent` or its alias `agent_ref`, given once.
    fn agent(&mut self) -> Result<String, ToolError> {
        let bad = |m: &str| {
            ToolError::invalid_arguments(format!("invalid arguments for `spawn_agent`: {m}"))
        };
        match (self.agent.take(), self.agent_ref.take()) {
            (Some(a), None) | (None, Some(a)) => Ok(a),
            (None, None) => Err(bad("missing field `agent`")),
            (Some(_), Some(_)) => Err(bad("duplicate field `agent`")),
        }
    }
}

/// The `spawn_agent` tool: starts a child agent, waiting for it unless `async` is set.
pub struct SpawnAgent;

#[async_trait]
impl Tool for SpawnAgent {
    fn spec(&self) -> ToolSpec {
        spec(
            "spawn_agent",
            "Delegate a task to another configured agent (its own prompt, grants and memory, never wider than yours) in a child session; returns its final answer.",
            crate::args::schema::<AgentArgs>(),
        )
    }

    fn timeout(&self) -> Option<Duration> {
        Some(CHILD_TIMEOUT)
    }

    fn sink(&self, _args: &Value) -> Option<String> {
        Some("starts an agent with a task this session wrote".into())
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let mut a: AgentArgs = crate::args::parse_for("spawn_agent", args)?;
        let mut req = SpawnRequest::new(ChildKind::Agent(a.agent()?), a.task);
        req.context = a.context;
        req.model = a.model;
        req.preset = a.preset;
        req.background = a.background;
        Ok(render(cx.agents()?.spawn(cx, req).await?))
    }
}

// Arguments of `spawn_worker`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WorkerArgs {
    /// A worker template of yours (under `workers:`).
    name: String,
    /// What the child should do.
    task: String,
    /// What the child needs to know, appended to the task.
    context: Option<String>,
    /// Narrow the worker's tools; each must be one the template and you have.
    tools: Option<Vec<String>>,
    /// A model of the same backend, instead of the default.
    model: Option<String>,
    #[schemars(
        description = "A preset under `presets:` (model, backend, tool profile, prompt addition) for the child; `model` and `tools` given here still win. An unknown name is refused with the list."
    )]
    preset: Option<String>,
    /// Accepted for compatibility; the tree shares one iteration pool.
    #[allow(dead_code)]
    max_iterations: Option<u32>,
    /// Return at once; the answer is posted into this session later.
    #[serde(default, rename = "async")]
    background: bool,
}

/// The `spawn_worker` tool: starts a child from a worker template.
pub struct SpawnWorker;

#[async_trait]
impl Tool for SpawnWorker {
    fn spec(&self) -> ToolSpec {
        spec(
            "spawn_worker",
            "Run one of your worker templates on a task in a child session (no identity of its own, your grants or narrower, sharing your iteration budget); returns its final answer.",
            crate::args::schema::<WorkerArgs>(),
        )
    }

    fn timeout(&self) -> Option<Duration> {
        Some(CHILD_TIMEOUT)
    }

    fn sink(&self, _args: &Value) -> Option<String> {
        Some("starts an agent with a task this session wrote".into())
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let a: WorkerArgs = crate::args::parse_for("spawn_worker", args)?;
        let mut req = SpawnRequest::new(ChildKind::Worker(a.name), a.task);
        req.context = a.context;
        req.tools = a.tools;
        req.model = a.model;
        req.preset = a.preset;
        req.background = a.background;
        Ok(render(cx.agents()?.spawn(cx, req).await?))
    }
}

// Arguments of `spawn`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct BackgroundArgs {
    /// What the background task should do.
    task: String,
    /// A short name for it (default: the task's first 30 characters).
    label: Option<String>,
}

/// The `spawn` tool: starts a labelled background task.
pub struct Spawn;

#[async_trait]
impl Tool for Spawn {
    fn spec(&self) -> ToolSpec {
        spec(
            "spawn",
            "Start a background task with your tools (minus the spawning ones); returns its label and id at once. Its result is posted into this session when it finishes.",
            crate::args::schema::<BackgroundArgs>(),
        )
    }

    fn sink(&self, _args: &Value) -> Option<String> {
        Some("starts an agent with a task this session wrote".into())
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let a: BackgroundArgs = crate::args::parse_for("spawn", args)?;
        let mut req = SpawnRequest::new(ChildKind::Background, a.task);
        req.label = a.label.filter(|l| !l.trim().is_empty());
        req.background = true;
        Ok(render(cx.agents()?.spawn(cx, req).await?))
    }
}
