//! `tackle tools …` through the real binary: exit codes and JSON shape of the README's "Using it".

mod common;

use common::{run, Sandbox};
use serde_json::Value;

fn json_of(stdout: &str) -> Value {
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

#[test]
fn calculate_returns_ok_json() {
    let sb = Sandbox::new();
    let cfg = sb.config("");
    let r = run(sb.tackle(
        &cfg,
        &[
            "tools",
            "call",
            "calculate",
            r#"{"expression": "2 * pi * 6371"}"#,
            "--json",
        ],
    ));
    assert_eq!(r.code, 0, "{r}");
    let v = json_of(&r.stdout);
    assert_eq!(v["ok"], true);
    let content = v["content"].as_str().unwrap_or_default();
    assert!(content.starts_with("40030.17"), "{content}");
}

#[test]
fn missing_arguments_exit_1_with_invalid_arguments_naming_the_field() {
    let sb = Sandbox::new();
    let cfg = sb.config("");
    let r = run(sb.tackle(&cfg, &["tools", "call", "calculate", "{}", "--json"]));
    assert_eq!(r.code, 1, "{r}");
    let v = json_of(&r.stdout);
    assert_eq!(v["ok"], false);
    assert_eq!(v["error"]["kind"], "invalid_arguments");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("expression"),
        "{r}"
    );
}

#[test]
fn unknown_tools_are_not_found_with_suggestions() {
    let sb = Sandbox::new();
    let cfg = sb.config("");
    let r = run(sb.tackle(&cfg, &["tools", "call", "calculat", "{}", "--json"]));
    assert_eq!(r.code, 6, "not found (README, exit codes)\n{r}");
    let v = json_of(&r.stdout);
    assert_eq!(v["error"]["kind"], "not_found");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("calculate"),
        "{r}"
    );
}

#[test]
fn arguments_that_are_not_json_are_a_usage_error() {
    let sb = Sandbox::new();
    let cfg = sb.config("");
    let r = run(sb.tackle(&cfg, &["tools", "call", "calculate", "{expression:"]));
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("not valid JSON"), "{r}");
}

/// `--json` promises `ok` and `error` on stdout whatever happened (README, "Using it"): also
/// when the arguments never reached the tool.
#[test]
fn arguments_that_are_not_json_still_print_the_json_error_object() {
    let sb = Sandbox::new();
    let cfg = sb.config("");
    let r = run(sb.tackle(
        &cfg,
        &["tools", "call", "calculate", "{expression:", "--json"],
    ));
    assert_eq!(r.code, 2, "{r}");
    let v = json_of(&r.stdout);
    assert_eq!(v["ok"], false, "{r}");
    assert_eq!(v["error"]["kind"], "invalid_arguments", "{r}");
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("not valid JSON"), "{r}");
}

#[test]
fn the_example_config_loads_and_lists_tools_as_json() {
    let sb = Sandbox::new();
    let example = common::repo_root().join("config.example.yaml");
    let mut cmd = sb.tackle(&example, &["tools", "list", "--json"]);
    cmd.env("XDG_STATE_HOME", sb.state());
    let r = run(cmd);
    assert_eq!(r.code, 0, "{r}");
    let rows = json_of(&r.stdout);
    let rows = rows.as_array().expect("array");
    for row in rows {
        for key in ["name", "owner", "risk", "approval"] {
            assert!(row.get(key).is_some(), "{row} lacks {key}");
        }
    }
    let names: Vec<&str> = rows.iter().filter_map(|r| r["name"].as_str()).collect();
    assert!(
        names.contains(&"calculate") && names.contains(&"shell") && names.contains(&"read_file"),
        "{names:?}"
    );
}

#[test]
fn coding_tools_appear_only_when_enabled() {
    let sb = Sandbox::new();
    let cfg = sb.config("");
    let names = |extra: &[&str], env: Option<(&str, &str)>| {
        let mut args = vec!["tools", "list", "--json"];
        args.extend_from_slice(extra);
        let mut cmd = sb.tackle(&cfg, &args);
        if let Some((k, v)) = env {
            cmd.env(k, v);
        }
        let r = run(cmd);
        assert_eq!(r.code, 0, "{r}");
        json_of(&r.stdout)
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|r| r["name"].as_str().map(str::to_string))
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
    };
    let plain = names(&[], None);
    assert!(
        !plain.iter().any(|n| n == "grep" || n == "find"),
        "{plain:?}"
    );
    for enabled in [
        names(&["--template", "coder"], None),
        names(&[], Some(("TACKLE_TOOLS_CODING_TOOLS", "true"))),
    ] {
        assert!(
            enabled.iter().any(|n| n == "grep") && enabled.iter().any(|n| n == "find"),
            "{enabled:?}"
        );
    }
}

#[test]
fn an_unknown_config_key_is_exit_2_naming_its_path() {
    let sb = Sandbox::new();
    let cfg = sb.config("tools:\n  codng_tools: true\n");
    let r = run(sb.tackle(&cfg, &["tools", "list"]));
    assert_eq!(r.code, 2, "{r}");
    assert!(
        r.stderr.contains("tools") && r.stderr.contains("codng_tools"),
        "{r}"
    );
}

#[test]
fn a_missing_explicit_config_file_is_exit_2() {
    let sb = Sandbox::new();
    let missing = sb.dir.path().join("nope.yaml");
    let r = run(sb.tackle(&missing, &["tools", "list"]));
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("nope.yaml"), "{r}");
}

#[test]
fn describe_prints_the_full_schema() {
    let sb = Sandbox::new();
    let cfg = sb.config("");
    let r = run(sb.tackle(&cfg, &["tools", "describe", "calculate"]));
    assert_eq!(r.code, 0, "{r}");
    assert!(
        r.stdout.contains("\"expression\"") && r.stdout.contains("\"required\""),
        "{r}"
    );
}

/// A tool whose cargo feature is off in this build is listed nowhere, and naming it says which
/// feature builds it (describe and call alike), instead of a bare "unknown tool".
#[test]
fn a_tool_whose_feature_is_off_names_the_feature() {
    let gated = [
        ("android", "android", cfg!(feature = "android")),
        ("screenshot", "screenshot", cfg!(feature = "screenshot")),
        ("pdf_read", "tool-pdf", cfg!(feature = "tool-pdf")),
        ("hardware", "hardware", cfg!(feature = "hardware")),
    ];
    let sb = Sandbox::new();
    let cfg = sb.config("");
    let list = run(sb.tackle(&cfg, &["tools", "list", "--json"]));
    assert_eq!(list.code, 0, "{list}");
    for (tool, feature, built) in gated {
        if built {
            assert!(
                list.stdout.contains(&format!("\"{tool}\"")),
                "{tool} missing: {list}"
            );
            continue;
        }
        assert!(
            !list.stdout.contains(&format!("\"{tool}\"")),
            "{tool} listed: {list}"
        );
        let described = run(sb.tackle(&cfg, &["tools", "describe", tool]));
        assert_eq!(described.code, 1, "{described}");
        assert!(described.stderr.starts_with("error: "), "{described}");
        assert!(described.stderr.contains(feature), "{described}");
        let called = run(sb.tackle(&cfg, &["tools", "call", tool, "{}", "--json"]));
        assert_eq!(called.code, 1, "{called}");
        let v = json_of(&called.stdout);
        assert_eq!(v["error"]["kind"], "failed", "{called}");
        let message = v["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(&format!("`{feature}`")), "{called}");
    }
}

/// A configured MCP server that never answers delays only calls to its own tools: a built-in
/// call returns at once, and exits without waiting for the server either.
#[test]
fn a_hung_mcp_server_does_not_delay_built_in_calls() {
    let sb = Sandbox::new();
    let cfg = sb.config(
        "mcp_servers:\n  hang:\n    command: sleep\n    args: [\"1000\"]\n    startup_timeout_secs: 30\n",
    );
    let r = run(sb.tackle(
        &cfg,
        &[
            "tools",
            "call",
            "calculate",
            r#"{"expression": "1+1"}"#,
            "--json",
        ],
    ));
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(json_of(&r.stdout)["content"], "2", "{r}");
    // Far below the server's 30 s start-up timeout, which the call used to wait out.
    assert!(
        r.elapsed < std::time::Duration::from_secs(5),
        "took {:?}\n{r}",
        r.elapsed
    );
}

#[test]
fn the_session_tmpdir_is_removed_when_the_command_ends() {
    let sb = Sandbox::new();
    let cfg = sb.config("");
    let r = run(sb.tackle(
        &cfg,
        &[
            "tools",
            "call",
            "shell",
            r#"{"command": "echo left > \"$TMPDIR/left.txt\" && echo \"$TMPDIR\""}"#,
            "--yes",
        ],
    ));
    assert_eq!(r.code, 0, "{r}");
    let line = r.stdout.lines().find(|l| l.starts_with('/'));
    let tmpdir = std::path::PathBuf::from(line.unwrap_or_else(|| panic!("no TMPDIR printed\n{r}")));
    assert!(
        tmpdir.starts_with(sb.state()),
        "the TMPDIR lives in the state dir: {}",
        tmpdir.display()
    );
    assert!(
        !tmpdir.exists(),
        "{} outlived the command",
        tmpdir.display()
    );
}

#[test]
fn a_server_that_keeps_failing_is_warned_about_once() {
    use std::io::Read;
    let sb = Sandbox::new();
    let cfg = sb.config("mcp_servers:\n  broken:\n    command: \"false\"\n");
    let mut child = sb
        .tackle(&cfg, &["mcp", "serve"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    // Restarts come after 0.5 s, 1 s and 2 s: four failures in four seconds.
    std::thread::sleep(std::time::Duration::from_secs(4));
    drop(child.stdin.take());
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut stderr);
    }
    let _ = child.wait();
    assert_eq!(
        stderr.matches("MCP server failed").count(),
        1,
        "one warning per outage:\n{stderr}"
    );
    assert!(stderr.contains("broken"), "names the server:\n{stderr}");
}

#[test]
fn tools_list_starts_no_mcp_server_unless_asked() {
    let sb = Sandbox::new();
    let marker = sb.dir.path().join("server-started");
    // A "server" that leaves a mark when started, then hangs.
    let cfg = sb.config(&format!(
        "mcp_servers:\n  slow:\n    command: sh\n    args: [\"-c\", \"touch {}; sleep 30\"]\n    startup_timeout_secs: 2\n",
        marker.display()
    ));
    let r = run(sb.tackle(&cfg, &["tools", "list", "--json"]));
    assert_eq!(r.code, 0, "{r}");
    assert!(r.elapsed < std::time::Duration::from_secs(2), "waited: {r}");
    let rows: Value = serde_json::from_str(&r.stdout).expect("json");
    assert!(rows
        .as_array()
        .is_some_and(|a| a.iter().any(|t| t["name"] == "calculate")));
    assert!(
        r.stderr.contains("slow"),
        "says which servers it did not start: {r}"
    );
    assert!(!marker.exists(), "a server was started");
    // Asked for: it starts them (and here waits out the start-up timeout).
    let r = run(sb.tackle(&cfg, &["tools", "list", "--mcp", "--json"]));
    assert_eq!(r.code, 0, "{r}");
    assert!(marker.exists(), "--mcp did not start the server");
}

#[test]
fn listing_tools_creates_no_state_database() {
    // A listing reads no state, so it leaves none behind: not even an empty database.
    let sb = Sandbox::new();
    let cfg = sb.config("");
    let r = run(sb.tackle(&cfg, &["tools", "list", "--json"]));
    assert_eq!(r.code, 0, "{r}");
    let names: Vec<String> = json_of(&r.stdout)
        .as_array()
        .map(|rows| {
            rows.iter()
                .filter_map(|row| row["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    assert!(names.iter().any(|n| n == "calculate"), "{r}");
    assert!(
        !sb.state().join("tackle.db").exists(),
        "`tools list` created the state database"
    );
    // A command that records something still opens (and creates) it.
    let r = run(sb.tackle(
        &cfg,
        &["tools", "call", "calculate", r#"{"expression": "1+1"}"#],
    ));
    assert_eq!(r.code, 0, "{r}");
    assert!(sb.state().join("tackle.db").exists(), "{r}");
}

/// A one-request model server on 127.0.0.1: answers one OpenAI chat request with "ok" and
/// hands back the request's body.
fn capture_one_request() -> (u16, std::thread::JoinHandle<String>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let handle = std::thread::spawn(move || {
        let (stream, _) = listener.accept().expect("accept");
        let mut reader = BufReader::new(stream.try_clone().expect("clone"));
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0u8; length];
        reader.read_exact(&mut body).expect("body");
        let answer = r#"{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}"#;
        let mut stream = stream;
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
            answer.len()
        );
        String::from_utf8_lossy(&body).into_owned()
    });
    (port, handle)
}

/// `tools list` shows exactly the tools the model is offered in `tackle run` (issue: it showed
/// 35 of 41), the conversation-only ones marked; `describe` describes those too, and `call`
/// still says where they work.
#[test]
fn tools_list_shows_exactly_what_the_model_is_offered() {
    let (port, request) = capture_one_request();
    let sb = Sandbox::new();
    let cfg = sb.config(&format!(
        "backends:\n  - name: cap\n    type: openai\n    api_base: http://127.0.0.1:{port}/v1\n    api_key: test-key-not-secret\n    stream: false\n    models:\n      - name: m\n"
    ));
    let r = run(sb.tackle(&cfg, &["run", "-m", "hi"]));
    assert_eq!(r.code, 0, "{r}");
    let body: Value = serde_json::from_str(&request.join().expect("server")).expect("json body");
    let mut offered: Vec<String> = body["tools"]
        .as_array()
        .expect("tools sent")
        .iter()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
        .collect();
    offered.sort();

    let r = run(sb.tackle(&cfg, &["tools", "list", "--json"]));
    assert_eq!(r.code, 0, "{r}");
    let rows = json_of(&r.stdout);
    let rows = rows.as_array().expect("array");
    let mut listed: Vec<String> = rows
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect();
    listed.sort();
    assert_eq!(listed, offered, "tools list and the model's tools differ");
    let marked = |name: &str| {
        rows.iter()
            .find(|t| t["name"] == name)
            .map(|t| t["conversation_only"].clone())
    };
    assert_eq!(marked("spawn_worker"), Some(Value::Bool(true)));
    assert_eq!(marked("compact"), Some(Value::Bool(true)));
    assert_eq!(marked("calculate"), Some(Value::Bool(false)));

    let text = run(sb.tackle(&cfg, &["tools", "list"]));
    let line = text
        .stdout
        .lines()
        .find(|l| l.starts_with("spawn_worker "))
        .unwrap_or_default();
    assert!(line.contains("conversation only"), "{text}");

    let described = run(sb.tackle(&cfg, &["tools", "describe", "spawn_worker"]));
    assert_eq!(described.code, 0, "{described}");
    assert!(
        described.stdout.contains("conversation only"),
        "{described}"
    );

    let called = run(sb.tackle(&cfg, &["tools", "call", "compact", "{}", "--json"]));
    assert_eq!(called.code, 1, "{called}");
    let v = json_of(&called.stdout);
    assert_eq!(v["ok"], false, "{called}");
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("tackle run"), "{called}");
}
