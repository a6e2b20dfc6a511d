//! Signed session entries through the real binary (docs/decisions/0036-signed-session-entries.md):
//! a turn's entries verify under the agent's key; one entry edited in the database file is
//! named and verify fails; after `sessions rotate-key` the next turn is signed by the new key
//! and the session verifies under both; a worker's session is signed with its parent agent's
//! key. The model is a small scripted OpenAI-compatible server on 127.0.0.1.

mod common;
#[path = "common/scripted.rs"]
mod scripted;

use common::{run, Run, Sandbox};
use serde_json::{json, Value};

fn last_message(req: &Value) -> Value {
    req["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .unwrap_or(Value::Null)
}

/// The root asks for a worker when told `go-worker`; the worker answers its task; a tool
/// result gets the root's final answer; anything else is noted.
fn script(req: &Value) -> Value {
    let last = last_message(req);
    let text = last["content"].as_str().unwrap_or_default();
    if last["role"] == "tool" {
        return json!({"role": "assistant", "content": "root done"});
    }
    if text.contains("child task") {
        return json!({"role": "assistant", "content": "child done"});
    }
    if text.contains("go-worker") {
        return json!({"role": "assistant", "content": null, "tool_calls": [{
            "id": "w1", "type": "function",
            "function": {"name": "spawn_worker",
                         "arguments": "{\"name\": \"helper\", \"task\": \"child task\"}"}
        }]});
    }
    json!({"role": "assistant", "content": "noted"})
}

fn config(sb: &Sandbox, port: u16) -> std::path::PathBuf {
    sb.config(&format!(
        "backends:\n  - name: fake\n    type: openai\n    api_base: http://127.0.0.1:{port}/v1\n    api_key: test-key-not-secret\n    stream: false\n    models:\n      - name: fake-model\n\
agents:\n  - name: default\n    workers:\n      - name: helper\n        system_prompt: You help.\n"
    ))
}

fn verify_json(sb: &Sandbox, cfg: &std::path::Path, id: &str) -> (Run, Value) {
    let r = run(sb.tackle(cfg, &["sessions", "verify", id, "--json"]));
    let v = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {r}"));
    (r, v)
}

#[test]
fn entries_verify_a_tampered_one_is_named_and_a_rotated_key_keeps_verifying() {
    let (port, _requests) = scripted::model(script);
    let sb = Sandbox::new();
    let cfg = config(&sb, port);
    let first = run(sb.tackle(&cfg, &["run", "--session", "signed", "hello there"]));
    assert_eq!(first.code, 0, "{first}");

    let ok = run(sb.tackle(&cfg, &["sessions", "verify", "signed"]));
    assert_eq!(ok.code, 0, "{ok}");
    assert!(ok.stdout.contains("session signed verifies"), "{ok}");
    let (_, v) = verify_json(&sb, &cfg, "signed");
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["anchor"], "key_file", "{v}");
    let entries = v["entries"].as_u64().unwrap_or(0);
    assert!(entries >= 2, "{v}");
    assert_eq!(v["signed"].as_u64(), Some(entries), "{v}");
    let first_key = v["keys"][0].as_str().unwrap_or_default().to_string();

    // The key is the agent's own file, readable by this user only.
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.permissions().mode() & 0o777);
    let key = sb.state().join("keys/default.ed25519");
    assert_eq!(mode(&key).ok(), Some(0o600), "{}", key.display());
    assert_eq!(mode(&sb.state().join("keys")).ok(), Some(0o700));

    let rotated = run(sb.tackle(&cfg, &["sessions", "rotate-key", "default", "--json"]));
    assert_eq!(rotated.code, 0, "{rotated}");
    let r: Value =
        serde_json::from_str(&rotated.stdout).unwrap_or_else(|e| panic!("{e}: {rotated}"));
    assert_eq!(r["old_key"], first_key.as_str(), "{r}");
    let new_key = r["new_key"].as_str().unwrap_or_default().to_string();
    assert_ne!(new_key, first_key);

    let second = run(sb.tackle(&cfg, &["run", "--session", "signed", "and again"]));
    assert_eq!(second.code, 0, "{second}");
    let (r, v) = verify_json(&sb, &cfg, "signed");
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(v["keys"], json!([new_key, first_key]), "{v}");
    assert!(v["entries"].as_u64() > Some(entries), "{v}");
    assert_eq!(v["signed"], v["entries"], "{v}");

    // One entry's payload changed in the database file, as sqlite3 would.
    let db = rusqlite::Connection::open(sb.state().join("tackle.db")).expect("open the database");
    let changed = db
        .execute(
            "UPDATE entries SET content = '{\"role\":\"user\",\"content\":\"something else\"}'
              WHERE session_id = 'signed' AND seq = 1",
            [],
        )
        .expect("edit an entry");
    assert_eq!(changed, 1);
    drop(db);
    let bad = run(sb.tackle(&cfg, &["sessions", "verify", "signed"]));
    assert_eq!(bad.code, 1, "{bad}");
    assert!(
        bad.stderr
            .contains("entry 1: its signature does not match its content"),
        "{bad}"
    );
    let (r, v) = verify_json(&sb, &cfg, "signed");
    assert_eq!(r.code, 1, "{r}");
    assert_eq!(v["ok"], false);
    assert_eq!(v["failures"].as_array().map(Vec::len), Some(1), "{v}");
    assert_eq!(v["failures"][0]["entry"], 1, "{v}");
    assert_eq!(v["failures"][0]["detail"]["kind"], "altered", "{v}");
}

#[test]
fn a_workers_entries_are_signed_with_its_parent_agents_key() {
    let (port, _requests) = scripted::model(script);
    let sb = Sandbox::new();
    let cfg = config(&sb, port);
    let r = run(sb.tackle(&cfg, &["run", "--yes", "--session", "root", "go-worker"]));
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stdout.contains("root done"), "{r}");
    let list = run(sb.tackle(&cfg, &["sessions", "list", "--json"]));
    let sessions: Value =
        serde_json::from_str(&list.stdout).unwrap_or_else(|e| panic!("{e}: {list}"));
    let child = sessions
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["id"].as_str())
        .find(|id| *id != "root")
        .unwrap_or_else(|| panic!("no worker session: {sessions}"))
        .to_string();
    let (r, parent) = verify_json(&sb, &cfg, "root");
    assert_eq!(r.code, 0, "{r}");
    let (r, worker) = verify_json(&sb, &cfg, &child);
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(worker["agent"], "default", "{worker}");
    assert!(worker["signed"].as_u64() >= Some(2), "{worker}");
    assert_eq!(worker["keys"], parent["keys"], "{worker}\n{parent}");
    // No key of the worker's own was made.
    let files: Vec<_> = std::fs::read_dir(sb.state().join("keys"))
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert_eq!(files, vec![std::ffi::OsString::from("default.ed25519")]);
}

#[test]
fn unknown_sessions_and_agents_are_not_found() {
    let (port, _requests) = scripted::model(script);
    let sb = Sandbox::new();
    let cfg = config(&sb, port);
    let r = run(sb.tackle(&cfg, &["sessions", "verify", "nope"]));
    assert_eq!(r.code, 6, "{r}");
    let r = run(sb.tackle(&cfg, &["sessions", "rotate-key", "nobody"]));
    assert_eq!(r.code, 6, "{r}");
    assert!(!sb.state().join("keys/nobody.ed25519").exists());
}
