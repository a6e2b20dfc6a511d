//! `tackle daemon` with a gateway for the load test: started on a sandbox's config, stopped
//! with SIGTERM or killed with SIGKILL; and a plain HTTP/1.1 client for its API (one
//! connection per request, as many threads as the test wants).

use crate::common::{drain, Sandbox};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Scopes `read` and `chat`: the load's clients.
pub const CHAT_TOKEN: &str = "tk-load-chat-9c8b7a6d5e4f";
/// Scope `approve`: the approver.
pub const APPROVE_TOKEN: &str = "tk-load-approve-1a2b3c4d5e";

/// The `gateway:` section: both tokens (hashed), no rate limit in the way.
pub fn gateway_yaml(port: u16, approval_timeout_secs: u64) -> String {
    format!(
        "gateway:\n  bind: 127.0.0.1:{port}\n  rate_limit_per_minute: 1000000\n  approval_timeout_secs: {approval_timeout_secs}\n  tokens:\n    - {{name: load, sha256: {}, scopes: [read, chat]}}\n    - {{name: approver, sha256: {}, scopes: [read, approve]}}\n",
        sha256_hex(CHAT_TOKEN),
        sha256_hex(APPROVE_TOKEN),
    )
}

fn sha256_hex(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

pub struct Daemon {
    child: Option<Child>,
    stderr: Option<std::thread::JoinHandle<String>>,
    pub api: Api,
}

impl Daemon {
    pub fn start(sb: &Sandbox, config: &Path, port: u16) -> Self {
        let mut child = sb
            .tackle(config, &["daemon"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn tackle daemon");
        let stderr = Some(drain(child.stderr.take()));
        let mut daemon = Self {
            child: Some(child),
            stderr,
            api: Api { port },
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if daemon.api.get("/openapi.json", CHAT_TOKEN).0 == 200 {
                return daemon;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let (code, log) = daemon.stop();
        panic!("the API did not come up (exit {code:?})\n{log}");
    }

    /// SIGTERM (the drain), then the exit code and stderr.
    pub fn stop(&mut self) -> (Option<i32>, String) {
        let Some(child) = self.child.take() else {
            return (None, String::new());
        };
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let status = child.wait_with_output().expect("wait daemon").status;
        (status.code(), self.log())
    }

    /// SIGKILL: no drain, no cleanup; then stderr.
    pub fn kill9(&mut self) -> String {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.log()
    }

    fn log(&mut self) -> String {
        self.stderr
            .take()
            .map(|h| h.join().unwrap_or_default())
            .unwrap_or_default()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The API on 127.0.0.1:port.
#[derive(Clone, Copy)]
pub struct Api {
    pub port: u16,
}

impl Api {
    pub fn get(&self, path: &str, token: &str) -> (u16, String) {
        self.raw(&format!(
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n",
            self.port
        ))
    }

    pub fn post(&self, path: &str, token: &str, headers: &str, body: &str) -> (u16, String) {
        self.raw(&format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {token}\r\n{headers}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.port,
            body.len()
        ))
    }

    /// A whole completion of `model` for `task`, in `session` when given: the status and the
    /// body as JSON (`Value::Null` when it is not JSON, e.g. the connection dropped).
    pub fn complete(&self, model: &str, session: Option<&str>, task: &str) -> (u16, Value) {
        let header = session.map_or(String::new(), |s| format!("X-Tackle-Session: {s}\r\n"));
        let body = serde_json::json!({
            "model": model,
            "messages": [{"role": "user", "content": task}],
        })
        .to_string();
        let (code, text) = self.post("/v1/chat/completions", CHAT_TOKEN, &header, &body);
        (code, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// GET as JSON; panics unless 200.
    pub fn json(&self, path: &str, token: &str) -> Value {
        let (code, text) = self.get(path, token);
        assert_eq!(code, 200, "GET {path}: {text}");
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("GET {path}: {e}: {text}"))
    }

    /// One request as written: the status (0 when no answer came) and the body.
    fn raw(&self, request: &str) -> (u16, String) {
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return (0, String::new());
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(120)));
        if s.write_all(request.as_bytes()).is_err() {
            return (0, String::new());
        }
        let mut buf = Vec::new();
        let _ = s.read_to_end(&mut buf);
        let text = String::from_utf8_lossy(&buf).into_owned();
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        (status, body.to_string())
    }
}
