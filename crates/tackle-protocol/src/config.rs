//! Typed configuration: every key of `config.example.yaml`.
//!
//! These are plain data. Loading (file search order, `${VAR}` interpolation, `TACKLE_*`
//! overrides, path-named errors) happens once in the binary, which hands these structs down;
//! no library crate reads configuration on its own (docs/architecture.md).
//!
//! Every struct denies unknown fields so a typo is an error naming its path.

use crate::grants::Grants;
pub use crate::secret::Secret;
use crate::spec::ApprovalMode;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// SQLite store: sessions, memory, schedules, audit log.
    #[serde(default)]
    pub state_dir: Option<String>,
    /// Where schedules and their fires live: unset or `sqlite://` (the file in `state_dir`),
    /// or `postgres://USER:PASSWORD@HOST:PORT/DB?sslmode=require`, shared by every daemon
    /// that names it so each fire runs once across them (docs/scale-out.md).
    #[serde(default)]
    pub state_url: Option<Secret>,
    /// Default workspace for fs and shell tools.
    #[serde(default)]
    pub workspace: Option<String>,
    #[serde(default)]
    pub backends: Vec<BackendConfig>,
    #[serde(default)]
    pub agents: Vec<AgentConfig>,
    #[serde(default)]
    pub security: SecurityConfig,
    #[serde(default)]
    pub tool_profiles: BTreeMap<String, ToolProfileConfig>,
    /// Named bundles of model, backend, tool profile, `max_iterations` and a system-prompt
    /// addition (`presets.NAME`), named by `agents[].preset`, `workers[].preset` and the
    /// `preset` argument of `spawn_agent` / `spawn_worker`.
    #[serde(default)]
    pub presets: BTreeMap<String, PresetConfig>,
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, McpServerConfig>,
    #[serde(default)]
    pub mcp: McpServeConfig,
    #[serde(default)]
    pub web_search: WebSearchConfig,
    #[serde(default)]
    pub tools: ToolsConfig,
    #[serde(default)]
    pub plugins: PluginsConfig,
    #[serde(default)]
    pub skills: SkillsConfig,
    /// Shared memory banks and which agents may read or write each (`memory_banks.NAME`).
    /// An agent reaches a bank only through these grants (or ones stored with
    /// `tackle memory grant`); its own memory (`self`) needs none.
    #[serde(default)]
    pub memory_banks: BTreeMap<String, MemoryBankConfig>,
    /// Destinations of the `message` tool besides the session itself (`channels.NAME`).
    #[serde(default)]
    pub channels: BTreeMap<String, ChannelConfig>,
    /// How schedules are read and fired (`tackle daemon`).
    #[serde(default)]
    pub schedules: SchedulesConfig,
    /// What `tackle daemon` runs besides the schedule engine.
    #[serde(default)]
    pub daemon: DaemonConfig,
    /// The HTTP API `tackle daemon` serves when this is present.
    #[serde(default)]
    pub gateway: Option<GatewayConfig>,
    /// Credentials of the `services` extension's tools (`services.NAME`).
    #[serde(default)]
    pub services: ServicesConfig,
    /// The speech-to-text backend of the `transcribe` tool.
    #[serde(default)]
    pub transcribe: TranscribeConfig,
    /// The browser of the `screenshot` tool (built with the `screenshot` feature).
    #[serde(default)]
    pub screenshot: ScreenshotConfig,
    /// The `devices` extension's `android` and `hardware` tools (built with their features).
    #[serde(default)]
    pub devices: DevicesConfig,
}

impl Config {
    /// Every credential of the config, found by type ([`Secret`]), with where it is.
    pub fn secrets(&self) -> Vec<crate::secret::Found> {
        crate::secret::secrets_in(self)
    }

    /// The agent named `name`, or the first agent (the default) when `name` is `None`.
    pub fn agent(&self, name: Option<&str>) -> Option<&AgentConfig> {
        match name {
            Some(n) => self.agents.iter().find(|a| a.name == n),
            None => self.agents.first(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BackendType {
    /// Any OpenAI-compatible Chat Completions server.
    Openai,
    /// Anthropic Messages API.
    Anthropic,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackendConfig {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: BackendType,
    #[serde(default)]
    pub api_base: Option<String>,
    #[serde(default)]
    pub api_key: Option<Secret>,
    #[serde(default)]
    pub models: Vec<ModelConfig>,
    /// Stream answers (default true); `false` for servers that cannot.
    #[serde(default)]
    pub stream: Option<bool>,
    /// How long to wait for this backend (`backends[].timeouts`); unset keys take defaults.
    #[serde(default)]
    pub timeouts: Option<BackendTimeouts>,
}

/// A backend's timeouts in seconds (`backends[].timeouts`); every key optional.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackendTimeouts {
    /// Establishing the TCP (and TLS) connection (default [`BackendTimeouts::DEFAULT_CONNECT_SECS`]).
    #[serde(default)]
    pub connect_secs: Option<u64>,
    /// After connecting, until the response headers and the first byte of the answer arrive
    /// (default [`BackendTimeouts::DEFAULT_FIRST_BYTE_SECS`]). Without streaming the whole
    /// answer must arrive in this time.
    #[serde(default)]
    pub first_byte_secs: Option<u64>,
    /// The longest gap between two chunks of a streamed answer (default
    /// [`BackendTimeouts::DEFAULT_IDLE_SECS`]).
    #[serde(default)]
    pub idle_secs: Option<u64>,
}

impl BackendTimeouts {
    pub const DEFAULT_CONNECT_SECS: u64 = 10;
    pub const DEFAULT_FIRST_BYTE_SECS: u64 = 60;
    pub const DEFAULT_IDLE_SECS: u64 = 60;
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    pub name: String,
    /// Context window in tokens, for trimming; a conservative default applies when unset.
    #[serde(default)]
    pub context_window: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    pub name: String,
    #[serde(default)]
    pub backend: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub system_prompt: Option<String>,
    #[serde(default)]
    pub max_iterations: Option<u32>,
    #[serde(default)]
    pub tool_profile: Option<String>,
    /// A name under `presets:`: its fields apply where this agent sets none, and its
    /// `system_prompt` is appended to this agent's.
    #[serde(default)]
    pub preset: Option<String>,
    #[serde(default)]
    pub extensions: ExtensionsConfig,
    /// Overlay, kind by kind, over the resolved tool policies.
    #[serde(default)]
    pub grants: Grants,
    #[serde(default)]
    pub workers: Vec<WorkerConfig>,
    /// How deep `spawn_agent` / `spawn_worker` / `delegate` may nest below this agent
    /// (default [`AgentConfig::DEFAULT_MAX_DEPTH`]).
    #[serde(default)]
    pub max_depth: Option<u32>,
    /// How many children one agent of this tree may run at once (default
    /// [`AgentConfig::DEFAULT_MAX_CONCURRENT_CHILDREN`]).
    #[serde(default)]
    pub max_concurrent_children: Option<u32>,
    /// Show this agent its pinned `longterm_memory` entries at the start of each run, inside
    /// a block labelled as remembered data (never as instructions). Off by default.
    #[serde(default)]
    pub inject_pinned_memory: bool,
    /// The other agents this one may plant schedules for (default none). Such a schedule
    /// fires with the grants of both agents intersected, and planting it always asks.
    #[serde(default)]
    pub schedule_for: Vec<String>,
}

impl AgentConfig {
    pub const DEFAULT_MAX_DEPTH: u32 = 3;
    pub const DEFAULT_MAX_CONCURRENT_CHILDREN: u32 = 3;
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtensionsConfig {
    /// When non-empty, only these extensions are active.
    #[serde(default)]
    pub enable: Vec<String>,
    #[serde(default)]
    pub disable: Vec<String>,
}

impl ExtensionsConfig {
    pub fn is_enabled(&self, extension: &str) -> bool {
        (self.enable.is_empty() || self.enable.iter().any(|e| e == extension))
            && !self.disable.iter().any(|e| e == extension)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerConfig {
    pub name: String,
    #[serde(default)]
    pub system_prompt: Option<String>,
    #[serde(default)]
    pub tools: Vec<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub backend: Option<String>,
    #[serde(default)]
    pub max_iterations: Option<u32>,
    /// What the worker's model is shown of each tool (a name under `tool_profiles:`);
    /// unset: its parent's profile.
    #[serde(default)]
    pub tool_profile: Option<String>,
    /// A name under `presets:`: its fields apply where this template sets none, and its
    /// `system_prompt` is appended to the worker's.
    #[serde(default)]
    pub preset: Option<String>,
}

/// `presets.NAME`: what an agent, a worker template or a spawned child takes from the preset
/// where it sets nothing itself. Every key is optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PresetConfig {
    #[serde(default)]
    pub model: Option<String>,
    /// A name under `backends:`.
    #[serde(default)]
    pub backend: Option<String>,
    /// A name under `tool_profiles:`.
    #[serde(default)]
    pub tool_profile: Option<String>,
    #[serde(default)]
    pub max_iterations: Option<u32>,
    /// Appended (after a blank line) to the system prompt of whatever uses the preset.
    #[serde(default)]
    pub system_prompt: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecurityConfig {
    #[serde(default)]
    pub auto_approved_tools: Vec<String>,
    #[serde(default)]
    pub tool_policies: BTreeMap<String, ToolPolicyConfig>,
    /// Deprecated: synthesised into `shell` grants with one warning.
    #[serde(default)]
    pub shell_allowlist: Option<Vec<String>>,
    /// Deprecated: synthesised into `shell` grants with one warning.
    #[serde(default)]
    pub shell_denylist: Option<Vec<String>>,
    /// Deprecated: synthesised into `network` grants with one warning.
    #[serde(default)]
    pub allowed_endpoints: Option<Vec<String>>,
    /// Environment variables passed through to child processes on top of the scrubbed base.
    #[serde(default)]
    pub env_passthrough: Vec<String>,
    /// Whether commands may run with part of the OS sandbox missing.
    #[serde(default)]
    pub sandbox: SandboxMode,
    /// Plant decoy credentials in commands' environment and sandbox home, and refuse (and
    /// freeze the session of) any call that carries one
    /// (docs/decisions/0034-honeytokens.md).
    #[serde(default)]
    pub honeytokens: bool,
    /// Files someone else wrote (globs relative to the workspace, or absolute: a vendored
    /// dependency, a cloned repository's docs): reading one taints the session, as a web
    /// page does (docs/decisions/0033-taint-gates-sinks.md). Files outside the workspace
    /// always do.
    #[serde(default)]
    pub untrusted_paths: Vec<String>,
}

/// `security.sandbox`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxMode {
    /// Run with every layer this machine has, saying which are missing (`tackle doctor`, and
    /// a warning at the first command).
    #[default]
    BestEffort,
    /// Refuse to run commands without the namespace sandbox.
    Required,
}

/// `security.tool_policies.TOOL`: merged field by field over the tool's default policy.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolPolicyConfig {
    #[serde(default)]
    pub approval: Option<ApprovalMode>,
    #[serde(default)]
    pub grants: Option<Grants>,
    /// What a call of this tool that can carry data out (a sink) does once the session has
    /// read untrusted content (docs/decisions/0033-taint-gates-sinks.md); `ask` by default.
    #[serde(default)]
    pub taint: Option<TaintRule>,
}

/// `security.tool_policies.TOOL.taint`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaintRule {
    /// Decided as in a clean session.
    Ignore,
    /// A person must approve this call, whatever the auto-approved list or an earlier
    /// "allow for the session" says.
    #[default]
    Ask,
    /// Refused.
    Deny,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProfileMode {
    Full,
    Brief,
    Summary,
    Hidden,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolProfileConfig {
    #[serde(default = "ToolProfileConfig::default_mode")]
    pub default: ProfileMode,
    #[serde(default)]
    pub tools: ProfileRules,
}

/// A profile's `pattern: mode` rules in the order they were written: between two equally long
/// globs the first written wins, so the order is part of the meaning and a sorted map would
/// lose it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProfileRules(pub Vec<(String, ProfileMode)>);

impl ProfileRules {
    pub fn iter(&self) -> impl Iterator<Item = &(String, ProfileMode)> {
        self.0.iter()
    }

    /// The mode written for exactly `pattern`.
    pub fn get(&self, pattern: &str) -> Option<ProfileMode> {
        self.0.iter().find(|(p, _)| p == pattern).map(|(_, m)| *m)
    }
}

impl<S: Into<String>> FromIterator<(S, ProfileMode)> for ProfileRules {
    fn from_iter<I: IntoIterator<Item = (S, ProfileMode)>>(iter: I) -> Self {
        Self(iter.into_iter().map(|(p, m)| (p.into(), m)).collect())
    }
}

impl Serialize for ProfileRules {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (pattern, mode) in &self.0 {
            map.serialize_entry(pattern, mode)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for ProfileRules {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Rules;
        impl<'de> serde::de::Visitor<'de> for Rules {
            type Value = ProfileRules;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a map of tool name or glob to full, brief, summary or hidden")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                let mut rules = Vec::new();
                while let Some((pattern, mode)) = map.next_entry::<String, ProfileMode>()? {
                    if rules
                        .iter()
                        .any(|(p, _): &(String, ProfileMode)| *p == pattern)
                    {
                        return Err(serde::de::Error::custom(format!(
                            "`{pattern}` is listed twice"
                        )));
                    }
                    rules.push((pattern, mode));
                }
                Ok(ProfileRules(rules))
            }
        }
        deserializer.deserialize_map(Rules)
    }
}

impl ToolProfileConfig {
    fn default_mode() -> ProfileMode {
        ProfileMode::Full
    }
}

/// An MCP server: a stdio child (`command`) or Streamable HTTP (`url`). Exactly one is set;
/// the binary checks that at load so the error names the server.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    /// Every value is treated as a credential: redacted wherever it appears.
    #[serde(default)]
    pub env: BTreeMap<String, Secret>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub url: Option<String>,
    /// Every value is treated as a credential: redacted wherever it appears.
    #[serde(default)]
    pub headers: BTreeMap<String, Secret>,
    /// Seconds to wait for the server to start and list its tools.
    #[serde(default)]
    pub startup_timeout_secs: Option<u64>,
    /// Seconds one tool call may take.
    #[serde(default)]
    pub call_timeout_secs: Option<u64>,
    /// Believe this server's tool annotations for policy: a tool it marks `readOnlyHint`
    /// (and not `destructiveHint`) becomes Low risk with approval `never`. Off by default,
    /// because annotations are the server's own claims.
    #[serde(default)]
    pub trust_annotations: bool,
    /// This server's results are the operator's own (a server they run over their own
    /// data), so they do not taint the session (docs/decisions/0033-taint-gates-sinks.md).
    /// Off by default: an MCP server's answers may carry what anyone wrote.
    #[serde(default)]
    pub trust_results: bool,
    /// OAuth 2.1 for a Streamable HTTP server (`tackle mcp login NAME`). Without it a server
    /// that answers 401 is still logged in to by discovery and dynamic client registration.
    #[serde(default)]
    pub oauth: Option<McpOAuthConfig>,
    /// May this server ask our model for completions (`sampling/createMessage`)? `deny` (the
    /// default) or `ask`: each request put to a person first.
    #[serde(default)]
    pub sampling: McpSampling,
}

/// `mcp_servers.NAME.sampling`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum McpSampling {
    /// Refused; the capability is not declared.
    #[default]
    Deny,
    /// Each request is shown to a person, who may let the model answer it.
    Ask,
}

/// `mcp_servers.NAME.oauth`: a pre-registered client and the scopes to ask for.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpOAuthConfig {
    /// A client registered with the authorization server beforehand; without it Tackle
    /// registers itself (dynamic client registration).
    #[serde(default)]
    pub client_id: Option<String>,
    /// That client's secret, for a confidential client.
    #[serde(default)]
    pub client_secret: Option<Secret>,
    /// Scopes to ask for; empty = the server's `WWW-Authenticate` scope, else its
    /// `scopes_supported`.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// The HTTPS URL of a client ID metadata document describing this client; used as the
    /// client ID where the authorization server supports such documents (and no `client_id`
    /// is set), instead of registering.
    #[serde(default)]
    pub client_metadata_url: Option<String>,
}

/// `mcp:` how `tackle mcp serve` serves.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServeConfig {
    /// Required for any non-loopback `--http` bind.
    #[serde(default)]
    pub bearer_token: Option<Secret>,
    /// Which tools `mcp serve` lists and lets call (tool-profile patterns: exact names and
    /// globs, `ns.*` = `ns__*`); unset = every tool.
    #[serde(default)]
    pub serve_tools: Option<Vec<String>>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebSearchConfig {
    #[serde(default)]
    pub backends: Vec<SearchBackendConfig>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SearchBackendType {
    Kagi,
    Tavily,
    Brave,
    Serper,
    Searxng,
    Duckduckgo,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchBackendConfig {
    #[serde(rename = "type")]
    pub kind: SearchBackendType,
    #[serde(default)]
    pub api_key: Option<Secret>,
    #[serde(default)]
    pub url: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsConfig {
    /// Registers `grep` and `find`.
    #[serde(default)]
    pub coding_tools: bool,
    /// Sanitizer cut-off in bytes.
    #[serde(default = "ToolsConfig::default_output_limit")]
    pub output_limit_bytes: usize,
    /// Default per-call time limit in seconds.
    #[serde(default = "ToolsConfig::default_timeout_secs")]
    pub timeout_secs: u64,
}

impl ToolsConfig {
    pub const DEFAULT_OUTPUT_LIMIT: usize = 51_200;

    fn default_output_limit() -> usize {
        Self::DEFAULT_OUTPUT_LIMIT
    }

    fn default_timeout_secs() -> u64 {
        120
    }
}

impl Default for ToolsConfig {
    fn default() -> Self {
        Self {
            coding_tools: false,
            output_limit_bytes: Self::DEFAULT_OUTPUT_LIMIT,
            timeout_secs: Self::default_timeout_secs(),
        }
    }
}

/// `plugins:` where plugins are found and which of them may load.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginsConfig {
    #[serde(default)]
    pub dirs: Vec<String>,
    /// Plugin names that may load; empty: every plugin not blocked.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Plugin names that never load, even when allowed (block wins).
    #[serde(default)]
    pub block: Vec<String>,
}

/// `skills:` where skills are found and which registry `find_skills` / `install_skill` use.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillsConfig {
    /// Searched in order, first name wins; `install_skill` installs into the first. A relative
    /// entry is inside the workspace (repository-controlled), so it is read only when named
    /// here. Empty = `~/.config/tackle/skills`.
    #[serde(default)]
    pub dirs: Vec<String>,
    /// A ClawHub-compatible registry; unset = `https://clawhub.ai`.
    #[serde(default)]
    pub registry_url: Option<String>,
}

/// `memory_banks.NAME`: the agents that may read and write one shared bank. Write implies read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryBankConfig {
    #[serde(default)]
    pub read: Vec<String>,
    #[serde(default)]
    pub write: Vec<String>,
}

/// `channels.NAME`: where the `message` tool may send besides the session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ChannelConfig {
    /// A JSON POST to the operator's URL (pinned, timed out; loopback allowed because the
    /// operator wrote it).
    Webhook {
        /// A credential too: some webhooks carry their token in the path.
        url: Secret,
        #[serde(default)]
        headers: BTreeMap<String, Secret>,
        /// Seconds one POST may take (default 10).
        #[serde(default)]
        timeout_secs: Option<u64>,
    },
    /// A Telegram bot: `POST {api_base}/bot{bot_token}/sendMessage`.
    Telegram {
        bot_token: Secret,
        /// The chat sent to when the call names none.
        #[serde(default)]
        chat_id: Option<String>,
        /// Unset = `https://api.telegram.org`.
        #[serde(default)]
        api_base: Option<String>,
        #[serde(default)]
        timeout_secs: Option<u64>,
        /// Set: `tackle daemon` also reads the bot's messages (`getUpdates` long polling) and
        /// answers them with an agent.
        #[serde(default)]
        inbound: Option<InboundConfig>,
    },
    /// A Slack app: `POST {api_base}/chat.postMessage`, `Authorization: Bearer {bot_token}`.
    Slack {
        bot_token: Secret,
        /// The channel id (or name) sent to when the call names none.
        #[serde(default)]
        channel: Option<String>,
        /// Unset = `https://slack.com/api`.
        #[serde(default)]
        api_base: Option<String>,
        #[serde(default)]
        timeout_secs: Option<u64>,
        /// The app-level token (`xapp-…`, scope `connections:write`) Socket Mode connects
        /// with; required by `inbound`.
        #[serde(default)]
        app_token: Option<Secret>,
        /// Set: `tackle daemon` also reads the app's messages (Socket Mode, no public URL)
        /// and answers them with an agent.
        #[serde(default)]
        inbound: Option<InboundConfig>,
    },
    /// A Discord bot: `POST {api_base}/channels/{channel_id}/messages`,
    /// `Authorization: Bot {bot_token}`.
    Discord {
        bot_token: Secret,
        /// The channel sent to when the call names none (a snowflake id).
        #[serde(default)]
        channel_id: Option<String>,
        /// Unset = `https://discord.com/api/v10`.
        #[serde(default)]
        api_base: Option<String>,
        #[serde(default)]
        timeout_secs: Option<u64>,
    },
    /// The WhatsApp Cloud API: `POST {api_base}/v18.0/{phone_number_id}/messages`, as
    /// `services.whatsapp` sends it.
    Whatsapp {
        access_token: Secret,
        /// The sending number's id (digits).
        phone_number_id: String,
        /// The recipient sent to when the call names none (digits with country code).
        #[serde(default)]
        to: Option<String>,
        /// Unset = `https://graph.facebook.com` (as `services.whatsapp.api_base`).
        #[serde(default)]
        api_base: Option<String>,
        #[serde(default)]
        timeout_secs: Option<u64>,
    },
    /// A Matrix account (client-server API), read by `tackle daemon` (`/sync` long polling)
    /// when `inbound` is set; each room it is in is a conversation.
    Matrix {
        access_token: Secret,
        /// The homeserver's base URL (`https://matrix.example.org`).
        homeserver: String,
        #[serde(default)]
        timeout_secs: Option<u64>,
        #[serde(default)]
        inbound: Option<InboundConfig>,
    },
}

impl ChannelConfig {
    /// The `type:` this entry was written with.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Webhook { .. } => "webhook",
            Self::Telegram { .. } => "telegram",
            Self::Slack { .. } => "slack",
            Self::Discord { .. } => "discord",
            Self::Whatsapp { .. } => "whatsapp",
            Self::Matrix { .. } => "matrix",
        }
    }

    /// Where this channel sends: the webhook's `url`, or the provider's `api_base` (its
    /// public default when unset). Every one is an operator destination: writing
    /// `type: telegram` names the provider as surely as writing its URL.
    pub fn operator_url(&self) -> String {
        let or = |base: &Option<String>, default: &str| {
            base.as_deref()
                .map(str::trim)
                .filter(|b| !b.is_empty())
                .unwrap_or(default)
                .trim_end_matches('/')
                .to_string()
        };
        match self {
            Self::Webhook { url, .. } => url.expose().to_string(),
            Self::Telegram { api_base, .. } => or(api_base, DEFAULT_TELEGRAM_API),
            Self::Slack { api_base, .. } => or(api_base, DEFAULT_SLACK_API),
            Self::Discord { api_base, .. } => or(api_base, DEFAULT_DISCORD_API),
            Self::Whatsapp { api_base, .. } => or(api_base, DEFAULT_WHATSAPP_API),
            Self::Matrix { homeserver, .. } => homeserver.trim().trim_end_matches('/').to_string(),
        }
    }

    /// Every credential of this entry (its [`Secret`] fields: a webhook's headers and URL,
    /// a provider's token), for the output redactor.
    pub fn secrets(&self) -> Vec<String> {
        crate::secret::values(self)
    }

    /// Seconds one request may take, when set.
    pub fn timeout_secs(&self) -> Option<u64> {
        match self {
            Self::Webhook { timeout_secs, .. }
            | Self::Telegram { timeout_secs, .. }
            | Self::Slack { timeout_secs, .. }
            | Self::Discord { timeout_secs, .. }
            | Self::Whatsapp { timeout_secs, .. }
            | Self::Matrix { timeout_secs, .. } => *timeout_secs,
        }
    }
}

impl ChannelConfig {
    /// What `tackle daemon` answers on this channel, when it reads it at all.
    pub fn inbound(&self) -> Option<&InboundConfig> {
        match self {
            Self::Telegram { inbound, .. }
            | Self::Slack { inbound, .. }
            | Self::Matrix { inbound, .. } => inbound.as_ref(),
            _ => None,
        }
    }
}

/// `channels.NAME.inbound`: a channel `tackle daemon` reads, and who it answers. With no
/// `allowed_senders` nobody is answered, so a bot added to a public chat stays silent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InboundConfig {
    /// The agent that answers (unset: the first agent, or the built-in `default`).
    #[serde(default)]
    pub agent: Option<String>,
    /// The platform's user ids whose messages are answered; anyone else's are ignored and
    /// audited.
    #[serde(default)]
    pub allowed_senders: Vec<String>,
    /// The user ids whose answer to an approval counts (unset: the allowed senders).
    #[serde(default)]
    pub approvers: Option<Vec<String>>,
    /// How long a call waits for an answer in the chat (or from any front end with the
    /// `approve` scope) before it ends `needs_approval`.
    #[serde(default = "default_inbound_approval_timeout")]
    pub approval_timeout_secs: u64,
    /// Seconds one long poll waits for news.
    #[serde(default = "default_inbound_poll_secs")]
    pub poll_timeout_secs: u64,
}

impl InboundConfig {
    /// Who may answer approvals: `approvers`, or the allowed senders.
    pub fn approvers(&self) -> &[String] {
        self.approvers.as_deref().unwrap_or(&self.allowed_senders)
    }
}

fn default_inbound_approval_timeout() -> u64 {
    300
}

fn default_inbound_poll_secs() -> u64 {
    25
}

/// The providers' public API bases, used when a channel sets no `api_base`.
pub const DEFAULT_TELEGRAM_API: &str = "https://api.telegram.org";
pub const DEFAULT_SLACK_API: &str = "https://slack.com/api";
pub const DEFAULT_DISCORD_API: &str = "https://discord.com/api/v10";
pub const DEFAULT_WHATSAPP_API: &str = "https://graph.facebook.com";

/// `schedules:` how cron expressions are read and how the daemon fires them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchedulesConfig {
    /// The IANA zone cron expressions are evaluated in.
    #[serde(default = "default_timezone")]
    pub timezone: String,
    /// The shortest interval between two fires of one schedule an agent may plant.
    #[serde(default = "default_min_interval_secs")]
    pub min_interval_secs: u64,
    /// Fires that fell due while no daemon ran: `skip` records them as missed, `once` runs
    /// one catch-up fire.
    #[serde(default)]
    pub catch_up: CatchUp,
    /// Runs of one agent's schedules going at once; more wait for a slot.
    #[serde(default = "default_max_concurrent_per_agent")]
    pub max_concurrent_per_agent: usize,
    /// On SIGINT/SIGTERM, how long running fires may take to finish before they are stopped.
    #[serde(default = "default_shutdown_grace_secs")]
    pub shutdown_grace_secs: u64,
    /// How long a daemon's claim on a running fire holds without renewal (it renews every
    /// third of it): after a crash, the schedule fires again this long after the last renewal.
    #[serde(default = "default_lease_secs")]
    pub lease_secs: u64,
    /// How long a fire's call that needs approval waits in the approval queue
    /// (`tackle approvals`) for an answer before it ends `needs_approval`; 0: no one is asked,
    /// such calls end `needs_approval` at once (docs/decisions/0030-one-approval-queue.md).
    #[serde(default = "default_approval_timeout_secs")]
    pub approval_timeout_secs: u64,
}

impl Default for SchedulesConfig {
    fn default() -> Self {
        Self {
            timezone: default_timezone(),
            min_interval_secs: default_min_interval_secs(),
            catch_up: CatchUp::default(),
            max_concurrent_per_agent: default_max_concurrent_per_agent(),
            shutdown_grace_secs: default_shutdown_grace_secs(),
            lease_secs: default_lease_secs(),
            approval_timeout_secs: default_approval_timeout_secs(),
        }
    }
}

/// `schedules.catch_up`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CatchUp {
    #[default]
    Skip,
    Once,
}

fn default_timezone() -> String {
    "UTC".into()
}

fn default_min_interval_secs() -> u64 {
    60
}

fn default_max_concurrent_per_agent() -> usize {
    2
}

fn default_shutdown_grace_secs() -> u64 {
    30
}

fn default_approval_timeout_secs() -> u64 {
    300
}

fn default_lease_secs() -> u64 {
    30
}

/// `transcribe:` the OpenAI-compatible `/audio/transcriptions` server the `transcribe` tool
/// sends audio to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TranscribeConfig {
    /// The API base (`https://api.openai.com/v1` when unset). A base written here is an
    /// operator-written destination: trusted as written (a local server too), still pinned.
    #[serde(default)]
    pub api_base: Option<String>,
    /// Sent as `Authorization: Bearer KEY`; never shown in a result, an error or the audit log.
    #[serde(default)]
    pub api_key: Option<Secret>,
    /// The model to ask for (`whisper-1` when unset).
    #[serde(default)]
    pub model: Option<String>,
    /// Seconds one request may take, upload included (default 60).
    #[serde(default)]
    pub timeout_secs: Option<u64>,
}

impl TranscribeConfig {
    pub const DEFAULT_API_BASE: &'static str = "https://api.openai.com/v1";
    pub const DEFAULT_MODEL: &'static str = "whisper-1";
    pub const DEFAULT_TIMEOUT_SECS: u64 = 60;
}

/// `screenshot:` the headless Chromium the `screenshot` tool drives. The browser never reaches
/// the network itself: every request it makes is answered through the host.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScreenshotConfig {
    /// The Chromium (or Chrome) executable (`/usr/bin/chromium` when unset).
    #[serde(default)]
    pub chromium_path: Option<String>,
}

impl ScreenshotConfig {
    pub const DEFAULT_CHROMIUM_PATH: &'static str = "/usr/bin/chromium";
}

/// `daemon:` front ends `tackle daemon` runs beside the schedule engine.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DaemonConfig {
    /// Also serve MCP over Streamable HTTP at this address (as `tackle mcp serve --http`).
    #[serde(default)]
    pub mcp_http: Option<String>,
}

/// `gateway:` the HTTP API `tackle daemon` serves (an OpenAI-compatible chat endpoint whose
/// models are the agents). Every request needs a bearer token listed here; tokens are kept as
/// SHA-256 hashes so the config never holds one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatewayConfig {
    /// `host:port`; a non-loopback address is refused unless `allow_remote` is set.
    #[serde(default = "default_gateway_bind")]
    pub bind: String,
    #[serde(default)]
    pub allow_remote: bool,
    #[serde(default)]
    pub tokens: Vec<GatewayToken>,
    /// Larger request bodies are refused with 413.
    #[serde(default = "default_gateway_max_body_bytes")]
    pub max_body_bytes: usize,
    /// Requests per minute per token; more are refused with 429.
    #[serde(default = "default_gateway_rate_limit")]
    pub rate_limit_per_minute: u32,
    /// Other origins (`http://localhost:3000`) whose browser requests are served; a request
    /// carrying any other `Origin` is refused with 403. The console's own page (an `Origin`
    /// that is `http://` and this server's checked `Host`) is always served.
    #[serde(default)]
    pub allowed_origins: Vec<String>,
    /// How long a call of an API turn waits in the approval queue for an answer
    /// (`POST /v1/approvals/ID`, `tackle approvals allow ID`) before it ends
    /// `needs_approval`; 0: no one is asked, the call ends `needs_approval` at once.
    #[serde(default = "default_gateway_approval_timeout")]
    pub approval_timeout_secs: u64,
}

fn default_gateway_approval_timeout() -> u64 {
    300
}

impl Default for GatewayConfig {
    fn default() -> Self {
        Self {
            bind: default_gateway_bind(),
            allow_remote: false,
            tokens: Vec::new(),
            max_body_bytes: default_gateway_max_body_bytes(),
            rate_limit_per_minute: default_gateway_rate_limit(),
            allowed_origins: Vec::new(),
            approval_timeout_secs: default_gateway_approval_timeout(),
        }
    }
}

/// One API token of `gateway.tokens`: its name (what the audit log records), the hex SHA-256
/// of the token, and what it may do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatewayToken {
    pub name: String,
    pub sha256: String,
    #[serde(default)]
    pub scopes: Vec<GatewayScope>,
}

/// What a gateway token may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GatewayScope {
    Read,
    Chat,
    Approve,
    Admin,
}

fn default_gateway_bind() -> String {
    "127.0.0.1:8787".to_string()
}

fn default_gateway_max_body_bytes() -> usize {
    1024 * 1024
}

fn default_gateway_rate_limit() -> u32 {
    120
}

/// `services:` credentials of the `services` extension's tools. A tool whose section is
/// missing stays listed and fails with `services.NAME is not configured`. Each section's
/// `api_base` (r8r: `url`) is a destination the operator wrote (docs/architecture.md, "Grants").
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServicesConfig {
    #[serde(default)]
    pub whatsapp: Option<WhatsappConfig>,
    #[serde(default)]
    pub gsheets: Option<GsheetsConfig>,
    #[serde(default)]
    pub stripe: Option<StripeConfig>,
    #[serde(default)]
    pub r8r: Option<R8rConfig>,
    /// The `project` tool's GitHub issues.
    #[serde(default)]
    pub github: GithubServiceConfig,
}

impl ServicesConfig {
    /// Every base URL the operator wrote here, for the host's list of trusted destinations.
    /// r8r has no public default: a configured section means its URL (or the default
    /// `http://localhost:8080`) is the operator's.
    pub fn operator_urls(&self) -> Vec<String> {
        let mut out = Vec::new();
        out.extend(self.whatsapp.as_ref().and_then(|c| c.api_base.clone()));
        out.extend(self.gsheets.as_ref().and_then(|c| c.api_base.clone()));
        out.extend(self.gsheets.as_ref().and_then(|c| c.token_uri.clone()));
        out.extend(self.stripe.as_ref().and_then(|c| c.api_base.clone()));
        out.extend(self.r8r.as_ref().map(R8rConfig::base));
        out
    }

    /// Every credential here (its [`Secret`] fields), for the output redactor.
    pub fn secrets(&self) -> Vec<String> {
        crate::secret::values(self)
    }
}

/// `services.whatsapp`: the WhatsApp Cloud API.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WhatsappConfig {
    /// Sent as `Authorization: Bearer …`.
    pub access_token: Secret,
    /// The sending number's id in the Cloud API (digits).
    pub phone_number_id: String,
    /// Unset = `https://graph.facebook.com`.
    #[serde(default)]
    pub api_base: Option<String>,
}

/// `services.gsheets`: Google Sheets v4, authorised by a service-account key or a token.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GsheetsConfig {
    /// A service-account JSON key; its token is minted (RS256 JWT) and cached.
    #[serde(default)]
    pub service_account_file: Option<String>,
    /// A pre-minted OAuth access token, used instead of a key.
    #[serde(default)]
    pub access_token: Option<Secret>,
    /// Unset = `https://sheets.googleapis.com`.
    #[serde(default)]
    pub api_base: Option<String>,
    /// Where tokens are minted; unset = the key's own `token_uri`.
    #[serde(default)]
    pub token_uri: Option<String>,
}

/// `services.stripe`: the Stripe API.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StripeConfig {
    /// Sent as the Basic-auth user name (empty password).
    pub secret_key: Secret,
    /// Unset = `https://api.stripe.com`.
    #[serde(default)]
    pub api_base: Option<String>,
    /// The endpoint's signing secret (`whsec_…`), for `verify_webhook`.
    #[serde(default)]
    pub webhook_secret: Option<Secret>,
    /// For `create_payment` without `currency`; unset = `usd`.
    #[serde(default)]
    pub currency: Option<String>,
}

/// `services.r8r`: an r8r workflow server.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct R8rConfig {
    /// The server's base URL; unset = `http://localhost:8080`.
    #[serde(default, alias = "api_base")]
    pub url: Option<String>,
    /// Sent as `Authorization: Bearer …` when the server wants one.
    #[serde(default)]
    pub token: Option<Secret>,
}

impl R8rConfig {
    pub const DEFAULT_URL: &'static str = "http://localhost:8080";

    /// The configured base URL, or the default.
    pub fn base(&self) -> String {
        self.url
            .clone()
            .filter(|u| !u.trim().is_empty())
            .unwrap_or_else(|| Self::DEFAULT_URL.to_string())
    }
}

/// `services.github`: the token (else `$GITHUB_TOKEN`) and the API base (default
/// `https://api.github.com`; a GitHub Enterprise base or a local server). The base is written by
/// the operator, so it is a trusted destination even when private.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GithubServiceConfig {
    #[serde(default)]
    pub token: Option<Secret>,
    #[serde(default)]
    pub api_base: Option<String>,
}

impl std::fmt::Debug for GithubServiceConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GithubServiceConfig")
            .field("token", &self.token.as_ref().map(|_| "[redacted]"))
            .field("api_base", &self.api_base)
            .finish()
    }
}

/// `devices:` settings of the `android` and `hardware` tools.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DevicesConfig {
    #[serde(default)]
    pub android: AndroidConfig,
    #[serde(default)]
    pub hardware: HardwareConfig,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AndroidConfig {
    /// `adb -s SERIAL`: the device used when a call names none.
    #[serde(default)]
    pub serial: Option<String>,
    /// Allow the `shell` action (raw commands on the device). Off by default; even on, lines
    /// that chain, substitute, remove recursively, reboot, wipe or format are refused.
    #[serde(default)]
    pub allow_shell: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HardwareConfig {
    /// Serial baud rate for `connect` (default 115200).
    #[serde(default)]
    pub baud: Option<u32>,
    /// Boards at fixed paths the operator names (udev symlinks, `/dev/serial/by-id/…`, a bench
    /// adapter without USB ids). The model names them by `name`; it never writes a path.
    #[serde(default)]
    pub ports: Vec<HardwarePort>,
}

/// One operator-named serial port.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HardwarePort {
    /// What the model calls it (`device`): letters, digits, `_`, `.`, `-`.
    pub name: String,
    /// The device file (`/dev/…`, `COM3`).
    pub path: String,
    /// A line for `list_devices` (e.g. "bench power controller").
    #[serde(default)]
    pub detail: Option<String>,
    /// The board's CPU, when known (e.g. "ARM Cortex-M4").
    #[serde(default)]
    pub architecture: Option<String>,
}
