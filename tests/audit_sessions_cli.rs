//! `tackle audit` and `tackle sessions` through the real binary, over a real state store made
//! by real `tools call`s and `tackle run`s against fakellm; and the store's file modes.

mod common;

use common::{run, FakeLlm, Run, Sandbox};
use serde_json::Value;
use std::path::Path;

fn json_of(r: &Run) -> Value {
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("not JSON ({e})\n{r}"))
}

fn audit_json(sb: &Sandbox, config: &Path, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["audit", "--json"];
    args.extend_from_slice(extra);
    let r = run(sb.tackle(config, &args));
    assert_eq!(r.code, 0, "{r}");
    json_of(&r).as_array().cloned().unwrap_or_default()
}

fn field<'a>(records: &'a [Value], key: &str) -> Vec<&'a str> {
    records.iter().filter_map(|r| r[key].as_str()).collect()
}

const DENY_RM: &str = "security:\n  tool_policies:\n    shell:\n      grants:\n        shell:\n          deny: [\"rm\"]\n";

#[test]
fn audit_shows_every_call_and_filters_by_tool_session_time_and_count() {
    let sb = Sandbox::new();
    let config = sb.config(DENY_RM);
    let call = |tool: &str, args: &str| run(sb.tackle(&config, &["tools", "call", tool, args]));
    assert_eq!(call("calculate", r#"{"expression": "2+2"}"#).code, 0);
    let denied = call("shell", r#"{"command": "rm -rf build"}"#);
    assert_eq!(denied.code, 3, "{denied}");
    assert_eq!(call("calculate", r#"{"expression": "3*3"}"#).code, 0);

    let all = audit_json(&sb, &config, &[]);
    assert_eq!(field(&all, "tool"), ["calculate", "shell", "calculate"]);
    assert_eq!(field(&all, "verdict"), ["allow", "deny", "allow"]);
    assert_eq!(field(&all, "outcome"), ["ok", "denied", "ok"]);
    assert!(
        all[1]["rule"].as_str().unwrap_or("").contains("rm"),
        "{:#}",
        all[1]
    );
    assert!(
        all[1]["args_summary"]
            .as_str()
            .unwrap_or("")
            .contains("rm -rf build"),
        "{:#}",
        all[1]
    );

    let shell = audit_json(&sb, &config, &["--tool", "shell"]);
    assert_eq!(field(&shell, "verdict"), ["deny"]);

    // Each `tools call` is a session of its own.
    let first = all[0]["session_id"]
        .as_str()
        .expect("session id")
        .to_string();
    let one = audit_json(&sb, &config, &["--session", &first]);
    assert_eq!(one.len(), 1, "{one:#?}");
    assert_eq!(one[0]["args_summary"], all[0]["args_summary"]);

    let last = audit_json(&sb, &config, &["--limit", "1"]);
    assert_eq!(field(&last, "args_summary"), [r#"{"expression":"3*3"}"#]);
    assert_eq!(audit_json(&sb, &config, &["--since", "1h"]).len(), 3);
    assert_eq!(
        audit_json(&sb, &config, &["--since", "2000-01-01"]).len(),
        3
    );
    assert!(audit_json(&sb, &config, &["--since", "2999-01-01T00:00:00Z"]).is_empty());
    assert!(audit_json(&sb, &config, &["--tool", "nope"]).is_empty());

    let bad = run(sb.tackle(&config, &["audit", "--since", "last tuesday"]));
    assert_eq!(bad.code, 2, "{bad}");
    assert!(bad.stderr.contains("last tuesday"), "{bad}");

    // Text: a header, then one line per call under it.
    let text = run(sb.tackle(&config, &["audit"]));
    assert_eq!(text.code, 0, "{text}");
    let lines: Vec<&str> = text.stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    let header: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(
        header,
        [
            "TIME", "AGENT", "SESSION", "CALLER", "TOOL", "DECISION", "APPROVER", "OUTCOME",
            "DURATION", "LAYER", "RULE", "ARGS"
        ],
        "{text}"
    );
    let column = |line: &str, name: &str| -> String {
        // Columns are aligned: a cell starts where its header does.
        let at = lines[0].find(name).unwrap_or(0);
        line.get(at..)
            .and_then(|rest| rest.split("  ").next())
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    let denied_line = lines[2];
    assert_eq!(column(denied_line, "TOOL"), "shell", "{text}");
    assert_eq!(column(denied_line, "DECISION"), "deny", "{text}");
    assert_eq!(column(denied_line, "OUTCOME"), "denied", "{text}");
    assert_eq!(column(denied_line, "CALLER"), "cli", "{text}");
    assert_eq!(column(denied_line, "AGENT"), "default", "{text}");
    assert!(column(denied_line, "RULE").contains("rm"), "{text}");
    // The layer `--json` has, in the table too.
    assert_eq!(column(denied_line, "LAYER"), "policy", "{text}");
    assert_eq!(
        column(lines[1], "LAYER"),
        all[0]["layer"].as_str().unwrap_or_default(),
        "{text}"
    );
    assert_ne!(column(lines[1], "LAYER"), "-", "{text}");
    assert!(denied_line.contains("rm -rf build"), "{text}");
    assert_eq!(column(lines[1], "SESSION"), first, "{text}");
    assert_eq!(column(lines[1], "APPROVER"), "policy", "{text}");
    assert!(column(lines[1], "DURATION").ends_with('s'), "{text}");
    assert!(lines[1].contains("2+2"), "{text}");
    let year = lines[1].get(..4).unwrap_or("");
    assert!(year.chars().all(|c| c.is_ascii_digit()), "{text}");
}

#[test]
fn an_unknown_tool_or_invalid_arguments_are_recorded_as_denied_not_allowed() {
    let sb = Sandbox::new();
    let config = sb.config("");
    let unknown = run(sb.tackle(
        &config,
        &["tools", "call", "no_such_tool", r#"{"x": "nowhere"}"#],
    ));
    assert_ne!(unknown.code, 0, "{unknown}");
    let invalid = run(sb.tackle(
        &config,
        &["tools", "call", "calculate", r#"{"expression": 5}"#],
    ));
    assert_ne!(invalid.code, 0, "{invalid}");
    let all = audit_json(&sb, &config, &[]);
    assert_eq!(field(&all, "tool"), ["no_such_tool", "calculate"]);
    assert_eq!(field(&all, "verdict"), ["deny", "deny"]);
    assert_eq!(field(&all, "outcome"), ["not_found", "invalid_arguments"]);
    assert_eq!(field(&all, "caller"), ["cli", "cli"]);
}

const RULES: &str = concat!(
    "rules:\n",
    "  - name: answer\n    when: {tool_result_contains: \"42\"}\n    respond: {content: \"The answer is 42.\"}\n",
    "  - name: ask\n    when: {messages_contain: \"compute\"}\n    respond:\n      tool_calls:\n        - {name: calculate, arguments: {expression: \"6*7\"}}\n",
    "  - name: hello\n    when: {messages_contain: \"hello\"}\n    respond: {content: \"Hi there.\"}\n",
);

fn session_of(r: &Run) -> String {
    r.stderr
        .lines()
        .find_map(|l| l.strip_prefix("session: "))
        .and_then(|rest| rest.split_whitespace().next())
        .map(str::to_string)
        .unwrap_or_else(|| panic!("no session id printed\n{r}"))
}

#[test]
fn sessions_made_by_run_are_listed_shown_and_removed() {
    let Some(llm) = FakeLlm::start(RULES) else {
        return;
    };
    let sb = Sandbox::new();
    let config = sb.config(&llm.backend_yaml("openai", true));
    let computed = run(sb.tackle(&config, &["run", "-m", "please compute six times seven"]));
    assert_eq!(computed.code, 0, "{computed}");
    let id = session_of(&computed);
    let named = run(sb.tackle(&config, &["run", "-m", "hello there", "--session", "named"]));
    assert_eq!(named.code, 0, "{named}");

    let r = run(sb.tackle(&config, &["sessions", "list", "--json"]));
    assert_eq!(r.code, 0, "{r}");
    let list = json_of(&r);
    let list = list.as_array().expect("array");
    assert_eq!(list.len(), 2, "{list:#?}");
    // Most recently active first.
    assert_eq!(list[0]["id"], "named");
    assert_eq!(list[1]["id"], id.as_str());
    assert_eq!(
        list[1]["messages"], 4,
        "user, assistant call, result, answer"
    );
    assert_eq!(
        list[1]["first_user_message"],
        "please compute six times seven"
    );
    assert_eq!(list[0]["messages"], 2);

    let text = run(sb.tackle(&config, &["sessions", "list"]));
    assert_eq!(text.code, 0, "{text}");
    let line = text
        .stdout
        .lines()
        .find(|l| l.starts_with(id.as_str()))
        .unwrap_or_else(|| panic!("{id} not listed\n{text}"));
    assert!(
        line.split_whitespace().any(|w| w == "4")
            && line.contains("please compute six times seven"),
        "4 messages: {line}"
    );

    let show = run(sb.tackle(&config, &["sessions", "show", &id]));
    assert_eq!(show.code, 0, "{show}");
    let out = &show.stdout;
    let order = [
        "user:",
        "please compute six times seven",
        "assistant:",
        "→ calculate 6*7",
        "tool result (calculate):",
        "42",
        "The answer is 42.",
    ];
    let mut at = 0;
    for part in order {
        let found = out
            .get(at..)
            .and_then(|rest| rest.find(part))
            .unwrap_or_else(|| panic!("`{part}` missing or out of order\n{show}"));
        at += found + part.len();
    }
    let show_json = run(sb.tackle(&config, &["sessions", "show", &id, "--json"]));
    assert_eq!(show_json.code, 0, "{show_json}");
    let v = json_of(&show_json);
    assert_eq!(v["session"]["id"], id.as_str());
    assert_eq!(v["entries"].as_array().map(Vec::len), Some(4), "{v:#}");

    // The run's tool call is in the audit log under the same session.
    let calls = audit_json(&sb, &config, &["--session", &id]);
    assert_eq!(field(&calls, "tool"), ["calculate"]);

    let rm = run(sb.tackle(&config, &["sessions", "rm", "named"]));
    assert_eq!(rm.code, 0, "{rm}");
    assert!(rm.stdout.contains("removed session named"), "{rm}");
    let after = json_of(&run(sb.tackle(&config, &["sessions", "list", "--json"])));
    assert_eq!(
        after
            .as_array()
            .map(|a| a.iter().map(|s| s["id"].clone()).collect::<Vec<_>>()),
        Some(vec![Value::from(id.as_str())])
    );

    for args in [
        vec!["sessions", "rm", "named"],
        vec!["sessions", "show", "no-such-session"],
    ] {
        let r = run(sb.tackle(&config, &args));
        assert_eq!(r.code, 6, "not found (README, exit codes)\n{r}");
        let missing = args.last().copied().unwrap_or_default();
        assert!(r.stderr.contains(&format!("no session `{missing}`")), "{r}");
    }
}

#[cfg(unix)]
#[test]
fn the_store_is_0600_in_a_0700_state_dir_wal_files_included() {
    use std::os::unix::fs::PermissionsExt;
    use std::process::Stdio;
    use std::time::{Duration, Instant};

    let mode = |p: &Path| {
        std::fs::metadata(p)
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
            .permissions()
            .mode()
            & 0o777
    };
    let sb = Sandbox::new();
    // A state dir that does not exist yet, so the binary creates it.
    let state = sb.dir.path().join("fresh/state");
    let config = sb.dir.path().join("fresh.yaml");
    std::fs::write(&config, format!("state_dir: {}\n", state.display())).expect("config");

    // `mcp serve` keeps the store open: the WAL files exist while it runs.
    let mut serve = sb.tackle(&config, &["mcp", "serve"]);
    let mut child = serve
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn mcp serve");
    let files = ["tackle.db", "tackle.db-wal", "tackle.db-shm"].map(|f| state.join(f));
    let deadline = Instant::now() + Duration::from_secs(20);
    while !files.iter().all(|f| f.exists()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let seen: Vec<(String, u32)> = files
        .iter()
        .filter(|f| f.exists())
        .map(|f| (f.display().to_string(), mode(f)))
        .collect();
    let dir_mode = mode(&state);
    // End of input ends the server; it is killed if it does not go.
    drop(child.stdin.take());
    let stop_by = Instant::now() + Duration::from_secs(10);
    while matches!(child.try_wait(), Ok(None)) && Instant::now() < stop_by {
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(seen.len(), 3, "not every store file appeared: {seen:?}");
    assert_eq!(dir_mode, 0o700);
    for (file, m) in &seen {
        assert_eq!(*m, 0o600, "{file} is {m:o}");
    }

    // The database a command leaves behind keeps its mode.
    let r = run(sb.tackle(
        &config,
        &["tools", "call", "calculate", r#"{"expression": "1"}"#],
    ));
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(mode(&files[0]), 0o600);
    assert_eq!(mode(&state), 0o700);
}
