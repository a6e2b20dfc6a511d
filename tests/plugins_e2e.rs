//! Plugins end to end through the real binary: `tackle plugins check` and `list` over good and
//! bad manifests, `tackle doctor` naming each problem by file and JSON path, and
//! `tackle tools call PLUGIN_TOOL … --yes` running a plugin's command in the sandbox.

mod common;

use common::{run, Sandbox};
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

const RECORD: &str = "#!/bin/sh\nrm -rf rec && mkdir rec || exit 1\ni=0\nfor a in \"$@\"; do\n  printf '%s' \"$a\" > \"rec/$i\"\n  i=$((i+1))\ndone\necho \"recorded $i\"\n";

fn plugins_dir(sb: &Sandbox) -> PathBuf {
    sb.home().join(".config/tackle/plugins")
}

fn write_plugin(sb: &Sandbox, dir: &str, manifest: &Value) -> PathBuf {
    let plugin = plugins_dir(sb).join(dir);
    std::fs::create_dir_all(&plugin).expect("mkdir");
    let script = plugin.join("record.sh");
    std::fs::write(&script, RECORD).expect("script");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let file = plugin.join("plugin.json");
    std::fs::write(&file, manifest.to_string()).expect("manifest");
    file
}

fn recorder() -> Value {
    json!({
        "name": "recorder", "version": "1.2.3", "description": "records its argv",
        "tools": [{
            "name": "record_args", "description": "Record the arguments",
            "parameters": {"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"], "additionalProperties": false},
            "command": ["./record.sh", "--", "{{value}}"]
        }]
    })
}

fn broken() -> Value {
    json!({
        "name": "broken", "version": "1", "description": "names an undeclared parameter",
        "tools": [{
            "name": "broken_tool", "description": "d",
            "parameters": {"type": "object", "properties": {"a": {"type": "string"}}},
            "command": ["git", "{{b}}"]
        }]
    })
}

fn recorded(ws: &Path) -> Vec<String> {
    (0..)
        .map_while(|i| std::fs::read_to_string(ws.join("rec").join(i.to_string())).ok())
        .collect()
}

#[test]
fn plugins_check_reports_each_problem_with_file_and_json_path_and_fails() {
    let sb = Sandbox::new();
    write_plugin(&sb, "recorder", &recorder());
    let bad = write_plugin(&sb, "broken", &broken());
    let config = sb.config("");
    let r = run(sb.tackle(&config, &["plugins", "check"]));
    assert_eq!(r.code, 1, "{r}");
    let expected = format!("error: {}: $.tools[0].command[1]: ", bad.display());
    assert!(r.stdout.contains(&expected), "{r}");
    assert!(r.stdout.contains("{{b}}"), "{r}");
    assert!(
        r.stdout
            .contains("1 plugin(s) loaded with 1 tool(s); 1 problem(s)"),
        "{r}"
    );

    let r = run(sb.tackle(&config, &["plugins", "list"]));
    assert_eq!(r.code, 0, "{r}");
    assert!(
        r.stdout.contains("recorder 1.2.3 — records its argv"),
        "{r}"
    );
    assert!(
        r.stdout
            .contains("record_args  medium·unless_auto_approved"),
        "{r}"
    );
    assert!(!r.stdout.contains("broken_tool"), "{r}");

    let r = run(sb.tackle(&config, &["plugins", "check", "--json"]));
    let v: Value = serde_json::from_str(&r.stdout).expect("json");
    assert_eq!(v["errors"][0]["path"], "$.tools[0].command[1]", "{r}");
    assert_eq!(v["errors"][0]["file"], bad.display().to_string(), "{r}");
}

#[test]
fn doctor_names_a_bad_manifest_and_other_commands_still_start() {
    let sb = Sandbox::new();
    let bad = write_plugin(&sb, "broken", &broken());
    let config = sb.config("");
    let r = run(sb.tackle(&config, &["doctor", "--json"]));
    let v: Value = serde_json::from_str(&r.stdout).expect("json");
    let checks = v["checks"].as_array().cloned().unwrap_or_default();
    let failed = checks
        .iter()
        .find(|c| c["name"] == "plugins" && c["status"] == "fail");
    let detail = failed
        .and_then(|c| c["detail"].as_str())
        .unwrap_or_default();
    assert!(
        detail.contains(&format!("{}: $.tools[0].command[1]", bad.display())),
        "{r}"
    );
    // A bad plugin is skipped with a warning at start-up, never fatal.
    let r = run(sb.tackle(&config, &["tools", "list"]));
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stderr.contains("$.tools[0].command[1]"), "{r}");
    assert!(!r.stdout.contains("broken_tool"), "{r}");
}

#[test]
fn tools_call_runs_a_plugin_with_each_value_as_one_literal_argument() {
    let sb = Sandbox::new();
    write_plugin(&sb, "recorder", &recorder());
    std::fs::write(sb.workspace().join("victim.txt"), "precious").expect("victim");
    let config = sb.config("");
    let value = "-rf ~; $(touch pwned) `touch pwned2` {{value}}\nnext";
    let args = json!({ "value": value }).to_string();
    let r = run(sb.tackle(&config, &["tools", "call", "record_args", &args, "--yes"]));
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stdout.contains("recorded 2"), "{r}");
    let ws = sb.workspace();
    assert_eq!(recorded(&ws), ["--", value], "{r}");
    assert!(!ws.join("pwned").exists() && !ws.join("pwned2").exists());
    assert_eq!(
        std::fs::read_to_string(ws.join("victim.txt"))
            .ok()
            .as_deref(),
        Some("precious")
    );
}

#[test]
fn a_plugin_tool_needs_approval_and_cannot_take_a_builtin_name() {
    let sb = Sandbox::new();
    write_plugin(&sb, "recorder", &recorder());
    let mut clash = recorder();
    clash["name"] = json!("clash");
    clash["tools"][0]["name"] = json!("shell");
    write_plugin(&sb, "clash", &clash);
    let config = sb.config("");
    let args = json!({"value": "x"}).to_string();
    let r = run(sb.tackle(&config, &["tools", "call", "record_args", &args]));
    assert_eq!(r.code, 4, "{r}");
    assert!(!sb.workspace().join("rec").exists(), "{r}");

    let r = run(sb.tackle(&config, &["plugins", "check"]));
    assert_eq!(r.code, 0, "{r}");
    assert!(
        r.stdout.contains(
            "tool `shell` of plugin `clash` is refused: its name is taken by a built-in tool"
        ),
        "{r}"
    );
    let r = run(sb.tackle(&config, &["tools", "describe", "shell"]));
    assert!(
        r.stdout.contains("core"),
        "the built-in keeps its name: {r}"
    );
}

const SERVER: &str = "#!/bin/sh\nread -r line\nprintf '%s\\n' \"$line\" > got.json\necho 'log: working'\necho '{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"output\":\"binary says hi\"}}'\n";

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn a_binary_plugin_speaks_json_rpc_and_is_not_started_once_its_digest_changes() {
    let sb = Sandbox::new();
    let manifest = json!({
        "name": "rpc", "version": "0.1.0", "description": "a JSON-RPC plugin",
        "execution": "binary",
        "binary": {"path": "./server", "protocol": "jsonrpc", "sha256": sha256_hex(SERVER.as_bytes())},
        "tools": [{"name": "rpc_hello", "description": "Say hi",
                   "parameters": {"type": "object", "properties": {"who": {"type": "string"}}}}]
    });
    let file = write_plugin(&sb, "rpc", &manifest);
    let server = file.with_file_name("server");
    std::fs::write(&server, SERVER).expect("server");
    std::fs::set_permissions(&server, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let config = sb.config("");
    let args = json!({"who": "$(id)"}).to_string();
    let r = run(sb.tackle(&config, &["tools", "call", "rpc_hello", &args, "--yes"]));
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(r.stdout.trim(), "binary says hi", "{r}");
    let got: Value = serde_json::from_str(
        &std::fs::read_to_string(sb.workspace().join("got.json")).expect("request recorded"),
    )
    .expect("json");
    assert_eq!(got["method"], "execute");
    assert_eq!(
        got["params"],
        json!({"tool": "rpc_hello", "args": {"who": "$(id)"}})
    );

    std::fs::write(&server, format!("{SERVER}# changed\n")).expect("tamper");
    std::fs::remove_file(sb.workspace().join("got.json")).expect("rm");
    let r = run(sb.tackle(&config, &["tools", "call", "rpc_hello", &args, "--yes"]));
    assert_eq!(r.code, 1, "{r}");
    assert!(r.stderr.contains("it was not started"), "{r}");
    assert!(!sb.workspace().join("got.json").exists(), "{r}");
}

/// `tackle mcp serve` over stdio, read on a thread so a silent server fails the test instead
/// of hanging it.
struct Serve {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Serve {
    fn start(sb: &Sandbox, config: &Path) -> Self {
        use std::io::BufRead;
        use std::process::Stdio;
        let mut cmd = sb.tackle(config, &["mcp", "serve"]);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = cmd.spawn().expect("spawn mcp serve");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            stdin,
            lines,
        }
    }

    fn send(&mut self, msg: &Value) {
        use std::io::Write;
        writeln!(self.stdin, "{msg}").expect("write");
        self.stdin.flush().expect("flush");
    }

    /// The response with this id.
    fn reply(&mut self, id: u64) -> Value {
        loop {
            let line = self
                .lines
                .recv_timeout(std::time::Duration::from_secs(30))
                .expect("a reply within 30 s");
            let Ok(v) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if v["id"] == json!(id) {
                return v;
            }
        }
    }

    /// Wait for a message with this `method` (a notification); `None` after 30 s.
    fn notified(&mut self, method: &str) -> Option<Value> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
            let line = self.lines.recv_timeout(left).ok()?;
            if let Ok(v) = serde_json::from_str::<Value>(&line) {
                if v["method"] == method {
                    return Some(v);
                }
            }
        }
        None
    }

    fn tool_names(&mut self, id: u64) -> Vec<String> {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}));
        let v = self.reply(id);
        v["result"]["tools"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|t| t["name"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }
}

#[test]
fn mcp_serve_picks_up_a_plugin_added_while_it_runs() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(plugins_dir(&sb)).expect("plugins dir");
    let config = sb.config("");
    let mut serve = Serve::start(&sb, &config);
    serve.send(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "plugins-test", "version": "0"}}}),
    );
    let init = serve.reply(1);
    assert_eq!(
        init["result"]["capabilities"]["tools"]["listChanged"], true,
        "{init}"
    );
    serve.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let before = serve.tool_names(2);
    assert!(before.iter().any(|n| n == "calculate"), "{before:?}");
    assert!(!before.iter().any(|n| n == "record_args"), "{before:?}");

    write_plugin(&sb, "recorder", &recorder());
    // The client is told, and the next listing has the plugin's tool.
    let note = serve.notified("notifications/tools/list_changed");
    assert!(note.is_some(), "no notifications/tools/list_changed");
    let found = serve.tool_names(3);
    assert!(found.iter().any(|n| n == "record_args"), "{found:?}");
}

#[test]
fn mcp_serve_waits_for_a_plugin_directory_that_does_not_exist_yet() {
    let sb = Sandbox::new();
    let config = sb.config("plugins:\n  dirs: [later/plugins]\n");
    let mut serve = Serve::start(&sb, &config);
    serve.send(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "plugins-test", "version": "0"}}}),
    );
    serve.reply(1);
    serve.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let before = serve.tool_names(2);
    assert!(!before.iter().any(|n| n == "record_args"), "{before:?}");

    // The directory and its parent appear only now, the plugin copied in with them.
    let plugin = sb.workspace().join("later/plugins/recorder");
    std::fs::create_dir_all(&plugin).expect("mkdir");
    let script = plugin.join("record.sh");
    std::fs::write(&script, RECORD).expect("script");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::fs::write(plugin.join("plugin.json"), recorder().to_string()).expect("manifest");
    let note = serve.notified("notifications/tools/list_changed");
    assert!(note.is_some(), "no notifications/tools/list_changed");
    let found = serve.tool_names(3);
    assert!(found.iter().any(|n| n == "record_args"), "{found:?}");
}
