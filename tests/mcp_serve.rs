//! `tackle mcp serve` end to end: the real binary, a temp config, and the official Python SDK
//! client (`tests/mcp_client/client.py`, from the `.ci/venv` that `.ci/mcp-peers.sh` makes).
//! Skips with a printed reason when the venv is absent.

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
        .arg(env!("CARGO_BIN_EXE_tackle"))
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
        Command::new(env!("CARGO_BIN_EXE_tackle"))
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
