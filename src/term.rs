//! The one writer of the terminal for `run` and `chat`: the streamed answer (stdout), the tool
//! call lines and messages (stderr) and the approval prompt all go through it.
//!
//! While an approval prompt waits for its answer, everything else written is held back and
//! printed, in order, once the prompt is answered: the line the person is typing on is never
//! broken by a concurrent call's `✓`, and nothing is lost. The writer also knows the turn
//! that is running, so that Ctrl-C at a prompt can cancel it.

use std::io::Write;
use std::sync::{Mutex, MutexGuard, PoisonError};
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stream {
    Out,
    Err,
}

struct State {
    /// An approval prompt is waiting for its answer.
    prompting: bool,
    /// What was written while the prompt was up.
    held: Vec<(Stream, String)>,
    /// The turn now running (its Ctrl-C token).
    turn: Option<CancellationToken>,
    /// A status line (a long call's elapsed time) is on stderr's current line.
    status: bool,
    /// Where writes go instead, while set (see [`redirect`]).
    sink: Option<Sink>,
}

/// Takes what would be written to the terminal (stdout and stderr alike).
pub type Sink = Box<dyn FnMut(&str) + Send>;

static STATE: Mutex<State> = Mutex::new(State {
    prompting: false,
    held: Vec::new(),
    turn: None,
    status: false,
    sink: None,
});

/// Back to the start of the line and erase it (only ever written to a terminal).
const ERASE_LINE: &str = "\r\x1b[K";

/// Erase the status line, if one is shown, before something else is written.
fn clear_status(st: &mut State) {
    if st.status {
        st.status = false;
        write_now(Stream::Err, ERASE_LINE);
    }
}

fn state() -> MutexGuard<'static, State> {
    // A panic elsewhere while holding the lock leaves nothing half-written that matters here.
    STATE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Write now (the state lock held by the caller keeps writes whole and in order). Errors are
/// ignored: a closed terminal or pipe must not end the turn.
fn write_now(stream: Stream, text: &str) {
    match stream {
        Stream::Out => {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
        }
        Stream::Err => {
            let mut err = std::io::stderr().lock();
            let _ = err.write_all(text.as_bytes());
            let _ = err.flush();
        }
    }
}

fn write(stream: Stream, text: &str) {
    if text.is_empty() {
        return;
    }
    let mut st = state();
    if let Some(sink) = st.sink.as_mut() {
        sink(text);
    } else if st.prompting {
        match st.held.last_mut() {
            Some((last, held)) if *last == stream => held.push_str(text),
            _ => st.held.push((stream, text.to_string())),
        }
    } else {
        clear_status(&mut st);
        write_now(stream, text);
    }
}

/// Show `text` as the status line on stderr (replacing the one shown), or erase it (`None`).
/// Call it only when stderr is a terminal; nothing is drawn while a prompt waits.
pub fn status(text: Option<&str>) {
    let mut st = state();
    match text {
        // A status line is redrawn in place, which a sink's line-wise output cannot do.
        Some(_) if st.sink.is_some() => {}
        Some(text) if !st.prompting => {
            st.status = true;
            write_now(Stream::Err, &format!("{ERASE_LINE}{text}"));
        }
        _ => clear_status(&mut st),
    }
}

/// Text on stdout, as it is (the streamed answer).
pub fn out(text: &str) {
    write(Stream::Out, text);
}

/// One line on stdout.
pub fn out_line(line: &str) {
    write(Stream::Out, &format!("{line}\n"));
}

/// One line on stderr.
pub fn err_line(line: &str) {
    write(Stream::Err, &format!("{line}\n"));
}

/// Show `text` (the question, without a newline) on stderr and hold every other write until
/// the returned prompt is dropped.
pub fn prompt(text: &str) -> Prompt {
    let mut st = state();
    clear_status(&mut st);
    st.prompting = true;
    write_now(Stream::Err, text);
    Prompt { _private: () }
}

/// The approval prompt on screen; dropping it prints what was held meanwhile.
pub struct Prompt {
    _private: (),
}

impl Prompt {
    /// Write on the prompt's own lines (a re-ask, the note after Ctrl-C), past the hold.
    pub fn write(&self, text: &str) {
        let _st = state();
        write_now(Stream::Err, text);
    }
}

impl Drop for Prompt {
    fn drop(&mut self) {
        let mut st = state();
        st.prompting = false;
        for (stream, text) in std::mem::take(&mut st.held) {
            write_now(stream, &text);
        }
    }
}

/// Send every write to `sink` instead of the terminal until the returned guard is dropped:
/// while the line editor owns the terminal (a wake-up answered under the chat's prompt), its
/// printer is the one writer that keeps the prompt whole.
pub fn redirect(sink: Sink) -> Redirect {
    let mut st = state();
    clear_status(&mut st);
    st.sink = Some(sink);
    Redirect { _private: () }
}

/// A [`redirect`] in force; dropping it writes to the terminal again.
pub struct Redirect {
    _private: (),
}

impl Drop for Redirect {
    fn drop(&mut self) {
        // Taken out before it drops, so a sink that flushes on drop does so unlocked.
        let sink = state().sink.take();
        drop(sink);
    }
}

/// Record the turn now running until the returned guard is dropped.
pub fn turn_started(cancel: &CancellationToken) -> Turn {
    state().turn = Some(cancel.clone());
    Turn { _private: () }
}

/// The running turn's cancellation token, if a turn is running.
pub fn current_turn() -> Option<CancellationToken> {
    state().turn.clone()
}

/// The running turn, recorded for the approval prompt; dropping it forgets the turn.
pub struct Turn {
    _private: (),
}

impl Drop for Turn {
    fn drop(&mut self) {
        state().turn = None;
    }
}

/// A style for text on stderr: applied only when stderr is a terminal and `NO_COLOR` is unset
/// (<https://no-color.org>), so pipes, logs and tests get plain text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Paint {
    Bold,
    Dim,
    Ok,
    Error,
}

impl Paint {
    fn style(self) -> anstyle::Style {
        use anstyle::{AnsiColor, Style};
        match self {
            Self::Bold => Style::new().bold(),
            Self::Dim => Style::new().dimmed(),
            Self::Ok => Style::new().fg_color(Some(AnsiColor::Green.into())),
            Self::Error => Style::new().fg_color(Some(AnsiColor::Red.into())).bold(),
        }
    }

    /// `text` styled for stderr, or as it is when stderr gets no colours.
    pub fn on_stderr(self, text: &str) -> String {
        if colours_on_stderr() {
            let style = self.style();
            format!("{style}{text}{style:#}")
        } else {
            text.to_string()
        }
    }
}

fn colours_on_stderr() -> bool {
    use std::io::IsTerminal;
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        !no_color && std::io::stderr().is_terminal()
    })
}

/// Whether stderr is a terminal (elapsed-time lines are drawn only there).
pub fn stderr_is_terminal() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_during_a_prompt_are_held_and_merged_in_order() {
        let prompt = prompt("");
        out("a");
        out("b");
        err_line("c");
        out_line("d");
        {
            let st = state();
            assert_eq!(
                st.held,
                vec![
                    (Stream::Out, "ab".to_string()),
                    (Stream::Err, "c\n".to_string()),
                    (Stream::Out, "d\n".to_string()),
                ]
            );
        }
        drop(prompt);
        let st = state();
        assert!(!st.prompting);
        assert!(st.held.is_empty());
    }
}
