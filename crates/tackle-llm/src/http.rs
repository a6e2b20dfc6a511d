//! The transport both wire formats share: sending with retries, mapping HTTP statuses to
//! [`LlmError`]s, and turning a response (SSE or plain JSON) into an [`EventStream`].

use crate::error::LlmError;
use crate::retry::{parse_retry_after, RetryPolicy};
use crate::types::{EventStream, StreamEvent};
use bytes::Bytes;
use eventsource_stream::Eventsource;
use futures_util::stream::{self, BoxStream, StreamExt};
use reqwest::header::{CONTENT_TYPE, RETRY_AFTER};
use reqwest::{RequestBuilder, Response};
use serde_json::Value;
use std::collections::VecDeque;
use std::fmt;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tackle_protocol::text::truncate_at_char_boundary;

/// The most a whole streamed or plain response may hold; a runaway server cannot exhaust memory.
const MAX_BODY_BYTES: usize = 32 * 1024 * 1024;
/// How much of an error body is read, and how much of it goes into the message.
const ERROR_BODY_READ: usize = 64 * 1024;
const ERROR_BODY_SHOWN: usize = 2_000;

/// Turns one provider's wire events into [`StreamEvent`]s.
pub(crate) trait WireDecoder: Send + 'static {
    /// One SSE event (`event` is `message` when the server named none).
    fn on_event(&mut self, event: &str, data: &str) -> Result<Vec<StreamEvent>, LlmError>;
    /// The body ended; a decoder that saw no proper end reports the stream as cut off.
    fn on_eof(&mut self) -> Result<Vec<StreamEvent>, LlmError>;
    /// A non-streamed JSON answer.
    fn on_json(&mut self, body: Value) -> Result<Vec<StreamEvent>, LlmError>;
    /// The terminal event was seen; nothing after it is read.
    fn is_done(&self) -> bool;
}

/// A backend's HTTP side: name (for messages), base URL, client and retry policy.
#[derive(Debug, Clone)]
pub(crate) struct Transport {
    pub backend: String,
    base_url: String,
    /// The HTTP client with the backend's host pinned to the addresses resolved on first use;
    /// dropped after a connection failure so the next try resolves again.
    pinned: Arc<Mutex<Option<reqwest::Client>>>,
    pub retry: RetryPolicy,
    /// The environment variable an `api_key` usually comes from, for the 401 message.
    env_hint: String,
}

impl Transport {
    pub fn new(backend: &str, base_url: &str, env_hint: &str) -> Result<Self, LlmError> {
        let parsed = reqwest::Url::parse(base_url).map_err(|e| LlmError::Config {
            backend: backend.to_string(),
            message: format!("api_base `{base_url}` is not a URL: {e}"),
        })?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host().is_none() {
            return Err(LlmError::Config {
                backend: backend.to_string(),
                message: format!(
                    "api_base `{base_url}` must be an http:// or https:// URL with a host"
                ),
            });
        }
        Ok(Self {
            backend: backend.to_string(),
            base_url: base_url.trim_end_matches('/').to_string(),
            pinned: Arc::new(Mutex::new(None)),
            retry: RetryPolicy::default(),
            env_hint: env_hint.to_string(),
        })
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base_url, path)
    }

    /// The client for this backend. The operator wrote `api_base`, so it is trusted as
    /// written, but still resolved once and pinned (no DNS rebinding between requests),
    /// timed out, and never redirected away from (SPEC.md §4).
    async fn client(&self) -> Result<reqwest::Client, LlmError> {
        if let Some(client) = self.lock_pinned().clone() {
            return Ok(client);
        }
        install_tls_provider();
        let mut builder = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .read_timeout(Duration::from_secs(300))
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("tackle/", env!("CARGO_PKG_VERSION")));
        if let Some((domain, addrs)) = self.resolve().await? {
            builder = builder.resolve_to_addrs(&domain, &addrs);
        }
        let client = builder.build().map_err(|e| LlmError::Config {
            backend: self.backend.clone(),
            message: format!("cannot build an HTTP client: {}", error_chain(&e)),
        })?;
        *self.lock_pinned() = Some(client.clone());
        Ok(client)
    }

    /// The base URL's domain and its addresses; `None` for an IP literal.
    async fn resolve(&self) -> Result<Option<(String, Vec<SocketAddr>)>, LlmError> {
        let url = reqwest::Url::parse(&self.base_url).map_err(|e| LlmError::Config {
            backend: self.backend.clone(),
            message: format!("api_base `{}` is not a URL: {e}", self.base_url),
        })?;
        let Some(domain) = url.domain() else {
            return Ok(None);
        };
        let port = url.port_or_known_default().unwrap_or(443);
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host((domain, port))
            .await
            .map_err(|e| LlmError::Connect {
                backend: self.backend.clone(),
                url: self.base_url.clone(),
                message: format!("cannot resolve `{domain}`: {e}"),
            })?
            .collect();
        Ok(Some((domain.to_string(), addrs)))
    }

    fn lock_pinned(&self) -> std::sync::MutexGuard<'_, Option<reqwest::Client>> {
        self.pinned.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sends the request built by `make` and returns its events. Failures before the first
    /// content event are retried per the policy; once content has been read, never.
    pub async fn open<D: WireDecoder>(
        &self,
        make: impl Fn(&reqwest::Client) -> RequestBuilder,
        model: &str,
        new_decoder: impl Fn() -> D,
    ) -> Result<EventStream, LlmError> {
        let mut attempt = 1u32;
        loop {
            let sent = match self.client().await {
                Ok(client) => self.send_once(make(&client), model).await,
                Err(e) => Err(e),
            };
            let result = match sent {
                Ok(resp) => first_content(self.decode(resp, new_decoder())).await,
                Err(e) => Err(e),
            };
            let err = match result {
                Ok(events) => return Ok(events),
                Err(e) if e.is_retryable() => e,
                Err(e) => return Err(e),
            };
            let Some(wait) = self.retry.delay_after(attempt, err.retry_after()) else {
                return Err(err);
            };
            tracing::warn!(backend = %self.backend, attempt, ?wait, error = %err, "retrying model request");
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }

    async fn send_once(&self, req: RequestBuilder, model: &str) -> Result<Response, LlmError> {
        let resp = match req.send().await {
            Ok(resp) => resp,
            Err(e) => {
                // Resolve again on the next try: the backend may have moved.
                *self.lock_pinned() = None;
                return Err(self.transport_error(&e));
            }
        };
        let status = resp.status().as_u16();
        if resp.status().is_success() {
            return Ok(resp);
        }
        let url = resp.url().to_string();
        let retry_after = retry_after(resp.headers());
        let body = read_error_body(resp).await;
        let backend = self.backend.clone();
        Err(match status {
            401 | 403 => LlmError::Auth {
                backend,
                status,
                env_hint: self.env_hint.clone(),
                detail: suffix(&body),
            },
            404 => LlmError::UnknownModel {
                backend,
                model: model.to_string(),
                url,
                detail: suffix(&body),
            },
            _ => LlmError::Status {
                backend,
                status,
                url,
                body,
                retry_after,
            },
        })
    }

    fn transport_error(&self, e: &reqwest::Error) -> LlmError {
        LlmError::Connect {
            backend: self.backend.clone(),
            url: e
                .url()
                .map(|u| u.to_string())
                .unwrap_or_else(|| self.base_url.clone()),
            message: error_chain(e),
        }
    }

    fn decode<D: WireDecoder>(&self, resp: Response, decoder: D) -> EventStream {
        let is_sse = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| ct.to_ascii_lowercase().contains("text/event-stream"));
        if is_sse {
            decode_sse(resp, decoder, self.backend.clone())
        } else {
            decode_json(resp, decoder, self.backend.clone())
        }
    }
}

/// Reads events up to and including the first content event, so errors that arrive before
/// any content can still be retried; then hands back the whole stream.
async fn first_content(events: EventStream) -> Result<EventStream, LlmError> {
    let mut events = events.fuse();
    let mut head = Vec::new();
    while let Some(item) = events.next().await {
        let ev = item?;
        let content = ev.is_content();
        head.push(Ok(ev));
        if content {
            break;
        }
    }
    Ok(Box::pin(stream::iter(head).chain(events)))
}

/// A body error, as the SSE parser sees it.
#[derive(Debug)]
enum BodyError {
    Transport(String),
    TooLarge,
}

impl fmt::Display for BodyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BodyError::Transport(m) => write!(f, "the connection broke off: {m}"),
            BodyError::TooLarge => write!(f, "the response exceeded {MAX_BODY_BYTES} bytes"),
        }
    }
}

fn capped_bytes(resp: Response) -> impl futures_util::Stream<Item = Result<Bytes, BodyError>> {
    let mut total = 0usize;
    resp.bytes_stream().map(move |chunk| {
        let chunk = chunk.map_err(|e| BodyError::Transport(error_chain(&e)))?;
        total = total.saturating_add(chunk.len());
        if total > MAX_BODY_BYTES {
            return Err(BodyError::TooLarge);
        }
        Ok(chunk)
    })
}

struct SseState<D> {
    sse: BoxStream<
        'static,
        Result<eventsource_stream::Event, eventsource_stream::EventStreamError<BodyError>>,
    >,
    decoder: D,
    pending: VecDeque<Result<StreamEvent, LlmError>>,
    done: bool,
    backend: String,
}

fn decode_sse<D: WireDecoder>(resp: Response, decoder: D, backend: String) -> EventStream {
    let state = SseState {
        sse: Box::pin(capped_bytes(resp).eventsource()),
        decoder,
        pending: VecDeque::new(),
        done: false,
        backend,
    };
    Box::pin(stream::unfold(state, |mut st| async move {
        loop {
            if let Some(item) = st.pending.pop_front() {
                return Some((item, st));
            }
            if st.done {
                return None;
            }
            step(&mut st).await;
        }
    }))
}

/// Reads one SSE event and queues what it decodes to.
async fn step<D: WireDecoder>(st: &mut SseState<D>) {
    let decoded = match st.sse.next().await {
        Some(Ok(ev)) => st.decoder.on_event(&ev.event, &ev.data),
        Some(Err(e)) => Err(LlmError::protocol(
            &st.backend,
            format!("bad event stream: {e}"),
        )),
        None => {
            st.done = true;
            st.decoder.on_eof()
        }
    };
    match decoded {
        Ok(events) => st.pending.extend(events.into_iter().map(Ok)),
        Err(e) => {
            st.done = true;
            st.pending.push_back(Err(e));
        }
    }
    if st.decoder.is_done() {
        st.done = true;
    }
}

fn decode_json<D: WireDecoder>(resp: Response, mut decoder: D, backend: String) -> EventStream {
    let fut = async move {
        let body = read_capped(resp, MAX_BODY_BYTES)
            .await
            .map_err(|e| LlmError::protocol(&backend, e.to_string()))?;
        let value: Value = serde_json::from_slice(&body).map_err(|e| {
            let text = String::from_utf8_lossy(&body);
            LlmError::protocol(
                &backend,
                format!(
                    "the answer is not JSON ({e}): {}",
                    truncate_at_char_boundary(&text, ERROR_BODY_SHOWN)
                ),
            )
        })?;
        decoder.on_json(value)
    };
    Box::pin(
        stream::once(fut)
            .map(|r| match r {
                Ok(events) => events.into_iter().map(Ok).collect::<Vec<_>>(),
                Err(e) => vec![Err(e)],
            })
            .flat_map(stream::iter),
    )
}

async fn read_capped(resp: Response, cap: usize) -> Result<Vec<u8>, BodyError> {
    let mut out = Vec::new();
    let mut body = Box::pin(capped_bytes(resp));
    while let Some(chunk) = body.next().await {
        out.extend_from_slice(&chunk?);
        if out.len() > cap {
            return Err(BodyError::TooLarge);
        }
    }
    Ok(out)
}

async fn read_error_body(resp: Response) -> String {
    let mut out = Vec::new();
    let mut body = Box::pin(capped_bytes(resp));
    while let Some(Ok(chunk)) = body.next().await {
        out.extend_from_slice(&chunk);
        if out.len() >= ERROR_BODY_READ {
            break;
        }
    }
    let text = String::from_utf8_lossy(&out);
    truncate_at_char_boundary(text.trim(), ERROR_BODY_SHOWN).to_string()
}

/// `retry-after-ms` (OpenAI) wins over the standard `Retry-After`.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let text = |name| {
        headers
            .get(name)
            .and_then(|v: &reqwest::header::HeaderValue| v.to_str().ok())
    };
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.trim().parse::<u64>().ok()) {
        return Some(Duration::from_millis(ms));
    }
    text(RETRY_AFTER.as_str()).and_then(|v| parse_retry_after(v, SystemTime::now()))
}

fn suffix(body: &str) -> String {
    if body.is_empty() {
        String::new()
    } else {
        format!("; the server said: {body}")
    }
}

/// An error with its causes, so "error sending request" also says "connection refused".
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
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

/// Make ring the process's TLS provider before a `reqwest` client is built: reqwest is built
/// without one, so that the binary carries a single TLS backend. Idempotent.
pub(crate) fn install_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
