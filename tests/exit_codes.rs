//! The one exit-code table (README, "Exit codes"; `tackle --help`): the same meaning in every
//! subcommand. "Not found" is one code wherever a name is looked up, a "no" at the approval
//! prompt is not a policy's denial, `mcp list` fails when every server failed, and a run that
//! stops at `max_iterations` or gets an empty answer says so.

mod common;

use common::tmux::{shell_quote, Tmux};
use common::{run, tackle_bin, FakeLlm, Run, Sandbox};
use serde_json::Value;

const NOT_FOUND: i32 = 6;
const DECLINED: i32 = 5;

/// The README's exit-code table: the `| `N` | meaning |` rows under `| code | meaning |`.
fn readme_codes() -> Vec<i32> {
    let readme = std::fs::read_to_string(common::repo_root().join("README.md")).expect("README");
    readme
        .lines()
        .skip_while(|l| !l.starts_with("| code | meaning |"))
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| {
            let cell = l.split('|').nth(1)?.trim().trim_matches('`');
            cell.parse().ok()
        })
        .collect()
}

#[test]
fn help_and_readme_show_the_same_table() {
    let sb = Sandbox::new();
    let cfg = sb.config("");
    let r = run(sb.tackle(&cfg, &["--help"]));
    assert_eq!(r.code, 0, "{r}");
    let table = r
        .stdout
        .split("Exit codes:")
        .nth(1)
        .unwrap_or_else(|| panic!("no exit codes in --help\n{r}"));
    let in_help: Vec<i32> = table
        .lines()
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect();
    let in_readme = readme_codes();
    assert!(in_readme.contains(&DECLINED) && in_readme.contains(&NOT_FOUND));
    assert_eq!(in_help, in_readme, "--help and the README disagree\n{r}");
}

/// Every subcommand that looks a name up exits with the same code when it is not there.
#[test]
fn not_found_is_one_code_in_every_subcommand() {
    let sb = Sandbox::new();
    let cfg = sb.config(
        "agents:\n  - name: main\nbackends:\n  - name: only\n    type: openai\n    api_base: http://127.0.0.1:9/v1\n    models:\n      - name: m\n",
    );
    let cases: &[&[&str]] = &[
        &["tools", "call", "no_such_tool", "{}"],
        &["tools", "call", "no_such_tool", "{}", "--json"],
        &["tools", "describe", "no_such_tool"],
        &["sessions", "show", "no-such-session"],
        &["sessions", "rm", "no-such-session"],
        &["schedule", "rm", "no-such-schedule"],
        &["schedule", "disable", "no-such-schedule"],
        &["memory", "show", "no-such-key"],
        &["memory", "rm", "no-such-key"],
        &["memory", "list", "--agent", "mian"],
        &["skills", "show", "no-such-skill"],
        &["mcp", "logout", "no-such-server"],
        &["tools", "list", "--agent", "mian"],
        &["run", "-m", "hi", "--agent", "mian"],
        &["run", "-m", "hi", "--backend", "no-such-backend"],
    ];
    for args in cases {
        let r = run(sb.tackle(&cfg, args));
        assert_eq!(r.code, NOT_FOUND, "{args:?}\n{r}");
        if args.contains(&"--json") {
            let v: Value = serde_json::from_str(r.stdout.trim()).expect("JSON");
            assert_eq!(v["error"]["kind"], "not_found", "{r}");
        } else {
            assert!(r.stderr.starts_with("error: "), "{args:?}\n{r}");
        }
    }
    // A close name is suggested in the one wording.
    let r = run(sb.tackle(&cfg, &["tools", "list", "--agent", "mian"]));
    assert!(r.stderr.contains("did you mean main?"), "{r}");
}

/// `n` at the prompt exits 5 ("you answered no"), not 3 ("denied by policy").
#[test]
fn answering_no_at_the_prompt_is_not_a_policy_denial() {
    let sb = Sandbox::new();
    let cfg = sb.config("");
    let marker = sb.dir.path().join("ran");
    let command = format!(
        "env -i PATH={} HOME={} {} --config {} --workspace {} tools call shell {}; echo \"exit=$?\"; sleep 30",
        shell_quote(&std::env::var("PATH").unwrap_or_default()),
        shell_quote(&sb.home().to_string_lossy()),
        shell_quote(&tackle_bin().to_string_lossy()),
        shell_quote(&cfg.to_string_lossy()),
        shell_quote(&sb.workspace().to_string_lossy()),
        shell_quote(&format!(
            r#"{{"command": "touch {}"}}"#,
            marker.display()
        )),
    );
    let Some(tmux) = Tmux::start(&format!("tackle-declined-{}", std::process::id()), &command)
    else {
        return;
    };
    tmux.wait_for("[n]", 1);
    tmux.send("n");
    let screen = tmux.wait_for("exit=", 1);
    assert!(screen.contains(&format!("exit={DECLINED}")), "{screen}");
    assert!(!marker.exists(), "the declined command ran");
}

#[test]
fn mcp_list_fails_only_when_every_server_failed() {
    let sb = Sandbox::new();
    let inner = sb.dir.path().join("inner.yaml");
    std::fs::write(
        &inner,
        format!(
            "state_dir: {}\n",
            sb.dir.path().join("inner-state").display()
        ),
    )
    .expect("inner config");
    let working = format!(
        "  inner:\n    command: {}\n    args: [\"--config\", {}, \"mcp\", \"serve\"]\n",
        serde_json::to_string(&tackle_bin().display().to_string()).expect("json"),
        serde_json::to_string(&inner.display().to_string()).expect("json"),
    );
    let broken = "  broken:\n    command: /nonexistent/mcp-server\n";

    let cfg = sb.config(&format!("mcp_servers:\n{broken}"));
    let r = run(sb.tackle(&cfg, &["mcp", "list"]));
    assert_eq!(r.code, 1, "every server failed\n{r}");

    let cfg = sb.config(&format!("mcp_servers:\n{broken}{working}"));
    let r = run(sb.tackle(&cfg, &["mcp", "list", "--json"]));
    assert_eq!(r.code, 0, "one server works\n{r}");
    let rows: Value = serde_json::from_str(&r.stdout).expect("JSON");
    let state = |name: &str| {
        rows.as_array()
            .and_then(|a| a.iter().find(|s| s["name"] == name))
            .map(|s| (s["state"].clone(), s["error"].clone(), s["tools"].clone()))
            .unwrap_or_else(|| panic!("{name} missing\n{r}"))
    };
    let (s, e, tools) = state("inner");
    assert_eq!((s, e), (Value::from("ready"), Value::Null), "{r}");
    assert!(
        tools
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t == "inner__calculate")),
        "{r}"
    );
    let (s, e, _) = state("broken");
    assert_eq!(s, "failed", "{r}");
    assert!(
        e.as_str().is_some_and(|e| e.contains("could not start")),
        "{r}"
    );

    let cfg = sb.config("");
    let r = run(sb.tackle(&cfg, &["mcp", "list", "--json"]));
    assert_eq!((r.code, r.stdout.trim()), (0, "[]"), "{r}");
}

fn tackle_run(sb: &Sandbox, llm: &FakeLlm, extra_yaml: &str, args: &[&str]) -> Run {
    let config = sb.config(&format!(
        "{}{extra_yaml}",
        llm.backend_yaml("openai", false)
    ));
    let mut full = vec!["run"];
    full.extend_from_slice(args);
    run(sb.tackle(&config, &full))
}

/// The last JSON line of `--json` output.
fn done_event(r: &Run) -> Value {
    r.stdout
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("no final JSON event\n{r}"))
}

/// A model that calls a tool at every turn and answers the closing request with nothing: the
/// run says it stopped at max_iterations and fails, in text and in `--json`.
#[test]
fn reaching_max_iterations_without_an_answer_says_so_and_fails() {
    let Some(llm) = FakeLlm::start(concat!(
        "rules:\n",
        "  - name: summary\n    when: {messages_contain: \"used every tool iteration\"}\n    respond: {content: \"\"}\n",
        "  - name: again\n    respond:\n      tool_calls:\n        - {name: get_time, arguments: {}}\n",
    )) else {
        return;
    };
    let agents = "agents:\n  - name: bounded\n    backend: fake\n    max_iterations: 2\n";
    let sb = Sandbox::new();
    let r = tackle_run(&sb, &llm, agents, &["-m", "loop please"]);
    assert_eq!(r.code, 1, "{r}");
    assert!(r.stderr.contains("max_iterations"), "says why\n{r}");

    let r = tackle_run(&sb, &llm, agents, &["-m", "loop please", "--json"]);
    assert_eq!(r.code, 1, "{r}");
    let done = done_event(&r);
    assert_eq!(done["event"], "done", "{r}");
    assert_eq!(done["reason"], "max_iterations", "{r}");
    assert!(
        done["error"]
            .as_str()
            .is_some_and(|e| e.contains("max_iterations")),
        "the done event says why\n{r}"
    );
}

#[test]
fn an_empty_answer_is_said_and_an_error_is_in_the_done_events_error_field() {
    let Some(llm) = FakeLlm::start(concat!(
        "rules:\n",
        "  - name: empty\n    when: {messages_contain: \"say nothing\"}\n    respond: {content: \"\"}\n",
        "  - name: nope\n    when: {messages_contain: \"fail please\"}\n    respond: {status: 401, error: \"invalid x-api-key\"}\n",
    )) else {
        return;
    };
    let sb = Sandbox::new();
    let r = tackle_run(&sb, &llm, "", &["-m", "say nothing"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stdout.trim().is_empty(), "{r}");
    assert!(r.stderr.contains("answer was empty"), "{r}");

    let r = tackle_run(&sb, &llm, "", &["-m", "say nothing", "--json"]);
    let done = done_event(&r);
    assert_eq!(
        (done["reason"].clone(), done["error"].clone()),
        (Value::from("answer"), Value::Null),
        "{r}"
    );

    let r = tackle_run(&sb, &llm, "", &["-m", "fail please", "--json"]);
    assert_eq!(r.code, 1, "{r}");
    let done = done_event(&r);
    assert_eq!(done["reason"], "error", "{r}");
    assert_eq!(done["text"], "", "no answer, so no text\n{r}");
    assert!(
        done["error"]
            .as_str()
            .is_some_and(|e| e.contains("API key")),
        "{r}"
    );
}

/// The same in `tackle run`: the model asks for a command, the person says no, the model
/// answers; the run exits 5, not 3.
#[test]
fn answering_no_in_a_run_is_not_a_policy_denial() {
    let Some(llm) = FakeLlm::start(concat!(
        "rules:\n",
        "  - name: after\n    when: {turn: 2}\n    respond: {content: \"understood, not running it\"}\n",
        "  - name: ask\n    when: {turn: 1}\n    respond:\n      tool_calls:\n        - {name: shell, arguments: {command: \"touch declined-marker\"}}\n",
    )) else {
        return;
    };
    let sb = Sandbox::new();
    let cfg = sb.config(&llm.backend_yaml("openai", false));
    let command = format!(
        "env -i PATH={} HOME={} {} --config {} --workspace {} run -m 'make the marker'; echo \"exit=$?\"; sleep 30",
        shell_quote(&std::env::var("PATH").unwrap_or_default()),
        shell_quote(&sb.home().to_string_lossy()),
        shell_quote(&tackle_bin().to_string_lossy()),
        shell_quote(&cfg.to_string_lossy()),
        shell_quote(&sb.workspace().to_string_lossy()),
    );
    let Some(tmux) = Tmux::start(
        &format!("tackle-run-declined-{}", std::process::id()),
        &command,
    ) else {
        return;
    };
    tmux.wait_for("[n]", 1);
    tmux.send("n");
    let screen = tmux.wait_for("exit=", 1);
    assert!(screen.contains("understood"), "{screen}");
    assert!(screen.contains(&format!("exit={DECLINED}")), "{screen}");
    assert!(!sb.workspace().join("declined-marker").exists());
}
