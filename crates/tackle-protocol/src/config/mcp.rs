//! `mcp_servers:` the MCP servers Tackle calls, and `mcp:` how `tackle mcp serve` serves.

use crate::secret::Secret;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// An MCP server: a stdio child (`command`) or Streamable HTTP (`url`). Exactly one is set;
/// the binary checks that at load so the error names the server.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// The program to start as a stdio server; exclusive with `url`.
    #[serde(default)]
    pub command: Option<String>,
    /// Arguments passed to `command`.
    #[serde(default)]
    pub args: Vec<String>,
    /// Every value is treated as a credential: redacted wherever it appears.
    #[serde(default)]
    pub env: BTreeMap<String, Secret>,
    /// The directory the stdio server starts in; unset: Tackle's own working directory.
    #[serde(default)]
    pub cwd: Option<String>,
    /// The Streamable HTTP endpoint of a remote server; exclusive with `command`.
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
