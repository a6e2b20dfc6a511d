//! `tackle mcp serve` over stdio with a raw JSON-RPC client: the server's own log messages
//! (`logging/setLevel`, `notifications/message`), progress for calls that carry a progress
//! token, tool annotations, and `notifications/tools/list_changed` when an MCP server behind
//! it changes its tools (that last one needs `.ci/venv`, made by `.ci/mcp-peers.sh`, and skips
//! with a printed reason without it).

mod common;

use common::{repo_root, Sandbox};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

/// `tackle mcp serve` on stdio, initialised; messages are read on a thread so waits time out.
struct Client {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<Value>,
    next_id: u64,
}

impl Client {
    fn start(sb: &Sandbox, yaml: &str) -> Self {
        let cfg = sb.config(yaml);
        let mut child = sb
            .tackle(&cfg, &["mcp", "serve"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn tackle mcp serve");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if let Ok(v) = serde_json::from_str::<Value>(&line) {
                    if tx.send(v).is_err() {
                        return;
                    }
                }
            }
        });
        let mut client = Self {
            child,
            stdin,
            lines,
            next_id: 1,
        };
        let (_, init) = client.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "logging-test", "version": "1"}}),
        );
        assert!(
            init["result"]["capabilities"]["logging"].is_object(),
            "{init}"
        );
        client.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        client
    }

    fn send(&mut self, msg: Value) {
        writeln!(self.stdin, "{msg}").expect("write");
        self.stdin.flush().expect("flush");
    }

    fn next(&self, within: Duration) -> Option<Value> {
        self.lines.recv_timeout(within).ok()
    }

    /// Sends a request; returns the notifications that came before its reply, and the reply.
    fn request(&mut self, method: &str, params: Value) -> (Vec<Value>, Value) {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut notes = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let msg = self
                .next(left)
                .unwrap_or_else(|| panic!("no reply to {method} (after {notes:?})"));
            if msg["id"] == id {
                return (notes, msg);
            }
            notes.push(msg);
        }
    }

    fn set_level(&mut self, level: &str) {
        let (_, reply) = self.request("logging/setLevel", json!({ "level": level }));
        assert_eq!(reply["result"], json!({}), "{reply}");
    }

    fn call(&mut self, tool: &str, arguments: Value, meta: Value) -> (Vec<Value>, Value) {
        self.request(
            "tools/call",
            json!({"name": tool, "arguments": arguments, "_meta": meta}),
        )
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn log_messages(notes: &[Value]) -> Vec<&Value> {
    notes
        .iter()
        .filter(|n| n["method"] == "notifications/message")
        .map(|n| &n["params"])
        .collect()
}

fn progress(notes: &[Value]) -> Vec<&Value> {
    notes
        .iter()
        .filter(|n| n["method"] == "notifications/progress")
        .map(|n| &n["params"])
        .collect()
}

#[test]
fn set_level_decides_which_of_the_servers_own_events_the_client_hears() {
    let sb = Sandbox::new();
    let mut client = Client::start(&sb, "");

    // No level set yet: warnings only. A call that needs approval no one can give is one…
    let (notes, reply) = client.call("shell", json!({"command": "true"}), json!({}));
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    let logs = log_messages(&notes);
    assert_eq!(logs.len(), 1, "{notes:?}");
    assert_eq!(logs[0]["level"], "warning");
    assert_eq!(logs[0]["logger"], "tackle");
    assert_eq!(logs[0]["data"]["event"], "call_not_approved");
    assert_eq!(logs[0]["data"]["tool"], "shell");
    // … a call that just ran is not.
    let (notes, _) = client.call("get_time", json!({}), json!({}));
    assert!(log_messages(&notes).is_empty(), "{notes:?}");

    client.set_level("debug");
    let (notes, reply) = client.call("get_time", json!({}), json!({}));
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    let events: Vec<&Value> = log_messages(&notes)
        .iter()
        .map(|l| &l["data"]["event"])
        .collect();
    assert_eq!(events, ["call_started", "call_finished"], "{notes:?}");
    assert!(log_messages(&notes).iter().all(|l| l["level"] == "debug"));

    client.set_level("error");
    let (notes, _) = client.call("shell", json!({"command": "true"}), json!({}));
    assert!(
        log_messages(&notes).is_empty(),
        "a warning is below error: {notes:?}"
    );

    let (_, reply) = client.request("logging/setLevel", json!({"level": "verbose"}));
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
}

#[test]
fn a_long_call_with_a_progress_token_reports_progress_until_it_ends() {
    let sb = Sandbox::new();
    let yaml = "security:\n  tool_policies:\n    shell:\n      approval: never\n";
    let mut client = Client::start(&sb, yaml);
    let (notes, reply) = client.call(
        "shell",
        json!({"command": "sleep 2.5; echo done"}),
        json!({"progressToken": "tok-7"}),
    );
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    let steps = progress(&notes);
    assert!(
        steps.iter().all(|p| p["progressToken"] == "tok-7"),
        "{steps:?}"
    );
    let values: Vec<f64> = steps
        .iter()
        .filter_map(|p| p["progress"].as_f64())
        .collect();
    // A start, a heartbeat a second while it runs, an end.
    assert!(values.len() >= 3, "{steps:?}");
    assert_eq!(values[0], 0.0);
    assert!(
        values.windows(2).all(|w| w[0] < w[1]),
        "progress only increases: {values:?}"
    );
    let last = steps[steps.len() - 1];
    assert_eq!(
        last["total"], last["progress"],
        "the end is the total: {last}"
    );
    assert!(
        steps[1]["message"]
            .as_str()
            .is_some_and(|m| m.contains("running for")),
        "{steps:?}"
    );

    // No token, no progress.
    let (notes, _) = client.call("get_time", json!({}), json!({}));
    assert!(progress(&notes).is_empty(), "{notes:?}");
}

#[test]
fn a_commands_output_lines_come_as_progress_redacted_like_the_result() {
    let sb = Sandbox::new();
    let secret = "sk-test-progress-secret-4242";
    let yaml = format!(
        "backends:\n  - name: b\n    type: openai\n    api_base: http://127.0.0.1:9/v1\n    api_key: {secret}\n    models: [{{name: m}}]\nsecurity:\n  tool_policies:\n    shell:\n      approval: never\n"
    );
    let mut client = Client::start(&sb, &yaml);
    let command =
        format!("for i in 1 2 3; do echo line-$i; sleep 0.4; done; echo key={secret}; sleep 0.4");
    let (notes, reply) = client.call(
        "shell",
        json!({"command": command}),
        json!({"progressToken": 9}),
    );
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    let steps = progress(&notes);
    let messages: Vec<&str> = steps.iter().filter_map(|p| p["message"].as_str()).collect();
    for line in [
        "`shell`: line-1",
        "`shell`: line-2",
        "`shell`: line-3",
        "`shell`: key=",
    ] {
        assert!(
            messages.iter().any(|m| m.starts_with(line)),
            "{line} missing: {messages:?}"
        );
    }
    let all = serde_json::to_string(&notes).unwrap_or_default();
    assert!(!all.contains(secret), "the secret leaked: {messages:?}");
    let values: Vec<f64> = steps
        .iter()
        .filter_map(|p| p["progress"].as_f64())
        .collect();
    assert!(
        values.windows(2).all(|w| w[0] < w[1]),
        "progress only increases: {values:?}"
    );
}

#[test]
fn tools_carry_annotations_from_their_risk_and_approval() {
    let sb = Sandbox::new();
    let mut client = Client::start(&sb, "");
    let (_, reply) = client.request("tools/list", json!({}));
    let tools = reply["result"]["tools"].as_array().expect("tools");
    let tool = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} not listed"))
    };
    let read = &tool("read_file")["annotations"];
    assert_eq!(read["readOnlyHint"], true, "{read}");
    assert_eq!(read["openWorldHint"], false, "{read}");
    assert_eq!(tool("read_file")["title"], "Read file");
    let shell = &tool("shell")["annotations"];
    assert_eq!(shell["readOnlyHint"], false, "{shell}");
    assert_eq!(shell["destructiveHint"], true, "{shell}");
    let fetch = &tool("web_fetch")["annotations"];
    assert_eq!(fetch["openWorldHint"], true, "{fetch}");
    assert!(
        reply["result"].get("nextCursor").is_none(),
        "one page: {reply}"
    );
}

#[test]
fn tools_added_by_an_mcp_server_behind_it_are_announced() {
    let python = repo_root().join(".ci/venv/bin/python");
    if !python.exists() {
        eprintln!("SKIPPED: .ci/venv is missing (run .ci/mcp-peers.sh)");
        return;
    }
    let script = repo_root().join("tests/mcp_client/dynamic_server.py");
    let yaml = format!(
        "security:\n  auto_approved_tools: [dyn__add_tool]\nmcp_servers:\n  dyn:\n    command: {}\n    args: [{:?}]\n",
        python.display(),
        script.display().to_string()
    );
    let sb = Sandbox::new();
    let mut client = Client::start(&sb, &yaml);
    let listed = |client: &mut Client| -> Vec<Value> {
        let (_, reply) = client.request("tools/list", json!({}));
        reply["result"]["tools"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    let names = |tools: &[Value]| -> Vec<String> {
        tools
            .iter()
            .filter_map(|t| t["name"].as_str().map(String::from))
            .collect()
    };
    let before = listed(&mut client);
    assert!(
        names(&before).contains(&"dyn__echo".to_string()),
        "{:?}",
        names(&before)
    );
    let echo = before.iter().find(|t| t["name"] == "dyn__echo").unwrap();
    assert_eq!(echo["annotations"]["openWorldHint"], true, "{echo}");
    assert_eq!(echo["title"], "dyn: Echo");

    let (notes, reply) = client.call("dyn__add_tool", json!({"name": "fresh"}), json!({}));
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    let mut announced = notes
        .iter()
        .any(|n| n["method"] == "notifications/tools/list_changed");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !announced {
        let left = deadline.saturating_duration_since(Instant::now());
        let Some(msg) = client.next(left) else { break };
        announced = msg["method"] == "notifications/tools/list_changed";
    }
    assert!(announced, "no notifications/tools/list_changed");
    assert!(
        names(&listed(&mut client)).contains(&"dyn__fresh".to_string()),
        "the announced tool is listed"
    );
}
