//! The `Tool` and `Extension` traits and the context a call runs in.

use crate::agents::AgentServices;
use crate::call::ToolOutput;
use crate::error::ToolError;
use crate::grants::{Grants, ToolPolicy};
use crate::host::{Capability, ToolHost};
use crate::spec::{ApprovalMode, ToolSpec};
use async_trait::async_trait;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// A tool the model can call.
#[async_trait]
pub trait Tool: Send + Sync {
    /// Name, description, JSON Schema, risk, default approval, owner.
    fn spec(&self) -> ToolSpec;

    /// Baseline policy before config (`security.tool_policies`) and agent overlays.
    fn default_policy(&self) -> ToolPolicy {
        ToolPolicy::new(self.spec().approval)
    }

    /// A stricter approval for *these* arguments (e.g. `git push`), applied regardless of
    /// `auto_approved_tools`. `None` = the resolved policy decides.
    fn approval_for(&self, _args: &Value) -> Option<ApprovalMode> {
        None
    }

    /// What this call would ask the host for, so the dispatcher can deny before asking for
    /// approval and `--explain` can show the decision without running anything. The host
    /// still checks every real request.
    fn planned_capabilities(&self, _args: &Value, _cx: &ToolContext) -> Vec<Capability> {
        Vec::new()
    }

    /// Where this call's result comes from, for the injection defence: content someone
    /// outside the operator wrote (a web page, an MCP server's answer) taints the session.
    fn provenance(&self, _args: &Value) -> Provenance {
        Provenance::Trusted
    }

    /// What this call can carry out of the session or plant for later, in words ("sends a
    /// message to #ops"), beyond what its capabilities show (network requests, writes outside
    /// the workspace, which the dispatcher reads from the plan). `None`: nothing.
    fn sink(&self, _args: &Value) -> Option<String> {
        None
    }

    /// This tool's own time limit; `None` = the dispatcher's default.
    fn timeout(&self) -> Option<Duration> {
        None
    }

    /// Run the call. Arguments have already been validated against `spec().parameters`.
    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError>;
}

/// Where a call's result comes from (docs/decisions/0033-taint-gates-sinks.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Provenance {
    /// The operator's machine and the tool's own output.
    Trusted,
    /// Written by someone else (a page, a search result, an MCP server): taints the session.
    /// The text says where from (`https://…`, `MCP server docs`).
    Untrusted(String),
}

/// A named group of tools; disabling it hides its tools (docs/architecture.md, "Tools").
///
/// `tools()` is called again whenever the registry refreshes, so an extension whose tool set
/// changes at run time (an MCP server's `tools/list_changed`) returns its current tools.
pub trait Extension: Send + Sync {
    /// The extension's name, as `agents[].extensions.enable` / `disable` list it.
    fn name(&self) -> &str;
    /// The tools it provides now; called again on every registry refresh.
    fn tools(&self) -> Vec<Arc<dyn Tool>>;
    /// Why `tool` (a name this extension would own) cannot be called right now, e.g.
    /// "MCP server `time` is still starting". Used instead of a bare "unknown tool".
    fn unavailable(&self, _tool: &str) -> Option<String> {
        None
    }
}

/// Who is calling, for what, under which grants: what the host provider needs to scope a host.
#[derive(Debug, Clone)]
pub struct CallScope {
    /// The tool being called.
    pub tool: String,
    /// The session the call belongs to.
    pub session_id: String,
    /// The agent making the call.
    pub agent: String,
    /// The workspace the call's relative paths resolve against.
    pub workspace: PathBuf,
    /// The resolved grants the host must enforce for this call.
    pub grants: Grants,
    /// Cancelled on Ctrl-C or timeout; the host stops the I/O under way.
    pub cancel: CancellationToken,
    /// A person approved this very call after being told what the policy could not check
    /// (e.g. a shell line under `opaque: ask`). Never carried over to another call.
    pub approved: bool,
}

/// Everything a running tool may use. Built by the dispatcher for each call.
#[derive(Clone)]
pub struct ToolContext {
    /// The workspace the call runs in (from its [`CallScope`]).
    pub workspace: PathBuf,
    /// The originating front end (`cli`, `chat`, `mcp`, …).
    pub channel: String,
    /// The conversation within `channel` (a chat or room id); empty when the front end has none.
    pub chat_id: String,
    /// The session the call belongs to.
    pub session_id: String,
    /// The agent making the call.
    pub agent: String,
    /// Cancelled on Ctrl-C or timeout; long-running tools should watch it.
    pub cancel: CancellationToken,
    host: Arc<dyn ToolHost>,
    agents: Option<Arc<dyn AgentServices>>,
    catalog: Option<Arc<dyn ToolCatalog>>,
    forms: Option<Arc<dyn crate::approval::FormAsker>>,
    progress: Option<Arc<dyn ProgressSink>>,
    approver: Option<Arc<dyn crate::approval::Approver>>,
    /// The agents above the caller in its tree, root first (empty for a root agent): what
    /// the caller reaches (its memory banks) is narrowed to what each of them reaches.
    pub ancestors: Vec<String>,
    /// Where the caller's session read untrusted content (empty: nowhere); an agent it
    /// starts begins tainted by the same (docs/decisions/0033-taint-gates-sinks.md).
    pub tainted_by: Vec<String>,
}

/// Lines a running tool reports as it goes (a command's output), for a front end that shows
/// progress. The dispatcher cleans and redacts each line before the front end sees it.
pub trait ProgressSink: Send + Sync {
    /// Reports one line as it happens; the tool waits for this call, so it should be quick.
    fn line(&self, text: &str);
}

/// Read access to the registry, for discovery tools such as `describe_tool`.
pub trait ToolCatalog: Send + Sync {
    /// The full spec of a registered tool.
    fn spec(&self, name: &str) -> Option<ToolSpec>;
    /// Registered names closest to `name`, best first (for "did you mean").
    fn suggest(&self, name: &str) -> Vec<String>;
}

impl ToolContext {
    /// A context for one call under `scope`, with `host`; agents, catalog, forms and progress are
    /// added by the `with_*` methods.
    pub fn new(scope: &CallScope, channel: &str, host: Arc<dyn ToolHost>) -> Self {
        Self {
            workspace: scope.workspace.clone(),
            channel: channel.to_string(),
            chat_id: String::new(),
            session_id: scope.session_id.clone(),
            agent: scope.agent.clone(),
            cancel: scope.cancel.clone(),
            host,
            agents: None,
            catalog: None,
            forms: None,
            progress: None,
            approver: None,
            ancestors: Vec::new(),
            tainted_by: Vec::new(),
        }
    }

    /// Gives agent tools (spawn, compact, message) the runtime they act on.
    pub fn with_agents(mut self, agents: Arc<dyn AgentServices>) -> Self {
        self.agents = Some(agents);
        self
    }

    /// Sets the conversation within the channel, the `message` tool's default destination there.
    pub fn with_chat_id(mut self, chat_id: impl Into<String>) -> Self {
        self.chat_id = chat_id.into();
        self
    }

    /// Gives discovery tools (`describe_tool`) read access to the registry.
    pub fn with_catalog(mut self, catalog: Arc<dyn ToolCatalog>) -> Self {
        self.catalog = Some(catalog);
        self
    }

    /// Where forms of third parties (an MCP server's elicitation) go during this call.
    pub fn with_forms(mut self, forms: Option<Arc<dyn crate::approval::FormAsker>>) -> Self {
        self.forms = forms;
        self
    }

    /// Where the call's progress lines go, when its front end shows them.
    pub fn with_progress(mut self, progress: Option<Arc<dyn ProgressSink>>) -> Self {
        self.progress = progress;
        self
    }

    /// Who approves this call's own calls (the calling front end's approver), for the agent
    /// tools that start children: a child asks the same person, never inherits a yes.
    pub fn with_approver(mut self, approver: Arc<dyn crate::approval::Approver>) -> Self {
        self.approver = Some(approver);
        self
    }

    /// The calling front end's approver, when the dispatcher passed it on.
    pub fn approver(&self) -> Option<&Arc<dyn crate::approval::Approver>> {
        self.approver.as_ref()
    }

    /// The agents above the caller, root first.
    pub fn with_ancestors(mut self, ancestors: Vec<String>) -> Self {
        self.ancestors = ancestors;
        self
    }

    /// The front end's progress sink, if it shows progress.
    pub fn progress(&self) -> Option<&Arc<dyn ProgressSink>> {
        self.progress.as_ref()
    }

    /// The call's front end, for a third party's form, when it can pass one on.
    pub fn forms(&self) -> Option<&Arc<dyn crate::approval::FormAsker>> {
        self.forms.as_ref()
    }

    /// The registry, when the dispatcher provides it.
    pub fn catalog(&self) -> Result<&dyn ToolCatalog, ToolError> {
        self.catalog
            .as_deref()
            .ok_or_else(|| ToolError::failed("no tool catalog is available in this context"))
    }

    /// The capability boundary for this call.
    pub fn host(&self) -> &dyn ToolHost {
        self.host.as_ref()
    }

    /// The agent runtime (spawn, compact, message), when the front end runs one.
    pub fn agents(&self) -> Result<&dyn AgentServices, ToolError> {
        self.agents.as_deref().ok_or_else(|| {
            ToolError::failed("this front end runs no agent, so agent tools are unavailable here")
        })
    }
}
