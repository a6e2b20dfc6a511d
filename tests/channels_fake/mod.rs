//! What the chat channel tests share: a tiny HTTP/1.1 server on 127.0.0.1 for the fake
//! platforms (one request per connection, each on its own thread so long polls can wait),
//! the daemon under test, and its audit lines.
#![allow(dead_code)]

use super::common::{drain, run, Sandbox};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

/// One request as the fake platform sees it.
pub struct Request {
    pub method: String,
    /// The path with its query.
    pub path: String,
    pub headers: Vec<(String, String)>,
    /// The body as JSON (`Null` when it is not JSON), and as sent.
    pub body: Value,
    pub raw: Vec<u8>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body of the part named `name` of a multipart/form-data body.
    pub fn part(&self, name: &str) -> Option<Vec<u8>> {
        let boundary = self.header("content-type")?.split("boundary=").nth(1)?;
        let delim = format!("\r\n--{}", boundary.trim_matches('"'));
        let body = [b"\r\n".as_slice(), &self.raw].concat();
        let mut rest = body.as_slice();
        while let Some(at) = find(rest, delim.as_bytes()) {
            rest = rest.get(at + delim.len()..)?;
            let head_end = find(rest, b"\r\n\r\n")?;
            let head = String::from_utf8_lossy(rest.get(..head_end)?).to_string();
            let data = rest.get(head_end + 4..)?;
            let end = find(data, delim.as_bytes())?;
            if head.contains(&format!("name=\"{name}\"")) {
                return data.get(..end).map(<[u8]>::to_vec);
            }
        }
        None
    }

    /// A parameter of the query, as sent (not decoded).
    pub fn query(&self, key: &str) -> Option<&str> {
        let (_, query) = self.path.split_once('?')?;
        query
            .split('&')
            .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The file of the attachment tests: every byte value, so nothing on the way may re-encode it.
pub fn attachment() -> Vec<u8> {
    (0..=255u8).chain(*b"-end of the report").collect()
}

/// For each (words, file): a message with those words makes a tool call that sends `file` to
/// `channel` as an attachment. The answers after it: `Filed.` when it was sent, `Not sent.`
/// when it failed.
pub fn attach_rules(channel: &str, calls: &[(&str, &str)]) -> String {
    let mut rules = String::from(concat!(
        "rules:\n",
        "  - name: sent\n    when: {tool_result_contains: \"Sent the file\"}\n    respond: {content: \"Filed.\"}\n",
        "  - name: failed\n    when: {tool_result_contains: \"\"}\n    respond: {content: \"Not sent.\"}\n",
    ));
    for (i, (words, file)) in calls.iter().enumerate() {
        rules.push_str(&format!(
            "  - name: attach{i}\n    when: {{messages_contain: \"{words}\"}}\n    respond:\n      tool_calls:\n        - {{name: message, arguments: {{channel: {channel}, content: \"the report\", file: \"{file}\"}}}}\n"
        ));
    }
    rules
}

/// `security:` letting `message` run without asking (the tests are about the file).
pub const MESSAGE_AUTO: &str = "security:\n  auto_approved_tools: [message]\n";

pub type Handler = Arc<dyn Fn(Request) -> (u16, Value) + Send + Sync>;

/// A handler whose replies carry headers too (a `Retry-After`).
pub type HeadedHandler = Arc<dyn Fn(Request) -> (u16, Vec<(String, String)>, Value) + Send + Sync>;

/// Serves `handler` on a free port of 127.0.0.1; returns the port.
pub fn serve(handler: Handler) -> u16 {
    serve_headed(Arc::new(move |r| {
        let (status, reply) = handler(r);
        (status, Vec::new(), reply)
    }))
}

/// [`serve`], for replies with headers.
pub fn serve_headed(handler: HeadedHandler) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let handler = Arc::clone(&handler);
            std::thread::spawn(move || one(conn, &handler));
        }
    });
    port
}

fn one(conn: TcpStream, handler: &HeadedHandler) {
    let Ok(read_half) = conn.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let mut words = line.split_whitespace();
    let method = words.next().unwrap_or_default().to_string();
    let path = words.next().unwrap_or_default().to_string();
    let mut headers = Vec::new();
    let mut length = 0usize;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).is_err() || header.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = header.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().unwrap_or(0);
            }
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let raw = body;
    let body: Value = serde_json::from_slice(&raw).unwrap_or(Value::Null);
    let (status, extra, reply) = handler(Request {
        method,
        path,
        headers,
        body,
        raw,
    });
    let text = reply.to_string();
    let extra: String = extra.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect();
    let mut conn = conn;
    let _ = write!(
        conn,
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    );
}

/// `tackle daemon` with `env` set, its log drained.
pub struct Daemon {
    child: Option<Child>,
    stderr: Option<std::thread::JoinHandle<String>>,
}

impl Daemon {
    pub fn start(sb: &Sandbox, config: &Path, env: &[(&str, &str)]) -> Self {
        let mut cmd = sb.tackle(config, &["-vv", "daemon"]);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn tackle daemon");
        let stderr = Some(drain(child.stderr.take()));
        Self {
            child: Some(child),
            stderr,
        }
    }

    /// The daemon's process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Sends `signal` (`-TERM`, `-KILL`), then the exit code and the log.
    pub fn stop(&mut self, signal: &str) -> (Option<i32>, String) {
        let Some(child) = self.child.take() else {
            return (None, String::new());
        };
        let _ = Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status();
        let status = child.wait_with_output().expect("wait daemon").status;
        let log = self
            .stderr
            .take()
            .map(|h| h.join().unwrap_or_default())
            .unwrap_or_default();
        (status.code(), log)
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

/// The audit log's `channel` lines.
pub fn channel_audit(sb: &Sandbox, config: &Path) -> Vec<Value> {
    let out = run(sb.tackle(config, &["audit", "--json", "--tool", "channel"]));
    assert_eq!(out.code, 0, "{out}");
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// Whether any audit line matches `verdict` and mentions `needle` in its summary.
pub fn audited(lines: &[Value], verdict: &str, needle: &str) -> bool {
    lines.iter().any(|a| {
        a["verdict"] == verdict
            && a["args_summary"]
                .as_str()
                .unwrap_or_default()
                .contains(needle)
    })
}

/// The shell call of the approval tests: a marker file made only when the call runs.
pub const MARKER_RULES: &str = concat!(
    "rules:\n",
    "  - name: made\n    when: {tool_result_contains: \"marker-made\"}\n    respond: {content: \"Made it.\"}\n",
    "  - name: other\n    when: {tool_result_contains: \"\"}\n    respond: {content: \"It did not run.\"}\n",
    "  - name: touch\n    when: {messages_contain: \"make the marker\"}\n    respond:\n      tool_calls:\n        - {name: shell, arguments: {command: \"touch MARKER && echo marker-made\"}}\n",
);

/// Two turns that only answer right when the second sees the first.
pub const RECALL_RULES: &str = concat!(
    "rules:\n",
    "  - name: recall\n    when: {messages_contain: \"my fruit is mango\", previous_message_contains: \"filed under kumquat\"}\n    respond: {content: \"You named mango.\"}\n",
    "  - name: note\n    when: {messages_contain: \"my fruit is mango\"}\n    respond: {content: \"Filed under kumquat.\"}\n",
    "  - name: blank\n    when: {messages_contain: \"\"}\n    respond: {content: \"I do not know.\"}\n",
);
