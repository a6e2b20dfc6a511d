//! Under `tackle mcp serve`, a configured server's form (`elicitation/create`) goes to the MCP
//! client whose call made it ask, named as coming from that server; a client that cannot be
//! asked gets nothing, and the form is declined, never answered on its behalf. The client is
//! the official Python SDK (tests/mcp_client/client.py); the server behind Tackle is
//! tests/mcp_client/elicit_server.py.

mod common;

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A config serving Tackle with the elicit server behind it; its tools auto-approved when
/// `auto` (so a client without elicitation can still call them).
fn config(dir: &Path, python: &Path, auto: bool) -> PathBuf {
    let script = root().join("tests/mcp_client/elicit_server.py");
    let auto = if auto {
        "security:\n  auto_approved_tools: [elicit__profile]\n"
    } else {
        ""
    };
    let text = format!(
        "state_dir: {}\nworkspace: {}\n{auto}mcp_servers:\n  elicit:\n    command: {}\n    args: [{}]\n",
        dir.join("state").display(),
        dir.display(),
        python.display(),
        serde_json::to_string(&script.display().to_string()).unwrap()
    );
    let path = dir.join("config.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

fn client(python: &Path, options: &[&str], steps: Value, config: &Path) -> Value {
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
        .expect("run the client");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("client output")
}

fn answer(step: &Value) -> Value {
    let text = step["text"].as_str().unwrap_or_else(|| panic!("{step}"));
    serde_json::from_str(text).unwrap_or_else(|_| panic!("tool answer: {text}"))
}

fn python() -> Option<PathBuf> {
    let p = root().join(".ci/venv/bin/python");
    if !p.exists() {
        eprintln!("SKIPPED: .ci/venv is missing (run .ci/mcp-peers.sh)");
        return None;
    }
    Some(p)
}

#[test]
fn the_servers_form_goes_to_the_calling_client_named_as_that_server() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), &python, false);
    let form = r#"{"name": "Ada", "colour": "red", "count": 3}"#;
    let steps = json!([["call", "elicit__profile", {}], ["forms"]]);
    let out = client(&python, &["--elicit", "once", "--form", form], steps, &cfg);
    assert_eq!(out[0]["is_error"], false, "{out}");
    let got = answer(&out[0]);
    assert_eq!(got["action"], "accept", "{out}");
    assert_eq!(
        got["data"],
        json!({"name": "Ada", "colour": "red", "count": 3}),
        "{out}"
    );
    let messages: Vec<&str> = out[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    // First Tackle's own approval of the MCP tool, then the server's form, said to be its.
    assert_eq!(messages.len(), 2, "{out}");
    assert!(
        messages[1]
            .starts_with("MCP server `elicit` (used by Tackle) asks: Tell me about yourself"),
        "{out}"
    );
}

#[test]
fn a_declined_form_is_declined_at_the_server() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), &python, false);
    let steps = json!([["call", "elicit__profile", {}]]);
    let out = client(
        &python,
        &["--elicit", "once", "--form", "decline"],
        steps,
        &cfg,
    );
    let got = answer(&out[0]);
    assert_eq!(got["action"], "decline", "{out}");
    assert_eq!(got["data"], Value::Null, "{out}");
}

#[test]
fn a_client_that_cannot_be_asked_gets_nothing_and_the_form_is_declined() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), &python, true);
    let steps = json!([["call", "elicit__profile", {}]]);
    let out = client(&python, &[], steps, &cfg);
    assert_eq!(out[0]["is_error"], false, "{out}");
    let got = answer(&out[0]);
    assert_eq!(got["action"], "decline", "{out}");
    assert_eq!(got["data"], Value::Null, "{out}");
}
