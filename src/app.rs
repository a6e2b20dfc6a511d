//! Wiring: config → extensions → registry → host → dispatcher. Every command that runs tools
//! builds one [`App`] and goes through its dispatcher.

use crate::cli::Global;
use crate::config::{self, Loaded};
use crate::exit::usage;
use anyhow::Result;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tackle_agent::{Dispatcher, DispatcherConfig, Registry, Sanitizer};
use tackle_protocol::config::{AgentConfig, Config};
use tackle_protocol::{AgentServices, Extension, HostProvider};
use tackle_store::Store;

pub struct App {
    pub config_source: Option<PathBuf>,
    pub workspace: PathBuf,
    pub state_dir: PathBuf,
    pub dispatcher: Arc<Dispatcher>,
    /// The configured MCP servers, starting in the background.
    pub mcp: Option<Arc<tackle_mcp::McpManager>>,
    /// The names under `mcp_servers:`, started or not.
    pub mcp_configured: Vec<String>,
    pub mcp_bearer_token: Option<String>,
    /// Sessions, memory and the audit log.
    pub store: Store,
    /// What the selected agent's model is shown of each tool (`agents[].tool_profile`).
    pub tool_profile: tackle_agent::ToolProfile,
    /// The tools `mcp serve` offers (`mcp.serve_tools`).
    pub serve_tools: tackle_agent::profiles::ToolSelection,
    /// The plugin manifests found, with their load errors (`tackle plugins`, `tackle doctor`).
    pub plugins: Arc<tackle_tools::plugins::Plugins>,
    /// Reloads the plugins when their directories change (`Selection::watch_plugins`).
    _plugin_watch: Option<crate::plugin_watch::Watch>,
    /// Tells MCP servers when the directories listed as roots change.
    _roots_watch: Option<crate::fs_watch::FsWatch>,
}

/// Options that change which tools are registered.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub agent: Option<String>,
    /// `--template coder`: the opt-in coding tools.
    pub template: Option<String>,
    /// Start no MCP server (a listing that must not wait for any).
    pub without_mcp: bool,
    /// The front end is `tackle mcp serve`: configured servers' forms (elicitation) go to the
    /// MCP client whose call made them ask.
    pub serving_mcp: bool,
    /// Report plugin problems to the caller instead of logging them (`tackle plugins`).
    pub plugins_reported: bool,
    /// Reload plugins when a plugin directory changes (long-running front ends).
    pub watch_plugins: bool,
    /// The front end only lists or reports and runs no command, so the sandbox is not probed
    /// ahead of time (`tools list`, `tools describe`, `plugins`).
    pub lists_only: bool,
    /// `--backend` / `--model` (`run`, `chat`): override the agent's backend and model.
    pub llm: crate::runtime::LlmChoice,
}

fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Warnings this process has printed: the daemon and the gateway re-read the config for each
/// fire and each agent, and a note repeated at every read buries the rest of the log.
static WARNED: std::sync::Mutex<std::collections::BTreeSet<String>> =
    std::sync::Mutex::new(std::collections::BTreeSet::new());

/// Load the configuration the global flags point at, printing each warning once per process.
pub fn load_config(global: &Global) -> Result<Loaded> {
    let vars: Vec<(String, String)> = std::env::vars().collect();
    let loaded = config::load(
        global.config.as_deref(),
        global.workspace.as_deref(),
        &env_var,
        &vars,
    )?;
    let mut warned = WARNED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    for w in &loaded.warnings {
        if warned.insert(w.clone()) {
            tracing::warn!("{w}");
        }
    }
    Ok(loaded)
}

/// What every front end starts from: the config loaded (its warnings printed once), the state
/// store open and the agent chosen. [`AppBuilder::app`] builds the tools for a front end
/// without a model (`tools`, `mcp serve`, `doctor`); `AppBuilder::runtime` (in `runtime.rs`)
/// adds the model, the tree of agents and the loop (`run`, `chat`, the daemon's turns). Both
/// end in [`AppBuilder::build`], the one place tools, host and dispatcher are put together.
pub struct AppBuilder<'a> {
    pub global: &'a Global,
    pub selection: &'a Selection,
    pub loaded: Loaded,
    pub store: Store,
    /// The agent `--agent` names, else the config's default one (none configured: `None`).
    pub agent: Option<AgentConfig>,
}

impl<'a> AppBuilder<'a> {
    /// Load the config the global flags point at and open its store.
    pub fn new(global: &'a Global, selection: &'a Selection) -> Result<Self> {
        let loaded = load_config(global)?;
        let store = open_store(&loaded.config)?;
        Self::with_loaded(global, selection, loaded, store)
    }

    /// From a config already loaded and its store (`doctor` reports a store that failed and
    /// goes on with a throw-away one). Fails when `--agent` names no configured agent.
    pub fn with_loaded(
        global: &'a Global,
        selection: &'a Selection,
        loaded: Loaded,
        store: Store,
    ) -> Result<Self> {
        let agent = match &selection.agent {
            Some(name) => Some(
                loaded
                    .config
                    .agent(Some(name))
                    .cloned()
                    .ok_or_else(|| crate::exit::unknown_agent(&loaded.config, name))?,
            ),
            None => loaded.config.agent(None).cloned(),
        };
        Ok(Self {
            global,
            selection,
            loaded,
            store,
            agent,
        })
    }

    /// The app of a front end with no agent running: the agent tools (`compact`, `spawn_*` …)
    /// are listed but answer that they work only inside a conversation.
    pub fn app(self) -> Result<App> {
        self.build(None)
    }

    /// Tools, host and dispatcher; `agents` serves the agent tools (`compact`, …).
    pub fn build(self, agents: Option<Arc<dyn AgentServices>>) -> Result<App> {
        let Self {
            global,
            selection,
            loaded,
            store,
            agent,
        } = self;
        let Loaded {
            config,
            source,
            secrets,
            ..
        } = loaded;
        // MCP servers start below and log as they go: their lines are redacted from now on.
        crate::log_redact::install(redactor(&secrets, Vec::new()));
        let workspace =
            resolve_workspace(global.workspace.as_deref(), config.workspace.as_deref())?;
        // `$HOME` when absolute, else the password database's: never the current directory.
        let home = config::home::home();
        let state_dir = resolve_state_dir(config.state_dir.as_deref(), home.as_deref());
        let tool_profile = crate::profiles::for_agent(&config, agent.as_ref())?;
        let serve_tools =
            tackle_agent::profiles::ToolSelection::compile(config.mcp.serve_tools.as_deref())?;
        let coding_tools =
            config.tools.coding_tools || selection.template.as_deref() == Some("coder");
        let mcp_configured: Vec<String> = config.mcp_servers.keys().cloned().collect();
        let (mcp, roots_watch) = if selection.without_mcp {
            (None, None)
        } else {
            start_mcp(
                &config,
                &state_dir,
                &workspace,
                agent.as_ref(),
                home.as_deref(),
                selection.serving_mcp,
                &store,
            )
        };
        let services = crate::services::settings(&config.services, home.as_deref());
        let inputs = crate::extensions::Inputs {
            config: &config,
            workspace: &workspace,
            home: home.as_deref(),
            store: &store,
            coding_tools,
            services: &services,
        };
        let mut extensions = crate::extensions::build(&inputs, agent.as_ref())?;
        let extension_secrets = crate::extensions::secrets(&inputs);
        let plugins = load_plugins(
            &config,
            &workspace,
            home.as_deref(),
            &extensions,
            &mcp_configured,
            !selection.plugins_reported,
        );
        if crate::extensions::enabled(agent.as_ref(), tackle_tools::plugins::NAME) {
            extensions.push(plugins.clone());
        }
        let plugin_watch = selection
            .watch_plugins
            .then(|| crate::plugin_watch::watch(plugins.clone()))
            .flatten();
        if agents.is_none() && !selection.lists_only {
            // A front end without an agent (`tools call`, `mcp serve`) offers only what it can
            // run; a listing (`tools list`, `tools describe`) shows what the model is offered,
            // marking the agent tools (`ToolSpec::conversation_only`).
            extensions = extensions.into_iter().map(without_agent_tools).collect();
        }
        if let Some(manager) = &mcp {
            extensions.extend(
                manager
                    .extensions()
                    .into_iter()
                    .filter(|ext| crate::extensions::enabled(agent.as_ref(), ext.name())),
            );
        }
        let registry =
            Arc::new(Registry::new(extensions).map_err(|e| anyhow::anyhow!("tool registry: {e}"))?);
        if !selection.lists_only {
            // The probe runs while the model thinks about its first reply.
            tackle_host::warm_up_sandbox();
        }
        // Made (or read back) before any command can run, so every command gets the decoys.
        let honeytokens = honeytokens(&config, &state_dir)?;
        let host = host_provider(
            &config,
            &state_dir,
            home,
            source.as_deref(),
            services.operator_urls(),
            honeytokens.as_deref(),
        );
        let redact = redactor(&secrets, extra_secrets(&config, extension_secrets));
        crate::log_redact::install(redact.clone());
        let sanitizer = Sanitizer::new(config.tools.output_limit_bytes).with_redactor(redact);
        let security = config.security.clone();
        let mut dispatcher = Dispatcher::new(
            registry,
            host,
            DispatcherConfig {
                workspace: workspace.clone(),
                security,
                agent: agent
                    .as_ref()
                    .map(|a| a.name.clone())
                    .unwrap_or_else(|| "default".into()),
                agent_grants: agent.as_ref().map(|a| a.grants.clone()),
                default_timeout: Duration::from_secs(config.tools.timeout_secs),
                sanitizer,
            },
        );
        dispatcher = dispatcher.with_audit(Arc::new(store.clone()));
        if let Some(h) = honeytokens {
            dispatcher = dispatcher.with_honeytokens(h);
        }
        if let Some(agents) = agents {
            dispatcher = dispatcher.with_agents(agents);
        }
        Ok(App {
            config_source: source,
            workspace,
            state_dir,
            dispatcher: Arc::new(dispatcher),
            mcp,
            mcp_configured,
            mcp_bearer_token: config
                .mcp
                .bearer_token
                .as_deref()
                .filter(|t| !t.is_empty())
                .map(str::to_string),
            store,
            tool_profile,
            serve_tools,
            plugins,
            _plugin_watch: plugin_watch,
            _roots_watch: roots_watch,
        })
    }
}

impl App {
    /// The app of a front end with no agent running ([`AppBuilder::app`]).
    pub fn build(global: &Global, selection: &Selection) -> Result<Self> {
        AppBuilder::new(global, selection)?.app()
    }

    /// Wait (up to each server's start-up timeout) until every MCP server is ready or failed,
    /// then pick up their tools.
    pub async fn settle_mcp(&self) {
        if let Some(mcp) = &self.mcp {
            mcp.wait_settled(Duration::from_secs(60)).await;
            self.dispatcher.registry().refresh();
        }
    }

    /// Before one call: a tool already in the registry (every built-in) waits for nothing; an
    /// MCP tool waits only for its own server (up to its start-up timeout), so a server that
    /// never starts delays only calls to its own tools.
    pub async fn settle_mcp_for(&self, tool: &str) {
        if self.dispatcher.registry().get(tool).is_some() {
            return;
        }
        if let Some(mcp) = &self.mcp {
            mcp.wait_settled_for(tool, Duration::from_secs(60)).await;
            self.dispatcher.registry().refresh();
        }
    }

    /// Stop MCP servers quietly before the process exits.
    pub async fn shutdown(&self) {
        if let Some(mcp) = &self.mcp {
            mcp.shutdown().await;
        }
        self.dispatcher.end_sessions();
        // The audit records this process added are signed now, not at the next open
        // (docs/decisions/0032-tamper-evident-audit.md).
        if let Err(e) = self.store.seal_audit().await {
            tracing::warn!("could not sign the end of the audit log: {e}");
        }
    }

    /// The state directory the config asks for (or the XDG default).
    pub fn state_dir_for(config: &Config) -> PathBuf {
        resolve_state_dir(config.state_dir.as_deref(), config::home::home().as_deref())
    }
}

/// Every plugin, its problems reported once at start-up: a bad plugin is skipped, never fatal.
fn load_plugins(
    config: &Config,
    workspace: &Path,
    home: Option<&Path>,
    builtins: &[Arc<dyn Extension>],
    mcp: &[String],
    log: bool,
) -> Arc<tackle_tools::plugins::Plugins> {
    let reserved = builtins
        .iter()
        .flat_map(|e| e.tools())
        .map(|t| t.spec().name)
        .collect();
    let plugins = crate::plugins::load(&config.plugins, workspace, home, reserved, mcp);
    if log {
        crate::plugins::log(&plugins.report());
    }
    plugins
}

/// `ext` without the tools its specs mark `conversation_only` (they ask a running agent through
/// [`AgentServices`]); calling one by name says where it works instead.
fn without_agent_tools(ext: Arc<dyn Extension>) -> Arc<dyn Extension> {
    let agent_tools: Vec<String> = ext
        .tools()
        .iter()
        .map(|t| t.spec())
        .filter(|s| s.conversation_only)
        .map(|s| s.name)
        .collect();
    if agent_tools.is_empty() {
        ext
    } else {
        Arc::new(WithoutAgentTools { ext, agent_tools })
    }
}

struct WithoutAgentTools {
    ext: Arc<dyn Extension>,
    agent_tools: Vec<String>,
}

impl Extension for WithoutAgentTools {
    fn name(&self) -> &str {
        self.ext.name()
    }

    fn tools(&self) -> Vec<Arc<dyn tackle_protocol::Tool>> {
        self.ext
            .tools()
            .into_iter()
            .filter(|t| !t.spec().conversation_only)
            .collect()
    }

    fn unavailable(&self, tool: &str) -> Option<String> {
        if self.agent_tools.iter().any(|t| t == tool) {
            return Some(format!(
                "`{tool}` works only inside an agent's conversation (`tackle run`, `tackle chat`)"
            ));
        }
        self.ext.unavailable(tool)
    }
}

/// The state store; without it no decision could be audited, so it is required. The state
/// daemons share lives in the database `state_url` names when it is PostgreSQL
/// (docs/scale-out.md).
pub fn open_store(config: &Config) -> Result<Store> {
    let state_dir = App::state_dir_for(config);
    let url = config
        .state_url
        .as_ref()
        .map(tackle_protocol::config::Secret::expose);
    Store::open_with_url(&state_dir, url).map_err(|e| match e {
        // A URL that names no engine (or no valid PostgreSQL address) is a config error.
        tackle_store::StoreError::StateUrl(_) => {
            crate::exit::usage(format!("cannot open the state store: {e}"))
        }
        e => anyhow::anyhow!("cannot open the state store: {e}"),
    })
}

/// The configured MCP servers alone (no registry, no dispatcher), started as every command
/// starts them, their pins in `store`: for a front end that only asks what they offer and
/// accepts a tool (the daemon's `/v1/mcp/tools`, as `tackle mcp pins` and `trust` do).
pub fn start_mcp_servers(
    global: &Global,
    config: &Config,
    store: &Store,
) -> Result<Option<Arc<tackle_mcp::McpManager>>> {
    let workspace = resolve_workspace(global.workspace.as_deref(), config.workspace.as_deref())?;
    let home = config::home::home();
    let state_dir = resolve_state_dir(config.state_dir.as_deref(), home.as_deref());
    let (mcp, _roots_watch) = start_mcp(
        config,
        &state_dir,
        &workspace,
        None,
        home.as_deref(),
        false,
        store,
    );
    Ok(mcp)
}

fn start_mcp(
    config: &Config,
    state_dir: &Path,
    workspace: &Path,
    agent: Option<&AgentConfig>,
    home: Option<&Path>,
    serving_mcp: bool,
    store: &Store,
) -> (
    Option<Arc<tackle_mcp::McpManager>>,
    Option<crate::fs_watch::FsWatch>,
) {
    if config.mcp_servers.is_empty() {
        return (None, None);
    }
    let (roots, roots_watch) = live_mcp_roots(workspace, agent, home, state_dir);
    let options = tackle_mcp::McpOptions {
        spill: Some(Arc::new(crate::spill::StateDirSpill {
            dir: state_dir.join("mcp-results"),
        })),
        // OAuth tokens (`tackle mcp login`) are kept in the state directory.
        token_dir: Some(state_dir.to_path_buf()),
        // Servers' questions go to the person at the terminal; without one they are declined.
        elicitation: crate::elicit::handler_for_cli(),
        // Under `mcp serve`, first to the calling client, when it supports elicitation.
        relay_forms: serving_mcp,
        // Servers allowed to sample (`sampling: ask`) are answered only after the person at
        // the terminal approves; without one every request is refused.
        sampling: crate::sampling::handler_for_cli(config, agent),
        // `roots/list`: only directories the agent's tools may read.
        roots,
        // Tools are pinned in the store; a changed one is quarantined (`tackle mcp trust`).
        pins: Some(Arc::new(crate::mcp_pins::StorePins(store.clone()))),
        ..Default::default()
    };
    let manager = tackle_mcp::McpManager::start(config.mcp_servers.clone(), options);
    (Some(Arc::new(manager)), roots_watch)
}

/// The MCP roots, kept up to date while the command runs: a granted directory that appears,
/// disappears or is replaced changes the list, and the servers are told.
fn live_mcp_roots(
    workspace: &Path,
    agent: Option<&AgentConfig>,
    home: Option<&Path>,
    state_dir: &Path,
) -> (tackle_mcp::Roots, Option<crate::fs_watch::FsWatch>) {
    use crate::fs_watch::{point_for, RecursiveMode};
    let grant = agent.and_then(|a| a.grants.fs.as_ref());
    let candidates = tackle_policy::path::roots(grant, workspace, home).read;
    let initial = mcp_roots(workspace, agent, home, state_dir);
    if candidates.is_empty() {
        return (tackle_mcp::Roots::fixed(initial), None);
    }
    let roots = tackle_mcp::Roots::changing(initial);
    // Each root's parent sees it created, removed, renamed or replaced by a link.
    let mut watched: Vec<PathBuf> = candidates.clone();
    watched.push(workspace.to_path_buf());
    let points = move || {
        watched
            .iter()
            .filter_map(|c| c.parent())
            .filter_map(|p| point_for(p, RecursiveMode::NonRecursive))
            .collect()
    };
    let (workspace, state_dir) = (workspace.to_path_buf(), state_dir.to_path_buf());
    let (agent, home) = (agent.cloned(), home.map(Path::to_path_buf));
    let live = roots.clone();
    let on_change = move || {
        let now = mcp_roots(&workspace, agent.as_ref(), home.as_deref(), &state_dir);
        if live.set(now) {
            tracing::debug!("MCP roots changed");
        }
    };
    match crate::fs_watch::watch("roots-watch", points, on_change) {
        Ok(watch) => (roots, Some(watch)),
        Err(e) => {
            tracing::warn!("MCP servers will not hear of changed roots: {e}");
            (roots, None)
        }
    }
}

/// The roots servers are told about: the directories the agent's fs grant lets tools read (the
/// workspace when it sets none), canonical and existing, minus Tackle's own state (hidden from
/// tools). The workspace comes first, named `workspace`, when it is inside a read root.
fn mcp_roots(
    workspace: &Path,
    agent: Option<&AgentConfig>,
    home: Option<&Path>,
    state_dir: &Path,
) -> Vec<(String, PathBuf)> {
    let grant = agent.and_then(|a| a.grants.fs.as_ref());
    let state = std::fs::canonicalize(state_dir).unwrap_or_else(|_| state_dir.to_path_buf());
    let read: Vec<PathBuf> = tackle_policy::path::roots(grant, workspace, home)
        .read
        .iter()
        .filter_map(|r| std::fs::canonicalize(r).ok())
        .filter(|r| r.is_dir() && !r.starts_with(&state))
        .collect();
    let mut out = Vec::new();
    if read.iter().any(|r| workspace.starts_with(r)) && !workspace.starts_with(&state) {
        out.push(("workspace".to_string(), workspace.to_path_buf()));
    }
    for root in read {
        if out.iter().any(|(_, p)| *p == root) {
            continue;
        }
        let name = root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| root.display().to_string());
        out.push((name, root));
    }
    out
}

fn host_provider(
    config: &Config,
    state_dir: &Path,
    home: Option<PathBuf>,
    config_file: Option<&Path>,
    // Operator destinations outside the config file (a service-account key's token URI).
    extra_operator_urls: Vec<String>,
    honeytokens: Option<&tackle_agent::honeytoken::Honeytokens>,
) -> Arc<dyn HostProvider> {
    // Commands never see Tackle's own config (API keys) or state (sessions, audit log).
    let mut host_config = tackle_host::HostConfig::new(state_dir)
        .with_home(home)
        .with_config(config)
        .hide(state_dir);
    host_config.operator_hosts.extend(extra_operator_urls);
    host_config.net_bridge = std::env::current_exe().ok();
    host_config.sandbox_init.clone_from(&host_config.net_bridge);
    if let Some(h) = honeytokens {
        host_config.decoy_env = h.decoys().env();
        host_config.decoy_home_files = h.decoys().home_files();
    }
    if let Some(file) = config_file {
        let file = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
        host_config = host_config.hide(file);
    }
    Arc::new(tackle_host::NativeHostProvider::new(host_config))
}

/// `security.honeytokens`: this state directory's decoys, made on first use. Asked for and not
/// to be had is an error, not a silent run without them.
fn honeytokens(
    config: &Config,
    state_dir: &Path,
) -> Result<Option<Arc<tackle_agent::honeytoken::Honeytokens>>> {
    if !config.security.honeytokens {
        return Ok(None);
    }
    tackle_agent::honeytoken::Honeytokens::load(state_dir)
        .map(|h| Some(Arc::new(h)))
        .map_err(|e| anyhow::anyhow!("security.honeytokens: {e}"))
}

/// Credentials Tackle holds or hands on outside the config file: the extensions' own (a
/// service-account key's private key, `$GITHUB_TOKEN`: each catalogue row's `secrets`), the
/// backend keys discovery reads (`$OPENAI_API_KEY`, …), and variables passed through to
/// commands under a credential's name (`security.env_passthrough`), which `printenv` shows.
fn extra_secrets(config: &Config, extensions: Vec<String>) -> Vec<String> {
    let mut out = extensions;
    // A backend key discovery may take from the environment (no `backends:` configured).
    out.extend(tackle_llm::EnvSnapshot::from_vars(std::env::vars()).keys());
    out.extend(tackle_protocol::env::inherited_credentials(
        std::env::vars_os(),
        &config.security.env_passthrough,
    ));
    out
}

/// The config's credentials (found by type, with the values interpolated into them: see
/// `config::secrets`) are redacted by exact match too, with `extra` ones found outside it (a
/// service-account key's private key).
fn redactor(
    secrets: &[tackle_protocol::config::Secret],
    extra: Vec<String>,
) -> tackle_agent::sanitizer::Redact {
    let mut all: Vec<String> = secrets.iter().map(|s| s.expose().to_string()).collect();
    all.extend(extra);
    all.retain(|s| !s.trim().is_empty());
    let redactor = Arc::new(tackle_policy::secrets::SecretRedactor::new(all));
    Arc::new(move |text: &str| redactor.redact(text))
}

fn resolve_workspace(flag: Option<&Path>, configured: Option<&str>) -> Result<PathBuf> {
    let raw = match (flag, configured) {
        (Some(p), _) => p.to_path_buf(),
        (None, Some(c)) => PathBuf::from(c),
        (None, None) => PathBuf::from("."),
    };
    let dir = std::fs::canonicalize(&raw).map_err(|e| {
        usage(format!(
            "workspace {} is not usable ({e}); pass --workspace DIR with an existing directory",
            raw.display()
        ))
    })?;
    if !dir.is_dir() {
        return Err(usage(format!(
            "workspace {} is not a directory; pass --workspace DIR with an existing directory",
            raw.display()
        )));
    }
    Ok(dir)
}

/// `state_dir` as configured (`~/…` in the home), else `$XDG_STATE_HOME/tackle` (absolute
/// only), else `<home>/.local/state/tackle`. Never relative to the current directory because
/// the home is missing: a derived state directory inside the current directory (HOME pointing
/// there) is replaced by the account's own, and with no home at all the store cannot open.
fn resolve_state_dir(configured: Option<&str>, home: Option<&Path>) -> PathBuf {
    use config::home as h;
    static WARNED: std::sync::Once = std::sync::Once::new();
    let warn = |msg: String| WARNED.call_once(|| tracing::warn!("state_dir: {msg}"));
    // No home anywhere: a path that cannot be created, so the store fails instead of landing
    // in the current directory.
    let nowhere = || PathBuf::from("/nonexistent/tackle-state-needs-a-home");
    let check = match configured {
        // `~/…` depends on HOME: checked like a derived directory below.
        Some(dir) if dir.starts_with('~') => match h::expand_tilde(dir, home) {
            Ok(path) => h::Derived {
                path,
                account_default: h::expand_tilde(dir, h::account_home().as_deref()).ok(),
                kind: "state".into(),
                to_name_it: "set state_dir to an absolute path to use it".into(),
            },
            Err(why) => {
                warn(format!("`{dir}` is not used: {why}"));
                return nowhere();
            }
        },
        Some(dir) => return PathBuf::from(dir),
        None => {
            let derived = h::state_home_with(&|k| match k {
                "HOME" => home.map(|p| p.display().to_string()),
                _ => env_var(k),
            })
            .map(|base| base.join("tackle"));
            let Some(path) = derived else {
                warn(format!("{}; set XDG_STATE_HOME or state_dir", h::NO_HOME));
                return nowhere();
            };
            h::Derived {
                path,
                account_default: h::account_home().map(|a| a.join(".local/state/tackle")),
                kind: "state".into(),
                to_name_it: "set state_dir in the config to use it".into(),
            }
        }
    };
    let (path, own) = (check.path.clone(), check.account_default.clone());
    match (h::refuse_derived(&check, &h::workspace_or_cwd(None)), own) {
        (None, _) => path,
        (Some(why), Some(own)) => {
            warn(format!(
                "{} is not used, {why}; using {}",
                path.display(),
                own.display()
            ));
            own
        }
        (Some(why), None) => {
            warn(format!("{} is not used, {why}", path.display()));
            nowhere()
        }
    }
}
