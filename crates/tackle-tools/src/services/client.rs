//! What the service tools share: one API base (the operator's or a built-in public one),
//! requests through the host with credentials scrubbed from errors, the planned `Network`
//! capability, and reading an API's JSON answer or error message.

use super::secrets::Secrets;
use serde_json::Value;
use std::time::Duration;
use tackle_protocol::text::preview;
use tackle_protocol::{Capability, HttpRequest, HttpResponse, ToolContext, ToolError};

/// The most of one answer a service tool reads.
pub(crate) const MAX_RESPONSE: u64 = 2 * 1024 * 1024;

/// One service's base URL and credentials.
#[derive(Debug, Clone)]
pub(crate) struct Api {
    base: String,
    /// The base came from config: trusted as written (docs/architecture.md, "Grants"), so it is not planned as a
    /// capability the grant must allow.
    operator: bool,
    pub(crate) timeout: Duration,
    pub(crate) secrets: Secrets,
}

/// A request body and its media type.
pub(crate) enum Body {
    Json(Value),
    Form(Vec<(String, String)>),
    /// Bytes sent as they are, with their media type (a file, a multipart form).
    Raw {
        content_type: String,
        data: Vec<u8>,
    },
}

impl Api {
    /// `configured` (config `api_base`, trailing `/` dropped) or the built-in `default`.
    pub(crate) fn new(
        configured: Option<&str>,
        default: &str,
        timeout: Duration,
        secrets: Secrets,
    ) -> Self {
        let configured = configured.map(str::trim).filter(|b| !b.is_empty());
        Self {
            base: configured
                .unwrap_or(default)
                .trim_end_matches('/')
                .to_string(),
            operator: configured.is_some(),
            timeout,
            secrets,
        }
    }

    /// An API base the operator configured whatever its source (r8r's default is local).
    pub(crate) fn operator(base: &str, timeout: Duration, secrets: Secrets) -> Self {
        let mut api = Self::new(Some(base), base, timeout, secrets);
        api.operator = true;
        api
    }

    /// `path` (starting with `/`) under the base.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The capability a request to `path` needs: none for the operator's own base.
    pub(crate) fn planned(&self, method: &str, path: &str) -> Vec<Capability> {
        if self.operator {
            return Vec::new();
        }
        vec![Capability::Network {
            method: method.to_string(),
            url: self.url(path),
        }]
    }

    /// Send `method path` with `headers` (credentials included) and `body`, through the
    /// host, giving up when the call is cancelled. Redirects are not followed: a credential
    /// is never replayed to a destination nobody named.
    pub(crate) async fn send(
        &self,
        cx: &ToolContext,
        method: &str,
        path: &str,
        mut headers: Vec<(String, String)>,
        body: Option<Body>,
    ) -> Result<HttpResponse, ToolError> {
        headers.push(("Accept".into(), "application/json".into()));
        let body = body.map(|b| match b {
            Body::Json(v) => {
                headers.push(("Content-Type".into(), "application/json".into()));
                v.to_string().into_bytes()
            }
            Body::Form(pairs) => {
                headers.push((
                    "Content-Type".into(),
                    "application/x-www-form-urlencoded".into(),
                ));
                form(&pairs).into_bytes()
            }
            Body::Raw { content_type, data } => {
                headers.push(("Content-Type".into(), content_type));
                data
            }
        });
        let req = HttpRequest {
            method: method.to_string(),
            url: self.url(path),
            headers,
            body,
            max_bytes: MAX_RESPONSE,
            timeout: self.timeout,
            follow_redirects: false,
            operator_configured: self.operator,
        };
        let sent = tokio::select! {
            res = cx.host().http(req) => res.map_err(ToolError::from),
            () = cx.cancel.cancelled() => Err(ToolError::failed("the request was cancelled")),
        };
        sent.map_err(|e| self.secrets.scrub_error(e))
    }
}

/// `a=1&b=x%20y`: the `application/x-www-form-urlencoded` serialisation.
pub(crate) fn form(pairs: &[(String, String)]) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
}

/// Seconds since the Unix epoch (0 on a clock before it).
pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

/// The answer's JSON body (`Null` when it is not JSON).
pub(crate) fn json_of(resp: &HttpResponse) -> Value {
    serde_json::from_slice(&resp.body).unwrap_or(Value::Null)
}

/// A refused request as `failed`, with the API's own message: `error.message` (WhatsApp,
/// Stripe, Google), a top-level `message` (r8r, Discord), `description` (Telegram) or a string
/// `error` (Slack), else the start of the body.
pub(crate) fn api_error(service: &str, resp: &HttpResponse, secrets: &Secrets) -> ToolError {
    let v = json_of(resp);
    let message = v
        .pointer("/error/message")
        .or_else(|| v.get("message"))
        .or_else(|| v.get("description"))
        .or_else(|| v.get("error").filter(|e| e.is_string()))
        .and_then(Value::as_str)
        .map(|m| preview(m, 500))
        .unwrap_or_else(|| preview(String::from_utf8_lossy(&resp.body).trim(), 300));
    let message = if message.is_empty() {
        "(no message)".to_string()
    } else {
        message
    };
    ToolError::failed(secrets.scrub(&format!(
        "{service} answered HTTP {}: {message}",
        resp.status
    )))
}

pub(crate) fn is_success(resp: &HttpResponse) -> bool {
    (200..300).contains(&resp.status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock_host::http_json;

    #[test]
    fn a_configured_base_plans_nothing_and_the_default_plans_its_url() {
        let t = Duration::from_secs(1);
        let own = Api::new(
            Some("http://127.0.0.1:9/"),
            "https://x",
            t,
            Secrets::default(),
        );
        assert!(own.planned("GET", "/a").is_empty());
        assert_eq!(own.url("/a"), "http://127.0.0.1:9/a");
        let public = Api::new(None, "https://api.example", t, Secrets::default());
        assert_eq!(
            public.planned("POST", "/v1/x"),
            vec![Capability::Network {
                method: "POST".into(),
                url: "https://api.example/v1/x".into()
            }]
        );
    }

    #[test]
    fn errors_carry_the_apis_message_without_secrets() {
        let secrets = Secrets::new(["tok-SECRET-1".to_string()]);
        let resp = http_json(401, r#"{"error":{"message":"bad token tok-SECRET-1"}}"#);
        let e = api_error("WhatsApp", &resp, &secrets);
        assert_eq!(
            e.message,
            "WhatsApp answered HTTP 401: bad token [redacted]"
        );
        let resp = http_json(404, r#"{"code":"NOT_FOUND","message":"no such workflow"}"#);
        assert!(api_error("r8r", &resp, &secrets)
            .message
            .ends_with("no such workflow"));
    }

    #[test]
    fn forms_are_url_encoded() {
        let pairs = vec![("a".to_string(), "x y&z".to_string())];
        assert_eq!(form(&pairs), "a=x+y%26z");
    }
}
