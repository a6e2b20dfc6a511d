//! `spawn_agent` and `spawn_worker` with `async: true` through the real binary: the call
//! returns at once with where the child runs, and the child's answer is posted back into the
//! parent's session as `[Background task '…' completed]`, which `tackle run` waits for. The
//! model is a small scripted OpenAI-compatible server on 127.0.0.1 that keeps every request.

mod common;
#[path = "common/scripted.rs"]
mod scripted;

use common::{run, Sandbox};
use scripted::model;
use serde_json::{json, Value};

fn first_user(req: &Value) -> String {
    req["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

fn has_tool_result(req: &Value) -> bool {
    req["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|m| m["role"] == "tool")
}

fn text(t: &str) -> Value {
    json!({"role": "assistant", "content": t})
}

fn call(name: &str, args: Value) -> Value {
    json!({"role": "assistant", "content": null, "tool_calls": [{
        "id": "c1", "type": "function",
        "function": {"name": name, "arguments": args.to_string()}
    }]})
}

/// The children answer their task; the root starts one child asynchronously, then answers.
fn script(req: &Value) -> Value {
    let first = first_user(req);
    if first.contains("agent job") {
        return text("agent answer 42");
    }
    if first.contains("worker job") {
        return text("worker answer 77");
    }
    if has_tool_result(req) {
        return text("started it");
    }
    if first.contains("go agent") {
        return call(
            "spawn_agent",
            json!({"agent": "helper", "task": "agent job", "async": true}),
        );
    }
    call(
        "spawn_worker",
        json!({"name": "researcher", "task": "worker job", "async": true}),
    )
}

fn config(sb: &Sandbox, port: u16) -> std::path::PathBuf {
    sb.config(&format!(
        "backends:\n  - name: fake\n    type: openai\n    api_base: http://127.0.0.1:{port}/v1\n    api_key: test-key-not-secret\n    stream: false\n    models:\n      - name: fake-model\nagents:\n  - name: default\n    workers:\n      - name: researcher\n        tools: [calculate]\n  - name: helper\n"
    ))
}

fn session_id(stderr: &str) -> String {
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("session: "))
        .and_then(|rest| rest.split_whitespace().next())
        .map(str::to_string)
        .unwrap_or_else(|| panic!("no session id printed\n{stderr}"))
}

/// Runs `task`, and returns what the root's session holds and the requests the model saw.
fn run_async(task: &str) -> (String, Vec<Value>) {
    let (port, requests) = model(script);
    let sb = Sandbox::new();
    let cfg = config(&sb, port);
    let r = run(sb.tackle(&cfg, &["run", "--yes", task]));
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stdout.contains("started it"), "{r}");
    let id = session_id(&r.stderr);
    let shown = run(sb.tackle(&cfg, &["sessions", "show", &id, "--json"]));
    assert_eq!(shown.code, 0, "{shown}");
    let requests = requests.lock().expect("requests").clone();
    (shown.stdout, requests)
}

/// The call returned before the child answered, and the answer was posted back afterwards.
fn check(stored: &str, requests: &[Value], answer: &str) {
    assert!(
        stored.contains("Started background task"),
        "the call returned at once: {stored}"
    );
    assert!(
        stored.contains("' completed]") && stored.contains(answer),
        "the answer was posted into the session: {stored}"
    );
    // The root's own turn ended on the tool's immediate result, not on the child's answer.
    let root_answered = requests
        .iter()
        .find(|r| has_tool_result(r) && !first_user(r).contains(" job"))
        .map(Value::to_string)
        .unwrap_or_else(|| panic!("the root never saw the tool result: {requests:#?}"));
    assert!(
        root_answered.contains("Started background task"),
        "{root_answered}"
    );
}

#[test]
fn spawn_agent_with_async_posts_its_answer_back_into_the_session() {
    let (stored, requests) = run_async("go agent");
    check(&stored, &requests, "agent answer 42");
}

#[test]
fn spawn_worker_with_async_posts_its_answer_back_into_the_session() {
    let (stored, requests) = run_async("go worker");
    check(&stored, &requests, "worker answer 77");
}
