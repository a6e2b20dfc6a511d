//! A child agent's tool calls are shown at the root, under the call that started it: in the
//! text rendering (indented beneath the `spawn_worker` line, before its `✓`) and in `--json`
//! (`child` events carrying the child's own call events).

mod common;

use common::{run, FakeLlm, Run, Sandbox};
use serde_json::Value;

const AGENTS: &str = "agents:
  - name: default
    system_prompt: ROLE-ROOT
    workers:
      - name: leaf
        system_prompt: ROLE-LEAF
        tools: [calculate]
";

const RULES: &str = concat!(
    "rules:\n",
    "  - name: leaf-1\n    when: {messages_contain: ROLE-LEAF, turn: 1}\n    respond:\n      tool_calls:\n        - {name: calculate, arguments: {expression: \"6*7\"}}\n",
    "  - name: leaf-2\n    when: {messages_contain: ROLE-LEAF, turn: 2}\n    respond: {content: \"leaf says 42\"}\n",
    "  - name: root-1\n    when: {messages_contain: ROLE-ROOT, turn: 1}\n    respond:\n      tool_calls:\n        - {name: spawn_worker, arguments: {name: leaf, task: \"compute it\"}}\n",
    "  - name: root-2\n    when: {messages_contain: ROLE-ROOT, turn: 2}\n    respond: {content: \"root done\"}\n",
);

fn tree_run(json: bool) -> Option<Run> {
    let llm = FakeLlm::start(RULES)?;
    let sb = Sandbox::new();
    let config = sb.config(&format!("{}{AGENTS}", llm.backend_yaml("openai", false)));
    let mut args = vec!["run", "--yes", "go"];
    if json {
        args.push("--json");
    }
    Some(run(sb.tackle(&config, &args)))
}

fn position(haystack: &str, needle: &str) -> usize {
    haystack
        .find(needle)
        .unwrap_or_else(|| panic!("no {needle:?} in:\n{haystack}"))
}

#[test]
fn a_workers_calls_are_indented_under_the_spawn_line() {
    let Some(r) = tree_run(false) else {
        return;
    };
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stdout.contains("root done"), "{r}");
    let spawn = position(&r.stderr, "→ spawn_worker");
    let child = position(&r.stderr, "    → calculate  6*7");
    let child_done = position(&r.stderr, "      ✓ calculate");
    let spawn_done = position(&r.stderr, "  ✓ spawn_worker");
    assert!(
        spawn < child && child < child_done && child_done < spawn_done,
        "the worker's call sits between the spawn's lines:\n{}",
        r.stderr
    );
    let line = r
        .stderr
        .lines()
        .find(|l| l.contains("→ calculate"))
        .unwrap_or_default();
    assert!(line.contains("leaf"), "names the worker: {line}");
}

#[test]
fn json_carries_the_workers_calls_as_child_events() {
    let Some(r) = tree_run(true) else {
        return;
    };
    assert_eq!(r.code, 0, "{r}");
    let events: Vec<Value> = r
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let child_start = events
        .iter()
        .position(|e| {
            e["event"] == "child"
                && e["depth"] == 1
                && e["call"]["event"] == "tool_call_started"
                && e["call"]["name"] == "calculate"
        })
        .unwrap_or_else(|| panic!("no child call event:\n{}", r.stdout));
    let child_end = events
        .iter()
        .position(|e| e["event"] == "child" && e["call"]["event"] == "tool_call_finished")
        .unwrap_or_else(|| panic!("{}", r.stdout));
    let spawn_end = events
        .iter()
        .position(|e| e["event"] == "tool_call_finished" && e["name"] == "spawn_worker")
        .unwrap_or_else(|| panic!("{}", r.stdout));
    assert!(
        child_start < child_end && child_end < spawn_end,
        "{}",
        r.stdout
    );
    assert!(
        events[child_start]["agent"]
            .as_str()
            .is_some_and(|a| a.contains("leaf")),
        "{}",
        r.stdout
    );
}
