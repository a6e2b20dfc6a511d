//! Errors reach a person in plain words (issue: Rust debug output on the terminal): a backend
//! that cannot be reached, MCP servers that fail to start or refuse the handshake with JSON-RPC
//! error data, and `-v` logs of a working server. None may show a type path, a struct dump, a
//! `Duration` in debug form or the SDK's `peer_info`.

mod common;

use common::{free_port, run, tackle_bin, Run, Sandbox};
use serde_json::Value;

/// What debug output looks like; `text` must hold none of it.
fn assert_plain(what: &str, text: &str) {
    for leak in [
        "::",
        "ErrorData {",
        "ErrorCode(",
        "reqwest::Error",
        "Some(",
        "peer_info",
        "ServerCapabilities",
    ] {
        assert!(!text.contains(leak), "{what}: `{leak}` shown:\n{text}");
    }
    // `Name { field: …` is a struct dump.
    let dumped = text.match_indices(" { ").any(|(i, _)| {
        let before = text.get(..i).unwrap_or_default();
        let after = text.get(i + 3..).unwrap_or_default();
        before.ends_with(|c: char| c.is_ascii_alphanumeric())
            && after
                .split_once(": ")
                .is_some_and(|(field, _)| field.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
    });
    assert!(!dumped, "{what}: a struct dump shown:\n{text}");
    assert!(
        !has_debug_duration(text),
        "{what}: a debug Duration shown:\n{text}"
    );
}

/// `288.188443ms`, `1.50000001s`: a number with four or more decimals right before a unit.
fn has_debug_duration(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'.' && i > 0 && bytes[i - 1].is_ascii_digit() {
            let digits = bytes[i + 1..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count();
            let rest = text.get(i + 1 + digits..).unwrap_or_default();
            if digits >= 4 && ["ms", "s", "µs", "ns"].iter().any(|u| rest.starts_with(u)) {
                return true;
            }
            i += digits;
        }
        i += 1;
    }
    false
}

#[test]
fn an_unreachable_backend_is_said_in_plain_words() {
    let sb = Sandbox::new();
    let port = free_port();
    let cfg = sb.config(&format!(
        "backends:\n  - name: dead\n    type: openai\n    api_base: http://127.0.0.1:{port}/v1\n    api_key: test-key-not-secret\n    stream: false\n    timeouts: {{connect_secs: 2}}\n    models:\n      - name: m\n"
    ));
    let r = run(sb.tackle(&cfg, &["run", "-m", "hi"]));
    assert_eq!(r.code, 1, "{r}");
    let last = r.stderr.lines().last().unwrap_or_default();
    assert!(last.starts_with("error: "), "{r}");
    assert!(last.contains("dead"), "names the backend\n{r}");
    assert_plain("run", &r.stderr);

    let r = run(sb.tackle(&cfg, &["run", "-m", "hi", "--json"]));
    assert_eq!(r.code, 1, "{r}");
    assert_plain("run --json", &r.stdout);
    assert_plain("run --json", &r.stderr);
}

/// A stdio "server" that first sends a notification no client expects before the handshake
/// (the SDK logs it as a warning with the message attached as a struct), then answers
/// `initialize` with a JSON-RPC error carrying data.
const REFUSING_SERVER: &str = r#"read line; id=$(printf '%s' "$line" | sed 's/.*"id":\([0-9]*\).*/\1/'); printf '{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n'; printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32022,"message":"unsupported client","data":{"why":"old"}}}\n' "$id"; sleep 5"#;

#[test]
fn mcp_servers_that_fail_to_start_are_said_in_plain_words() {
    let sb = Sandbox::new();
    let cfg = sb.config(&format!(
        "mcp_servers:\n  missing:\n    command: /nonexistent/mcp-server\n  quits:\n    command: sh\n    args: [\"-c\", \"exit 3\"]\n  refuses:\n    command: sh\n    args: [\"-c\", {}]\n    startup_timeout_secs: 5\n",
        serde_json::to_string(REFUSING_SERVER).expect("json")
    ));
    let r = run(sb.tackle(&cfg, &["mcp", "list"]));
    assert_eq!(r.code, 1, "every server failed\n{r}");
    assert!(r.stdout.contains("unsupported client"), "{r}");
    assert_plain("mcp list", &r.stdout);
    assert_plain("mcp list", &r.stderr);

    let r = run(sb.tackle(&cfg, &["mcp", "list", "--json"]));
    assert_eq!(r.code, 1, "{r}");
    let rows: Value = serde_json::from_str(&r.stdout).expect("JSON");
    let rows = rows.as_array().expect("array");
    assert_eq!(rows.len(), 3, "{r}");
    for row in rows {
        assert_eq!(row["state"], "failed", "{r}");
        let error = row["error"].as_str().unwrap_or_default();
        assert!(!error.is_empty(), "{r}");
        assert_plain("mcp list --json", error);
    }

    let r = run(sb.tackle(&cfg, &["tools", "call", "refuses__anything", "{}"]));
    assert_ne!(r.code, 0, "{r}");
    assert_plain("tools call", &r.stderr);
}

/// The SDK's own info lines dump its structs; `-v` shows Tackle's lines only.
#[test]
fn verbose_logs_of_a_working_server_dump_no_structs() {
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
    let cfg = sb.config(&format!(
        "mcp_servers:\n  inner:\n    command: {}\n    args: [\"--config\", {}, \"--workspace\", {}, \"mcp\", \"serve\"]\n",
        serde_json::to_string(&tackle_bin().display().to_string()).expect("json"),
        serde_json::to_string(&inner.display().to_string()).expect("json"),
        serde_json::to_string(&sb.workspace().display().to_string()).expect("json"),
    ));
    let r: Run = run(sb.tackle(&cfg, &["-v", "mcp", "list"]));
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stdout.contains("inner: ready"), "{r}");
    assert!(r.stderr.contains("MCP server ready"), "-v still logs\n{r}");
    assert_plain("-v mcp list", &r.stderr);
}
