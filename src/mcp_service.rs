//! `tackle mcp serve`'s adapter: Tackle's tools served over MCP go through the same dispatcher
//! as every other front end: validation, policy, approval (MCP elicitation), host, sanitizer,
//! audit. It lives in the binary so the agent crate does not depend on the MCP server (and
//! its HTTP stack).

use crate::approval_queue::ApprovalQueue;
use crate::queued_prompt::{FrontEnd, QueuedPrompt};
use async_trait::async_trait;
use std::collections::{BTreeSet, HashMap};
use std::hash::{BuildHasher, Hasher};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tackle_agent::approvers::NonInteractiveApprover;
use tackle_agent::profiles::ToolSelection;
use tackle_agent::{CallRequest, Dispatcher, SessionApprovals};
use tackle_mcp::ToolService;
use tackle_protocol::{Approver, ProgressSink, ToolCall, ToolError, ToolOutput, ToolSpec};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// How often the registry is re-read for tools that MCP servers behind this one added or
/// dropped.
const TOOL_WATCH_INTERVAL: Duration = Duration::from_secs(2);

pub struct DispatcherService {
    dispatcher: Arc<Dispatcher>,
    session_id: String,
    /// Each MCP session's "allow for the session" answers.
    approvals: Mutex<HashMap<String, Arc<SessionApprovals>>>,
    /// The MCP servers configured behind this one: their tools are passed through.
    mcp_servers: BTreeSet<String>,
    /// Moves when the tool list changed (see [`Self::watch_tools`]); `None`: it never does.
    tool_changes: Option<watch::Sender<u64>>,
    /// The tools offered (`mcp.serve_tools`); any other is unknown here.
    offered: ToolSelection,
    /// The approval queue each elicitation is also put in, and the agent its entries name;
    /// `None`: the client alone is asked.
    queue: Option<(Arc<ApprovalQueue>, String)>,
}

impl DispatcherService {
    /// `prefix` starts every session id this server records; a per-process suffix keeps two
    /// runs' sessions apart (in the audit log and in their `TMPDIR`s).
    pub fn new(dispatcher: Arc<Dispatcher>, prefix: &str) -> Self {
        Self {
            dispatcher,
            session_id: format!("{prefix}-{}", process_tag()),
            approvals: Mutex::new(HashMap::new()),
            mcp_servers: BTreeSet::new(),
            tool_changes: None,
            offered: ToolSelection::all(),
            queue: None,
        }
    }

    /// Put every approval asked of a client in `queue` too (under `agent`), so that
    /// `tackle approvals`, the HTTP API and the console may answer it while the client's
    /// form is open (`crate::queued_prompt`).
    pub fn with_approval_queue(mut self, queue: Arc<ApprovalQueue>, agent: &str) -> Self {
        self.queue = Some((queue, agent.to_string()));
        self
    }

    /// Offer only the tools `offered` selects: others are neither listed nor callable. MCP
    /// clients get full schemas whatever the agent's tool profile says.
    pub fn with_serve_tools(mut self, offered: ToolSelection) -> Self {
        self.offered = offered;
        self
    }

    /// The MCP servers whose tools are in the registry (`mcp_servers:`). Their tools are
    /// annotated as reaching beyond this machine, and since their lists change at run time,
    /// the tool list is watched (start watching with [`Self::watch_tools`]).
    pub fn with_mcp_servers(mut self, names: impl IntoIterator<Item = String>) -> Self {
        self.mcp_servers = names.into_iter().collect();
        if !self.mcp_servers.is_empty() {
            self.tool_changes = Some(watch::channel(0).0);
        }
        self
    }

    /// The tools may change while serving for a reason of the registry's own (plugins reloaded
    /// when their files change): watch the list then too.
    pub fn with_changing_tools(mut self, changing: bool) -> Self {
        if changing && self.tool_changes.is_none() {
            self.tool_changes = Some(watch::channel(0).0);
        }
        self
    }

    /// Re-reads the registry every [`TOOL_WATCH_INTERVAL`] and moves the change counter each
    /// time the tools differ, which every MCP session announces as
    /// `notifications/tools/list_changed`. Nothing to do (and nothing started) when no MCP
    /// server is configured. Stops when the service is dropped.
    pub fn watch_tools(self: &Arc<Self>) {
        if self.tool_changes.is_none() {
            return;
        }
        let service: Weak<Self> = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut last: Option<Vec<ToolSpec>> = None;
            loop {
                let Some(me) = service.upgrade() else { return };
                let now = me.current_tools();
                if last.as_ref().is_some_and(|last| *last != now) {
                    if let Some(changes) = &me.tool_changes {
                        changes.send_modify(|n| *n = n.wrapping_add(1));
                    }
                }
                last = Some(now);
                drop(me);
                tokio::time::sleep(TOOL_WATCH_INTERVAL).await;
            }
        });
    }

    fn current_tools(&self) -> Vec<ToolSpec> {
        self.dispatcher.registry().refresh();
        let mut specs = self.dispatcher.registry().specs();
        specs.retain(|s| self.offered.allows(&s.name));
        specs
    }

    fn approvals_of(&self, session: &str) -> Arc<SessionApprovals> {
        match self.approvals.lock() {
            Ok(mut map) => Arc::clone(map.entry(session.to_string()).or_default()),
            // Poisoned: ask again rather than fail the call.
            Err(_) => Arc::default(),
        }
    }
}

/// The tool a `describe_tool` call asks about.
fn described_tool(call: &ToolCall) -> Option<&str> {
    (call.name == "describe_tool")
        .then(|| {
            call.arguments
                .get("tool")
                .and_then(serde_json::Value::as_str)
        })
        .flatten()
}

/// The start time in seconds and 32 random bits, in hex: distinct for each run.
fn process_tag() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_u64(secs);
    format!("{secs:x}-{:08x}", h.finish() as u32)
}

#[async_trait]
impl ToolService for DispatcherService {
    fn tools(&self) -> Vec<ToolSpec> {
        self.current_tools()
    }

    fn passes_through(&self, tool: &ToolSpec) -> bool {
        self.mcp_servers.contains(&tool.owner)
    }

    fn tool_changes(&self) -> Option<watch::Receiver<u64>> {
        self.tool_changes.as_ref().map(watch::Sender::subscribe)
    }

    async fn call(
        &self,
        call: ToolCall,
        approver: Arc<dyn Approver>,
        session: &str,
    ) -> Result<ToolOutput, ToolError> {
        self.call_cancellable(call, approver, session, CancellationToken::new(), None)
            .await
    }

    /// The client's cancellation is the call's: the dispatcher stops the tool (killing the
    /// process group of anything it runs) and records the call as cancelled.
    async fn call_cancellable(
        &self,
        call: ToolCall,
        approver: Arc<dyn Approver>,
        session: &str,
        cancel: CancellationToken,
        progress: Option<Arc<dyn ProgressSink>>,
    ) -> Result<ToolOutput, ToolError> {
        // A refusal here is this server's decision and is recorded like the dispatcher's own:
        // worded as for a tool that does not exist (this server does not have it).
        let refusal = if !self.offered.allows(&call.name) {
            Some(format!("unknown tool `{}`", call.name))
        } else {
            // `describe_tool` reads the whole registry; it must not show what is not offered.
            described_tool(&call)
                .filter(|t| !self.offered.allows(t))
                .map(|target| format!("no tool named `{target}`"))
        };
        // Each MCP session is a session of its own: approvals and TMPDIR do not leak across.
        let session_id = format!("{}-{session}", self.session_id);
        let approver: Arc<dyn Approver> = match &self.queue {
            Some((queue, agent)) => Arc::new(QueuedPrompt::new(
                approver,
                Arc::clone(queue),
                agent,
                &session_id,
                FrontEnd::MCP,
            )),
            None => approver,
        };
        let req = CallRequest::new(call, approver)
            .session(session_id)
            .approvals(self.approvals_of(session))
            .channel("mcp")
            .cancel(cancel)
            .progress(progress);
        if let Some(why) = refusal {
            return Err(self
                .dispatcher
                .refuse(&req, ToolError::not_found(why))
                .await);
        }
        self.dispatcher.dispatch(req).await
    }

    async fn refused(&self, call: ToolCall, session: &str, error: ToolError) -> ToolError {
        // Nobody is asked anything about a call that never was one.
        let req = CallRequest::new(call, Arc::new(NonInteractiveApprover))
            .session(format!("{}-{session}", self.session_id))
            .channel("mcp");
        self.dispatcher.refuse(&req, error).await
    }
}
