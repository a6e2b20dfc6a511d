//! How `run` and `chat` are told what to do: the task (flag, positional, stdin), the backend and
//! model (`--backend`, `--model`, and the environment when nothing is configured), which
//! session to resume (an unknown id is an error, a resumed one shows where it left off), and
//! what a failed run leaves behind (nothing) — end to end against fakellm.

mod common;

use common::{run, FakeLlm, Run, Sandbox};
use serde_json::Value;
use std::io::Write;
use std::process::{Command, Stdio};

const HELLO: &str =
    "rules:\n  - name: hello\n    when: {messages_contain: \"hello\"}\n    respond: {content: \"Hi there, friend.\"}\n";

fn with_stdin(mut cmd: Command, input: &str) -> Run {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = std::time::Instant::now();
    let mut child = cmd.spawn().expect("spawn tackle");
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(input.as_bytes());
    }
    let out = child.wait_with_output().expect("wait for tackle");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        elapsed: started.elapsed(),
    }
}

fn session_id(r: &Run) -> String {
    r.stderr
        .lines()
        .find_map(|l| l.strip_prefix("session: "))
        .and_then(|rest| rest.split_whitespace().next())
        .map(str::to_string)
        .unwrap_or_else(|| panic!("no session id printed\n{r}"))
}

fn session_ids(sb: &Sandbox, config: &std::path::Path) -> Vec<String> {
    let r = run(sb.tackle(config, &["sessions", "list", "--json"]));
    assert_eq!(r.code, 0, "{r}");
    let list: Value = serde_json::from_str(&r.stdout).expect("sessions JSON");
    list.as_array()
        .expect("an array")
        .iter()
        .filter_map(|s| s["id"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn the_task_can_be_positional_or_read_from_stdin() {
    let Some(llm) = FakeLlm::start(HELLO) else {
        return;
    };
    let sb = Sandbox::new();
    let config = sb.config(&llm.backend_yaml("openai", true));
    let r = run(sb.tackle(&config, &["run", "hello positional"]));
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stdout.contains("Hi there, friend."), "{r}");

    let r = with_stdin(
        sb.tackle(&config, &["run", "-m", "-"]),
        "say hello from stdin\n",
    );
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stdout.contains("Hi there, friend."), "{r}");
    let id = session_id(&r);
    let shown = run(sb.tackle(&config, &["sessions", "show", &id]));
    assert!(shown.stdout.contains("say hello from stdin"), "{shown}");
    assert!(!shown.stdout.contains("user:\n    -\n"), "{shown}");

    let r = with_stdin(sb.tackle(&config, &["run", "-"]), "hello again\n");
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stdout.contains("Hi there, friend."), "{r}");

    let r = with_stdin(sb.tackle(&config, &["run", "-m", "-"]), "  \n");
    assert_eq!(r.code, 2, "an empty task is a usage error\n{r}");
    let r = run(sb.tackle(&config, &["run"]));
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("-m -"), "says how to give the task\n{r}");
}

#[test]
fn model_and_backend_flags_choose_what_answers() {
    let Some(llm) = FakeLlm::start(concat!(
        "rules:\n",
        "  - name: picked\n    when: {model_matches: \"picked-model\"}\n    respond: {content: \"answered by picked-model\"}\n",
        "  - name: other\n    respond: {content: \"answered by the default model\"}\n",
    )) else {
        return;
    };
    let sb = Sandbox::new();
    let yaml = format!(
        "{}  - name: second\n    type: openai\n    api_base: http://127.0.0.1:{}/v1\n    api_key: k\n    models:\n      - name: picked-model\n",
        llm.backend_yaml("openai", true),
        llm.port
    );
    let config = sb.config(&yaml);
    let r = run(sb.tackle(&config, &["run", "hi"]));
    assert!(r.stdout.contains("by the default model"), "{r}");
    let r = run(sb.tackle(&config, &["run", "--model", "picked-model", "hi"]));
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stdout.contains("answered by picked-model"), "{r}");
    let r = run(sb.tackle(&config, &["run", "--backend", "second", "hi"]));
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stdout.contains("answered by picked-model"), "{r}");

    let r = run(sb.tackle(&config, &["run", "--backend", "secnd", "hi"]));
    assert_eq!(r.code, 6, "not found (README, exit codes)\n{r}");
    assert!(r.stderr.contains("did you mean second"), "{r}");
    assert!(
        session_ids(&sb, &config).len() == 3,
        "no session for a usage error"
    );
}

#[test]
fn an_environment_backend_honours_openai_base_url_and_any_model() {
    let Some(llm) = FakeLlm::start(concat!(
        "rules:\n",
        "  - name: picked\n    when: {model_matches: \"my-local-model\"}\n    respond: {content: \"answered by my-local-model\"}\n",
        "  - name: other\n    respond: {content: \"answered by the suggested model\"}\n",
    )) else {
        return;
    };
    let sb = Sandbox::new();
    // No `backends:`: the backend comes from the environment.
    let config = sb.config("");
    let base = format!("http://127.0.0.1:{}/v1", llm.port);
    let mut cmd = sb.tackle(&config, &["run", "hi"]);
    cmd.env("OPENAI_API_KEY", "sk-test-not-secret")
        .env("OPENAI_BASE_URL", &base);
    let r = run(cmd);
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stdout.contains("answered by the suggested model"), "{r}");

    let mut cmd = sb.tackle(&config, &["run", "--model", "my-local-model", "hi"]);
    cmd.env("OPENAI_API_KEY", "sk-test-not-secret")
        .env("OPENAI_BASE_URL", &base);
    let r = run(cmd);
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stdout.contains("answered by my-local-model"), "{r}");
}

#[test]
fn chat_with_an_unknown_session_is_an_error_with_the_nearest_ids() {
    let Some(llm) = FakeLlm::start(HELLO) else {
        return;
    };
    let sb = Sandbox::new();
    let config = sb.config(&llm.backend_yaml("openai", true));
    let r = run(sb.tackle(&config, &["run", "--session", "project-alpha", "hello"]));
    assert_eq!(r.code, 0, "{r}");

    let r = with_stdin(
        sb.tackle(&config, &["chat", "--session", "project-alpa"]),
        "/quit\n",
    );
    assert_eq!(r.code, 6, "not found (README, exit codes)\n{r}");
    assert!(r.stderr.contains("did you mean project-alpha"), "{r}");
    assert!(r.stderr.contains("--new"), "{r}");
    assert!(
        !session_ids(&sb, &config).contains(&"project-alpa".to_string()),
        "the typo made no session"
    );

    let r = with_stdin(
        sb.tackle(&config, &["chat", "--session", "project-beta", "--new"]),
        "/quit\n",
    );
    assert_eq!(r.code, 0, "{r}");
    assert!(session_ids(&sb, &config).contains(&"project-beta".to_string()));
}

#[test]
fn resuming_a_chat_shows_the_last_exchanges() {
    let Some(llm) = FakeLlm::start(HELLO) else {
        return;
    };
    let sb = Sandbox::new();
    let config = sb.config(&llm.backend_yaml("openai", true));
    let r = run(sb.tackle(&config, &["run", "hello, remember the blue door"]));
    let id = session_id(&r);
    let r = with_stdin(sb.tackle(&config, &["chat", "--session", &id]), "/quit\n");
    assert_eq!(r.code, 0, "{r}");
    assert!(
        r.stderr.contains("you> hello, remember the blue door"),
        "{r}"
    );
    assert!(r.stderr.contains("agent> Hi there, friend."), "{r}");
}

#[test]
fn a_run_that_fails_before_any_answer_leaves_no_session() {
    let Some(llm) = FakeLlm::start(
        "rules:\n  - name: broken\n    respond: {status: 400, error: \"bad request\"}\n",
    ) else {
        return;
    };
    let sb = Sandbox::new();
    let config = sb.config(&llm.backend_yaml("openai", false));
    for _ in 0..3 {
        let r = run(sb.tackle(&config, &["run", "hello"]));
        assert_ne!(r.code, 0, "{r}");
        assert!(!r.stderr.contains("resume with"), "nothing to resume\n{r}");
    }
    assert_eq!(session_ids(&sb, &config), Vec::<String>::new());

    // A session the person named and that already holds a conversation is kept.
    let ok = FakeLlm::start(HELLO).expect("fakellm");
    let config_ok = sb.config(&ok.backend_yaml("openai", false));
    let r = run(sb.tackle(&config_ok, &["run", "--session", "keep-me", "hello"]));
    assert_eq!(r.code, 0, "{r}");
    let config = sb.config(&llm.backend_yaml("openai", false));
    let r = run(sb.tackle(&config, &["run", "--session", "keep-me", "hello"]));
    assert_ne!(r.code, 0, "{r}");
    assert_eq!(session_ids(&sb, &config), vec!["keep-me".to_string()]);
}

#[test]
fn sessions_list_has_a_header_a_limit_and_prune_removes_old_ones() {
    let Some(llm) = FakeLlm::start(HELLO) else {
        return;
    };
    let sb = Sandbox::new();
    let config = sb.config(&llm.backend_yaml("openai", false));
    for i in 0..3 {
        let r = run(sb.tackle(&config, &["run", "--session", &format!("s{i}"), "hello"]));
        assert_eq!(r.code, 0, "{r}");
    }
    let r = run(sb.tackle(&config, &["sessions", "list", "--limit", "2"]));
    assert_eq!(r.code, 0, "{r}");
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert!(lines[0].starts_with("ID"), "a header first\n{r}");
    assert!(lines[0].contains("MESSAGES"), "{r}");
    assert_eq!(lines.len(), 3, "header and two sessions\n{r}");
    assert!(lines[1].starts_with("s2"), "newest first\n{r}");
    assert!(lines[2].starts_with("s1"), "{r}");
    assert!(r.stderr.contains("1 older not shown"), "{r}");

    let r = run(sb.tackle(&config, &["sessions", "prune", "--older-than", "1h"]));
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(session_ids(&sb, &config).len(), 3, "none is an hour old");
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let r = run(sb.tackle(&config, &["sessions", "prune", "--older-than", "1s"]));
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stderr.contains("removed 3 sessions"), "{r}");
    assert!(session_ids(&sb, &config).is_empty());
    let r = run(sb.tackle(&config, &["sessions", "prune", "--older-than", "soon"]));
    assert_eq!(r.code, 2, "{r}");
}
