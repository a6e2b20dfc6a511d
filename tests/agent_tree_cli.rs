//! Agent trees through the real binary: `tackle run` waits for a background task (`spawn`)
//! and its result lands in the stored session; `--no-wait` and Ctrl-C cancel it and kill its
//! process; `tackle chat` (in a real terminal, tmux) does the same at its exit;
//! `tackle sessions list --tree` shows the child under its parent. The model is a small
//! scripted OpenAI-compatible server on 127.0.0.1.

mod common;

use common::tmux::{shell_quote, Tmux};
use common::{run, Sandbox};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Answers each chat completion with `script(request body)` (a `message` object).
fn model(script: fn(&Value) -> Value) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                let mut len = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        len = v.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0; len];
                let _ = reader.read_exact(&mut body);
                let req: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let message = script(&req);
                let finish = if message.get("tool_calls").is_some() {
                    "tool_calls"
                } else {
                    "stop"
                };
                let answer =
                    json!({"choices": [{"index": 0, "message": message, "finish_reason": finish}]})
                        .to_string();
                let mut s = stream;
                let _ = write!(
                    s,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
                    answer.len()
                );
            });
        }
    });
    port
}

fn first_user(req: &Value) -> String {
    req["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

fn has_tool_result(req: &Value) -> bool {
    req["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|m| m["role"] == "tool")
}

fn call(name: &str, args: Value) -> Value {
    json!({"role": "assistant", "content": null, "tool_calls": [{
        "id": "c1", "type": "function",
        "function": {"name": name, "arguments": args.to_string()}
    }]})
}

fn text(t: &str) -> Value {
    json!({"role": "assistant", "content": t})
}

/// The root spawns "background job" once, then answers; the background task runs `job`.
fn root_or(req: &Value, job: fn(&Value) -> Value) -> Value {
    if first_user(req) == "background job" {
        return job(req);
    }
    if has_tool_result(req) {
        text("started it")
    } else {
        call("spawn", json!({"task": "background job", "label": "bg"}))
    }
}

fn config(sb: &Sandbox, port: u16) -> std::path::PathBuf {
    sb.config(&format!(
        "backends:\n  - name: fake\n    type: openai\n    api_base: http://127.0.0.1:{port}/v1\n    api_key: test-key-not-secret\n    stream: false\n    models:\n      - name: fake-model\n"
    ))
}

fn session_id(stderr: &str) -> String {
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("session: "))
        .and_then(|rest| rest.split_whitespace().next())
        .map(str::to_string)
        .unwrap_or_else(|| panic!("no session id printed\n{stderr}"))
}

fn session_text(sb: &Sandbox, cfg: &std::path::Path, id: &str) -> String {
    let r = run(sb.tackle(cfg, &["sessions", "show", id, "--json"]));
    assert_eq!(r.code, 0, "{r}");
    r.stdout
}

/// Whether a process with exactly this command line runs on the machine.
fn running(argv: &[&str]) -> bool {
    let want: Vec<u8> = argv.iter().flat_map(|a| a.bytes().chain([0])).collect();
    std::fs::read_dir("/proc")
        .map(|dir| {
            dir.flatten().any(|e| {
                let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
                !stat.contains(") Z ")
                    && std::fs::read(e.path().join("cmdline")).is_ok_and(|c| c == want)
            })
        })
        .unwrap_or(false)
}

fn wait_until(mut cond: impl FnMut() -> bool, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

#[test]
fn run_waits_for_a_background_task_and_its_answer_lands_in_the_session() {
    let port = model(|req| root_or(req, |_| text("background answer 42")));
    let sb = Sandbox::new();
    let cfg = config(&sb, port);
    let r = run(sb.tackle(&cfg, &["run", "-m", "go", "--yes"]));
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stdout.contains("started it"), "{r}");
    let id = session_id(&r.stderr);
    let stored = session_text(&sb, &cfg, &id);
    assert!(
        stored.contains("[Background task 'bg' completed]")
            && stored.contains("background answer 42"),
        "{stored}"
    );
    let tree = run(sb.tackle(&cfg, &["sessions", "list", "--tree"]));
    assert_eq!(tree.code, 0, "{tree}");
    let lines: Vec<&str> = tree.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{tree}");
    assert!(lines[0].starts_with(&id), "{tree}");
    assert!(
        lines[1].starts_with("  ") && lines[1].contains("default › bg"),
        "{tree}"
    );
}

fn slow_answer(_: &Value) -> Value {
    // Long after the root's turn has ended and `run` is waiting.
    std::thread::sleep(Duration::from_millis(800));
    text("late answer 77")
}

#[test]
fn a_task_that_ends_while_run_waits_is_shown_when_it_ends() {
    let port = model(|req| root_or(req, slow_answer));
    let sb = Sandbox::new();
    let cfg = config(&sb, port);
    let r = run(sb.tackle(&cfg, &["run", "-m", "go", "--yes"]));
    assert_eq!(r.code, 0, "{r}");
    let waiting = r.stderr.find("waiting for 1 background task");
    let shown = r
        .stderr
        .find("[Background task 'bg' completed] late answer 77");
    assert!(
        matches!((waiting, shown), (Some(w), Some(s)) if w < s),
        "the task's end is shown after the wait began\n{r}"
    );
}

// Each test sleeps for its own odd duration, so tests running at once never see each
// other's process.
const SLEEP: [&str; 2] = ["sleep", "31.713"];
const SLEEP_CTRL_C: [&str; 2] = ["sleep", "32.417"];

fn sleeper(req: &Value) -> Value {
    if has_tool_result(req) {
        text("slept")
    } else {
        call("shell", json!({"command": "exec sleep 31.713"}))
    }
}

fn sleeper_ctrl_c(req: &Value) -> Value {
    if has_tool_result(req) {
        text("slept")
    } else {
        call("shell", json!({"command": "exec sleep 32.417"}))
    }
}

#[test]
fn no_wait_cancels_the_background_task_and_says_so() {
    let port = model(|req| root_or(req, sleeper));
    let sb = Sandbox::new();
    let cfg = config(&sb, port);
    let r = run(sb.tackle(&cfg, &["run", "-m", "go", "--yes", "--no-wait"]));
    assert_eq!(r.code, 0, "{r}");
    assert!(
        r.stderr.contains("background task 'bg'") && r.stderr.contains("cancelled"),
        "{r}"
    );
    let stored = session_text(&sb, &cfg, &session_id(&r.stderr));
    assert!(stored.contains("[Background task 'bg' failed]"), "{stored}");
    assert!(
        wait_until(|| !running(&SLEEP), Duration::from_secs(10)),
        "sleep survived"
    );
}

#[test]
fn ctrl_c_while_run_waits_kills_the_background_tasks_sleep() {
    let port = model(|req| root_or(req, sleeper_ctrl_c));
    let sb = Sandbox::new();
    let cfg = config(&sb, port);
    let mut cmd = sb.tackle(&cfg, &["run", "-m", "go", "--yes"]);
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn tackle");
    assert!(
        wait_until(|| running(&SLEEP_CTRL_C), Duration::from_secs(60)),
        "the background task's sleep never started"
    );
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let exited = wait_until(
        || child.try_wait().ok().flatten().is_some(),
        Duration::from_secs(20),
    );
    if !exited {
        let _ = child.kill();
    }
    assert!(exited, "tackle run did not exit after Ctrl-C");
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut stderr);
    }
    assert!(
        wait_until(|| !running(&SLEEP_CTRL_C), Duration::from_secs(10)),
        "sleep survived\n{stderr}"
    );
    let stored = session_text(&sb, &cfg, &session_id(&stderr));
    assert!(stored.contains("[Background task 'bg' failed]"), "{stored}");
}

/// `spawn` and `shell` run without asking, so a background task can work while the chat
/// waits at its prompt.
const UNASKED: &str = "security:\n  tool_policies:\n    spawn:\n      approval: never\n    shell:\n      approval: never\n";

/// `tackle chat` against the model on `port`, in a tmux session named after `tag`; the pane
/// stays a while after chat exits so its last screen can be read.
fn start_chat(sb: &Sandbox, port: u16, tag: &str) -> Option<(Tmux, std::path::PathBuf)> {
    let cfg = config(sb, port);
    let yaml = std::fs::read_to_string(&cfg).unwrap_or_default();
    std::fs::write(&cfg, format!("{yaml}{UNASKED}")).expect("write config");
    let command = format!(
        "env -i PATH={} HOME={} {} --config {} --workspace {} chat; sleep 30",
        shell_quote(&std::env::var("PATH").unwrap_or_default()),
        shell_quote(&sb.home().to_string_lossy()),
        shell_quote(&common::tackle_bin().to_string_lossy()),
        shell_quote(&cfg.to_string_lossy()),
        shell_quote(&sb.workspace().to_string_lossy()),
    );
    let tmux = Tmux::start_sized(
        &format!("tackle-tree-{tag}-{}", std::process::id()),
        &command,
        160,
    )?;
    tmux.wait_for("you>", 1);
    Some((tmux, cfg))
}

fn slow_job(req: &Value) -> Value {
    if has_tool_result(req) {
        text("background answer 42")
    } else {
        call("shell", json!({"command": "sleep 3; echo slow-done"}))
    }
}

const SLEEP_CHAT: [&str; 2] = ["sleep", "33.119"];

fn sleeper_chat(req: &Value) -> Value {
    if has_tool_result(req) {
        text("slept")
    } else {
        call("shell", json!({"command": "exec sleep 33.119"}))
    }
}

#[test]
fn chat_waits_at_ctrl_d_for_a_background_task_whose_answer_lands_in_the_session() {
    let port = model(|req| root_or(req, slow_job));
    let sb = Sandbox::new();
    let Some((tmux, cfg)) = start_chat(&sb, port, "wait") else {
        return;
    };
    tmux.send("go");
    tmux.wait_for("started it", 1);
    tmux.key("C-d");
    let screen = tmux.wait_for("resume with tackle chat --session", 1);
    let waited = screen
        .find("waiting for 1 background task ('bg')")
        .unwrap_or_else(|| panic!("the chat says it waits:\n{screen}"));
    let finished = screen
        .find("background tasks finished")
        .unwrap_or_else(|| panic!("and that the task finished:\n{screen}"));
    assert!(waited < finished, "{screen}");
    let id = session_id(&screen);
    let stored = session_text(&sb, &cfg, &id);
    assert!(
        stored.contains("[Background task 'bg' completed]")
            && stored.contains("background answer 42"),
        "{stored}"
    );
}

#[test]
fn ctrl_c_while_chat_waits_cancels_the_background_task_and_says_so() {
    let port = model(|req| root_or(req, sleeper_chat));
    let sb = Sandbox::new();
    let Some((tmux, cfg)) = start_chat(&sb, port, "cancel") else {
        return;
    };
    tmux.send("go");
    tmux.wait_for("started it", 1);
    assert!(
        wait_until(|| running(&SLEEP_CHAT), Duration::from_secs(60)),
        "the background task's sleep never started"
    );
    tmux.send("/exit");
    tmux.wait_for("waiting for 1 background task", 1);
    assert!(running(&SLEEP_CHAT), "still running while the chat waits");
    tmux.key("C-c");
    let screen = tmux.wait_for("resume with tackle chat --session", 1);
    assert!(
        screen.contains("background task 'bg'") && screen.contains("cancelled (Ctrl-C)"),
        "{screen}"
    );
    assert!(
        wait_until(|| !running(&SLEEP_CHAT), Duration::from_secs(10)),
        "sleep survived\n{screen}"
    );
    let id = session_id(&screen);
    let stored = session_text(&sb, &cfg, &id);
    assert!(stored.contains("[Background task 'bg' failed]"), "{stored}");
}
