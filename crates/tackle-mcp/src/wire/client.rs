//! The client side: connect to a server (stdio child or Streamable HTTP), list its tools,
//! call them, hear `tools/list_changed`, answer `roots/list`, notice when the connection ends.

use super::child::{self, ChildSpec};
use super::WireError;
use crate::content::{RemoteResult, RemoteTool};
use crate::elicit::{ElicitAnswer, ElicitError, ElicitRequest, ElicitationHandler};
use crate::sampling::{SampleError, SamplingHandler};
use axum::http::{HeaderName, HeaderValue};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationCapability, ErrorData, FormElicitationCapability, Implementation,
    ProtocolVersion, RootsCapabilities,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, RoleClient, RunningService};
use rmcp::transport::auth::AuthClient;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ServiceExt};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
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
    /// Who answers its `sampling/createMessage`, or why nobody does (the config denies it, or
    /// nobody can approve here); the capability is declared only with a sampler.
    pub sampler: Result<Arc<dyn SamplingHandler>, SamplingOff>,
}

/// Why a server's `sampling/createMessage` is answered by nobody (its text is sent back to the
/// server).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SamplingOff {
    /// `mcp_servers.NAME.sampling: deny`.
    #[error("sampling is off for this server (mcp_servers.{server}.sampling: deny)")]
    Denied { server: String },
    /// `sampling: ask`, but this front end has no person to approve a request.
    #[error("sampling needs a person to approve each request, and nobody can be asked here")]
    NobodyToAsk,
}

/// One entry of `roots/list`: a short name and its `file://` URI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RootEntry {
    pub name: String,
    pub uri: String,
}

/// The `roots/list` answer for `roots`: absolute paths only (anything else is left out, never
/// guessed at), each as a `file://` URI, duplicates dropped.
pub(crate) fn root_entries(roots: &[(String, PathBuf)]) -> Vec<RootEntry> {
    let mut out: Vec<RootEntry> = Vec::new();
    for (name, path) in roots {
        if !path.is_absolute() {
            continue;
        }
        let Ok(uri) = url::Url::from_file_path(path) else {
            continue;
        };
        let uri = uri.to_string();
        if out.iter().all(|e| e.uri != uri) {
            out.push(RootEntry {
                name: name.clone(),
                uri,
            });
        }
    }
    out
}

/// Receives the server's notifications and requests.
struct Handler {
    tools_changed: Arc<Notify>,
    elicitor: Elicitor,
    /// What `roots/list` answers, read at each request.
    roots: crate::Roots,
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

    // Sampling is deprecated upstream (SEP-2577) but still part of the protocol servers use.
    #[allow(deprecated)]
    async fn create_message(
        &self,
        params: rmcp::model::CreateMessageRequestParams,
        _cx: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, ErrorData> {
        let server = &self.elicitor.server;
        let sampler = match &self.elicitor.sampler {
            Ok(sampler) => sampler,
            Err(why) => {
                return Err(ErrorData::new(
                    rmcp::model::ErrorCode(-1),
                    why.to_string(),
                    None,
                ))
            }
        };
        let request = crate::sampling::request_from(params)
            .map_err(|why| ErrorData::invalid_params(why.to_string(), None))?;
        match sampler.sample(server, request).await {
            Ok(answer) => Ok(crate::sampling::result_from(answer)),
            Err(e @ (SampleError::Declined | SampleError::Unavailable(_))) => {
                tracing::info!(server = %server, "refused a sampling request: {e}");
                Err(ErrorData::new(
                    rmcp::model::ErrorCode(-1),
                    "User rejected sampling request",
                    None,
                ))
            }
            Err(e) => Err(ErrorData::internal_error(e.to_string(), None)),
        }
    }

    // Roots are deprecated upstream (SEP-2577) but still part of the protocol servers use.
    #[allow(deprecated)]
    async fn list_roots(
        &self,
        _cx: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ListRootsResult, ErrorData> {
        let roots = root_entries(&self.roots.current())
            .into_iter()
            .map(|r| rmcp::model::Root::new(r.uri.clone()).with_name(r.name.clone()))
            .collect();
        Ok(rmcp::model::ListRootsResult::new(roots))
    }

    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if self.roots.declared() {
            // Every change of the list is announced (`Connection::watch`).
            let mut roots = RootsCapabilities::default();
            roots.list_changed = Some(true);
            capabilities.roots = Some(roots);
        }
        if self.elicitor.sampler.is_ok() {
            #[allow(deprecated)]
            let sampling = rmcp::model::SamplingCapability::default();
            capabilities.sampling = Some(sampling);
        }
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
    /// With OAuth: the server's name and token file, where a call refused for want of scope
    /// leaves the server's challenge for the next `tackle mcp login`.
    oauth: Option<(String, PathBuf)>,
}

/// Start a stdio server and complete the MCP handshake.
pub(crate) async fn connect_stdio(
    spec: &ChildSpec<'_>,
    last_stderr: Arc<Mutex<String>>,
    elicitor: Elicitor,
    roots: &crate::Roots,
) -> Result<Connection, WireError> {
    let transport = child::spawn(spec, last_stderr)?;
    let tools_changed = Arc::new(Notify::new());
    let handler = Handler {
        tools_changed: tools_changed.clone(),
        elicitor,
        roots: roots.clone(),
    };
    let service = handler
        .serve(transport)
        .await
        .map_err(|e| WireError::Handshake(super::plain::init_error(&e)))?;
    Ok(Connection::watch(service, tools_changed, roots))
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
    headers: &BTreeMap<String, tackle_protocol::config::Secret>,
    token_file: Option<&std::path::Path>,
    elicitor: Elicitor,
    roots: &crate::Roots,
) -> Result<Connection, WireError> {
    super::install_tls_provider();
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
        roots: roots.clone(),
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
            WireError::Handshake(super::plain::init_error(&e))
        }
    })?;
    let mut conn = Connection::watch(service, tools_changed, roots);
    conn.oauth = token_file.map(|f| (server, f.to_path_buf()));
    Ok(conn)
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
    /// Announces every change of `roots` to the server while the connection lives.
    fn watch(
        service: RunningService<RoleClient, Handler>,
        tools_changed: Arc<Notify>,
        roots: &crate::Roots,
    ) -> Self {
        let peer = service.peer().clone();
        let (tx, closed) = watch::channel(false);
        let stop = tokio_util::sync::CancellationToken::new();
        let stop_task = stop.clone();
        let mut roots_changed = roots.subscribe();
        let mut roots_open = true;
        let announce = peer.clone();
        tokio::spawn(async move {
            let cancel = service.cancellation_token();
            let waiting = service.waiting();
            tokio::pin!(waiting);
            loop {
                tokio::select! {
                    _ = &mut waiting => break,
                    _ = stop_task.cancelled() => {
                        cancel.cancel();
                        let _ = waiting.await;
                        break;
                    }
                    changed = roots_changed.changed(), if roots_open => {
                        if changed.is_err() {
                            // The list can no longer change; keep serving.
                            roots_open = false;
                            continue;
                        }
                        roots_changed.borrow_and_update();
                        if let Err(e) = announce.notify_roots_list_changed().await {
                            tracing::debug!("roots/list_changed not sent: {e}");
                        }
                    }
                }
            }
            let _ = tx.send(true);
        });
        Self {
            peer,
            closed,
            stop,
            tools_changed,
            oauth: None,
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
                let mut tool: RemoteTool = serde_json::from_value(json.clone())
                    .map_err(|e| WireError::Protocol(e.to_string()))?;
                tool.listed = json;
                Ok(tool)
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
        let result = self
            .peer
            .call_tool(params)
            .await
            .map_err(|e| self.call_error(e))?;
        let json = serde_json::to_value(&result).map_err(|e| WireError::Protocol(e.to_string()))?;
        serde_json::from_value(json).map_err(|e| WireError::Protocol(e.to_string()))
    }

    /// A failed call's error; a 401 or 403 challenge becomes `needs login`, and with OAuth an
    /// `insufficient_scope` challenge is kept so the next login asks for that scope.
    fn call_error(&self, e: rmcp::service::ServiceError) -> WireError {
        let Some(challenge) = e.auth_challenge() else {
            return request_error(e);
        };
        let Some((server, token_file)) = &self.oauth else {
            return WireError::Request(format!(
                "the server refused the call's authorization: {challenge}"
            ));
        };
        let insufficient = {
            let base = url::Url::parse("http://127.0.0.1/").ok();
            base.map(|b| {
                rmcp::transport::auth::WWWAuthenticateParams::parse(challenge, &b)
                    .is_insufficient_scope()
            })
            .unwrap_or(false)
        };
        if !insufficient {
            return needs_login(server);
        }
        match auth::record_step_up(token_file, challenge) {
            Some(scope) => WireError::Config(format!(
                "{NEEDS_LOGIN}{server} (this call needs the scope `{scope}`)"
            )),
            None => WireError::Config(format!(
                "{NEEDS_LOGIN}{server} (this call needs more scope)"
            )),
        }
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
        other => WireError::Request(super::plain::service_error(&other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(name: &str, path: &str) -> (String, PathBuf) {
        (name.to_string(), PathBuf::from(path))
    }

    #[test]
    fn roots_are_absolute_file_uris_without_duplicates() {
        let entries = root_entries(&[
            root("workspace", "/work/my project"),
            root("relative", "docs"),
            root("again", "/work/my project"),
            root("data", "/data"),
        ]);
        assert_eq!(
            entries,
            vec![
                RootEntry {
                    name: "workspace".into(),
                    uri: "file:///work/my%20project".into(),
                },
                RootEntry {
                    name: "data".into(),
                    uri: "file:///data".into(),
                },
            ]
        );
    }

    #[test]
    fn the_roots_capability_is_declared_only_with_roots_to_list() {
        let handler = |roots: &[(String, PathBuf)]| Handler {
            tools_changed: Arc::new(Notify::new()),
            elicitor: Elicitor {
                server: "s".into(),
                handler: Arc::new(crate::elicit::DeclineAll),
                sampler: Err(SamplingOff::NobodyToAsk),
            },
            roots: crate::Roots::fixed(roots.to_vec()),
        };
        let none = handler(&[]).get_info();
        assert!(none.capabilities.roots.is_none());
        let some = handler(&[root("workspace", "/work")]).get_info();
        let caps = some.capabilities.roots.as_ref().map(|r| r.list_changed);
        assert_eq!(caps, Some(Some(true)));
    }
}
