//! The transport both wire formats share: sending with retries, mapping HTTP statuses to
//! [`LlmError`]s, and turning a response (SSE or plain JSON) into an [`EventStream`].

use crate::error::LlmError;
use crate::retry::{parse_retry_after, RetryPolicy};
use crate::timeouts::{report, Progress, ProgressHook, Timeouts};
use crate::types::{EventStream, StreamEvent};
use bytes::Bytes;
use eventsource_stream::Eventsource;
use futures_util::stream::{self, BoxStream, StreamExt};
use reqwest::header::{CONTENT_TYPE, RETRY_AFTER};
use reqwest::{RequestBuilder, Response};
use serde_json::Value;
use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tackle_protocol::text::truncate_at_char_boundary;
use tokio::time::Instant;

/// The most a whole streamed or plain response may hold; a runaway server cannot exhaust memory.
const MAX_BODY_BYTES: usize = 32 * 1024 * 1024;
/// How much of an error body is read, and how much of it goes into the message.
const ERROR_BODY_READ: usize = 64 * 1024;
const ERROR_BODY_SHOWN: usize = 2_000;
/// A server that went silent (first-byte or idle timeout) is retried at most this often: it
/// may hang again, and each hang costs a whole timeout.
const MAX_STALL_RETRIES: u32 = 1;

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
    /// Connect, first-byte and idle timeouts; set before the first request.
    pub timeouts: Timeouts,
    /// The environment variable an `api_key` usually comes from, for the 401 message.
    env_hint: String,
}

impl Transport {
    /// `base_url` is normalised by [`crate::config::normalize_api_base`], the rule every
    /// provider shares.
    pub fn new(backend: &str, base_url: &str, env_hint: &str) -> Result<Self, LlmError> {
        let base_url = crate::config::normalize_api_base(backend, base_url)?;
        Ok(Self {
            backend: backend.to_string(),
            base_url,
            pinned: Arc::new(Mutex::new(None)),
            retry: RetryPolicy::default(),
            timeouts: Timeouts::default(),
            env_hint: env_hint.to_string(),
        })
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base_url, path)
    }

    /// The client for this backend. The operator wrote `api_base`, so it is trusted as
    /// written, but still resolved once and pinned (no DNS rebinding between requests),
    /// timed out, and never redirected away from (docs/architecture.md, "Grants").
    async fn client(&self) -> Result<reqwest::Client, LlmError> {
        if let Some(client) = self.lock_pinned().clone() {
            return Ok(client);
        }
        install_tls_provider();
        // No read timeout here: the first-byte and idle timeouts are enforced around each
        // read (`send_once`, `timed_bytes`), where a stall can be told from a broken connection.
        let mut builder = reqwest::Client::builder()
            .connect_timeout(self.timeouts.connect)
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
        let connect_error = |message: String| LlmError::Connect {
            backend: self.backend.clone(),
            url: self.base_url.clone(),
            message,
        };
        let addrs: Vec<SocketAddr> = tokio::time::timeout(
            self.timeouts.connect,
            tokio::net::lookup_host((domain, port)),
        )
        .await
        .map_err(|_| {
            connect_error(format!(
                "resolving `{domain}` took longer than {} s",
                secs_shown(self.timeouts.connect)
            ))
        })?
        .map_err(|e| connect_error(format!("cannot resolve `{domain}`: {e}")))?
        .collect();
        Ok(Some((domain.to_string(), addrs)))
    }

    fn lock_pinned(&self) -> std::sync::MutexGuard<'_, Option<reqwest::Client>> {
        self.pinned.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sends the request built by `make` and returns its events. Failures before the first
    /// content event are retried per the policy (a stall at most [`MAX_STALL_RETRIES`] times);
    /// once content has been read, never. Until content arrives, `progress` hears a
    /// [`Progress::Waiting`] every `timeouts.waiting_notice`, and a [`Progress::Retrying`]
    /// before each retry.
    pub async fn open<D: WireDecoder>(
        &self,
        make: impl Fn(&reqwest::Client) -> RequestBuilder,
        model: &str,
        new_decoder: impl Fn() -> D,
        progress: Option<&ProgressHook>,
    ) -> Result<EventStream, LlmError> {
        let started = Instant::now();
        let mut attempt = 1u32;
        let mut stalls = 0u32;
        loop {
            let one = self.attempt(&make, model, &new_decoder);
            let result = self.with_notices(one, started, attempt, progress).await;
            let err = match result {
                Ok(events) => return Ok(events),
                Err(e) if e.is_retryable() => e,
                Err(e) => return Err(e),
            };
            if err.is_stall() {
                stalls = stalls.saturating_add(1);
                if stalls > MAX_STALL_RETRIES {
                    return Err(err);
                }
            }
            let Some(wait) = self.retry.delay_after(attempt, err.retry_after()) else {
                return Err(err);
            };
            // A stall gets one more try; say so rather than the policy's maximum.
            let max_attempts = if err.is_stall() {
                attempt.saturating_add(1).min(self.retry.max_attempts)
            } else {
                self.retry.max_attempts
            };
            report(
                progress,
                &Progress::Retrying {
                    backend: self.backend.clone(),
                    attempt,
                    max_attempts,
                    wait,
                    reason: err.to_string(),
                },
            );
            tokio::time::sleep(wait).await;
            attempt = attempt.saturating_add(1);
        }
    }

    /// One try: connect, send, and read up to the first content event.
    async fn attempt<D: WireDecoder>(
        &self,
        make: &impl Fn(&reqwest::Client) -> RequestBuilder,
        model: &str,
        new_decoder: &impl Fn() -> D,
    ) -> Result<EventStream, LlmError> {
        let client = self.client().await?;
        let first_byte_deadline = Instant::now() + self.timeouts.first_byte_wait();
        let resp = self
            .send_once(make(&client), model, first_byte_deadline)
            .await?;
        first_content(self.decode(resp, new_decoder(), first_byte_deadline)).await
    }

    /// Runs `fut`, reporting [`Progress::Waiting`] every `timeouts.waiting_notice` (counted
    /// from `started`, the first try) until it ends.
    async fn with_notices<T>(
        &self,
        fut: impl Future<Output = T>,
        started: Instant,
        attempt: u32,
        progress: Option<&ProgressHook>,
    ) -> T {
        let every = self.timeouts.waiting_notice;
        tokio::pin!(fut);
        if every.is_zero() {
            return fut.await;
        }
        let mut next = started + every;
        loop {
            let now = Instant::now();
            while next <= now {
                next += every;
            }
            tokio::select! {
                biased;
                out = &mut fut => return out,
                () = tokio::time::sleep_until(next) => report(
                    progress,
                    &Progress::Waiting {
                        backend: self.backend.clone(),
                        elapsed: started.elapsed(),
                        attempt,
                    },
                ),
            }
        }
    }

    fn first_byte_timeout(&self, headers: bool) -> LlmError {
        LlmError::FirstByteTimeout {
            backend: self.backend.clone(),
            url: self.base_url.clone(),
            secs: secs_shown(self.timeouts.first_byte_wait()),
            headers,
        }
    }

    async fn send_once(
        &self,
        req: RequestBuilder,
        model: &str,
        first_byte_deadline: Instant,
    ) -> Result<Response, LlmError> {
        let resp = match tokio::time::timeout_at(first_byte_deadline, req.send()).await {
            Ok(Ok(resp)) => resp,
            Ok(Err(e)) => {
                // Resolve again on the next try: the backend may have moved.
                *self.lock_pinned() = None;
                return Err(self.transport_error(&e));
            }
            Err(_) => return Err(self.first_byte_timeout(false)),
        };
        let status = resp.status().as_u16();
        if resp.status().is_success() {
            return Ok(resp);
        }
        let url = resp.url().to_string();
        let retry_after = retry_after(resp.headers());
        let body = read_error_body(resp, self.timeouts.idle).await;
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

    /// A send that failed: connecting (refused, timed out, TLS), or the connection breaking
    /// before the response headers, which is not a connect failure and is not called one.
    fn transport_error(&self, e: &reqwest::Error) -> LlmError {
        let backend = self.backend.clone();
        let url = e
            .url()
            .map(|u| u.to_string())
            .unwrap_or_else(|| self.base_url.clone());
        let message = error_chain(e);
        if e.is_connect() {
            LlmError::Connect {
                backend,
                url,
                message,
            }
        } else {
            LlmError::Disconnected {
                backend,
                url,
                message,
            }
        }
    }

    fn decode<D: WireDecoder>(
        &self,
        resp: Response,
        decoder: D,
        first_byte_deadline: Instant,
    ) -> EventStream {
        let is_sse = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| ct.to_ascii_lowercase().contains("text/event-stream"));
        let ctx = BodyContext {
            backend: self.backend.clone(),
            url: self.base_url.clone(),
            timeouts: self.timeouts,
        };
        let body = timed_bytes(resp, first_byte_deadline, self.timeouts.idle);
        if is_sse {
            decode_sse(body, decoder, ctx)
        } else {
            decode_json(body, decoder, ctx)
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
    /// No byte of the body before the first-byte deadline.
    FirstByte,
    /// The body started, then no byte for the idle timeout.
    Idle,
}

impl fmt::Display for BodyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BodyError::Transport(m) => write!(f, "the connection broke off: {m}"),
            BodyError::TooLarge => write!(f, "the response exceeded {MAX_BODY_BYTES} bytes"),
            BodyError::FirstByte => write!(f, "no data before the first-byte timeout"),
            BodyError::Idle => write!(f, "no data within the idle timeout"),
        }
    }
}

/// What a body error needs to become an [`LlmError`] naming the backend and its timeouts.
struct BodyContext {
    backend: String,
    url: String,
    timeouts: Timeouts,
}

impl BodyContext {
    /// The stall errors for a timeout, `None` for the other body errors. `events`: how many
    /// events had been read.
    fn stall(&self, e: &BodyError, events: u64) -> Option<LlmError> {
        match e {
            BodyError::FirstByte => Some(LlmError::FirstByteTimeout {
                backend: self.backend.clone(),
                url: self.url.clone(),
                secs: secs_shown(self.timeouts.first_byte_wait()),
                headers: true,
            }),
            BodyError::Idle => Some(LlmError::StreamStalled {
                backend: self.backend.clone(),
                url: self.url.clone(),
                secs: secs_shown(self.timeouts.idle),
                events,
            }),
            BodyError::Transport(_) | BodyError::TooLarge => None,
        }
    }
}

/// Whole seconds for messages ("nothing for at least this long"); never "0 s".
fn secs_shown(d: Duration) -> u64 {
    d.as_secs().max(1)
}

type BodyStream = BoxStream<'static, Result<Bytes, BodyError>>;

/// The body, capped at [`MAX_BODY_BYTES`]: the first chunk must come before
/// `first_byte_deadline`, each later one within `idle` of the one before. Ends after an error.
fn timed_bytes(resp: Response, first_byte_deadline: Instant, idle: Duration) -> BodyStream {
    struct St {
        inner: BoxStream<'static, reqwest::Result<Bytes>>,
        started: bool,
        first_byte_deadline: Instant,
        idle: Duration,
        total: usize,
        ended: bool,
    }
    let st = St {
        inner: Box::pin(resp.bytes_stream()),
        started: false,
        first_byte_deadline,
        idle,
        total: 0,
        ended: false,
    };
    let body = stream::unfold(st, |mut st| async move {
        if st.ended {
            return None;
        }
        let deadline = if st.started {
            Instant::now() + st.idle
        } else {
            st.first_byte_deadline
        };
        let item = match tokio::time::timeout_at(deadline, st.inner.next()).await {
            Ok(None) => return None,
            Ok(Some(Ok(chunk))) => {
                st.started = true;
                st.total = st.total.saturating_add(chunk.len());
                if st.total > MAX_BODY_BYTES {
                    Err(BodyError::TooLarge)
                } else {
                    Ok(chunk)
                }
            }
            Ok(Some(Err(e))) => Err(BodyError::Transport(error_chain(&e))),
            Err(_) if st.started => Err(BodyError::Idle),
            Err(_) => Err(BodyError::FirstByte),
        };
        st.ended = item.is_err();
        Some((item, st))
    });
    // Fused: the parser may poll again after the end, which a bare `unfold` does not allow.
    Box::pin(body.fuse())
}

struct SseState<D> {
    sse: BoxStream<
        'static,
        Result<eventsource_stream::Event, eventsource_stream::EventStreamError<BodyError>>,
    >,
    decoder: D,
    pending: VecDeque<Result<StreamEvent, LlmError>>,
    done: bool,
    ctx: BodyContext,
    /// SSE events read so far, for the stall message.
    events: u64,
}

fn decode_sse<D: WireDecoder>(body: BodyStream, decoder: D, ctx: BodyContext) -> EventStream {
    let state = SseState {
        sse: Box::pin(body.eventsource()),
        decoder,
        pending: VecDeque::new(),
        done: false,
        ctx,
        events: 0,
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
        Some(Ok(ev)) => {
            st.events = st.events.saturating_add(1);
            st.decoder.on_event(&ev.event, &ev.data)
        }
        Some(Err(eventsource_stream::EventStreamError::Transport(e))) => {
            Err(st.ctx.stall(&e, st.events).unwrap_or_else(|| {
                LlmError::protocol(&st.ctx.backend, format!("bad event stream: {e}"))
            }))
        }
        Some(Err(e)) => Err(LlmError::protocol(
            &st.ctx.backend,
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

fn decode_json<D: WireDecoder>(body: BodyStream, mut decoder: D, ctx: BodyContext) -> EventStream {
    let fut = async move {
        let backend = ctx.backend.clone();
        let body = read_capped(body, MAX_BODY_BYTES).await.map_err(|e| {
            ctx.stall(&e, 0)
                .unwrap_or_else(|| LlmError::protocol(&backend, e.to_string()))
        })?;
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

async fn read_capped(mut body: BodyStream, cap: usize) -> Result<Vec<u8>, BodyError> {
    let mut out = Vec::new();
    while let Some(chunk) = body.next().await {
        out.extend_from_slice(&chunk?);
        if out.len() > cap {
            return Err(BodyError::TooLarge);
        }
    }
    Ok(out)
}

/// As much of an error body as comes without a gap longer than `idle`.
async fn read_error_body(resp: Response, idle: Duration) -> String {
    let mut out = Vec::new();
    let mut body = timed_bytes(resp, Instant::now() + idle, idle);
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
