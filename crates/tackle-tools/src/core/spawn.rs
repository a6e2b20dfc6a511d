//! `spawn_agent`, `spawn_worker`, `spawn`: start a child agent. The agent runtime
//! (`cx.agents()`) does the work under the tree's rules; these tools parse and ask.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Value};
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

fn common_properties() -> serde_json::Map<String, Value> {
    let mut p = serde_json::Map::new();
    p.insert(
        "task".into(),
        json!({"type": "string", "description": "What the child should do."}),
    );
    p.insert("context".into(), json!({"type": "string", "description": "What the child needs to know, appended to the task."}));
    p.insert("model".into(), json!({"type": "string", "description": "A model of the same backend, instead of the default."}));
    p.insert(
        "preset".into(),
        json!({"type": "string", "description": "A preset under `presets:` (model, backend, tool profile, prompt addition) for the child; `model` and `tools` given here still win. An unknown name is refused with the list."}),
    );
    p.insert("max_iterations".into(), json!({"type": "integer", "description": "Accepted for compatibility; the tree shares one iteration pool."}));
    p.insert("async".into(), json!({"type": "boolean", "description": "Return at once; the answer is posted into this session later."}));
    p
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentArgs {
    #[serde(alias = "agent_ref")]
    agent: String,
    task: String,
    #[serde(default)]
    context: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    preset: Option<String>,
    #[serde(default)]
    #[allow(dead_code)]
    max_iterations: Option<u32>,
    #[serde(default, rename = "async")]
    background: bool,
}

pub struct SpawnAgent;

#[async_trait]
impl Tool for SpawnAgent {
    fn spec(&self) -> ToolSpec {
        let mut p = common_properties();
        p.insert(
            "agent".into(),
            json!({"type": "string", "description": "A configured agent (under `agents:`)."}),
        );
        p.insert(
            "agent_ref".into(),
            json!({"type": "string", "description": "Alias of `agent`."}),
        );
        spec(
            "spawn_agent",
            "Delegate a task to another configured agent (its own prompt, grants and memory, never wider than yours) in a child session; returns its final answer.",
            json!({"type": "object", "properties": p, "required": ["task"]}),
        )
    }

    fn timeout(&self) -> Option<Duration> {
        Some(CHILD_TIMEOUT)
    }

    fn sink(&self, _args: &Value) -> Option<String> {
        Some("starts an agent with a task this session wrote".into())
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let a: AgentArgs = crate::args::parse_for("spawn_agent", args)?;
        let mut req = SpawnRequest::new(ChildKind::Agent(a.agent), a.task);
        req.context = a.context;
        req.model = a.model;
        req.preset = a.preset;
        req.background = a.background;
        Ok(render(cx.agents()?.spawn(cx, req).await?))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WorkerArgs {
    name: String,
    task: String,
    #[serde(default)]
    context: Option<String>,
    #[serde(default)]
    tools: Option<Vec<String>>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    preset: Option<String>,
    #[serde(default)]
    #[allow(dead_code)]
    max_iterations: Option<u32>,
    #[serde(default, rename = "async")]
    background: bool,
}

pub struct SpawnWorker;

#[async_trait]
impl Tool for SpawnWorker {
    fn spec(&self) -> ToolSpec {
        let mut p = common_properties();
        p.insert("name".into(), json!({"type": "string", "description": "A worker template of yours (under `workers:`)."}));
        p.insert("tools".into(), json!({"type": "array", "items": {"type": "string"}, "description": "Narrow the worker's tools; each must be one the template and you have."}));
        spec(
            "spawn_worker",
            "Run one of your worker templates on a task in a child session (no identity of its own, your grants or narrower, sharing your iteration budget); returns its final answer.",
            json!({"type": "object", "properties": p, "required": ["name", "task"]}),
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BackgroundArgs {
    task: String,
    #[serde(default)]
    label: Option<String>,
}

pub struct Spawn;

#[async_trait]
impl Tool for Spawn {
    fn spec(&self) -> ToolSpec {
        spec(
            "spawn",
            "Start a background task with your tools (minus the spawning ones); returns its label and id at once. Its result is posted into this session when it finishes.",
            json!({"type": "object", "properties": {
                "task": {"type": "string", "description": "What the background task should do."},
                "label": {"type": "string", "description": "A short name for it (default: the task's first 30 characters)."}
            }, "required": ["task"]}),
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
