//! Issue #39: a model server that accepts the connection and then says nothing, or stops in
//! the middle of a stream. Real HTTP servers on 127.0.0.1 that misbehave on purpose; small
//! timeouts; the provider must end with an error that names the stall, well within a bound.

mod common;

use common::*;
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tackle_llm::{
    complete, provider_from_config, AnthropicProvider, ChatRequest, LlmError, OpenAiProvider,
    Progress, ProgressHook, Provider, RetryPolicy, StreamEvent, Timeouts,
};
use tackle_protocol::config::BackendConfig;
use tackle_protocol::message::Message;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Far more than any timeout below: every stall must end long before this.
const BOUND: Duration = Duration::from_secs(10);

const SSE_HEAD: &str =
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";

fn small_timeouts() -> Timeouts {
    Timeouts {
        connect: Duration::from_millis(500),
        first_byte: Duration::from_secs(1),
        idle: Duration::from_secs(1),
        waiting_notice: Duration::from_millis(200),
    }
}

/// What the server does after reading a request.
#[derive(Clone)]
enum Behaviour {
    /// Nothing at all: no status line, no headers; the socket stays open.
    Silent,
    /// Writes `head` and `chunks`, then holds the socket open without another byte.
    StallAfter {
        head: &'static str,
        chunks: Vec<String>,
    },
    /// Closes the connection at once, without a byte.
    Close,
    /// Writes `head`, then each chunk `gap` apart, then closes.
    Trickle {
        head: &'static str,
        chunks: Vec<String>,
        gap: Duration,
    },
}

struct Server {
    url: String,
    /// Requests read so far (one per try).
    requests: Arc<AtomicUsize>,
}

async fn serve(behaviour: Behaviour) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let requests = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&requests);
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let behaviour = behaviour.clone();
            let count = Arc::clone(&count);
            tokio::spawn(async move {
                if !read_request(&mut sock).await {
                    return;
                }
                count.fetch_add(1, Ordering::SeqCst);
                match behaviour {
                    Behaviour::Silent => {}
                    Behaviour::Close => return,
                    Behaviour::StallAfter { head, chunks } => {
                        let _ = sock.write_all(head.as_bytes()).await;
                        for c in chunks {
                            let _ = sock.write_all(c.as_bytes()).await;
                        }
                        let _ = sock.flush().await;
                    }
                    Behaviour::Trickle { head, chunks, gap } => {
                        let _ = sock.write_all(head.as_bytes()).await;
                        for c in chunks {
                            tokio::time::sleep(gap).await;
                            let _ = sock.write_all(c.as_bytes()).await;
                            let _ = sock.flush().await;
                        }
                        return;
                    }
                }
                // Hold the connection open, saying nothing more.
                tokio::time::sleep(Duration::from_secs(3600)).await;
                drop(sock);
            });
        }
    });
    Server {
        url: format!("http://{addr}"),
        requests,
    }
}

/// Reads one request (head and `content-length` body); false if the client went away.
async fn read_request(sock: &mut tokio::net::TcpStream) -> bool {
    let mut req = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&req).into_owned();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let len = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .and_then(|v| v.trim().parse::<usize>().ok())
                })
                .unwrap_or(0);
            if body.len() >= len {
                return true;
            }
        }
        match sock.read(&mut buf).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => req.extend_from_slice(buf.get(..n).unwrap_or_default()),
        }
    }
}

fn openai(url: &str) -> OpenAiProvider {
    OpenAiProvider::new("silent", &format!("{url}/v1"), None)
        .unwrap()
        .with_retry(fast_retry())
        .with_timeouts(small_timeouts())
}

fn anthropic(url: &str) -> AnthropicProvider {
    AnthropicProvider::new("silent", url, "sk-ant-test".into())
        .unwrap()
        .with_retry(fast_retry())
        .with_timeouts(small_timeouts())
}

fn request() -> ChatRequest {
    ChatRequest::new("m", vec![Message::user("hi")])
}

fn openai_chunk(delta: serde_json::Value) -> String {
    format!(
        "data: {}\n\n",
        json!({"id": "c", "object": "chat.completion.chunk",
               "choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
    )
}

fn assert_not_a_connect_failure(msg: &str) {
    assert!(!msg.contains("cannot connect"), "{msg}");
    assert!(!msg.contains("is the server running"), "{msg}");
    assert!(!msg.contains("error decoding response body"), "{msg}");
    assert!(!msg.contains("{ "), "no Debug dump: {msg}");
}

#[tokio::test]
async fn a_server_that_accepts_and_never_answers_is_a_first_byte_timeout_retried_once() {
    let server = serve(Behaviour::Silent).await;
    let started = Instant::now();
    let err = complete(&openai(&server.url), request()).await.unwrap_err();
    let took = started.elapsed();
    let msg = err.to_string();
    assert!(took < BOUND, "took {took:?}: {msg}");
    assert!(
        matches!(
            err,
            LlmError::FirstByteTimeout {
                headers: false,
                secs: 1,
                ..
            }
        ),
        "{msg}"
    );
    assert!(
        msg.contains("accepted the connection but sent nothing for 1 s"),
        "{msg}"
    );
    assert!(msg.contains("first-byte timeout"), "{msg}");
    assert!(msg.contains("timeouts.first_byte_secs"), "{msg}");
    assert!(msg.contains(&server.url) && msg.contains("silent"), "{msg}");
    assert_not_a_connect_failure(&msg);
    // The policy allows 4 tries, but a stall is retried once only.
    assert_eq!(server.requests.load(Ordering::SeqCst), 2, "{msg}");
}

#[tokio::test]
async fn the_anthropic_provider_reports_a_silent_server_the_same_way() {
    let server = serve(Behaviour::Silent).await;
    let started = Instant::now();
    let err = complete(&anthropic(&server.url), request())
        .await
        .unwrap_err();
    let msg = err.to_string();
    assert!(started.elapsed() < BOUND, "{msg}");
    assert!(
        matches!(err, LlmError::FirstByteTimeout { headers: false, .. }),
        "{msg}"
    );
    assert_not_a_connect_failure(&msg);
    assert_eq!(server.requests.load(Ordering::SeqCst), 2, "{msg}");
}

#[tokio::test]
async fn headers_and_then_nothing_is_a_first_byte_timeout_that_says_so() {
    let server = serve(Behaviour::StallAfter {
        head: SSE_HEAD,
        chunks: vec![],
    })
    .await;
    let p = openai(&server.url).with_retry(RetryPolicy::none());
    let started = Instant::now();
    let err = complete(&p, request()).await.unwrap_err();
    let msg = err.to_string();
    assert!(started.elapsed() < BOUND, "{msg}");
    assert!(
        matches!(err, LlmError::FirstByteTimeout { headers: true, .. }),
        "{msg}"
    );
    assert!(
        msg.contains("sent no data after the response headers for 1 s"),
        "{msg}"
    );
    assert_not_a_connect_failure(&msg);
}

#[tokio::test]
async fn a_stream_that_stalls_after_content_is_a_stall_and_not_retried() {
    let server = serve(Behaviour::StallAfter {
        head: SSE_HEAD,
        chunks: vec![openai_chunk(json!({"role": "assistant", "content": "Hel"}))],
    })
    .await;
    let started = Instant::now();
    let stream = openai(&server.url).stream(request()).await.unwrap();
    let events = collect(stream).await;
    assert!(started.elapsed() < BOUND);
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(
        events.first().cloned().map(Result::ok),
        Some(Some(StreamEvent::TextDelta("Hel".into())))
    );
    let err = events.last().cloned().unwrap().unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(
            err,
            LlmError::StreamStalled {
                events: 1,
                secs: 1,
                ..
            }
        ),
        "{msg}"
    );
    assert!(
        msg.contains("the stream from") && msg.contains("stalled: no data for 1 s after 1 event"),
        "{msg}"
    );
    assert!(msg.contains("timeouts.idle_secs"), "{msg}");
    assert_not_a_connect_failure(&msg);
    // Content was delivered: never sent again.
    assert_eq!(server.requests.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn an_anthropic_stream_that_stalls_midway_counts_its_events() {
    let events = [
        (
            "message_start",
            json!({"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": [], "model": "c", "usage": {"input_tokens": 3, "output_tokens": 1}}}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}}),
        ),
    ];
    let chunks = events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect();
    let server = serve(Behaviour::StallAfter {
        head: SSE_HEAD,
        chunks,
    })
    .await;
    let started = Instant::now();
    let err = complete(&anthropic(&server.url), request())
        .await
        .unwrap_err();
    let msg = err.to_string();
    assert!(started.elapsed() < BOUND, "{msg}");
    assert!(
        matches!(err, LlmError::StreamStalled { events: 3, .. }),
        "{msg}"
    );
    assert!(msg.contains("after 3 events"), "{msg}");
    assert_eq!(server.requests.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_stall_before_any_content_is_retried_once() {
    // A role-only chunk is not content: the try may still be repeated, once.
    let server = serve(Behaviour::StallAfter {
        head: SSE_HEAD,
        chunks: vec![openai_chunk(json!({"role": "assistant", "content": ""}))],
    })
    .await;
    let started = Instant::now();
    let err = complete(&openai(&server.url), request()).await.unwrap_err();
    let msg = err.to_string();
    assert!(started.elapsed() < BOUND, "{msg}");
    assert!(
        matches!(err, LlmError::StreamStalled { events: 1, .. }),
        "{msg}"
    );
    assert_eq!(server.requests.load(Ordering::SeqCst), 2, "{msg}");
}

#[tokio::test]
async fn a_server_that_closes_without_answering_is_not_called_unreachable() {
    let server = serve(Behaviour::Close).await;
    let started = Instant::now();
    let err = complete(&openai(&server.url), request()).await.unwrap_err();
    let msg = err.to_string();
    assert!(started.elapsed() < BOUND, "{msg}");
    assert!(matches!(err, LlmError::Disconnected { .. }), "{msg}");
    assert!(
        msg.contains("closed the connection before answering"),
        "{msg}"
    );
    assert_not_a_connect_failure(&msg);
    // Retried like a connect failure, up to the policy's limit.
    assert_eq!(server.requests.load(Ordering::SeqCst), 4, "{msg}");
}

#[tokio::test]
async fn the_idle_timeout_is_per_gap_not_for_the_whole_answer() {
    // Five chunks 400 ms apart: 2 s in all, twice the idle timeout, but no gap reaches it.
    let mut chunks: Vec<String> = ["a", "b", "c", "d"]
        .iter()
        .map(|t| openai_chunk(json!({"content": t})))
        .collect();
    chunks.push(format!(
        "{}data: [DONE]\n\n",
        format_args!(
            "data: {}\n\n",
            json!({"id": "c", "object": "chat.completion.chunk",
                   "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        )
    ));
    let server = serve(Behaviour::Trickle {
        head: SSE_HEAD,
        chunks,
        gap: Duration::from_millis(400),
    })
    .await;
    let done = complete(&openai(&server.url), request()).await.unwrap();
    assert_eq!(done.text, "abcd");
    assert_eq!(server.requests.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn while_waiting_the_caller_hears_waiting_and_retrying_notices() {
    let server = serve(Behaviour::Silent).await;
    let heard: Arc<Mutex<Vec<Progress>>> = Arc::default();
    let sink = Arc::clone(&heard);
    let hook = ProgressHook::new(move |p| {
        if let Ok(mut v) = sink.lock() {
            v.push(p.clone());
        }
    });
    let err = complete(&openai(&server.url), request().with_progress(hook))
        .await
        .unwrap_err();
    assert!(err.is_stall(), "{err}");
    let heard = heard.lock().unwrap().clone();
    let waiting: Vec<&Progress> = heard
        .iter()
        .filter(|p| matches!(p, Progress::Waiting { .. }))
        .collect();
    let retrying: Vec<&Progress> = heard
        .iter()
        .filter(|p| matches!(p, Progress::Retrying { .. }))
        .collect();
    // Two tries of about 1 s each, a notice every 200 ms: several of each try.
    assert!(waiting.len() >= 4, "{heard:?}");
    assert!(
        waiting
            .iter()
            .any(|p| matches!(p, Progress::Waiting { attempt: 2, .. })),
        "{heard:?}"
    );
    assert!(waiting.iter().all(|p| p
        .to_string()
        .starts_with("waiting for the model (backend `silent`)… ")));
    assert_eq!(retrying.len(), 1, "{heard:?}");
    let line = retrying.first().map(|p| p.to_string()).unwrap_or_default();
    assert!(
        line.contains("accepted the connection but sent nothing") && line.contains("try 2 of 2"),
        "{line}"
    );
}

#[tokio::test]
async fn timeouts_come_from_the_backend_config() {
    let server = serve(Behaviour::Silent).await;
    let backend: BackendConfig = serde_json::from_value(json!({
        "name": "slowpoke",
        "type": "openai",
        "api_base": format!("{}/v1", server.url),
        "models": [{"name": "m"}],
        "timeouts": {"connect_secs": 1, "first_byte_secs": 2, "idle_secs": 1},
    }))
    .unwrap();
    let provider = provider_from_config(&backend).unwrap();
    let started = Instant::now();
    let err = complete(provider.as_ref(), request()).await.unwrap_err();
    let msg = err.to_string();
    // Two tries of 2 s and one short backoff; the 60 s default would blow the bound.
    assert!(started.elapsed() < BOUND, "{msg}");
    assert!(msg.contains("backend `slowpoke`"), "{msg}");
    assert!(msg.contains("sent nothing for 2 s"), "{msg}");
}

#[test]
fn the_timeouts_keys_are_checked() {
    let with = |timeouts: serde_json::Value| {
        serde_json::from_value::<BackendConfig>(json!({
            "name": "b", "type": "openai", "timeouts": timeouts,
        }))
    };
    let cfg = with(json!({"first_byte_secs": 120})).unwrap();
    let t = Timeouts::from_config("b", cfg.timeouts.as_ref()).unwrap();
    assert_eq!(t.first_byte, Duration::from_secs(120));
    assert_eq!(t.connect, Duration::from_secs(10));
    assert_eq!(t.idle, Duration::from_secs(60));
    let typo = with(json!({"first_bytes_secs": 120})).unwrap_err();
    assert!(typo.to_string().contains("first_bytes_secs"), "{typo}");
    // Zero would fail every request: refused when the provider is built, naming the key.
    let zero = with(json!({"connect_secs": 0})).unwrap();
    let err = provider_from_config(&zero).err().expect("zero refused");
    assert!(err.to_string().contains("timeouts.connect_secs"), "{err}");
    // No `timeouts:` at all is the defaults.
    let none = with(serde_json::Value::Null).unwrap();
    assert_eq!(
        Timeouts::from_config("b", none.timeouts.as_ref()).unwrap(),
        Timeouts::default()
    );
}
