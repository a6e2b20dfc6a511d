//! The client side: connect to a server (stdio child or Streamable HTTP), list its tools,
//! call them, hear `tools/list_changed`, notice when the connection ends.

use super::child::{self, ChildSpec};
use super::WireError;
use crate::content::{RemoteResult, RemoteTool};
use axum::http::{HeaderName, HeaderValue};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion,
};
use rmcp::service::{NotificationContext, Peer, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ServiceExt};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use tokio::sync::{watch, Notify};

pub(crate) use child::ChildSpec as StdioSpec;

/// Receives the server's notifications.
struct Handler {
    tools_changed: Arc<Notify>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _cx: NotificationContext<RoleClient>) {
        self.tools_changed.notify_one();
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
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
) -> Result<Connection, WireError> {
    let transport = child::spawn(spec, last_stderr)?;
    let tools_changed = Arc::new(Notify::new());
    let handler = Handler {
        tools_changed: tools_changed.clone(),
    };
    let service = handler
        .serve(transport)
        .await
        .map_err(|e| WireError::Handshake(e.to_string()))?;
    Ok(Connection::watch(service, tools_changed))
}

/// Connect to a Streamable HTTP server. Expired sessions are re-initialised by the transport.
pub(crate) async fn connect_http(
    url: &str,
    headers: &BTreeMap<String, String>,
) -> Result<Connection, WireError> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string())
        .reinit_on_expired_session(true);
    let mut custom = HashMap::new();
    for (name, value) in headers {
        if name.eq_ignore_ascii_case("authorization") {
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
    let transport = StreamableHttpClientTransport::from_config(config.custom_headers(custom));
    let tools_changed = Arc::new(Notify::new());
    let handler = Handler {
        tools_changed: tools_changed.clone(),
    };
    let service = handler
        .serve(transport)
        .await
        .map_err(|e| WireError::Handshake(e.to_string()))?;
    Ok(Connection::watch(service, tools_changed))
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
