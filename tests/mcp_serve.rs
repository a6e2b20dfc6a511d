//! `tackle mcp serve` end to end: the real binary, a temp config, and the official Python SDK
//! client (`tests/mcp_client/client.py`, from the `.ci/venv` that `.ci/mcp-peers.sh` makes).
//! Skips with a printed reason when the venv is absent.

mod common;

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn venv_python() -> Option<PathBuf> {
    let p = root().join(".ci/venv/bin/python");
    p.exists().then_some(p)
}

/// A config with no backends (serving needs none) and state/workspace inside `dir`.
fn config(dir: &Path) -> PathBuf {
    config_with(dir, "")
}

fn config_with(dir: &Path, extra: &str) -> PathBuf {
    let path = dir.join("config.yaml");
    let text = format!(
        "state_dir: {}\nworkspace: {}\n{extra}",
        dir.join("state").display(),
        dir.display()
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// Run the Python client with `options` and `steps` against `tackle mcp serve` over stdio;
/// `Err(stderr)` when it fails.
fn python_client(
    python: &Path,
    options: &[&str],
    steps: Value,
    config: &Path,
) -> Result<Value, String> {
    let out = Command::new(python)
        .arg(root().join("tests/mcp_client/client.py"))
        .args(options)
        .arg(steps.to_string())
        .arg("--")
        .arg(common::tackle_bin())
        .arg("--config")
        .arg(config)
        .args(["mcp", "serve"])
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())
}

#[test]
fn mcp_serve_lists_the_registry_and_runs_a_call_through_the_dispatcher() {
    let Some(python) = venv_python() else {
        eprintln!("SKIPPED: .ci/venv is missing (run .ci/mcp-peers.sh)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let steps = json!([
        ["list"],
        ["call", "get_time", {}],
        ["call", "no_such_tool", {}]
    ]);
    let out = python_client(&python, &[], steps, &config(dir.path())).unwrap();
    let tools: Vec<&str> = out[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for expected in ["get_time", "calculate", "read_file", "shell"] {
        assert!(
            tools.contains(&expected),
            "{expected} missing from {tools:?}"
        );
    }
    assert_eq!(out[1]["is_error"], false, "{}", out[1]);
    assert!(
        out[1]["text"].as_str().unwrap().contains('T'),
        "an RFC 3339 time: {}",
        out[1]
    );
    assert_eq!(out[2]["is_error"], true);
    assert!(
        out[2]["text"].as_str().unwrap().starts_with("not_found: "),
        "{}",
        out[2]
    );
}

#[test]
fn mcp_serve_never_runs_a_tool_needing_approval_for_a_client_that_cannot_be_asked() {
    let Some(python) = venv_python() else {
        eprintln!("SKIPPED: .ci/venv is missing (run .ci/mcp-peers.sh)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let steps = json!([["call", "shell", {"command": format!("touch {}", marker.display())}]]);
    let out = python_client(&python, &[], steps, &config(dir.path())).unwrap();
    assert_eq!(out[0]["is_error"], true);
    assert!(
        out[0]["text"]
            .as_str()
            .unwrap()
            .starts_with("needs_approval: "),
        "{}",
        out[0]
    );
    assert!(!marker.exists(), "the command ran without approval");
}

#[test]
fn mcp_serve_asks_for_approval_through_elicitation_and_a_no_stops_the_call() {
    let Some(python) = venv_python() else {
        eprintln!("SKIPPED: .ci/venv is missing (run .ci/mcp-peers.sh)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let steps = json!([["call", "shell", {"command": format!("touch {}", marker.display())}]]);
    let out = python_client(&python, &["--elicit", "deny"], steps, &config(dir.path())).unwrap();
    assert_eq!(out[0]["is_error"], true);
    assert!(
        out[0]["text"].as_str().unwrap().starts_with("denied: "),
        "{}",
        out[0]
    );
    assert!(!marker.exists(), "the command ran after a no");
}

#[test]
fn mcp_serve_returns_a_denial_with_its_why_and_runs_allowed_calls() {
    let Some(python) = venv_python() else {
        eprintln!("SKIPPED: .ci/venv is missing (run .ci/mcp-peers.sh)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim.txt");
    std::fs::write(&victim, "keep").unwrap();
    let policy = "security:\n  tool_policies:\n    shell:\n      approval: never\n      grants:\n        shell:\n          deny: [rm]\n";
    let steps = json!([
        ["call", "calculate", {"expression": "7/2"}],
        ["call", "shell", {"command": format!("echo hi && rm -f {}", victim.display())}]
    ]);
    let out = python_client(&python, &[], steps, &config_with(dir.path(), policy)).unwrap();
    assert_eq!(out[0]["is_error"], false, "{}", out[0]);
    assert_eq!(out[0]["text"], "3.5");
    assert_eq!(out[1]["is_error"], true);
    let text = out[1]["text"].as_str().unwrap();
    assert!(
        text.starts_with("denied: ") && text.contains("rm"),
        "{text}"
    );
    assert!(victim.exists(), "the denied command ran");
}

#[test]
fn mcp_serve_runs_a_call_the_client_approved_once() {
    let Some(python) = venv_python() else {
        eprintln!("SKIPPED: .ci/venv is missing (run .ci/mcp-peers.sh)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let steps = json!([["call", "shell", {"command": format!("touch {}", marker.display())}]]);
    let out = python_client(&python, &["--elicit", "once"], steps, &config(dir.path())).unwrap();
    assert_eq!(out[0]["is_error"], false, "{}", out[0]);
    assert!(marker.exists(), "the approved command did not run");
}

/// The client side through the binary: a real stdio server's tools become `time__…` tools that
/// `tackle tools call` runs through the dispatcher, and `tackle mcp list` shows the server.
#[test]
fn configured_mcp_servers_tools_are_callable_through_the_binary() {
    let server = root().join(".ci/venv/bin/mcp-server-time");
    if !server.exists() {
        eprintln!("SKIPPED: mcp-server-time is missing (run .ci/mcp-peers.sh)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let extra = format!("mcp_servers:\n  time:\n    command: {}\n", server.display());
    let cfg = config_with(dir.path(), &extra);
    let tackle = |args: &[&str]| {
        Command::new(common::tackle_bin())
            .arg("--config")
            .arg(&cfg)
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    let list = tackle(&["mcp", "list"]);
    let text = String::from_utf8_lossy(&list.stdout);
    assert!(text.contains("time: ready"), "{text}");
    assert!(
        text.contains("time__get_current_time") && text.contains("time__convert_time"),
        "{text}"
    );
    let call = tackle(&[
        "tools",
        "call",
        "time__get_current_time",
        r#"{"timezone": "UTC"}"#,
        "--yes",
        "--json",
    ]);
    let v: Value = serde_json::from_slice(&call.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&call.stderr)));
    assert_eq!(v["ok"], true, "{v}");
    assert!(v["content"].as_str().unwrap().contains("UTC"), "{v}");
    let bad = tackle(&[
        "tools",
        "call",
        "time__get_current_time",
        r#"{"timezone": "Mars/Olympus"}"#,
        "--yes",
        "--json",
    ]);
    let v: Value = serde_json::from_slice(&bad.stdout).unwrap();
    assert_eq!(v["ok"], false, "{v}");
    let message = format!("{}{}", v["content"], v["error"]["message"]);
    assert!(
        message.contains("Mars/Olympus") || message.to_lowercase().contains("timezone"),
        "{v}"
    );
    let unapproved = tackle(&[
        "tools",
        "call",
        "time__get_current_time",
        r#"{"timezone": "UTC"}"#,
        "--json",
    ]);
    assert_eq!(
        unapproved.status.code(),
        Some(4),
        "MCP tools need approval by default"
    );
}

// ---------------------------------------------------------------------------------------------
// Streamable HTTP through the binary: the browser guard, client cancellation, per-session
// approvals. The server is `tackle mcp serve --http 127.0.0.1:0`; it prints the port it got.

/// A shell policy under which `shell` runs without asking (the guard is the subject, not approval).
const SHELL_RUNS: &str = "security:\n  tool_policies:\n    shell:\n      approval: never\n";

/// `tackle mcp serve --http 127.0.0.1:0`, killed when dropped.
struct HttpServe {
    child: std::process::Child,
    port: u16,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Drop for HttpServe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl HttpServe {
    fn start(config: &Path) -> Self {
        use std::io::BufRead;
        let mut child = Command::new(common::tackle_bin())
            .arg("--config")
            .arg(config)
            .args(["mcp", "serve", "--http", "127.0.0.1:0"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let pipe = child.stderr.take().unwrap();
        let log = std::sync::Arc::clone(&stderr);
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(pipe).lines().map_while(Result::ok) {
                if let Some(rest) = line.split("http://127.0.0.1:").nth(1) {
                    let port: String = rest.chars().take_while(char::is_ascii_digit).collect();
                    let _ = tx.send(port.parse::<u16>().unwrap_or(0));
                }
                log.lock().unwrap().push_str(&line);
                log.lock().unwrap().push('\n');
            }
        });
        let port = rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("no address printed: {}", stderr.lock().unwrap()));
        assert_ne!(port, 0);
        Self {
            child,
            port,
            stderr,
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

/// One HTTP reply: status, lower-cased headers, the body (de-chunked).
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The JSON-RPC messages of an SSE or JSON body.
    fn messages(&self) -> Vec<Value> {
        if let Ok(v) = serde_json::from_str::<Value>(&self.body) {
            return vec![v];
        }
        self.body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str(d.trim()).ok())
            .collect()
    }

    /// The response to request `id`.
    fn response(&self, id: u64) -> Value {
        self.messages()
            .into_iter()
            .find(|m| m["id"] == id)
            .unwrap_or_else(|| panic!("no response to {id}: {} {}", self.status, self.body))
    }
}

/// One request to `/mcp` over a fresh connection; `headers` may override `Host`.
fn http(port: u16, method: &str, headers: &[(&str, &str)], body: &Value) -> Reply {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let mut head = format!("{method} /mcp HTTP/1.1\r\n");
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        head.push_str(&format!("Host: 127.0.0.1:{port}\r\n"));
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    let body = body.to_string();
    head.push_str(&format!(
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    stream.write_all(head.as_bytes()).unwrap();
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_string()
    };
    Reply {
        status,
        headers,
        body,
    }
}

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || after.len() < n {
            out.push_str(after.get(..n.min(after.len())).unwrap_or_default());
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].strip_prefix("\r\n").unwrap_or(&after[n..]);
    }
    out
}

fn initialize_msg() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw-test-client", "version": "0"}}})
}

fn initialized_msg() -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
}

fn call_msg(id: u64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": arguments}})
}

fn cancel_msg(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
           "params": {"requestId": id, "reason": "the user pressed stop"}})
}

fn sleep_args(sleep: &str) -> Value {
    json!({"command": format!("sleep {sleep}")})
}

/// An MCP session over raw HTTP requests (no browser headers unless a request adds them).
struct RawSession {
    port: u16,
    id: String,
}

impl RawSession {
    fn open(port: u16) -> Self {
        let init = http(port, "POST", &[], &initialize_msg());
        assert_eq!(init.status, 200, "{}", init.body);
        let id = init
            .header("mcp-session-id")
            .expect("a session id")
            .to_string();
        let session = Self { port, id };
        let done = session.post(&[], &initialized_msg());
        assert_eq!(done.status, 202, "{}", done.body);
        session
    }

    fn post(&self, extra: &[(&str, &str)], body: &Value) -> Reply {
        let mut headers = vec![
            ("Mcp-Session-Id", self.id.as_str()),
            ("MCP-Protocol-Version", "2025-11-25"),
        ];
        headers.extend_from_slice(extra);
        http(self.port, "POST", &headers, body)
    }
}

fn touch(path: &Path) -> Value {
    json!({"command": format!("touch {}", path.display())})
}

#[test]
fn mcp_serve_http_refuses_requests_from_foreign_origins_and_hosts_and_runs_nothing_for_them() {
    let dir = tempfile::tempdir().unwrap();
    let server = HttpServe::start(&config_with(dir.path(), SHELL_RUNS));
    let port = server.port;
    let session = RawSession::open(port);

    // A page on another site (or a sandboxed frame, `Origin: null`), and a DNS-rebound name.
    let local_origin = format!("http://127.0.0.1:{port}");
    let rebound_host = format!("evil.example:{port}");
    let refused: [(&str, &[(&str, &str)]); 4] = [
        ("evil", &[("Origin", "http://evil.example")]),
        ("null", &[("Origin", "null")]),
        ("lookalike", &[("Origin", "http://127.0.0.1.evil.example")]),
        ("rebound", &[("Host", &rebound_host)]),
    ];
    for (name, headers) in refused {
        let marker = dir.path().join(name);
        let reply = session.post(headers, &call_msg(2, "shell", touch(&marker)));
        assert_eq!(reply.status, 403, "{name}: {}", reply.body);
        let first = http(port, "POST", headers, &initialize_msg());
        assert_eq!(first.status, 403, "{name} initialize: {}", first.body);
        assert!(
            first.header("mcp-session-id").is_none(),
            "{name}: a refused request opened a session"
        );
    }

    // No Origin (an agent, curl) and a local page's Origin both work.
    let plain = dir.path().join("plain");
    let reply = session.post(&[], &call_msg(3, "shell", touch(&plain)));
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(
        reply.response(3)["result"]["isError"],
        false,
        "{}",
        reply.body
    );
    let local = dir.path().join("local");
    let reply = session.post(
        &[("Origin", &local_origin)],
        &call_msg(4, "shell", touch(&local)),
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(
        reply.response(4)["result"]["isError"],
        false,
        "{}",
        reply.body
    );
    assert!(plain.exists() && local.exists(), "the allowed calls ran");

    for name in ["evil", "null", "lookalike", "rebound"] {
        assert!(
            !dir.path().join(name).exists(),
            "a tool ran for the refused `{name}` request"
        );
    }
}

/// A child process that is killed (and its tools with it) however the test ends.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The pids of processes running exactly `sleep ARG`.
fn sleeping(arg: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let Ok(raw) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
                return false;
            };
            let argv: Vec<&[u8]> = raw.split(|b| *b == 0).collect();
            argv.len() >= 2 && argv[0].ends_with(b"sleep") && argv[1] == arg.as_bytes()
        })
        .collect()
}

/// Waits up to `secs` for `done`.
fn within(secs: u64, mut done: impl FnMut() -> bool) -> bool {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while std::time::Instant::now() < until {
        if done() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    done()
}

/// A `sleep` argument no other test or process uses: 30 seconds and a unique fraction.
fn unique_sleep() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    format!("30.{}{nanos:09}", std::process::id())
}

fn audit_records(state: &Path) -> Vec<tackle_store::AuditRecord> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        tackle_store::Store::open(state)
            .unwrap()
            .audit_tail(100)
            .await
            .unwrap()
    })
}

fn assert_cancelled_call_was_audited(state: &Path, sleep: &str) {
    // The record is written as the call ends, which may be just after its process is gone;
    // until then the row may exist with the outcome `running`.
    let find = || {
        audit_records(state)
            .into_iter()
            .find(|r| r.tool == "shell" && r.args_summary.contains(sleep))
    };
    let mut shell = None;
    within(5, || {
        shell = find();
        shell.as_ref().is_some_and(|r| r.outcome != "running")
    });
    let shell = shell.unwrap_or_else(|| panic!("no audit record for `sleep {sleep}`"));
    assert_eq!(shell.outcome, "failed", "{shell:?}");
    assert!(shell.why.contains("cancelled"), "{shell:?}");
}

#[test]
fn mcp_serve_stdio_kills_a_call_the_client_cancels_and_keeps_serving() {
    use std::io::{BufRead, Write};
    let dir = tempfile::tempdir().unwrap();
    let cfg = config_with(dir.path(), SHELL_RUNS);
    let mut child = KillOnDrop(
        Command::new(common::tackle_bin())
            .arg("--config")
            .arg(&cfg)
            .args(["mcp", "serve"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let child = &mut child.0;
    let mut stdin = child.stdin.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<Value>();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if let Ok(v) = serde_json::from_str(&line) {
                let _ = tx.send(v);
            }
        }
    });
    let mut send = |msg: Value| {
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
    };
    let reply = |rx: &std::sync::mpsc::Receiver<Value>| {
        rx.recv_timeout(std::time::Duration::from_secs(60))
            .expect("the server answers")
    };

    send(initialize_msg());
    assert_eq!(reply(&rx)["id"], 1);
    send(initialized_msg());
    let sleep = unique_sleep();
    send(call_msg(2, "shell", sleep_args(&sleep)));
    assert!(
        within(30, || !sleeping(&sleep).is_empty()),
        "the sleep never started"
    );
    send(cancel_msg(2));
    assert!(
        within(5, || sleeping(&sleep).is_empty()),
        "the cancelled call's process is still running: {:?}",
        sleeping(&sleep)
    );

    send(call_msg(3, "calculate", json!({"expression": "7/2"})));
    let next = reply(&rx);
    assert_eq!(
        next["id"], 3,
        "the cancelled request gets no response: {next}"
    );
    assert_eq!(next["result"]["content"][0]["text"], "3.5", "{next}");

    drop(stdin);
    let exited = within(10, || child.try_wait().ok().flatten().is_some());
    assert!(
        exited,
        "the server did not stop when the client closed stdin"
    );
    assert_cancelled_call_was_audited(&dir.path().join("state"), &sleep);
}

#[test]
fn mcp_serve_http_kills_a_call_the_client_cancels_and_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let server = HttpServe::start(&config_with(dir.path(), SHELL_RUNS));
    let session = std::sync::Arc::new(RawSession::open(server.port));
    let sleep = unique_sleep();
    let call = call_msg(2, "shell", sleep_args(&sleep));
    // The call's reply stream is read on its own thread; it carries no response once cancelled.
    let caller = std::sync::Arc::clone(&session);
    let pending = std::thread::spawn(move || caller.post(&[], &call));
    assert!(
        within(30, || !sleeping(&sleep).is_empty()),
        "the sleep never started: {}",
        server.stderr.lock().unwrap()
    );
    let ack = session.post(&[], &cancel_msg(2));
    assert_eq!(ack.status, 202, "{}", ack.body);
    assert!(
        within(5, || sleeping(&sleep).is_empty()),
        "the cancelled call's process is still running: {:?}",
        sleeping(&sleep)
    );

    let next = session.post(&[], &call_msg(3, "calculate", json!({"expression": "7/2"})));
    assert_eq!(next.status, 200, "{}", next.body);
    assert_eq!(
        next.response(3)["result"]["content"][0]["text"],
        "3.5",
        "{}",
        next.body
    );
    if pending.is_finished() {
        let cancelled = pending.join().unwrap();
        assert!(
            !cancelled.messages().iter().any(|m| m["id"] == 2),
            "the cancelled request got a response: {}",
            cancelled.body
        );
    }
    assert_cancelled_call_was_audited(&dir.path().join("state"), &sleep);
}

#[test]
fn mcp_serve_http_keeps_approvals_and_audit_sessions_per_mcp_session() {
    let Some(python) = venv_python() else {
        eprintln!("SKIPPED: .ci/venv is missing (run .ci/mcp-peers.sh)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // Default config: `shell` needs approval.
    let server = HttpServe::start(&config(dir.path()));
    let m = |name: &str| dir.path().join(name);
    // A allows `shell` for its session; B (who can be asked) and C (who cannot) come after.
    let plan = json!({
        "clients": {"A": "session", "B": "deny", "C": null},
        "steps": [
            ["A", "shell", touch(&m("a1"))],
            ["A", "shell", touch(&m("a2"))],
            ["B", "shell", touch(&m("b1"))],
            ["C", "shell", touch(&m("c1"))],
            ["A", "shell", touch(&m("a3"))]
        ]
    });
    let out = Command::new(&python)
        .arg(root().join("tests/mcp_client/sessions.py"))
        .arg(server.url())
        .arg(plan.to_string())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\nserver: {}",
        String::from_utf8_lossy(&out.stderr),
        server.stderr.lock().unwrap()
    );
    let out: Value = serde_json::from_slice(&out.stdout).unwrap();
    let results = out["results"].as_array().unwrap();
    let text = |i: usize| results[i]["text"].as_str().unwrap_or_default();

    // A was asked once; its answer covered its later calls.
    assert_eq!(out["asked"]["A"], 1, "{out}");
    for i in [0, 1, 4] {
        assert_eq!(results[i]["is_error"], false, "{}", results[i]);
    }
    assert!(m("a1").exists() && m("a2").exists() && m("a3").exists());
    // B was asked again (A's answer is not B's) and said no.
    assert_eq!(out["asked"]["B"], 1, "{out}");
    assert!(text(2).starts_with("denied: "), "{}", results[2]);
    assert!(!m("b1").exists(), "B's call ran after a no");
    // C cannot be asked: needs_approval, nothing ran.
    assert_eq!(out["asked"]["C"], 0, "{out}");
    assert!(text(3).starts_with("needs_approval: "), "{}", results[3]);
    assert!(!m("c1").exists(), "C's call ran unasked");

    // The audit log: one session id per MCP session, the same for all of A's calls.
    let records = audit_records(&dir.path().join("state"));
    let session_of = |marker: &str| -> String {
        let r = records
            .iter()
            .find(|r| r.tool == "shell" && r.args_summary.contains(marker))
            .unwrap_or_else(|| panic!("no audit record for {marker}: {records:?}"));
        r.session_id.clone().unwrap_or_default()
    };
    let a1 = m("a1").display().to_string();
    let (a, b, c) = (
        session_of(&a1),
        session_of(&m("b1").display().to_string()),
        session_of(&m("c1").display().to_string()),
    );
    assert!(!a.is_empty() && !b.is_empty() && !c.is_empty());
    assert_eq!(a, session_of(&m("a2").display().to_string()));
    assert_eq!(a, session_of(&m("a3").display().to_string()));
    assert!(a != b && b != c && a != c, "{a} {b} {c}");
}

// ---------------------------------------------------------------------------------------------
// Front-end contracts: what is listed can run, a taken port fails before anything claims to
// serve, and ending an HTTP session is a success the SDKs recognise.

#[test]
fn mcp_serve_lists_no_agent_tools() {
    let Some(python) = venv_python() else {
        eprintln!("SKIPPED: .ci/venv is missing (run .ci/mcp-peers.sh)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = python_client(&python, &[], json!([["list"]]), &config(dir.path())).unwrap();
    let tools: Vec<&str> = out[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(tools.contains(&"calculate"), "{tools:?}");
    assert!(
        !tools.contains(&"compact"),
        "`compact` needs an agent, which `mcp serve` does not run: {tools:?}"
    );
}

#[test]
fn mcp_serve_http_on_a_port_in_use_fails_naming_the_address_without_claiming_to_serve() {
    let dir = tempfile::tempdir().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = Command::new(common::tackle_bin())
        .arg("--config")
        .arg(config(dir.path()))
        .args(["mcp", "serve", "--http", &addr])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let code = out.status.code();
    assert!(matches!(code, Some(1 | 2)), "exit {code:?}: {stderr}");
    assert!(stderr.contains(&addr), "the error names {addr}: {stderr}");
    assert!(!stderr.contains("serving"), "claimed to serve: {stderr}");
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    drop(taken);
}

#[test]
fn mcp_serve_http_session_termination_is_a_success_for_the_python_sdk() {
    let Some(python) = venv_python() else {
        eprintln!("SKIPPED: .ci/venv is missing (run .ci/mcp-peers.sh)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let server = HttpServe::start(&config(dir.path()));
    let out = Command::new(&python)
        .arg(root().join("tests/mcp_client/terminate.py"))
        .arg(server.url())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\nserver: {}",
        String::from_utf8_lossy(&out.stderr),
        server.stderr.lock().unwrap()
    );
    let out: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        out["tools"].as_array().is_some_and(|t| !t.is_empty()),
        "{out}"
    );
    assert_eq!(
        out["warnings"],
        json!([]),
        "the SDK reported a problem: {out}"
    );

    // The same by hand: DELETE with the session id answers 200, and the session is gone.
    let init = http(server.port, "POST", &[], &initialize_msg());
    let session = init
        .header("mcp-session-id")
        .unwrap_or_else(|| panic!("no session id: {} {}", init.status, init.body))
        .to_string();
    let ended = http(
        server.port,
        "DELETE",
        &[("Mcp-Session-Id", &session)],
        &json!({}),
    );
    assert!(
        matches!(ended.status, 200 | 204),
        "DELETE answered {}: {}",
        ended.status,
        ended.body
    );
    let after = http(
        server.port,
        "POST",
        &[("Mcp-Session-Id", &session)],
        &call_msg(2, "calculate", json!({"expression": "1+1"})),
    );
    assert_eq!(
        after.status, 404,
        "the ended session still answers: {}",
        after.body
    );
}
