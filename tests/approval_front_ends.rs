//! The terminal prompt and MCP elicitation are front ends of the one approval queue
//! (docs/decisions/0030-one-approval-queue.md, "Terminal and MCP prompts"): while a prompt
//! waits, `tackle approvals` in another process sees the call and may answer it; the first
//! answer wins, wherever it was given, and the audit log says who gave it.

mod common;

use common::tmux::{shell_quote, Tmux};
use common::{repo_root, run, FakeLlm, Sandbox};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The model makes `marker.txt` with its first answer, ends the turn once the result is in
/// (made or refused), and answers the next message in words.
const RULES: &str = concat!(
    "rules:\n",
    "  - name: touch\n    when: {turn: 1}\n    respond:\n      tool_calls:\n        - {name: shell, arguments: {command: \"touch marker.txt && echo made-file\"}}\n",
    "  - name: made\n    when: {turn: 2}\n    respond: {content: \"first turn over\"}\n",
    "  - name: again\n    when: {turn: 3}\n    respond: {content: \"second turn answered\"}\n",
);

const QUESTION: &str = "Allow? [y] once  [n] deny  [a] always for this session, then Enter:";

/// `tackle chat` in a terminal; the pane stays a while after it exits.
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
        &format!("tackle-front-{tag}-{}", std::process::id()),
        &command,
        160,
    )?;
    tmux.wait_for("you>", 1);
    Some(tmux)
}

fn approvals(sb: &Sandbox, config: &Path, args: &[&str]) -> Vec<Value> {
    let r = run(sb.tackle(config, args));
    assert_eq!(r.code, 0, "{r}");
    serde_json::from_str::<Value>(&r.stdout)
        .unwrap_or_else(|e| panic!("{e}\n{r}"))
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The one pending approval, once it is there.
fn pending(sb: &Sandbox, config: &Path) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let list = approvals(sb, config, &["approvals", "list", "--json"]);
        if let Some(a) = list.first() {
            assert_eq!(list.len(), 1, "{list:?}");
            return a.clone();
        }
        assert!(Instant::now() < deadline, "nothing was queued");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The audit log's approver of the `shell` call with `outcome`.
fn audited_approver(sb: &Sandbox, config: &Path, outcome: &str) -> String {
    let audit = approvals(sb, config, &["audit", "--tool", "shell", "--json"]);
    audit
        .iter()
        .find(|r| r["outcome"] == outcome)
        .and_then(|r| r["approver"].as_str())
        .unwrap_or_else(|| panic!("no `{outcome}` shell call in {audit:?}"))
        .to_string()
}

#[test]
fn a_terminal_prompt_is_queued_and_an_answer_from_another_process_ends_it() {
    let Some(llm) = FakeLlm::start(RULES) else {
        return;
    };
    let sb = Sandbox::new();
    let config = sb.config(&llm.backend_yaml("openai", true));
    let Some(tmux) = chat(&sb, &config, "queue") else {
        return;
    };
    tmux.send("make the marker");
    tmux.wait_for(QUESTION, 1);
    // While the prompt is up, another process sees the call, with the prompt's preview.
    let entry = pending(&sb, &config);
    assert_eq!(entry["tool"], "shell", "{entry}");
    assert_eq!(
        entry["approvers"],
        json!(["terminal", "approve"]),
        "{entry}"
    );
    let preview = entry["preview"].as_str().unwrap_or_default();
    assert!(preview.contains("touch marker.txt"), "{entry}");
    assert!(preview.contains("if allowed, it runs with:"), "{entry}");
    assert!(!sb.workspace().join("marker.txt").exists());

    let id = entry["id"].as_str().unwrap_or_default();
    let r = run(sb.tackle(&config, &["approvals", "allow", id]));
    assert_eq!(r.code, 0, "{r}");
    let screen = tmux.wait_for("first turn over", 1);
    assert!(
        screen.contains("answered elsewhere: allowed by cli:"),
        "the prompt says who answered:\n{screen}"
    );
    assert!(sb.workspace().join("marker.txt").exists(), "{screen}");
    // The question's line was ended: the note is on a line of its own.
    assert!(
        screen
            .lines()
            .any(|l| l.trim_end().starts_with("answered elsewhere:")),
        "{screen}"
    );
    // Stdin is the chat's again: the next message is read and answered.
    tmux.send("and now?");
    let screen = tmux.wait_for("second turn answered", 1);
    assert_eq!(screen.matches(QUESTION).count(), 1, "{screen}");
    tmux.send("/quit");
    let approver = audited_approver(&sb, &config, "ok");
    assert!(approver.starts_with("queue:cli:"), "{approver}");
}

#[test]
fn tackle_runs_prompt_is_queued_too_and_the_run_ends_with_the_queues_answer() {
    let Some(llm) = FakeLlm::start(RULES) else {
        return;
    };
    let sb = Sandbox::new();
    let config = sb.config(&llm.backend_yaml("openai", true));
    let command = format!(
        "env -i PATH={} HOME={} {} --config {} --workspace {} run 'make the marker'; echo EXIT=$?; sleep 30",
        shell_quote(&std::env::var("PATH").unwrap_or_default()),
        shell_quote(&sb.home().to_string_lossy()),
        shell_quote(&common::tackle_bin().to_string_lossy()),
        shell_quote(&config.to_string_lossy()),
        shell_quote(&sb.workspace().to_string_lossy()),
    );
    let Some(tmux) = Tmux::start_sized(
        &format!("tackle-front-run-{}", std::process::id()),
        &command,
        160,
    ) else {
        return;
    };
    tmux.wait_for(QUESTION, 1);
    let entry = pending(&sb, &config);
    let id = entry["id"].as_str().unwrap_or_default();
    let r = run(sb.tackle(&config, &["approvals", "deny", id]));
    assert_eq!(r.code, 0, "{r}");
    let screen = tmux.wait_for("EXIT=", 1);
    assert!(
        screen.contains("answered elsewhere: denied by cli:"),
        "{screen}"
    );
    // A no from the queue is a person's no: exit 5 (declined), nothing made.
    assert!(screen.contains("EXIT=5"), "{screen}");
    assert!(!sb.workspace().join("marker.txt").exists());
    let approver = audited_approver(&sb, &config, "denied");
    assert!(approver.starts_with("queue:cli:"), "{approver}");
}

#[test]
fn a_no_at_the_prompt_is_recorded_and_a_later_answer_is_told_it_lost() {
    let Some(llm) = FakeLlm::start(RULES) else {
        return;
    };
    let sb = Sandbox::new();
    let config = sb.config(&llm.backend_yaml("openai", true));
    let Some(tmux) = chat(&sb, &config, "deny") else {
        return;
    };
    tmux.send("make the marker");
    tmux.wait_for(QUESTION, 1);
    let id = pending(&sb, &config)["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    tmux.send("n");
    tmux.wait_for("first turn over", 1);
    tmux.send("/quit");
    assert!(!sb.workspace().join("marker.txt").exists());

    let all = approvals(&sb, &config, &["approvals", "list", "--all", "--json"]);
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(all[0]["id"], id.as_str(), "{all:?}");
    assert_eq!(all[0]["status"], "denied", "{all:?}");
    assert_eq!(all[0]["answered_by"], "terminal", "{all:?}");

    let late = run(sb.tackle(&config, &["approvals", "allow", &id]));
    assert_eq!(late.code, 1, "{late}");
    assert!(
        late.stderr.contains("already answered: denied by terminal"),
        "{late}"
    );
    assert!(!sb.workspace().join("marker.txt").exists());
    assert_eq!(audited_approver(&sb, &config, "denied"), "tty");
}

#[test]
fn ctrl_c_at_the_prompt_leaves_the_queued_approval_cancelled_not_pending() {
    let Some(llm) = FakeLlm::start(RULES) else {
        return;
    };
    let sb = Sandbox::new();
    let config = sb.config(&llm.backend_yaml("openai", true));
    let Some(tmux) = chat(&sb, &config, "ctrlc") else {
        return;
    };
    tmux.send("make the marker");
    tmux.wait_for(QUESTION, 1);
    let id = pending(&sb, &config)["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    tmux.key("C-c");
    tmux.wait_for("not approved: Ctrl-C stops the turn", 1);
    let deadline = Instant::now() + Duration::from_secs(10);
    let all = loop {
        let all = approvals(&sb, &config, &["approvals", "list", "--all", "--json"]);
        if all.first().is_some_and(|a| a["status"] != "pending") || Instant::now() > deadline {
            break all;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    tmux.send("/quit");
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(all[0]["id"], id.as_str(), "{all:?}");
    assert_eq!(all[0]["status"], "cancelled", "{all:?}");
    let late = run(sb.tackle(&config, &["approvals", "allow", &id]));
    assert_eq!(late.code, 1, "{late}");
    assert!(!sb.workspace().join("marker.txt").exists());
}

#[test]
fn an_mcp_clients_unanswered_form_is_answered_from_the_queue_and_withdrawn() {
    let python = repo_root().join(".ci/venv/bin/python");
    if !python.exists() {
        eprintln!("SKIP: the MCP Python SDK is not installed; run .ci/mcp-peers.sh");
        return;
    }
    let sb = Sandbox::new();
    let config = sb.config("");
    let marker = sb.workspace().join("marker.txt");
    let steps = json!([
        ["call", "shell", {"command": format!("touch {}", marker.display())}],
        ["cancelled"]
    ]);
    // The client declares elicitation and never answers a form.
    let client = Command::new(&python)
        .arg(repo_root().join("tests/mcp_client/client.py"))
        .args(["--elicit", "never"])
        .arg(steps.to_string())
        .arg("--")
        .arg(common::tackle_bin())
        .arg("--config")
        .arg(&config)
        .arg("--workspace")
        .arg(sb.workspace())
        .args(["mcp", "serve"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the MCP client");
    let entry = pending(&sb, &config);
    assert_eq!(entry["approvers"], json!(["mcp", "approve"]), "{entry}");
    assert!(
        entry["preview"]
            .as_str()
            .is_some_and(|p| p.contains("marker.txt")),
        "{entry}"
    );
    assert!(!marker.exists(), "it ran before an answer");
    let id = entry["id"].as_str().unwrap_or_default();
    let r = run(sb.tackle(&config, &["approvals", "allow", id]));
    assert_eq!(r.code, 0, "{r}");

    let out = client.wait_with_output().expect("the client ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let results: Value = serde_json::from_slice(&out.stdout).expect("the client's JSON");
    assert_eq!(results[0]["is_error"], false, "{results}\n{stderr}");
    assert!(marker.exists(), "the approved call ran");
    // The client's open form was withdrawn once the queue had answered.
    assert_eq!(results[1]["cancelled"], 1, "{results}");
    let approver = audited_approver(&sb, &config, "ok");
    assert!(approver.starts_with("queue:cli:"), "{approver}");
}
