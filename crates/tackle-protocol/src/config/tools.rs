//! `tools:` limits of every tool call, and `web_search:` the search backends.

use crate::secret::Secret;
use serde::{Deserialize, Serialize};

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
