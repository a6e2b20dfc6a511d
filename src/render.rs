//! Renders the agent's event stream: the answer on stdout as it streams, one line per tool call
//! on stderr (`→ shell  ls -la` … `✓ 0.2s` / `✗ denied: …`), or JSON lines with `--json`.

use serde_json::Value;
use std::io::Write;
use tackle_agent::{AgentEvent, DoneReason};
use tackle_protocol::text::preview;
use tokio::sync::mpsc::UnboundedReceiver;

/// Consume events until the sender is dropped.
pub async fn render(mut events: UnboundedReceiver<AgentEvent>, json: bool) {
    let mut ended_with_newline = true;
    while let Some(event) = events.recv().await {
        if json {
            if let Ok(line) = serde_json::to_string(&event) {
                println!("{line}");
            }
            continue;
        }
        match event {
            AgentEvent::TextDelta { text } => {
                let mut out = std::io::stdout().lock();
                let _ = write!(out, "{text}");
                let _ = out.flush();
                if !text.is_empty() {
                    ended_with_newline = text.ends_with('\n');
                }
            }
            AgentEvent::ToolCallStarted {
                name, arguments, ..
            } => {
                if !ended_with_newline {
                    println!();
                    ended_with_newline = true;
                }
                eprintln!("→ {name}  {}", args_preview(&arguments));
            }
            AgentEvent::ToolCallFinished {
                name,
                ok,
                error_kind,
                preview: text,
                duration_ms,
                ..
            } => {
                let secs = duration_ms as f64 / 1000.0;
                match error_kind {
                    None if ok => eprintln!("  ✓ {name} {secs:.1}s"),
                    None => eprintln!(
                        "  ✗ {name} {secs:.1}s (reported an error): {}",
                        first_line(&text)
                    ),
                    Some(kind) => eprintln!("  ✗ {name} {kind}: {}", first_line(&text)),
                }
            }
            AgentEvent::Done { reason, text, .. } => {
                if !ended_with_newline {
                    println!();
                    ended_with_newline = true;
                }
                match reason {
                    DoneReason::LoopGuard => eprintln!("stopped: {text}"),
                    DoneReason::Cancelled => eprintln!("(cancelled)"),
                    // The error itself is reported once, by the command that ran the turn.
                    DoneReason::Answer | DoneReason::MaxIterations | DoneReason::Error => {}
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
