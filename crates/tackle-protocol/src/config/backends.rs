//! `backends:` the model servers agents talk to, their models and timeouts.

use crate::secret::Secret;
use serde::{Deserialize, Serialize};

/// `backends[].type`: which wire format the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BackendType {
    /// Any OpenAI-compatible Chat Completions server.
    Openai,
    /// Anthropic Messages API.
    Anthropic,
}

/// `backends[]`: one model server and the models it offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackendConfig {
    /// The name agents, presets and `--backend` refer to it by; also named in every error.
    pub name: String,
    /// `type`: `openai` (any Chat Completions server) or `anthropic`.
    #[serde(rename = "type")]
    pub kind: BackendType,
    /// The URL requests are built on; a bare host means its `/v1`. Unset: the vendor's own API.
    #[serde(default)]
    pub api_base: Option<String>,
    /// The key, usually `${VAR}`; optional for OpenAI-compatible servers, required for `anthropic`.
    #[serde(default)]
    pub api_key: Option<Secret>,
    /// The models it serves (`models[]`); the first is the default when an agent names none.
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
    /// Seconds to connect when `connect_secs` is unset.
    pub const DEFAULT_CONNECT_SECS: u64 = 10;
    /// Seconds to the first byte when `first_byte_secs` is unset.
    pub const DEFAULT_FIRST_BYTE_SECS: u64 = 60;
    /// Seconds a stream may stay silent when `idle_secs` is unset.
    pub const DEFAULT_IDLE_SECS: u64 = 60;
}

/// `backends[].models[]`: one model a backend serves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// The model name as the server knows it (e.g. `qwen2.5:7b`).
    pub name: String,
    /// Context window in tokens, for trimming; a conservative default applies when unset.
    #[serde(default)]
    pub context_window: Option<u32>,
}
