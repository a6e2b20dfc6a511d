//! Schedules end to end: the real binary, `tackle daemon` on the real clock, a fake model, and
//! the state database read back between processes.

mod common;

use common::{run, FakeLlm, Sandbox};
use serde_json::Value;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

const AGENT: &str = "agents:\n  - name: default\n    backend: fake\n    model: fake-model\n";

fn config(sb: &Sandbox, llm: &FakeLlm, extra: &str) -> std::path::PathBuf {
    sb.config(&format!(
        "{}{AGENT}{extra}",
        llm.backend_yaml("openai", true)
    ))
}

fn daemon(sb: &Sandbox, config: &Path) -> Child {
    sb.tackle(config, &["daemon"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn tackle daemon")
}

/// SIGTERM, then the exit code and stderr.
fn stop(child: Child) -> (Option<i32>, String) {
    let pid = child.id().to_string();
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status();
    let out = child.wait_with_output().expect("wait daemon");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn list_json(sb: &Sandbox, config: &Path) -> Vec<Value> {
    let r = run(sb.tackle(config, &["schedule", "list", "--json"]));
    assert_eq!(r.code, 0, "{r}");
    serde_json::from_str::<Value>(&r.stdout)
        .unwrap_or_else(|e| panic!("{e}\n{r}"))
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Waits (up to `limit`) until `done` holds for the listing.
fn wait_for(
    sb: &Sandbox,
    config: &Path,
    limit: Duration,
    done: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let deadline = Instant::now() + limit;
    loop {
        let list = list_json(sb, config);
        if done(&list) || Instant::now() > deadline {
            return list;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A time of `schedule list --json` (RFC 3339, UTC) in milliseconds since the epoch.
fn ms(v: &Value) -> i64 {
    let text = v.as_str().unwrap_or_else(|| panic!("{v} is not a time"));
    assert!(text.ends_with('Z'), "{text} is not in UTC");
    let at = time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|e| panic!("{text} is not RFC 3339: {e}"));
    i64::try_from(at.unix_timestamp_nanos() / 1_000_000).unwrap()
}

fn fires_with(s: &Value, status: &str) -> Vec<Value> {
    s["fires"]
        .as_array()
        .map(|f| {
            f.iter()
                .filter(|f| f["status"] == status)
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn the_daemon_fires_a_two_second_schedule_three_times_on_time_then_lists_it_retired() {
    let Some(llm) =
        FakeLlm::start("rules:\n  - name: any\n    respond: {content: \"tick done\"}\n")
    else {
        return;
    };
    let sb = Sandbox::new();
    let config = config(&sb, &llm, "schedules:\n  min_interval_secs: 1\n");
    let add = run(sb.tackle(
        &config,
        &[
            "tools",
            "call",
            "schedule_add",
            r#"{"id": "tick", "cron": "*/2 * * * * *", "task": "say tick", "max_fires": 3}"#,
            "--yes",
        ],
    ));
    assert_eq!(add.code, 0, "{add}");
    let child = daemon(&sb, &config);
    let list = wait_for(&sb, &config, Duration::from_secs(40), |l| {
        l.first().is_some_and(|s| {
            s["fire_count"] == 3 && s["enabled"] == false && fires_with(s, "running").is_empty()
        })
    });
    let (code, stderr) = stop(child);
    assert_eq!(code, Some(0), "{stderr}");
    let s = &list[0];
    assert_eq!(s["fire_count"], 3, "{list:?}\n{stderr}");
    assert_eq!(s["enabled"], false);
    let ok = fires_with(s, "ok");
    assert_eq!(ok.len(), 3, "{s}");
    // Lateness from the fire records (claim time − due time), not the test's wall clock.
    for f in &ok {
        let due = ms(&f["due"]);
        let started = ms(&f["started"]);
        assert!(due % 2000 == 0, "due on an even second: {f}");
        assert!(
            (0..1000).contains(&(started - due)),
            "fired {} ms late: {f}",
            started - due
        );
    }
    // One log line per fire record. On a loaded machine a slow first run can make the next
    // instant a recorded skip (the previous run still going); the three runs are still on time.
    let records = s["fires"].as_array().map_or(0, Vec::len);
    assert_eq!(
        stderr.matches("fire default/tick").count(),
        records,
        "{stderr}"
    );
    assert_eq!(stderr.matches(" ok late ").count(), 3, "{stderr}");
    let r = run(sb.tackle(&config, &["schedule", "list"]));
    assert!(
        r.stdout
            .contains("tick: */2 * * * * * (disabled) [fired 3×]"),
        "{r}"
    );
}

#[test]
fn planting_a_schedule_needs_approval_and_a_fired_call_with_no_approver_ends_needs_approval() {
    let Some(llm) = FakeLlm::start(concat!(
        "rules:\n",
        "  - name: after\n    when: {tool_result_contains: \"approval\"}\n    respond: {content: \"could not\"}\n",
        "  - name: shell\n    when: {messages_contain: \"list files\"}\n    respond:\n      tool_calls:\n        - {name: shell, arguments: {command: \"ls\"}}\n",
    )) else {
        return;
    };
    let sb = Sandbox::new();
    // No time to wait in the approval queue: no one is asked.
    let config = config(
        &sb,
        &llm,
        "schedules:\n  min_interval_secs: 1\n  approval_timeout_secs: 0\n",
    );
    let args = r#"{"id": "ls", "cron": "*/2 * * * * *", "task": "list files", "max_fires": 1}"#;
    let refused = run(sb.tackle(&config, &["tools", "call", "schedule_add", args]));
    assert_eq!(refused.code, 4, "no approver, no schedule: {refused}");
    assert!(list_json(&sb, &config).is_empty());
    let added = run(sb.tackle(&config, &["tools", "call", "schedule_add", args, "--yes"]));
    assert_eq!(added.code, 0, "{added}");
    let child = daemon(&sb, &config);
    let list = wait_for(&sb, &config, Duration::from_secs(30), |l| {
        l.first()
            .is_some_and(|s| !fires_with(s, "failed").is_empty())
    });
    let (code, stderr) = stop(child);
    assert_eq!(code, Some(0), "{stderr}");
    let failed = fires_with(&list[0], "failed");
    assert_eq!(failed.len(), 1, "{list:?}\n{stderr}");
    assert!(
        failed[0]["detail"]
            .as_str()
            .unwrap_or("")
            .contains("needs_approval"),
        "{failed:?}"
    );
}

#[test]
fn a_daemon_killed_during_a_fire_neither_doubles_it_nor_loses_the_count() {
    let Some(llm) = FakeLlm::start(concat!(
        "rules:\n",
        "  - name: after\n    when: {tool_result_contains: \"ran\"}\n    respond: {content: \"done\"}\n",
        "  - name: work\n    when: {messages_contain: \"do the work\"}\n    respond:\n      tool_calls:\n        - {name: shell, arguments: {command: \"test -e started.txt && echo ran again || { touch started.txt; sleep 8; echo ran; }\"}}\n",
    )) else {
        return;
    };
    let sb = Sandbox::new();
    let config = config(
        &sb,
        &llm,
        "security:\n  auto_approved_tools: [shell]\n  tool_policies:\n    shell:\n      approval: unless_auto_approved\nschedules:\n  min_interval_secs: 1\n  lease_secs: 2\n",
    );
    let add = run(sb.tackle(
        &config,
        &[
            "schedule",
            "add",
            "work",
            "--cron",
            "*/2 * * * * *",
            "--task",
            "do the work",
            "--max-fires",
            "2",
        ],
    ));
    assert_eq!(add.code, 0, "{add}");
    let mut first = daemon(&sb, &config);
    // Until the run has started its slow command.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !sb.workspace().join("started.txt").exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        sb.workspace().join("started.txt").exists(),
        "the first fire never started"
    );
    first.kill().expect("kill -9");
    let _ = first.wait();
    let second = daemon(&sb, &config);
    let list = wait_for(&sb, &config, Duration::from_secs(40), |l| {
        l.first()
            .is_some_and(|s| s["fire_count"] == 2 && !fires_with(s, "ok").is_empty())
    });
    let (code, stderr) = stop(second);
    assert_eq!(code, Some(0), "{stderr}");
    let s = &list[0];
    assert_eq!(s["fire_count"], 2, "{s}\n{stderr}");
    let ran: Vec<Value> = ["ok", "failed", "running"]
        .iter()
        .flat_map(|st| fires_with(s, st))
        .collect();
    assert_eq!(ran.len(), 2, "two runs, one of them interrupted: {s}");
    let interrupted = fires_with(s, "failed");
    assert_eq!(interrupted.len(), 1, "{s}");
    assert!(
        interrupted[0]["detail"]
            .as_str()
            .unwrap_or("")
            .contains("interrupted"),
        "{s}"
    );
    assert_ne!(ran[0]["due"], ran[1]["due"], "no due instant ran twice");
}

#[test]
fn two_daemons_over_one_database_fire_two_hundred_due_schedules_once_each() {
    let Some(llm) = FakeLlm::start("rules:\n  - name: any\n    respond: {content: \"ok\"}\n")
    else {
        return;
    };
    let sb = Sandbox::new();
    let config = config(&sb, &llm, "schedules:\n  max_concurrent_per_agent: 8\n");
    // Due together, a few seconds after both daemons are up; yearly, so each is due once.
    let due = time::OffsetDateTime::now_utc() + time::Duration::seconds(8);
    let due = due.replace_millisecond(0).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let store = tackle_store::Store::open(&sb.state()).unwrap();
        for i in 0..200 {
            store
                .add_schedule(tackle_store::NewSchedule {
                    agent: "default".into(),
                    name: format!("s{i:03}"),
                    kind: tackle_store::ScheduleKind::Cron,
                    spec: "0 0 0 1 1 *".into(),
                    message: format!("job {i}"),
                    next_fire: Some(due),
                    target: tackle_store::Target::Fresh,
                    session_id: None,
                    max_fires: None,
                    expires_at: None,
                })
                .await
                .unwrap();
        }
    });
    let a = daemon(&sb, &config);
    let b = daemon(&sb, &config);
    let list = wait_for(&sb, &config, Duration::from_secs(90), |l| {
        l.len() == 200
            && l.iter()
                .all(|s| fires_with(s, "ok").len() + fires_with(s, "failed").len() >= 1)
    });
    let (code_a, err_a) = stop(a);
    let (code_b, err_b) = stop(b);
    assert_eq!((code_a, code_b), (Some(0), Some(0)), "{err_a}\n{err_b}");
    assert_eq!(list.len(), 200);
    for s in &list {
        assert_eq!(s["fire_count"], 1, "{s}");
        let runs = fires_with(s, "ok").len()
            + fires_with(s, "failed").len()
            + fires_with(s, "running").len();
        assert_eq!(runs, 1, "{s}");
    }
    let lines = err_a.matches("fire default/").count() + err_b.matches("fire default/").count();
    assert_eq!(
        lines, 200,
        "one log line per fire across both daemons\n{err_a}\n{err_b}"
    );
}

#[test]
fn with_daemon_mcp_http_the_daemon_also_serves_mcp_and_stops_both_on_sigterm() {
    use std::io::{Read, Write};
    let Some(llm) = FakeLlm::start("rules:\n  - name: any\n    respond: {content: \"ok\"}\n")
    else {
        return;
    };
    let sb = Sandbox::new();
    let port = common::free_port();
    let config = config(
        &sb,
        &llm,
        &format!("daemon:\n  mcp_http: 127.0.0.1:{port}\n"),
    );
    let child = daemon(&sb, &config);
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut answer = String::new();
    while Instant::now() < deadline {
        if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
            let _ = write!(
                s,
                "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
            );
            let _ = s.read_to_string(&mut answer);
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let (code, stderr) = stop(child);
    assert!(
        answer.starts_with("HTTP/1.1"),
        "no HTTP answer: {answer:?}\n{stderr}"
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "serving MCP over Streamable HTTP at http://127.0.0.1:{port}/mcp"
        )),
        "{stderr}"
    );
}

#[test]
fn a_one_shot_added_from_the_cli_fires_once_and_lists_its_times_in_rfc3339() {
    let Some(llm) = FakeLlm::start("rules:\n  - name: any\n    respond: {content: \"hi\"}\n")
    else {
        return;
    };
    let sb = Sandbox::new();
    let config = config(&sb, &llm, "");
    let before = time::OffsetDateTime::now_utc();
    let add = run(sb.tackle(
        &config,
        &[
            "schedule", "add", "hello", "--in", "2s", "--task", "say hi", "--json",
        ],
    ));
    assert_eq!(add.code, 0, "{add}");
    let added: Value = serde_json::from_str(&add.stdout).expect("add --json prints JSON");
    assert_eq!(added["kind"], "once", "{added}");
    let due = ms(&added["next_fire"]);
    let ahead = due - i64::try_from(before.unix_timestamp_nanos() / 1_000_000).unwrap();
    assert!(
        (1_000..10_000).contains(&ahead),
        "due {ahead} ms after the add"
    );

    let child = daemon(&sb, &config);
    // A one-shot is removed once its fire has run.
    let list = wait_for(&sb, &config, Duration::from_secs(40), <[Value]>::is_empty);
    let (code, stderr) = stop(child);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        list.is_empty(),
        "the one-shot never ran: {list:?}\n{stderr}"
    );
    let fires: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("fire default/hello"))
        .collect();
    assert_eq!(fires.len(), 1, "one fire: {stderr}");
    assert!(fires[0].contains(" ok"), "{stderr}");
}

#[test]
fn schedule_add_needs_exactly_one_of_cron_at_and_in_and_refuses_a_past_time() {
    let sb = Sandbox::new();
    let cfg = sb.config("");
    for args in [
        &["schedule", "add", "x", "--task", "t"][..],
        &[
            "schedule",
            "add",
            "x",
            "--task",
            "t",
            "--in",
            "1h",
            "--at",
            "2099-01-01T00:00:00Z",
        ],
        &[
            "schedule",
            "add",
            "x",
            "--task",
            "t",
            "--in",
            "1h",
            "--max-fires",
            "2",
        ],
        &[
            "schedule",
            "add",
            "x",
            "--task",
            "t",
            "--at",
            "2099-01-01T00:00:00Z",
            "--expires-at",
            "2099-01-02T00:00:00Z",
        ],
        &["schedule", "add", "x", "--task", "t", "--in", "soon"],
        &[
            "schedule",
            "add",
            "x",
            "--task",
            "t",
            "--at",
            "2000-01-01T00:00:00Z",
        ],
        &["schedule", "add", "x", "--task", "t", "--at", "tomorrow"],
    ] {
        let r = run(sb.tackle(&cfg, args));
        assert_eq!(r.code, 2, "{args:?}: {r}");
    }
    let r = run(sb.tackle(&cfg, &["schedule", "list", "--json"]));
    assert_eq!(r.stdout.trim(), "[]", "nothing was added: {r}");
}
