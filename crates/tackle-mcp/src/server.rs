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
    ApprovalAnswer, ApprovalRequest, Approver, ToolCall, ToolError, ToolOutput, ToolSpec,
};
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
}

/// Serve over stdin/stdout until the client disconnects.
pub async fn serve_stdio(service: Arc<dyn ToolService>) -> Result<(), McpError> {
    wire::serve_stdio(Handler::new(service, "stdio"))
        .await
        .map_err(McpError::Serve)
}

/// Serve Streamable HTTP at `http://ADDR/mcp` until the process ends. A non-loopback
/// address requires a bearer token.
pub async fn serve_http(
    service: Arc<dyn ToolService>,
    addr: SocketAddr,
    bearer_token: Option<String>,
) -> Result<(), McpError> {
    check_bind(addr, bearer_token.as_deref())?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| McpError::Bind {
            addr,
            why: e.to_string(),
        })?;
    serve_http_on(service, listener, bearer_token, CancellationToken::new()).await
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
    let router = axum::Router::new()
        .route_service("/mcp", mcp)
        .layer(axum::middleware::from_fn_with_state(token, require_bearer));
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

/// `Host` values accepted (DNS-rebinding guard): loopback names, plus the bound address
/// when it is a specific non-loopback one. An unspecified bind (`0.0.0.0`) cannot know its
/// names, so the check is off there and the required token is the guard.
fn allowed_hosts(addr: SocketAddr) -> Vec<String> {
    let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"].map(String::from).to_vec();
    if addr.ip().is_unspecified() {
        return Vec::new();
    }
    if !addr.ip().is_loopback() {
        hosts.push(addr.ip().to_string());
    }
    hosts
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

/// The elicitation form for an approval: one required choice.
pub(crate) fn approval_form(req: &ApprovalRequest) -> Value {
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
                    "description": "once = this call; session = this tool until the server stops; deny = refuse",
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
