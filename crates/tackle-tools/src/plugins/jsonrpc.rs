//! `execution: binary` (README, "Plugins"): one process per call; stdin gets one JSON-RPC request,
//! the last non-empty stdout line holds the response.

use serde_json::{json, Value};
use tackle_protocol::{ExecOutput, ToolError, ToolOutput};

/// The request line written to the binary's stdin.
pub fn request(tool: &str, args: &Value) -> Vec<u8> {
    let mut line = json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "execute",
        "params": {"tool": tool, "args": args},
    })
    .to_string();
    line.push('\n');
    line.into_bytes()
}

/// The call's result: `result.output` as text, `error` as a failure, anything else a failure
/// that says what was wrong.
pub fn response(tool: &str, out: &ExecOutput, timeout_secs: u64) -> Result<ToolOutput, ToolError> {
    if out.timed_out {
        return Err(ToolError::timeout(format!(
            "plugin tool `{tool}` timed out after {timeout_secs}s and was killed"
        )));
    }
    if out.exit_code != Some(0) {
        let status = out.exit_code.map_or_else(
            || "was killed by a signal".to_string(),
            |c| format!("exited with {c}"),
        );
        return Err(ToolError::failed(format!(
            "plugin tool `{tool}` {status}; stderr:\n{}",
            out.stderr
        )));
    }
    let Some(last) = out.stdout.lines().rev().find(|l| !l.trim().is_empty()) else {
        return Err(ToolError::failed(format!(
            "plugin tool `{tool}` wrote no JSON-RPC response on stdout"
        )));
    };
    let v: Value = serde_json::from_str(last).map_err(|e| {
        ToolError::failed(format!(
            "plugin tool `{tool}`: the last stdout line is not a JSON-RPC response: {e}"
        ))
    })?;
    if let Some(err) = v.get("error") {
        let code = err.get("code").and_then(Value::as_i64).unwrap_or(0);
        let message = err
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("(no message)");
        return Err(ToolError::failed(format!(
            "plugin tool `{tool}` answered error {code}: {message}"
        )));
    }
    match v.pointer("/result/output") {
        Some(Value::String(s)) => Ok(ToolOutput::text(s.clone())),
        _ => Err(ToolError::failed(format!(
            "plugin tool `{tool}`: the response has neither `result.output` (a string) nor `error`"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tackle_protocol::ErrorKind;

    fn out(code: i32, stdout: &str) -> ExecOutput {
        ExecOutput {
            exit_code: Some(code),
            stdout: stdout.into(),
            stderr: "boom".into(),
            duration: Duration::from_millis(1),
            truncated: false,
            timed_out: false,
        }
    }

    #[test]
    fn the_request_names_the_tool_and_carries_the_args() {
        let r: Value = serde_json::from_slice(&request("t", &json!({"a": 1}))).unwrap();
        assert_eq!(r["method"], "execute");
        assert_eq!(r["params"], json!({"tool": "t", "args": {"a": 1}}));
    }

    #[test]
    fn the_last_non_empty_line_is_the_response() {
        let ok = response(
            "t",
            &out(
                0,
                "log line\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"output\":\"hi\"}}\n\n",
            ),
            5,
        );
        assert_eq!(ok.map(|o| o.content), Ok("hi".to_string()));
        let err = response(
            "t",
            &out(
                0,
                "{\"id\":1,\"error\":{\"code\":-32000,\"message\":\"nope\"}}",
            ),
            5,
        );
        assert!(err.is_err_and(|e| e.kind == ErrorKind::Failed && e.message.contains("nope")));
        let junk = response("t", &out(0, "not json"), 5);
        assert!(junk.is_err());
        let failed = response("t", &out(2, ""), 5);
        assert!(failed
            .is_err_and(|e| e.message.contains("exited with 2") && e.message.contains("boom")));
    }
}
