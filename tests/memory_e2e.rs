//! Memory end to end: the real binary against fakellm, memories in a real SQLite file that
//! outlives each process.

mod common;

use common::{run, FakeLlm, Run, Sandbox};
use serde_json::Value;

fn tackle_run(sb: &Sandbox, llm: &FakeLlm, extra_yaml: &str, prompt: &str) -> Run {
    let config = sb.config(&format!("{}{extra_yaml}", llm.backend_yaml("openai", true)));
    run(sb.tackle(&config, &["run", "-m", prompt]))
}

fn tackle(sb: &Sandbox, llm: &FakeLlm, extra_yaml: &str, args: &[&str]) -> Run {
    let config = sb.config(&format!("{}{extra_yaml}", llm.backend_yaml("openai", true)));
    run(sb.tackle(&config, args))
}

const AGENTS: &str = "agents:\n  - name: default\n    backend: fake\n    model: fake-model\n  - name: skim\n    backend: fake\n    model: fake-model\nmemory_banks:\n  project-alpha:\n    read: [skim]\n    write: [default]\n";

#[test]
fn a_value_remembered_in_one_run_is_recalled_in_a_later_one() {
    let Some(llm) = FakeLlm::start(concat!(
        "rules:\n",
        "  - name: saved\n    when: {tool_result_contains: \"Remembered in self\"}\n    respond: {content: \"Saved it.\"}\n",
        "  - name: recalled\n    when: {tool_result_contains: \"**user_timezone**: America/New_York\"}\n    respond: {content: \"Your timezone is America/New_York.\"}\n",
        "  - name: forgot\n    when: {tool_result_contains: \"No memories match\"}\n    respond: {content: \"I do not know.\"}\n",
        "  - name: remember\n    when: {messages_contain: \"remember my timezone\"}\n    respond:\n      tool_calls:\n        - {name: remember, arguments: {key: user_timezone, value: America/New_York, tags: [prefs]}}\n",
        "  - name: recall\n    when: {messages_contain: \"what is my timezone\"}\n    respond:\n      tool_calls:\n        - {name: recall, arguments: {query: timezone}}\n",
    )) else {
        return;
    };
    let sb = Sandbox::new();
    let r = tackle_run(&sb, &llm, AGENTS, "please remember my timezone");
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stdout.contains("Saved it."), "{r}");
    assert!(r.stderr.contains("✓ remember"), "{r}");

    let r = tackle_run(&sb, &llm, AGENTS, "what is my timezone?");
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stderr.contains("✓ recall"), "{r}");
    assert!(
        r.stdout.contains("Your timezone is America/New_York."),
        "{r}"
    );

    // Another agent's own memory does not hold it.
    let r = tackle(
        &sb,
        &llm,
        AGENTS,
        &["memory", "list", "--agent", "skim", "--json"],
    );
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(
        serde_json::from_str::<Value>(&r.stdout).unwrap(),
        Value::Array(vec![])
    );
    // The CLI sees what the tool stored.
    let r = tackle(
        &sb,
        &llm,
        AGENTS,
        &["memory", "show", "user_timezone", "--json"],
    );
    assert_eq!(r.code, 0, "{r}");
    let hit: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(hit["value"], "America/New_York");
    assert_eq!(hit["tags"], serde_json::json!(["prefs"]));
}

#[test]
fn the_cli_honours_bank_grants_and_stored_grants_last_until_revoked() {
    let Some(llm) = FakeLlm::start("rules:\n  - name: any\n    respond: {content: \"ok\"}\n")
    else {
        return;
    };
    let sb = Sandbox::new();
    let set = |agent: &str, bank: &str, value: &str| {
        tackle(
            &sb,
            &llm,
            AGENTS,
            &[
                "memory", "set", "deadline", value, "--agent", agent, "--bank", bank,
            ],
        )
    };
    assert_eq!(set("default", "project-alpha", "friday").code, 0);
    // skim reads project-alpha but may not write it, nor reach it by another spelling.
    let r = set("skim", "project-alpha", "monday");
    assert_ne!(r.code, 0, "{r}");
    assert!(r.stderr.contains("read-only"), "{r}");
    let r = tackle(
        &sb,
        &llm,
        AGENTS,
        &[
            "memory",
            "list",
            "--agent",
            "skim",
            "--bank",
            "Project-Alpha",
        ],
    );
    assert_ne!(r.code, 0, "{r}");
    assert!(r.stderr.contains("self, project-alpha"), "{r}");
    let r = tackle(
        &sb,
        &llm,
        AGENTS,
        &[
            "memory",
            "show",
            "deadline",
            "--agent",
            "skim",
            "--bank",
            "project-alpha",
        ],
    );
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stdout.ends_with("friday\n"), "{r}");

    // A stored write grant for skim on another bank works across processes until revoked.
    assert_ne!(set("skim", "scratch", "x").code, 0);
    let r = tackle(
        &sb,
        &llm,
        AGENTS,
        &["memory", "grant", "scratch", "--agent", "skim", "--write"],
    );
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(set("skim", "scratch", "x").code, 0);
    let r = tackle(
        &sb,
        &llm,
        AGENTS,
        &["memory", "banks", "--agent", "skim", "--json"],
    );
    let banks: Value = serde_json::from_str(&r.stdout).unwrap();
    let names: Vec<&str> = banks
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["name"].as_str())
        .collect();
    assert_eq!(names, ["self", "project-alpha", "scratch"], "{r}");
    assert_eq!(banks[2]["source"], "stored");
    assert_eq!(banks[1]["permission"], "Read");
    let r = tackle(
        &sb,
        &llm,
        AGENTS,
        &["memory", "revoke", "scratch", "--agent", "skim"],
    );
    assert_eq!(r.code, 0, "{r}");
    assert_ne!(set("skim", "scratch", "y").code, 0);
    // A config grant cannot be revoked from the CLI; it says where it lives.
    let r = tackle(
        &sb,
        &llm,
        AGENTS,
        &["memory", "revoke", "project-alpha", "--agent", "skim"],
    );
    assert_ne!(r.code, 0, "{r}");
    assert!(r.stderr.contains("memory_banks.project-alpha"), "{r}");
}

#[test]
fn pinned_entries_reach_the_prompt_only_when_the_agent_asks_and_inside_the_labelled_block() {
    let Some(llm) = FakeLlm::start(concat!(
        "rules:\n",
        "  - name: saw-block\n    when: {messages_contain: \"<pinned-memory>\"}\n    respond: {content: \"saw the pinned block\"}\n",
        "  - name: pinned\n    when: {tool_result_contains: \"Pinned `rule`\"}\n    respond: {content: \"pinned it\"}\n",
        "  - name: pin\n    when: {messages_contain: \"pin the rule\"}\n    respond:\n      tool_calls:\n        - {name: longterm_memory, arguments: {action: pin, key: rule, value: \"no deploys on friday\"}}\n",
        "  - name: other\n    respond: {content: \"no pinned block\"}\n",
    )) else {
        return;
    };
    let sb = Sandbox::new();
    let off = "agents:\n  - name: default\n    backend: fake\n    model: fake-model\n";
    let on = "agents:\n  - name: default\n    backend: fake\n    model: fake-model\n    inject_pinned_memory: true\n";
    let r = tackle_run(&sb, &llm, off, "pin the rule");
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stdout.contains("pinned it"), "{r}");
    let r = tackle_run(&sb, &llm, off, "hello there");
    assert!(r.stdout.contains("no pinned block"), "{r}");
    let r = tackle_run(&sb, &llm, on, "hello again");
    assert!(r.stdout.contains("saw the pinned block"), "{r}");
}
