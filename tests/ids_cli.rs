//! One id rule for every id a person or a model passes (crates/tackle-protocol/src/ids.rs):
//! session ids, schedule ids, agent names and memory bank names that are empty, read as
//! paths or need quoting are refused with a clear message (exit 2), and nothing is stored.

mod common;

use common::{run, Sandbox};
use serde_json::Value;

fn session_count(sb: &Sandbox, cfg: &std::path::Path) -> usize {
    let r = run(sb.tackle(cfg, &["sessions", "list", "--json"]));
    assert_eq!(r.code, 0, "{r}");
    serde_json::from_str::<Value>(&r.stdout)
        .ok()
        .and_then(|v| v.as_array().map(Vec::len))
        .unwrap_or_else(|| panic!("not a JSON array\n{r}"))
}

/// The run stops before any backend is tried: no backend answers on port 9.
const DEAD_BACKEND: &str = "backends:\n  - name: dead\n    type: openai\n    api_base: http://127.0.0.1:9/v1\n    api_key: test-key-not-secret\n    models:\n      - name: m\n";

#[test]
fn bad_session_ids_are_refused_before_anything_is_stored() {
    let sb = Sandbox::new();
    let cfg = sb.config(DEAD_BACKEND);
    for (id, why) in [
        ("", "it is empty"),
        ("../../etc/passwd", "reads as a path"),
        ("bad id!", "not allowed"),
    ] {
        let r = run(sb.tackle(&cfg, &["run", "--session", id, "-m", "hi"]));
        assert_eq!(r.code, 2, "{id:?}\n{r}");
        assert!(
            r.stderr.contains("session id") && r.stderr.contains(why),
            "{id:?}\n{r}"
        );
        assert!(
            !r.stderr.contains("127.0.0.1:9"),
            "no backend was tried\n{r}"
        );
        let r = run(sb.tackle(&cfg, &["chat", "--session", id, "--new"]));
        assert_eq!(r.code, 2, "chat {id:?}\n{r}");
        assert!(r.stderr.contains("session id"), "chat {id:?}\n{r}");
    }
    assert_eq!(session_count(&sb, &cfg), 0);
    let r = run(sb.tackle(&cfg, &["run", "-m", ""]));
    assert_eq!(r.code, 2, "an empty task\n{r}");
}

#[test]
fn bad_schedule_ids_are_refused_from_the_cli_and_from_the_model() {
    let sb = Sandbox::new();
    let cfg = sb.config("schedules:\n  min_interval_secs: 60\n");
    let r = run(sb.tackle(
        &cfg,
        &[
            "schedule",
            "add",
            "bad id!",
            "--cron",
            "0 0 * * * *",
            "--task",
            "x",
        ],
    ));
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("schedule id `bad id!`"), "{r}");

    // The model's door: the same rule, as invalid arguments.
    let r = run(sb.tackle(
        &cfg,
        &[
            "tools",
            "call",
            "schedule_add",
            r#"{"id": "../x", "cron": "0 0 * * * *", "task": "x"}"#,
            "--yes",
            "--json",
        ],
    ));
    let v: Value = serde_json::from_str(r.stdout.trim()).unwrap_or_else(|e| panic!("{e}\n{r}"));
    assert_eq!(v["error"]["kind"], "invalid_arguments", "{r}");
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("schedule id")),
        "{r}"
    );
    // A job the model names by its message gets a valid id made from it.
    let r = run(sb.tackle(
        &cfg,
        &[
            "tools",
            "call",
            "cron",
            r#"{"action": "add", "message": "Check the news, then mail me!", "cron_expr": "0 0 * * * *"}"#,
            "--yes",
            "--json",
        ],
    ));
    assert_eq!(r.code, 0, "{r}");
    let r = run(sb.tackle(&cfg, &["schedule", "list", "--json"]));
    assert!(r.stdout.contains("check-the-news"), "{r}");

    let r = run(sb.tackle(&cfg, &["schedule", "list", "--json"]));
    let ids: Vec<String> = serde_json::from_str::<Value>(&r.stdout)
        .ok()
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|s| s["name"].as_str().map(str::to_string))
        .collect();
    assert!(
        !ids.iter().any(|n| n.contains(' ') || n.contains('/')),
        "{ids:?}"
    );
}

#[test]
fn bad_agent_and_bank_names_are_refused() {
    let sb = Sandbox::new();
    let cfg = sb.config("agents:\n  - name: \"my agent\"\n");
    let r = run(sb.tackle(&cfg, &["tools", "list"]));
    assert_eq!(r.code, 2, "{r}");
    assert!(
        r.stderr.contains("agents[0].name") && r.stderr.contains("agent name `my agent`"),
        "{r}"
    );

    let cfg = sb.config("");
    for args in [
        &["memory", "grant", "bad bank", "--agent", "default"][..],
        &["memory", "grant", "Team", "--agent", "default"],
        &["memory", "grant", "../x", "--agent", "default", "--write"],
        &["memory", "list", "--agent", "../../root"],
    ] {
        let r = run(sb.tackle(&cfg, args));
        assert_eq!(r.code, 2, "{args:?}\n{r}");
        assert!(r.stderr.contains("is not valid"), "{args:?}\n{r}");
    }
    // A bank only looked up is not found, with the banks the agent has.
    let r = run(sb.tackle(&cfg, &["memory", "list", "--bank", "../x"]));
    assert_eq!(r.code, 6, "{r}");
    assert!(r.stderr.contains("its banks are: self"), "{r}");
}
