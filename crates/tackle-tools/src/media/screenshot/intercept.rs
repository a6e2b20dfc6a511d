//! Every request the browser makes, answered through the host.
//!
//! The page's requests are paused by CDP `Fetch` interception (all URL patterns, request
//! stage). Each one is fetched through `cx.host().http(..)` — the call's network grant, the
//! SSRF guard with pinned DNS, the size cap and the time limit — and answered with
//! `Fetch.fulfillRequest`, or `Fetch.failRequest` when the host refuses it. A page's
//! `<img src="http://169.254.169.254/">` is therefore decided exactly like a `web_fetch` of
//! that URL. Redirects are not followed by the host: the 3xx goes back to the browser, whose
//! next request is paused and checked again, so every hop meets the grant.

use crate::web::net;
use base64::Engine as _;
use chromiumoxide::cdp::browser_protocol::fetch::{
    EventRequestPaused, FailRequestParams, FulfillRequestParams, HeaderEntry, RequestId,
};
use chromiumoxide::cdp::browser_protocol::network::{ErrorReason, Request, ResourceType};
use chromiumoxide::cdp::browser_protocol::page::FrameId;
use chromiumoxide::listeners::EventStream;
use chromiumoxide::Page;
use futures::stream::FuturesUnordered;
use futures::StreamExt;
use serde_json::Value;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tackle_protocol::{ErrorKind, HttpRequest, HttpResponse, ToolContext, ToolError};

/// Redirects of the page's own document (the first load is not one).
pub(crate) const MAX_DOCUMENT_REDIRECTS: usize = 5;
/// Requests one page may make; past this it is not a page worth a picture.
const MAX_REQUESTS: usize = 500;
/// The largest single resource handed to the browser.
const MAX_RESOURCE_BYTES: u64 = 16 * 1024 * 1024;
/// All the bytes one page may pull through the host.
const MAX_PAGE_BYTES: u64 = 64 * 1024 * 1024;
/// Requests fetched at once; the rest wait, so memory stays bounded by this times the cap.
const MAX_IN_FLIGHT: usize = 8;

/// Request headers the browser may not choose: the host's client owns framing and the
/// connection, and an encoding the client would not decode is not asked for.
const DROPPED_REQUEST_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "te",
    "upgrade",
    "trailer",
    "keep-alive",
    "proxy-connection",
    "proxy-authorization",
    "accept-encoding",
];

/// Response headers that describe the host's connection, not the resource.
const DROPPED_RESPONSE_HEADERS: &[&str] = &[
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "proxy-connection",
    "trailer",
    "upgrade",
    "alt-svc",
];

/// Answers the paused requests of one page and remembers why its document, if it was,
/// could not be loaded.
pub(super) struct Gate<'a> {
    cx: &'a ToolContext,
    main_frame: FrameId,
    timeout: Duration,
    in_flight: tokio::sync::Semaphore,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    requests: usize,
    documents: usize,
    refused: usize,
    bytes: u64,
    /// Why the page's own document was not delivered; the first reason is kept.
    refusal: Option<ToolError>,
}

enum Answer {
    Fulfill(Box<FulfillRequestParams>),
    Fail(ErrorReason),
}

impl<'a> Gate<'a> {
    pub(super) fn new(cx: &'a ToolContext, main_frame: FrameId, timeout: Duration) -> Self {
        Self {
            cx,
            main_frame,
            timeout,
            in_flight: tokio::sync::Semaphore::new(MAX_IN_FLIGHT),
            state: Mutex::new(State::default()),
        }
    }

    /// Answer paused requests, several at once, until the event stream ends.
    pub(super) async fn serve(&self, page: &Page, mut paused: EventStream<EventRequestPaused>) {
        let mut pending = FuturesUnordered::new();
        loop {
            tokio::select! {
                event = paused.next() => match event {
                    Some(event) => pending.push(self.answer(page, event)),
                    None => break,
                },
                Some(()) = pending.next(), if !pending.is_empty() => {}
            }
        }
        while pending.next().await.is_some() {}
    }

    /// Why the page's document was not delivered, if it was not.
    pub(super) fn refusal(&self) -> Option<ToolError> {
        self.lock().refusal.clone()
    }

    /// How many of the page's requests were refused or failed.
    pub(super) fn refused(&self) -> usize {
        self.lock().refused
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn answer(&self, page: &Page, event: Arc<EventRequestPaused>) {
        let id = event.request_id.clone();
        // An answer to a request the page has abandoned meanwhile is refused by the browser;
        // there is nothing left to do for it.
        match self.decide(&event).await {
            Answer::Fulfill(params) => {
                let _ = page.execute(*params).await;
            }
            Answer::Fail(reason) => {
                self.lock().refused += 1;
                let _ = page.execute(FailRequestParams::new(id, reason)).await;
            }
        }
    }

    async fn decide(&self, event: &EventRequestPaused) -> Answer {
        let document =
            event.resource_type == ResourceType::Document && event.frame_id == self.main_frame;
        {
            let mut state = self.lock();
            state.requests += 1;
            if state.requests > MAX_REQUESTS {
                return Answer::Fail(ErrorReason::BlockedByClient);
            }
            if document {
                state.documents += 1;
                if state.documents > MAX_DOCUMENT_REDIRECTS + 1 {
                    refuse(
                        &mut state,
                        ToolError::failed(format!(
                            "the page redirected more than {MAX_DOCUMENT_REDIRECTS} times; \
                             nothing was captured"
                        )),
                    );
                    return Answer::Fail(ErrorReason::BlockedByClient);
                }
            }
        }
        let outcome = match host_request(&event.request, self.timeout) {
            Ok(req) => {
                // Never closed, so a permit always comes; without one the request is refused.
                let Ok(_permit) = self.in_flight.acquire().await else {
                    return Answer::Fail(ErrorReason::Failed);
                };
                net::send(self.cx, req).await
            }
            Err(e) => Err(e),
        };
        if let Ok(resp) = &outcome {
            let mut state = self.lock();
            state.bytes = state.bytes.saturating_add(resp.body.len() as u64);
            if state.bytes > MAX_PAGE_BYTES {
                if document {
                    refuse(
                        &mut state,
                        ToolError::failed("the page pulled more than 64 MiB; nothing was captured"),
                    );
                }
                return Answer::Fail(ErrorReason::Failed);
            }
        }
        match outcome {
            Ok(resp) if resp.truncated => {
                if document {
                    refuse(
                        &mut self.lock(),
                        ToolError::failed(format!(
                            "the page is larger than {} MiB; nothing was captured",
                            MAX_RESOURCE_BYTES / (1024 * 1024)
                        )),
                    );
                }
                Answer::Fail(ErrorReason::Failed)
            }
            Ok(resp) => Answer::Fulfill(Box::new(fulfilment(event.request_id.clone(), resp))),
            Err(e) => {
                let reason = match e.kind {
                    ErrorKind::Denied | ErrorKind::InvalidArguments => ErrorReason::AccessDenied,
                    ErrorKind::Timeout => ErrorReason::TimedOut,
                    _ => ErrorReason::Failed,
                };
                if document {
                    refuse(&mut self.lock(), e);
                }
                Answer::Fail(reason)
            }
        }
    }
}

fn refuse(state: &mut State, why: ToolError) {
    if state.refusal.is_none() {
        state.refusal = Some(why);
    }
}

/// The browser's request as the host's client sends it: same method, URL, headers it may
/// choose and body; never following redirects itself.
fn host_request(req: &Request, timeout: Duration) -> Result<HttpRequest, ToolError> {
    let url = net::parse_url(&req.url)?;
    let mut headers = Vec::new();
    if let Value::Object(map) = req.headers.inner() {
        for (name, value) in map {
            let Some(value) = value.as_str() else {
                continue;
            };
            let dropped = DROPPED_REQUEST_HEADERS
                .iter()
                .any(|h| h.eq_ignore_ascii_case(name));
            if !dropped && header_ok(name, value) {
                headers.push((name.clone(), value.to_string()));
            }
        }
    }
    let body = req.post_data_entries.as_ref().map(|entries| {
        let mut body = Vec::new();
        for bytes in entries.iter().filter_map(|e| e.bytes.as_ref()) {
            let encoded: &str = bytes.as_ref();
            if let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(encoded) {
                body.extend_from_slice(&decoded);
            }
        }
        body
    });
    Ok(HttpRequest {
        method: net::parse_method(&req.method)?,
        url: url.to_string(),
        headers,
        body,
        max_bytes: MAX_RESOURCE_BYTES,
        timeout,
        follow_redirects: false,
        operator_configured: false,
    })
}

/// The host's response handed to the browser as is, less the connection's own headers.
fn fulfilment(id: RequestId, resp: HttpResponse) -> FulfillRequestParams {
    let headers: Vec<HeaderEntry> = resp
        .headers
        .iter()
        .filter(|(name, value)| {
            !DROPPED_RESPONSE_HEADERS
                .iter()
                .any(|h| h.eq_ignore_ascii_case(name))
                && header_ok(name, value)
        })
        .map(|(name, value)| HeaderEntry::new(name.clone(), value.clone()))
        .collect();
    let mut params = FulfillRequestParams::new(id, i64::from(resp.status));
    params.response_headers = Some(headers);
    params.body = Some(
        base64::engine::general_purpose::STANDARD
            .encode(&resp.body)
            .into(),
    );
    params
}

/// A header CDP will accept: a token name and a value without line breaks or NUL.
fn header_ok(name: &str, value: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
        && !value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chromiumoxide::cdp::browser_protocol::network::{Headers, PostDataEntry};

    fn request(url: &str, headers: Value) -> Request {
        let mut req: Request = serde_json::from_value(serde_json::json!({
            "url": url,
            "method": "GET",
            "headers": {},
            "initialPriority": "High",
            "referrerPolicy": "no-referrer",
        }))
        .unwrap();
        req.headers = Headers::new(headers);
        req
    }

    #[test]
    fn the_browser_may_not_choose_framing_or_encoding_headers() {
        let req = request(
            "https://example.com/a?b=1",
            serde_json::json!({
                "Host": "evil.example",
                "Accept-Encoding": "gzip, br",
                "User-Agent": "Chromium",
                "Content-Length": "5",
                "X-Bad": "a\r\nInjected: 1",
            }),
        );
        let sent = host_request(&req, Duration::from_secs(3)).unwrap();
        assert_eq!(sent.url, "https://example.com/a?b=1");
        assert!(!sent.follow_redirects && !sent.operator_configured);
        let names: Vec<&str> = sent.headers.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, vec!["User-Agent"]);
    }

    #[test]
    fn only_http_requests_are_sent() {
        for url in [
            "file:///etc/passwd",
            "ftp://example.com/",
            "chrome://version",
        ] {
            let err = host_request(&request(url, serde_json::json!({})), Duration::from_secs(1))
                .unwrap_err();
            assert_eq!(err.kind, ErrorKind::InvalidArguments, "{url}");
        }
    }

    #[test]
    fn a_posted_body_is_passed_on() {
        let mut req = request("http://127.0.0.1:1/form", serde_json::json!({}));
        req.method = "post".into();
        req.post_data_entries = Some(vec![PostDataEntry {
            bytes: Some("YT0x".to_string().into()),
        }]);
        let sent = host_request(&req, Duration::from_secs(1)).unwrap();
        assert_eq!(sent.method, "POST");
        assert_eq!(sent.body.as_deref(), Some(&b"a=1"[..]));
    }

    #[test]
    fn the_response_keeps_its_own_headers_only() {
        let resp = HttpResponse {
            status: 302,
            headers: vec![
                ("Location".into(), "/next".into()),
                ("Content-Length".into(), "0".into()),
                ("Alt-Svc".into(), "h3=\":443\"".into()),
                ("Set-Cookie".into(), "a=1".into()),
            ],
            body: b"hi".to_vec(),
            final_url: "http://x/".into(),
            redirects: Vec::new(),
            truncated: false,
        };
        let params = fulfilment(RequestId::new("r1"), resp);
        assert_eq!(params.response_code, 302);
        let names: Vec<String> = params
            .response_headers
            .unwrap_or_default()
            .into_iter()
            .map(|h| h.name)
            .collect();
        assert_eq!(names, vec!["Location", "Set-Cookie"]);
        let body: String = params.body.map(String::from).unwrap_or_default();
        assert_eq!(body, "aGk=");
    }
}
