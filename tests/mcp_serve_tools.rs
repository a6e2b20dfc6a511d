//! `mcp.serve_tools` through the real binary and the official Python SDK client: only the
//! selected tools are listed and callable, and MCP clients get full schemas whatever the
//! agent's tool profile. Skips with a printed reason when `.ci/venv` is absent.

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

fn config_with(dir: &Path, extra: &str) -> PathBuf {
    let path = dir.join("config.yaml");
    let text = format!(
        "state_dir: {}\nworkspace: {}\n{extra}",
        dir.join("state").display(),
        dir.display()
    );
    std::fs::write(&path, text).expect("write config");
    path
}

fn serve(python: &Path, steps: Value, config: &Path) -> Value {
    let out = Command::new(python)
        .arg(root().join("tests/mcp_client/client.py"))
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
        "client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("client JSON")
}

#[test]
fn only_the_selected_tools_are_listed_and_others_are_not_found() {
    let Some(python) = venv_python() else {
        eprintln!("SKIPPED: .ci/venv is missing (run .ci/mcp-peers.sh)");
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("secret.txt"), "do not read").expect("write");
    let cfg = config_with(
        dir.path(),
        "mcp:\n  serve_tools: [get_time, \"calc*\", describe_tool]\n",
    );
    let steps = json!([
        ["list"],
        ["call", "calculate", {"expression": "7/2"}],
        ["call", "read_file", {"path": "secret.txt"}],
        ["call", "describe_tool", {"tool": "read_file"}],
        ["call", "describe_tool", {"tool": "calculate"}]
    ]);
    let out = serve(&python, steps, &cfg);
    assert_eq!(
        out[0]["tools"],
        json!(["get_time", "calculate", "describe_tool"]),
        "{out}"
    );
    assert_eq!(out[3]["is_error"], true, "{}", out[3]);
    assert!(
        out[3]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("not_found: ")),
        "{}",
        out[3]
    );
    assert_eq!(out[4]["is_error"], false, "{}", out[4]);
    assert_eq!(out[1]["is_error"], false, "{}", out[1]);
    assert_eq!(out[1]["text"], "3.5");
    assert_eq!(out[2]["is_error"], true, "{}", out[2]);
    let text = out[2]["text"].as_str().unwrap_or_default();
    assert!(text.starts_with("not_found: "), "{text}");
    assert!(!text.contains("do not read"), "{text}");
}

#[test]
fn mcp_clients_get_full_schemas_whatever_the_agents_profile() {
    let Some(python) = venv_python() else {
        eprintln!("SKIPPED: .ci/venv is missing (run .ci/mcp-peers.sh)");
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = config_with(
        dir.path(),
        "tool_profiles:\n  tiny:\n    default: summary\n    tools:\n      get_time: hidden\nagents:\n  - name: a\n    tool_profile: tiny\n",
    );
    let out = serve(&python, json!([["schemas"]]), &cfg);
    let tools = out[0]["tools"].as_array().expect("tools");
    let calc = tools
        .iter()
        .find(|t| t["name"] == "calculate")
        .expect("calculate listed");
    assert!(
        calc["description"].as_str().is_some_and(|d| d.len() > 20),
        "{calc}"
    );
    assert!(
        calc["input_schema"]["properties"]["expression"]["description"].is_string(),
        "{calc}"
    );
    assert!(
        tools.iter().any(|t| t["name"] == "get_time"),
        "a tool hidden from the model is still served over MCP"
    );
}
