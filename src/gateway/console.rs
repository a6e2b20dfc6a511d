//! The web console at `/`: one HTML page with its script and style sheet, embedded in the
//! binary at build time (no Node, no framework, nothing fetched from elsewhere). The page
//! itself needs no token; everything it shows comes from the API with the token the person
//! logs in with, so the console can do exactly what that token's scopes allow.

use super::errors::ApiError;
use axum::extract::Path;
use axum::http::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};

/// Each embedded file: its name under `/console/`, its media type and its bytes.
const FILES: &[(&str, &str, &str)] = &[
    (
        "console.js",
        "text/javascript; charset=utf-8",
        include_str!("console/console.js"),
    ),
    (
        "console.css",
        "text/css; charset=utf-8",
        include_str!("console/console.css"),
    ),
];

const INDEX: &str = include_str!("console/index.html");

/// The media types the console's routes answer with (for `/openapi.json`).
pub const PAGE_MEDIA: &[&str] = &["text/html; charset=utf-8"];
pub const ASSET_MEDIA: &[&str] = &["text/javascript; charset=utf-8", "text/css; charset=utf-8"];

/// Only the page's own files, scripts included; no inline script, no frames, nothing from
/// elsewhere: a value shown on the page (a tool's output, a session's text) cannot run.
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

fn file(media: &'static str, body: &'static str) -> Response {
    (
        [
            (CONTENT_TYPE, media),
            (CONTENT_SECURITY_POLICY, POLICY),
            (CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

pub async fn index() -> Response {
    file("text/html; charset=utf-8", INDEX)
}

pub async fn asset(Path(name): Path<String>) -> Result<Response, ApiError> {
    FILES
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, media, body)| file(media, body))
        .ok_or_else(|| {
            ApiError::not_found(format!(
                "no console file `{}`",
                tackle_protocol::text::preview(&name, 100)
            ))
        })
}

/// Bytes a browser downloads to show the console (page, script, style).
#[cfg(test)]
pub fn page_weight() -> usize {
    INDEX.len() + FILES.iter().map(|(_, _, body)| body.len()).sum::<usize>()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_console_weighs_less_than_100_kb() {
        assert!(
            super::page_weight() < 100 * 1024,
            "{}",
            super::page_weight()
        );
    }
}
