//! Spawning a stdio MCP server. An operator-configured action (the `mcp_servers` config):
//! the child gets a scrubbed environment, never ours.

use super::WireError;
use rmcp::transport::TokioChildProcess;
use std::path::Path;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, BufReader};

/// How many bytes of the child's last stderr line are kept for error messages.
const STDERR_TAIL: usize = 400;

/// What a stdio server is started with.
pub(crate) struct ChildSpec<'a> {
    pub server: &'a str,
    pub command: &'a str,
    pub args: &'a [String],
    pub env: &'a [(String, String)],
    pub cwd: Option<&'a Path>,
}

/// Spawn the child; its stderr lines go to `tracing` and the last one to `last_stderr`.
pub(crate) fn spawn(
    spec: &ChildSpec<'_>,
    last_stderr: Arc<Mutex<String>>,
) -> Result<TokioChildProcess, WireError> {
    let mut cmd = tokio::process::Command::new(spec.command);
    cmd.args(spec.args).env_clear().kill_on_drop(true);
    // The same inherited base as every command Tackle runs; the rest must be in its `env`.
    cmd.envs(tackle_protocol::env::inherited(std::env::vars_os(), &[]));
    for (k, v) in spec.env {
        cmd.env(k, v);
    }
    if let Some(cwd) = spec.cwd {
        cmd.current_dir(cwd);
    }
    let (proc, stderr) = TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| WireError::Spawn {
            command: spec.command.to_string(),
            why: e.to_string(),
        })?;
    if let Some(stderr) = stderr {
        let server = spec.server.to_string();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::debug!(server = %server, "{line}");
                if !line.trim().is_empty() {
                    let kept = tackle_protocol::text::truncate_at_char_boundary(&line, STDERR_TAIL);
                    *last_stderr.lock().unwrap_or_else(|e| e.into_inner()) = kept.to_string();
                }
            }
        });
    }
    Ok(proc)
}
