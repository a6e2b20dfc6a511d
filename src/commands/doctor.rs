//! `tackle doctor [--json]`: checks what is configured (the config, the state directory and
//! store, each backend, each MCP server) and says which protections are enforced on this
//! machine. Exit 1 when something configured is broken, 2 when the config cannot be used.

mod channels;
mod honeytokens;
mod render;
mod skills;

use crate::app::{open_store, App, AppBuilder, Selection};
use crate::cli::{DoctorArgs, Global};
use crate::exit;
use anyhow::Result;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tackle_host::{HostConfig, NativeHostProvider};
use tackle_llm::ProviderKind;
use tackle_mcp::{ServerState, ServerStatus};
use tackle_policy::secrets::SecretRedactor;
use tackle_protocol::config::{BackendConfig, Config, SandboxMode};
use tackle_protocol::{CallScope, Grants, HostError, HostProvider, HttpRequest, ToolHost};
use tackle_store::Store;
use tokio_util::sync::CancellationToken;

/// How long one backend may take to answer its probe (a configured or a detected one).
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);
/// The longest doctor waits for MCP servers to start (less when their own timeouts are).
const MCP_WAIT_MAX: Duration = Duration::from_secs(10);
/// MCP's own default start-up timeout, for servers that set none.
const MCP_STARTUP_DEFAULT_SECS: u64 = 30;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Status {
    Ok,
    Warn,
    Fail,
}

/// One line of the report.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Check {
    name: String,
    status: Status,
    detail: String,
    /// For the host's protections: whether it is in force here.
    #[serde(skip_serializing_if = "Option::is_none")]
    enforced: Option<bool>,
    /// The detail quotes text doctor did not write (another program's error, the config
    /// file), which gets the full secret scan; doctor's own words only lose the config's
    /// secret values, so "Authorization: environment variable … is not set" stays readable.
    #[serde(skip)]
    quoting: bool,
}

impl Check {
    fn new(name: impl Into<String>, status: Status, detail: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            status,
            detail: detail.into(),
            enforced: None,
            quoting: false,
        }
    }

    /// Marks the detail as quoting outside text (see [`Check::quoting`]).
    fn quoting(mut self) -> Self {
        self.quoting = true;
        self
    }

    fn ok(name: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(name, Status::Ok, detail)
    }

    fn warn(name: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(name, Status::Warn, detail)
    }

    fn fail(name: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(name, Status::Fail, detail)
    }

    /// The word after the name in the text output.
    fn label(&self) -> &'static str {
        match (self.enforced, self.status) {
            (Some(true), _) => "enforced",
            (Some(false), _) => "NOT ENFORCED",
            (None, Status::Ok) => "ok",
            (None, Status::Warn) => "warn",
            (None, Status::Fail) => "FAIL",
        }
    }
}

pub async fn run(global: &Global, args: DoctorArgs) -> Result<i32> {
    let mut checks = Vec::new();
    let loaded = match load_quietly(global) {
        Ok(loaded) => loaded,
        Err(e) => {
            checks.push(Check::fail("config", format!("{e:#}")).quoting());
            return finish(&checks, args.json, Some(exit::USAGE), &[]);
        }
    };
    for w in &loaded.warnings {
        checks.push(Check::warn("config", w.clone()));
    }
    let config = loaded.config.clone();
    let warnings = loaded.warnings.clone();
    // Found by type, with the values interpolated into them (`config::secrets`).
    let config_secrets = loaded.secrets.clone();
    let state_dir = App::state_dir_for(&config);
    // Without the store the rest can still be checked, against a throw-away one.
    let (store, store_failure) = match open_store(&config) {
        Ok(store) => (store, None),
        Err(e) => (Store::open_in_memory()?, Some(format!("{e:#}"))),
    };
    let selection = Selection {
        plugins_reported: true,
        ..Selection::default()
    };
    let app = match AppBuilder::with_loaded(global, &selection, loaded, store).and_then(|b| b.app())
    {
        Ok(app) => app,
        Err(e) => {
            checks.push(Check::fail("config", format!("{e:#}")).quoting());
            return finish(&checks, args.json, Some(exit::USAGE), &[]);
        }
    };
    let source = app
        .config_source
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "built-in defaults (no config file found)".into());
    checks.insert(0, Check::ok("config", source));
    checks.push(Check::ok("workspace", app.workspace.display().to_string()));
    checks.push(state_dir_check(&state_dir));
    // Where schedules live is asked of a store that opened (a failed one is checked above).
    let store_opened = store_failure.is_none();
    checks.push(store_check(&app.store, store_failure).await);
    if store_opened {
        checks.push(state_engine_check(&app.store).await);
    }

    // The slow checks run together: every backend's probe (the configured ones, else the
    // one `tackle run` would find) and the MCP servers' start-up.
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let ((detected, probed, probed_backends), mcp, channel_checks) = tokio::join!(
        async {
            let (backends, detected) = backends_to_probe(&config).await;
            let host = probe_host(&backends, &config, &state_dir, &app.workspace, home.clone());
            let probes: Vec<_> = backends
                .iter()
                .map(|b| {
                    let (host, backend) = (Arc::clone(&host), b.clone());
                    tokio::spawn(async move { probe(host, &backend).await })
                })
                .collect();
            let mut out = Vec::new();
            for (handle, b) in probes.into_iter().zip(&backends) {
                out.push(handle.await.unwrap_or_else(|e| {
                    Check::fail(endpoint_name(b), format!("the probe stopped: {e}"))
                }));
            }
            (detected, out, backends)
        },
        mcp_statuses(&app, &config),
        channels::checks(&config, &app.store, &state_dir)
    );

    checks.push(Check::ok(
        "tools",
        format!("{} registered", app.dispatcher.registry().specs().len()),
    ));
    checks.extend(plugin_checks(&app.plugins.report()));
    // Each built-in extension's own checks (its catalogue row's `doctor`).
    let account_home = crate::config::home::home();
    let services = crate::services::settings(&config.services, account_home.as_deref());
    checks.extend(crate::extensions::doctor_checks(
        &crate::extensions::Inputs {
            config: &config,
            workspace: &app.workspace,
            home: account_home.as_deref(),
            store: &app.store,
            coding_tools: config.tools.coding_tools,
            services: &services,
        },
    ));
    match detected {
        // Nothing configured: what was found, then its probe.
        Some(found) => {
            checks.push(found);
            checks.extend(probed);
        }
        None => {
            for ((i, b), endpoint) in config.backends.iter().enumerate().zip(probed) {
                checks.push(key_check(i, b, &warnings));
                checks.push(endpoint);
            }
        }
    }
    checks.extend(mcp.iter().map(mcp_check));
    checks.extend(channel_checks);
    checks.extend(protection_checks(&config));
    checks.push(honeytokens::check(&config, &state_dir));
    checks.extend(shell_rule_checks(&config, &app.workspace, &state_dir));
    app.shutdown().await;

    // The secrets the config holds (and a detected backend's key), for the redaction pass
    // over every detail.
    let mut secrets: Vec<String> = config_secrets
        .iter()
        .map(|s| s.expose().to_string())
        .chain(probed_backends.iter().filter_map(api_key))
        .collect();
    secrets.retain(|s| !s.trim().is_empty());
    finish(&checks, args.json, None, &secrets)
}

/// The `skills` extension's checks: every `skills.dirs` directory read as `tackle run` reads it.
pub(crate) fn skill_checks(
    config: &tackle_protocol::config::SkillsConfig,
    workspace: &Path,
    home: Option<&Path>,
) -> Vec<Check> {
    skills::checks(config, workspace, home)
}

/// The config as `app::load_config` loads it, without printing its warnings to stderr: the report
/// lists each one, and once is enough.
fn load_quietly(global: &Global) -> Result<crate::config::Loaded> {
    let vars: Vec<(String, String)> = std::env::vars().collect();
    Ok(crate::config::load(
        global.config.as_deref(),
        global.workspace.as_deref(),
        &|k: &str| std::env::var(k).ok(),
        &vars,
    )?)
}

/// Print the checks (text or JSON) and pick the exit code: `forced`, else 1 when any failed.
fn finish(checks: &[Check], json: bool, forced: Option<i32>, secrets: &[String]) -> Result<i32> {
    // No detail is built from a key; this makes sure none arrives through an error message.
    let redactor = SecretRedactor::new(secrets.to_vec());
    let checks: Vec<Check> = checks
        .iter()
        .cloned()
        .map(|mut c| {
            c.detail = if c.quoting {
                redactor.redact(&c.detail).into_owned()
            } else {
                without_values(&c.detail, secrets)
            };
            c
        })
        .collect();
    let worst = checks.iter().map(|c| c.status).max().unwrap_or(Status::Ok);
    if json {
        let out = serde_json::json!({"status": worst, "checks": checks});
        outln!("{}", serde_json::to_string_pretty(&out)?)?;
    } else {
        write!(exit::stdout(), "{}", render::text(&checks))?;
    }
    Ok(forced.unwrap_or(if worst == Status::Fail {
        exit::FAILED
    } else {
        exit::OK
    }))
}

/// `text` with every one of the config's secret values replaced; nothing else is touched.
fn without_values(text: &str, secrets: &[String]) -> String {
    secrets
        .iter()
        .filter(|s| !s.trim().is_empty())
        .fold(text.to_string(), |t, s| {
            t.replace(s.as_str(), "[redacted secret]")
        })
}

/// The state directory exists, is a directory, can be written, and only its owner gets in.
/// One line for the plugins loaded, one failure per manifest problem (file and JSON path), one
/// warning per refused tool.
fn plugin_checks(report: &tackle_tools::plugins::LoadReport) -> Vec<Check> {
    let tools: usize = report.plugins.iter().map(|p| p.tools.len()).sum();
    let mut checks = vec![Check::ok(
        "plugins",
        format!("{} loaded with {tools} tool(s)", report.plugins.len()),
    )];
    checks.extend(
        report
            .errors
            .iter()
            .map(|e| Check::fail("plugins", format!("{e} (the plugin is skipped)")).quoting()),
    );
    checks.extend(
        report
            .warnings
            .iter()
            .map(|w| Check::warn("plugins", w.clone()).quoting()),
    );
    checks
}

fn state_dir_check(dir: &Path) -> Check {
    const NAME: &str = "state_dir";
    let shown = dir.display();
    let meta = match std::fs::metadata(dir) {
        Ok(meta) => meta,
        Err(e) => {
            return Check::fail(
                NAME,
                format!("{shown}: {e}; set `state_dir` to a writable directory"),
            )
        }
    };
    if !meta.is_dir() {
        return Check::fail(
            NAME,
            format!("{shown} is not a directory; set `state_dir` to a writable directory"),
        );
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    let probe = dir.join(format!(".doctor-{}-{nanos}", std::process::id()));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
        }
        Err(e) => {
            return Check::fail(
                NAME,
                format!("{shown} is not writable: {e}; sessions and the audit log cannot be kept"),
            )
        }
    }
    match open_mode(&meta) {
        Some(mode) if mode & 0o077 != 0 => Check::warn(
            NAME,
            format!("{shown} is mode {mode:04o}: other users can reach sessions and the audit log; chmod 700 {shown}"),
        ),
        Some(mode) => Check::ok(NAME, format!("{shown} (mode {mode:04o}, writable)")),
        None => Check::ok(NAME, format!("{shown} (writable)")),
    }
}

#[cfg(unix)]
fn open_mode(meta: &std::fs::Metadata) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    Some(meta.permissions().mode() & 0o777)
}

#[cfg(not(unix))]
fn open_mode(_meta: &std::fs::Metadata) -> Option<u32> {
    None
}

/// The store opens, answers a query, and its files are the owner's only.
async fn store_check(store: &Store, failure: Option<String>) -> Check {
    const NAME: &str = "store";
    if let Some(why) = failure {
        return Check::fail(NAME, why);
    }
    let path = store
        .path()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    if let Err(e) = store.audit_tail(1).await {
        return Check::fail(NAME, format!("{path}: {e}"));
    }
    let wide: Vec<String> = store
        .files()
        .iter()
        .filter_map(|f| {
            let mode = open_mode(&std::fs::metadata(f).ok()?)?;
            (mode & 0o077 != 0).then(|| format!("{} is mode {mode:04o}", f.display()))
        })
        .collect();
    if wide.is_empty() {
        Check::ok(
            NAME,
            format!("{path} (sessions and audit log, readable by its owner only)"),
        )
    } else {
        Check::warn(
            NAME,
            format!(
                "{}: other users can read sessions and the audit log; chmod 600 them",
                wide.join(", ")
            ),
        )
    }
}

/// Where the state lives: the SQLite file, or the shared database (`state_url`), asked now
/// for its version and schema.
async fn state_engine_check(store: &Store) -> Check {
    const NAME: &str = "state";
    let engine = store.state_engine();
    match store.shared_status().await {
        None => Check::ok(NAME, format!("{engine}, in the store file (one daemon at a time)")),
        Some(Ok(s)) if s.schema == s.known => Check::ok(
            NAME,
            format!(
                "{engine}: reachable, server {}, schema version {}; shared by every daemon that names it",
                s.server, s.schema
            ),
        ),
        Some(Ok(s)) => Check::warn(
            NAME,
            format!(
                "{engine}: reachable, server {}, schema version {} (this build knows {})",
                s.server, s.schema, s.known
            ),
        ),
        Some(Err(e)) => Check::fail(NAME, format!("{e}")),
    }
}

fn key_name(b: &BackendConfig) -> String {
    format!("backend.{}.key", b.name)
}

fn endpoint_name(b: &BackendConfig) -> String {
    format!("backend.{}.endpoint", b.name)
}

fn configured_base(b: &BackendConfig) -> Option<&str> {
    b.api_base
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

fn api_key(b: &BackendConfig) -> Option<String> {
    b.api_key
        .as_deref()
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .map(str::to_string)
}

/// Whether the backend has the key it needs; never shows the key. `i` is the backend's
/// place under `backends:`, which is how config warnings name its `api_key`.
fn key_check(i: usize, b: &BackendConfig, warnings: &[String]) -> Check {
    let name = key_name(b);
    let prefix = format!("backends[{i}].api_key: ");
    let unset = warnings
        .iter()
        .find_map(|w| w.strip_prefix(prefix.as_str()))
        .map(|w| w.trim_end_matches("; the value is empty").to_string());
    match (&b.api_key, api_key(b)) {
        (_, Some(_)) => match unset {
            Some(why) => Check::warn(name, format!("api_key is set, but {why}")),
            None => Check::ok(name, "api_key is set"),
        },
        (Some(_), None) => Check::fail(
            name,
            match unset {
                Some(why) => format!("api_key is empty: {why}; export it or set api_key"),
                None => "api_key is empty; set it, or remove it for a server that needs none"
                    .to_string(),
            },
        ),
        (None, None) => {
            let kind = ProviderKind::of(b.kind);
            let needs = |what: &str| {
                format!(
                    "no api_key, and {what} needs one: api_key: \"${{{}}}\"",
                    kind.key_var
                )
            };
            match configured_base(b) {
                _ if kind.key_required => Check::fail(name, needs(&format!("type {}", kind.name))),
                None => Check::fail(name, needs(kind.default_api_base)),
                Some(_) => Check::ok(
                    name,
                    "no api_key (none is sent; fine for a server that needs none)",
                ),
            }
        }
    }
}

/// A host for the probes: the same guarded, DNS-pinned HTTP client tools use, with every
/// probed backend's URL (the defaults too) trusted as operator-written.
fn probe_host(
    backends: &[BackendConfig],
    config: &Config,
    state_dir: &Path,
    workspace: &Path,
    home: Option<PathBuf>,
) -> Arc<dyn ToolHost> {
    let mut host_config = HostConfig::new(state_dir)
        .with_home(home)
        .with_config(config);
    for base in backends.iter().filter_map(|b| tackle_llm::api_base(b).ok()) {
        if !host_config.operator_hosts.contains(&base) {
            host_config.operator_hosts.push(base);
        }
    }
    let provider = NativeHostProvider::new(host_config);
    provider.scoped(&CallScope {
        tool: "doctor".into(),
        session_id: "doctor".into(),
        agent: "doctor".into(),
        workspace: workspace.to_path_buf(),
        grants: Grants::default(),
        cancel: CancellationToken::new(),
        approved: false,
    })
}

/// One cheap request that spends no tokens: the model listing (`GET …/models`), on the base
/// URL the requests are built on ([`tackle_llm::api_base`]). Any HTTP answer but a refused
/// key means the endpoint is there.
async fn probe(host: Arc<dyn ToolHost>, b: &BackendConfig) -> Check {
    let name = endpoint_name(b);
    let key = api_key(b);
    let base = match tackle_llm::api_base(b) {
        Ok(base) => base,
        Err(e) => return Check::fail(name, e.to_string()),
    };
    let kind = ProviderKind::of(b.kind);
    let url = format!("{base}{}", kind.models_path);
    let headers = kind
        .headers(key.as_deref())
        .into_iter()
        .map(|(name, value)| (name.to_string(), value))
        .collect();
    let shown = shown_url(&url);
    let started = Instant::now();
    let answer = host
        .http(HttpRequest {
            method: "GET".into(),
            url: url.clone(),
            headers,
            body: None,
            max_bytes: 64 * 1024,
            timeout: PROBE_TIMEOUT,
            follow_redirects: false,
            operator_configured: true,
        })
        .await;
    let ms = started.elapsed().as_millis();
    let status = match answer {
        Ok(resp) => resp.status,
        Err(HostError::Timeout(_)) => {
            return Check::fail(
                name,
                format!(
                    "GET {shown}: no answer within {} s",
                    PROBE_TIMEOUT.as_secs()
                ),
            )
        }
        Err(e @ HostError::Network(_)) => {
            return Check::fail(
                name,
                format!("GET {shown}: unreachable: {}", cause(&e, &url)),
            )
            .quoting()
        }
        Err(e) => return Check::fail(name, format!("GET {shown}: {}", cause(&e, &url))).quoting(),
    };
    let said = format!("GET {shown} answered {status} in {ms} ms");
    match status {
        200..=299 => Check::ok(name, said),
        401 | 403 => Check::fail(
            name,
            match key {
                Some(_) => format!("{said}: the server refused the api_key"),
                None => format!("{said}: the server wants an api_key"),
            },
        ),
        300..=399 => Check::warn(
            name,
            format!("{said}: a redirect, which requests never follow; set api_base to the URL it points to"),
        ),
        500..=599 => Check::warn(name, format!("{said}: the server reports an error")),
        _ => Check::ok(name, format!("{said}: reachable (it lists no models there)")),
    }
}

/// The backends to probe: the configured ones; with none, the one `tackle run` would find on
/// its own (keys in the environment, a local server) and a check saying what was found.
/// Nothing is configured, so finding nothing is a warning, not a failure.
async fn backends_to_probe(config: &Config) -> (Vec<BackendConfig>, Option<Check>) {
    if !config.backends.is_empty() {
        return (config.backends.clone(), None);
    }
    let env = tackle_llm::EnvSnapshot::from_vars(std::env::vars());
    match tackle_llm::discover(&env).await {
        Ok(found) => {
            let said = Check::ok(
                "backends",
                format!(
                    "none configured; `tackle run` would use {} (model {}) from {}; probed as backend.{}.endpoint",
                    found.backend.name, found.model, found.source, found.backend.name
                ),
            );
            (vec![found.backend], Some(said))
        }
        Err(e) => (Vec::new(), Some(Check::warn("backends", e.to_string()))),
    }
}

/// `url` without user info and query, either of which can carry a credential.
fn shown_url(url: &str) -> String {
    let no_query = url.split(['?', '#']).next().unwrap_or(url);
    match no_query.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
            format!("{scheme}://{host}{path}")
        }
        None => no_query.to_string(),
    }
}

/// What went wrong, without the URL the host's message repeats (twice, for a failed send).
fn cause(e: &HostError, url: &str) -> String {
    let text = match e {
        HostError::Network(msg) => msg.as_str(),
        _ => return scrub(&e.to_string(), url),
    };
    let text = text
        .strip_prefix(url)
        .and_then(|t| t.strip_prefix(": "))
        .unwrap_or(text);
    let text = text
        .strip_prefix("error sending request for url (")
        .and_then(|t| t.split_once("): "))
        .map_or(text, |(_, rest)| rest);
    scrub(text, url)
}

/// `text` (an error that quotes `url`) without `url`'s user info and query.
fn scrub(text: &str, url: &str) -> String {
    let mut out = text.to_string();
    if let Some((_, rest)) = url.split_once("://") {
        let authority = rest.split('/').next().unwrap_or(rest);
        if let Some((userinfo, _)) = authority.rsplit_once('@') {
            out = out.replace(&format!("{userinfo}@"), "");
        }
    }
    if let Some((_, query)) = url.split_once('?') {
        out = out.replace(query, "…");
    }
    out
}

/// Each MCP server's state after a bounded wait: its own start-up timeout, at most
/// [`MCP_WAIT_MAX`]. A server that fails and restarts is caught in its failed state.
async fn mcp_statuses(app: &App, config: &Config) -> Vec<ServerStatus> {
    let Some(mcp) = &app.mcp else {
        return Vec::new();
    };
    let longest = config
        .mcp_servers
        .values()
        .map(|m| m.startup_timeout_secs.unwrap_or(MCP_STARTUP_DEFAULT_SECS))
        .max()
        .unwrap_or(MCP_STARTUP_DEFAULT_SECS);
    let deadline = Instant::now() + Duration::from_secs(longest).min(MCP_WAIT_MAX);
    let statuses = loop {
        mcp.wait_settled(deadline.saturating_duration_since(Instant::now()))
            .await;
        let statuses = mcp.status().await;
        let starting = statuses.iter().any(|s| s.state == ServerState::Starting);
        if !starting || Instant::now() >= deadline {
            break statuses;
        }
    };
    app.dispatcher.registry().refresh();
    statuses
}

fn mcp_check(s: &ServerStatus) -> Check {
    let name = format!("mcp.{}", s.name);
    match &s.state {
        ServerState::Ready => {
            let n = s.tools.len();
            Check::ok(
                name,
                format!("ready, {n} tool{}", if n == 1 { "" } else { "s" }),
            )
        }
        ServerState::Failed(why) => Check::fail(name, format!("failed: {why}")).quoting(),
        ServerState::Starting => Check::warn(
            name,
            format!(
                "still starting after {} s (its tools are not listed yet)",
                MCP_WAIT_MAX.as_secs()
            ),
        ),
    }
}

/// The host's protections. One not in force is a warning (Landlock under bubblewrap too: it
/// is left out on purpose there, and the detail says so, but it is not in force), except that under
/// `security.sandbox: required` a missing sandbox is a failure (commands are refused).
fn protection_checks(config: &Config) -> Vec<Check> {
    let report = tackle_host::enforcement_report();
    let required = config.security.sandbox == SandboxMode::Required;
    report
        .into_iter()
        .map(|e| {
            let sandbox = matches!(e.protection, "sandbox" | "namespaces");
            let (status, detail) = if e.enforced {
                (Status::Ok, e.detail)
            } else if required && sandbox {
                (
                    Status::Fail,
                    format!(
                        "{}; security.sandbox is `required`, so commands are refused",
                        e.detail
                    ),
                )
            } else {
                (Status::Warn, e.detail)
            };
            Check {
                enforced: Some(e.enforced),
                ..Check::new(e.protection, status, detail)
            }
        })
        .collect()
}

/// Each configured shell rule with the layer that enforces it here (`kernel` for a program,
/// `analyser` for a program with arguments). Without namespaces, program rules fall back to
/// the analyser, which is a warning.
fn shell_rule_checks(config: &Config, workspace: &Path, state_dir: &Path) -> Vec<Check> {
    let report = tackle_host::enforcement_report();
    let namespaces = report
        .iter()
        .any(|e| e.protection == "program_rules" && e.enforced);
    let landlock = report
        .iter()
        .any(|e| e.protection == "landlock" && e.enforced);
    config
        .security
        .tool_policies
        .iter()
        .filter_map(|(tool, p)| Some((tool, p.grants.as_ref()?.shell.as_ref()?)))
        .filter(|(_, g)| !g.allow.is_empty() || !g.deny.is_empty())
        .map(|(tool, grant)| {
            let rules = tackle_host::enforced_rules(grant);
            let weakened = !namespaces
                && rules
                    .iter()
                    .any(|r| r.layer == tackle_policy::shell::RuleLayer::Kernel);
            let shown: Vec<String> = rules
                .iter()
                .map(|r| {
                    let layer = match r.layer {
                        tackle_policy::shell::RuleLayer::Kernel if !namespaces && landlock => {
                            "kernel, Landlock only here".to_string()
                        }
                        tackle_policy::shell::RuleLayer::Kernel if !namespaces => {
                            "analyser only here".to_string()
                        }
                        l => l.to_string(),
                    };
                    format!("{} `{}`: {layer}", r.list, r.rule)
                })
                .collect();
            let name = format!("shell_rules.{tool}");
            if weakened {
                Check::warn(
                    name,
                    format!(
                        "{} (no namespace sandbox: see program_rules)",
                        shown.join(", ")
                    ),
                )
            } else {
                // The same view `--explain` prints and a command of this tool runs in.
                let view = tackle_host::sandbox_view_for(grant, workspace, &state_dir.join("tmp"));
                let programs = match &view.visible_programs {
                    Some(p) => format!("only {} programs exist", p.len()),
                    None => format!("{} files masked", view.masked_programs.len()),
                };
                Check::ok(
                    name,
                    format!(
                        "{}; sandbox: {} mounts, {programs}",
                        shown.join(", "),
                        view.mounts.len()
                    ),
                )
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_urls_drop_credentials() {
        assert_eq!(
            shown_url("https://user:pw@example.com/v1/models?key=s3cret"),
            "https://example.com/v1/models"
        );
        assert_eq!(
            shown_url("http://127.0.0.1:9/v1/models"),
            "http://127.0.0.1:9/v1/models"
        );
        assert_eq!(shown_url("http://h"), "http://h");
        assert_eq!(shown_url("not a url"), "not a url");
    }

    #[test]
    fn errors_quoting_the_url_lose_its_credentials() {
        let url = "http://user:pw@h:1/v1/models?key=s3cret";
        let text = format!("{url}: connection refused");
        let out = scrub(&text, url);
        assert!(!out.contains("pw") && !out.contains("s3cret"), "{out}");
    }

    fn backend(yaml: serde_json::Value) -> BackendConfig {
        serde_json::from_value(yaml).unwrap()
    }

    #[test]
    fn a_key_from_an_unset_variable_fails_naming_it() {
        let b = backend(serde_json::json!({"name": "x", "type": "openai", "api_key": ""}));
        let warnings = vec![
            "backends[0].api_key: environment variable NOPE is not set (used as `${NOPE}`); the value is empty".to_string(),
        ];
        let c = key_check(0, &b, &warnings);
        assert_eq!(c.status, Status::Fail);
        assert!(c.detail.contains("NOPE"), "{}", c.detail);
        // Another backend's warning is not this one's.
        let c = key_check(1, &b, &warnings);
        assert!(!c.detail.contains("NOPE"), "{}", c.detail);
    }

    #[test]
    fn keys_are_needed_where_the_server_needs_them() {
        let local = backend(
            serde_json::json!({"name": "l", "type": "openai", "api_base": "http://127.0.0.1:1/v1"}),
        );
        assert_eq!(key_check(0, &local, &[]).status, Status::Ok);
        let openai = backend(serde_json::json!({"name": "o", "type": "openai"}));
        assert_eq!(key_check(0, &openai, &[]).status, Status::Fail);
        let claude = backend(
            serde_json::json!({"name": "c", "type": "anthropic", "api_base": "http://127.0.0.1:1"}),
        );
        assert_eq!(key_check(0, &claude, &[]).status, Status::Fail);
        let set =
            backend(serde_json::json!({"name": "s", "type": "anthropic", "api_key": "k-123"}));
        let c = key_check(0, &set, &[]);
        assert_eq!(c.status, Status::Ok);
        assert!(!c.detail.contains("k-123"));
    }
}
