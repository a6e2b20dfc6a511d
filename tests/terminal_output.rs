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

/// The tokens a backend reported are summed over the run's model requests and shown once at
/// its end; `-q` and `--json` (which has them per request) leave the line out.
#[test]
fn a_run_ends_with_the_tokens_the_backend_reported() {
    let Some(llm) = FakeLlm::start(concat!(
        "rules:\n",
        "  - name: call\n    when: {turn: 1}\n    respond:\n      tool_calls:\n",
        "        - {name: shell, arguments: {command: \"echo hi\"}}\n",
        "  - name: done\n    when: {turn: 2}\n    respond: {content: \"all done here\"}\n",
    )) else {
        return;
    };
    let sb = Sandbox::new();
    // Non-streamed OpenAI answers carry `usage` with every response.
    let config = sb.config(&llm.backend_yaml("openai", false));
    let r = run(sb.tackle(&config, &["run", "--yes", "say hi"]));
    assert_eq!(r.code, 0, "{r}");
    let line = r
        .stderr
        .lines()
        .find(|l| l.starts_with("tokens: "))
        .unwrap_or_else(|| panic!("no tokens line: {r}"));
    assert!(line.ends_with("(2 model requests)"), "{line}");
    let counts: Vec<u64> = line
        .trim_start_matches("tokens: ")
        .split(|c: char| !c.is_ascii_digit() && c != ',')
        .filter(|w| !w.is_empty() && w.chars().any(|c| c.is_ascii_digit()))
        .map(|w| w.replace(',', "").parse().unwrap())
        .collect();
    assert_eq!(counts.len(), 3, "{line}");
    assert!(counts[0] > 0 && counts[1] > 0, "{line}");

    let quiet = run(sb.tackle(&config, &["run", "-q", "--yes", "say hi"]));
    assert_eq!(quiet.code, 0, "{quiet}");
    assert!(!quiet.stderr.contains("tokens: "), "{quiet}");
    let json = run(sb.tackle(&config, &["run", "--json", "--yes", "say hi"]));
    assert!(!json.stderr.contains("tokens: "), "{json}");
    assert!(json.stdout.contains("\"usage\""), "{json}");
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
