//! `backends:` the model servers agents talk to, their models and timeouts.

use crate::secret::Secret;
use serde::{Deserialize, Serialize};

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
