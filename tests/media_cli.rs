//! The `media` tools through the real binary: `tackle tools call transcribe` against a local
//! fake of the OpenAI-compatible `/audio/transcriptions` endpoint named in the config.

mod common;

use common::{run, Sandbox};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::Duration;

const KEY: &str = "sk-cli-transcribe-key-9876543210";

/// What the fake server received: the request head and the body.
struct Received {
    head: String,
    body: Vec<u8>,
}

/// Answer one request on `listener` with `reply` (a JSON body), and hand what came in back.
fn serve_once(
    listener: TcpListener,
    status: &'static str,
    reply: &'static str,
) -> mpsc::Receiver<Received> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let Ok((mut conn, _)) = listener.accept() else {
            return;
        };
        let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
        let mut buf = Vec::new();
        let mut chunk = [0u8; 16 * 1024];
        let head_end = loop {
            let n = conn.read(&mut chunk).unwrap_or(0);
            if n == 0 {
                return;
            }
            buf.extend_from_slice(&chunk[..n]);
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        let length = head
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("content-length")
                    .then(|| v.trim().parse::<usize>().ok())?
            })
            .unwrap_or(0);
        while buf.len() < head_end + length {
            let n = conn.read(&mut chunk).unwrap_or(0);
            if n == 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        let body = buf[head_end..].to_vec();
        let _ = write!(
            conn,
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{reply}",
            reply.len()
        );
        let _ = tx.send(Received { head, body });
    });
    rx
}

fn config(sb: &Sandbox, port: u16) -> std::path::PathBuf {
    sb.config(&format!(
        "transcribe:\n  api_base: http://127.0.0.1:{port}/v1\n  api_key: {KEY}\n  model: whisper-large-v3-turbo\n"
    ))
}

#[test]
fn transcribe_posts_the_file_to_the_configured_server_and_prints_the_text() {
    let sb = Sandbox::new();
    std::fs::write(
        sb.workspace().join("memo.m4a"),
        b"\0\0\0 ftypM4A fake audio",
    )
    .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let received = serve_once(listener, "200 OK", r#"{"text": "Buy milk."}"#);
    let cfg = config(&sb, port);
    let r = run(sb.tackle(
        &cfg,
        &[
            "tools",
            "call",
            "transcribe",
            r#"{"file_path": "memo.m4a"}"#,
            "--yes",
            "--json",
        ],
    ));
    assert_eq!(r.code, 0, "{r}");
    let v: Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(v["ok"], true, "{r}");
    assert_eq!(v["content"], "Transcription: Buy milk.", "{r}");
    let got = received.recv_timeout(Duration::from_secs(5)).unwrap();
    assert!(
        got.head
            .starts_with("POST /v1/audio/transcriptions HTTP/1.1\r\n"),
        "{}",
        got.head
    );
    let head = got.head.to_ascii_lowercase();
    assert!(
        head.contains(&format!(
            "authorization: bearer {}",
            KEY.to_ascii_lowercase()
        )),
        "{}",
        got.head
    );
    assert!(
        head.contains("content-type: multipart/form-data; boundary="),
        "{}",
        got.head
    );
    let body = String::from_utf8_lossy(&got.body);
    assert!(
        body.contains("name=\"file\"; filename=\"memo.m4a\"\r\nContent-Type: audio/mp4"),
        "{body}"
    );
    assert!(body.contains("fake audio"), "{body}");
    assert!(
        body.contains("name=\"model\"\r\n\r\nwhisper-large-v3-turbo"),
        "{body}"
    );
    assert!(!r.stdout.contains(KEY) && !r.stderr.contains(KEY), "{r}");
}

#[test]
fn a_failing_server_is_a_failed_call_and_the_key_stays_out_of_output_and_audit() {
    let sb = Sandbox::new();
    std::fs::write(sb.workspace().join("memo.wav"), b"RIFF fake WAVE").unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let _received = serve_once(
        listener,
        "401 Unauthorized",
        r#"{"error": {"message": "Incorrect API key provided: sk-cli-transcribe-key-9876543210"}}"#,
    );
    let cfg = config(&sb, port);
    let r = run(sb.tackle(
        &cfg,
        &[
            "tools",
            "call",
            "transcribe",
            r#"{"file_path": "memo.wav"}"#,
            "--yes",
            "--json",
        ],
    ));
    assert_eq!(r.code, 1, "{r}");
    let v: Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(v["error"]["kind"], "failed", "{r}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("HTTP 401"),
        "{r}"
    );
    assert!(!r.stdout.contains(KEY) && !r.stderr.contains(KEY), "{r}");
    // Nothing the binary wrote to its state (audit log, sessions) holds the key either.
    for dir in [sb.state(), sb.home()] {
        for file in files_under(&dir) {
            let bytes = std::fs::read(&file).unwrap_or_default();
            let found = bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes());
            assert!(!found, "{} holds the key", file.display());
        }
    }
}

fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}
