//! The tree-wide iteration pool through the real binary: however a tree of agents fans out
//! (parallel `spawn_worker`, `spawn_agent`, `delegate`, nested children, background tasks,
//! `compact` calls), the model server sees at most `max_iterations` requests for the run, and
//! the run says the budget ran out and exits 1 instead of ending quietly.
//!
//! The model is `fakellm` (tests/common); its `/_fakellm/stats` counts every request it got.
//! Every node is scripted to want more work forever: a different `calculate` on each of its
//! turns, so the loop guard never stops it and only the pool can.

mod common;

use common::{run, FakeLlm, Run, Sandbox};
use serde_json::{json, Value};

const POOL: u64 = 8;

/// The agents: a root and its two worker templates (a lead that may start workers, a leaf that
/// only calculates), and a peer. Each prompt carries a marker the rules match on.
const AGENTS: &str = "agents:
  - name: default
    system_prompt: ROLE-ROOT
    max_iterations: 8
    max_concurrent_children: 8
    workers:
      - name: lead
        system_prompt: ROLE-LEAD
        tools: [spawn_worker, calculate]
      - name: leaf
        system_prompt: ROLE-LEAF
        tools: [calculate]
  - name: peer
    system_prompt: ROLE-PEER
";

/// One fakellm rule answering with tool calls (`calls`: a JSON list of `{name, arguments}`).
fn calls_rule(name: &str, when: Value, calls: Value) -> String {
    format!("  - name: {name}\n    when: {when}\n    respond:\n      tool_calls: {calls}\n")
}

fn text_rule(name: &str, when: Value, content: &str) -> String {
    format!(
        "  - name: {name}\n    when: {when}\n    respond: {}\n",
        json!({ "content": content })
    )
}

/// `role`'s first turn answers with `first`; every later turn asks for a different
/// calculation (fakellm counts turns per conversation, keyed by its first user message).
fn node(role: &str, first: Option<Value>) -> String {
    let marker = format!("ROLE-{}", role.to_uppercase());
    let mut rules = String::new();
    if let Some(calls) = first {
        rules += &calls_rule(
            &format!("{role}-first"),
            json!({"messages_contain": marker, "turn": 1}),
            calls,
        );
    }
    for turn in 1..=60 {
        rules += &calls_rule(
            &format!("{role}-{turn}"),
            json!({"messages_contain": marker, "turn": turn}),
            json!([{"name": "calculate", "arguments": {"expression": format!("{turn}+1")}}]),
        );
    }
    rules
}

/// The whole rule list: compaction summaries and the root's closing request first, then the
/// nodes.
fn rules(nodes: &[String]) -> String {
    let mut rules = String::from("rules:\n");
    rules += &text_rule(
        "compaction",
        json!({"messages_contain": "Summarise the conversation above"}),
        "a summary of the work",
    );
    rules += &text_rule(
        "closing",
        json!({"messages_contain": "used every tool iteration"}),
        "ROOT-SUMMARY: the budget ran out",
    );
    for n in nodes {
        rules += n;
    }
    rules
}

fn many(n: usize, call: impl Fn(usize) -> Value) -> Value {
    Value::Array((0..n).map(call).collect())
}

fn spawn_worker(name: &str, task: &str) -> Value {
    json!({"name": "spawn_worker", "arguments": {"name": name, "task": task}})
}

/// Run `tackle run --yes` against fakellm scripted by `rules`; the run and the number of
/// model requests the server got.
fn run_tree(rules: &str, task: &str) -> Option<(Run, u64)> {
    let llm = FakeLlm::start(rules)?;
    let sb = Sandbox::new();
    let config = sb.config(&format!("{}{AGENTS}", llm.backend_yaml("openai", false)));
    let r = run(sb.tackle(&config, &["run", "--yes", "-m", task]));
    let stats: Value = llm
        .get("/_fakellm/stats")
        .and_then(|body| serde_json::from_str(&body).ok())
        .unwrap_or_else(|| panic!("fakellm stats\n{r}"));
    let sent = stats["total_requests"]
        .as_u64()
        .unwrap_or_else(|| panic!("no total_requests in {stats}"));
    Some((r, sent))
}

/// What every exhausted run must show: no request beyond the pool, the whole pool used (every
/// node wanted more), the root's closing summary, and the exhaustion reported with exit 1.
fn assert_exhausted(shape: &str, r: &Run, sent: u64) {
    assert!(
        sent <= POOL,
        "{shape}: {sent} model requests for a pool of {POOL}\n{r}"
    );
    assert_eq!(sent, POOL, "{shape}: the pool is used to the unit\n{r}");
    assert_eq!(r.code, 1, "{shape}: the run fails\n{r}");
    assert!(
        r.stderr.contains("iteration budget exhausted"),
        "{shape}: the run says why\n{r}"
    );
    assert!(
        r.stdout.contains("ROOT-SUMMARY"),
        "{shape}: the root's closing summary is the answer\n{r}"
    );
}

#[test]
fn parallel_workers_each_starting_workers_stay_within_the_pool() {
    let root = node(
        "root",
        Some(many(8, |i| spawn_worker("lead", &format!("lead task {i}")))),
    );
    let lead = node(
        "lead",
        Some(many(3, |i| spawn_worker("leaf", &format!("leaf task {i}")))),
    );
    let Some((r, sent)) = run_tree(&rules(&[root, lead, node("leaf", None)]), "fan out") else {
        return;
    };
    assert_exhausted("8 workers × 3 workers", &r, sent);
}

#[test]
fn parallel_peer_agents_stay_within_the_pool() {
    let root = node(
        "root",
        Some(many(
            6,
            |i| json!({"name": "spawn_agent", "arguments": {"agent": "peer", "task": format!("peer task {i}")}}),
        )),
    );
    let Some((r, sent)) = run_tree(&rules(&[root, node("peer", None)]), "ask peers") else {
        return;
    };
    assert_exhausted("6 peers", &r, sent);
}

#[test]
fn parallel_delegated_roles_stay_within_the_pool() {
    let tasks: Vec<Value> = (0..8)
        .map(|i| json!({"role": "leaf", "task": format!("role task {i}")}))
        .collect();
    let root = node(
        "root",
        Some(
            json!([{"name": "delegate", "arguments": {"action": "aggregate", "parallel": true, "tasks": tasks}}]),
        ),
    );
    let Some((r, sent)) = run_tree(&rules(&[root, node("leaf", None)]), "delegate it") else {
        return;
    };
    assert_exhausted("delegate × 8", &r, sent);
}

#[test]
fn nested_children_stay_within_the_pool() {
    // root › lead › lead › leaf, each starting the next on its first turn.
    let root = node("root", Some(json!([spawn_worker("lead", "level-two")])));
    let deeper = calls_rule(
        "lead-three",
        json!({"messages_contain": "level-three", "turn": 1}),
        json!([spawn_worker("leaf", "level-four")]),
    );
    let lead = node("lead", Some(json!([spawn_worker("lead", "level-three")])));
    let Some((r, sent)) = run_tree(&rules(&[root, deeper, lead, node("leaf", None)]), "go deep")
    else {
        return;
    };
    assert_exhausted("nested 3 deep", &r, sent);
}

#[test]
fn a_child_that_empties_the_pool_leaves_its_parent_only_the_closing_request() {
    let root = node("root", Some(json!([spawn_worker("leaf", "grind")])));
    let Some((r, sent)) = run_tree(&rules(&[root, node("leaf", None)]), "one child") else {
        return;
    };
    assert_exhausted("one child that loops", &r, sent);
    // The root made one tool turn (the spawn); the child every other step.
    assert_eq!(r.stderr.matches("→ spawn_worker").count(), 1, "{r}");
}

#[test]
fn compactions_in_one_turn_are_claimed_from_the_pool() {
    let root = node(
        "root",
        Some(many(10, |_| json!({"name": "compact", "arguments": {}}))),
    );
    let Some((r, sent)) = run_tree(&rules(&[root]), "compact a lot") else {
        return;
    };
    assert_exhausted("10 compactions", &r, sent);
    assert!(
        r.stderr
            .contains("cannot compact: iteration budget exhausted"),
        "the compactions beyond the pool were refused\n{r}"
    );
}

#[test]
fn background_tasks_stay_within_the_pool_of_their_turn() {
    let mut root = calls_rule(
        "root-first",
        json!({"messages_contain": "ROLE-ROOT", "turn": 1}),
        many(
            5,
            |i| json!({"name": "spawn", "arguments": {"task": format!("background job {i}"), "label": format!("bg{i}")}}),
        ),
    );
    root += &text_rule(
        "root-answer",
        json!({"messages_contain": "ROLE-ROOT"}),
        "ROOT-ANSWER: started them",
    );
    // A background task runs with the root's prompt and the task as its first message.
    let mut tasks = String::new();
    for turn in 1..=60 {
        tasks += &calls_rule(
            &format!("bg-{turn}"),
            json!({"messages_contain": "background job", "turn": turn}),
            json!([{"name": "calculate", "arguments": {"expression": format!("{turn}+2")}}]),
        );
    }
    // Task rules first: a task's requests carry the root's prompt too.
    let Some((r, sent)) = run_tree(&rules(&[tasks, root]), "start jobs") else {
        return;
    };
    assert!(
        sent <= POOL,
        "{sent} model requests for a pool of {POOL}\n{r}"
    );
    assert!(
        r.stderr.contains("iteration budget exhausted"),
        "the tasks that ran dry say why\n{r}"
    );
}
