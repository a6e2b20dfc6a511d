//! `http_request`: a general HTTP client for APIs. Any method; the answer is the status, the
//! response headers and the body (capped), with credential header values never shown.

use super::net::{self, BodyKind, Secrets};
use super::WebSettings;
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tackle_protocol::{
    ApprovalMode, Capability, HttpRequest, HttpResponse, Risk, Tool, ToolContext, ToolError,
    ToolOutput, ToolSpec,
};

// Arguments of `http_request` (a plain comment, so not sent as the schema's description).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// HTTP method, e.g. GET, POST, PUT, PATCH, DELETE.
    method: String,
    /// Absolute http(s) URL.
    url: String,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    /// Raw request body.
    body: Option<String>,
    /// A JSON body; sets Content-Type: application/json.
    // `skip_serializing_if` keeps schemars from writing `"default": null`, which would say
    // that an absent `json` is a `null` body.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Value")]
    json: Option<Value>,
}

/// A `json` that is given is sent, `null` included; only an absent one means no body.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

pub(crate) struct HttpRequestTool {
    settings: Arc<WebSettings>,
}

impl HttpRequestTool {
    pub(crate) fn new(settings: Arc<WebSettings>) -> Self {
        Self { settings }
    }

    fn build(&self, args: Value) -> Result<HttpRequest, ToolError> {
        let args: Args = crate::args::parse(args)?;
        let method = net::parse_method(&args.method)?;
        let url = net::parse_url(&args.url)?.to_string();
        let mut headers = net::checked_headers(args.headers)?;
        let body = match (args.body, args.json) {
            (Some(_), Some(_)) => {
                return Err(ToolError::invalid_arguments(
                    "give either body or json, not both",
                ))
            }
            (Some(b), None) => Some(b.into_bytes()),
            (None, Some(j)) => {
                if !has_header(&headers, "content-type") {
                    headers.push(("Content-Type".into(), "application/json".into()));
                }
                Some(j.to_string().into_bytes())
            }
            (None, None) => None,
        };
        if !has_header(&headers, "user-agent") {
            headers.push(("User-Agent".into(), self.settings.user_agent.clone()));
        }
        Ok(HttpRequest {
            method,
            url,
            follow_redirects: !net::carries_credentials(&headers),
            headers,
            body,
            max_bytes: self.settings.default_max_bytes,
            timeout: self.settings.fetch_timeout,
            operator_configured: false,
        })
    }
}

fn has_header(headers: &[(String, String)], name: &str) -> bool {
    headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name))
}

#[async_trait]
impl Tool for HttpRequestTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "http_request",
            "Send an HTTP request with any method (GET, POST, PUT, PATCH, DELETE, …) and get \
             back the status, response headers and body. For APIs; use web_fetch to read pages. \
             Credential header values are never shown. Subject to the network grant.",
            "web",
        )
        .parameters(crate::args::schema::<Args>())
        .risk(Risk::Medium)
        .approval(ApprovalMode::UnlessAutoApproved)
    }

    fn planned_capabilities(&self, args: &Value, _cx: &ToolContext) -> Vec<Capability> {
        let method = args.get("method").and_then(Value::as_str).unwrap_or("GET");
        let url = args.get("url").and_then(Value::as_str).unwrap_or_default();
        vec![Capability::Network {
            method: method.to_ascii_uppercase(),
            url: url.to_string(),
        }]
    }

    fn timeout(&self) -> Option<Duration> {
        Some(self.settings.fetch_timeout + Duration::from_secs(5))
    }

    fn sink(&self, args: &Value) -> Option<String> {
        super::request_sink(args)
    }

    fn provenance(&self, args: &Value) -> tackle_protocol::Provenance {
        let url = args
            .get("url")
            .and_then(Value::as_str)
            .unwrap_or("a web page");
        tackle_protocol::Provenance::Untrusted(tackle_protocol::text::preview(url, 200))
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let req = self.build(args)?;
        let mut secrets = Secrets::from_headers(&req.headers);
        let cap = req.max_bytes;
        let resp = net::send(cx, req)
            .await
            .map_err(|e| secrets.scrub_error(e))?;
        secrets.add_headers(&resp.headers);
        Ok(render(&resp, cap, &secrets))
    }
}

fn render(resp: &HttpResponse, cap: u64, secrets: &Secrets) -> ToolOutput {
    let content_type = resp.header("content-type");
    let media = net::media_type(content_type);
    let kind = net::classify(&media, &resp.body);
    let body = match kind {
        BodyKind::Binary => format!(
            "[binary body not shown: {}, {}]",
            if media.is_empty() {
                "unknown type"
            } else {
                &media
            },
            net::human_size(resp.body.len() as u64)
        ),
        _ => net::decode(&resp.body, content_type, kind).0,
    };
    let headers: Vec<(String, String)> = resp
        .headers
        .iter()
        .map(|(k, v)| (k.clone(), net::shown_value(k, v).to_string()))
        .collect();

    let mut text = format!("HTTP {}\n", resp.status);
    if !resp.redirects.is_empty() {
        text.push_str(&format!("Redirects: {}\n", resp.redirects.join(" -> ")));
        text.push_str(&format!("Final URL: {}\n", resp.final_url));
    }
    for (k, v) in &headers {
        text.push_str(&format!("{k}: {v}\n"));
    }
    if resp.truncated {
        text.push_str(&format!("[body cut at {}]\n", net::human_size(cap)));
    }
    text.push('\n');
    text.push_str(&body);

    let structured = json!({
        "status": resp.status,
        "headers": headers,
        "body": secrets.scrub(&body),
        "final_url": resp.final_url,
        "redirects": resp.redirects,
        "truncated": resp.truncated,
    });
    let mut out = ToolOutput::text(secrets.scrub(&text)).with_structured(structured);
    out.is_error = resp.status >= 400;
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock_host::MockHost;
    use tackle_protocol::{ErrorKind, HostError};

    fn tool() -> HttpRequestTool {
        HttpRequestTool::new(Arc::new(WebSettings::default()))
    }

    fn reply(headers: &[(&str, &str)], body: &str) -> HttpResponse {
        HttpResponse {
            status: 201,
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            body: body.as_bytes().to_vec(),
            final_url: "https://api.example/items".into(),
            redirects: Vec::new(),
            truncated: false,
        }
    }

    #[tokio::test]
    async fn json_body_sets_content_type_and_any_method_goes_through() {
        let host = Arc::new(MockHost::new());
        host.reply_http(Ok(reply(
            &[("Content-Type", "application/json")],
            r#"{"id":7}"#,
        )));
        let args =
            json!({"method": "put", "url": "https://api.example/items/7", "json": {"name": "x"}});
        let out = tool().call(args, &host.context()).await.unwrap();
        assert!(out.content.starts_with("HTTP 201\n"), "{}", out.content);
        assert!(out.content.ends_with(r#"{"id":7}"#));
        let sent = &host.http_requests()[0];
        assert_eq!(sent.method, "PUT");
        assert_eq!(sent.body.as_deref(), Some(br#"{"name":"x"}"#.as_slice()));
        assert!(sent
            .headers
            .iter()
            .any(|(k, v)| k == "Content-Type" && v == "application/json"));
    }

    #[tokio::test]
    async fn credential_header_values_never_come_back() {
        let host = Arc::new(MockHost::new());
        let headers = [
            ("Set-Cookie", "session=sess-abcdef123; HttpOnly"),
            ("Content-Type", "application/json"),
        ];
        // An echo endpoint reflecting both the request token and the cookie in its body.
        let body = r#"{"authorization":"Bearer tok-SECRET-42","cookie":"sess-abcdef123"}"#;
        host.reply_http(Ok(reply(&headers, body)));
        let args = json!({"method": "GET", "url": "https://api.example/echo",
                          "headers": {"Authorization": "Bearer tok-SECRET-42", "Cookie": "a=cookie-value-99"}});
        let out = tool().call(args, &host.context()).await.unwrap();
        let everything = format!("{}{}", out.content, out.structured.unwrap());
        for secret in ["tok-SECRET-42", "sess-abcdef123", "cookie-value-99"] {
            assert!(
                !everything.contains(secret),
                "{secret} leaked: {everything}"
            );
        }
        assert!(out.content.contains("Set-Cookie: [redacted]"));
    }

    #[tokio::test]
    async fn credentials_are_scrubbed_from_host_errors_too() {
        let host = Arc::new(MockHost::new());
        host.reply_http(Err(HostError::Network(
            "peer said: Bearer tok-SECRET-42 rejected".into(),
        )));
        let args = json!({"method": "GET", "url": "https://api.example/",
                          "headers": {"authorization": "Bearer tok-SECRET-42"}});
        let err = tool().call(args, &host.context()).await.unwrap_err();
        assert_eq!(err.kind, ErrorKind::Failed);
        assert!(!err.message.contains("tok-SECRET-42"), "{}", err.message);
    }

    #[tokio::test]
    async fn binary_bodies_are_described_not_dumped() {
        let host = Arc::new(MockHost::new());
        host.reply_http(Ok(reply(
            &[("Content-Type", "application/octet-stream")],
            "\0\0\0",
        )));
        let args = json!({"method": "GET", "url": "https://api.example/blob"});
        let out = tool().call(args, &host.context()).await.unwrap();
        assert!(out
            .content
            .contains("[binary body not shown: application/octet-stream, 3 bytes]"));
    }

    #[tokio::test]
    async fn body_and_json_together_are_refused() {
        let host = Arc::new(MockHost::new());
        let args = json!({"method": "POST", "url": "https://api.example/", "body": "a", "json": 1});
        let err = tool().call(args, &host.context()).await.unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidArguments);
        assert!(host.http_requests().is_empty());
    }
}
