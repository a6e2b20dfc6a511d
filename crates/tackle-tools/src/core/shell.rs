//! `shell {command, timeout_secs?, cwd?}`: one shell line through `host.exec`, which runs the
//! shell analyser over every command in it and sandboxes the process.

use crate::fs::resolve;
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use std::time::Duration;
use tackle_protocol::{
    ApprovalMode, Capability, ExecCommand, ExecOutput, ExecRequest, OutputLines, Risk, Tool,
    ToolContext, ToolError, ToolOutput, ToolSpec,
};

const DEFAULT_TIMEOUT_SECS: u64 = 120;
const MAX_TIMEOUT_SECS: u64 = 600;
/// Per stream; both together stay under the sanitizer's 50 KB cut.
const MAX_STREAM_BYTES: usize = 24_000;

/// The `shell` tool: runs one shell line through `host.exec` (analysed and sandboxed there).
pub struct Shell;

// Arguments of `shell` (a plain comment, so not sent as the schema's description).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The command line, e.g. `cargo test 2>&1 | tail -20`.
    command: String,
    /// Kill the command after this many seconds. Default 120.
    #[schemars(range(min = 1, max = MAX_TIMEOUT_SECS))]
    timeout_secs: Option<u64>,
    /// Working directory, relative to the workspace or absolute. Default: the workspace.
    cwd: Option<String>,
}

#[async_trait]
impl Tool for Shell {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "shell",
            "Run a shell command line (sh -c) in the workspace and return its exit code, stdout and \
             stderr. A non-zero exit is reported, not raised. Commands are checked against the shell \
             policy; interactive programs will not get input.",
            "core",
        )
        .risk(Risk::High)
        .approval(ApprovalMode::Always)
        .parameters(crate::args::schema::<Args>())
    }

    fn planned_capabilities(&self, args: &Value, _cx: &ToolContext) -> Vec<Capability> {
        let command = args
            .get("command")
            .and_then(Value::as_str)
            .unwrap_or_default();
        vec![Capability::Shell {
            command: command.to_string(),
        }]
    }

    fn timeout(&self) -> Option<Duration> {
        // The command's own timeout governs; the dispatcher's only backs it up.
        Some(Duration::from_secs(MAX_TIMEOUT_SECS + 15))
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = crate::args::parse(args)?;
        crate::fs::non_empty("command", &args.command)?;
        let secs = args
            .timeout_secs
            .unwrap_or(DEFAULT_TIMEOUT_SECS)
            .clamp(1, MAX_TIMEOUT_SECS);
        let req = ExecRequest {
            command: ExecCommand::Shell(args.command),
            cwd: Some(
                args.cwd
                    .as_deref()
                    .map_or_else(|| cx.host().workspace().to_path_buf(), |c| resolve(cx, c)),
            ),
            timeout: Duration::from_secs(secs),
            env: Vec::new(),
            stdin: None,
            max_output_bytes: MAX_STREAM_BYTES,
            // Its output lines, as they come, to a front end that shows progress.
            output_lines: cx.progress().cloned().map(OutputLines),
            program_sha256: None,
            data_values: Vec::new(),
        };
        let out = cx.host().exec(req).await?;
        finish(&out, secs)
    }
}

/// A timed-out run is a `timeout` error carrying what was captured; any exit code is a result.
pub(crate) fn finish(out: &ExecOutput, secs: u64) -> Result<ToolOutput, ToolError> {
    let text = render_exec(out);
    if out.timed_out {
        return Err(ToolError::timeout(format!(
            "timed out after {secs}s and was killed; output so far:\n{text}"
        )));
    }
    let structured = json!({
        "exit_code": out.exit_code,
        "duration_ms": out.duration.as_millis() as u64,
        "truncated": out.truncated,
    });
    let result = if out.exit_code == Some(0) {
        ToolOutput::text(text)
    } else {
        ToolOutput::error_text(text)
    };
    Ok(result.with_structured(structured))
}

/// The labelled text a model reads for a finished process.
pub(crate) fn render_exec(out: &ExecOutput) -> String {
    let status = match out.exit_code {
        Some(code) => format!("exit code: {code}"),
        None if out.timed_out => "exit code: none (killed at the time limit)".to_string(),
        None => "exit code: none (killed by a signal)".to_string(),
    };
    let mut text = format!("{status} ({:.2}s)\n", out.duration.as_secs_f64());
    for (label, body) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        if body.is_empty() {
            text.push_str(&format!("{label}: (empty)\n"));
        } else {
            text.push_str(&format!("{label}:\n{body}"));
            if !body.ends_with('\n') {
                text.push('\n');
            }
        }
    }
    if out.truncated {
        text.push_str(&format!("[output cut at {MAX_STREAM_BYTES} bytes per stream; redirect to a file and read_file it for all]\n"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock_host::{exec_ok, MockHost};
    use std::sync::Arc;
    use tackle_protocol::{ErrorKind, HostError};

    #[tokio::test]
    async fn shell_schema_keeps_its_names_and_refuses_unknown_or_missing_arguments() {
        let schema = Shell.spec().parameters;
        crate::args::contract::assert_names(
            &schema,
            &["command", "timeout_secs", "cwd"],
            &["command"],
        );
        let valid = json!({"command": "ls", "timeout_secs": 5, "cwd": "src"});
        crate::args::contract::assert_refusals(&Shell, valid, &["command"]).await;
        let accepts = crate::args::contract::accepts;
        assert!(!accepts(
            &schema,
            &json!({"command": "ls", "timeout_secs": 0})
        ));
        assert!(!accepts(
            &schema,
            &json!({"command": "ls", "timeout_secs": 601})
        ));
    }

    #[tokio::test]
    async fn output_is_labelled_and_the_request_is_a_shell_line_in_the_workspace() {
        let host = Arc::new(MockHost::new());
        host.reply_exec(Ok(exec_ok(0, "hi\n", "")));
        let out = Shell
            .call(json!({"command": "echo hi"}), &host.context())
            .await;
        let out = out.map(|o| (o.content, o.is_error));
        assert_eq!(
            out,
            Ok((
                "exit code: 0 (0.01s)\nstdout:\nhi\nstderr: (empty)\n".to_string(),
                false
            ))
        );
        let reqs = host.exec_requests();
        assert_eq!(reqs[0].command, ExecCommand::Shell("echo hi".into()));
        assert_eq!(reqs[0].cwd.as_deref(), Some(std::path::Path::new("/ws")));
        assert_eq!(reqs[0].timeout, Duration::from_secs(120));
        assert_eq!(
            host.capabilities(),
            vec![Capability::Shell {
                command: "echo hi".into()
            }]
        );
    }

    #[tokio::test]
    async fn a_non_zero_exit_is_a_result_flagged_as_error_not_a_tool_error() {
        let host = Arc::new(MockHost::new());
        host.reply_exec(Ok(exec_ok(2, "", "no such file\n")));
        let out = Shell
            .call(json!({"command": "ls nope"}), &host.context())
            .await;
        let out = out.map(|o| {
            (
                o.is_error,
                o.content.contains("exit code: 2"),
                o.content.contains("stderr:\nno such file"),
            )
        });
        assert_eq!(out, Ok((true, true, true)));
    }

    #[tokio::test]
    async fn a_timeout_is_a_timeout_error_with_what_was_captured() {
        let host = Arc::new(MockHost::new());
        let mut partial = exec_ok(0, "halfway\n", "");
        partial.exit_code = None;
        partial.timed_out = true;
        host.reply_exec(Ok(partial));
        let err = Shell
            .call(
                json!({"command": "sleep 99", "timeout_secs": 1}),
                &host.context(),
            )
            .await
            .err();
        let err = err.map(|e| {
            (
                e.kind,
                e.message.contains("halfway"),
                e.message.contains("after 1s"),
            )
        });
        assert_eq!(err, Some((ErrorKind::Timeout, true, true)));
    }

    #[tokio::test]
    async fn a_denied_command_surfaces_the_hosts_decision() {
        let host = Arc::new(MockHost::new());
        host.deny_matching("rm ");
        let err = Shell
            .call(json!({"command": "ls; rm -rf x"}), &host.context())
            .await
            .err();
        assert_eq!(err.map(|e| e.kind), Some(ErrorKind::Denied));
        assert!(host.exec_requests().is_empty());
    }

    #[tokio::test]
    async fn a_host_timeout_maps_to_the_timeout_kind() {
        let host = Arc::new(MockHost::new());
        host.reply_exec(Err(HostError::Timeout(Duration::from_secs(1))));
        let err = Shell
            .call(json!({"command": "x"}), &host.context())
            .await
            .err();
        assert_eq!(err.map(|e| e.kind), Some(ErrorKind::Timeout));
    }
}
