//! [`Config`]: the whole document, one field per top-level section.

use super::{
    AgentConfig, BackendConfig, ChannelConfig, DaemonConfig, DevicesConfig, GatewayConfig,
    McpServeConfig, McpServerConfig, MemoryBankConfig, PluginsConfig, PresetConfig,
    SchedulesConfig, ScreenshotConfig, SecurityConfig, ServicesConfig, SkillsConfig,
    ToolProfileConfig, ToolsConfig, TranscribeConfig, WebSearchConfig,
};
use crate::secret::Secret;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The whole configuration document (`config.yaml`); every section is optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// SQLite store: sessions, memory, schedules, audit log.
    #[serde(default)]
    pub state_dir: Option<String>,
    /// Where the state daemons must agree on lives (sessions, memory, schedules and fires,
    /// approvals, the audit log, MCP pins, the channels' inbox): unset or `sqlite://` (the
    /// file in `state_dir`), or `postgres://USER:PASSWORD@HOST:PORT/DB?sslmode=require`,
    /// shared by every daemon that names it (docs/scale-out.md).
    #[serde(default)]
    pub state_url: Option<Secret>,
    /// Default workspace for fs and shell tools.
    #[serde(default)]
    pub workspace: Option<String>,
    /// Model servers (`backends[]`); none: a backend is discovered from the environment.
    #[serde(default)]
    pub backends: Vec<BackendConfig>,
    /// Agents (`agents[]`); the first is the default. None: a built-in default agent.
    #[serde(default)]
    pub agents: Vec<AgentConfig>,
    /// Approvals, tool policies and grants, the sandbox mode and taint rules (`security:`).
    #[serde(default)]
    pub security: SecurityConfig,
    /// Named tool profiles (`tool_profiles.NAME`), picked by `agents[].tool_profile`.
    #[serde(default)]
    pub tool_profiles: BTreeMap<String, ToolProfileConfig>,
    /// Named bundles of model, backend, tool profile, `max_iterations` and a system-prompt
    /// addition (`presets.NAME`), named by `agents[].preset`, `workers[].preset` and the
    /// `preset` argument of `spawn_agent` / `spawn_worker`.
    #[serde(default)]
    pub presets: BTreeMap<String, PresetConfig>,
    /// MCP servers whose tools agents get (`mcp_servers.NAME`), each a command or a URL.
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, McpServerConfig>,
    /// What `tackle mcp serve` exposes (`mcp:`).
    #[serde(default)]
    pub mcp: McpServeConfig,
    /// The `web_search` tool's backends (`web_search.backends`); none: the tool fails until one is
    /// set.
    #[serde(default)]
    pub web_search: WebSearchConfig,
    /// Limits of every tool call (`tools:`).
    #[serde(default)]
    pub tools: ToolsConfig,
    /// Where argv-template plugins are loaded from, and which may load (`plugins:`).
    #[serde(default)]
    pub plugins: PluginsConfig,
    /// Where skills are read and installed from (`skills:`).
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
