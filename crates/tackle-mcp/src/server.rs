//! `tackle mcp serve`: Tackle's tool registry served over MCP, every call through the full
//! dispatcher (validation, policy, approval, sandbox, sanitizer) behind [`ToolService`].

use crate::wire::server::{self as wire, Handler};
use crate::McpError;
use async_trait::async_trait;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::Arc;
use tackle_protocol::text::preview;
use tackle_protocol::{
    ApprovalAnswer, ApprovalRequest, Approver, ProgressSink, ToolCall, ToolError, ToolOutput,
    ToolSpec,
};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// What the MCP server serves. The agent's dispatcher implements it; tests use fakes.
#[async_trait]
pub trait ToolService: Send + Sync {
    /// The tools to list, in registry order.
    fn tools(&self) -> Vec<ToolSpec>;
    /// One call through the whole pipeline. `approver` asks the MCP client's user (or says
    /// no one can be asked, so the call ends as `needs_approval`). `session` names the MCP
    /// session the call came in on (`stdio`, or one per Streamable HTTP session): what a person
    /// allowed "for the session" holds in that session only.
    async fn call(
        &self,
        call: ToolCall,
        approver: Arc<dyn Approver>,
        session: &str,
    ) -> Result<ToolOutput, ToolError>;

    /// [`call`](Self::call) that the MCP client can stop: `cancel` fires when the client sends
    /// `notifications/cancelled` for the request, or when its session or connection ends. This
    /// is what the server calls. A service that runs processes passes `cancel` down, so they are
    /// killed and the stop is recorded; the default stops waiting and drops the call.
    /// `progress`, when the client asked for progress, takes the tool's output lines as they
    /// come (the default ignores it).
    async fn call_cancellable(
        &self,
        call: ToolCall,
        approver: Arc<dyn Approver>,
        session: &str,
        cancel: CancellationToken,
        _progress: Option<Arc<dyn ProgressSink>>,
    ) -> Result<ToolOutput, ToolError> {
        let name = call.name.clone();
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(ToolError::failed(format!(
                "`{name}` was cancelled by the MCP client"
            ))),
            outcome = self.call(call, approver, session) => outcome,
        }
    }

    /// A `tools/call` refused before it could be a call (no tool name, arguments that are not
    /// an object): the service records the refusal as it records its own, and returns the
    /// error as the client may see it. The default records nothing.
    async fn refused(&self, _call: ToolCall, _session: &str, error: ToolError) -> ToolError {
        error
    }

    /// Whether `tool` is another MCP server's tool passed through (it reaches whatever that
    /// server reaches): its `openWorldHint`. The default: none is.
    fn passes_through(&self, _tool: &ToolSpec) -> bool {
        false
    }

    /// A receiver that is marked changed whenever the tool list may have changed (MCP servers
    /// behind this one added or dropped tools); every session then sends the client
    /// `notifications/tools/list_changed`. `None`, the default: the list never changes, and
    /// the server says so (`tools.listChanged: false`).
    fn tool_changes(&self) -> Option<watch::Receiver<u64>> {
        None
    }
}

/// Serve over stdin/stdout until the client disconnects.
pub async fn serve_stdio(service: Arc<dyn ToolService>) -> Result<(), McpError> {
    wire::serve_stdio(Handler::new(service, "stdio"))
        .await
        .map_err(|e| McpError::Serve(e.to_string()))
}

/// Serve Streamable HTTP at `http://ADDR/mcp` until the process ends. A non-loopback
/// address requires a bearer token.
pub async fn serve_http(
    service: Arc<dyn ToolService>,
    addr: SocketAddr,
    bearer_token: Option<String>,
) -> Result<(), McpError> {
    let listener = bind_http(addr, bearer_token.as_deref()).await?;
    serve_http_on(service, listener, bearer_token, CancellationToken::new()).await
}

/// The listener [`serve_http_on`] serves: refuses a non-loopback address without a bearer
/// token before binding. With port 0 the system picks one (`local_addr` tells which).
pub async fn bind_http(
    addr: SocketAddr,
    bearer_token: Option<&str>,
) -> Result<tokio::net::TcpListener, McpError> {
    check_bind(addr, bearer_token)?;
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| McpError::Bind {
            addr,
            why: e.to_string(),
        })
}

/// [`serve_http`] on a bound listener, stopping when `cancel` fires (tests bind port 0).
pub async fn serve_http_on(
    service: Arc<dyn ToolService>,
    listener: tokio::net::TcpListener,
    bearer_token: Option<String>,
    cancel: CancellationToken,
) -> Result<(), McpError> {
    let addr = listener
        .local_addr()
        .map_err(|e| McpError::Serve(e.to_string()))?;
    check_bind(addr, bearer_token.as_deref())?;
    let mcp = wire::http_service(
        Handler::new(service, "http"),
        allowed_hosts(addr),
        cancel.child_token(),
    );
    let token = Arc::new(bearer_token.filter(|t| !t.is_empty()));
    let local = Arc::new(LocalOnly::for_bind(addr));
    // Layers run outside in: the browser guard first, then the token.
    let router = axum::Router::new()
        .route_service("/mcp", mcp)
        .layer(axum::middleware::from_fn(session_ended_ok))
        .layer(axum::middleware::from_fn_with_state(token, require_bearer))
        .layer(axum::middleware::from_fn_with_state(local, require_local));
    axum::serve(listener, router)
        .with_graceful_shutdown(cancel.cancelled_owned())
        .await
        .map_err(|e| McpError::Serve(e.to_string()))
}

fn check_bind(addr: SocketAddr, token: Option<&str>) -> Result<(), McpError> {
    if !addr.ip().is_loopback() && token.is_none_or(str::is_empty) {
        return Err(McpError::TokenRequired { addr });
    }
    Ok(())
}

/// The names this machine answers to from a browser on it.
const LOOPBACK_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// `Host` values accepted (DNS-rebinding guard): loopback names, plus the bound address
/// when it is a specific non-loopback one. An unspecified bind (`0.0.0.0`) cannot know its
/// names, so the check is off there and the required token is the guard.
fn allowed_hosts(addr: SocketAddr) -> Vec<String> {
    if addr.ip().is_unspecified() {
        return Vec::new();
    }
    let mut hosts: Vec<String> = LOOPBACK_NAMES.map(String::from).to_vec();
    if !addr.ip().is_loopback() {
        hosts.push(addr.ip().to_string());
    }
    hosts
}

/// The browser guard (the MCP transport spec's "servers MUST validate the Origin header").
///
/// A web page the user visits can make their browser send requests to `127.0.0.1`; Tackle
/// must never run a tool for one. So:
/// - `Origin`, when present (browsers send it on every cross-origin request and on every
///   POST), must be `http` or `https` on a loopback name, any port (a page this machine
///   serves itself), or on the specific address bound. Everything else is refused with 403,
///   `Origin: null` included: browsers send `null` from sandboxed frames, `file:` and `data:`
///   pages and after cross-site redirects, all of which a remote page can produce. No
///   `Origin` at all is a non-browser client (an agent, `curl`) and passes, to the token check.
/// - `Host` must be one of [`allowed_hosts`] when the list is not empty (DNS rebinding: a
///   page on `evil.example` whose name is re-pointed at 127.0.0.1 is same-origin with us in
///   the browser's eyes and sends no foreign `Origin`, but its `Host` still says
///   `evil.example`). It costs one header comparison. The SDK checks `Host` too; it is checked
///   here as well so that the guard does not depend on an SDK default.
///
/// Tackle's HTTP API (the daemon's gateway) uses the same guard with an exact list of origins
/// instead of the loopback names ([`Self::with_exact_origins`]).
pub struct LocalOnly {
    /// Accepted `Host` names; empty turns the `Host` check off (an unspecified bind).
    hosts: Vec<String>,
    /// Accepted `Origin` host names (any port, `http` or `https`).
    origin_hosts: Vec<String>,
    /// When set, only these serialised origins (lower-cased, no trailing `/`) pass.
    exact_origins: Option<Vec<String>>,
}

impl LocalOnly {
    /// The guard for a server bound at `addr`: loopback names (and `addr`'s own IP when it is
    /// neither loopback nor unspecified) are accepted as origins, and the names that reach
    /// `addr` as `Host` (none checked for an unspecified address).
    pub fn for_bind(addr: SocketAddr) -> Self {
        let mut origin_hosts: Vec<String> = LOOPBACK_NAMES.map(String::from).to_vec();
        if !addr.ip().is_loopback() && !addr.ip().is_unspecified() {
            origin_hosts.push(addr.ip().to_string());
        }
        Self {
            hosts: allowed_hosts(addr),
            origin_hosts,
            exact_origins: None,
        }
    }

    /// Browser requests are served only from these origins (`http://localhost:3000`,
    /// compared without case); an empty list refuses every request carrying an `Origin`.
    pub fn with_exact_origins(mut self, origins: &[String]) -> Self {
        self.exact_origins = Some(
            origins
                .iter()
                .map(|o| o.trim_end_matches('/').to_ascii_lowercase())
                .collect(),
        );
        self
    }

    /// A page this server served itself (the gateway's console): `Origin` is exactly
    /// `http://` and the `Host` header, and that `Host` is one the Host check below accepts
    /// (a name of this machine), so a rebound foreign name never counts. With the Host check
    /// off (an unspecified bind) no origin is its own: those must be listed.
    fn same_origin(&self, origin: &str, headers: &axum::http::HeaderMap) -> bool {
        if self.hosts.is_empty() {
            return false;
        }
        let mut hosts = headers.get_all(axum::http::header::HOST).iter();
        let (Some(host), None) = (hosts.next(), hosts.next()) else {
            return false;
        };
        let Ok(host) = host.to_str() else {
            return false;
        };
        let known = authority_host(host).is_some_and(|h| self.hosts.iter().any(|a| a == &h));
        known
            && origin
                .strip_prefix("http://")
                .is_some_and(|authority| authority.eq_ignore_ascii_case(host))
    }

    /// Why the request is refused, if it is.
    pub fn refuse(&self, headers: &axum::http::HeaderMap) -> Option<&'static str> {
        for origin in headers.get_all(axum::http::header::ORIGIN) {
            if let Some(exact) = &self.exact_origins {
                let allowed = origin.to_str().ok().is_some_and(|o| {
                    exact.iter().any(|a| a.eq_ignore_ascii_case(o)) || self.same_origin(o, headers)
                });
                if !allowed {
                    return Some("requests from this Origin are not served: it is not in gateway.allowed_origins\n");
                }
                continue;
            }
            let allowed = origin
                .to_str()
                .ok()
                .and_then(origin_host)
                .is_some_and(|host| self.origin_hosts.iter().any(|a| a == &host));
            if !allowed {
                return Some(
                    "this server takes requests from local pages only: Origin must be http(s)://localhost, 127.0.0.1 or [::1] (any port)\n",
                );
            }
        }
        if !self.hosts.is_empty() {
            let mut hosts = headers.get_all(axum::http::header::HOST).iter();
            let allowed = match (hosts.next(), hosts.next()) {
                (Some(host), None) => host
                    .to_str()
                    .ok()
                    .and_then(authority_host)
                    .is_some_and(|host| self.hosts.iter().any(|a| a == &host)),
                _ => false,
            };
            if !allowed {
                return Some(
                    "the Host header must name this machine (localhost, 127.0.0.1 or [::1])\n",
                );
            }
        }
        None
    }
}

async fn require_local(State(local): State<Arc<LocalOnly>>, req: Request, next: Next) -> Response {
    match local.refuse(req.headers()) {
        None => next.run(req).await,
        Some(why) => {
            tracing::warn!(
                origin = ?req.headers().get(axum::http::header::ORIGIN),
                host = ?req.headers().get(axum::http::header::HOST),
                "refused an MCP request from a non-local origin or host"
            );
            (StatusCode::FORBIDDEN, why).into_response()
        }
    }
}

/// The host of a serialised origin (`scheme://host[:port]`, RFC 6454) when the scheme is
/// `http` or `https`; lower-cased, IPv6 without brackets. `None` for anything else (`null`,
/// a path, user info, another scheme).
fn origin_host(origin: &str) -> Option<String> {
    let (scheme, authority) = origin.split_once("://")?;
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return None;
    }
    authority_host(authority)
}

/// The host of `host[:port]` or `[v6][:port]`, lower-cased, IPv6 without brackets; `None`
/// when anything else is there (a path, user info, a bad port).
fn authority_host(authority: &str) -> Option<String> {
    let (host, port) = match authority.strip_prefix('[') {
        Some(v6) => {
            let (host, rest) = v6.split_once(']')?;
            let port = match rest {
                "" => None,
                _ => Some(rest.strip_prefix(':')?),
            };
            (host, port)
        }
        None => match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        },
    };
    if let Some(port) = port {
        if port.is_empty()
            || !port.bytes().all(|b| b.is_ascii_digit())
            || port.parse::<u16>().is_err()
        {
            return None;
        }
    }
    let valid = |b: u8| b.is_ascii_alphanumeric() || b == b'.' || b == b'-' || b == b':';
    if host.is_empty() || !host.bytes().all(valid) {
        return None;
    }
    Some(host.to_ascii_lowercase())
}

/// A `DELETE` that ended the session answers 200, the status the MCP SDKs take for a
/// successful termination (the transport answers 202, which the Python SDK logs as
/// "Session termination failed: 202").
async fn session_ended_ok(req: Request, next: Next) -> Response {
    let delete = req.method() == axum::http::Method::DELETE;
    let mut response = next.run(req).await;
    if delete && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::OK;
    }
    response
}

async fn require_bearer(
    State(token): State<Arc<Option<String>>>,
    req: Request,
    next: Next,
) -> Response {
    let Some(expected) = token.as_deref() else {
        return next.run(req).await;
    };
    let presented = req
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    if constant_time_eq(presented.as_bytes(), expected.as_bytes()) {
        next.run(req).await
    } else {
        (StatusCode::UNAUTHORIZED, "missing or wrong bearer token\n").into_response()
    }
}

/// Compare without an early exit, so response timing does not reveal the token's prefix.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = a.len() ^ b.len();
    for (i, x) in a.iter().enumerate() {
        diff |= usize::from(x ^ b.get(i % b.len().max(1)).copied().unwrap_or(0));
    }
    diff == 0
}

/// The elicitation form for an approval: one required choice. A `session` answer lasts as
/// long as the MCP session: until the server stops over stdio, until the client's session ends
/// over Streamable HTTP.
pub(crate) fn approval_form(req: &ApprovalRequest, stdio: bool) -> Value {
    let lasts = if stdio {
        "until the server stops"
    } else {
        "until this MCP session ends"
    };
    let message = format!(
        "Allow `{}`?\n{}\nWhy this needs approval: {}\nArguments: {}",
        req.tool,
        req.summary,
        req.why,
        preview(&req.arguments.to_string(), 500)
    );
    json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": {
                "decision": {
                    "type": "string",
                    "title": "Decision",
                    "description": format!("once = this call; session = this tool {lasts}; deny = refuse"),
                    "enum": ["once", "session", "deny"]
                }
            },
            "required": ["decision"]
        }
    })
}

/// Anything but an explicit `once` or `session` is a no.
pub(crate) fn answer_from(content: Option<&Value>) -> ApprovalAnswer {
    match content
        .and_then(|c| c.get("decision"))
        .and_then(Value::as_str)
    {
        Some("once") => ApprovalAnswer::Once,
        Some("session") => ApprovalAnswer::ForSession,
        _ => ApprovalAnswer::Deny,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_approval_form_says_how_long_a_session_answer_lasts_per_transport() {
        let req = ApprovalRequest {
            tool: "shell".into(),
            arguments: json!({"command": "ls"}),
            summary: "shell ls".into(),
            grants: Default::default(),
            why: "needs approval".into(),
            remedy: String::new(),
        };
        let says = |stdio| {
            approval_form(&req, stdio)["requestedSchema"]["properties"]["decision"]["description"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        };
        assert!(
            says(true).contains("until the server stops"),
            "{}",
            says(true)
        );
        assert!(
            says(false).contains("until this MCP session ends"),
            "{}",
            says(false)
        );
        assert!(!says(false).contains("server stops"));
    }

    #[test]
    fn a_non_loopback_bind_without_a_token_is_refused() {
        let public: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        assert!(matches!(
            check_bind(public, None),
            Err(McpError::TokenRequired { .. })
        ));
        assert!(matches!(
            check_bind(public, Some("")),
            Err(McpError::TokenRequired { .. })
        ));
        assert!(check_bind(public, Some("s3cret")).is_ok());
        assert!(check_bind("127.0.0.1:0".parse().unwrap(), None).is_ok());
        assert!(check_bind("[::1]:0".parse().unwrap(), None).is_ok());
    }

    fn headers(pairs: &[(&str, &str)]) -> axum::http::HeaderMap {
        let mut map = axum::http::HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                axum::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                axum::http::HeaderValue::from_str(value).unwrap(),
            );
        }
        map
    }

    #[test]
    fn exact_origins_pass_only_as_listed_and_the_host_is_still_checked() {
        let addr = "127.0.0.1:8787".parse().unwrap();
        let host = ("host", "127.0.0.1:8787");
        let none = LocalOnly::for_bind(addr).with_exact_origins(&[]);
        assert!(none
            .refuse(&headers(&[host, ("origin", "http://localhost:8787")]))
            .is_some());
        assert_eq!(none.refuse(&headers(&[host])), None, "no Origin");
        let listed =
            LocalOnly::for_bind(addr).with_exact_origins(&["http://LocalHost:3000/".into()]);
        assert_eq!(
            listed.refuse(&headers(&[host, ("origin", "http://localhost:3000")])),
            None
        );
        for bad in [
            "http://localhost:3001",
            "http://localhost",
            "null",
            "http://evil.example",
        ] {
            assert!(
                listed.refuse(&headers(&[host, ("origin", bad)])).is_some(),
                "{bad}"
            );
        }
        assert!(listed
            .refuse(&headers(&[
                ("host", "evil.example:8787"),
                ("origin", "http://localhost:3000")
            ]))
            .is_some());
    }

    #[test]
    fn a_page_of_this_server_is_its_own_origin_and_a_rebound_name_is_not() {
        let addr = "127.0.0.1:8787".parse().unwrap();
        let none = LocalOnly::for_bind(addr).with_exact_origins(&[]);
        for (host, origin) in [
            ("127.0.0.1:8787", "http://127.0.0.1:8787"),
            ("localhost:8787", "http://LOCALHOST:8787"),
        ] {
            assert_eq!(
                none.refuse(&headers(&[("host", host), ("origin", origin)])),
                None,
                "{origin}"
            );
        }
        for (host, origin) in [
            // Another port, scheme or host of this machine is another origin.
            ("127.0.0.1:8787", "http://127.0.0.1:8788"),
            ("127.0.0.1:8787", "https://127.0.0.1:8787"),
            ("127.0.0.1:8787", "http://localhost:8787"),
            ("127.0.0.1:8787", "http://127.0.0.1:8787/"),
            // DNS rebinding: the page and the Host agree, but the name is not this machine's.
            ("evil.example:8787", "http://evil.example:8787"),
        ] {
            assert!(
                none.refuse(&headers(&[("host", host), ("origin", origin)]))
                    .is_some(),
                "{host} {origin}"
            );
        }
        // With the Host check off (an unspecified bind), no origin is taken as its own.
        let open = LocalOnly::for_bind("0.0.0.0:8787".parse().unwrap()).with_exact_origins(&[]);
        assert!(open
            .refuse(&headers(&[
                ("host", "10.0.0.5:8787"),
                ("origin", "http://10.0.0.5:8787")
            ]))
            .is_some());
    }

    #[test]
    fn only_local_origins_pass_and_no_origin_is_a_non_browser_client() {
        let local = LocalOnly::for_bind("127.0.0.1:8765".parse().unwrap());
        let host = ("host", "127.0.0.1:8765");
        for ok in [
            "http://127.0.0.1:8765",
            "http://127.0.0.1",
            "https://127.0.0.1:9",
            "http://localhost:3000",
            "HTTP://LocalHost",
            "http://[::1]:8765",
            "https://[::1]",
        ] {
            assert_eq!(
                local.refuse(&headers(&[host, ("origin", ok)])),
                None,
                "{ok}"
            );
        }
        assert_eq!(local.refuse(&headers(&[host])), None, "no Origin");
        for bad in [
            "http://evil.example",
            "null",
            "",
            "http://127.0.0.1.evil.example",
            "http://localhost.evil.example:8765",
            "http://localhost@evil.example",
            "http://evil.example@localhost",
            "http://localhost/",
            "http://localhost:8765/path",
            "http://localhost:99999",
            "http://localhost:",
            "ftp://localhost",
            "file://",
            "localhost",
            "http://[::1",
            "http://[::1]x",
            "http://10.0.0.1",
        ] {
            assert!(
                local.refuse(&headers(&[host, ("origin", bad)])).is_some(),
                "{bad:?} passed"
            );
        }
        // Two Origin headers: each must pass.
        assert!(local
            .refuse(&headers(&[
                host,
                ("origin", "http://localhost"),
                ("origin", "http://evil.example")
            ]))
            .is_some());
    }

    #[test]
    fn the_host_must_name_this_machine_unless_the_bind_is_unspecified() {
        let local = LocalOnly::for_bind("127.0.0.1:8765".parse().unwrap());
        for ok in ["127.0.0.1:8765", "localhost", "LOCALHOST:1", "[::1]:8765"] {
            assert_eq!(local.refuse(&headers(&[("host", ok)])), None, "{ok}");
        }
        for bad in [
            "evil.example:8765",
            "127.0.0.1.nip.io",
            "localhost.:8765",
            "127.0.0.1:8765/x",
            "",
        ] {
            assert!(
                local.refuse(&headers(&[("host", bad)])).is_some(),
                "{bad:?} passed"
            );
        }
        assert!(local.refuse(&headers(&[])).is_some(), "no Host");
        assert!(local
            .refuse(&headers(&[("host", "localhost"), ("host", "evil.example")]))
            .is_some());

        // 0.0.0.0 cannot know its names: any Host, but still only local origins.
        let any = LocalOnly::for_bind("0.0.0.0:8765".parse().unwrap());
        assert_eq!(any.refuse(&headers(&[("host", "box.lan:8765")])), None);
        assert!(any
            .refuse(&headers(&[
                ("host", "box.lan"),
                ("origin", "http://box.lan")
            ]))
            .is_some());

        // A specific address: its own origin and Host pass too.
        let lan = LocalOnly::for_bind("192.0.2.7:8765".parse().unwrap());
        assert_eq!(
            lan.refuse(&headers(&[
                ("host", "192.0.2.7:8765"),
                ("origin", "http://192.0.2.7:8765")
            ])),
            None
        );
        assert!(lan.refuse(&headers(&[("host", "evil.example")])).is_some());
    }

    struct NoTools;

    #[async_trait]
    impl ToolService for NoTools {
        fn tools(&self) -> Vec<ToolSpec> {
            Vec::new()
        }
        async fn call(
            &self,
            call: ToolCall,
            _approver: Arc<dyn Approver>,
            _session: &str,
        ) -> Result<ToolOutput, ToolError> {
            Err(ToolError::not_found(call.name))
        }
    }

    /// The status code of one raw HTTP/1.1 request.
    async fn status_of(addr: SocketAddr, request: &str) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut reply = Vec::new();
        let _ = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            stream.read_to_end(&mut reply),
        )
        .await;
        let reply = String::from_utf8_lossy(&reply).into_owned();
        reply
            .split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .to_string()
    }

    #[tokio::test]
    async fn a_foreign_origin_is_refused_before_the_token_is_looked_at() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let cancel = CancellationToken::new();
        let _stop = cancel.clone().drop_guard();
        tokio::spawn(serve_http_on(
            Arc::new(NoTools),
            listener,
            Some("s3cret".into()),
            cancel,
        ));
        let post = |extra: &str| {
            format!(
                "POST /mcp HTTP/1.1\r\nHost: {addr}\r\n{extra}Content-Type: application/json\r\n\
                 Accept: application/json, text/event-stream\r\nContent-Length: 2\r\n\
                 Connection: close\r\n\r\n{{}}"
            )
        };
        let evil = "Origin: http://evil.example\r\n";
        let bearer = "Authorization: Bearer s3cret\r\n";
        assert_eq!(status_of(addr, &post(evil)).await, "403");
        assert_eq!(
            status_of(addr, &post(&format!("{evil}{bearer}"))).await,
            "403",
            "the right token does not make a foreign page local"
        );
        assert_eq!(status_of(addr, &post("Origin: null\r\n")).await, "403");
        assert_eq!(status_of(addr, &post("")).await, "401");
        let rebound = format!(
            "POST /mcp HTTP/1.1\r\nHost: evil.example:{}\r\n{bearer}Content-Length: 0\r\n\
             Connection: close\r\n\r\n",
            addr.port()
        );
        assert_eq!(status_of(addr, &rebound).await, "403");
        // Past both guards, the MCP endpoint itself answers (here: not a valid message).
        let local = format!("Origin: http://localhost:{}\r\n{bearer}", addr.port());
        let status = status_of(addr, &post(&local)).await;
        assert!(
            status != "403" && status != "401" && !status.is_empty(),
            "{status}"
        );
    }

    #[test]
    fn tokens_compare_equal_only_when_identical() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
        assert!(!constant_time_eq(b"", b"a"));
        assert!(!constant_time_eq(b"a", b""));
    }

    #[test]
    fn only_an_explicit_once_or_session_approves() {
        assert_eq!(
            answer_from(Some(&json!({"decision": "once"}))),
            ApprovalAnswer::Once
        );
        assert_eq!(
            answer_from(Some(&json!({"decision": "session"}))),
            ApprovalAnswer::ForSession
        );
        for other in [
            json!({"decision": "deny"}),
            json!({"decision": "ONCE"}),
            json!({}),
            json!("once"),
        ] {
            assert_eq!(answer_from(Some(&other)), ApprovalAnswer::Deny, "{other}");
        }
        assert_eq!(answer_from(None), ApprovalAnswer::Deny);
    }

    #[test]
    fn failures_become_is_error_results_that_carry_the_why() {
        let v = wire::result_json(Err(ToolError::needs_approval("`shell` needs approval")));
        assert_eq!(v["isError"], true);
        assert_eq!(
            v["content"][0]["text"],
            "needs_approval: `shell` needs approval"
        );
        let ok = wire::result_json(Ok(ToolOutput::text("hi").with_structured(json!({"n": 1}))));
        assert_eq!(ok["isError"], false);
        assert_eq!(ok["structuredContent"], json!({"n": 1}));
    }
}
