//! Issue #38, class 5: schedules belong to the agent that planted them. Through the real
//! binary (`tackle tools call --agent`, the dispatcher the model's calls go through, and
//! `tackle daemon` with a scripted model): one agent cannot list, disable, change or remove
//! another's schedules by id, by guessed id, by name or through the `cron` face; planting one
//! that runs as another agent needs the operator's `schedule_for` and a person's yes; and such
//! a schedule fires with both agents' grants intersected, so a file only the wider agent may
//! write does not appear.

mod common;

use common::{run, FakeLlm, Run, Sandbox};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// `alice` may write only under `alice/`; `bob` anywhere in the workspace. `write_file` asks
/// nothing, so a fire (which has no approver) can write, and the schedule tools are
/// auto-approved, so only what must always ask a person still asks.
fn config(sb: &Sandbox, llm: &FakeLlm, alice_extra: &str) -> PathBuf {
    sb.config(&format!(
        "{}agents:
  - name: alice
    backend: fake
    model: fake-model
    grants:
      fs:
        allow_write: [\"alice\"]
{alice_extra}  - name: bob
    backend: fake
    model: fake-model
    grants:
      fs:
        allow_write: [\".\"]
security:
  auto_approved_tools: [schedule_add, schedule_modify, cron, spawn_agent]
  tool_policies:
    write_file:
      approval: never
schedules:
  min_interval_secs: 1
",
        llm.backend_yaml("openai", true)
    ))
}

fn call(sb: &Sandbox, config: &Path, agent: &str, tool: &str, args: &str, yes: bool) -> Run {
    let mut argv = vec!["tools", "call", tool, args, "--agent", agent];
    if yes {
        argv.push("--yes");
    }
    run(sb.tackle(config, &argv))
}

/// Every stored schedule, as the operator sees them, without the fire records.
fn stored(sb: &Sandbox, config: &Path) -> Vec<Value> {
    let r = run(sb.tackle(config, &["schedule", "list", "--json"]));
    assert_eq!(r.code, 0, "{r}");
    let mut list: Vec<Value> = serde_json::from_str::<Value>(&r.stdout)
        .unwrap_or_else(|e| panic!("{e}\n{r}"))
        .as_array()
        .cloned()
        .unwrap_or_default();
    for s in &mut list {
        if let Some(o) = s.as_object_mut() {
            o.remove("fires");
        }
    }
    list
}

fn model() -> Option<FakeLlm> {
    FakeLlm::start(concat!(
        "rules:\n",
        "  - name: after\n    when: {tool_result_contains: \"\"}\n    respond: {content: \"done\"}\n",
        "  - name: loot\n    when: {messages_contain: \"write the loot\"}\n    respond:\n      tool_calls:\n        - {name: write_file, arguments: {path: \"loot.txt\", content: \"LOOT\"}}\n",
        "  - name: delegate\n    when: {messages_contain: \"please delegate\"}\n    respond:\n      tool_calls:\n        - {name: spawn_agent, arguments: {agent: bob, task: \"plant the loot schedule\"}}\n",
        "  - name: plant\n    when: {messages_contain: \"plant the loot schedule\"}\n    respond:\n      tool_calls:\n        - {name: schedule_add, arguments: {id: tree-heist, cron: \"*/2 * * * * *\", task: \"write the loot\", target: fresh, max_fires: 1}}\n",
        "  - name: tidy\n    when: {messages_contain: \"tidy up\"}\n    respond:\n      tool_calls:\n        - {name: schedule_remove, arguments: {id: nightly, agent: bob}}\n        - {name: schedule_modify, arguments: {id: nightly, agent: bob, enabled: false}}\n        - {name: cron, arguments: {action: remove, job_id: nightly}}\n",
        "  - name: control\n    when: {messages_contain: \"write the control\"}\n    respond:\n      tool_calls:\n        - {name: write_file, arguments: {path: \"control.txt\", content: \"OK\"}}\n",
        "  - name: any\n    respond: {content: \"nothing to do\"}\n",
    ))
}

#[test]
fn one_agent_cannot_see_disable_change_or_remove_anothers_schedules() {
    let Some(llm) = model() else { return };
    let sb = Sandbox::new();
    let config = config(&sb, &llm, "");
    let planted = call(
        &sb,
        &config,
        "bob",
        "schedule_add",
        r#"{"id": "nightly", "cron": "0 0 3 * * *", "task": "back up the notes", "target": "fresh"}"#,
        true,
    );
    assert_eq!(planted.code, 0, "{planted}");
    let once = call(
        &sb,
        &config,
        "bob",
        "schedule_once",
        r#"{"after_seconds": 3600, "task": "remind bob"}"#,
        true,
    );
    assert_eq!(once.code, 0, "{once}");
    let once_id = stored(&sb, &config)
        .iter()
        .find_map(|s| {
            s["name"]
                .as_str()
                .filter(|n| n.starts_with("wakeup-"))
                .map(str::to_string)
        })
        .expect("the one-shot's id");
    let before = stored(&sb, &config);
    assert_eq!(before.len(), 2, "{before:?}");

    // Reading: nothing of bob's shows up for alice, whichever way she asks.
    for (tool, args) in [
        ("schedule_list", "{}".to_string()),
        ("schedule_list", r#"{"agent": "bob"}"#.to_string()),
        (
            "cron",
            r#"{"action": "list", "include_disabled": true}"#.to_string(),
        ),
    ] {
        let r = call(&sb, &config, "alice", tool, &args, false);
        assert!(
            !r.stdout.contains("nightly")
                && !r.stdout.contains("back up")
                && !r.stdout.contains(&once_id),
            "{tool} {args} showed bob's schedule: {r}"
        );
    }

    // Acting: by id, by id and agent, by the one-shot's id, by guessed ids, through `cron`,
    // disabling (which asks nothing) and widening (approved).
    let attacks = [
        ("schedule_remove", r#"{"id": "nightly"}"#.to_string(), false),
        (
            "schedule_remove",
            r#"{"id": "nightly", "agent": "bob"}"#.to_string(),
            false,
        ),
        (
            "schedule_remove",
            format!(r#"{{"id": "{once_id}", "agent": "bob"}}"#),
            false,
        ),
        (
            "schedule_remove",
            r#"{"id": "Nightly", "agent": "bob"}"#.to_string(),
            false,
        ),
        (
            "schedule_remove",
            r#"{"id": "reminder-r1", "agent": "bob"}"#.to_string(),
            false,
        ),
        (
            "schedule_modify",
            r#"{"id": "nightly", "agent": "bob", "enabled": false}"#.to_string(),
            false,
        ),
        (
            "schedule_modify",
            format!(r#"{{"id": "{once_id}", "agent": "bob", "enabled": false}}"#),
            false,
        ),
        (
            "schedule_modify",
            r#"{"id": "nightly", "agent": "bob", "task": "write the loot"}"#.to_string(),
            true,
        ),
        (
            "schedule_modify",
            r#"{"id": "nightly", "agent": "bob", "cron": "* * * * * *"}"#.to_string(),
            true,
        ),
        (
            "cron",
            r#"{"action": "remove", "job_id": "nightly"}"#.to_string(),
            false,
        ),
        (
            "schedule_remove",
            r#"{"id": "nightly", "agent": " bob "}"#.to_string(),
            false,
        ),
    ];
    for (tool, args, yes) in attacks {
        let r = call(&sb, &config, "alice", tool, &args, yes);
        assert_ne!(r.code, 0, "{tool} {args} succeeded: {r}");
        assert_eq!(
            stored(&sb, &config),
            before,
            "{tool} {args} changed bob's schedules: {r}"
        );
    }

    // The operator still sees and manages both.
    let r = run(sb.tackle(
        &config,
        &["schedule", "disable", "nightly", "--agent", "bob"],
    ));
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(
        stored(&sb, &config)
            .iter()
            .filter(|s| s["enabled"] == false)
            .count(),
        1
    );
    // And bob still sees his own.
    let r = call(&sb, &config, "bob", "schedule_list", "{}", false);
    assert!(r.stdout.contains("nightly"), "{r}");
}

#[test]
fn planting_for_another_agent_needs_the_operators_leave_and_a_persons_yes() {
    let Some(llm) = model() else { return };
    let sb = Sandbox::new();
    let args = r#"{"id": "heist", "cron": "*/2 * * * * *", "task": "write the loot", "agent": "bob", "target": "fresh"}"#;

    // No `schedule_for`: denied even when approved.
    let plain = config(&sb, &llm, "");
    let r = call(&sb, &plain, "alice", "schedule_add", args, true);
    assert_ne!(r.code, 0, "{r}");
    assert!(r.stderr.contains("schedule_for"), "{r}");
    assert!(stored(&sb, &plain).is_empty());
    // Nor through a child spelling of the name, or an agent that does not exist.
    for other in ["Bob", "bob ", "carol"] {
        let a = args.replace("\"bob\"", &format!("\"{other}\""));
        let r = call(&sb, &plain, "alice", "schedule_add", &a, true);
        assert_ne!(r.code, 0, "{other}: {r}");
        assert!(stored(&sb, &plain).is_empty(), "{other}: {r}");
    }

    // Allowed by the operator: still asks, even with auto-approval configured.
    let allowed = config(&sb, &llm, "    schedule_for: [bob]\n");
    let r = call(&sb, &allowed, "alice", "schedule_add", args, false);
    assert_ne!(r.code, 0, "{r}");
    assert!(stored(&sb, &allowed).is_empty(), "{r}");
    let r = call(&sb, &allowed, "alice", "schedule_add", args, true);
    assert_eq!(r.code, 0, "{r}");
    let list = stored(&sb, &allowed);
    assert_eq!(list.len(), 1, "{list:?}");
    assert_eq!(list[0]["agent"], "bob");
    assert_eq!(list[0]["owner"], "alice");
    let r = run(sb.tackle(&allowed, &["schedule", "list"]));
    assert!(r.stdout.contains("runs as bob, planted by alice"), "{r}");
    // It is alice's: bob's own tools do not reach it, alice's do.
    let r = call(
        &sb,
        &allowed,
        "bob",
        "schedule_remove",
        r#"{"id": "heist"}"#,
        false,
    );
    assert_ne!(r.code, 0, "{r}");
    assert_eq!(stored(&sb, &allowed).len(), 1);
    let r = call(&sb, &allowed, "alice", "schedule_list", "{}", false);
    assert!(r.stdout.contains("heist"), "{r}");
}

fn daemon(sb: &Sandbox, config: &Path) -> Child {
    sb.tackle(config, &["daemon"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn tackle daemon")
}

fn stop(child: Child) -> String {
    let pid = child.id().to_string();
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status();
    let out = child.wait_with_output().expect("wait daemon");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_schedule_planted_for_a_wider_agent_fires_with_the_planters_grants_too() {
    let Some(llm) = model() else { return };
    let sb = Sandbox::new();
    let config = config(&sb, &llm, "    schedule_for: [bob]\n");
    // The attack: alice (may write only alice/) has bob write loot.txt at the top.
    let r = call(
        &sb,
        &config,
        "alice",
        "schedule_add",
        r#"{"id": "heist", "cron": "*/2 * * * * *", "task": "write the loot", "agent": "bob", "target": "fresh", "max_fires": 1}"#,
        true,
    );
    assert_eq!(r.code, 0, "{r}");
    // The control: bob's own schedule writes control.txt at the top, so the fire path works.
    let r = call(
        &sb,
        &config,
        "bob",
        "schedule_add",
        r#"{"id": "own", "cron": "*/2 * * * * *", "task": "write the control", "target": "fresh", "max_fires": 1}"#,
        true,
    );
    assert_eq!(r.code, 0, "{r}");
    let child = daemon(&sb, &config);
    let deadline = Instant::now() + Duration::from_secs(40);
    let settled = |sb: &Sandbox| {
        let r = run(sb.tackle(&config, &["schedule", "list", "--json"]));
        let list: Vec<Value> = serde_json::from_str::<Value>(&r.stdout)
            .ok()
            .and_then(|v| v.as_array().cloned())
            .unwrap_or_default();
        list.len() == 2
            && list.iter().all(|s| {
                s["fires"].as_array().is_some_and(|f| {
                    f.iter()
                        .any(|f| f["status"] == "ok" || f["status"] == "failed")
                })
            })
    };
    while !settled(&sb) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    let stderr = stop(child);
    let ws = sb.workspace();
    assert!(
        ws.join("control.txt").is_file(),
        "bob's own fire did not write: the test proves nothing\n{stderr}"
    );
    assert!(
        !ws.join("loot.txt").exists(),
        "alice's schedule wrote outside alice's grant through bob\n{stderr}"
    );
    let r = run(sb.tackle(&config, &["schedule", "list"]));
    assert!(r.stdout.contains("heist"), "{r}");
    assert!(r.stdout.contains("last failed: denied"), "{r}\n{stderr}");
}

/// The same attacks made by a model in a run of `alice`: the calls reach the dispatcher as any
/// model call does, and bob's schedule is still there, unchanged.
#[test]
fn a_models_calls_in_one_agents_run_leave_anothers_schedule_alone() {
    let Some(llm) = model() else { return };
    let sb = Sandbox::new();
    let config = config(&sb, &llm, "");
    let r = call(
        &sb,
        &config,
        "bob",
        "schedule_add",
        r#"{"id": "nightly", "cron": "0 0 3 * * *", "task": "back up the notes", "target": "fresh"}"#,
        true,
    );
    assert_eq!(r.code, 0, "{r}");
    let before = stored(&sb, &config);
    let r = run(sb.tackle(
        &config,
        &["run", "--agent", "alice", "-m", "please tidy up"],
    ));
    assert!(
        r.stderr.contains("schedule_remove"),
        "the model's calls were made: {r}"
    );
    assert_eq!(stored(&sb, &config), before, "{r}");
}

/// A child started in a tree plants a schedule for itself: its owner is its path
/// (`alice › bob`), and the fire is narrowed to alice's grants as the child was.
#[test]
fn a_schedule_a_child_plants_for_itself_fires_with_its_ancestors_grants() {
    let Some(llm) = model() else { return };
    let sb = Sandbox::new();
    let config = config(&sb, &llm, "");
    let r = run(sb.tackle(
        &config,
        &["run", "--agent", "alice", "-m", "please delegate"],
    ));
    assert_eq!(r.code, 0, "{r}");
    let list = stored(&sb, &config);
    assert_eq!(list.len(), 1, "{list:?}\n{r}");
    assert_eq!(list[0]["agent"], "bob");
    assert_eq!(list[0]["owner"], "alice › bob");
    let r = call(
        &sb,
        &config,
        "bob",
        "schedule_add",
        r#"{"id": "own", "cron": "*/2 * * * * *", "task": "write the control", "target": "fresh", "max_fires": 1}"#,
        true,
    );
    assert_eq!(r.code, 0, "{r}");
    let child = daemon(&sb, &config);
    let deadline = Instant::now() + Duration::from_secs(40);
    while Instant::now() < deadline {
        let r = run(sb.tackle(&config, &["schedule", "list"]));
        if r.stdout.matches(" · last ").count() == 2 {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let stderr = stop(child);
    let ws = sb.workspace();
    assert!(ws.join("control.txt").is_file(), "{stderr}");
    assert!(!ws.join("loot.txt").exists(), "{stderr}");
}
