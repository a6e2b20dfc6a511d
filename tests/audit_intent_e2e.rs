//! Every decision leaves an audit record, through the real binary: calls an MCP client may not
//! make (a tool this server does not offer, one that does not exist, `describe_tool` on a
//! hidden one, invalid arguments, parameters that are not a call, a policy denial) are recorded
//! as refused; a session-wide grant is recorded as such; and a call whose
//! process is killed after its command acted is on record as `interrupted` from the next
//! start of any `tackle` process, while a call still running elsewhere is left alone.

mod common;

use common::{run, Sandbox};
use serde_json::{json, Value};
use std::io::{BufRead, Write};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

fn audit(sb: &Sandbox, config: &Path) -> Vec<Value> {
    let r = run(sb.tackle(config, &["audit", "--json"]));
    assert_eq!(r.code, 0, "{r}");
    let v: Value = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}\n{r}"));
    v.as_array().cloned().unwrap_or_default()
}

/// The one record whose tool is `tool` and whose argument summary contains `marker`.
fn record<'a>(records: &'a [Value], tool: &str, marker: &str) -> &'a Value {
    let found: Vec<&Value> = records
        .iter()
        .filter(|r| r["tool"] == tool && r["args_summary"].as_str().unwrap_or("").contains(marker))
        .collect();
    assert_eq!(
        found.len(),
        1,
        "one record of `{tool}` with {marker:?}: {records:#?}"
    );
    found[0]
}

/// A child killed (SIGKILL) and collected however the test ends.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits up to `secs` for `done`.
fn within(secs: u64, mut done: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < until {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    done()
}

// ---------------------------------------------------------------------------------------------
// Refusals over `mcp serve`

/// `mcp serve` over stdio with a raw JSON-RPC client: one request at a time. With an
/// `answer`, the client can be asked for approval and answers every form with it.
struct McpStdio {
    child: KillOnDrop,
    replies: Receiver<Value>,
    next_id: u64,
    answer: Option<&'static str>,
}

impl McpStdio {
    fn start(sb: &Sandbox, config: &Path) -> Self {
        Self::answering(sb, config, None)
    }

    fn answering(sb: &Sandbox, config: &Path, answer: Option<&'static str>) -> Self {
        let mut cmd = sb.tackle(config, &["mcp", "serve"]);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = KillOnDrop(cmd.spawn().expect("spawn tackle mcp serve"));
        let stdout = child.0.stdout.take().expect("stdout");
        let (tx, replies) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                if let Ok(v) = serde_json::from_str::<Value>(&line) {
                    // Only responses: notifications (logging, progress) carry no id.
                    if v.get("id").is_some() && tx.send(v).is_err() {
                        return;
                    }
                }
            }
        });
        let mut server = Self {
            child,
            replies,
            next_id: 1,
            answer,
        };
        let capabilities = match answer {
            Some(_) => json!({"elicitation": {"form": {}}}),
            None => json!({}),
        };
        let init = server.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": capabilities,
                   "clientInfo": {"name": "audit-test-client", "version": "0"}}),
        );
        assert!(init.get("result").is_some(), "{init}");
        server.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        server
    }

    fn send(&mut self, msg: Value) {
        let stdin = self.child.0.stdin.as_mut().expect("stdin");
        writeln!(stdin, "{msg}").expect("write to the server");
        stdin.flush().expect("flush");
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let msg = self
                .replies
                .recv_timeout(Duration::from_secs(60))
                .expect("the server answers");
            if msg["method"] == "elicitation/create" {
                let answer = self
                    .answer
                    .expect("a client that cannot be asked was asked");
                self.send(json!({"jsonrpc": "2.0", "id": msg["id"], "result": {
                    "action": "accept", "content": {"decision": answer}}}));
                continue;
            }
            assert_eq!(msg["id"], id, "{msg}");
            return msg;
        }
    }

    /// A `tools/call`; returns its result's text and whether it is an error.
    fn call(&mut self, tool: &str, arguments: Value) -> (String, bool) {
        let reply = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        let result = &reply["result"];
        (
            result["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            result["isError"] == true,
        )
    }

    /// Closes stdin and waits for the server to end, so every record is written.
    fn finish(mut self) {
        drop(self.child.0.stdin.take());
        let exited = within(10, || self.child.0.try_wait().ok().flatten().is_some());
        assert!(exited, "the server did not stop when its client left");
    }
}

#[test]
fn calls_an_mcp_client_may_not_make_are_refused_and_each_leaves_a_record() {
    let sb = Sandbox::new();
    let ws = sb.workspace();
    let config = sb.config(concat!(
        "mcp:\n  serve_tools: [calculate, describe_tool, shell]\n",
        "security:\n  tool_policies:\n    shell:\n      approval: never\n",
        "      grants:\n        shell:\n          deny: [\"rm\"]\n",
        "services:\n  r8r:\n    url: http://127.0.0.1:9\n    token: r8r-audit-SECRET-token\n",
    ));
    let hidden_file = ws.join("written-by-a-hidden-tool");
    let denied_file = ws.join("made-by-a-denied-command");
    let mut mcp = McpStdio::start(&sb, &config);

    // A tool the registry has but this server does not offer: refused, nothing written.
    let (text, is_error) = mcp.call(
        "write_file",
        json!({"path": hidden_file.display().to_string(),
               "content": "hidden-marker Bearer r8r-audit-SECRET-token"}),
    );
    assert!(is_error && text.contains("unknown tool"), "{text}");
    // A tool nobody has.
    let (text, is_error) = mcp.call("no_such_tool", json!({"unknown": "nowhere-marker"}));
    assert!(is_error && text.contains("unknown tool"), "{text}");
    // `describe_tool` on a hidden tool: refused like the tool itself.
    let (text, is_error) = mcp.call("describe_tool", json!({"tool": "write_file"}));
    assert!(is_error && text.contains("no tool named"), "{text}");
    // Arguments the schema refuses.
    let (text, is_error) = mcp.call("calculate", json!({"expression": 12345}));
    assert!(is_error && text.starts_with("invalid_arguments"), "{text}");
    // Parameters that are not a tool call at all: invalid params, and on record.
    for params in [
        json!({"name": "calculate", "arguments": "malformed-marker"}),
        json!({"arguments": {"x": "nameless-marker"}}),
    ] {
        let reply = mcp.request("tools/call", params);
        assert_eq!(reply["error"]["code"], -32602, "{reply}");
    }
    // A command the policy denies: nothing of it runs.
    let (text, is_error) = mcp.call(
        "shell",
        json!({"command": format!("touch {} && rm -rf denied-marker", denied_file.display())}),
    );
    assert!(is_error && text.starts_with("denied"), "{text}");
    // And one that is allowed, for contrast.
    let (text, is_error) = mcp.call("calculate", json!({"expression": "6*7"}));
    assert!(!is_error && text == "42", "{text}");
    mcp.finish();

    assert!(!hidden_file.exists(), "the hidden tool ran");
    assert!(!denied_file.exists(), "the denied command ran");

    // A refused call's arguments are summarised like any other's: secrets redacted.
    for args in [&["audit", "--json"][..], &["audit"][..]] {
        let r = run(sb.tackle(&config, args));
        assert_eq!(r.code, 0, "{r}");
        assert!(r.stdout.contains("hidden-marker"), "{r}");
        assert!(!r.stdout.contains("r8r-audit-SECRET-token"), "{r}");
    }
    for file in std::fs::read_dir(sb.state()).expect("state dir").flatten() {
        let bytes = std::fs::read(file.path()).unwrap_or_default();
        assert!(
            !bytes.windows(22).any(|w| w == b"r8r-audit-SECRET-token"),
            "{} holds the secret",
            file.path().display()
        );
    }
    let records = audit(&sb, &config);
    let refused = [
        ("write_file", "hidden-marker", "not_found"),
        ("no_such_tool", "nowhere-marker", "not_found"),
        ("describe_tool", "write_file", "not_found"),
        ("calculate", "12345", "invalid_arguments"),
        ("calculate", "malformed-marker", "invalid_arguments"),
        ("", "nameless-marker", "invalid_arguments"),
        ("shell", "denied-marker", "denied"),
    ];
    for (tool, marker, outcome) in refused {
        let r = record(&records, tool, marker);
        assert_eq!(r["verdict"], "deny", "{r:#}");
        assert_eq!(r["outcome"], outcome, "{r:#}");
        assert_eq!(r["caller"], "mcp", "{r:#}");
        assert_eq!(r["agent"], "default", "{r:#}");
        assert!(
            r["session_id"]
                .as_str()
                .is_some_and(|s| s.starts_with("mcp-serve-")),
            "{r:#}"
        );
        assert!(r["approver"].is_null(), "no one approved a refusal: {r:#}");
    }
    assert!(
        record(&records, "shell", "denied-marker")["rule"]
            .as_str()
            .unwrap_or("")
            .contains("rm"),
        "{records:#?}"
    );
    let allowed = record(&records, "calculate", "6*7");
    assert_eq!(allowed["verdict"], "allow", "{allowed:#}");
    assert_eq!(allowed["outcome"], "ok", "{allowed:#}");
    assert_eq!(allowed["approver"], "policy", "{allowed:#}");
    assert_eq!(records.len(), 8, "{records:#?}");
}

#[test]
fn a_session_wide_grant_is_recorded_as_such_and_a_persons_no_names_who_said_it() {
    let sb = Sandbox::new();
    // Default policy: `shell` always asks.
    let config = sb.config("");
    let touch =
        |name: &str| json!({"command": format!("touch {}", sb.workspace().join(name).display())});
    let mut mcp = McpStdio::answering(&sb, &config, Some("session"));
    assert!(!mcp.call("shell", touch("first")).1);
    assert!(!mcp.call("shell", touch("second")).1);
    mcp.finish();
    let mut mcp = McpStdio::answering(&sb, &config, Some("deny"));
    let (text, is_error) = mcp.call("shell", touch("refused"));
    assert!(is_error && text.starts_with("denied"), "{text}");
    mcp.finish();
    assert!(sb.workspace().join("second").exists());
    assert!(!sb.workspace().join("refused").exists());

    let records = audit(&sb, &config);
    let of = |name: &str| record(&records, "shell", name);
    let summary: Vec<(&Value, &Value, &Value)> = ["first", "second", "refused"]
        .iter()
        .map(|n| (&of(n)["verdict"], &of(n)["approver"], &of(n)["outcome"]))
        .collect();
    assert_eq!(
        summary,
        [
            (&json!("allow"), &json!("mcp-elicitation"), &json!("ok")),
            // Nobody was asked: the first answer covered it for the session.
            (&json!("allow"), &json!("session"), &json!("ok")),
            (&json!("deny"), &json!("mcp-elicitation"), &json!("denied")),
        ],
        "{records:#?}"
    );
}

// ---------------------------------------------------------------------------------------------
// A call whose process is killed

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

/// Kills what is left of a killed call's command (nothing kills it once tackle is gone).
struct KillSleep(String);

impl Drop for KillSleep {
    fn drop(&mut self) {
        for pid in sleeping(&self.0) {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    }
}

/// A `sleep` argument no other test or process uses: 30 seconds and a unique fraction.
fn unique_sleep() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    format!("30.{}{nanos:09}", std::process::id())
}

fn shell_record<'a>(records: &'a [Value], marker: &str) -> &'a Value {
    record(records, "shell", marker)
}

const SHELL_RUNS: &str = "security:\n  tool_policies:\n    shell:\n      approval: never\n";

#[test]
fn a_call_killed_after_its_command_acted_is_interrupted_and_a_running_one_is_not() {
    let sb = Sandbox::new();
    let config = sb.config(SHELL_RUNS);
    let victim = sb.workspace().join("VICTIM");
    let sleep = unique_sleep();
    let _cleanup = KillSleep(sleep.clone());
    let args = json!({"command": format!("touch {} ; sleep {sleep}", victim.display())});
    let mut cmd = sb.tackle(&config, &["tools", "call", "shell", &args.to_string()]);
    cmd.stdout(Stdio::null()).stderr(Stdio::null());
    let mut call = KillOnDrop(cmd.spawn().expect("spawn tackle tools call"));
    assert!(within(30, || victim.exists()), "the command never ran");

    // Other processes start meanwhile (each opens the store): the running call is theirs to
    // leave alone.
    let other = run(sb.tackle(
        &config,
        &["tools", "call", "calculate", r#"{"expression": "1+1"}"#],
    ));
    assert_eq!(other.code, 0, "{other}");
    let records = audit(&sb, &config);
    let running = shell_record(&records, &sleep);
    assert_eq!(running["outcome"], "running", "{running:#}");
    assert_eq!(running["verdict"], "allow", "{running:#}");
    assert_eq!(running["caller"], "cli", "{running:#}");
    assert!(
        call.0.try_wait().ok().flatten().is_none(),
        "the call ended early"
    );

    // SIGKILL: nothing of tackle runs after this, so only the intent written before the
    // command ran says it did.
    call.0.kill().expect("kill");
    call.0.wait().expect("wait");
    let records = audit(&sb, &config);
    let killed = shell_record(&records, &sleep);
    assert_eq!(killed["outcome"], "interrupted", "{killed:#}");
    assert_eq!(killed["verdict"], "allow", "{killed:#}");
    assert!(
        killed["why"]
            .as_str()
            .unwrap_or("")
            .contains(&format!("pid {}", call.0.id())),
        "{killed:#}"
    );
    assert!(victim.exists());

    // The text view says so too, under its header.
    let text = run(sb.tackle(&config, &["audit", "--tool", "shell"]));
    assert_eq!(text.code, 0, "{text}");
    let lines: Vec<&str> = text.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(lines[0].starts_with("TIME"), "{text}");
    assert!(
        lines[1].contains("interrupted") && lines[1].contains(" cli "),
        "{text}"
    );
}
