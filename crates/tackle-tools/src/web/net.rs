//! What `web_fetch` and `http_request` share: argument checks on headers and methods, the
//! list of credential headers that are never echoed, sending through the host with
//! cancellation, and decoding a body into text by its declared or sniffed charset.

use super::extract;
use encoding_rs::Encoding;
use std::collections::BTreeMap;
use std::fmt;
use tackle_protocol::{HttpRequest, HttpResponse, ToolContext, ToolError};

/// Headers whose values are credentials: never shown back in results or error messages.
const SENSITIVE_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
    "x-api-key",
    "api-key",
    "x-auth-token",
    "x-subscription-token",
];

/// Headers the HTTP client owns. Letting the model set them would allow request smuggling
/// or sending a pinned connection to a different virtual host than the one checked.
const RESERVED_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "te",
    "upgrade",
    "trailer",
    "keep-alive",
    "proxy-connection",
];

pub(crate) const REDACTED: &str = "[redacted]";

/// Is this header's value a credential?
pub(crate) fn is_sensitive(name: &str) -> bool {
    SENSITIVE_HEADERS
        .iter()
        .any(|h| h.eq_ignore_ascii_case(name.trim()))
}

/// The value to show for a header: its own, or `[redacted]` for credentials.
pub(crate) fn shown_value<'a>(name: &str, value: &'a str) -> &'a str {
    if is_sensitive(name) {
        REDACTED
    } else {
        value
    }
}

/// An HTTP method: a non-empty RFC 9110 token, upper-cased.
pub(crate) fn parse_method(raw: &str) -> Result<String, ToolError> {
    let ok = !raw.is_empty()
        && raw.len() <= 32
        && raw
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
    if ok {
        Ok(raw.to_ascii_uppercase())
    } else {
        Err(ToolError::invalid_arguments(format!(
            "method `{}` is not an HTTP method (letters such as GET, POST, PUT, PATCH, DELETE)",
            tackle_protocol::text::preview(raw, 40)
        )))
    }
}

/// An absolute http(s) URL, as the model wrote it.
pub(crate) fn parse_url(raw: &str) -> Result<url::Url, ToolError> {
    let parsed = url::Url::parse(raw).map_err(|e| {
        ToolError::invalid_arguments(format!(
            "url `{}` is not an absolute URL: {e}",
            tackle_protocol::text::preview(raw, 200)
        ))
    })?;
    match parsed.scheme() {
        "http" | "https" => Ok(parsed),
        other => Err(ToolError::invalid_arguments(format!(
            "url scheme `{other}` is not supported; use http or https"
        ))),
    }
}

/// The `headers` argument as a list, refusing client-owned headers and values that would
/// break the request line. Error messages never quote a header's value.
pub(crate) fn checked_headers(
    headers: BTreeMap<String, String>,
) -> Result<Vec<(String, String)>, ToolError> {
    let mut out = Vec::with_capacity(headers.len());
    for (name, value) in headers {
        check_header(&name, &value)?;
        out.push((name, value));
    }
    Ok(out)
}

fn check_header(name: &str, value: &str) -> Result<(), ToolError> {
    let name_ok = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
    if !name_ok {
        return Err(ToolError::invalid_arguments(format!(
            "header name `{}` is not a valid HTTP header name",
            tackle_protocol::text::preview(name, 60)
        )));
    }
    if RESERVED_HEADERS
        .iter()
        .any(|h| h.eq_ignore_ascii_case(name))
    {
        return Err(ToolError::invalid_arguments(format!(
            "header `{name}` is set by the HTTP client and cannot be supplied"
        )));
    }
    if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
        return Err(ToolError::invalid_arguments(format!(
            "header `{name}` has a line break or NUL in its value"
        )));
    }
    Ok(())
}

/// Requests that carry credentials do not follow redirects: the 3xx comes back as is, so a
/// token is never replayed to a destination the model did not name.
pub(crate) fn carries_credentials(headers: &[(String, String)]) -> bool {
    headers.iter().any(|(k, _)| is_sensitive(k))
}

pub(crate) use crate::secrets::Secrets;

/// Send through the host, giving up when the call is cancelled.
pub(crate) async fn send(cx: &ToolContext, req: HttpRequest) -> Result<HttpResponse, ToolError> {
    tokio::select! {
        res = cx.host().http(req) => res.map_err(ToolError::from),
        () = cx.cancel.cancelled() => Err(ToolError::failed("the request was cancelled")),
    }
}

/// The media type of a `Content-Type` value, lower-cased, without parameters.
pub(crate) fn media_type(content_type: Option<&str>) -> String {
    content_type
        .and_then(|ct| ct.split(';').next())
        .map(|m| m.trim().to_ascii_lowercase())
        .unwrap_or_default()
}

/// The `charset` parameter of a `Content-Type` value, if any.
pub(crate) fn charset_param(content_type: &str) -> Option<&str> {
    content_type.split(';').skip(1).find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| v.trim().trim_matches('"').trim_matches('\''))
    })
}

/// How a body should be treated, from its media type (or, without one, its first bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyKind {
    Html,
    Json,
    Text,
    Binary,
}

impl fmt::Display for BodyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BodyKind::Html => "html",
            BodyKind::Json => "json",
            BodyKind::Text => "text",
            BodyKind::Binary => "binary",
        })
    }
}

pub(crate) fn classify(media: &str, body: &[u8]) -> BodyKind {
    match media {
        "text/html" | "application/xhtml+xml" => BodyKind::Html,
        "application/json" => BodyKind::Json,
        m if m.ends_with("+json") => BodyKind::Json,
        m if m.starts_with("text/") || m.ends_with("+xml") => BodyKind::Text,
        "application/xml"
        | "application/javascript"
        | "application/ecmascript"
        | "application/x-javascript"
        | "application/yaml"
        | "application/x-yaml"
        | "application/toml"
        | "application/x-ndjson"
        | "application/x-www-form-urlencoded"
        | "application/graphql" => BodyKind::Text,
        "" => sniff(body),
        _ => BodyKind::Binary,
    }
}

/// No declared type: HTML if it starts like HTML, text if it has no NUL bytes and is valid
/// UTF-8 in its first few KB, else binary.
fn sniff(body: &[u8]) -> BodyKind {
    let head = body.get(..4096).unwrap_or(body);
    let lower = String::from_utf8_lossy(head)
        .trim_start()
        .to_ascii_lowercase();
    if lower.starts_with("<!doctype html") || lower.starts_with("<html") {
        return BodyKind::Html;
    }
    if head.contains(&0) {
        return BodyKind::Binary;
    }
    match std::str::from_utf8(head) {
        Ok(_) => BodyKind::Text,
        // A multi-byte character cut by the 4 KB window is still text.
        Err(e) if e.error_len().is_none() => BodyKind::Text,
        Err(_) => BodyKind::Binary,
    }
}

/// Decode a body to text: the header's charset, else (for HTML) `<meta charset>`, else UTF-8.
/// A byte-order mark wins over both, as browsers do. Returns the text and the encoding used.
pub(crate) fn decode(
    body: &[u8],
    content_type: Option<&str>,
    kind: BodyKind,
) -> (String, &'static str) {
    let declared = content_type
        .and_then(charset_param)
        .and_then(|c| Encoding::for_label(c.as_bytes()));
    let sniffed = || {
        (kind == BodyKind::Html)
            .then(|| extract::meta_charset(body))
            .flatten()
            .and_then(|c| Encoding::for_label(c.as_bytes()))
    };
    let encoding = declared.or_else(sniffed).unwrap_or(encoding_rs::UTF_8);
    let (text, used, _had_errors) = encoding.decode(body);
    (text.into_owned(), used.name())
}

/// `1234567` → `1.2 MB`, for messages about sizes.
pub(crate) fn human_size(bytes: u64) -> String {
    const UNITS: &[&str] = &["bytes", "KB", "MB", "GB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} bytes")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// The `headers` of a call's arguments, read as the tools' `Args` read them.
    fn parse_headers(args: &Value) -> Result<Vec<(String, String)>, ToolError> {
        let headers = serde_json::from_value(args["headers"].clone())
            .map_err(|e| ToolError::invalid_arguments(e.to_string()))?;
        checked_headers(headers)
    }

    #[test]
    fn credential_headers_are_recognised_in_any_case() {
        for h in [
            "Authorization",
            "COOKIE",
            "set-cookie",
            "Proxy-Authorization",
            " cookie ",
        ] {
            assert!(is_sensitive(h), "{h}");
        }
        assert!(!is_sensitive("accept"));
        assert_eq!(shown_value("Set-Cookie", "sid=abc"), REDACTED);
        assert_eq!(shown_value("Accept", "text/html"), "text/html");
    }

    #[test]
    fn host_and_framing_headers_are_refused() {
        for h in ["Host", "content-length", "Transfer-Encoding", "Connection"] {
            let err = parse_headers(&json!({"headers": {h: "x"}})).unwrap_err();
            assert!(err.message.contains("set by the HTTP client"), "{h}: {err}");
        }
    }

    #[test]
    fn header_injection_is_refused_without_echoing_the_value() {
        let args = json!({"headers": {"Authorization": "Bearer s3cret\r\nX-Evil: 1"}});
        let err = parse_headers(&args).unwrap_err();
        assert!(err.message.contains("line break"));
        assert!(!err.message.contains("s3cret"));
    }

    #[test]
    fn methods_are_tokens_and_come_back_upper_case() {
        assert_eq!(parse_method("patch").unwrap(), "PATCH");
        assert!(parse_method("GET /x HTTP/1.1").is_err());
        assert!(parse_method("").is_err());
    }

    #[test]
    fn only_http_and_https_urls_are_accepted() {
        assert!(parse_url("https://example.com/a").is_ok());
        assert!(parse_url("file:///etc/passwd").is_err());
        assert!(parse_url("example.com").is_err());
    }

    #[test]
    fn charset_comes_from_the_header_before_the_meta_tag() {
        let body = b"<meta charset=\"utf-8\"><p>caf\xe9</p>";
        let (text, enc) = decode(body, Some("text/html; charset=ISO-8859-1"), BodyKind::Html);
        assert!(text.contains("café"), "{text}");
        assert_eq!(enc, "windows-1252");
    }

    #[test]
    fn charset_falls_back_to_the_meta_tag_then_utf8() {
        let body = b"<meta charset=\"iso-8859-1\"><p>caf\xe9</p>";
        let (text, _) = decode(body, Some("text/html"), BodyKind::Html);
        assert!(text.contains("café"), "{text}");
        let (text, enc) = decode("naïve".as_bytes(), None, BodyKind::Text);
        assert_eq!((text.as_str(), enc), ("naïve", "UTF-8"));
    }

    #[test]
    fn bodies_are_classified_by_type_then_by_content() {
        assert_eq!(classify("text/html", b""), BodyKind::Html);
        assert_eq!(classify("application/problem+json", b""), BodyKind::Json);
        assert_eq!(classify("image/png", b"text"), BodyKind::Binary);
        assert_eq!(classify("", b"<!DOCTYPE html><html>"), BodyKind::Html);
        assert_eq!(classify("", b"\x89PNG\r\n\x1a\n\0\0"), BodyKind::Binary);
        assert_eq!(classify("", "plain ünïcode".as_bytes()), BodyKind::Text);
    }

    #[test]
    fn sizes_read_like_a_person_wrote_them() {
        assert_eq!(human_size(12), "12 bytes");
        assert_eq!(human_size(20_000_000), "20.0 MB");
    }
}
