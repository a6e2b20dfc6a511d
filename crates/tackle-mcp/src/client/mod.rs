//! The MCP client manager: configured servers' tools become `<server>__<tool>`.

mod relay;
mod server;
mod tool;

use crate::content::{ResultSpill, DEFAULT_RESULT_LIMIT};
use crate::elicit::{DeclineAll, ElicitationHandler};
use server::Server;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tackle_protocol::config::McpServerConfig;
use tackle_protocol::Extension;
use tokio_util::sync::CancellationToken;

/// Knobs shared by every server; per-server timeouts in the config win.
#[derive(Clone)]
pub struct McpOptions {
    /// Where oversized results are written in full; `None` = only the capped text is kept.
    pub spill: Option<Arc<dyn ResultSpill>>,
    /// Results longer than this many bytes are capped (and spilled).
    pub result_limit: usize,
    /// Default for `startup_timeout_secs`: start-up plus the first `tools/list`.
    pub startup_timeout: Duration,
    /// Default for `call_timeout_secs`.
    pub call_timeout: Duration,
    /// First restart delay after a crash or failed start; doubles up to `max_backoff`.
    pub initial_backoff: Duration,
    /// The longest delay between restarts of a server that keeps failing.
    pub max_backoff: Duration,
    /// Where OAuth tokens are kept (the state directory); `None` = no OAuth.
    pub token_dir: Option<std::path::PathBuf>,
    /// Who answers servers' `elicitation/create`; the default declines every request (and
    /// the capability is declared only for a handler that can ask).
    pub elicitation: Arc<dyn ElicitationHandler>,
    /// Pass servers' forms on to the front end of the call that made them ask, where that
    /// front end can take them (`tackle mcp serve`: the calling MCP client), and so declare
    /// elicitation to servers even when `elicitation` itself cannot ask.
    pub relay_forms: bool,
    /// Who answers `sampling/createMessage` of a server whose config says `sampling: ask`;
    /// the default refuses (and the capability is declared only for a handler that can ask).
    pub sampling: Arc<dyn crate::sampling::SamplingHandler>,
    /// The directories servers are told about when they ask `roots/list`, each with a short
    /// name (`("workspace", /abs/ws)`). The caller lists only absolute, canonical paths its
    /// grants let tools read; entries that are not absolute are never sent. A change is
    /// announced to every connected server.
    pub roots: crate::Roots,
    /// Where tool pins are kept (docs/decisions/0031-mcp-tool-pinning.md); `None` = no
    /// pinning: every listed tool is offered.
    pub pins: Option<Arc<dyn crate::pinning::PinStore>>,
}

impl Default for McpOptions {
    fn default() -> Self {
        Self {
            spill: None,
            result_limit: DEFAULT_RESULT_LIMIT,
            startup_timeout: Duration::from_secs(30),
            call_timeout: Duration::from_secs(60),
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            token_dir: None,
            elicitation: Arc::new(DeclineAll),
            relay_forms: false,
            sampling: Arc::new(crate::sampling::RefuseSampling),
            roots: crate::Roots::default(),
            pins: None,
        }
    }
}

/// Where a server is in its life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerState {
    /// Being started, or restarted after a crash (its tools are not offered meanwhile).
    Starting,
    /// Initialised and listed: its tools can be called.
    Ready,
    /// Why it failed; it is retried with backoff.
    Failed(String),
}

/// One line of `tackle mcp list`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerStatus {
    /// The server's name in `mcp_servers`.
    pub name: String,
    /// Where it is in its life.
    pub state: ServerState,
    /// Registry names of its current tools.
    pub tools: Vec<String>,
}

/// One listed tool against its server's pins, for `tackle mcp pins` and `tackle mcp trust`.
#[derive(Debug, Clone)]
pub struct ToolPinStatus {
    /// The server's name in `mcp_servers`.
    pub server: String,
    /// The name the server lists it under.
    pub tool: String,
    /// The name the model sees it under (prefixed with the server's name).
    pub registry_name: String,
    /// Where it stands against the pins.
    pub state: crate::pinning::PinState,
    /// The offered definition's digest (of `definition`).
    pub digest: String,
    /// The offered definition as canonical JSON: what a pin keeps and `trust` shows.
    pub definition: String,
    /// What was cleaned from its description (`2 zero-width characters`); empty for nothing.
    pub removed: String,
    /// Why it is quarantined and how to accept it; `None` when it is not.
    pub message: Option<String>,
}

/// Starts and supervises the configured MCP servers and exposes their tools.
///
/// Dropping the manager stops every server (stdio children are killed).
pub struct McpManager {
    servers: Vec<Arc<Server>>,
    stop: CancellationToken,
}

impl McpManager {
    /// Start every server in the background; returns at once. Must run inside a Tokio runtime.
    pub fn start(configs: BTreeMap<String, McpServerConfig>, options: McpOptions) -> Self {
        let stop = CancellationToken::new();
        let options = Arc::new(options);
        let servers: Vec<Arc<Server>> = configs
            .into_iter()
            .map(|(name, config)| Server::new(name, config, options.clone()))
            .collect();
        for server in &servers {
            tokio::spawn(server::supervise(server.clone(), stop.child_token()));
        }
        Self { servers, stop }
    }

    /// One extension per server (named after it), whose `tools()` are its current tools.
    pub fn extensions(&self) -> Vec<Arc<dyn Extension>> {
        self.servers
            .iter()
            .map(|s| Arc::new(tool::ServerExtension::new(s.clone())) as Arc<dyn Extension>)
            .collect()
    }

    /// Every configured server, its state and its tools, in name order.
    pub async fn status(&self) -> Vec<ServerStatus> {
        self.servers.iter().map(|s| s.status()).collect()
    }

    /// Wait until no server is `Starting` (each is `Ready` or `Failed`), or `timeout`.
    /// For `tackle mcp list` and one-shot runs that want the tools before the first turn.
    pub async fn wait_settled(&self, timeout: Duration) {
        let all = futures::future::join_all(self.servers.iter().map(|s| s.wait_settled()));
        let _ = tokio::time::timeout(timeout, all).await;
    }

    /// Waits (up to `timeout`) only for the servers whose tools `tool` could be
    /// (`server__tool`); a built-in tool's name waits for none.
    pub async fn wait_settled_for(&self, tool: &str, timeout: Duration) {
        let owners = self.servers.iter().filter(|s| {
            tool.strip_prefix(s.name.as_str())
                .is_some_and(|rest| rest.starts_with("__"))
        });
        let some = futures::future::join_all(owners.map(|s| s.wait_settled()));
        let _ = tokio::time::timeout(timeout, some).await;
    }

    /// Every listed tool of `server` (of every server when `None`) against the pins, read
    /// afresh, in server order.
    pub async fn pin_status(&self, server: Option<&str>) -> Vec<ToolPinStatus> {
        let mut out = Vec::new();
        for s in self
            .servers
            .iter()
            .filter(|s| server.is_none_or(|n| n == s.name))
        {
            out.extend(s.pin_report().await);
        }
        out
    }

    /// Pins the definition `server` offers `tool` with now, replacing its pin (the operator
    /// accepted it), unless it is not the one the operator reviewed (`expected`, its digest):
    /// then nothing is pinned.
    pub async fn trust(
        &self,
        server: &str,
        tool: &str,
        expected: Option<&str>,
        by: crate::pinning::PinnedBy,
    ) -> Result<crate::pinning::Trusted, crate::pinning::PinError> {
        match self.servers.iter().find(|s| s.name == server) {
            Some(s) => s.trust(tool, expected, by).await,
            None => Ok(crate::pinning::Trusted::NotOffered),
        }
    }

    /// Reads `server`'s pins again now, so a tool accepted elsewhere is offered at once
    /// rather than at the next periodic re-read.
    pub async fn reload_pins(&self, server: &str) {
        for s in self.servers.iter().filter(|s| s.name == server) {
            s.reload_pins().await;
        }
    }

    /// Stop every server and wait for their connections to close.
    pub async fn shutdown(&self) {
        self.stop.cancel();
        for server in &self.servers {
            server.close().await;
        }
    }
}

impl Drop for McpManager {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}
