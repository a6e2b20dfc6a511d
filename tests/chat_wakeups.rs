//! Wake-ups reach a live conversation: work the model plants in an open `tackle chat`, pinned
//! to its session, fires into that chat while the person sits at the prompt without typing,
//! shown as an incoming directive and answered there; a daemon running on the same state
//! directory leaves it to the chat and never runs it a second time.

mod common;

use common::tmux::{shell_quote, Tmux};
use common::{run, FakeLlm, Sandbox};
use serde_json::Value;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// Turn 1 plants a schedule pinned to this session (every 3 s, once); turn 2 answers only
/// if the tool's result told the model the chat will get it; turn 3 is the wake-up.
const RULES: &str = concat!(
    "rules:\n",
    "  - name: plant\n    when: {turn: 1}\n    respond:\n      tool_calls:\n",
    "        - {name: schedule_add, arguments: {id: tick, cron: \"*/3 * * * * *\", task: \"WAKE-TASK-7 look again\", max_fires: 1}}\n",
    "  - name: told\n    when: {turn: 2, tool_result_contains: \"fires into this chat\"}\n    respond: {content: \"PLANTED-HERE\"}\n",
    "  - name: not-told\n    when: {turn: 2}\n    respond: {content: \"PLANTED-WITHOUT-A-WORD\"}\n",
    "  - name: woke\n    when: {turn: 3, messages_contain: \"WAKE-TASK-7 look again\"}\n    respond: {content: \"WOKE-ANSWER all quiet\"}\n",
    "  - name: other\n    respond: {content: \"UNEXPECTED-REQUEST\"}\n",
);

const EXTRA: &str = "schedules:\n  min_interval_secs: 1\n";

fn list_json(sb: &Sandbox, config: &Path) -> Vec<Value> {
    let r = run(sb.tackle(config, &["schedule", "list", "--json"]));
    assert_eq!(r.code, 0, "{r}");
    serde_json::from_str::<Value>(&r.stdout)
        .unwrap_or_else(|e| panic!("{e}\n{r}"))
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// `tackle daemon` with its stderr in `log`, once it says it fires schedules.
fn daemon(sb: &Sandbox, config: &Path, log: &Path) -> Child {
    let file = std::fs::File::create(log).expect("daemon log");
    let child = sb
        .tackle(config, &["daemon"])
        .stdout(Stdio::null())
        .stderr(Stdio::from(file))
        .spawn()
        .expect("spawn tackle daemon");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !read(log).contains("daemon: firing schedules") {
        assert!(
            Instant::now() < deadline,
            "the daemon did not start:\n{}",
            read(log)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    child
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

fn stop(mut child: Child) {
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let _ = child.wait();
}

/// `tackle chat` in a tmux terminal, at its prompt; the pane stays a while after it exits.
fn chat(sb: &Sandbox, config: &Path, tag: &str) -> Option<Tmux> {
    let command = format!(
        "env -i PATH={} HOME={} {} --config {} --workspace {} chat; sleep 30",
        shell_quote(&std::env::var("PATH").unwrap_or_default()),
        shell_quote(&sb.home().to_string_lossy()),
        shell_quote(&common::tackle_bin().to_string_lossy()),
        shell_quote(&config.to_string_lossy()),
        shell_quote(&sb.workspace().to_string_lossy()),
    );
    let tmux = Tmux::start_sized(
        &format!("tackle-chat-wakeup-{tag}-{}", std::process::id()),
        &command,
        160,
    )?;
    tmux.wait_for("you>", 1);
    Some(tmux)
}

#[test]
fn a_wakeup_planted_in_an_open_chat_is_answered_there_and_run_once() {
    let Some(llm) = FakeLlm::start(RULES) else {
        return;
    };
    let sb = Sandbox::new();
    let config = sb.config(&format!("{}{EXTRA}", llm.backend_yaml("openai", true)));
    let log = sb.dir.path().join("daemon.log");
    // Running the whole time, so the chat and the daemon both see the fire fall due.
    let daemon = daemon(&sb, &config, &log);
    let Some(tmux) = chat(&sb, &config, "pinned") else {
        stop(daemon);
        return;
    };
    tmux.send("check on things later");
    tmux.wait_for("[a] always for this session", 1);
    tmux.send("y");
    let screen = tmux.wait_for("PLANTED", 1);
    assert!(
        screen.contains("PLANTED-HERE"),
        "the tool's result says the wake-up fires into this chat:\n{screen}"
    );
    // Nobody types: the wake-up arrives at the idle prompt.
    let screen = tmux.wait_for("WOKE-ANSWER all quiet", 1);
    assert!(
        screen.contains("⏰ wake-up tick: WAKE-TASK-7 look again"),
        "shown as an incoming directive:\n{screen}"
    );
    assert!(!screen.contains("UNEXPECTED-REQUEST"), "{screen}");
    // The prompt is drawn again below the answer, ready for the person.
    std::thread::sleep(Duration::from_millis(500));
    let screen = tmux.screen();
    let after = screen
        .split("WOKE-ANSWER all quiet")
        .nth(1)
        .unwrap_or_default();
    assert!(
        after.contains("you>"),
        "no prompt after the answer:\n{screen}"
    );
    tmux.send("/quit");
    tmux.wait_for("resume with tackle chat --session", 1);

    let all = list_json(&sb, &config);
    let tick = all
        .iter()
        .find(|s| s["name"] == "tick")
        .unwrap_or_else(|| panic!("no schedule tick: {all:?}"));
    let fires = tick["fires"].as_array().cloned().unwrap_or_default();
    assert_eq!(fires.len(), 1, "one fire, by the chat: {tick}");
    assert_eq!(fires[0]["status"], "ok", "{tick}");
    let owner = fires[0]["owner"].as_str().unwrap_or_default();
    assert!(owner.starts_with("chat-"), "claimed by the chat: {tick}");
    // The chat is gone and the daemon still runs: it must not run the fire again.
    std::thread::sleep(Duration::from_secs(4));
    stop(daemon);
    let said = read(&log);
    assert!(
        !said.contains("fire default/tick"),
        "the daemon ran it:\n{said}"
    );
    let all = list_json(&sb, &config);
    let tick = all.iter().find(|s| s["name"] == "tick").cloned();
    let fires = tick
        .as_ref()
        .and_then(|t| t["fires"].as_array().cloned())
        .unwrap_or_default();
    assert_eq!(fires.len(), 1, "{tick:?}");
}

/// Turn 1 asks for a wake-up at the shortest delay `schedule_once` allows; turn 2 answers only
/// if the result said that no daemon runs and the chat alone will fire it; turn 3 is the
/// wake-up.
const ONCE_RULES: &str = concat!(
    "rules:\n",
    "  - name: plant\n    when: {turn: 1}\n    respond:\n      tool_calls:\n",
    "        - {name: schedule_once, arguments: {after_seconds: 30, task: \"ONCE-TASK-9 look again\"}}\n",
    "  - name: told\n    when: {turn: 2, tool_result_contains: \"fires into this chat only while the chat stays open\"}\n    respond: {content: \"TOLD-NO-DAEMON\"}\n",
    "  - name: not-told\n    when: {turn: 2}\n    respond: {content: \"NOT-TOLD\"}\n",
    "  - name: woke\n    when: {turn: 3, messages_contain: \"ONCE-TASK-9 look again\"}\n    respond: {content: \"ONCE-ANSWER all quiet\"}\n",
    "  - name: other\n    respond: {content: \"UNEXPECTED-REQUEST\"}\n",
);

#[test]
fn a_schedule_once_with_no_daemon_fires_into_the_chat_and_a_later_daemon_does_not_repeat_it() {
    let Some(llm) = FakeLlm::start(ONCE_RULES) else {
        return;
    };
    let sb = Sandbox::new();
    let config = sb.config(&llm.backend_yaml("openai", true));
    let Some(tmux) = chat(&sb, &config, "once") else {
        return;
    };
    tmux.send("wake me in half a minute");
    tmux.wait_for("[a] always for this session", 1);
    tmux.send("y");
    let screen = tmux.wait_for("TOLD", 1);
    assert!(
        screen.contains("TOLD-NO-DAEMON"),
        "the tool's result says nothing but this chat will fire it:\n{screen}"
    );
    // Nobody types for the 30 s.
    let screen = tmux.wait_for("ONCE-ANSWER all quiet", 1);
    let id = screen
        .split("⏰ wake-up ")
        .nth(1)
        .and_then(|rest| rest.split(':').next())
        .unwrap_or_else(|| panic!("no directive shown:\n{screen}"))
        .to_string();
    assert!(id.starts_with("wakeup-"), "{id}\n{screen}");
    assert!(
        screen.contains(&format!("⏰ wake-up {id}: ONCE-TASK-9 look again")),
        "{screen}"
    );
    tmux.send("/quit");
    tmux.wait_for("resume with tackle chat --session", 1);

    let fires = || {
        let store = tackle_store::Store::open(&sb.state()).expect("open the store");
        tokio::runtime::Runtime::new()
            .expect("runtime")
            .block_on(store.fires("default", &id, 10))
            .expect("fire records")
    };
    let before = fires();
    assert_eq!(before.len(), 1, "{before:?}");
    assert_eq!(before[0].status, tackle_store::FireStatus::Ok, "{before:?}");
    assert!(
        before[0]
            .owner
            .as_deref()
            .unwrap_or_default()
            .starts_with("chat-"),
        "{before:?}"
    );
    // A daemon started afterwards finds nothing left to run.
    let log = sb.dir.path().join("daemon.log");
    let daemon = daemon(&sb, &config, &log);
    std::thread::sleep(Duration::from_secs(3));
    stop(daemon);
    let said = read(&log);
    assert!(!said.contains(&format!("fire default/{id}")), "{said}");
    assert_eq!(fires(), before);
}
