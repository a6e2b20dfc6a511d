//! When a call needs approval and no one can be asked, the message names what would work for
//! that tool's approval mode and config, in every front end that cannot ask.

mod common;

use common::{run, Sandbox};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

struct Case {
    name: &'static str,
    yaml: &'static str,
    tool: &'static str,
    args: &'static str,
    /// The call runs without asking.
    runs: bool,
    /// Text the hint must contain / must not contain.
    must: &'static [&'static str],
    must_not: &'static [&'static str],
}

const CASES: &[Case] = &[
    Case {
        name: "never",
        yaml: "security:\n  tool_policies:\n    calculate:\n      approval: never\n",
        tool: "calculate",
        args: r#"{"expression":"1+1"}"#,
        runs: true,
        must: &[],
        must_not: &[],
    },
    Case {
        name: "unless_auto_approved, listed",
        yaml: "security:\n  auto_approved_tools: [calculate]\n  tool_policies:\n    calculate:\n      approval: unless_auto_approved\n",
        tool: "calculate",
        args: r#"{"expression":"1+1"}"#,
        runs: true,
        must: &[],
        must_not: &[],
    },
    Case {
        name: "unless_auto_approved, not listed",
        yaml: "security:\n  tool_policies:\n    calculate:\n      approval: unless_auto_approved\n",
        tool: "calculate",
        args: r#"{"expression":"1+1"}"#,
        runs: false,
        must: &["add `calculate` to `security.auto_approved_tools`"],
        must_not: &["tool_policies.calculate.approval: unless_auto_approved"],
    },
    Case {
        name: "always, not listed",
        yaml: "security:\n  tool_policies:\n    calculate:\n      approval: always\n",
        tool: "calculate",
        args: r#"{"expression":"1+1"}"#,
        runs: false,
        must: &["security.tool_policies.calculate.approval: unless_auto_approved"],
        must_not: &[],
    },
    Case {
        name: "always, listed (the list cannot help alone)",
        yaml: "security:\n  auto_approved_tools: [calculate]\n  tool_policies:\n    calculate:\n      approval: always\n",
        tool: "calculate",
        args: r#"{"expression":"1+1"}"#,
        runs: false,
        must: &["security.tool_policies.calculate.approval: unless_auto_approved"],
        must_not: &[],
    },
    Case {
        name: "arguments that always ask (git push), tool listed",
        yaml: "security:\n  auto_approved_tools: [git]\n",
        tool: "git",
        args: r#"{"action":"push","args":["origin","main"]}"#,
        runs: false,
        must: &[],
        must_not: &["auto_approved_tools", "tool_policies"],
    },
    Case {
        name: "a line the analyser cannot read, under opaque: ask",
        yaml: "security:\n  auto_approved_tools: [shell]\n  tool_policies:\n    shell:\n      approval: unless_auto_approved\n      grants:\n        shell:\n          deny: [rm]\n          opaque: ask\n",
        tool: "shell",
        args: r#"{"command":"eval \"$X\""}"#,
        runs: false,
        must: &[],
        must_not: &["auto_approved_tools", "tool_policies"],
    },
];

fn check_hint(case: &Case, front: &str, text: &str) {
    for m in case.must {
        assert!(
            text.contains(m),
            "{front} / {}: missing {m:?} in\n{text}",
            case.name
        );
    }
    for m in case.must_not {
        assert!(
            !text.contains(m),
            "{front} / {}: should not suggest {m:?}:\n{text}",
            case.name
        );
    }
}

#[test]
fn tools_call_names_what_would_let_the_call_run() {
    for case in CASES {
        let sb = Sandbox::new();
        let cfg = sb.config(case.yaml);
        let r = run(sb.tackle(&cfg, &["tools", "call", case.tool, case.args, "--json"]));
        let v: Value = serde_json::from_str(r.stdout.trim())
            .unwrap_or_else(|e| panic!("{}: not JSON ({e})\n{r}", case.name));
        if case.runs {
            assert_ne!(r.code, 4, "{}: asked\n{r}", case.name);
            continue;
        }
        assert_eq!(r.code, 4, "{}\n{r}", case.name);
        assert_eq!(v["error"]["kind"], "needs_approval", "{}\n{r}", case.name);
        let msg = v["error"]["message"].as_str().unwrap_or_default();
        assert!(
            msg.contains("--yes"),
            "{}: --yes not offered\n{msg}",
            case.name
        );
        assert_eq!(msg.matches("needs approval").count(), 1, "said once: {msg}");
        check_hint(case, "tools call", msg);
    }
}

/// `mcp serve` over stdio to a client that declared no elicitation capability.
fn mcp_call(sb: &Sandbox, yaml: &str, tool: &str, args: &str) -> Value {
    let cfg = sb.config(yaml);
    let mut child = sb
        .tackle(&cfg, &["mcp", "serve"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn mcp serve");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut send = |v: Value| {
        writeln!(stdin, "{v}").expect("write");
        stdin.flush().expect("flush");
    };
    let mut read_id = |id: i64| -> Value {
        loop {
            let mut line = String::new();
            if out.read_line(&mut line).unwrap_or(0) == 0 {
                panic!("mcp serve closed its output");
            }
            if let Ok(v) = serde_json::from_str::<Value>(&line) {
                if v["id"] == id {
                    return v;
                }
            }
        }
    };
    send(
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"hint-test","version":"1"}}}),
    );
    read_id(1);
    send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
    let arguments: Value = serde_json::from_str(args).expect("args");
    send(
        json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":tool,"arguments":arguments}}),
    );
    let answer = read_id(2);
    let _ = child.kill();
    let _ = child.wait();
    answer
}

#[test]
fn mcp_serve_names_what_would_let_the_call_run() {
    for case in CASES {
        let sb = Sandbox::new();
        let answer = mcp_call(&sb, case.yaml, case.tool, case.args);
        let result = &answer["result"];
        let text: String = result["content"]
            .as_array()
            .map(|a| a.iter().filter_map(|c| c["text"].as_str()).collect())
            .unwrap_or_default();
        if case.runs {
            assert!(!text.contains("needs approval"), "{}: {answer}", case.name);
            continue;
        }
        assert_eq!(result["isError"], true, "{}: {answer}", case.name);
        assert!(text.contains("needs approval"), "{}: {answer}", case.name);
        assert!(text.contains("elicitation"), "{}: {text}", case.name);
        check_hint(case, "mcp serve", &text);
    }
}
