//! The SDK's errors in plain words. Several of `rmcp`'s error messages embed Rust debug
//! output (`Transport [rmcp::transport::…] error`, `ErrorData { code: ErrorCode(…) … }`,
//! `Some(…)`); a person reading why a server failed gets the part that says why instead.

use rmcp::model::{ErrorData, JsonRpcMessage};
use rmcp::service::{ClientInitializeError, ServiceError};

/// Why the handshake with a server failed.
pub(crate) fn init_error(e: &ClientInitializeError) -> String {
    match e {
        ClientInitializeError::ExpectedInitResponse(Some(JsonRpcMessage::Error(reply))) => {
            format!(
                "the server refused to start the session: {}",
                data(&reply.error)
            )
        }
        ClientInitializeError::ExpectedInitResponse(_)
        | ClientInitializeError::ExpectedInitResult(_) => {
            "the server did not answer the handshake with its capabilities".to_string()
        }
        ClientInitializeError::JsonRpcError(d) => {
            format!("the server refused to start the session: {}", data(d))
        }
        ClientInitializeError::ConnectionClosed(when) => {
            format!(
                "the server closed the connection ({})",
                when.replace('_', " ")
            )
        }
        ClientInitializeError::TransportError { error, context } => {
            format!("{} ({context})", chain(error.error.as_ref()))
        }
        ClientInitializeError::NoCompatibleProtocolVersion { .. } => {
            "the server speaks no MCP protocol version this client knows".to_string()
        }
        ClientInitializeError::Cancelled => "the handshake was cancelled".to_string(),
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => init_error(fallback),
        other => chain(other),
    }
}

/// Why a request to a running server failed.
pub(crate) fn service_error(e: &ServiceError) -> String {
    match e {
        ServiceError::McpError(d) => data(d),
        ServiceError::TransportSend(t) => chain(t.error.as_ref()),
        ServiceError::TransportClosed => "the connection to the server is closed".to_string(),
        ServiceError::UnexpectedResponse => {
            "the server sent an answer of the wrong kind".to_string()
        }
        ServiceError::Timeout { timeout } => {
            format!("no answer within {:.1} s", timeout.as_secs_f64())
        }
        ServiceError::Cancelled { .. } => "the request was cancelled".to_string(),
        other => chain(other),
    }
}

/// A JSON-RPC error: its message, and its code only when the message is empty.
fn data(d: &ErrorData) -> String {
    if d.message.trim().is_empty() {
        format!("error {}", d.code.0)
    } else {
        d.message.to_string()
    }
}

/// An error and its sources, each once, joined by `: ` (the SDK's transport errors wrap an
/// I/O error whose text is worth keeping).
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{ErrorCode, JsonRpcError, JsonRpcVersion2_0};

    #[test]
    fn an_error_reply_to_the_handshake_is_its_message_without_debug_output() {
        let reply = JsonRpcError {
            jsonrpc: JsonRpcVersion2_0,
            id: None,
            error: ErrorData::new(ErrorCode(-32022), "unsupported client", None),
        };
        let e = ClientInitializeError::ExpectedInitResponse(Some(JsonRpcMessage::Error(reply)));
        let said = init_error(&e);
        assert_eq!(
            said,
            "the server refused to start the session: unsupported client"
        );
        assert!(!e.to_string().is_empty());
    }

    #[test]
    fn a_timeout_is_in_seconds() {
        let e = ServiceError::Timeout {
            timeout: std::time::Duration::from_millis(288_188),
        };
        assert_eq!(service_error(&e), "no answer within 288.2 s");
    }
}
