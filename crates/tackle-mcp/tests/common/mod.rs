//! Shared by the peer tests: where the installed peers are, a host that does nothing, and
//! small helpers. Peers come from `.ci/mcp-peers.sh`; a test whose peer is absent prints why
//! and passes without running.
#![allow(dead_code)]

use async_trait::async_trait;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tackle_mcp::{McpManager, McpOptions, ServerState};
use tackle_protocol::config::McpServerConfig;
use tackle_protocol::*;

/// Skip the test (with the reason on stderr) when a peer is missing.
#[macro_export]
macro_rules! require {
    ($found:expr, $why:expr) => {
        match $found {
            Some(v) => v,
            None => {
                eprintln!("SKIPPED: {} (run .ci/mcp-peers.sh)", $why);
                return;
            }
        }
    };
}

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn existing(p: PathBuf) -> Option<PathBuf> {
    p.exists().then_some(p)
}

pub fn venv_python() -> Option<PathBuf> {
    existing(repo_root().join(".ci/venv/bin/python"))
}

pub fn time_server() -> Option<PathBuf> {
    existing(repo_root().join(".ci/venv/bin/mcp-server-time"))
}

pub fn client_script() -> PathBuf {
    repo_root().join("tests/mcp_client/client.py")
}

pub fn dynamic_server_script() -> PathBuf {
    repo_root().join("tests/mcp_client/dynamic_server.py")
}

pub fn everything_js() -> Option<PathBuf> {
    existing(
        repo_root().join(".ci/node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
    )
}

pub fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

pub fn stdio(command: &Path, args: &[&str]) -> McpServerConfig {
    McpServerConfig {
        command: Some(command.display().to_string()),
        args: args.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

/// Start the servers and wait for them to be ready (or failed).
pub async fn start(servers: Vec<(&str, McpServerConfig)>, options: McpOptions) -> McpManager {
    let configs: BTreeMap<String, McpServerConfig> = servers
        .into_iter()
        .map(|(n, c)| (n.to_string(), c))
        .collect();
    let mgr = McpManager::start(configs, options);
    mgr.wait_settled(Duration::from_secs(60)).await;
    mgr
}

pub fn find_tool(mgr: &McpManager, name: &str) -> Option<Arc<dyn Tool>> {
    mgr.extensions()
        .into_iter()
        .flat_map(|e| e.tools())
        .find(|t| t.spec().name == name)
}

pub fn tool_names(mgr: &McpManager) -> Vec<String> {
    mgr.extensions()
        .into_iter()
        .flat_map(|e| e.tools())
        .map(|t| t.spec().name)
        .collect()
}

/// Poll `check` every 100 ms until it holds or `within` passes.
pub async fn eventually(within: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if check() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    check()
}

pub async fn state_of(mgr: &McpManager, server: &str) -> Option<ServerState> {
    mgr.status()
        .await
        .into_iter()
        .find(|s| s.name == server)
        .map(|s| s.state)
}

pub async fn call(tool: &Arc<dyn Tool>, args: serde_json::Value) -> Result<ToolOutput, ToolError> {
    tool.call(args, &context()).await
}

pub fn context() -> ToolContext {
    context_with(tokio_util::sync::CancellationToken::new())
}

pub fn context_with(cancel: tokio_util::sync::CancellationToken) -> ToolContext {
    let scope = CallScope {
        tool: "test".into(),
        session_id: "s".into(),
        agent: "a".into(),
        workspace: std::env::temp_dir(),
        grants: Grants::default(),
        cancel,
        approved: false,
    };
    ToolContext::new(&scope, "test", Arc::new(NoHost(Grants::default())))
}

/// MCP tools never touch the host; this one refuses everything to prove it.
pub struct NoHost(Grants);

#[async_trait]
impl ToolHost for NoHost {
    fn workspace(&self) -> &Path {
        Path::new("/")
    }
    fn grants(&self) -> &Grants {
        &self.0
    }
    async fn check(&self, _c: &Capability) -> Decision {
        Decision::deny("test", "no host in this test")
    }
    async fn read(&self, _r: ReadRequest) -> Result<FileContent, HostError> {
        Err(HostError::Unsupported("read"))
    }
    async fn write(&self, _r: WriteRequest) -> Result<WriteReport, HostError> {
        Err(HostError::Unsupported("write"))
    }
    async fn list(&self, _r: ListRequest) -> Result<Vec<DirEntry>, HostError> {
        Err(HostError::Unsupported("list"))
    }
    async fn search(&self, _r: SearchRequest) -> Result<Vec<SearchHit>, HostError> {
        Err(HostError::Unsupported("search"))
    }
    async fn exec(&self, _r: ExecRequest) -> Result<ExecOutput, HostError> {
        Err(HostError::Unsupported("exec"))
    }
    async fn http(&self, _r: HttpRequest) -> Result<HttpResponse, HostError> {
        Err(HostError::Unsupported("http"))
    }
}
