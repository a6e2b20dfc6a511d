//! A configured MCP server that asks `roots/list` is told the directories the agent's tools
//! may read, as canonical `file://` URIs: the workspace (named `workspace`) by default, the
//! fs grant's read roots when the agent sets them, and never anything outside them.
//! A granted directory that appears while servers are connected is announced with
//! `notifications/roots/list_changed` and listed from then on.
//! The server is tests/mcp_client/roots_server.py, on the official Python SDK.

mod common;

use common::{repo_root, run, Sandbox};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The config with the roots server under `mcp_servers`, after `extra`; `None` (with the
/// reason printed) when the Python SDK is not installed.
fn config(sb: &Sandbox, extra: &str) -> Option<PathBuf> {
    let python = repo_root().join(".ci/venv/bin/python");
    if !python.exists() {
        eprintln!("SKIP: the MCP Python SDK is not installed; run .ci/mcp-peers.sh");
        return None;
    }
    let script = repo_root().join("tests/mcp_client/roots_server.py");
    Some(sb.config(&format!(
        "{extra}mcp_servers:\n  roots:\n    command: {}\n    args: [{}]\n",
        python.display(),
        serde_json::to_string(&script.display().to_string()).expect("json")
    )))
}

/// What the server got: `{declared, list_changed, roots: [{uri, name}]}`.
fn roots_seen(sb: &Sandbox, cfg: &Path) -> Value {
    let r = run(sb.tackle(
        cfg,
        &["tools", "call", "roots__roots", "{}", "--yes", "--json"],
    ));
    assert_eq!(r.code, 0, "{r}");
    let out: Value = serde_json::from_str(&r.stdout).expect("json output");
    let content = out["content"].as_str().expect("content");
    serde_json::from_str(content).unwrap_or_else(|_| panic!("tool answer: {content}"))
}

fn uri(path: &Path) -> String {
    let canonical = std::fs::canonicalize(path).expect("canonical path");
    format!("file://{}", canonical.display())
}

fn uris(seen: &Value) -> Vec<String> {
    seen["roots"]
        .as_array()
        .expect("roots array")
        .iter()
        .map(|r| r["uri"].as_str().expect("uri").to_string())
        .collect()
}

#[test]
fn without_an_fs_grant_only_the_workspace_is_listed() {
    let sb = Sandbox::new();
    let Some(cfg) = config(&sb, "") else {
        return;
    };
    let seen = roots_seen(&sb, &cfg);
    assert_eq!(seen["declared"], true, "{seen}");
    assert_eq!(seen["list_changed"], true, "{seen}");
    assert_eq!(
        seen["roots"],
        serde_json::json!([{"uri": uri(&sb.workspace()), "name": "workspace"}]),
        "{seen}"
    );
}

#[test]
fn the_agents_read_roots_are_listed_and_nothing_else() {
    let sb = Sandbox::new();
    let docs = sb.home().join("docs");
    std::fs::create_dir_all(&docs).expect("mkdir docs");
    std::fs::create_dir_all(sb.home().join("secret")).expect("mkdir secret");
    // A link inside the workspace to a directory outside it is not a root of its own.
    std::os::unix::fs::symlink(sb.home().join("secret"), sb.workspace().join("out"))
        .expect("symlink");
    let agents = "agents:\n  - name: reader\n    grants:\n      fs:\n        allow_read: [\".\", \"~/docs\", \"~/missing\"]\n        allow_write: [\"~/secret\"]\n";
    let Some(cfg) = config(&sb, agents) else {
        return;
    };
    let seen = roots_seen(&sb, &cfg);
    assert_eq!(seen["declared"], true, "{seen}");
    assert_eq!(
        seen["roots"],
        serde_json::json!([
            {"uri": uri(&sb.workspace()), "name": "workspace"},
            {"uri": uri(&docs), "name": "docs"},
        ]),
        "{seen}"
    );
}

#[test]
fn a_workspace_the_grant_does_not_let_tools_read_is_not_listed() {
    let sb = Sandbox::new();
    let docs = sb.home().join("docs");
    std::fs::create_dir_all(&docs).expect("mkdir docs");
    let agents =
        "agents:\n  - name: reader\n    grants:\n      fs:\n        allow_read: [\"~/docs\"]\n";
    let Some(cfg) = config(&sb, agents) else {
        return;
    };
    let seen = roots_seen(&sb, &cfg);
    let listed = uris(&seen);
    assert_eq!(listed, vec![uri(&docs)], "{seen}");
    assert!(!listed.contains(&uri(&sb.workspace())), "{seen}");
}

#[test]
fn a_granted_directory_that_appears_is_announced_and_then_listed() {
    let sb = Sandbox::new();
    let later = sb.home().join("later");
    let agents = "agents:\n  - name: reader\n    grants:\n      fs:\n        allow_read: [\".\", \"~/later\"]\n";
    let Some(cfg) = config(&sb, agents) else {
        return;
    };
    let marker = sb.home().join("listening");
    let args = serde_json::json!({"marker": marker.display().to_string()}).to_string();
    let child = sb
        .tackle(
            &cfg,
            &[
                "tools",
                "call",
                "roots__roots_after_change",
                &args,
                "--yes",
                "--json",
            ],
        )
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start tackle");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !marker.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(marker.exists(), "the server's tool never started");
    std::fs::create_dir_all(&later).expect("mkdir later");
    let out = child.wait_with_output().expect("tackle output");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(&stdout).expect("json output");
    let seen: Value =
        serde_json::from_str(v["content"].as_str().expect("content")).expect("tool answer");
    assert_eq!(seen["notified"], true, "{seen}");
    assert_eq!(
        uris(&seen),
        vec![uri(&sb.workspace()), uri(&later)],
        "{seen}"
    );
}
