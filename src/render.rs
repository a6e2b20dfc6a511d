//! Renders the agent's event stream: the answer on stdout as it streams, one line per tool call
//! on stderr (`→ shell  ls -la` … `✓ 0.2s` / `✗ denied: …`), or JSON lines with `--json`.
//! Everything is written through `term`, so nothing lands inside a waiting approval prompt.
//! On a terminal, a call that runs for more than a second gets a status line with a spinner
//! and its elapsed time, erased when anything else is written.

use crate::term;
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tackle_agent::{AgentEvent, DoneReason};
use tackle_protocol::text::preview;
use tokio::sync::mpsc::UnboundedReceiver;

/// How long a call runs before the status line shows it.
const STATUS_AFTER: Duration = Duration::from_secs(1);
const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// The events not rendered yet, shared so that an approval prompt can wait until every line
/// of the calls before it is on screen (see [`caught_up`]).
struct Queue {
    rx: Mutex<UnboundedReceiver<AgentEvent>>,
    /// An event has been taken off the queue and is being written.
    busy: AtomicBool,
}

impl Queue {
    async fn next(&self) -> Option<AgentEvent> {
        std::future::poll_fn(|cx| {
            let mut rx = self.rx.lock().unwrap_or_else(PoisonError::into_inner);
            let polled = rx.poll_recv(cx);
            if let std::task::Poll::Ready(Some(_)) = &polled {
                self.busy.store(true, Ordering::SeqCst);
            }
            polled
        })
        .await
    }

    fn idle(&self) -> bool {
        let rx = self.rx.lock().unwrap_or_else(PoisonError::into_inner);
        rx.is_empty() && !self.busy.load(Ordering::SeqCst)
    }
}

/// The renderer now running (one turn at a time writes to the terminal).
static CURRENT: Mutex<Option<Arc<Queue>>> = Mutex::new(None);

fn current() -> Option<Arc<Queue>> {
    CURRENT
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

/// Wait (briefly) until the renderer has written every event sent so far. A call's `→` line
/// is sent before it asks for approval, so after this the prompt comes after the lines of its
/// call and of the calls started with it, whatever the scheduling.
pub async fn caught_up() {
    // Let the calls the model asked for alongside this one start first (they are polled
    // together): their `→` lines then always come before the prompt, not sometimes after.
    tokio::task::yield_now().await;
    let Some(queue) = current() else {
        return;
    };
    let deadline = Instant::now() + Duration::from_millis(500);
    while !queue.idle() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Consume events until the sender is dropped. `quiet`: no tool-call lines (`-q`).
pub async fn render(events: UnboundedReceiver<AgentEvent>, json: bool, quiet: bool) {
    let queue = Arc::new(Queue {
        rx: Mutex::new(events),
        busy: AtomicBool::new(false),
    });
    *CURRENT.lock().unwrap_or_else(PoisonError::into_inner) = Some(Arc::clone(&queue));
    let mut r = Renderer {
        json,
        quiet,
        ended_with_newline: true,
        running: Vec::new(),
        frame: 0,
        tokens: Tokens::default(),
    };
    // Elapsed times only where a person watches: a terminal, not `--json`, not `-q`.
    let live = !json && !quiet && term::stderr_is_terminal();
    let mut tick = tokio::time::interval(Duration::from_millis(200));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tokio::select! {
            event = queue.next() => match event {
                Some(event) => {
                    r.event(event);
                    queue.busy.store(false, Ordering::SeqCst);
                }
                None => break,
            },
            _ = tick.tick(), if live => r.status(),
        }
    }
    term::status(None);
    if !json && !quiet {
        if let Some(line) = r.tokens.line() {
            term::err_line(&line);
        }
    }
    let mut cur = CURRENT.lock().unwrap_or_else(PoisonError::into_inner);
    if cur.as_ref().is_some_and(|q| Arc::ptr_eq(q, &queue)) {
        *cur = None;
    }
}

struct Renderer {
    json: bool,
    quiet: bool,
    ended_with_newline: bool,
    /// Calls started and not finished: id, name, start.
    running: Vec<(String, String, Instant)>,
    frame: usize,
    tokens: Tokens,
}

/// The tokens the model backends reported for this turn (`--json` has them per model
/// request as `usage` events).
#[derive(Default)]
struct Tokens {
    input: u64,
    output: u64,
    requests: u32,
}

impl Tokens {
    fn add(&mut self, input: u64, output: u64) {
        self.input = self.input.saturating_add(input);
        self.output = self.output.saturating_add(output);
        self.requests = self.requests.saturating_add(1);
    }

    /// `tokens: 1,234 in, 56 out (2 model requests)`; `None` when no backend reported any.
    fn line(&self) -> Option<String> {
        if self.input == 0 && self.output == 0 {
            return None;
        }
        let requests = match self.requests {
            1 => "1 model request".to_string(),
            n => format!("{n} model requests"),
        };
        Some(format!(
            "tokens: {} in, {} out ({requests})",
            thousands(self.input),
            thousands(self.output)
        ))
    }
}

/// `1234567` as `1,234,567`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

impl Renderer {
    /// The status line: the calls running longer than [`STATUS_AFTER`], with elapsed time.
    fn status(&mut self) {
        let now = Instant::now();
        let long: Vec<String> = self
            .running
            .iter()
            .filter(|(_, _, started)| now.duration_since(*started) >= STATUS_AFTER)
            .map(|(_, name, started)| {
                format!("{name} running {}s", now.duration_since(*started).as_secs())
            })
            .collect();
        // Only at the start of a line: a half-streamed answer is never overdrawn.
        if long.is_empty() || !self.ended_with_newline {
            term::status(None);
            return;
        }
        self.frame = self.frame.wrapping_add(1);
        let spin = SPINNER
            .get(self.frame % SPINNER.len())
            .copied()
            .unwrap_or('…');
        term::status(Some(&format!("  {spin} {}", long.join(", "))));
    }

    fn event(&mut self, event: AgentEvent) {
        if let AgentEvent::Usage {
            input_tokens,
            output_tokens,
        } = &event
        {
            self.tokens.add(*input_tokens, *output_tokens);
        }
        if let AgentEvent::ToolCallStarted { id, name, .. } = &event {
            self.running
                .push((id.clone(), preview(name, 80), Instant::now()));
        }
        if let AgentEvent::ToolCallFinished { id, .. } = &event {
            self.running.retain(|(running, _, _)| running != id);
        }
        if self.json {
            if let Ok(line) = serde_json::to_string(&event) {
                // A backend's error quotes what it was sent (its key, in a 401's body).
                term::out_line(&crate::log_redact::redact(&line));
            }
            return;
        }
        let quiet = self.quiet;
        if let Some(line) = call_line(&event) {
            if matches!(event, AgentEvent::ToolCallStarted { .. }) {
                self.end_line();
            }
            if !quiet {
                // A call's arguments are the model's words: they may quote a key it read.
                term::err_line(&crate::log_redact::redact(&line));
            }
            return;
        }
        match event {
            AgentEvent::TextDelta { text } => {
                term::out(&text);
                if !text.is_empty() {
                    self.ended_with_newline = text.ends_with('\n');
                }
            }
            // Written above.
            AgentEvent::ToolCallStarted { .. } | AgentEvent::ToolCallFinished { .. } => {}
            AgentEvent::Child {
                agent, depth, call, ..
            } => {
                if quiet {
                    return;
                }
                self.end_line();
                // Under the spawn's `→` line, one step further in per level of the tree.
                let indent = "    ".repeat(depth.clamp(1, 8));
                if let Some(line) = call_line(&call) {
                    let who = match *call {
                        AgentEvent::ToolCallStarted { .. } => {
                            format!("  ({})", preview(&agent, 80))
                        }
                        _ => String::new(),
                    };
                    term::err_line(&crate::log_redact::redact(&format!("{indent}{line}{who}")));
                }
            }
            AgentEvent::Done { reason, text, .. } => {
                self.end_line();
                match reason {
                    DoneReason::LoopGuard => term::err_line(&format!("stopped: {text}")),
                    DoneReason::Cancelled => term::err_line("(cancelled)"),
                    // The error itself is reported once, by the command that ran the turn.
                    DoneReason::MaxIterations => term::err_line(&format!(
                        "stopped: {}",
                        tackle_agent::agent_loop::BUDGET_EXHAUSTED
                    )),
                    DoneReason::Answer | DoneReason::Error => {}
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
            AgentEvent::ApprovalQueued {
                id,
                tool,
                deadline_secs,
            } => {
                term::err_line(&format!(
                    "  ⏸ {tool} waits in the approval queue up to {deadline_secs} s: tackle approvals allow {id} (or deny {id})"
                ));
            }
            AgentEvent::ApprovalSettled {
                id,
                status,
                answered_by,
            } => {
                let by = answered_by.map(|b| format!(" by {b}")).unwrap_or_default();
                term::err_line(&format!("  ▶ approval {id}: {status}{by}"));
            }
            AgentEvent::Iteration { .. } | AgentEvent::Usage { .. } => {}
        }
    }

    /// A line on stderr starts on a line of its own, after a half-streamed answer.
    fn end_line(&mut self) {
        if !self.ended_with_newline {
            term::out("\n");
            self.ended_with_newline = true;
        }
    }
}

/// A tool call's line: `→ shell  ls -la` when it starts, `  ✓ shell 0.2s` (or `✗` with why)
/// when it ends; `None` for any other event.
fn call_line(event: &AgentEvent) -> Option<String> {
    match event {
        AgentEvent::ToolCallStarted {
            name, arguments, ..
        } => Some(format!(
            "→ {}  {}",
            preview(name, 80),
            args_preview(arguments)
        )),
        AgentEvent::ToolCallFinished {
            name,
            ok,
            error_kind,
            preview: text,
            duration_ms,
            ..
        } => {
            let name = preview(name, 80);
            let secs = *duration_ms as f64 / 1000.0;
            let (tick, cross) = (
                term::Paint::Ok.on_stderr("✓"),
                term::Paint::Error.on_stderr("✗"),
            );
            Some(match error_kind {
                None if *ok => format!("  {tick} {name} {secs:.1}s"),
                None => format!(
                    "  {cross} {name} {secs:.1}s (reported an error): {}",
                    first_line(text)
                ),
                // Why the call did not run, in plain words (an MCP server's error may quote a
                // library's debug output); what a tool reported (above) is shown as it is.
                Some(kind) => format!(
                    "  {cross} {name} {kind}: {}",
                    first_line(&crate::errors::plain(text))
                ),
            })
        }
        _ => None,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_totals_read_as_grouped_numbers_and_none_when_nothing_was_reported() {
        let mut tokens = Tokens::default();
        assert_eq!(tokens.line(), None);
        tokens.add(1_234_000, 56);
        assert_eq!(
            tokens.line().as_deref(),
            Some("tokens: 1,234,000 in, 56 out (1 model request)")
        );
        tokens.add(999, 1_000);
        assert_eq!(
            tokens.line().as_deref(),
            Some("tokens: 1,234,999 in, 1,056 out (2 model requests)")
        );
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(100), "100");
        assert_eq!(thousands(1000), "1,000");
    }
}
