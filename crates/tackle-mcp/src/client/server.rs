//! One configured server: its connection, its current tools, and the task that keeps it up.

use super::relay::{Pick, Relays};
use super::tool::McpTool;
use super::{McpOptions, ServerState, ServerStatus, ToolPinStatus};
use crate::content::RemoteTool;
use crate::elicit::{ElicitAnswer, ElicitError, ElicitRequest, ElicitationHandler};
use crate::naming;
use crate::pinning::{self, PinError, PinSet, PinState, PinnedBy, Trusted};
use crate::sampling::{SampleAnswer, SampleError, SampleRequest, SamplingHandler};
use crate::wire::client::{self, Connection, Elicitor, SamplingOff, StdioSpec};
use crate::wire::WireError;
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tackle_protocol::config::{McpSampling, McpServerConfig};
use tackle_protocol::FormReply;
use tokio::sync::{watch, Notify};
use tokio_util::sync::CancellationToken;

/// A server that stayed up this long has its restart backoff reset.
const STABLE_AFTER: Duration = Duration::from_secs(30);

/// How often the pins are read again while one of the server's tools is quarantined.
const PIN_RECHECK: Duration = Duration::from_secs(2);

/// After a call times out, the server gets this long to answer a ping before it is restarted.
const PING_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a listed tool may not be called now.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AdmitError {
    #[error("MCP server `{server}` no longer offers tool `{tool}`")]
    NotOffered { server: String, tool: String },
    #[error("tool `{tool}` of MCP server `{server}` could not be pinned before its first use, so it was not called: {source}")]
    NotPinned {
        server: String,
        tool: String,
        source: PinError,
    },
    /// The tool is quarantined; holds the message that says why and how to accept it, the
    /// same one its warning and `tackle mcp pins` show.
    #[error("{0}")]
    Quarantined(String),
}

pub(crate) struct Server {
    pub name: String,
    pub prefix: String,
    config: McpServerConfig,
    pub options: Arc<McpOptions>,
    inner: Mutex<Inner>,
    /// Bumped on every state change, for `wait_settled`.
    changed: watch::Sender<u64>,
    last_stderr: Arc<Mutex<String>>,
    /// A call timed out: the supervisor checks whether the server still answers.
    suspect: Notify,
    /// Its elicitations: time a person spends on a form is not the call's run time.
    elicitations: Arc<ElicitActivity>,
    /// Its tools' pins as last read (`Err`: why they could not be read).
    pins: Mutex<Result<PinSet, PinError>>,
    /// The front ends of its calls in flight, where its forms are passed on.
    pub relays: Arc<Relays>,
}

/// Elicitations of one server: how many are open, and a counter bumped as each opens and
/// closes.
#[derive(Default)]
pub(crate) struct ElicitActivity {
    open: AtomicUsize,
    changes: AtomicU64,
}

impl ElicitActivity {
    /// `(open, changes)`, to compare across a call's time-out window.
    pub fn marker(&self) -> (usize, u64) {
        (
            self.open.load(Ordering::SeqCst),
            self.changes.load(Ordering::SeqCst),
        )
    }
}

/// The front end's handler, counted in [`ElicitActivity`] while it asks; with `relay`, a form
/// goes first to the front end of the call in flight (see [`Relays`]).
struct Tracked {
    inner: Arc<dyn ElicitationHandler>,
    activity: Arc<ElicitActivity>,
    relays: Arc<Relays>,
    relay: bool,
}

/// Closes the count however the ask ends (answered or dropped).
struct OpenElicitation<'a>(&'a ElicitActivity);

impl Drop for OpenElicitation<'_> {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::SeqCst);
        self.0.changes.fetch_add(1, Ordering::SeqCst);
    }
}

#[async_trait]
impl ElicitationHandler for Tracked {
    fn can_ask(&self) -> bool {
        self.relay || self.inner.can_ask()
    }

    async fn elicit(
        &self,
        server: &str,
        request: ElicitRequest,
    ) -> Result<ElicitAnswer, ElicitError> {
        self.activity.open.fetch_add(1, Ordering::SeqCst);
        self.activity.changes.fetch_add(1, Ordering::SeqCst);
        let _open = OpenElicitation(&self.activity);
        let pick = if self.relay {
            self.relays.pick()
        } else {
            Pick::Nobody
        };
        match pick {
            Pick::One(asker) => {
                let reply = asker
                    .ask_form(server, &request.message, &request.schema)
                    .await
                    .map_err(|e| ElicitError::Unavailable(e.0))?;
                Ok(match reply {
                    FormReply::Accept(content) => ElicitAnswer::Accept(content),
                    FormReply::Decline => ElicitAnswer::Decline,
                    FormReply::Cancel => ElicitAnswer::Cancel,
                })
            }
            Pick::Ambiguous => Err(ElicitError::Unavailable(
                "calls from more than one client are in flight on this server: whose form it \
                 is cannot be told"
                    .into(),
            )),
            Pick::Nobody if self.inner.can_ask() => self.inner.elicit(server, request).await,
            Pick::Nobody => Err(ElicitError::Unavailable(
                "the call's client cannot be asked".into(),
            )),
        }
    }
}

/// The front end's sampler, counted like an elicitation while it asks (the call's time-out
/// waits for the person).
struct TrackedSampler {
    inner: Arc<dyn SamplingHandler>,
    activity: Arc<ElicitActivity>,
}

#[async_trait]
impl SamplingHandler for TrackedSampler {
    fn can_ask(&self) -> bool {
        self.inner.can_ask()
    }

    async fn sample(
        &self,
        server: &str,
        request: SampleRequest,
    ) -> Result<SampleAnswer, SampleError> {
        self.activity.open.fetch_add(1, Ordering::SeqCst);
        self.activity.changes.fetch_add(1, Ordering::SeqCst);
        let _open = OpenElicitation(&self.activity);
        self.inner.sample(server, request).await
    }
}

struct Inner {
    state: ServerState,
    tools: Vec<Arc<McpTool>>,
    conn: Option<Arc<Connection>>,
}

impl Server {
    /// The operator believes this server's tool annotations (`trust_annotations`).
    pub fn trusts_annotations(&self) -> bool {
        self.config.trust_annotations
    }

    /// `trust_results`: this server's answers do not taint the session.
    pub fn trusts_results(&self) -> bool {
        self.config.trust_results
    }

    pub fn new(name: String, config: McpServerConfig, options: Arc<McpOptions>) -> Arc<Self> {
        Arc::new(Self {
            prefix: naming::server_prefix(&name),
            name,
            config,
            options,
            inner: Mutex::new(Inner {
                state: ServerState::Starting,
                tools: Vec::new(),
                conn: None,
            }),
            changed: watch::channel(0).0,
            last_stderr: Arc::new(Mutex::new(String::new())),
            suspect: Notify::new(),
            elicitations: Arc::default(),
            relays: Arc::default(),
            pins: Mutex::new(Ok(PinSet::default())),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn state(&self) -> ServerState {
        self.lock().state.clone()
    }

    /// The tools offered: every listed tool but the quarantined.
    pub fn tools(&self) -> Vec<Arc<McpTool>> {
        let mut tools = self.all_tools();
        tools.retain(|t| !self.pin_state(t).quarantined());
        tools
    }

    /// Every listed tool, quarantined or not.
    pub fn all_tools(&self) -> Vec<Arc<McpTool>> {
        self.lock().tools.clone()
    }

    /// Where `tool` stands against the pins as last read.
    pub fn pin_state(&self, tool: &McpTool) -> PinState {
        if self.options.pins.is_none() {
            return PinState::Off;
        }
        let pins = self.pins.lock().unwrap_or_else(|e| e.into_inner());
        pinning::state(&tool.remote_name, &tool.definition, &tool.digest, &pins)
    }

    /// Why the tool registered as `registry_name` cannot be called, when it is quarantined.
    pub fn quarantined(&self, registry_name: &str) -> Option<String> {
        let tool = self
            .all_tools()
            .into_iter()
            .find(|t| t.registry_name() == registry_name)?;
        let state = self.pin_state(&tool);
        state
            .quarantined()
            .then(|| self.quarantine_message(&tool, &state))
    }

    fn quarantine_message(&self, tool: &McpTool, state: &PinState) -> String {
        pinning::quarantine_message(
            &self.name,
            &tool.remote_name,
            state,
            &tool.definition.to_string(),
        )
    }

    /// Reads the pins again (another process may have trusted a tool meanwhile).
    pub async fn reload_pins(&self) {
        let Some(store) = &self.options.pins else {
            return;
        };
        let read = store.pins(&self.name).await.map(PinSet::new);
        *self.pins.lock().unwrap_or_else(|e| e.into_inner()) = read;
        self.changed.send_modify(|g| *g += 1);
    }

    /// Whether any listed tool is quarantined now.
    fn has_quarantined(&self) -> bool {
        self.all_tools()
            .iter()
            .any(|t| self.pin_state(t).quarantined())
    }

    /// Whether the tool the server lists as `remote_name` may be called now; the first call
    /// pins it. `Err`: why not, for the call's error.
    pub async fn admit(&self, remote_name: &str) -> Result<(), AdmitError> {
        let Some(store) = &self.options.pins else {
            return Ok(());
        };
        self.reload_pins().await;
        let tool = self
            .all_tools()
            .into_iter()
            .find(|t| t.remote_name == remote_name)
            .ok_or_else(|| AdmitError::NotOffered {
                server: self.name.clone(),
                tool: remote_name.to_string(),
            })?;
        match self.pin_state(&tool) {
            PinState::Pinned | PinState::Off => Ok(()),
            PinState::Unpinned => {
                let pin = tool.pin();
                let kept =
                    store
                        .pin_if_absent(&self.name, pin.clone())
                        .await
                        .map_err(|source| AdmitError::NotPinned {
                            server: self.name.clone(),
                            tool: remote_name.to_string(),
                            source,
                        })?;
                self.reload_pins().await;
                if kept.digest == pin.digest {
                    tracing::info!(server = %self.name, tool = %remote_name, digest = %pin.digest, "MCP tool pinned at its first use");
                    return Ok(());
                }
                // Pinned meanwhile (another process) with another definition.
                Err(AdmitError::Quarantined(self.quarantine_message(
                    &tool,
                    &PinState::Changed { pinned: kept },
                )))
            }
            state => Err(AdmitError::Quarantined(
                self.quarantine_message(&tool, &state),
            )),
        }
    }

    /// Each listed tool, where it stands and what was cleaned from it, pins read afresh.
    pub async fn pin_report(&self) -> Vec<ToolPinStatus> {
        self.reload_pins().await;
        self.all_tools()
            .iter()
            .map(|t| {
                let state = self.pin_state(t);
                ToolPinStatus {
                    server: self.name.clone(),
                    tool: t.remote_name.clone(),
                    registry_name: t.registry_name().to_string(),
                    message: state
                        .quarantined()
                        .then(|| self.quarantine_message(t, &state)),
                    state,
                    digest: t.digest.clone(),
                    definition: t.definition.to_string(),
                    removed: t.removed.to_string(),
                }
            })
            .collect()
    }

    /// Pins the definition `tool` is offered with now, for the operator, when it is the one
    /// they reviewed (`expected`, its digest; `None`: whatever is offered).
    pub async fn trust(
        &self,
        tool: &str,
        expected: Option<&str>,
        by: PinnedBy,
    ) -> Result<Trusted, PinError> {
        let Some(store) = &self.options.pins else {
            return Err(PinError("pinning is off in this process".into()));
        };
        let Some(offered) = self.all_tools().into_iter().find(|t| t.remote_name == tool) else {
            return Ok(Trusted::NotOffered);
        };
        // The digest compared is the one pinned: what is pinned is exactly what was reviewed.
        if expected.is_some_and(|d| d != offered.digest) {
            return Ok(Trusted::Differs(offered.digest.clone()));
        }
        store.replace(&self.name, offered.pin(), by).await?;
        self.reload_pins().await;
        Ok(Trusted::Pinned(offered.digest.clone()))
    }

    /// Log, once per listing, the tools quarantined and the descriptions cleaned.
    fn announce(&self) {
        for tool in self.all_tools() {
            let state = self.pin_state(&tool);
            if state.quarantined() {
                tracing::warn!(server = %self.name, "{}", self.quarantine_message(&tool, &state));
            }
            if !tool.removed.is_empty() {
                tracing::warn!(
                    server = %self.name,
                    "removed hidden characters from the description of MCP tool `{}`: {}",
                    tool.remote_name,
                    tool.removed
                );
            }
        }
    }

    pub fn connection(&self) -> Option<Arc<Connection>> {
        self.lock().conn.clone()
    }

    pub fn status(&self) -> ServerStatus {
        let inner = self.lock();
        ServerStatus {
            name: self.name.clone(),
            state: inner.state.clone(),
            tools: inner
                .tools
                .iter()
                .map(|t| t.registry_name().to_string())
                .collect(),
        }
    }

    pub fn call_timeout(&self) -> Duration {
        self.config
            .call_timeout_secs
            .map(Duration::from_secs)
            .unwrap_or(self.options.call_timeout)
    }

    /// Can this server's elicitations be put to someone?
    pub fn can_elicit(&self) -> bool {
        self.options.elicitation.can_ask()
    }

    /// See [`ElicitActivity::marker`].
    pub fn elicitation_marker(&self) -> (usize, u64) {
        self.elicitations.marker()
    }

    fn elicitor(&self) -> Elicitor {
        let sampling = &self.options.sampling;
        let sampler = match self.config.sampling {
            McpSampling::Deny => Err(SamplingOff::Denied {
                server: self.name.clone(),
            }),
            McpSampling::Ask if !sampling.can_ask() => Err(SamplingOff::NobodyToAsk),
            McpSampling::Ask => Ok(Arc::new(TrackedSampler {
                inner: sampling.clone(),
                activity: self.elicitations.clone(),
            }) as Arc<dyn SamplingHandler>),
        };
        Elicitor {
            server: self.name.clone(),
            handler: Arc::new(Tracked {
                inner: self.options.elicitation.clone(),
                activity: self.elicitations.clone(),
                relays: self.relays.clone(),
                relay: self.options.relay_forms,
            }),
            sampler,
        }
    }

    fn startup_timeout(&self) -> Duration {
        self.config
            .startup_timeout_secs
            .map(Duration::from_secs)
            .unwrap_or(self.options.startup_timeout)
    }

    /// `"; last stderr: …"` when the child said something, for error messages.
    pub fn stderr_note(&self) -> String {
        let tail = self
            .last_stderr
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if tail.is_empty() {
            String::new()
        } else {
            format!(" (last stderr: {tail})")
        }
    }

    fn set(
        &self,
        state: ServerState,
        conn: Option<Arc<Connection>>,
        tools: Option<Vec<Arc<McpTool>>>,
    ) {
        {
            let mut inner = self.lock();
            inner.state = state;
            inner.conn = conn;
            if let Some(tools) = tools {
                inner.tools = tools;
            }
        }
        self.changed.send_modify(|g| *g += 1);
    }

    fn set_tools(&self, tools: Vec<Arc<McpTool>>) {
        self.lock().tools = tools;
        self.changed.send_modify(|g| *g += 1);
    }

    /// A call timed out; a hung server (or a lost HTTP session) is restarted.
    pub fn suspect_hung(&self) {
        self.suspect.notify_one();
    }

    pub async fn wait_settled(&self) {
        let mut rx = self.changed.subscribe();
        while self.state() == ServerState::Starting {
            if rx.changed().await.is_err() {
                return;
            }
        }
    }

    pub async fn close(&self) {
        let conn = self.lock().conn.take();
        if let Some(conn) = conn {
            conn.close().await;
        }
    }

    async fn connect(&self) -> Result<Connection, WireError> {
        let c = &self.config;
        match (&c.url, &c.command) {
            (Some(url), None) => {
                // OAuth where it is configured or a login stored a token.
                let token_file = self
                    .options
                    .token_dir
                    .as_deref()
                    .map(|dir| crate::wire::client::auth::token_path(dir, &self.name))
                    .filter(|f| c.oauth.is_some() || crate::wire::client::auth::has_token(f));
                client::connect_http(
                    url,
                    &c.headers,
                    token_file.as_deref(),
                    self.elicitor(),
                    &self.options.roots,
                )
                .await
            }
            (None, Some(command)) => {
                let env: Vec<(String, String)> = c
                    .env
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_string()))
                    .collect();
                let spec = StdioSpec {
                    server: &self.name,
                    command,
                    args: &c.args,
                    env: &env,
                    cwd: c.cwd.as_deref().map(Path::new),
                };
                client::connect_stdio(
                    &spec,
                    self.last_stderr.clone(),
                    self.elicitor(),
                    &self.options.roots,
                )
                .await
            }
            _ => Err(WireError::Config(format!(
                "mcp_servers.{} needs exactly one of `command` (stdio) or `url` (Streamable HTTP)",
                self.name
            ))),
        }
    }

    /// Tools for a fresh listing; a name that maps onto one already taken is refused, never
    /// overwritten.
    fn build_tools(self: &Arc<Self>, remote: Vec<RemoteTool>) -> Vec<Arc<McpTool>> {
        let mut taken: BTreeMap<String, String> = BTreeMap::new();
        let mut out = Vec::new();
        for tool in remote {
            let name = naming::registry_name(&self.name, &tool.name);
            if let Some(first) = taken.get(&name) {
                tracing::warn!(
                    server = %self.name,
                    "MCP tool `{}` maps to `{name}`, already taken by `{first}`; it is not registered",
                    tool.name
                );
                continue;
            }
            taken.insert(name.clone(), tool.name.clone());
            out.push(Arc::new(McpTool::new(Arc::downgrade(self), name, tool)));
        }
        out
    }
}

/// Keep `server` connected until `stop`: start, list, follow `list_changed`, restart on exit.
pub(crate) async fn supervise(server: Arc<Server>, stop: CancellationToken) {
    let mut failures: u32 = 0;
    loop {
        server.set(ServerState::Starting, None, None);
        let startup = server.startup_timeout();
        let attempt = tokio::time::timeout(startup, start(&server));
        let outcome = tokio::select! {
            r = attempt => r,
            _ = stop.cancelled() => return,
        };
        let why = match outcome {
            Ok(Ok(conn)) => {
                let up_since = Instant::now();
                let Some(why) = stay_connected(&server, &conn, &stop).await else {
                    conn.close().await;
                    return;
                };
                if up_since.elapsed() > STABLE_AFTER {
                    failures = 0;
                }
                why
            }
            // Waiting for a login: said as it is, no stderr or retry note (it is still
            // retried, so a login made meanwhile is picked up).
            Ok(Err(e)) if client::is_needs_login(&e) => {
                let why = e.to_string();
                if failures == 0 {
                    tracing::warn!(server = %server.name, "MCP server {why}");
                }
                failures = failures.saturating_add(1);
                server.set(ServerState::Failed(why), None, Some(Vec::new()));
                tokio::select! {
                    _ = tokio::time::sleep(backoff(&server.options, failures)) => {}
                    _ = stop.cancelled() => return,
                }
                continue;
            }
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!(
                "did not start and list its tools within {}s (startup_timeout_secs)",
                startup.as_secs()
            ),
        };
        let delay = backoff(&server.options, failures);
        let first = failures == 0;
        failures = failures.saturating_add(1);
        let why = format!(
            "{why}{}; retrying in {:.1}s",
            server.stderr_note(),
            delay.as_secs_f32()
        );
        // One warning per server per outage; each retry after it is a debug line (`-v`), so
        // a server that stays down does not fill the terminal. `mcp list` shows the latest.
        if first {
            tracing::warn!(server = %server.name, "MCP server failed: {why}");
        } else {
            tracing::debug!(server = %server.name, "MCP server failed again: {why}");
        }
        server.set(ServerState::Failed(why), None, Some(Vec::new()));
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = stop.cancelled() => return,
        }
    }
}

async fn start(server: &Arc<Server>) -> Result<Arc<Connection>, WireError> {
    let conn = Arc::new(server.connect().await?);
    let tools = conn.list_tools().await?;
    let tools = server.build_tools(tools);
    server.reload_pins().await;
    tracing::info!(server = %server.name, tools = tools.len(), "MCP server ready");
    server.set(ServerState::Ready, Some(conn.clone()), Some(tools));
    server.announce();
    Ok(conn)
}

/// Follow `tools/list_changed` until the connection ends (`Some(why)`) or `stop` (`None`).
async fn stay_connected(
    server: &Arc<Server>,
    conn: &Arc<Connection>,
    stop: &CancellationToken,
) -> Option<String> {
    loop {
        tokio::select! {
            _ = conn.tools_changed.notified() => refresh(server, conn).await,
            _ = server.suspect.notified() => {
                if !conn.ping(PING_TIMEOUT).await {
                    return Some(format!(
                        "a call timed out and the server did not answer a ping within {}s",
                        PING_TIMEOUT.as_secs()
                    ));
                }
            }
            _ = conn.closed() => return Some("the server exited or closed the connection".to_string()),
            // While a tool is quarantined, an operator may accept it from another process.
            _ = tokio::time::sleep(PIN_RECHECK), if server.has_quarantined() => server.reload_pins().await,
            _ = stop.cancelled() => return None,
        }
    }
}

async fn refresh(server: &Arc<Server>, conn: &Connection) {
    match tokio::time::timeout(server.startup_timeout(), conn.list_tools()).await {
        Ok(Ok(tools)) => {
            let tools = server.build_tools(tools);
            server.reload_pins().await;
            tracing::info!(server = %server.name, tools = tools.len(), "MCP tools changed");
            server.set_tools(tools);
            server.announce();
        }
        Ok(Err(e)) => tracing::warn!(server = %server.name, "re-listing tools failed: {e}"),
        Err(_) => tracing::warn!(server = %server.name, "re-listing tools timed out"),
    }
}

fn backoff(options: &McpOptions, failures: u32) -> Duration {
    let factor = 2u32.saturating_pow(failures.min(16));
    options
        .initial_backoff
        .saturating_mul(factor)
        .min(options.max_backoff)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote(name: &str) -> RemoteTool {
        serde_json::from_value(serde_json::json!({"name": name})).unwrap()
    }

    #[test]
    fn a_name_collision_keeps_the_first_tool_and_refuses_the_second() {
        let server = Server::new("srv".into(), McpServerConfig::default(), Arc::default());
        let tools = server.build_tools(vec![remote("a.b"), remote("a_b"), remote("c")]);
        let names: Vec<&str> = tools.iter().map(|t| t.registry_name()).collect();
        assert_eq!(names, ["srv__a_b", "srv__c"]);
        assert_eq!(
            tackle_protocol::Tool::spec(tools[0].as_ref()).description,
            "a.b"
        );
    }

    #[test]
    fn backoff_doubles_from_the_initial_delay_up_to_the_cap() {
        let options = McpOptions::default();
        let delays: Vec<u64> = (0..8)
            .map(|n| backoff(&options, n).as_millis() as u64)
            .collect();
        assert_eq!(delays, [500, 1000, 2000, 4000, 8000, 16000, 30000, 30000]);
        assert_eq!(backoff(&options, u32::MAX), Duration::from_secs(30));
    }
}
