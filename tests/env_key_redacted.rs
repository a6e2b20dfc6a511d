//! A backend key found in the environment (no `backends:` in the config) is a secret like one
//! in the config: a server's error that echoes it back does not print it.

mod common;

use common::{run, Sandbox};
use std::io::{Read, Write};
use std::net::TcpListener;

// No vendor prefix: a key the pattern rules do not know, found only because it is the key.
const KEY: &str = "proxytoken-Zq81vXk2mP0aR7tLw3";

/// A server on 127.0.0.1 that answers every request with a 401 quoting the key, as some
/// providers do; returns its base URL.
fn refusing_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = Vec::new();
            let mut buf = [0u8; 4096];
            // Headers, then the body its content-length announces.
            while let Ok(n) = stream.read(&mut buf) {
                if n == 0 {
                    break;
                }
                request.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&request).to_lowercase();
                if let Some(end) = text.find("\r\n\r\n") {
                    let length = text
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse::<usize>().ok())
                        .unwrap_or(0);
                    if request.len() >= end + 4 + length {
                        break;
                    }
                }
            }
            let body = format!(
                "{{\"error\":{{\"message\":\"Incorrect API key provided: {KEY}\",\"type\":\"invalid_request_error\"}}}}"
            );
            let _ = write!(
                stream,
                "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    format!("http://127.0.0.1:{port}/v1")
}

#[test]
fn a_401_echoing_the_environments_key_does_not_print_it() {
    let base = refusing_server();
    let sb = Sandbox::new();
    let config = sb.config("");
    for json in [false, true] {
        let mut args = vec!["run", "-m", "hi"];
        if json {
            args.push("--json");
        }
        let mut cmd = sb.tackle(&config, &args);
        cmd.env("OPENAI_API_KEY", KEY).env("OPENAI_BASE_URL", &base);
        let r = run(cmd);
        assert_ne!(r.code, 0, "{r}");
        assert!(
            r.stderr.contains("401") || r.stdout.contains("401") || r.stderr.contains("API key"),
            "the server's refusal is reported: {r}"
        );
        assert!(!r.stderr.contains(KEY), "the key is on stderr: {r}");
        assert!(!r.stdout.contains(KEY), "the key is on stdout: {r}");
    }
}
