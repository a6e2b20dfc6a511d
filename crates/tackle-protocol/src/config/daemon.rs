//! `daemon:` and `gateway:`: the front ends `tackle daemon` serves.

use serde::{Deserialize, Serialize};

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
    /// Allow a non-loopback `bind` (default false).
    #[serde(default)]
    pub allow_remote: bool,
    /// The bearer tokens accepted (`gateway.tokens[]`); none: every request is refused.
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
    /// What the audit log records for requests with this token (never the token itself).
    pub name: String,
    /// Hex SHA-256 of the token (`printf %s "$TOKEN" | sha256sum`); the token is never kept.
    pub sha256: String,
    /// What the token may do; `admin` implies every other scope. Default: nothing.
    #[serde(default)]
    pub scopes: Vec<GatewayScope>,
}

/// What a gateway token may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GatewayScope {
    /// `GET /v1/models`.
    Read,
    /// `POST /v1/chat/completions`.
    Chat,
    /// `GET` / `POST /v1/approvals`: list and answer pending approvals.
    Approve,
    /// Every endpoint, whatever its scope.
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
