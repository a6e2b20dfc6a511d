//! MCP tool pins over HTTP (docs/decisions/0031-mcp-tool-pinning.md): every configured
//! server's tools against their pins (scope `read`), the quarantined ones with the review
//! `tackle mcp trust` prints, and the acceptance of one (scope `admin`).
//!
//! A quarantined tool's offered definition is only what the server says now, held in the
//! memory of whichever process listed it; the daemon's agents start their servers at their
//! first turn, maybe never. So each request starts the configured servers afresh through
//! the MCP client `tackle mcp pins` and `trust` use, waits (bounded) for them to list their
//! tools, asks, and stops them. An acceptance names the digest of the definition the
//! operator reviewed; a server that offers another one by then gets nothing pinned (409).

use super::auth::Caller;
use super::errors::ApiError;
use super::Gateway;
use crate::cli::Global;
use crate::mcp_pins::report::{self, PinRow};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;
use tackle_mcp::pinning::{clean::reveal, PinnedBy, Trusted};
use tackle_mcp::{McpManager, ServerState, ToolPinStatus};
use tackle_protocol::config::Config;
use tackle_protocol::ErrorKind;
use tackle_store::Store;

/// How long a request waits for the servers to start and list their tools (a server's own
/// default start-up timeout); one still starting after it is reported as such.
const LISTING_TIMEOUT: Duration = Duration::from_secs(30);

/// What starting the configured servers takes, and the lock that keeps it to one at a time
/// (each start spawns every configured server).
pub struct McpServers {
    global: Global,
    config: Config,
    store: Store,
    one_at_a_time: tokio::sync::Mutex<()>,
}

/// The servers started for one request; stopped by [`Started::stop`].
struct Started<'a> {
    mcp: Arc<McpManager>,
    _one: tokio::sync::MutexGuard<'a, ()>,
}

impl Started<'_> {
    async fn stop(self) {
        self.mcp.shutdown().await;
    }
}

impl McpServers {
    pub fn new(global: &Global, config: &Config, store: &Store) -> Self {
        Self {
            global: global.clone(),
            config: config.clone(),
            store: store.clone(),
            one_at_a_time: tokio::sync::Mutex::new(()),
        }
    }

    fn configured(&self, server: &str) -> bool {
        self.config.mcp_servers.contains_key(server)
    }

    /// Every configured server started and given [`LISTING_TIMEOUT`] to list its tools;
    /// `None` when none is configured.
    async fn start(&self) -> Result<Option<Started<'_>>, ApiError> {
        let one = self.one_at_a_time.lock().await;
        let mcp = crate::app::start_mcp_servers(&self.global, &self.config, &self.store)
            .map_err(|e| ApiError::failed(format!("cannot start the MCP servers: {e}")))?;
        let Some(mcp) = mcp else {
            return Ok(None);
        };
        mcp.wait_settled(LISTING_TIMEOUT).await;
        Ok(Some(Started { mcp, _one: one }))
    }
}

/// A configured server and whether it listed its tools.
#[derive(Debug, Serialize, JsonSchema)]
pub struct McpServerView {
    /// Its name under `mcp_servers`.
    pub name: String,
    /// `ready` (its tools are below), `starting` (it did not list them in time) or `failed`.
    pub state: String,
    /// Why it failed.
    pub error: Option<String>,
}

/// A quarantined tool, with what the operator reviews before accepting it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct QuarantinedTool {
    #[serde(flatten)]
    pub tool: PinRow,
    /// Why it is quarantined: `changed since it was pinned`, …
    pub why: String,
    /// The pinned definition (canonical JSON); empty when its pins could not be read.
    pub pinned_definition: String,
    /// The definition the server offers now (canonical JSON); its digest is `digest`, the one
    /// an acceptance names.
    pub offered_definition: String,
    /// The pinned and the offered definitions' pretty JSON as a line diff (`-` pinned, `+`
    /// offered), as `tackle mcp trust` shows it. In these four texts hidden characters are
    /// written out as `<U+XXXX>`.
    pub diff: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct McpToolList {
    pub servers: Vec<McpServerView>,
    /// Tools not offered to the model until an operator accepts them.
    pub quarantined: Vec<QuarantinedTool>,
    /// Every other tool: offered (pinned, or to be pinned at its first use) or pinned and no
    /// longer offered (`not_offered`).
    pub tools: Vec<PinRow>,
}

/// The definition to accept, by the digest of the one reviewed.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AcceptRequest {
    /// The offered definition's `digest` as `GET /v1/mcp/tools` showed it.
    #[schemars(regex(pattern = r"^sha256:[0-9a-f]{64}$"))]
    pub digest: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Accepted {
    pub server: String,
    /// The tool's name as the server lists it.
    pub tool: String,
    pub registry_name: String,
    /// The digest pinned.
    pub digest: String,
    /// `operator (API token `NAME`)`.
    pub pinned_by: String,
}

fn server_view(status: tackle_mcp::ServerStatus) -> McpServerView {
    let (state, error) = match status.state {
        ServerState::Ready => ("ready", None),
        ServerState::Starting => ("starting", None),
        ServerState::Failed(why) => ("failed", Some(crate::errors::plain(&why))),
    };
    McpServerView {
        name: status.name,
        state: state.to_string(),
        error,
    }
}

pub async fn list(State(gw): State<Arc<Gateway>>) -> Result<Json<McpToolList>, ApiError> {
    let (servers, offered) = match gw.mcp.start().await? {
        Some(started) => {
            let listed = (
                started.mcp.status().await,
                started.mcp.pin_status(None).await,
            );
            started.stop().await;
            listed
        }
        None => (Vec::new(), Vec::new()),
    };
    let stored = gw
        .store
        .mcp_pins(None)
        .await
        .map_err(|e| ApiError::failed(format!("cannot read the MCP tool pins: {e}")))?;
    let (quarantined, tools): (Vec<PinRow>, Vec<PinRow>) = report::rows(&offered, &stored)
        .into_iter()
        .partition(PinRow::quarantined);
    let quarantined = quarantined
        .into_iter()
        .filter_map(|row| {
            let status = offered
                .iter()
                .find(|s| s.server == row.server && s.tool == row.tool)?;
            let review = report::review(status);
            Some(QuarantinedTool {
                tool: row,
                why: review.why,
                pinned_definition: reveal(&review.pinned),
                offered_definition: reveal(&status.definition),
                diff: review.diff,
            })
        })
        .collect();
    Ok(Json(McpToolList {
        servers: servers.into_iter().map(server_view).collect(),
        quarantined,
        tools,
    }))
}

pub async fn accept(
    State(gw): State<Arc<Gateway>>,
    Extension(caller): Extension<Caller>,
    Path((server, tool)): Path<(String, String)>,
    body: Result<Json<AcceptRequest>, axum::extract::rejection::JsonRejection>,
) -> Result<Json<Accepted>, ApiError> {
    let Json(request) = body.map_err(|e| ApiError::bad_request(e.body_text()))?;
    if !is_digest(&request.digest) {
        return Err(ApiError::bad_request(
            "`digest` is `sha256:` and 64 lowercase hex digits, as GET /v1/mcp/tools shows it",
        ));
    }
    let unknown = || {
        ApiError::not_found(format!(
            "no MCP server `{}` under `mcp_servers`; GET /v1/mcp/tools lists them",
            tackle_protocol::text::preview(&server, 100)
        ))
    };
    if !gw.mcp.configured(&server) {
        return Err(unknown());
    }
    let Some(started) = gw.mcp.start().await? else {
        return Err(unknown());
    };
    let by = PinnedBy::Token(caller.name.clone());
    let accepted = accept_in(&started.mcp, &server, &tool, &request.digest, by).await;
    started.stop().await;
    let accepted = accepted?;
    // The agents' own copies of the server offer it from their next turn.
    gw.turns.reload_mcp_pins(&server).await;
    Ok(Json(accepted))
}

async fn accept_in(
    mcp: &McpManager,
    server: &str,
    tool: &str,
    digest: &str,
    by: PinnedBy,
) -> Result<Accepted, ApiError> {
    let state = mcp
        .status()
        .await
        .into_iter()
        .find(|s| s.name == server)
        .map(|s| s.state);
    match state {
        Some(ServerState::Ready) => {}
        Some(ServerState::Failed(why)) => {
            return Err(unavailable(format!(
                "MCP server `{server}` is not running ({}): its tools can be accepted once it lists them",
                crate::errors::plain(&why)
            )))
        }
        _ => {
            return Err(unavailable(format!(
                "MCP server `{server}` did not list its tools within {}s: nothing to accept yet",
                LISTING_TIMEOUT.as_secs()
            )))
        }
    }
    let offered = mcp.pin_status(Some(server)).await;
    let Some(status) = offered
        .iter()
        .find(|s| s.tool == tool || s.registry_name == tool)
    else {
        return Err(not_offered(server, tool, &offered));
    };
    let label = by.label();
    match mcp.trust(server, &status.tool, Some(digest), by).await {
        Ok(Trusted::Pinned(digest)) => {
            tracing::info!(server = %server, tool = %status.tool, digest = %digest, by = %label, "MCP tool accepted through the API");
            Ok(Accepted {
                server: server.to_string(),
                tool: status.tool.clone(),
                registry_name: status.registry_name.clone(),
                digest,
                pinned_by: label,
            })
        }
        Ok(Trusted::NotOffered) => Err(not_offered(server, tool, &offered)),
        Ok(Trusted::Differs(now)) => Err(ApiError::new(
            StatusCode::CONFLICT,
            ErrorKind::Denied,
            format!(
                "MCP server `{server}` now offers `{}` with another definition ({now}) than the one reviewed ({digest}); nothing was pinned: GET /v1/mcp/tools shows it as it is now",
                status.tool
            ),
        )),
        Err(e) => Err(ApiError::failed(e.to_string())),
    }
}

fn unavailable(message: String) -> ApiError {
    ApiError::new(StatusCode::SERVICE_UNAVAILABLE, ErrorKind::Failed, message)
}

fn not_offered(server: &str, tool: &str, offered: &[ToolPinStatus]) -> ApiError {
    let names: Vec<&str> = offered.iter().map(|s| s.tool.as_str()).collect();
    ApiError::not_found(format!(
        "MCP server `{server}` offers no tool `{}` (it offers: {})",
        tackle_protocol::text::preview(tool, 100),
        names.join(", ")
    ))
}

/// `sha256:` and 64 lowercase hex digits.
fn is_digest(text: &str) -> bool {
    text.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .chars()
                .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_digest_is_sha256_and_64_lowercase_hex_digits() {
        let good = format!("sha256:{}", "0a".repeat(32));
        assert!(super::is_digest(&good));
        assert!(!super::is_digest(&good.to_uppercase()));
        assert!(!super::is_digest(&good[..good.len() - 1]));
        assert!(!super::is_digest(&format!("sha1:{}", "0a".repeat(32))));
        assert!(!super::is_digest("sha256:"));
    }
}
