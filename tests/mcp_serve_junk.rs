//! `tackle mcp serve` over stdio answers input that is no JSON-RPC message with a JSON-RPC
//! error (id null) instead of dropping it without a word, and keeps serving.

mod common;

use serde_json::Value;
use std::io::Write;
use std::process::{Command, Stdio};

#[test]
fn mcp_serve_stdio_answers_junk_with_json_rpc_errors_and_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.yaml");
    std::fs::write(
        &cfg,
        format!(
            "state_dir: {}\nworkspace: {}\n",
            dir.path().join("state").display(),
            dir.path().display()
        ),
    )
    .unwrap();
    let mut child = Command::new(common::tackle_bin())
        .arg("--config")
        .arg(&cfg)
        .args(["mcp", "serve"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let init = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}
    });
    {
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, "hello").unwrap();
        writeln!(stdin, "{{\"hello\": 1}}").unwrap();
        writeln!(stdin, "{init}").unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let replies: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?} is not JSON: {e}")))
        .collect();
    let errors: Vec<&Value> = replies
        .iter()
        .filter(|r| r.get("error").is_some())
        .collect();
    assert_eq!(errors.len(), 2, "{replies:?}");
    for e in &errors {
        assert_eq!(e["jsonrpc"], "2.0");
        assert!(e.get("id").is_some_and(Value::is_null), "{e}");
    }
    assert!(
        errors.iter().any(|e| e["error"]["code"] == -32700),
        "{errors:?}"
    );
    assert!(
        errors.iter().any(|e| e["error"]["code"] == -32600),
        "{errors:?}"
    );
    assert!(
        replies
            .iter()
            .any(|r| r["id"] == 1 && r.get("result").is_some()),
        "the handshake after the junk is answered: {replies:?}"
    );
}
