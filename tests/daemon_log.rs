//! What `tackle daemon` tells the person running it: how many schedules there are and what
//! fires next (at start and after each fire), each fire's answer, and a refusal to start when
//! there is no model to run fires with.

mod common;

use common::{run, FakeLlm, Sandbox};
use std::io::Read;
use std::process::Stdio;
use std::time::{Duration, Instant};

#[test]
fn the_daemon_refuses_to_start_without_a_model_backend() {
    let sb = Sandbox::new();
    // No `backends:`, no API key in the (scrubbed) environment; the local ports probed are
    // pointed at by nothing in the sandbox.
    let config = sb.config("");
    let started = Instant::now();
    let r = run(sb.tackle(&config, &["daemon"]));
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("no model backend"), "{r}");
    assert!(r.stderr.contains("OPENAI_API_KEY"), "says what to set\n{r}");
    assert!(started.elapsed() < Duration::from_secs(20), "{r}");
}

#[test]
fn the_daemon_says_what_fires_next_and_logs_each_answer() {
    let Some(llm) = FakeLlm::start(
        "rules:\n  - name: any\n    respond: {content: \"the weather is fine today\"}\n",
    ) else {
        return;
    };
    let sb = Sandbox::new();
    let config = sb.config(&format!(
        "{}schedules:\n  min_interval_secs: 1\n",
        llm.backend_yaml("openai", true)
    ));
    let add = run(sb.tackle(
        &config,
        &[
            "tools",
            "call",
            "schedule_add",
            r#"{"id": "weather", "cron": "*/2 * * * * *", "task": "how is the weather", "max_fires": 1}"#,
            "--yes",
        ],
    ));
    assert_eq!(add.code, 0, "{add}");
    let mut child = sb
        .tackle(&config, &["daemon"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn tackle daemon");
    let mut stderr = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    // One fire within two seconds, then its answer and the outlook after it.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = run(sb.tackle(&config, &["schedule", "list", "--json"]));
        if r.stdout.contains("\"ok\"") || Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_millis(500));
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let _ = child.wait();
    let log = reader.join().unwrap_or_default();
    assert!(
        log.contains("1 schedule (1 enabled); next fire 20"),
        "the count and next fire at start:\n{log}"
    );
    assert!(log.contains("fire default/weather"), "{log}");
    assert!(
        log.contains("answer: the weather is fine today"),
        "the fire's answer is in the log:\n{log}"
    );
    assert!(
        log.contains("1 schedule (0 enabled); nothing to fire"),
        "what fires next, after the fire:\n{log}"
    );
}

#[test]
fn a_fired_call_needing_approval_tells_the_model_no_one_can_approve_not_to_pass_yes() {
    let Some(llm) = FakeLlm::start(concat!(
        "rules:\n",
        "  - name: after\n    when: {tool_result_contains: \"approval\"}\n    respond: {content: \"could not list\"}\n",
        "  - name: shell\n    when: {messages_contain: \"list files\"}\n    respond:\n      tool_calls:\n        - {name: shell, arguments: {command: \"ls\"}}\n",
    )) else {
        return;
    };
    let sb = Sandbox::new();
    // No time to wait in the approval queue: the refusal is the unattended one.
    let config = sb.config(&format!(
        "{}schedules:\n  min_interval_secs: 1\n  approval_timeout_secs: 0\n",
        llm.backend_yaml("openai", true)
    ));
    let args = r#"{"id": "ls", "cron": "*/2 * * * * *", "task": "list files", "max_fires": 1}"#;
    let added = run(sb.tackle(&config, &["tools", "call", "schedule_add", args, "--yes"]));
    assert_eq!(added.code, 0, "{added}");
    let mut child = sb
        .tackle(&config, &["daemon"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn tackle daemon");
    let deadline = Instant::now() + Duration::from_secs(30);
    let session = loop {
        let r = run(sb.tackle(&config, &["sessions", "list", "--json"]));
        let id = serde_json::from_str::<serde_json::Value>(&r.stdout)
            .ok()
            .and_then(|l| l[0]["id"].as_str().map(str::to_string));
        let shown = id
            .as_deref()
            .map(|id| run(sb.tackle(&config, &["sessions", "show", id])).stdout)
            .unwrap_or_default();
        if shown.contains("could not list") || Instant::now() > deadline {
            break shown;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let _ = child.kill();
    let _ = child.wait();
    assert!(session.contains("could not list"), "{session}");
    assert!(session.contains("no one is there to approve"), "{session}");
    assert!(
        !session.contains("--yes"),
        "the model cannot pass --yes:\n{session}"
    );
}
