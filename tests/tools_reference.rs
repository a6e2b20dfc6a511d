//! Every tool is listed and described, and docs/tools.md is the registry's own reference.
//!
//! `tools list` (text and `--json`) shows the tools only an agent's conversation can run,
//! marked as such, `describe` describes them and `call` still says why it cannot run them.
//! docs/tools.md is what `tackle tools reference` prints: regenerate it after an intended change
//! with `cargo run -q -- tools reference > docs/tools.md` (or `UPDATE_SNAPSHOTS=1` on this test).

mod common;

use common::{repo_root, run, Sandbox};
use serde_json::Value;

const REFERENCE: &str = "docs/tools.md";
const REFRESH: &str = "cargo run -q -- tools reference > docs/tools.md";

/// The tools that ask the running agent for their work.
const CONVERSATION_ONLY: [&str; 6] = [
    "compact",
    "delegate",
    "message",
    "spawn",
    "spawn_agent",
    "spawn_worker",
];

fn reference(sb: &Sandbox) -> String {
    // A config that changes what `tools list` shows: the reference reads none.
    let cfg = sb.config("tools:\n  coding_tools: false\n");
    let r = run(sb.tackle(&cfg, &["tools", "reference"]));
    assert_eq!(r.code, 0, "{r}");
    r.stdout
}

#[test]
fn docs_tools_md_is_what_the_registry_prints() {
    let sb = Sandbox::new();
    let printed = reference(&sb);
    let path = repo_root().join(REFERENCE);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, &printed).expect("write docs/tools.md");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != printed {
        let first = committed
            .lines()
            .zip(printed.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| committed.lines().count().min(printed.lines().count()));
        panic!(
            "{REFERENCE} is stale; run `{REFRESH}` to refresh (first difference at line {}: \
             committed {:?}, registry {:?})",
            first + 1,
            committed.lines().nth(first).unwrap_or("<end>"),
            printed.lines().nth(first).unwrap_or("<end>"),
        );
    }
}

/// Every tool a config with all of them switched on lists has its section in the reference,
/// marked conversation only exactly when `tools list` marks it.
#[test]
fn the_reference_has_every_listed_tool_and_marks_the_same_ones() {
    let sb = Sandbox::new();
    let printed = reference(&sb);
    let cfg = sb
        .config("tools:\n  coding_tools: true\nweb_search:\n  backends:\n    - type: duckduckgo\n");
    let r = run(sb.tackle(&cfg, &["tools", "list", "--json"]));
    assert_eq!(r.code, 0, "{r}");
    let rows: Value = serde_json::from_str(&r.stdout).expect("json");
    let rows = rows.as_array().expect("array");
    assert!(rows.len() >= 40, "{r}");
    for row in rows {
        let name = row["name"].as_str().expect("name");
        let heading = format!(
            "## `{name}`\n\nOwner `{}`",
            row["owner"].as_str().unwrap_or("")
        );
        let Some(at) = printed.find(&heading) else {
            panic!("the reference has no section for `{name}`; run `{REFRESH}`");
        };
        let facts = printed
            .get(at..)
            .unwrap_or_default()
            .lines()
            .nth(2)
            .unwrap_or_default();
        assert_eq!(
            facts.contains("**conversation only**"),
            row["conversation_only"] == Value::Bool(true),
            "`{name}`: {facts}"
        );
    }
}

#[test]
fn tools_list_marks_the_conversation_only_tools() {
    let sb = Sandbox::new();
    let cfg = sb.config("");
    let r = run(sb.tackle(&cfg, &["tools", "list", "--json"]));
    assert_eq!(r.code, 0, "{r}");
    let rows: Value = serde_json::from_str(&r.stdout).expect("json");
    let mut marked: Vec<&str> = rows
        .as_array()
        .expect("array")
        .iter()
        .filter(|t| t["conversation_only"] == Value::Bool(true))
        .filter_map(|t| t["name"].as_str())
        .collect();
    marked.sort_unstable();
    assert_eq!(marked, CONVERSATION_ONLY, "{r}");

    let text = run(sb.tackle(&cfg, &["tools", "list"]));
    assert_eq!(text.code, 0, "{text}");
    for name in CONVERSATION_ONLY {
        let line = text
            .stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_default();
        assert!(line.ends_with("conversation only"), "{name}\n{text}");
    }
    let shell = text
        .stdout
        .lines()
        .find(|l| l.starts_with("shell "))
        .unwrap_or_default();
    assert!(!shell.contains("conversation only"), "{text}");
}

#[test]
fn spawn_agent_is_described_but_not_called_outside_a_conversation() {
    let sb = Sandbox::new();
    let cfg = sb.config("");
    let described = run(sb.tackle(&cfg, &["tools", "describe", "spawn_agent"]));
    assert_eq!(described.code, 0, "{described}");
    assert!(
        described.stdout.contains("conversation only"),
        "{described}"
    );
    assert!(
        described.stdout.contains("\"task\""),
        "the schema\n{described}"
    );

    let called = run(sb.tackle(
        &cfg,
        &[
            "tools",
            "call",
            "spawn_agent",
            r#"{"agent": "a", "task": "t"}"#,
        ],
    ));
    assert_eq!(called.code, 1, "{called}");
    assert!(
        called
            .stderr
            .contains("works only inside an agent's conversation (`tackle run`, `tackle chat`)"),
        "{called}"
    );
    assert!(called.stdout.is_empty(), "nothing ran\n{called}");
}
