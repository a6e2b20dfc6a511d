//! Renders the agent's event stream: the answer on stdout as it streams, one line per tool call
//! on stderr (`→ shell  ls -la` … `✓ 0.2s` / `✗ denied: …`), or JSON lines with `--json`.
//! Everything is written through `term`, so nothing lands inside a waiting approval prompt.

use crate::term;
use serde_json::Value;
use tackle_agent::{AgentEvent, DoneReason};
use tackle_protocol::text::preview;
use tokio::sync::mpsc::UnboundedReceiver;

/// Consume events until the sender is dropped. `quiet`: no tool-call lines (`-q`).
pub async fn render(mut events: UnboundedReceiver<AgentEvent>, json: bool, quiet: bool) {
    let mut ended_with_newline = true;
    while let Some(event) = events.recv().await {
        if json {
            if let Ok(line) = serde_json::to_string(&event) {
                term::out_line(&line);
            }
            continue;
        }
        match event {
            AgentEvent::TextDelta { text } => {
                term::out(&text);
                if !text.is_empty() {
                    ended_with_newline = text.ends_with('\n');
                }
            }
            AgentEvent::ToolCallStarted {
                name, arguments, ..
            } => {
                if !ended_with_newline {
                    term::out("\n");
                    ended_with_newline = true;
                }
                if quiet {
                    continue;
                }
                let name = preview(&name, 80);
                term::err_line(&format!("→ {name}  {}", args_preview(&arguments)));
            }
            AgentEvent::ToolCallFinished {
                name,
                ok,
                error_kind,
                preview: text,
                duration_ms,
                ..
            } => {
                if quiet {
                    continue;
                }
                let name = preview(&name, 80);
                let secs = duration_ms as f64 / 1000.0;
                let line = match error_kind {
                    None if ok => format!("  ✓ {name} {secs:.1}s"),
                    None => format!(
                        "  ✗ {name} {secs:.1}s (reported an error): {}",
                        first_line(&text)
                    ),
                    Some(kind) => format!("  ✗ {name} {kind}: {}", first_line(&text)),
                };
                term::err_line(&line);
            }
            AgentEvent::Done { reason, text, .. } => {
                if !ended_with_newline {
                    term::out("\n");
                    ended_with_newline = true;
                }
                match reason {
                    DoneReason::LoopGuard => term::err_line(&format!("stopped: {text}")),
                    DoneReason::Cancelled => term::err_line("(cancelled)"),
                    // The error itself is reported once, by the command that ran the turn.
                    DoneReason::Answer | DoneReason::MaxIterations | DoneReason::Error => {}
                }
            }
            AgentEvent::Message { from, content } => {
                term::err_line(&format!("  ✉ {from}: {}", first_line(&content)));
            }
            AgentEvent::BackgroundTask {
                label, ok, text, ..
            } => {
                let state = if ok { "completed" } else { "failed" };
                term::err_line(&format!(
                    "  [Background task '{label}' {state}] {}",
                    first_line(&text)
                ));
            }
            AgentEvent::ModelWaiting {
                backend,
                elapsed_secs,
                ..
            } => {
                if !quiet {
                    term::err_line(&format!(
                        "waiting for the model (backend `{backend}`)… {elapsed_secs} s"
                    ));
                }
            }
            AgentEvent::ModelRetrying {
                backend,
                attempt,
                max_attempts,
                wait_ms,
                reason,
            } => {
                if !quiet {
                    let wait = wait_ms as f64 / 1000.0;
                    term::err_line(&format!(
                        "model backend `{backend}`: {}; retrying in {wait:.1} s (try {} of {max_attempts})",
                        first_line(&reason),
                        attempt.saturating_add(1)
                    ));
                }
            }
            AgentEvent::Iteration { .. } | AgentEvent::Usage { .. } => {}
        }
    }
}

/// The argument a person cares about: a lone string field's value, else compact JSON.
pub fn args_preview(args: &Value) -> String {
    if let Some(map) = args.as_object() {
        let strings: Vec<&str> = map.values().filter_map(Value::as_str).collect();
        if map.len() == 1 && strings.len() == 1 {
            return preview(strings[0], 120);
        }
        for key in ["command", "path", "url", "expression", "query"] {
            if let Some(v) = map.get(key).and_then(Value::as_str) {
                return preview(v, 120);
            }
        }
    }
    preview(&args.to_string(), 120)
}

fn first_line(text: &str) -> String {
    preview(text.lines().next().unwrap_or(""), 200)
}
