//! The terminal form for MCP elicitation: a configured server asks the person for input in the
//! middle of a call. One question per field of the requested schema, the default pre-filled
//! (Enter keeps it), choices numbered; each answer is checked against its field and asked again
//! when it does not fit. Ctrl-D, or Enter on a required field without a default, declines;
//! Ctrl-C cancels (and stops the turn, as at an approval prompt). The form is written through
//! `term`, so other output waits until it is answered.
//!
//! Without a terminal on stdin and stderr nobody can be asked: every request is declined.

use crate::term;
use async_trait::async_trait;
use serde_json::Map;
use std::fs::File;
use std::io::{IsTerminal, Read};
use std::os::fd::AsFd;
use std::sync::Arc;
use tackle_mcp::elicit::{DeclineAll, Field, Form, Kind};
use tackle_mcp::{ElicitAnswer, ElicitError, ElicitRequest, ElicitationHandler};
use tackle_protocol::text::preview;
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio_util::sync::CancellationToken;

/// Characters shown of one line the server wrote (its message, a title, a choice).
const SHOWN_CHARS: usize = 200;
/// Lines of the server's message shown.
const SHOWN_LINES: usize = 20;
/// An answer longer than this is taken as it is (and checked), not read on forever.
const MAX_ANSWER_BYTES: usize = 8192;

/// A terminal on stdin and stderr asks; anything else declines every request.
pub fn handler_for_cli() -> Arc<dyn ElicitationHandler> {
    if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
        Arc::new(TtyElicitor::default())
    } else {
        Arc::new(DeclineAll)
    }
}

/// What one read of the person's input gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    Line(String),
    /// End of input (Ctrl-D).
    End,
    /// Ctrl-C, or the turn was stopped.
    Interrupted,
}

/// Where the form is written and its answers read.
#[async_trait]
pub trait Console: Send {
    fn say(&mut self, text: &str);
    async fn read(&mut self) -> Input;
}

/// Ask `form` on `console`, field by field.
pub async fn fill(form: &Form, console: &mut dyn Console) -> ElicitAnswer {
    let mut answers = Map::new();
    for field in &form.fields {
        show_field(field, console);
        loop {
            console.say(&question(field));
            let line = match console.read().await {
                Input::Interrupted => {
                    console.say("\ncancelled: nothing was sent\n");
                    return ElicitAnswer::Cancel;
                }
                Input::End => {
                    console.say("\ndeclined: nothing was sent\n");
                    return ElicitAnswer::Decline;
                }
                Input::Line(line) => line,
            };
            let typed = line.trim();
            if typed.is_empty() {
                if let Some(default) = &field.default {
                    answers.insert(field.name.clone(), default.clone());
                    break;
                }
                if field.required {
                    console.say("declined: a required answer was left empty; nothing was sent\n");
                    return ElicitAnswer::Decline;
                }
                break;
            }
            match field.parse(typed) {
                Ok(value) => {
                    answers.insert(field.name.clone(), value);
                    break;
                }
                Err(why) => console.say(&format!("  {why}\n")),
            }
        }
    }
    ElicitAnswer::Accept(answers)
}

/// The field's title, description and choices, before its question.
fn show_field(field: &Field, console: &mut dyn Console) {
    if let Some(d) = &field.description {
        console.say(&format!("  {}\n", shown(d)));
    }
    if let Some(choices) = field.choices() {
        for (i, c) in choices.iter().enumerate() {
            console.say(&format!("    {}) {}\n", i + 1, shown(c.label())));
        }
    }
}

/// `  Colour (required, a number or a value) [Green]: `
fn question(field: &Field) -> String {
    let mut notes: Vec<String> = Vec::new();
    if field.required {
        notes.push("required".into());
    }
    if matches!(
        field.kind,
        Kind::ManyOf { .. } | Kind::OneOf(_) | Kind::Boolean
    ) || notes.is_empty()
    {
        notes.extend(field.hint());
    }
    let notes = if notes.is_empty() {
        String::new()
    } else {
        format!(" ({})", notes.join(", "))
    };
    let default = field
        .default_shown()
        .map(|d| format!(" [{}]", shown(&d)))
        .unwrap_or_default();
    format!("  {}{notes}{default}: ", shown(field.label()))
}

/// The heading: who asks, and what.
fn heading(server: &str, message: &str) -> String {
    let mut s = format!("\n? MCP server `{}` asks:\n", shown(server));
    let lines: Vec<&str> = message.lines().collect();
    for line in lines.iter().take(SHOWN_LINES) {
        s.push_str(&format!("  {}\n", shown(line)));
    }
    if lines.len() > SHOWN_LINES {
        s.push_str(&format!("  … {} more lines\n", lines.len() - SHOWN_LINES));
    }
    s.push_str("  (Enter keeps the [default]; Ctrl-D declines; Ctrl-C cancels)\n");
    s
}

/// Text from a server made safe to print: control characters (escape sequences included)
/// become spaces, and it is cut at a character boundary.
fn shown(text: &str) -> String {
    preview(text, SHOWN_CHARS)
}

/// Asks one form at a time, on the terminal.
#[derive(Default)]
pub struct TtyElicitor {
    lock: tokio::sync::Mutex<()>,
}

#[async_trait]
impl ElicitationHandler for TtyElicitor {
    fn can_ask(&self) -> bool {
        true
    }

    async fn elicit(
        &self,
        server: &str,
        request: ElicitRequest,
    ) -> Result<ElicitAnswer, ElicitError> {
        let form = Form::from_schema(&request.schema)?;
        let _one_at_a_time = self.lock.lock().await;
        let turn = term::current_turn();
        if turn.as_ref().is_some_and(CancellationToken::is_cancelled) {
            return Ok(ElicitAnswer::Cancel);
        }
        let prompt = term::prompt(&heading(server, &request.message));
        let mut console = TtyConsole {
            prompt: &prompt,
            turn,
        };
        let answer = fill(&form, &mut console).await;
        if matches!(answer, ElicitAnswer::Accept(_)) {
            prompt.write(&format!("  sent to `{}`\n", shown(server)));
        }
        Ok(answer)
    }
}

/// Questions written through a held terminal prompt, answers read from stdin; Ctrl-C (or the
/// turn being stopped) interrupts.
pub struct TtyConsole<'a> {
    prompt: &'a term::Prompt,
    turn: Option<CancellationToken>,
}

impl<'a> TtyConsole<'a> {
    pub fn new(prompt: &'a term::Prompt, turn: Option<CancellationToken>) -> Self {
        Self { prompt, turn }
    }
}

#[async_trait]
impl Console for TtyConsole<'_> {
    fn say(&mut self, text: &str) {
        self.prompt.write(text);
    }

    async fn read(&mut self) -> Input {
        let turn = self.turn.clone();
        tokio::select! {
            biased;
            () = cancelled(turn.as_ref()) => Input::Interrupted,
            () = ctrl_c() => {
                if let Some(turn) = &turn {
                    turn.cancel();
                }
                Input::Interrupted
            }
            line = read_line() => match line {
                Ok(Some(line)) => Input::Line(line),
                Ok(None) => Input::End,
                Err(e) => {
                    tracing::warn!("cannot read the answer: {e}");
                    Input::End
                }
            },
        }
    }
}

/// Ctrl-C was pressed (never, when it cannot be watched: the form still takes answers).
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
/// Ctrl-C or a stopped turn can end the wait and leave stdin to the next reader.
async fn read_line() -> std::io::Result<Option<String>> {
    let mut line = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        // A fresh registration each time reports what is there now, never an old edge.
        let stdin = File::from(std::io::stdin().as_fd().try_clone_to_owned()?);
        // SAFETY: the `File` owns its descriptor (a duplicate of stdin) and keeps it open
        // until the `AsyncFd` drops it; `as_raw_fd` always returns that same descriptor.
        let fd = unsafe { AsyncFd::register_with_interest(stdin, Interest::READABLE) }?;
        let ready = fd.readable().await?;
        // Readable: a terminal in line mode has a whole line (or end of input).
        let n = ready.get_inner().read(&mut buf)?;
        let Some(chunk) = buf.get(..n).filter(|c| !c.is_empty()) else {
            return Ok((!line.is_empty()).then(|| String::from_utf8_lossy(&line).into_owned()));
        };
        line.extend_from_slice(chunk);
        if line.ends_with(b"\n") || line.len() > MAX_ANSWER_BYTES {
            return Ok(Some(String::from_utf8_lossy(&line).into_owned()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};
    use std::collections::VecDeque;

    /// Answers read from a script; what the form wrote is kept.
    struct Scripted {
        input: VecDeque<Input>,
        shown: String,
    }

    impl Scripted {
        fn new(lines: &[&str]) -> Self {
            Self {
                input: lines
                    .iter()
                    .map(|l| Input::Line(format!("{l}\n")))
                    .collect(),
                shown: String::new(),
            }
        }
    }

    #[async_trait]
    impl Console for Scripted {
        fn say(&mut self, text: &str) {
            self.shown.push_str(text);
        }

        async fn read(&mut self) -> Input {
            self.input.pop_front().unwrap_or(Input::End)
        }
    }

    fn form(schema: Value) -> Form {
        Form::from_schema(&schema).expect("a form")
    }

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "title": "Your name", "default": "Ada"},
                "colour": {"type": "string", "description": "Pick \u{1b}[31mone", "enum": ["r", "g"], "enumNames": ["Red", "Green"], "default": "g"},
                "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]},
                "count": {"type": "integer", "minimum": 1, "maximum": 5}
            },
            "required": ["name", "size"]
        })
    }

    async fn answer(lines: &[&str]) -> (ElicitAnswer, String) {
        let mut console = Scripted::new(lines);
        let answer = fill(&form(schema()), &mut console).await;
        (answer, console.shown)
    }

    fn accepted(v: Value) -> ElicitAnswer {
        match v {
            Value::Object(m) => ElicitAnswer::Accept(m),
            _ => unreachable!("an object"),
        }
    }

    #[tokio::test]
    async fn enter_keeps_the_defaults_and_choices_take_numbers_or_values() {
        // Fields come in the order the schema lists them: name, colour, size, count.
        let (got, shown) = answer(&["", "", "2", ""]).await;
        assert_eq!(
            got,
            accepted(json!({"name": "Ada", "colour": "g", "size": "l"}))
        );
        assert!(shown.contains("Your name (required) [Ada]: "), "{shown}");
        assert!(shown.contains("    1) Red\n    2) Green\n"), "{shown}");
        assert!(shown.contains("[Green]: "), "{shown}");
        assert!(
            !shown.contains('\u{1b}'),
            "escape sequences are defused: {shown}"
        );
        let (got, _) = answer(&["Grace", "red", "small", "3"]).await;
        assert_eq!(
            got,
            accepted(json!({"name": "Grace", "colour": "r", "size": "s", "count": 3}))
        );
    }

    #[tokio::test]
    async fn a_wrong_answer_is_asked_again_with_the_reason() {
        let (got, shown) = answer(&["", "7", "g", "Medium", "l", "9", "0", "5"]).await;
        assert_eq!(
            got,
            accepted(json!({"name": "Ada", "colour": "g", "size": "l", "count": 5}))
        );
        assert!(
            shown.contains("`7` is not one of the choices (1 to 2)"),
            "{shown}"
        );
        assert!(
            shown.contains("enter a whole number from 1 to 5"),
            "{shown}"
        );
    }

    #[tokio::test]
    async fn an_empty_required_answer_or_ctrl_d_declines_and_ctrl_c_cancels() {
        let (got, shown) = answer(&["", "", "", ""]).await;
        assert_eq!(got, ElicitAnswer::Decline);
        assert!(shown.contains("nothing was sent"), "{shown}");
        let (got, _) = answer(&["g"]).await;
        assert_eq!(
            got,
            ElicitAnswer::Decline,
            "input ended at the second field"
        );
        let mut console = Scripted::new(&["g"]);
        console.input.push_back(Input::Interrupted);
        assert_eq!(
            fill(&form(schema()), &mut console).await,
            ElicitAnswer::Cancel
        );
    }

    #[test]
    fn the_heading_names_the_server_and_defuses_its_message() {
        let text = heading("files", "Which \u{1b}[2Jfile?\nsecond line");
        assert!(text.contains("MCP server `files` asks:"), "{text}");
        assert!(text.contains("  second line\n"), "{text}");
        assert!(!text.contains('\u{1b}'), "{text}");
    }
}
