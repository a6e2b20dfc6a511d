//! Typed configuration: every key of `config.example.yaml`.
//!
//! These are plain data. Loading (file search order, `${VAR}` interpolation, `TACKLE_*`
//! overrides, path-named errors) happens once in the binary, which hands these structs down;
//! no library crate reads configuration on its own (docs/architecture.md).
//!
//! Every struct denies unknown fields so a typo is an error naming its path.
//!
//! One file per section of the document; [`Config`] (in `root.rs`) ties them together. Every
//! type is re-exported here, so `tackle_protocol::config::Xyz` is the one path callers use.

mod agents;
mod backends;
mod channels;
mod daemon;
mod devices;
mod mcp;
mod media;
mod memory;
mod plugins;
mod profiles;
mod root;
mod schedules;
mod security;
mod services;
mod tools;

pub use crate::secret::Secret;
pub use agents::{AgentConfig, ExtensionsConfig, PresetConfig, WorkerConfig};
pub use backends::{BackendConfig, BackendTimeouts, BackendType, ModelConfig};
pub use channels::{
    ChannelConfig, InboundConfig, DEFAULT_DISCORD_API, DEFAULT_SLACK_API, DEFAULT_TELEGRAM_API,
    DEFAULT_WHATSAPP_API,
};
pub use daemon::{DaemonConfig, GatewayConfig, GatewayScope, GatewayToken};
pub use devices::{AndroidConfig, DevicesConfig, HardwareConfig, HardwarePort};
pub use mcp::{McpOAuthConfig, McpSampling, McpServeConfig, McpServerConfig};
pub use media::{ScreenshotConfig, TranscribeConfig};
pub use memory::MemoryBankConfig;
pub use plugins::{PluginsConfig, SkillsConfig};
pub use profiles::{ProfileMode, ProfileRules, ToolProfileConfig};
pub use root::Config;
pub use schedules::{CatchUp, SchedulesConfig};
pub use security::{SandboxMode, SecurityConfig, TaintRule, ToolPolicyConfig};
pub use services::{
    GithubServiceConfig, GsheetsConfig, R8rConfig, ServicesConfig, StripeConfig, WhatsappConfig,
};
pub use tools::{SearchBackendConfig, SearchBackendType, ToolsConfig, WebSearchConfig};
