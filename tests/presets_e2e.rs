//! Presets through the real binary: a worker's preset (named by its template or by the
//! `preset` argument of `spawn_worker`) sends the child's requests to the preset's backend and
//! model, shows it tools through the preset's profile and appends the preset's prompt; an
//! unknown preset is refused with the configured ones listed and starts nothing. Two fakellm
//! servers stand for two backends; each one's stats say which requests reached it.

mod common;

use common::{run, FakeLlm, Run, Sandbox};
use serde_json::Value;

/// Backend `fake`: the root agent, and any child that stays on the root's backend.
const ROOT_RULES: &str = concat!(
    "rules:\n",
    "  - name: child-on-a-with-calculate\n    when: {messages_contain: ROLE-CHILD, tools_include: calculate}\n    respond: {content: \"child on A saw calculate\"}\n",
    "  - name: child-on-a\n    when: {messages_contain: ROLE-CHILD}\n    respond: {content: \"child on A\"}\n",
    "  - name: root-saw-the-list\n    when: {tool_result_contains: \"available: `cheap`\"}\n    respond: {content: \"REFUSAL LISTED THE PRESETS\"}\n",
    "  - name: root-template\n    when: {messages_contain: go-template, turn: 1}\n    respond:\n      tool_calls:\n        - {name: spawn_worker, arguments: {name: helper, task: \"child task\"}}\n",
    "  - name: root-argument\n    when: {messages_contain: go-argument, turn: 1}\n    respond:\n      tool_calls:\n        - {name: spawn_worker, arguments: {name: plain, task: \"child task\", preset: cheap}}\n",
    "  - name: root-plain\n    when: {messages_contain: go-plain, turn: 1}\n    respond:\n      tool_calls:\n        - {name: spawn_worker, arguments: {name: plain, task: \"child task\"}}\n",
    "  - name: root-direct\n    when: {messages_contain: go-direct, turn: 1}\n    respond:\n      tool_calls:\n        - {name: spawn_worker, arguments: {name: direct, task: \"child task\"}}\n",
    "  - name: root-unknown\n    when: {messages_contain: go-unknown, turn: 1}\n    respond:\n      tool_calls:\n        - {name: spawn_worker, arguments: {name: plain, task: \"child task\", preset: nosuch}}\n",
    "  - name: root-done\n    when: {turn: 2}\n    respond: {content: \"root done\"}\n",
);

/// Backend `other`: only a child sent here by the preset. `calculate` among the tools it is
/// sent would mean the preset's profile did not apply.
const OTHER_RULES: &str = concat!(
    "rules:\n",
    "  - name: child-saw-calculate\n    when: {tools_include: calculate}\n    respond: {content: \"CALCULATE WAS SENT\"}\n",
    "  - name: child-on-b\n    when: {model_matches: small-model, messages_contain: PRESET-ADDITION}\n    respond: {content: \"child on B\"}\n",
    "  - name: child-on-b-unshaped\n    when: {messages_contain: ROLE-CHILD}\n    respond: {content: \"child on B without the preset's prompt or model\"}\n",
);

fn config(sb: &Sandbox, a: &FakeLlm, b: &FakeLlm) -> std::path::PathBuf {
    sb.config(&format!(
        "{}  - name: other\n    type: openai\n    api_base: http://127.0.0.1:{}/v1\n    api_key: test-key-not-secret\n    stream: false\n    models:\n      - name: other-default\n      - name: small-model\n\
tool_profiles:\n  no-calc:\n    tools:\n      calculate: hidden\n\
presets:\n  cheap:\n    backend: other\n    model: small-model\n    tool_profile: no-calc\n    system_prompt: PRESET-ADDITION\n\
agents:\n  - name: default\n    system_prompt: ROLE-ROOT\n    workers:\n      - name: helper\n        system_prompt: ROLE-CHILD\n        tools: [calculate]\n        preset: cheap\n      - name: plain\n        system_prompt: ROLE-CHILD\n        tools: [calculate]\n      - name: direct\n        system_prompt: ROLE-CHILD\n        tools: [calculate]\n        backend: other\n  - name: solo\n    system_prompt: ROLE-CHILD\n    preset: cheap\n",
        a.backend_yaml("openai", false),
        b.port
    ))
}

fn stats(llm: &FakeLlm) -> Value {
    llm.get("/_fakellm/stats")
        .and_then(|body| serde_json::from_str(&body).ok())
        .unwrap_or_else(|| panic!("fakellm stats"))
}

fn count(stats: &Value, rule: &str) -> u64 {
    stats["by_rule"][rule].as_u64().unwrap_or(0)
}

fn models(stats: &Value) -> Vec<String> {
    stats["recent"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["model"].as_str().map(str::to_string))
        .collect()
}

/// `tackle run --yes -m PROMPT` with both backends; the run and each server's stats.
fn tree_run(prompt: &str) -> Option<(Run, Value, Value)> {
    run_with(&["run", "--yes", "-m", prompt])
}

fn run_with(args: &[&str]) -> Option<(Run, Value, Value)> {
    let a = FakeLlm::start(ROOT_RULES)?;
    let b = FakeLlm::start(OTHER_RULES)?;
    let sb = Sandbox::new();
    let cfg = config(&sb, &a, &b);
    let r = run(sb.tackle(&cfg, args));
    Some((r, stats(&a), stats(&b)))
}

/// The child's one request went to backend `other` as `small-model`, with the preset's prompt
/// and without `calculate`; backend `fake` saw only the root.
fn assert_child_on_the_presets_backend(r: &Run, a: &Value, b: &Value) {
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stdout.contains("root done"), "{r}");
    assert_eq!(count(b, "child-on-b"), 1, "{b}\n{r}");
    assert_eq!(
        count(b, "child-saw-calculate"),
        0,
        "hidden tool was sent\n{b}"
    );
    assert_eq!(count(b, "child-on-b-unshaped"), 0, "{b}");
    assert_eq!(models(b), vec!["small-model".to_string()], "{b}");
    assert_eq!(
        count(a, "child-on-a") + count(a, "child-on-a-with-calculate"),
        0
    );
    assert!(models(a).iter().all(|m| m == "fake-model"), "{a}");
}

#[test]
fn a_templates_preset_chooses_the_workers_backend_model_profile_and_prompt() {
    let Some((r, a, b)) = tree_run("go-template") else {
        return;
    };
    assert_child_on_the_presets_backend(&r, &a, &b);
}

#[test]
fn the_preset_argument_of_spawn_worker_shapes_the_child_the_same_way() {
    let Some((r, a, b)) = tree_run("go-argument") else {
        return;
    };
    assert_child_on_the_presets_backend(&r, &a, &b);
}

#[test]
fn without_a_preset_the_worker_stays_on_its_parents_backend_and_sees_its_tools() {
    // The control for the two tests above: the same template without a preset.
    let Some((r, a, b)) = tree_run("go-plain") else {
        return;
    };
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(count(&a, "child-on-a-with-calculate"), 1, "{a}\n{r}");
    assert_eq!(b["total_requests"].as_u64(), Some(0), "{b}");
}

#[test]
fn a_templates_own_backend_is_honoured_with_that_backends_first_model() {
    let Some((r, a, b)) = tree_run("go-direct") else {
        return;
    };
    assert_eq!(r.code, 0, "{r}");
    // No profile on this template: `calculate` is sent, to backend `other`.
    assert_eq!(count(&b, "child-saw-calculate"), 1, "{b}\n{r}");
    assert_eq!(models(&b), vec!["other-default".to_string()], "{b}");
    assert_eq!(
        count(&a, "child-on-a") + count(&a, "child-on-a-with-calculate"),
        0
    );
}

#[test]
fn an_agents_preset_chooses_its_backend_model_profile_and_prompt_addition() {
    let Some((r, a, b)) = run_with(&["run", "--agent", "solo", "-m", "hello"]) else {
        return;
    };
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stdout.contains("child on B"), "{r}");
    assert_eq!(count(&b, "child-on-b"), 1, "{b}");
    assert_eq!(models(&b), vec!["small-model".to_string()], "{b}");
    assert_eq!(a["total_requests"].as_u64(), Some(0), "{a}");
}

#[test]
fn an_unknown_preset_is_refused_with_the_configured_ones_and_starts_nothing() {
    let Some((r, a, b)) = tree_run("go-unknown") else {
        return;
    };
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stdout.contains("REFUSAL LISTED THE PRESETS"), "{r}");
    assert!(r.stderr.contains("unknown preset `nosuch`"), "{r}");
    assert_eq!(
        count(&a, "child-on-a") + count(&a, "child-on-a-with-calculate"),
        0
    );
    assert_eq!(b["total_requests"].as_u64(), Some(0), "{b}");
}
