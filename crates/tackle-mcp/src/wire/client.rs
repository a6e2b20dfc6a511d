//! The client side: connect to a server (stdio child or Streamable HTTP), list its tools,
//! call them, hear `tools/list_changed`, notice when the connection ends.

use super::child::{self, ChildSpec};
use super::WireError;
use crate::content::{RemoteResult, RemoteTool};
use crate::elicit::{ElicitAnswer, ElicitError, ElicitRequest, ElicitationHandler};
use axum::http::{HeaderName, HeaderValue};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationCapability, ErrorData, FormElicitationCapability, Implementation,
    ProtocolVersion,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, RoleClient, RunningService};
use rmcp::transport::auth::AuthClient;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ServiceExt};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use tokio::sync::{watch, Notify};

pub(crate) use child::ChildSpec as StdioSpec;

pub(crate) mod auth;

/// Who answers a server's `elicitation/create`: the front end's handler, asked on behalf of
/// the server named here.
#[derive(Clone)]
pub(crate) struct Elicitor {
    pub server: String,
    pub handler: Arc<dyn ElicitationHandler>,
}

/// Receives the server's notifications and requests.
struct Handler {
    tools_changed: Arc<Notify>,
    elicitor: Elicitor,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _cx: NotificationContext<RoleClient>) {
        self.tools_changed.notify_one();
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _cx: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let server = &self.elicitor.server;
        // Only forms are declared; a URL (or any other mode) is declined, never opened.
        let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        else {
            tracing::info!(server = %server, "declined an elicitation that is not a form");
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        if !self.elicitor.handler.can_ask() {
            tracing::info!(server = %server, "declined an elicitation: nobody can be asked here");
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        }
        let schema = serde_json::to_value(&requested_schema)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let asked = self
            .elicitor
            .handler
            .elicit(server, ElicitRequest { message, schema })
            .await;
        Ok(match asked {
            Ok(ElicitAnswer::Accept(content)) => {
                ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(content))
            }
            Ok(ElicitAnswer::Decline) => ElicitResult::new(ElicitationAction::Decline),
            Ok(ElicitAnswer::Cancel) => ElicitResult::new(ElicitationAction::Cancel),
            Err(ElicitError::Schema(why)) => return Err(ErrorData::invalid_params(why, None)),
            Err(e @ ElicitError::Unavailable(_)) => {
                tracing::info!(server = %server, "declined an elicitation: {e}");
                ElicitResult::new(ElicitationAction::Decline)
            }
        })
    }

    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if self.elicitor.handler.can_ask() {
            let mut form = FormElicitationCapability::new();
            form.schema_validation = Some(true);
            capabilities.elicitation = Some(ElicitationCapability::new().with_form(form));
        }
        ClientConfig::new(
            capabilities,
            Implementation::new("tackle", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }
}

/// One live connection. Cheap to share: calls go through a cloned peer handle.
pub(crate) struct Connection {
    peer: Peer<RoleClient>,
    closed: watch::Receiver<bool>,
    stop: tokio_util::sync::CancellationToken,
    /// Signalled on every `notifications/tools/list_changed`.
    pub tools_changed: Arc<Notify>,
}

/// Start a stdio server and complete the MCP handshake.
pub(crate) async fn connect_stdio(
    spec: &ChildSpec<'_>,
    last_stderr: Arc<Mutex<String>>,
    elicitor: Elicitor,
) -> Result<Connection, WireError> {
    let transport = child::spawn(spec, last_stderr)?;
    let tools_changed = Arc::new(Notify::new());
    let handler = Handler {
        tools_changed: tools_changed.clone(),
        elicitor,
    };
    let service = handler
        .serve(transport)
        .await
        .map_err(|e| WireError::Handshake(e.to_string()))?;
    Ok(Connection::watch(service, tools_changed))
}

/// The start of the error of a server that needs an OAuth login; the server's name follows.
pub(crate) const NEEDS_LOGIN: &str = "needs login: tackle mcp login ";

fn needs_login(server: &str) -> WireError {
    WireError::Config(format!("{NEEDS_LOGIN}{server}"))
}

/// Is this the error of a server that needs an OAuth login?
pub(crate) fn is_needs_login(e: &WireError) -> bool {
    matches!(e, WireError::Config(m) if m.starts_with(NEEDS_LOGIN))
}

/// Connect to a Streamable HTTP server. Expired sessions are re-initialised by the transport;
/// with `token_file` (OAuth), requests carry the stored token (refreshed when it expires).
pub(crate) async fn connect_http(
    url: &str,
    headers: &BTreeMap<String, String>,
    token_file: Option<&std::path::Path>,
    elicitor: Elicitor,
) -> Result<Connection, WireError> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string())
        .reinit_on_expired_session(true);
    let mut custom = HashMap::new();
    for (name, value) in headers {
        if name.eq_ignore_ascii_case("authorization") {
            if token_file.is_some() {
                continue;
            }
            if let Some(token) = value.strip_prefix("Bearer ") {
                config = config.auth_header(token.to_string());
                continue;
            }
        }
        let n = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| WireError::InvalidHeader(name.clone()))?;
        let v = HeaderValue::from_str(value).map_err(|_| WireError::InvalidHeader(name.clone()))?;
        custom.insert(n, v);
    }
    let config = config.custom_headers(custom);
    let tools_changed = Arc::new(Notify::new());
    let server = elicitor.server.clone();
    let handler = Handler {
        tools_changed: tools_changed.clone(),
        elicitor,
    };
    let service = match token_file {
        None => {
            let transport = StreamableHttpClientTransport::from_config(config);
            handler.serve(transport).await
        }
        Some(token_file) => {
            if !auth::has_token(token_file) {
                return Err(needs_login(&server));
            }
            let mut manager = auth::manager(url, token_file)
                .await
                .map_err(|e| WireError::Handshake(format!("OAuth: {e}")))?;
            match manager.initialize_from_store().await {
                Ok(true) => {}
                Ok(false) => return Err(needs_login(&server)),
                Err(e) => return Err(WireError::Handshake(format!("OAuth: {e}"))),
            }
            let client = AuthClient::new(reqwest::Client::default(), manager);
            let transport = StreamableHttpClientTransport::with_client(client, config);
            handler.serve(transport).await
        }
    };
    let service = service.map_err(|e| {
        if wants_authorization(&e) {
            needs_login(&server)
        } else {
            WireError::Handshake(e.to_string())
        }
    })?;
    Ok(Connection::watch(service, tools_changed))
}

/// Did the handshake fail because the server wants (other) authorization: a 401 or 403
/// challenge, or OAuth tokens that can no longer be used or refreshed?
fn wants_authorization(e: &(dyn std::error::Error + 'static)) -> bool {
    const SIGNS: &[&str] = &[
        "Auth required",
        "Insufficient scope",
        "OAuth authorization required",
        "OAuth refresh token was rejected",
    ];
    let mut next = Some(e);
    while let Some(err) = next {
        let text = err.to_string();
        if SIGNS.iter().any(|s| text.contains(s)) {
            return true;
        }
        next = err.source();
    }
    false
}

impl Connection {
    /// Own the running service in a task that flags `closed` when its loop ends.
    fn watch(service: RunningService<RoleClient, Handler>, tools_changed: Arc<Notify>) -> Self {
        let peer = service.peer().clone();
        let (tx, closed) = watch::channel(false);
        let stop = tokio_util::sync::CancellationToken::new();
        let stop_task = stop.clone();
        tokio::spawn(async move {
            let cancel = service.cancellation_token();
            let waiting = service.waiting();
            tokio::pin!(waiting);
            tokio::select! {
                _ = &mut waiting => {}
                _ = stop_task.cancelled() => {
                    cancel.cancel();
                    let _ = waiting.await;
                }
            }
            let _ = tx.send(true);
        });
        Self {
            peer,
            closed,
            stop,
            tools_changed,
        }
    }

    /// Every tool the server lists (all pages).
    pub async fn list_tools(&self) -> Result<Vec<RemoteTool>, WireError> {
        let tools = self.peer.list_all_tools().await.map_err(request_error)?;
        tools
            .into_iter()
            .map(|t| {
                let json =
                    serde_json::to_value(&t).map_err(|e| WireError::Protocol(e.to_string()))?;
                serde_json::from_value(json).map_err(|e| WireError::Protocol(e.to_string()))
            })
            .collect()
    }

    /// Call `name` with `arguments` (an object; anything else is sent as `{}`).
    pub async fn call(&self, name: &str, arguments: Value) -> Result<RemoteResult, WireError> {
        let args = match arguments {
            Value::Object(map) => Value::Object(map),
            _ => Value::Object(Default::default()),
        };
        let params: CallToolRequestParams =
            serde_json::from_value(serde_json::json!({"name": name, "arguments": args}))
                .map_err(|e| WireError::Protocol(e.to_string()))?;
        let result = self.peer.call_tool(params).await.map_err(request_error)?;
        let json = serde_json::to_value(&result).map_err(|e| WireError::Protocol(e.to_string()))?;
        serde_json::from_value(json).map_err(|e| WireError::Protocol(e.to_string()))
    }

    /// Does the server still answer? `false` on an error or no reply within `timeout`.
    pub async fn ping(&self, timeout: std::time::Duration) -> bool {
        let ping = self
            .peer
            .send_request(rmcp::model::ClientRequest::PingRequest(Default::default()));
        matches!(tokio::time::timeout(timeout, ping).await, Ok(Ok(_)))
    }

    /// Resolves when the connection has ended (child exited, stream closed, or `close`).
    pub async fn closed(&self) {
        let mut rx = self.closed.clone();
        let _ = rx.wait_for(|c| *c).await;
    }

    /// End the connection; a stdio child is killed when its transport drops.
    pub async fn close(&self) {
        self.stop.cancel();
        self.closed().await;
    }
}

fn request_error(e: rmcp::service::ServiceError) -> WireError {
    match e {
        rmcp::service::ServiceError::TransportClosed => WireError::Closed,
        rmcp::service::ServiceError::McpError(data) => WireError::Request(data.message.to_string()),
        other => WireError::Request(other.to_string()),
    }
}
