//! The command line's contracts through the real binary: a closed stdout ends a command
//! quietly, `--json`'s `ok` agrees with the exit status, the workspace must be a directory,
//! `-q`, `--help` describes everything, `--explain`'s exit code, and configuration errors name
//! their cause once.

mod common;

use common::{run, FakeLlm, Run, Sandbox};
use serde_json::Value;
use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};

fn json_of(r: &Run) -> Value {
    serde_json::from_str(r.stdout.trim()).unwrap_or_else(|e| panic!("not JSON ({e}):\n{r}"))
}

/// How a command ended when its reader went away.
struct Closed {
    /// The exit code, or 128 + the signal that ended it (as a shell reports it).
    code: i32,
    stderr: String,
}

/// Run `cmd` with a reader on stdout that reads `read` bytes (0: none at all) and then closes
/// the pipe; wait for the command to end.
fn reader_goes_away(mut cmd: Command, read: usize) -> Closed {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn tackle");
    let mut stdout = child.stdout.take().expect("stdout pipe");
    if read > 0 {
        let mut buf = vec![0u8; read];
        let _ = stdout.read_exact(&mut buf);
    }
    drop(stdout);
    let mut stderr = String::new();
    let _ = child
        .stderr
        .take()
        .expect("stderr pipe")
        .read_to_string(&mut stderr);
    let status = child.wait().expect("wait for tackle");
    let code = status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(-1);
    Closed { code, stderr }
}

fn assert_quiet(what: &str, closed: &Closed, expected: i32) {
    for noise in ["panicked", "Broken pipe", "os error 32", "error:"] {
        assert!(
            !closed.stderr.contains(noise),
            "{what}: `{noise}` on stderr after the reader went away:\n{}",
            closed.stderr
        );
    }
    assert_ne!(closed.code, 101, "{what} panicked:\n{}", closed.stderr);
    assert_eq!(
        closed.code, expected,
        "{what}: a closed stdout must leave the command's own status\n{}",
        closed.stderr
    );
}

#[test]
fn every_command_ends_quietly_when_its_reader_goes_away() {
    let sb = Sandbox::new();
    let cfg = sb.config("");
    let cases: &[&[&str]] = &[
        &["tools", "list"],
        &["tools", "list", "--json"],
        &["tools", "describe", "calculate"],
        &["tools", "call", "calculate", r#"{"expression": "6*7"}"#],
        &[
            "tools",
            "call",
            "calculate",
            r#"{"expression": "6*7"}"#,
            "--json",
        ],
        &[
            "tools",
            "call",
            "shell",
            r#"{"command": "ls"}"#,
            "--explain",
        ],
        &["doctor"],
        &["mcp", "list"],
        &["--help"],
        &["tools", "call", "--help"],
    ];
    for args in cases {
        for read in [0, 1] {
            let closed = reader_goes_away(sb.tackle(&cfg, args), read);
            assert_quiet(&format!("{args:?} (read {read})"), &closed, 0);
        }
    }
}

#[test]
fn a_failed_call_keeps_its_exit_code_when_its_reader_goes_away() {
    let sb = Sandbox::new();
    let cfg = sb.config("");
    let closed = reader_goes_away(
        sb.tackle(
            &cfg,
            &[
                "tools",
                "call",
                "shell",
                r#"{"command": "exit 3"}"#,
                "--yes",
                "--json",
            ],
        ),
        0,
    );
    assert_quiet("shell exit 3 --json", &closed, 1);
}

#[test]
fn run_ends_quietly_when_its_reader_goes_away() {
    let Some(llm) = FakeLlm::start(concat!(
        "rules:\n",
        "  - name: answer\n    when: {tool_result_contains: \"42\"}\n    respond: {content: \"The answer is 42, and this sentence is long enough to need more than one write.\"}\n",
        "  - name: ask\n    when: {messages_contain: \"compute\"}\n    respond:\n      tool_calls:\n        - {name: calculate, arguments: {expression: \"6*7\"}}\n",
    )) else {
        return;
    };
    for (kind, stream) in [("openai", true), ("anthropic", false)] {
        for json in [false, true] {
            for read in [0, 1] {
                let sb = Sandbox::new();
                let cfg = sb.config(&llm.backend_yaml(kind, stream));
                let mut args = vec!["run", "-m", "compute it"];
                if json {
                    args.push("--json");
                }
                let closed = reader_goes_away(sb.tackle(&cfg, &args), read);
                assert_quiet(
                    &format!("run {kind} stream={stream} json={json} read={read}"),
                    &closed,
                    0,
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// `--json`: `ok` agrees with the exit status, and every `ok: false` says why.

#[test]
fn a_command_that_exits_non_zero_is_a_failed_call_with_an_error() {
    let sb = Sandbox::new();
    let cfg = sb.config("");
    let r = run(sb.tackle(
        &cfg,
        &[
            "tools",
            "call",
            "shell",
            r#"{"command": "echo partial; exit 3"}"#,
            "--yes",
            "--json",
        ],
    ));
    assert_eq!(r.code, 1, "{r}");
    let v = json_of(&r);
    assert_eq!(v["ok"], false, "{r}");
    assert_eq!(v["error"]["kind"], "failed", "{r}");
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("shell") && message.contains('3'),
        "the message names the tool and what it reported: {r}"
    );
    // What the command printed is still there for the caller.
    assert!(
        v["content"]
            .as_str()
            .unwrap_or_default()
            .contains("partial"),
        "{r}"
    );
    assert_eq!(v["structured"]["exit_code"], 3, "{r}");
}

#[test]
fn ok_agrees_with_the_exit_status_and_every_failure_carries_kind_and_message() {
    let sb = Sandbox::new();
    let cfg = sb.config(
        "security:\n  tool_policies:\n    shell:\n      grants:\n        shell:\n          deny: [\"rm\"]\n",
    );
    // (arguments, expected exit code, expected error kind)
    let cases: &[(&[&str], i32, Option<&str>)] = &[
        (&["calculate", r#"{"expression": "1+1"}"#], 0, None),
        (&["calculate", "{}"], 1, Some("invalid_arguments")),
        (&["no_such_tool", "{}"], 6, Some("not_found")),
        (&["shell", r#"{"command": "true"}"#, "--yes"], 0, None),
        (
            &["shell", r#"{"command": "exit 7"}"#, "--yes"],
            1,
            Some("failed"),
        ),
        (
            &["shell", r#"{"command": "true"}"#],
            4,
            Some("needs_approval"),
        ),
        (
            &["shell", r#"{"command": "rm -f x"}"#, "--yes"],
            3,
            Some("denied"),
        ),
    ];
    for (args, code, kind) in cases {
        let mut full = vec!["tools", "call"];
        full.extend_from_slice(args);
        full.push("--json");
        let r = run(sb.tackle(&cfg, &full));
        assert_eq!(r.code, *code, "{args:?}\n{r}");
        let v = json_of(&r);
        assert_eq!(
            v["ok"],
            r.code == 0,
            "`ok` disagrees with the exit status: {r}"
        );
        match kind {
            None => assert!(v["error"].is_null(), "{r}"),
            Some(kind) => {
                assert_eq!(v["error"]["kind"], *kind, "{args:?}\n{r}");
                let message = v["error"]["message"].as_str().unwrap_or_default();
                assert!(!message.trim().is_empty(), "no message: {r}");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The workspace.

/// `tackle --config CFG --workspace WS ARGS` in the sandbox's environment.
fn tackle_with_workspace(sb: &Sandbox, cfg: &Path, workspace: &Path, args: &[&str]) -> Run {
    let mut cmd = Command::new(common::tackle_bin());
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", sb.home())
        .env("XDG_CONFIG_HOME", sb.home().join(".config"))
        .env("XDG_STATE_HOME", sb.home().join(".state"))
        .arg("--config")
        .arg(cfg)
        .arg("--workspace")
        .arg(workspace)
        .args(args)
        .stdin(Stdio::null());
    run(cmd)
}

#[test]
fn a_workspace_that_is_a_file_or_missing_is_a_usage_error_naming_it() {
    let sb = Sandbox::new();
    let cfg = sb.config("");
    let file = sb.workspace().join("notes.txt");
    std::fs::write(&file, "not a directory").unwrap();
    let missing = sb.dir.path().join("no-such-dir");
    let commands: &[&[&str]] = &[
        &["tools", "list"],
        &["tools", "call", "list_files", "{}", "--json"],
        &["mcp", "serve"],
    ];
    for workspace in [file.as_path(), missing.as_path(), Path::new("/etc/passwd")] {
        for args in commands {
            let r = tackle_with_workspace(&sb, &cfg, workspace, args);
            assert_eq!(r.code, 2, "{workspace:?} {args:?}\n{r}");
            assert!(
                r.stderr.contains(&workspace.display().to_string()),
                "the error names the workspace: {r}"
            );
            assert!(!r.stdout.contains("notes"), "nothing ran: {r}");
        }
    }
    let r = tackle_with_workspace(&sb, &cfg, &file, &["tools", "list"]);
    assert!(r.stderr.contains("not a directory"), "{r}");
}

// ---------------------------------------------------------------------------------------------
// `-q`.

#[test]
fn quiet_run_prints_the_answer_but_not_the_session_line() {
    let Some(llm) = FakeLlm::start(concat!(
        "rules:\n",
        "  - name: answer\n    when: {tool_result_contains: \"42\"}\n    respond: {content: \"The answer is 42.\"}\n",
        "  - name: ask\n    when: {messages_contain: \"compute\"}\n    respond:\n      tool_calls:\n        - {name: calculate, arguments: {expression: \"6*7\"}}\n",
    )) else {
        return;
    };
    let sb = Sandbox::new();
    let cfg = sb.config(&llm.backend_yaml("openai", true));
    let loud = run(sb.tackle(&cfg, &["run", "-m", "compute it"]));
    assert_eq!(loud.code, 0, "{loud}");
    assert!(loud.stderr.contains("session: "), "{loud}");
    assert!(loud.stderr.contains("→ calculate"), "{loud}");

    let quiet = run(sb.tackle(&cfg, &["-q", "run", "-m", "compute it"]));
    assert_eq!(quiet.code, 0, "{quiet}");
    assert!(quiet.stdout.contains("The answer is 42."), "{quiet}");
    assert!(
        !quiet.stderr.contains("session: "),
        "-q still prints the session line: {quiet}"
    );
    assert!(
        !quiet.stderr.contains("→ calculate") && !quiet.stderr.contains("✓ calculate"),
        "-q still prints tool lines: {quiet}"
    );
}

#[test]
fn quiet_still_prints_errors() {
    let sb = Sandbox::new();
    let cfg = sb.config("");
    let r = run(sb.tackle(&cfg, &["-q", "tools", "call", "calculate", "{}"]));
    assert_eq!(r.code, 1, "{r}");
    assert!(
        r.stderr.starts_with("error: ") && r.stderr.contains("expression"),
        "{r}"
    );
    let r = run(sb.tackle(&cfg, &["-q", "tools", "list", "--agent", "nobody"]));
    assert_eq!(r.code, 6, "not found (README, exit codes)\n{r}");
    assert!(r.stderr.contains("nobody"), "{r}");
}

// ---------------------------------------------------------------------------------------------
// `--help`.

/// The entries of a help text's `Arguments:`, `Options:` and `Commands:` sections that have no
/// description.
fn undescribed(help: &str) -> Vec<String> {
    let mut in_list = false;
    let mut missing = Vec::new();
    for line in help.lines() {
        if !line.starts_with(' ') {
            in_list = matches!(line.trim(), "Arguments:" | "Options:" | "Commands:");
            continue;
        }
        if !in_list || line.trim().is_empty() {
            continue;
        }
        let entry = line.trim();
        let described = entry
            .split_once("  ")
            .is_some_and(|(_, text)| !text.trim().is_empty());
        if !described {
            missing.push(entry.to_string());
        }
    }
    missing
}

#[test]
fn every_argument_and_flag_of_every_command_is_described() {
    let sb = Sandbox::new();
    let cfg = sb.config("");
    // Walk the command tree from the top-level help, so new commands are covered too.
    let mut queue: Vec<Vec<String>> = vec![vec![]];
    let mut seen = 0;
    while let Some(path) = queue.pop() {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let r = run(sb.tackle(&cfg, &args));
        assert_eq!(r.code, 0, "{args:?}\n{r}");
        seen += 1;
        let missing = undescribed(&r.stdout);
        assert!(
            missing.is_empty(),
            "`tackle {}` leaves these undescribed: {missing:?}\n{}",
            args.join(" "),
            r.stdout
        );
        let mut in_commands = false;
        for line in r.stdout.lines() {
            if !line.starts_with(' ') {
                in_commands = line.trim() == "Commands:";
                continue;
            }
            if let Some(name) = line.split_whitespace().next().filter(|_| in_commands) {
                if name != "help" {
                    let mut sub = path.clone();
                    sub.push(name.to_string());
                    queue.push(sub);
                }
            }
        }
    }
    assert!(seen >= 10, "only {seen} help texts found");
}

// ---------------------------------------------------------------------------------------------
// `--explain`.

#[test]
fn explain_exits_3_when_the_decision_is_deny_and_0_otherwise() {
    let sb = Sandbox::new();
    let cfg = sb.config(
        "security:\n  tool_policies:\n    shell:\n      grants:\n        shell:\n          deny: [\"rm\"]\n",
    );
    let marker = sb.workspace().join("made-by-explain");
    let touch = format!(r#"{{"command": "touch {}"}}"#, marker.display());
    for json in [false, true] {
        let with = |args: &[&str]| {
            let mut full = vec!["tools", "call"];
            full.extend_from_slice(args);
            full.push("--explain");
            if json {
                full.push("--json");
            }
            run(sb.tackle(&cfg, &full))
        };
        let denied = with(&["shell", r#"{"command": "rm -rf ws"}"#]);
        assert_eq!(denied.code, 3, "a deny exits as the call would: {denied}");
        assert!(denied.stdout.to_lowercase().contains("deny"), "{denied}");
        // `shell` needs approval by default: an ask, nothing run, nobody needed asking.
        let asked = with(&["shell", &touch]);
        assert_eq!(asked.code, 0, "{asked}");
        assert!(asked.stdout.to_lowercase().contains("ask"), "{asked}");
        let allowed = with(&["calculate", r#"{"expression": "1+1"}"#]);
        assert_eq!(allowed.code, 0, "{allowed}");
        assert!(allowed.stdout.to_lowercase().contains("allow"), "{allowed}");
    }
    assert!(!marker.exists(), "--explain ran the call");
}

// ---------------------------------------------------------------------------------------------
// Configuration errors.

#[test]
fn a_missing_config_file_says_why_once() {
    let sb = Sandbox::new();
    let missing = sb.dir.path().join("nope.yaml");
    let r = run(sb.tackle(&missing, &["tools", "list"]));
    assert_eq!(r.code, 2, "{r}");
    assert!(
        r.stderr.contains(&missing.display().to_string()),
        "names the file: {r}"
    );
    assert_eq!(
        r.stderr.matches("No such file or directory").count(),
        1,
        "the cause once: {r}"
    );
}

#[test]
fn an_invalid_env_override_names_the_variable_not_the_defaults() {
    let sb = Sandbox::new();
    // No config file at all: only the variable can be to blame.
    let mut cmd = Command::new(common::tackle_bin());
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", sb.home())
        .env("XDG_CONFIG_HOME", sb.home().join(".config"))
        .env("XDG_STATE_HOME", sb.home().join(".state"))
        .env("TACKLE_TOOLS_TIMEOUT_SECS", "soon")
        .arg("--workspace")
        .arg(sb.workspace())
        .args(["tools", "list"])
        .stdin(Stdio::null());
    let r = run(cmd);
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("TACKLE_TOOLS_TIMEOUT_SECS"), "{r}");
    assert!(r.stderr.contains("tools.timeout_secs"), "{r}");
    assert!(!r.stderr.contains("built-in defaults"), "{r}");

    // With a config file, the file is not blamed either.
    let cfg = sb.config("tools:\n  timeout_secs: 30\n");
    let mut cmd = sb.tackle(&cfg, &["tools", "list"]);
    cmd.env("TACKLE_TOOLS_TIMEOUT_SECS", "soon");
    let r = run(cmd);
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("TACKLE_TOOLS_TIMEOUT_SECS"), "{r}");
    assert!(
        !r.stderr.contains(&cfg.display().to_string()),
        "the file is not to blame: {r}"
    );

    // An override of a key that does not exist names its variable too.
    let mut cmd = sb.tackle(&cfg, &["tools", "list"]);
    cmd.env("TACKLE_TOOLS_TIMEOUT_SEC", "30");
    let r = run(cmd);
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("TACKLE_TOOLS_TIMEOUT_SEC:"), "{r}");
}

// ---------------------------------------------------------------------------------------------
// Agent tools are offered only where an agent runs (`tools list` shows them, marked; see
// tests/cli_tools.rs).

#[test]
fn run_still_offers_compact_to_the_model() {
    let Some(llm) = FakeLlm::start(concat!(
        "rules:\n",
        "  - name: offered\n    when: {tools_include: compact}\n    respond: {content: \"compact is offered\"}\n",
        "  - name: missing\n    when: {messages_contain: \"which tools\"}\n    respond: {content: \"compact is missing\"}\n",
    )) else {
        return;
    };
    let sb = Sandbox::new();
    let cfg = sb.config(&llm.backend_yaml("openai", false));
    let r = run(sb.tackle(&cfg, &["run", "-m", "which tools"]));
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stdout.contains("compact is offered"), "{r}");
}
