#![allow(dead_code)] // each test binary uses a different subset

use futures_util::StreamExt;
use std::time::Duration;
use tackle_llm::{EventStream, LlmError, RetryPolicy, StreamEvent};
use wiremock::ResponseTemplate;

pub fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

pub fn sse(name: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(fixture(name), "text/event-stream")
}

pub fn json_body(name: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(fixture(name), "application/json")
}

/// Retries as in production, with delays small enough for tests.
pub fn fast_retry() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 4,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_secs(5),
    }
}

pub async fn collect(stream: EventStream) -> Vec<Result<StreamEvent, LlmError>> {
    stream.collect().await
}

/// A loopback URL where nothing listens.
pub fn closed_port_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

/// A one-shot HTTP server that writes `body` as SSE in `piece`-byte writes, so events and
/// even UTF-8 characters are split across network reads. Returns its base URL.
pub async fn trickle_server(body: String, piece: usize) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut sock, _) = listener.accept().await.unwrap();
        let mut req = Vec::new();
        let mut buf = [0u8; 4096];
        // Read the head and the JSON body: enough that the client is done sending.
        while !request_complete(&req) {
            let n = sock.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            req.extend_from_slice(&buf[..n]);
        }
        let head =
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
        sock.write_all(head.as_bytes()).await.unwrap();
        for chunk in body.as_bytes().chunks(piece) {
            sock.write_all(chunk).await.unwrap();
            sock.flush().await.unwrap();
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    });
    format!("http://{addr}")
}

fn request_complete(req: &[u8]) -> bool {
    let text = String::from_utf8_lossy(req);
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        return false;
    };
    let len = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().parse::<usize>().unwrap_or(0))
        })
        .unwrap_or(0);
    body.len() >= len
}
