//! `tackle run` end to end: the real binary against fakellm (both wire formats, streaming and
//! not), real tools through the real dispatcher and host, sessions in a real SQLite file.

mod common;

use common::{run, FakeLlm, Run, Sandbox};
use serde_json::Value;

/// Every wire format × streaming combination.
const FORMATS: [(&str, bool); 4] = [
    ("openai", true),
    ("openai", false),
    ("anthropic", true),
    ("anthropic", false),
];
/// The streaming ones, for the longer scenarios.
const STREAMING: [(&str, bool); 2] = [("openai", true), ("anthropic", true)];
/// fakellm answers streamed requests with 200 whatever the rule's status, so HTTP errors are
/// driven through plain requests here (the providers' own tests cover errors on streams).
const PLAIN: [(&str, bool); 2] = [("openai", false), ("anthropic", false)];

fn tag(kind: &str, stream: bool) -> String {
    format!("{kind}-{}", if stream { "stream" } else { "plain" })
}

/// Run `tackle run -m PROMPT EXTRA…` against `llm` with `extra_yaml` appended to the config.
fn tackle_run(
    sb: &Sandbox,
    llm: &FakeLlm,
    kind: &str,
    stream: bool,
    extra_yaml: &str,
    prompt: &str,
    extra: &[&str],
) -> Run {
    let config = sb.config(&format!("{}{extra_yaml}", llm.backend_yaml(kind, stream)));
    let mut args = vec!["run", "-m", prompt];
    args.extend_from_slice(extra);
    run(sb.tackle(&config, &args))
}

fn session_id(r: &Run) -> String {
    r.stderr
        .lines()
        .find_map(|l| l.strip_prefix("session: "))
        .and_then(|rest| rest.split_whitespace().next())
        .map(str::to_string)
        .unwrap_or_else(|| panic!("no session id printed\n{r}"))
}

#[test]
fn a_final_answer_streams_to_stdout() {
    let Some(llm) = FakeLlm::start(
        "rules:\n  - name: hello\n    when: {messages_contain: \"hello\"}\n    respond: {content: \"Hi there, friend.\"}\n",
    ) else {
        return;
    };
    for (kind, stream) in FORMATS {
        let sb = Sandbox::new();
        let r = tackle_run(
            &sb,
            &llm,
            kind,
            stream,
            "",
            &format!("hello {}", tag(kind, stream)),
            &[],
        );
        assert_eq!(r.code, 0, "{kind} stream={stream}\n{r}");
        assert!(
            r.stdout.contains("Hi there, friend."),
            "{kind} stream={stream}\n{r}"
        );
    }
}

#[test]
fn one_tool_call_runs_and_its_result_goes_back_to_the_model() {
    let Some(llm) = FakeLlm::start(concat!(
        "rules:\n",
        "  - name: answer\n    when: {tool_result_contains: \"42\"}\n    respond: {content: \"The answer is 42.\"}\n",
        "  - name: ask\n    when: {messages_contain: \"compute\"}\n    respond:\n      tool_calls:\n        - {name: calculate, arguments: {expression: \"6*7\"}}\n",
    )) else {
        return;
    };
    for (kind, stream) in FORMATS {
        let sb = Sandbox::new();
        let r = tackle_run(
            &sb,
            &llm,
            kind,
            stream,
            "",
            &format!("compute {}", tag(kind, stream)),
            &[],
        );
        assert_eq!(r.code, 0, "{kind} stream={stream}\n{r}");
        assert!(r.stdout.contains("The answer is 42."), "{r}");
        assert!(r.stderr.contains("→ calculate"), "{r}");
        assert!(r.stderr.contains("✓ calculate"), "{r}");
    }
}

#[test]
fn the_json_event_stream_pairs_started_and_finished_calls() {
    let Some(llm) = FakeLlm::start(concat!(
        "rules:\n",
        "  - name: answer\n    when: {tool_result_contains: \"42\"}\n    respond: {content: \"done\"}\n",
        "  - name: ask\n    when: {messages_contain: \"compute\"}\n    respond:\n      tool_calls:\n        - {name: calculate, arguments: {expression: \"6*7\"}}\n",
    )) else {
        return;
    };
    let sb = Sandbox::new();
    let r = tackle_run(&sb, &llm, "openai", true, "", "compute json", &["--json"]);
    assert_eq!(r.code, 0, "{r}");
    let events: Vec<Value> = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let started: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"] == "tool_call_started")
        .collect();
    let finished: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"] == "tool_call_finished")
        .collect();
    assert_eq!(started.len(), 1, "{r}");
    assert_eq!(finished.len(), 1, "{r}");
    assert_eq!(started[0]["id"], finished[0]["id"]);
    assert_eq!(finished[0]["ok"], true);
    assert_eq!(finished[0]["preview"], "42");
    assert_eq!(
        events.last().map(|e| e["event"].clone()),
        Some(Value::from("done"))
    );
}

#[test]
fn three_concurrent_sleeps_finish_together_with_results_in_order() {
    let Some(llm) = FakeLlm::start(concat!(
        "rules:\n",
        "  - name: answer\n    when: {tool_result_contains: \"C-done\"}\n    respond: {content: \"all three finished\"}\n",
        "  - name: ask\n    when: {messages_contain: \"sleepers\"}\n    respond:\n      tool_calls:\n",
        "        - {name: shell, arguments: {command: \"sleep 1; echo A-done\"}}\n",
        "        - {name: shell, arguments: {command: \"sleep 1; echo B-done\"}}\n",
        "        - {name: shell, arguments: {command: \"sleep 1; echo C-done\"}}\n",
    )) else {
        return;
    };
    for (kind, stream) in STREAMING {
        let sb = Sandbox::new();
        let r = tackle_run(
            &sb,
            &llm,
            kind,
            stream,
            "",
            &format!("sleepers {}", tag(kind, stream)),
            &["--yes"],
        );
        assert_eq!(r.code, 0, "{r}");
        assert!(r.stdout.contains("all three finished"), "{r}");
        assert!(
            r.elapsed.as_secs_f64() < 2.5,
            "three 1 s sleeps took {:?}: not concurrent\n{r}",
            r.elapsed
        );
        assert_results_in_order(&sb, &session_id(&r), &["A-done", "B-done", "C-done"]);
    }
}

/// The stored session holds the assistant's three calls, then their results in the same order,
/// each answering its own call id.
fn assert_results_in_order(sb: &Sandbox, session: &str, markers: &[&str]) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let entries = rt.block_on(async {
        let store = tackle_store::Store::open(&sb.state()).expect("store");
        store
            .entries(&tackle_store::SessionId(session.to_string()))
            .await
            .expect("entries")
    });
    let messages: Vec<tackle_protocol::message::Message> = entries
        .into_iter()
        .filter_map(|e| serde_json::from_value(e.content).ok())
        .collect();
    let call_ids: Vec<String> = messages
        .iter()
        .find(|m| m.tool_calls.len() == markers.len())
        .map(|m| m.tool_calls.iter().map(|c| c.id.clone()).collect())
        .expect("an assistant message with the calls");
    let results: Vec<&tackle_protocol::message::Message> = messages
        .iter()
        .filter(|m| m.tool_call_id.is_some())
        .collect();
    assert_eq!(results.len(), markers.len());
    for ((result, id), marker) in results.iter().zip(&call_ids).zip(markers) {
        assert_eq!(
            result.tool_call_id.as_ref(),
            Some(id),
            "results answer their calls in order"
        );
        assert!(
            result.content.contains(marker),
            "result for {id} should contain {marker}: {}",
            result.content
        );
    }
}

#[test]
fn invalid_arguments_are_reported_and_the_model_corrects_itself() {
    let Some(llm) = FakeLlm::start(concat!(
        "rules:\n",
        "  - name: done\n    when: {tool_result_contains: \"42\"}\n    respond: {content: \"fixed it: 42\"}\n",
        "  - name: retry\n    when: {tool_result_contains: \"invalid arguments\"}\n    respond:\n      tool_calls:\n        - {name: calculate, arguments: {expression: \"40+2\"}}\n",
        "  - name: first\n    when: {messages_contain: \"calc please\"}\n    respond:\n      tool_calls:\n        - {name: calculate, arguments: {expr: \"40+2\"}}\n",
    )) else {
        return;
    };
    for (kind, stream) in STREAMING {
        let sb = Sandbox::new();
        let r = tackle_run(
            &sb,
            &llm,
            kind,
            stream,
            "",
            &format!("calc please {}", tag(kind, stream)),
            &[],
        );
        assert_eq!(r.code, 0, "{r}");
        assert!(r.stdout.contains("fixed it: 42"), "{r}");
        assert!(r.stderr.contains("invalid_arguments"), "{r}");
    }
}

#[test]
fn a_denied_call_is_reported_to_the_model_and_nothing_runs() {
    let Some(llm) = FakeLlm::start(concat!(
        "rules:\n",
        "  - name: sorry\n    when: {tool_result_contains: \"denied\"}\n    respond: {content: \"I could not delete it.\"}\n",
        "  - name: try\n    when: {messages_contain: \"delete\"}\n    respond:\n      tool_calls:\n        - {name: shell, arguments: {command: \"ls; \\\\rm -f keep.txt\"}}\n",
    )) else {
        return;
    };
    let policy = "security:\n  tool_policies:\n    shell:\n      approval: never\n      grants:\n        shell:\n          deny: [rm]\n";
    for (kind, stream) in STREAMING {
        let sb = Sandbox::new();
        std::fs::write(sb.workspace().join("keep.txt"), "x").expect("write");
        let r = tackle_run(
            &sb,
            &llm,
            kind,
            stream,
            policy,
            &format!("delete {}", tag(kind, stream)),
            &[],
        );
        assert_eq!(r.code, 3, "a denied call makes the run exit 3\n{r}");
        assert!(r.stdout.contains("I could not delete it."), "{r}");
        assert!(r.stderr.contains("denied"), "{r}");
        assert!(
            sb.workspace().join("keep.txt").exists(),
            "the denied command must not run"
        );
    }
}

#[test]
fn a_call_needing_approval_without_a_tty_ends_at_once_with_exit_4() {
    let Some(llm) = FakeLlm::start(concat!(
        "rules:\n",
        "  - name: told\n    when: {tool_result_contains: \"needs approval\"}\n    respond: {content: \"approval is missing\"}\n",
        "  - name: try\n    when: {messages_contain: \"say hi\"}\n    respond:\n      tool_calls:\n        - {name: shell, arguments: {command: \"echo hi > hi.txt\"}}\n",
    )) else {
        return;
    };
    let sb = Sandbox::new();
    let r = tackle_run(&sb, &llm, "openai", true, "", "say hi", &[]);
    assert_eq!(r.code, 4, "{r}");
    assert!(r.elapsed.as_secs() < 10, "must not hang: {:?}", r.elapsed);
    assert!(r.stdout.contains("approval is missing"), "{r}");
    assert!(!sb.workspace().join("hi.txt").exists());
}

#[test]
fn max_iterations_ends_with_a_summary_turn_without_tools() {
    let Some(llm) = FakeLlm::start(concat!(
        "rules:\n",
        "  - name: summary\n    when: {messages_contain: \"used every tool iteration\"}\n    respond: {content: \"summary: ran out of steps\"}\n",
        "  - name: again\n    when: {messages_contain: \"keep going\"}\n    respond:\n      tool_calls:\n        - {name: get_time, arguments: {}}\n",
    )) else {
        return;
    };
    let sb = Sandbox::new();
    let agents = "agents:\n  - name: bounded\n    backend: fake\n    max_iterations: 2\n";
    let r = tackle_run(&sb, &llm, "anthropic", true, agents, "keep going", &[]);
    // Two model requests in all: one tool turn, then the closing summary; the run says the
    // budget ran out and fails.
    assert_eq!(r.code, 1, "{r}");
    assert!(r.stdout.contains("summary: ran out of steps"), "{r}");
    assert!(r.stderr.contains("iteration budget exhausted"), "{r}");
    assert_eq!(r.stderr.matches("→ get_time").count(), 1, "{r}");
}

#[test]
fn identical_calls_repeated_three_times_are_stopped() {
    let Some(llm) = FakeLlm::start(
        "rules:\n  - name: again\n    when: {messages_contain: \"repeat\"}\n    respond:\n      tool_calls:\n        - {name: calculate, arguments: {expression: \"1+1\"}}\n",
    ) else {
        return;
    };
    let sb = Sandbox::new();
    let r = tackle_run(&sb, &llm, "openai", true, "", "repeat yourself", &[]);
    assert_eq!(r.code, 1, "{r}");
    assert_eq!(
        r.stderr.matches("→ calculate").count(),
        2,
        "the third identical call is not run\n{r}"
    );
    assert!(r.stderr.contains("same tool call"), "{r}");
}

#[test]
fn a_rejected_api_key_is_a_clear_error() {
    let Some(llm) = FakeLlm::start(
        "rules:\n  - name: nope\n    respond: {status: 401, error: \"invalid x-api-key\"}\n",
    ) else {
        return;
    };
    for (kind, stream) in PLAIN {
        let sb = Sandbox::new();
        let r = tackle_run(
            &sb,
            &llm,
            kind,
            stream,
            "",
            &format!("anything {}", tag(kind, stream)),
            &[],
        );
        assert_eq!(r.code, 1, "{r}");
        assert!(r.stderr.contains("rejected the API key"), "{r}");
        assert!(r.stderr.contains("fake"), "names the backend\n{r}");
    }
}

#[test]
fn a_provider_failure_ends_the_json_stream_with_a_done_error_event() {
    let Some(llm) = FakeLlm::start(
        "rules:\n  - name: nope\n    respond: {status: 401, error: \"invalid x-api-key\"}\n",
    ) else {
        return;
    };
    for (kind, stream) in PLAIN {
        let sb = Sandbox::new();
        let r = tackle_run(&sb, &llm, kind, stream, "", "anything json", &["--json"]);
        assert_eq!(r.code, 1, "{r}");
        let last: Value = r
            .stdout
            .lines()
            .last()
            .and_then(|l| serde_json::from_str(l).ok())
            .unwrap_or_else(|| panic!("no final JSON event\n{r}"));
        assert_eq!(last["event"], "done", "{r}");
        assert_eq!(last["reason"], "error", "{r}");
        assert!(
            last["error"]
                .as_str()
                .is_some_and(|t| t.contains("API key")),
            "the event says why in `error`\n{r}"
        );
    }
}

#[test]
fn a_rate_limit_is_retried_and_then_succeeds() {
    let Some(llm) = FakeLlm::start(concat!(
        "rules:\n",
        "  - name: limited\n    when: {turn: 1}\n    respond: {status: 429, error: \"slow down\"}\n",
        "  - name: ok\n    when: {turn: 2}\n    respond: {content: \"after the retry\"}\n",
    )) else {
        return;
    };
    for (kind, stream) in PLAIN {
        let sb = Sandbox::new();
        let r = tackle_run(
            &sb,
            &llm,
            kind,
            stream,
            "",
            &format!("rate {}", tag(kind, stream)),
            &[],
        );
        assert_eq!(r.code, 0, "{r}");
        assert!(r.stdout.contains("after the retry"), "{r}");
    }
}

#[test]
fn a_session_can_be_resumed() {
    let Some(llm) = FakeLlm::start(concat!(
        "rules:\n",
        "  - name: second\n    when: {messages_contain: \"my name is Ada\", turn: 2}\n    respond: {content: \"You are Ada.\"}\n",
        "  - name: first\n    when: {messages_contain: \"my name is Ada\"}\n    respond: {content: \"Noted.\"}\n",
    )) else {
        return;
    };
    let sb = Sandbox::new();
    let first = tackle_run(&sb, &llm, "openai", true, "", "my name is Ada", &[]);
    assert_eq!(first.code, 0, "{first}");
    let id = session_id(&first);
    let second = tackle_run(
        &sb,
        &llm,
        "openai",
        true,
        "",
        "who am I?",
        &["--session", &id],
    );
    assert_eq!(second.code, 0, "{second}");
    assert!(
        second.stdout.contains("You are Ada."),
        "the resumed history reached the model\n{second}"
    );
}

#[test]
fn no_backend_anywhere_is_exit_2_saying_what_to_set() {
    let sb = Sandbox::new();
    let cfg = sb.config("");
    let r = run(sb.tackle(&cfg, &["run", "-m", "hello"]));
    if r.stderr.contains("127.0.0.1:11434") && r.code == 0 {
        eprintln!("SKIP: a local model server is running on this machine");
        return;
    }
    assert_eq!(r.code, 2, "{r}");
    for hint in [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "OPENROUTER_API_KEY",
        "backends",
    ] {
        assert!(r.stderr.contains(hint), "{hint}\n{r}");
    }
}

#[test]
fn ctrl_c_cancels_the_turn_and_kills_running_tools() {
    let Some(llm) = FakeLlm::start(
        "rules:\n  - name: slow\n    when: {messages_contain: \"slow job\"}\n    respond:\n      tool_calls:\n        - {name: shell, arguments: {command: \"sleep 20; touch finished.txt\"}}\n",
    ) else {
        return;
    };
    let sb = Sandbox::new();
    let config = sb.config(&llm.backend_yaml("openai", true));
    let mut child = sb
        .tackle(&config, &["run", "-m", "slow job", "--yes"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn tackle");
    // Wait until the tool call has started.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let started = std::time::Instant::now();
    let pid = child.id().to_string();
    let _ = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status();
    let status = child.wait().expect("wait");
    assert!(
        started.elapsed().as_secs() < 5,
        "Ctrl-C must end the turn promptly"
    );
    assert_eq!(status.code(), Some(130));
    std::thread::sleep(std::time::Duration::from_millis(500));
    let leftover = std::process::Command::new("pgrep")
        .args(["-f", "sleep 20; touch finished.txt"])
        .output();
    if let Ok(out) = leftover {
        assert!(
            out.stdout.is_empty(),
            "the tool's process group survived Ctrl-C"
        );
    }
    assert!(!sb.workspace().join("finished.txt").exists());
}

#[test]
fn with_no_system_prompt_configured_the_model_is_told_the_workspace_rules_and_date() {
    let Some(llm) = FakeLlm::start(concat!(
        "rules:\n",
        "  - name: default-prompt\n    when: {messages_contain: \"is denied, do not look for another way around\"}\n    respond: {content: \"saw the default prompt\"}\n",
        "  - name: other\n    respond: {content: \"saw no default prompt\"}\n",
    )) else {
        return;
    };
    let sb = Sandbox::new();
    let r = tackle_run(&sb, &llm, "anthropic", true, "", "prompt check one", &[]);
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stdout.contains("saw the default prompt"), "{r}");
    // An agent's own prompt replaces it.
    let own = "agents:\n  - name: mine\n    backend: fake\n    model: fake-model\n    system_prompt: Answer briefly.\n";
    let r = tackle_run(&sb, &llm, "openai", true, own, "prompt check two", &[]);
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stdout.contains("saw no default prompt"), "{r}");
}

#[test]
fn run_json_names_the_session_first_and_a_script_can_resume_it() {
    let Some(llm) = FakeLlm::start(concat!(
        "rules:\n",
        "  - name: second\n    when: {messages_contain: \"my name is Lin\", turn: 2}\n    respond: {content: \"You are Lin.\"}\n",
        "  - name: first\n    when: {messages_contain: \"my name is Lin\"}\n    respond: {content: \"Noted.\"}\n",
    )) else {
        return;
    };
    let sb = Sandbox::new();
    let first = tackle_run(&sb, &llm, "openai", true, "", "my name is Lin", &["--json"]);
    assert_eq!(first.code, 0, "{first}");
    let events: Vec<Value> = first
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}\n{first}")))
        .collect();
    assert_eq!(
        events.first().map(|e| &e["event"]),
        Some(&Value::from("session")),
        "{first}"
    );
    assert_eq!(
        events.iter().filter(|e| e["event"] == "session").count(),
        1,
        "{first}"
    );
    let id = events[0]["id"]
        .as_str()
        .filter(|id| !id.is_empty())
        .unwrap_or_else(|| panic!("the session event carries the id\n{first}"))
        .to_string();
    let second = tackle_run(
        &sb,
        &llm,
        "openai",
        true,
        "",
        "who am I?",
        &["--json", "--session", &id],
    );
    assert_eq!(second.code, 0, "{second}");
    let resumed: Value = second
        .stdout
        .lines()
        .next()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("no first JSON line\n{second}"));
    assert_eq!(resumed["event"], "session", "{second}");
    assert_eq!(resumed["id"], id.as_str(), "the same session\n{second}");
    assert!(
        second.stdout.contains("You are Lin."),
        "the resumed history reached the model\n{second}"
    );
}
