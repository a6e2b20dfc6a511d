//! `tools:` limits of every tool call, and `web_search:` the search backends.

use crate::secret::Secret;
use serde::{Deserialize, Serialize};

/// `web_search:`: the backends of the `web_search` tool.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebSearchConfig {
    /// Backends tried in order; only an error moves on to the next. Empty: `web_search` fails.
    #[serde(default)]
    pub backends: Vec<SearchBackendConfig>,
}

/// `web_search.backends[].type`: which search API a backend speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SearchBackendType {
    /// Kagi Search API; needs `api_key`.
    Kagi,
    /// Tavily Search API; needs `api_key`.
    Tavily,
    /// Brave Search API; needs `api_key`.
    Brave,
    /// Serper (Google results); needs `api_key`.
    Serper,
    /// A SearXNG instance; needs `url`, no key.
    Searxng,
    /// DuckDuckGo's HTML results; no key.
    Duckduckgo,
}

/// `web_search.backends[]`: one search backend.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchBackendConfig {
    /// `type`: the search API.
    #[serde(rename = "type")]
    pub kind: SearchBackendType,
    /// The API key (usually `${VAR}`); required by every type but `searxng` and `duckduckgo`.
    #[serde(default)]
    pub api_key: Option<Secret>,
    /// The API base; unset: the type's public endpoint (`searxng` has none and needs one).
    #[serde(default)]
    pub url: Option<String>,
}

/// `tools:`: limits that apply to every tool call.
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
    /// Default of `output_limit_bytes`: 51,200 bytes (50 KB) of output per call.
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
