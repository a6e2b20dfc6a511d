//! A configured MCP server's `sampling/createMessage`: refused unless its config says
//! `sampling: ask`; then put to the person in the terminal before the model sees it, and the
//! model's answer shown before the server gets it. Without a terminal it is refused and the
//! capability is not declared. The server is tests/mcp_client/sample_server.py (official
//! Python SDK); the model is fakellm on 127.0.0.1.

mod common;

use common::tmux::{shell_quote, Tmux};
use common::{repo_root, run, FakeLlm, Sandbox};
use serde_json::Value;
use std::path::PathBuf;

const RULES: &str = "rules:\n  - name: colour\n    when: {messages_contain: \"sampling check\"}\n    respond: {content: \"Teal\"}\n";

fn config(sb: &Sandbox, llm: &FakeLlm, sampling: Option<&str>) -> Option<PathBuf> {
    let python = repo_root().join(".ci/venv/bin/python");
    if !python.exists() {
        eprintln!("SKIP: the MCP Python SDK is not installed; run .ci/mcp-peers.sh");
        return None;
    }
    let script = repo_root().join("tests/mcp_client/sample_server.py");
    let sampling = sampling
        .map(|s| format!("    sampling: {s}\n"))
        .unwrap_or_default();
    Some(sb.config(&format!(
        "{}mcp_servers:\n  sample:\n    command: {}\n    args: [{}]\n{sampling}",
        llm.backend_yaml("openai", false),
        python.display(),
        serde_json::to_string(&script.display().to_string()).expect("json")
    )))
}

/// The tool's own answer (a JSON text) from `tools call … --json` output.
fn tool_answer(stdout: &str) -> Value {
    let out: Value = serde_json::from_str(stdout.trim()).expect("json output");
    let content = out["content"].as_str().expect("content");
    serde_json::from_str(content).unwrap_or_else(|_| panic!("tool answer: {content}"))
}

fn model_requests(llm: &FakeLlm) -> u64 {
    let stats: Value =
        serde_json::from_str(&llm.get("/_fakellm/stats").expect("stats")).expect("stats json");
    stats["total_requests"].as_u64().expect("total_requests")
}

fn call(sb: &Sandbox, cfg: &std::path::Path, tool: &str) -> Value {
    let r = run(sb.tackle(cfg, &["tools", "call", tool, "{}", "--yes", "--json"]));
    assert_eq!(r.code, 0, "{r}");
    tool_answer(&r.stdout)
}

#[test]
fn sampling_is_refused_unless_the_config_asks_for_it_and_someone_can_approve() {
    let Some(llm) = FakeLlm::start(RULES) else {
        return;
    };
    for (sampling, why) in [
        (None, "sampling is off for this server"),
        (Some("deny"), "sampling is off for this server"),
        (Some("ask"), "nobody can be asked here"),
    ] {
        let sb = Sandbox::new();
        let Some(cfg) = config(&sb, &llm, sampling) else {
            return;
        };
        let answer = call(&sb, &cfg, "sample__ask_model");
        let error = answer["error"].as_str().unwrap_or_default();
        assert!(error.contains(why), "{sampling:?}: {answer}");
        assert_eq!(answer["text"], Value::Null, "{answer}");
        let caps = call(&sb, &cfg, "sample__capabilities");
        assert_eq!(caps["sampling"], false, "{sampling:?}: {caps}");
    }
    assert_eq!(model_requests(&llm), 0, "the model was asked");
}

/// `tackle tools call sample__ask_model {} --yes --json` in a terminal.
fn in_terminal(sb: &Sandbox, cfg: &std::path::Path, tag: &str) -> Option<Tmux> {
    let command = format!(
        "env -i PATH={} HOME={} {} --config {} --workspace {} tools call sample__ask_model '{{}}' --yes --json; echo EXIT=$?; sleep 30",
        shell_quote(&std::env::var("PATH").unwrap_or_default()),
        shell_quote(&sb.home().to_string_lossy()),
        shell_quote(&common::tackle_bin().to_string_lossy()),
        shell_quote(&cfg.to_string_lossy()),
        shell_quote(&sb.workspace().to_string_lossy()),
    );
    Tmux::start(
        &format!("tackle-sample-{tag}-{}", std::process::id()),
        &command,
    )
}

fn json_line(screen: &str) -> Value {
    let line = screen
        .lines()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("no JSON output:\n{screen}"));
    tool_answer(line)
}

#[test]
fn in_a_terminal_the_person_approves_the_request_and_then_the_answer() {
    let Some(llm) = FakeLlm::start(RULES) else {
        return;
    };
    let sb = Sandbox::new();
    let Some(cfg) = config(&sb, &llm, Some("ask")) else {
        return;
    };
    let Some(tmux) = in_terminal(&sb, &cfg, "yes") else {
        return;
    };
    let screen = tmux.wait_for("Let the model answer it? [y/N]", 1);
    assert!(
        screen.contains("MCP server `sample` asks the model to answer"),
        "{screen}"
    );
    assert!(screen.contains("Answer with one word."), "{screen}");
    assert!(
        screen.contains("Name a colour for the sampling check."),
        "{screen}"
    );
    assert!(
        screen.contains("up to 4096 tokens"),
        "the server's 50000 is capped:\n{screen}"
    );
    assert_eq!(model_requests(&llm), 0, "asked before approval");
    tmux.send("y");
    let screen = tmux.wait_for("Send this answer to `sample`? [y/N]", 1);
    assert!(screen.contains("Teal"), "{screen}");
    tmux.send("y");
    let screen = tmux.wait_for("EXIT=", 1);
    assert!(screen.contains("EXIT=0"), "{screen}");
    let answer = json_line(&screen);
    assert_eq!(answer["text"], "Teal", "{screen}");
    assert_eq!(answer["model"], "fake-model", "{screen}");
    assert_eq!(answer["role"], "assistant", "{screen}");
    assert_eq!(answer["stop"], "endTurn", "{screen}");
    assert_eq!(model_requests(&llm), 1);
}

#[test]
fn in_a_terminal_a_no_keeps_the_model_out_and_a_second_no_keeps_the_answer_back() {
    let Some(llm) = FakeLlm::start(RULES) else {
        return;
    };
    let sb = Sandbox::new();
    let Some(cfg) = config(&sb, &llm, Some("ask")) else {
        return;
    };
    let Some(tmux) = in_terminal(&sb, &cfg, "no") else {
        return;
    };
    tmux.wait_for("Let the model answer it? [y/N]", 1);
    tmux.send("");
    let screen = tmux.wait_for("EXIT=", 1);
    assert!(screen.contains("the model was not asked"), "{screen}");
    let answer = json_line(&screen);
    assert!(
        answer["error"]
            .as_str()
            .unwrap_or_default()
            .contains("rejected"),
        "{screen}"
    );
    assert_eq!(model_requests(&llm), 0);
    drop(tmux);

    let Some(tmux) = in_terminal(&sb, &cfg, "later") else {
        return;
    };
    tmux.wait_for("Let the model answer it? [y/N]", 1);
    tmux.send("yes");
    tmux.wait_for("Send this answer to `sample`? [y/N]", 1);
    tmux.send("n");
    let screen = tmux.wait_for("EXIT=", 1);
    assert!(screen.contains("nothing was sent"), "{screen}");
    let answer = json_line(&screen);
    assert_eq!(answer["text"], Value::Null, "{screen}");
    assert!(
        answer["error"]
            .as_str()
            .unwrap_or_default()
            .contains("rejected"),
        "{screen}"
    );
    assert_eq!(model_requests(&llm), 1);
}
