//! A configured MCP server's `elicitation/create` reaches the person: in a terminal as a form
//! (defaults kept with Enter, answers checked), and without one it is declined, never
//! accepted on anybody's behalf. The capability is declared only where someone can be asked.
//! The server is tests/mcp_client/elicit_server.py, on the official Python SDK.

mod common;

use common::tmux::{shell_quote, Tmux};
use common::{repo_root, run, Sandbox};
use serde_json::Value;
use std::path::PathBuf;

fn config(sb: &Sandbox) -> Option<PathBuf> {
    let python = repo_root().join(".ci/venv/bin/python");
    if !python.exists() {
        eprintln!("SKIP: the MCP Python SDK is not installed; run .ci/mcp-peers.sh");
        return None;
    }
    let script = repo_root().join("tests/mcp_client/elicit_server.py");
    Some(sb.config(&format!(
        "mcp_servers:\n  elicit:\n    command: {}\n    args: [{}]\n",
        python.display(),
        serde_json::to_string(&script.display().to_string()).expect("json")
    )))
}

/// The tool's own answer (a JSON text) from `tools call … --json`.
fn tool_answer(stdout: &str) -> Value {
    let out: Value = serde_json::from_str(stdout).expect("json output");
    let content = out["content"].as_str().expect("content");
    serde_json::from_str(content).unwrap_or_else(|_| panic!("tool answer: {content}"))
}

#[test]
fn without_a_terminal_the_server_is_declined_and_not_told_it_could_ask() {
    let sb = Sandbox::new();
    let Some(cfg) = config(&sb) else {
        return;
    };
    let r = run(sb.tackle(
        &cfg,
        &["tools", "call", "elicit__profile", "{}", "--yes", "--json"],
    ));
    assert_eq!(r.code, 0, "{r}");
    let answer = tool_answer(&r.stdout);
    assert_eq!(answer["action"], "decline", "{r}");
    assert_eq!(answer["data"], Value::Null, "{r}");

    let r = run(sb.tackle(
        &cfg,
        &[
            "tools",
            "call",
            "elicit__capabilities",
            "{}",
            "--yes",
            "--json",
        ],
    ));
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(tool_answer(&r.stdout)["elicitation"], false, "{r}");
}

/// `tackle tools call TOOL {} --yes --json` in a terminal; the pane stays a while after.
fn in_terminal(sb: &Sandbox, cfg: &std::path::Path, tool: &str, tag: &str) -> Option<Tmux> {
    let command = format!(
        "env -i PATH={} HOME={} {} --config {} --workspace {} tools call {tool} '{{}}' --yes --json; echo EXIT=$?; sleep 30",
        shell_quote(&std::env::var("PATH").unwrap_or_default()),
        shell_quote(&sb.home().to_string_lossy()),
        shell_quote(&common::tackle_bin().to_string_lossy()),
        shell_quote(&cfg.to_string_lossy()),
        shell_quote(&sb.workspace().to_string_lossy()),
    );
    Tmux::start(
        &format!("tackle-elicit-{tag}-{}", std::process::id()),
        &command,
    )
}

#[test]
fn in_a_terminal_the_form_is_asked_field_by_field_and_its_answers_sent() {
    let sb = Sandbox::new();
    let Some(cfg) = config(&sb) else {
        return;
    };
    let Some(tmux) = in_terminal(&sb, &cfg, "elicit__profile", "form") else {
        return;
    };
    // Fields come in the order the server declares them: name (required), colour (default
    // green), count (default 2).
    let screen = tmux.wait_for("MCP server `elicit` asks:", 1);
    assert!(screen.contains("Tell me about yourself"), "{screen}");
    let screen = tmux.wait_for("Name (required)", 1);
    assert!(!screen.contains("Colour"), "name is asked first:\n{screen}");
    tmux.send("Grace");
    let screen = tmux.wait_for("Colour", 1);
    assert!(
        screen.contains("1) red") && screen.contains("2) green"),
        "{screen}"
    );
    assert!(
        screen.contains("[green]: "),
        "the default is shown:\n{screen}"
    );
    tmux.send("1");
    tmux.wait_for("[2]: ", 1);
    tmux.send("9");
    tmux.wait_for("enter a whole number from 1 to 5", 1);
    tmux.send("");
    let screen = tmux.wait_for("EXIT=", 1);
    assert!(screen.contains("EXIT=0"), "{screen}");
    assert!(screen.contains("sent to `elicit`"), "{screen}");
    let json_line = screen
        .lines()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("no JSON output:\n{screen}"));
    let answer = tool_answer(json_line);
    assert_eq!(answer["action"], "accept", "{screen}");
    assert_eq!(
        answer["data"],
        serde_json::json!({"colour": "red", "count": 2, "name": "Grace"}),
        "{screen}"
    );
}

#[test]
fn in_a_terminal_an_empty_required_answer_declines_and_the_capability_is_declared() {
    let sb = Sandbox::new();
    let Some(cfg) = config(&sb) else {
        return;
    };
    let Some(tmux) = in_terminal(&sb, &cfg, "elicit__profile", "decline") else {
        return;
    };
    // The required name is asked first; leaving it empty declines at once.
    tmux.wait_for("Name (required)", 1);
    tmux.send("");
    let screen = tmux.wait_for("EXIT=", 1);
    assert!(screen.contains("nothing was sent"), "{screen}");
    assert!(
        !screen.contains("Colour"),
        "nothing more is asked:\n{screen}"
    );
    let json_line = screen
        .lines()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("no JSON output:\n{screen}"));
    assert_eq!(tool_answer(json_line)["action"], "decline", "{screen}");
    drop(tmux);

    let Some(tmux) = in_terminal(&sb, &cfg, "elicit__capabilities", "caps") else {
        return;
    };
    let screen = tmux.wait_for("EXIT=", 1);
    let json_line = screen
        .lines()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("no JSON output:\n{screen}"));
    assert_eq!(tool_answer(json_line)["elicitation"], true, "{screen}");
}
