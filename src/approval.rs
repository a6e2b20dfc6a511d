//! The terminal approver: an inline `y/n/a` prompt on stderr, answered on stdin (`a`, for the
//! rest of the session, only where there is a session: `run` and `chat`). Ctrl-C at the prompt
//! denies the call and cancels the turn; while the prompt waits, other output is held (see
//! `term`).

use crate::term;
use async_trait::async_trait;
use serde_json::Value;
use std::fs::File;
use std::io::{IsTerminal, Read};
use std::os::fd::AsFd;
use std::sync::Arc;
use tackle_agent::approvers::{AutoApprover, NonInteractiveApprover};
use tackle_protocol::text::preview;
use tackle_protocol::{ApprovalAnswer, ApprovalRequest, ApprovalUnavailable, Approver};
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio_util::sync::CancellationToken;

/// Lines of file content or of a change shown in a prompt; the rest is counted.
const SHOWN_LINES: usize = 20;
/// Characters shown of one such line.
const SHOWN_LINE_CHARS: usize = 200;
/// An answer longer than this is taken as it is (and asked again), not read on forever.
const MAX_ANSWER_BYTES: usize = 4096;
/// The question where "always" means something: a session with more calls to come.
const QUESTION: &str = "Allow? [y] once  [n] deny  [a] always for this session, then Enter: ";
/// The question of a one-shot call (`tools call`): there is no session for an "always".
const QUESTION_ONCE: &str = "Allow? [y] yes  [n] no, then Enter: ";
/// Shown when Ctrl-C ends the wait (whichever of the prompt and the turn saw it first).
const STOPPED: &str = "\nnot approved: Ctrl-C stops the turn\n";

/// For one call (`tools call`): `--yes` approves; a terminal on stdin asks y/n; anything else
/// cannot ask (exit 4, never a hang).
pub fn approver_for_cli(yes: bool) -> Arc<dyn Approver> {
    approver(yes, false)
}

/// For a session's calls (`run`, `chat`): as [`approver_for_cli`], and the prompt also offers
/// `a`, allowing the tool for the rest of the session. The prompt (when there is one) is
/// passed through `queued`, which makes it a front end of the approval queue
/// (`crate::queued_prompt`).
pub fn approver_for_session(
    yes: bool,
    queued: impl FnOnce(Arc<dyn Approver>) -> Arc<dyn Approver>,
) -> Arc<dyn Approver> {
    let approver = approver(yes, true);
    if !yes && std::io::stdin().is_terminal() {
        queued(approver)
    } else {
        approver
    }
}

fn approver(yes: bool, session: bool) -> Arc<dyn Approver> {
    if yes {
        Arc::new(AutoApprover)
    } else if std::io::stdin().is_terminal() {
        Arc::new(TtyApprover {
            lock: tokio::sync::Mutex::default(),
            session,
        })
    } else {
        Arc::new(NonInteractiveApprover)
    }
}

/// The refusal a call gets when no person can answer it, read by the model first: why the
/// call needed approval, `what` happened instead, what to do (never "pass --yes", which the
/// model cannot), and which setting would let such calls run.
pub fn unavailable(req: &ApprovalRequest, what: &str) -> ApprovalUnavailable {
    let remedy = if req.remedy.is_empty() {
        String::new()
    } else {
        format!("; the operator can let such calls run: {}", req.remedy)
    };
    ApprovalUnavailable(format!(
        "{}; {what}: do the task without this call, or report that it needs approval{remedy}",
        req.why
    ))
}

/// Where no one is there to ask: a scheduled fire, or an API turn, with the approval queue
/// turned off (`approval_timeout_secs: 0`).
pub struct NoOneToAsk {
    name: &'static str,
    what: &'static str,
}

impl NoOneToAsk {
    pub const SCHEDULED: Self = Self {
        name: "unattended",
        what: "this is a scheduled run and no one is there to approve it",
    };
    pub const API: Self = Self {
        name: "api",
        what: "this turn came over the HTTP API, where gateway.approval_timeout_secs is 0, so no one is asked",
    };
}

#[async_trait]
impl Approver for NoOneToAsk {
    fn name(&self) -> &str {
        self.name
    }

    async fn ask(&self, req: &ApprovalRequest) -> Result<ApprovalAnswer, ApprovalUnavailable> {
        Err(unavailable(req, self.what))
    }
}

/// Asks one question at a time even when several calls run concurrently.
pub struct TtyApprover {
    lock: tokio::sync::Mutex<()>,
    /// `a` (always for this session) is offered.
    session: bool,
}

#[async_trait]
impl Approver for TtyApprover {
    fn name(&self) -> &str {
        "tty"
    }

    async fn ask(&self, req: &ApprovalRequest) -> Result<ApprovalAnswer, ApprovalUnavailable> {
        let _one_at_a_time = self.lock.lock().await;
        let turn = term::current_turn();
        // Ctrl-C already ended the turn: the calls still queued here are denied unasked.
        if turn.as_ref().is_some_and(CancellationToken::is_cancelled) {
            return Ok(ApprovalAnswer::Deny);
        }
        // The `→` lines of this call and of those started before it come first, every time.
        crate::render::caught_up().await;
        let question = if self.session {
            QUESTION
        } else {
            QUESTION_ONCE
        };
        let mut prompt = Shown {
            prompt: term::prompt(&format!("{}{question}", render(req))),
            answered: false,
        };
        loop {
            let line = tokio::select! {
                biased;
                () = cancelled(turn.as_ref()) => {
                    prompt.end(STOPPED);
                    return Ok(ApprovalAnswer::Deny);
                }
                () = ctrl_c() => {
                    if let Some(turn) = &turn {
                        turn.cancel();
                    }
                    prompt.end(STOPPED);
                    return Ok(ApprovalAnswer::Deny);
                }
                line = read_line() => line,
            };
            let line = match line {
                Ok(Some(line)) => line,
                Ok(None) => {
                    prompt.end("\n");
                    return Err(ApprovalUnavailable(
                        "stdin closed before the approval was answered".into(),
                    ));
                }
                Err(e) => {
                    prompt.end("\n");
                    return Err(e);
                }
            };
            // The person's Enter ended the question's line.
            prompt.answered = true;
            match line.trim().to_ascii_lowercase().as_str() {
                "y" | "yes" => return Ok(ApprovalAnswer::Once),
                "n" | "no" => return Ok(ApprovalAnswer::Deny),
                "a" | "always" if self.session => return Ok(ApprovalAnswer::ForSession),
                _ if self.session => prompt.write(&format!("Please answer y, n or a.\n{question}")),
                _ => prompt.write(&format!("Please answer y or n.\n{question}")),
            }
            prompt.answered = false;
        }
    }
}

/// The prompt on screen. Dropped before the person answered (another front end of the
/// approval queue answered first), it ends the question's line, so what was held back and
/// what follows start on lines of their own; the unread input stays for the next reader.
struct Shown {
    prompt: term::Prompt,
    answered: bool,
}

impl Shown {
    fn write(&self, text: &str) {
        self.prompt.write(text);
    }

    /// The last words on the prompt's lines, which end them.
    fn end(&mut self, text: &str) {
        self.answered = true;
        self.prompt.write(text);
    }
}

impl Drop for Shown {
    fn drop(&mut self) {
        if !self.answered {
            self.prompt.write("\n");
        }
    }
}

/// Ctrl-C was pressed (never, when it cannot be watched: the prompt still takes an answer).
async fn ctrl_c() {
    if tokio::signal::ctrl_c().await.is_err() {
        std::future::pending::<()>().await;
    }
}

async fn cancelled(turn: Option<&CancellationToken>) {
    match turn {
        Some(t) => t.cancelled().await,
        None => std::future::pending().await,
    }
}

/// One line from stdin (`None` at end of input), waiting without a blocked thread so that
/// Ctrl-C or a cancelled turn can stop the wait and leave stdin to the next reader.
async fn read_line() -> Result<Option<String>, ApprovalUnavailable> {
    let failed = |e: std::io::Error| ApprovalUnavailable(format!("cannot read the answer: {e}"));
    let mut line = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        // A fresh registration each time reports what is there now, never an old edge.
        let stdin = File::from(
            std::io::stdin()
                .as_fd()
                .try_clone_to_owned()
                .map_err(failed)?,
        );
        // SAFETY: the `File` owns its descriptor (a duplicate of stdin) and keeps it open
        // until the `AsyncFd` drops it; `as_raw_fd` always returns that same descriptor.
        let fd = unsafe { AsyncFd::register_with_interest(stdin, Interest::READABLE) }
            .map_err(|e| failed(e.into()))?;
        let ready = fd.readable().await.map_err(failed)?;
        // Readable: a terminal in line mode has a whole line (or end of input), so this read
        // returns at once.
        let n = ready.get_inner().read(&mut buf).map_err(failed)?;
        let Some(chunk) = buf.get(..n).filter(|c| !c.is_empty()) else {
            return Ok((!line.is_empty()).then(|| String::from_utf8_lossy(&line).into_owned()));
        };
        line.extend_from_slice(chunk);
        if line.ends_with(b"\n") || line.len() > MAX_ANSWER_BYTES {
            return Ok(Some(String::from_utf8_lossy(&line).into_owned()));
        }
    }
}

/// The prompt's text before the question: why, what the call will do (with the content a
/// `write_file` writes and the change an `edit_file` makes) and the grants in force.
pub fn render(req: &ApprovalRequest) -> String {
    let why = if req.why.trim().is_empty() {
        format!("`{}` needs approval", req.tool)
    } else {
        req.why.clone()
    };
    let mut s = format!("\n⚠ {}\n", shown(&why));
    for line in req.summary.lines() {
        s.push_str(&format!("  {}\n", shown(line)));
    }
    for line in change_lines(&req.tool, &req.arguments) {
        s.push_str(&format!("  {line}\n"));
    }
    s.push_str("  if allowed, it runs with:\n");
    for line in crate::grant_words::describe(&req.grants) {
        s.push_str(&format!("    {}\n", shown(&line)));
    }
    s
}

/// What a file-writing call will write: the content (`write_file`), the `old_text → new_text`
/// pairs or the diff (`edit_file`), at most [`SHOWN_LINES`] lines with a count of the rest.
fn change_lines(tool: &str, args: &Value) -> Vec<String> {
    let field = |name: &str| args.get(name).and_then(Value::as_str);
    match tool {
        "write_file" => match field("content") {
            Some("") => vec!["content: (empty)".to_string()],
            Some(content) => {
                let total = content.lines().count();
                let mut lines = vec![format!("content ({}):", count(total, "line"))];
                lines.extend(bounded(content.lines().map(|l| format!("│ {}", shown(l)))));
                lines
            }
            None => Vec::new(),
        },
        "edit_file" => {
            if let Some(diff) = field("diff") {
                let mut lines = vec!["diff:".to_string()];
                lines.extend(bounded(diff.lines().map(|l| format!("│ {}", shown(l)))));
                return lines;
            }
            let mut pairs: Vec<(&str, &str)> = Vec::new();
            if let (Some(old), Some(new)) = (field("old_text"), field("new_text")) {
                pairs.push((old, new));
            }
            if let Some(edits) = args.get("edits").and_then(Value::as_array) {
                for e in edits {
                    if let (Some(old), Some(new)) = (
                        e.get("old_text").and_then(Value::as_str),
                        e.get("new_text").and_then(Value::as_str),
                    ) {
                        pairs.push((old, new));
                    }
                }
            }
            let n = pairs.len();
            let all = pairs
                .into_iter()
                .enumerate()
                .flat_map(move |(i, (old, new))| {
                    let head = format!("change {} of {n}: old_text → new_text", i + 1);
                    std::iter::once(head)
                        .chain(old.lines().map(|l| format!("- {}", shown(l))))
                        .chain(new.lines().map(|l| format!("+ {}", shown(l))))
                });
            bounded(all)
        }
        _ => Vec::new(),
    }
}

/// The first [`SHOWN_LINES`] lines, then `… N more lines` when there were more.
fn bounded(lines: impl Iterator<Item = String>) -> Vec<String> {
    let mut shown = Vec::new();
    let mut rest = 0usize;
    for line in lines {
        if shown.len() < SHOWN_LINES {
            shown.push(line);
        } else {
            rest += 1;
        }
    }
    if rest > 0 {
        let lines = if rest == 1 { "line" } else { "lines" };
        shown.push(format!("… {rest} more {lines}"));
    }
    shown
}

fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// A line from outside (the model, a file) made safe to print: control characters (escape
/// sequences included) become spaces, and it is cut at a character boundary.
fn shown(line: &str) -> String {
    preview(line, SHOWN_LINE_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(tool: &str, arguments: Value, why: &str) -> ApprovalRequest {
        ApprovalRequest {
            tool: tool.to_string(),
            arguments,
            summary: "write /ws/notes.txt".to_string(),
            grants: Default::default(),
            why: why.to_string(),
            remedy: String::new(),
        }
    }

    #[test]
    fn the_why_is_said_once() {
        let text = render(&request(
            "shell",
            json!({"command": "ls"}),
            "`shell` needs approval: its approval mode is always",
        ));
        assert_eq!(text.matches("needs approval").count(), 1, "{text}");
    }

    #[test]
    fn write_file_shows_its_content_bounded_with_a_count() {
        let content: String = (1..=154).map(|i| format!("line {i}\n")).collect();
        let text = render(&request(
            "write_file",
            json!({"path": "notes.txt", "content": content}),
            "why",
        ));
        assert!(text.contains("content (154 lines):"), "{text}");
        assert!(text.contains("│ line 20\n"), "{text}");
        assert!(!text.contains("line 21\n"), "{text}");
        assert!(text.contains("… 134 more lines"), "{text}");
    }

    #[test]
    fn edit_file_shows_old_and_new_text_or_the_diff() {
        let text = render(&request(
            "edit_file",
            json!({"path": "a", "edits": [{"old_text": "alpha", "new_text": "beta"}, {"old_text": "x\ny", "new_text": ""}]}),
            "why",
        ));
        assert!(
            text.contains("change 1 of 2: old_text → new_text\n  - alpha\n  + beta\n"),
            "{text}"
        );
        assert!(text.contains("change 2 of 2"), "{text}");
        let text = render(&request(
            "edit_file",
            json!({"path": "a", "diff": "@@ -1 +1 @@\n-old\n+new\n"}),
            "why",
        ));
        assert!(text.contains("│ -old\n  │ +new\n"), "{text}");
    }

    #[test]
    fn escape_sequences_and_long_lines_from_the_model_are_defused() {
        let long = "é".repeat(500);
        let text = render(&request(
            "write_file",
            json!({"path": "a", "content": format!("\u{1b}[2J{long}")}),
            "why",
        ));
        assert!(!text.contains('\u{1b}'), "{text}");
        assert!(text.contains('…'), "{text}");
    }
}
