//! Compaction through the real binary: the `compact` tool (asked for by the model mid-turn) and
//! the chat's `/compact` summarise the conversation through the model, and what the model is
//! sent next starts from that summary: the summary is there, the words it replaced are not.
//! The model is a small scripted OpenAI-compatible server on 127.0.0.1 that keeps every request
//! it was sent, so the test reads exactly what the model saw.

mod common;
#[path = "common/scripted.rs"]
mod scripted;

use common::{run, Sandbox};
use scripted::model;
use serde_json::{json, Value};
use std::io::Write;
use std::process::Stdio;

/// Only in the conversation before compaction.
const ORIGINAL: &str = "ORIG-9b1";
/// Only in the summary the model writes.
const SUMMARY: &str = "SUMMARY-7f3";
/// The end of the summary request the agent sends (crates/tackle-agent/src/compaction.rs).
const SUMMARY_ASK: &str = "Reply with the summary only";

fn last_user(req: &Value) -> String {
    req["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

fn text(t: &str) -> Value {
    json!({"role": "assistant", "content": t})
}

/// Summarises when asked; calls `compact` when the user says so; otherwise answers.
fn script(req: &Value) -> Value {
    let user = last_user(req);
    if user.contains(SUMMARY_ASK) {
        return text(&format!("{SUMMARY}: the user gave a codeword to keep."));
    }
    if user.contains("please compact now") {
        return json!({"role": "assistant", "content": null, "tool_calls": [{
            "id": "c1", "type": "function",
            "function": {"name": "compact", "arguments": "{}"}
        }]});
    }
    text("noted")
}

fn config(sb: &Sandbox, port: u16) -> std::path::PathBuf {
    sb.config(&format!(
        "backends:\n  - name: fake\n    type: openai\n    api_base: http://127.0.0.1:{port}/v1\n    api_key: test-key-not-secret\n    stream: false\n    models:\n      - name: fake-model\n"
    ))
}

/// The requests after the summary request: the summary in each, the original in none.
fn after_summary_all_start_from_it(requests: &[Value]) -> usize {
    let bodies: Vec<String> = requests.iter().map(Value::to_string).collect();
    let at = bodies
        .iter()
        .position(|b| b.contains(SUMMARY_ASK))
        .unwrap_or_else(|| panic!("no summary was asked for: {bodies:#?}"));
    assert!(
        bodies[at].contains(ORIGINAL),
        "the summary is made from the conversation: {}",
        bodies[at]
    );
    let after = &bodies[at + 1..];
    for b in after {
        assert!(
            b.contains(SUMMARY),
            "the summary is not in what was sent: {b}"
        );
        assert!(
            !b.contains(ORIGINAL),
            "a compacted message was sent again: {b}"
        );
    }
    after.len()
}

#[test]
fn the_compact_tool_summarises_and_the_next_turn_starts_from_the_summary() {
    let (port, requests) = model(script);
    let sb = Sandbox::new();
    let cfg = config(&sb, port);
    let first = run(sb.tackle(
        &cfg,
        &[
            "run",
            "--yes",
            "--session",
            "compacted",
            &format!("The codeword is {ORIGINAL}. please compact now"),
        ],
    ));
    assert_eq!(first.code, 0, "{first}");
    let next = run(sb.tackle(
        &cfg,
        &["run", "--session", "compacted", "what was the codeword?"],
    ));
    assert_eq!(next.code, 0, "{next}");
    let requests = requests.lock().expect("requests").clone();
    // The rest of the first turn and the whole of the next one.
    let after = after_summary_all_start_from_it(&requests);
    assert!(after >= 2, "{requests:#?}");
    let last = requests.last().map(Value::to_string).unwrap_or_default();
    assert!(last.contains("what was the codeword?"), "{last}");
}

#[test]
fn slash_compact_in_chat_summarises_and_the_next_turn_starts_from_the_summary() {
    let (port, requests) = model(script);
    let sb = Sandbox::new();
    let cfg = config(&sb, port);
    let mut cmd = sb.tackle(&cfg, &["chat"]);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn tackle chat");
    if let Some(mut stdin) = child.stdin.take() {
        let lines =
            format!("The codeword is {ORIGINAL}.\n/compact\nwhat was the codeword?\n/quit\n");
        let _ = stdin.write_all(lines.as_bytes());
    }
    let out = child.wait_with_output().expect("chat ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!("compacted. summary:\n{SUMMARY}")),
        "{stderr}"
    );
    let requests = requests.lock().expect("requests").clone();
    assert_eq!(
        after_summary_all_start_from_it(&requests),
        1,
        "{requests:#?}"
    );
    let last = requests.last().map(Value::to_string).unwrap_or_default();
    assert!(last.contains("what was the codeword?"), "{last}");
}
