//! What `run` and `chat` write when stderr is not a terminal (a pipe, a log): no spinner, no
//! carriage returns, no colours; and the chat's commands.

mod common;

use common::{run, FakeLlm, Sandbox};
use std::io::Write;
use std::process::Stdio;

#[test]
fn a_long_call_draws_no_status_line_into_a_pipe() {
    let Some(llm) = FakeLlm::start(concat!(
        "rules:\n",
        "  - name: slow\n    when: {turn: 1}\n    respond:\n      tool_calls:\n",
        "        - {name: shell, arguments: {command: \"sleep 2; echo slept\"}}\n",
        "  - name: done\n    when: {turn: 2}\n    respond: {content: \"woke up\"}\n",
    )) else {
        return;
    };
    let sb = Sandbox::new();
    let config = sb.config(&llm.backend_yaml("openai", true));
    let r = run(sb.tackle(&config, &["run", "--yes", "take a nap"]));
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stdout.contains("woke up"), "{r}");
    assert!(r.stderr.contains("✓ shell"), "{r}");
    assert!(!r.stderr.contains('\r'), "{:?}", r.stderr);
    assert!(!r.stderr.contains('\u{1b}'), "{:?}", r.stderr);
    assert!(!r.stderr.contains("running"), "{r}");
}

#[test]
fn chat_commands_list_switch_and_show_without_colours_in_a_pipe() {
    let Some(llm) = FakeLlm::start("rules: []\n") else {
        return;
    };
    let sb = Sandbox::new();
    let config = sb.config(&llm.backend_yaml("openai", true));
    let mut cmd = sb.tackle(&config, &["chat"]);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn tackle chat");
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(b"/help\n/model\n/permissions\n/clear\n/quit\n");
    }
    let out = child.wait_with_output().expect("chat ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    for command in [
        "/help",
        "/tools",
        "/permissions",
        "/model",
        "/clear",
        "/compact",
        "/quit",
    ] {
        assert!(
            stderr.lines().any(|l| l.trim_start().starts_with(command)),
            "/help lists {command}:\n{stderr}"
        );
    }
    assert!(stderr.contains("model `fake-model`"), "{stderr}");
    assert!(stderr.contains("backend `fake`"), "{stderr}");
    assert!(
        stderr
            .lines()
            .any(|l| l.contains("shell") && l.contains("always")),
        "/permissions shows each tool's approval:\n{stderr}"
    );
    assert!(stderr.contains("new session"), "{stderr}");
    assert!(!stderr.contains('\u{1b}'), "{stderr:?}");
}
