//! `web_fetch`: fetch a URL and return what a reader would read: the main content of an HTML
//! page as Markdown (or text), JSON pretty-printed, other text as is. Binary bodies are refused
//! with their type and size rather than dumped into the model's context.

use super::extract::{self, Format};
use super::net::{self, BodyKind, Secrets};
use super::WebSettings;
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tackle_protocol::{
    ApprovalMode, Capability, HttpRequest, HttpResponse, Risk, Tool, ToolContext, ToolError,
    ToolOutput, ToolSpec,
};

pub(crate) struct WebFetch {
    settings: Arc<WebSettings>,
}

impl WebFetch {
    pub(crate) fn new(settings: Arc<WebSettings>) -> Self {
        Self { settings }
    }
}

// Arguments of `web_fetch` (a plain comment, so not sent as the schema's description).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Absolute http(s) URL to fetch.
    url: String,
    // Read case-insensitively, so kept a string; the schema offers the two the tool sends.
    #[schemars(extend("enum" = ["GET", "POST"], "default" = "GET"))]
    method: Option<String>,
    /// Request body, for POST.
    body: Option<String>,
    /// Extra request headers.
    #[serde(default)]
    headers: BTreeMap<String, String>,
    /// Download at most this many bytes of the body.
    #[schemars(range(min = 1))]
    max_bytes: Option<u64>,
    /// How to render HTML: main content as markdown or text, or the raw page.
    #[schemars(extend("enum" = ["markdown", "text", "raw"], "default" = "markdown"))]
    format: Option<String>,
}

/// The checked arguments of one call.
struct FetchArgs {
    url: String,
    method: String,
    body: Option<String>,
    headers: Vec<(String, String)>,
    max_bytes: u64,
    format: Format,
}

impl FetchArgs {
    fn parse(args: Value, settings: &WebSettings) -> Result<Self, ToolError> {
        let args: Args = crate::args::parse(args)?;
        let url = net::parse_url(&args.url)?.to_string();
        let method = net::parse_method(args.method.as_deref().unwrap_or("GET"))?;
        if method != "GET" && method != "POST" {
            return Err(ToolError::invalid_arguments(format!(
                "web_fetch supports GET and POST, not {method}; use http_request for other methods"
            )));
        }
        let body = args.body;
        if body.is_some() && method == "GET" {
            return Err(ToolError::invalid_arguments("a body needs method POST"));
        }
        let format = Format::parse(args.format.as_deref()).ok_or_else(|| {
            ToolError::invalid_arguments("format must be one of markdown, text, raw")
        })?;
        let max_bytes = args
            .max_bytes
            .unwrap_or(settings.default_max_bytes)
            .clamp(1, settings.max_bytes_limit);
        Ok(Self {
            url,
            method,
            body,
            headers: net::checked_headers(args.headers)?,
            max_bytes,
            format,
        })
    }

    fn request(&self, settings: &WebSettings) -> HttpRequest {
        let mut headers = self.headers.clone();
        if !headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("user-agent"))
        {
            headers.push(("User-Agent".into(), settings.user_agent.clone()));
        }
        if !headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("accept"))
        {
            let accept =
                "text/html,application/xhtml+xml,application/json;q=0.9,text/*;q=0.8,*/*;q=0.5";
            headers.push(("Accept".into(), accept.into()));
        }
        HttpRequest {
            method: self.method.clone(),
            url: self.url.clone(),
            follow_redirects: !net::carries_credentials(&headers),
            headers,
            body: self.body.as_ref().map(|b| b.as_bytes().to_vec()),
            max_bytes: self.max_bytes,
            timeout: settings.fetch_timeout,
            operator_configured: false,
        }
    }
}

#[async_trait]
impl Tool for WebFetch {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "web_fetch",
            "Fetch a web page or document by URL (GET or POST). HTML comes back as readable \
             Markdown of the main content with its title and final URL; JSON is pretty-printed; \
             other text as is. Binary files are refused. Subject to the network grant.",
            "web",
        )
        .parameters(crate::args::schema::<Args>())
        .risk(Risk::Medium)
        .approval(ApprovalMode::UnlessAutoApproved)
    }

    fn planned_capabilities(&self, args: &Value, _cx: &ToolContext) -> Vec<Capability> {
        let url = args.get("url").and_then(Value::as_str).unwrap_or_default();
        let method = args.get("method").and_then(Value::as_str).unwrap_or("GET");
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
        let fetch = FetchArgs::parse(args, &self.settings)?;
        let mut secrets = Secrets::from_headers(&fetch.headers);
        let resp = net::send(cx, fetch.request(&self.settings))
            .await
            .map_err(|e| secrets.scrub_error(e))?;
        secrets.add_headers(&resp.headers);
        render(&fetch, &resp, &secrets).map_err(|e| secrets.scrub_error(e))
    }
}

/// The page as the model will read it: a short header, a blank line, the content.
fn render(
    fetch: &FetchArgs,
    resp: &HttpResponse,
    secrets: &Secrets,
) -> Result<ToolOutput, ToolError> {
    let content_type = resp.header("content-type");
    let media = net::media_type(content_type);
    let kind = net::classify(&media, &resp.body);
    if kind == BodyKind::Binary {
        return Err(binary_refusal(resp, &media));
    }
    let (text, encoding) = net::decode(&resp.body, content_type, kind);
    let page = match (kind, fetch.format) {
        (BodyKind::Html, Format::Markdown | Format::Text) => {
            extract::page(&text, &resp.final_url, fetch.format)
        }
        (BodyKind::Json, Format::Markdown | Format::Text) => {
            extract::Page::plain(extract::pretty_json(&text).unwrap_or(text))
        }
        _ => extract::Page::plain(text),
    };

    let mut head = Vec::new();
    if let Some(t) = &page.title {
        head.push(format!("Title: {t}"));
    }
    if let Some(b) = &page.byline {
        head.push(format!("Byline: {b}"));
    }
    head.push(format!("URL: {}", resp.final_url));
    if !resp.redirects.is_empty() {
        head.push(format!(
            "Redirected from {} via {}",
            fetch.url,
            resp.redirects.join(" -> ")
        ));
    }
    head.push(format!("Status: {}", resp.status));
    let shown_type = if media.is_empty() { "unknown" } else { &media };
    head.push(format!("Content-Type: {shown_type} ({kind}, {encoding})"));
    if resp.truncated {
        head.push(format!(
            "Note: the body was cut at {} (max_bytes); the rest was not downloaded.",
            net::human_size(fetch.max_bytes)
        ));
    }
    let text = secrets.scrub(&format!("{}\n\n{}", head.join("\n"), page.content));
    let structured = json!({
        "url": fetch.url,
        "final_url": resp.final_url,
        "redirects": resp.redirects,
        "status": resp.status,
        "content_type": media,
        "encoding": encoding,
        "kind": kind.to_string(),
        "format": fetch.format.as_str(),
        "title": page.title,
        "byline": page.byline,
        "article": page.article,
        "bytes": resp.body.len(),
        "truncated": resp.truncated,
    });
    let mut out = ToolOutput::text(text).with_structured(structured);
    out.is_error = resp.status >= 400;
    Ok(out)
}

fn binary_refusal(resp: &HttpResponse, media: &str) -> ToolError {
    let declared = resp
        .header("content-length")
        .and_then(|v| v.trim().parse::<u64>().ok());
    let size = match (declared, resp.truncated) {
        (Some(n), _) => net::human_size(n),
        (None, true) => format!("more than {}", net::human_size(resp.body.len() as u64)),
        (None, false) => net::human_size(resp.body.len() as u64),
    };
    let media = if media.is_empty() {
        "an unknown binary type"
    } else {
        media
    };
    ToolError::failed(format!(
        "{} is {media} ({size}); web_fetch returns text, HTML and JSON only",
        resp.final_url
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock_host::MockHost;
    use tackle_protocol::{Decision, ErrorKind, HostError};

    fn tool() -> WebFetch {
        WebFetch::new(Arc::new(WebSettings::default()))
    }

    fn response(status: u16, content_type: &str, body: &[u8]) -> HttpResponse {
        HttpResponse {
            status,
            headers: vec![("Content-Type".into(), content_type.into())],
            body: body.to_vec(),
            final_url: "https://site.example/page".into(),
            redirects: Vec::new(),
            truncated: false,
        }
    }

    async fn fetch(host: &Arc<MockHost>, args: Value) -> Result<ToolOutput, ToolError> {
        tool().call(args, &host.context()).await
    }

    #[tokio::test]
    async fn html_comes_back_as_markdown_with_title_and_final_url() {
        let host = Arc::new(MockHost::new());
        let html = "<html><head><title>Hello</title></head><body><p>Some <b>bold</b> words.</p></body></html>";
        let mut resp = response(200, "text/html; charset=utf-8", html.as_bytes());
        resp.redirects = vec!["https://site.example/page".into()];
        host.reply_http(Ok(resp));
        let out = fetch(&host, json!({"url": "http://site.example/old"}))
            .await
            .unwrap();
        assert!(out.content.contains("Title: Hello"), "{}", out.content);
        assert!(out.content.contains("URL: https://site.example/page"));
        assert!(out
            .content
            .contains("Redirected from http://site.example/old"));
        assert!(out.content.contains("**bold**"), "{}", out.content);
        let sent = &host.http_requests()[0];
        assert_eq!((sent.method.as_str(), sent.follow_redirects), ("GET", true));
        assert!(!sent.operator_configured);
    }

    #[tokio::test]
    async fn json_is_pretty_printed() {
        let host = Arc::new(MockHost::new());
        host.reply_http(Ok(response(200, "application/json", br#"{"a":{"b":1}}"#)));
        let out = fetch(&host, json!({"url": "https://api.example/x"}))
            .await
            .unwrap();
        assert!(
            out.content.ends_with("{\n  \"a\": {\n    \"b\": 1\n  }\n}"),
            "{}",
            out.content
        );
    }

    #[tokio::test]
    async fn binary_bodies_are_refused_with_type_and_size() {
        let host = Arc::new(MockHost::new());
        let mut resp = response(200, "image/png", b"\x89PNG\r\n");
        resp.headers
            .push(("Content-Length".into(), "123456".into()));
        host.reply_http(Ok(resp));
        let err = fetch(&host, json!({"url": "https://site.example/a.png"}))
            .await
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::Failed);
        assert!(
            err.message.contains("image/png (123.5 KB)"),
            "{}",
            err.message
        );
    }

    #[tokio::test]
    async fn truncation_and_http_errors_are_reported() {
        let host = Arc::new(MockHost::new());
        let mut resp = response(404, "text/plain", b"not here");
        resp.truncated = true;
        host.reply_http(Ok(resp));
        let out = fetch(
            &host,
            json!({"url": "https://site.example/x", "max_bytes": 8}),
        )
        .await
        .unwrap();
        assert!(out.is_error);
        assert!(out.content.contains("Status: 404"));
        assert!(out.content.contains("cut at 8 bytes"), "{}", out.content);
        assert_eq!(host.http_requests()[0].max_bytes, 8);
    }

    #[tokio::test]
    async fn a_denied_destination_is_a_denial_not_a_failure() {
        let host = Arc::new(MockHost::new());
        let decision = Decision::deny("network.allow_private", "127.0.0.1 is a loopback address");
        host.reply_http(Err(HostError::Denied(decision)));
        let err = fetch(&host, json!({"url": "http://127.0.0.1/"}))
            .await
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::Denied);
        assert!(err.decision.is_some());
    }

    #[tokio::test]
    async fn credentials_are_not_replayed_through_redirects_nor_echoed() {
        let host = Arc::new(MockHost::new());
        let echo = "you sent: Authorization: Bearer tok-123456789";
        host.reply_http(Ok(response(200, "text/plain", echo.as_bytes())));
        let args = json!({"url": "https://api.example/me", "headers": {"Authorization": "Bearer tok-123456789"}});
        let out = fetch(&host, args).await.unwrap();
        assert!(!host.http_requests()[0].follow_redirects);
        assert!(!out.content.contains("tok-123456789"), "{}", out.content);
        assert!(out.content.contains("[redacted]"));
    }

    #[tokio::test]
    async fn bad_arguments_are_refused_before_any_request() {
        let host = Arc::new(MockHost::new());
        for args in [
            json!({"url": "ftp://x.example/"}),
            json!({"url": "https://x.example/", "method": "DELETE"}),
            json!({"url": "https://x.example/", "body": "x"}),
            json!({"url": "https://x.example/", "format": "pdf"}),
            json!({"url": "https://x.example/", "headers": {"Host": "internal"}}),
        ] {
            let err = fetch(&host, args.clone()).await.unwrap_err();
            assert_eq!(err.kind, ErrorKind::InvalidArguments, "{args}");
        }
        assert!(host.http_requests().is_empty());
    }

    #[test]
    fn planned_capability_is_the_network_request() {
        let host = Arc::new(MockHost::new());
        let caps = tool().planned_capabilities(
            &json!({"url": "https://x.example/a", "method": "post"}),
            &host.context(),
        );
        assert_eq!(
            caps,
            vec![Capability::Network {
                method: "POST".into(),
                url: "https://x.example/a".into()
            }]
        );
    }
}
