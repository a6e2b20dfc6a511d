//! Issue #39 end to end: `tackle run` against a model server that accepts the connection and
//! then says nothing, or stops in the middle of a stream. The binary must end on its own with
//! a non-zero exit and a message that names the stall, well within a bound (not 20 minutes),
//! and say that it is waiting while it waits.

mod common;

use common::{run, Sandbox};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Far above the timeouts configured here (1 s, two tries): a correctness bound, not a
/// performance one. Before the fix this run took 4 × 300 s.
const BOUND: Duration = Duration::from_secs(30);

/// What the server writes after reading a request, and how long it then waits before closing.
#[derive(Clone)]
struct Script {
    delay: Duration,
    reply: String,
    hold: Duration,
}

/// A loopback server running `script` for every connection; counts the requests it read.
fn serve(script: Script) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let requests = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&requests);
    std::thread::spawn(move || {
        for sock in listener.incoming() {
            let Ok(mut sock) = sock else { return };
            let script = script.clone();
            let count = Arc::clone(&count);
            std::thread::spawn(move || {
                if !read_request(&mut sock) {
                    return;
                }
                count.fetch_add(1, Ordering::SeqCst);
                std::thread::sleep(script.delay);
                let _ = sock.write_all(script.reply.as_bytes());
                let _ = sock.flush();
                std::thread::sleep(script.hold);
            });
        }
    });
    (port, requests)
}

fn read_request(sock: &mut TcpStream) -> bool {
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
        match sock.read(&mut buf) {
            Ok(0) | Err(_) => return false,
            Ok(n) => req.extend_from_slice(buf.get(..n).unwrap_or_default()),
        }
    }
}

const SSE_HEAD: &str =
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";

fn chunk(delta: &str, finish: Option<&str>) -> String {
    let finish = finish.map_or("null".to_string(), |f| format!("\"{f}\""));
    format!(
        "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":{finish}}}]}}\n\n"
    )
}

fn config(sb: &Sandbox, port: u16, timeouts: &str) -> std::path::PathBuf {
    sb.config(&format!(
        "backends:\n  - name: hung\n    type: openai\n    api_base: http://127.0.0.1:{port}/v1\n    models:\n      - name: m\n    timeouts: {timeouts}\n"
    ))
}

#[test]
fn a_server_that_accepts_and_never_answers_ends_the_run_with_a_stall_error() {
    let (port, requests) = serve(Script {
        delay: Duration::ZERO,
        reply: String::new(),
        hold: Duration::from_secs(3600),
    });
    let sb = Sandbox::new();
    let cfg = config(
        &sb,
        port,
        "{connect_secs: 1, first_byte_secs: 1, idle_secs: 1}",
    );
    let r = run(sb.tackle(&cfg, &["run", "-m", "hello"]));
    assert!(r.elapsed < BOUND, "took {:?}\n{r}", r.elapsed);
    assert_ne!(r.code, 0, "{r}");
    assert!(
        r.stderr
            .contains("accepted the connection but sent nothing for 1 s"),
        "{r}"
    );
    assert!(r.stderr.contains("first-byte timeout"), "{r}");
    assert!(r.stderr.contains("timeouts.first_byte_secs"), "{r}");
    assert!(!r.stderr.contains("cannot connect"), "{r}");
    assert!(!r.stderr.contains("error decoding response body"), "{r}");
    // Retried once, and said so.
    assert!(r.stderr.contains("retrying in"), "{r}");
    assert_eq!(requests.load(Ordering::SeqCst), 2, "{r}");
}

#[test]
fn with_json_the_retry_is_an_event_of_the_stream() {
    let (port, _requests) = serve(Script {
        delay: Duration::ZERO,
        reply: String::new(),
        hold: Duration::from_secs(3600),
    });
    let sb = Sandbox::new();
    let cfg = config(
        &sb,
        port,
        "{connect_secs: 1, first_byte_secs: 1, idle_secs: 1}",
    );
    let r = run(sb.tackle(&cfg, &["run", "-m", "hello", "--json"]));
    assert!(r.elapsed < BOUND, "took {:?}\n{r}", r.elapsed);
    let retry = r
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["event"] == "model_retrying")
        .unwrap_or_else(|| panic!("no model_retrying event\n{r}"));
    assert_eq!(retry["backend"], "hung", "{retry}");
    assert_eq!(retry["attempt"], 1, "{retry}");
    assert!(
        retry["reason"]
            .as_str()
            .is_some_and(|s| s.contains("first-byte timeout")),
        "{retry}"
    );
}

#[test]
fn a_stream_that_stalls_midway_ends_the_run_with_a_stall_error() {
    let (port, requests) = serve(Script {
        delay: Duration::ZERO,
        reply: format!(
            "{SSE_HEAD}{}",
            chunk(
                "{\"role\":\"assistant\",\"content\":\"Partial answer\"}",
                None
            )
        ),
        hold: Duration::from_secs(3600),
    });
    let sb = Sandbox::new();
    let cfg = config(
        &sb,
        port,
        "{connect_secs: 1, first_byte_secs: 1, idle_secs: 1}",
    );
    let r = run(sb.tackle(&cfg, &["run", "-m", "hello"]));
    assert!(r.elapsed < BOUND, "took {:?}\n{r}", r.elapsed);
    assert_ne!(r.code, 0, "{r}");
    assert!(r.stdout.contains("Partial answer"), "{r}");
    assert!(
        r.stderr.contains("stalled: no data for 1 s after 1 event"),
        "{r}"
    );
    assert!(!r.stderr.contains("error decoding response body"), "{r}");
    assert!(!r.stderr.contains("Transport error"), "{r}");
    // Content had been shown: not sent again.
    assert_eq!(requests.load(Ordering::SeqCst), 1, "{r}");
}

#[test]
fn a_slow_first_answer_is_announced_while_waiting_and_then_shown() {
    // The notice comes every 15 s; the server answers after 16 s, within a 40 s first-byte
    // timeout, so the run succeeds after one notice.
    let reply = format!(
        "{SSE_HEAD}{}{}data: [DONE]\n\n",
        chunk(
            "{\"role\":\"assistant\",\"content\":\"late but here\"}",
            None
        ),
        chunk("{}", Some("stop")),
    );
    let (port, _) = serve(Script {
        delay: Duration::from_secs(16),
        reply,
        hold: Duration::ZERO,
    });
    let sb = Sandbox::new();
    let cfg = config(&sb, port, "{first_byte_secs: 40}");
    let r = run(sb.tackle(&cfg, &["run", "-m", "hello"]));
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stdout.contains("late but here"), "{r}");
    assert!(
        r.stderr
            .contains("waiting for the model (backend `hung`)… 15 s"),
        "{r}"
    );
}
