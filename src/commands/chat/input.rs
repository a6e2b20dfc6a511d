//! The chat's prompt, read on a blocking thread so that something else (a wake-up falling
//! due) can be answered while the person sits at it without pressing a key. Whatever runs
//! meanwhile writes through the line editor's printer, which prints above the prompt and
//! redraws it with what the person has typed so far.

use crate::term;
use rustyline::error::ReadlineError;
use rustyline::{DefaultEditor, ExternalPrinter};
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::task::JoinHandle;

type Read = (DefaultEditor, rustyline::Result<String>);
type Printer = Arc<Mutex<Box<dyn ExternalPrinter + Send>>>;

/// What came first at the prompt.
pub enum Next<T> {
    /// The person's line (or Ctrl-C, Ctrl-D, an error).
    Line(rustyline::Result<String>),
    /// The other thing waited for.
    Other(T),
}

pub struct Input {
    prompt: &'static str,
    /// Here while no read is going on.
    editor: Option<DefaultEditor>,
    reading: Option<JoinHandle<Read>>,
    /// A line that came while something else ran beside the prompt.
    ready: Option<rustyline::Result<String>>,
    /// `None` when stdin or stdout is not a terminal: nothing is drawn to keep whole then.
    printer: Option<Printer>,
}

impl Input {
    pub fn new(mut editor: DefaultEditor, prompt: &'static str) -> Self {
        let printer = editor
            .create_external_printer()
            .ok()
            .map(|p| Arc::new(Mutex::new(Box::new(p) as Box<dyn ExternalPrinter + Send>)));
        Self {
            prompt,
            editor: Some(editor),
            reading: None,
            ready: None,
            printer,
        }
    }

    /// The editor, when no read is going on (for history).
    pub fn editor(&mut self) -> Option<&mut DefaultEditor> {
        self.editor.as_mut()
    }

    /// The person's next line, or `other` if it finishes first; the prompt stays up (and
    /// what was typed on it stays) when `other` wins.
    pub async fn next<T>(&mut self, other: impl Future<Output = T>) -> Next<T> {
        if let Some(line) = self.ready.take() {
            return Next::Line(line);
        }
        let Some(reading) = self.start() else {
            return Next::Line(Err(stopped()));
        };
        let joined = tokio::select! {
            joined = reading => joined,
            t = other => return Next::Other(t),
        };
        Next::Line(self.joined(joined))
    }

    /// Runs `work` while the prompt stays up, its terminal output printed above the prompt.
    /// Ctrl-C at the prompt cancels the turn `work` runs; a line entered meanwhile is kept
    /// for the next [`Input::next`].
    pub async fn beside<F: Future>(&mut self, work: F) -> F::Output {
        let _redirect = self.printer.clone().map(|p| term::redirect(lines_to(p)));
        tokio::pin!(work);
        loop {
            let reading = match self.reading.as_mut() {
                Some(r) if self.ready.is_none() => r,
                _ => return work.await,
            };
            let joined = tokio::select! {
                out = &mut work => return out,
                joined = reading => joined,
            };
            match self.joined(joined) {
                Err(ReadlineError::Interrupted) => {
                    if let Some(turn) = term::current_turn() {
                        turn.cancel();
                    }
                }
                line => self.ready = Some(line),
            }
        }
    }

    /// Ends a read still going on and gives the editor back (for saving history).
    pub async fn finish(mut self) -> Option<DefaultEditor> {
        if let Some(reading) = self.reading.take() {
            // A read cannot be interrupted; the chat ends only after one returned, so this
            // is a read that already finished.
            if let Ok((editor, _)) = reading.await {
                self.editor = Some(editor);
            }
        }
        self.editor
    }

    fn start(&mut self) -> Option<&mut JoinHandle<Read>> {
        if self.reading.is_none() {
            let mut editor = self.editor.take()?;
            let prompt = self.prompt;
            self.reading = Some(tokio::task::spawn_blocking(move || {
                let line = editor.readline(prompt);
                (editor, line)
            }));
        }
        self.reading.as_mut()
    }

    fn joined(
        &mut self,
        joined: Result<Read, tokio::task::JoinError>,
    ) -> rustyline::Result<String> {
        self.reading = None;
        match joined {
            Ok((editor, line)) => {
                self.editor = Some(editor);
                line
            }
            Err(_) => Err(stopped()),
        }
    }
}

fn stopped() -> ReadlineError {
    ReadlineError::Io(std::io::Error::other("the line editor stopped"))
}

/// A sink for the terminal writer that hands the printer whole lines (it redraws the prompt
/// after each print, so a streamed answer is gathered into lines first); the rest is printed
/// when the sink is dropped.
fn lines_to(printer: Printer) -> term::Sink {
    struct Lines {
        printer: Printer,
        pending: String,
    }
    impl Lines {
        fn print(&mut self, text: String) {
            let mut p = self.printer.lock().unwrap_or_else(PoisonError::into_inner);
            // A terminal that went away loses the text, as a direct write would.
            let _ = p.print(text);
        }
    }
    impl Drop for Lines {
        fn drop(&mut self) {
            let rest = std::mem::take(&mut self.pending);
            if !rest.is_empty() {
                self.print(rest);
            }
        }
    }
    let mut lines = Lines {
        printer,
        pending: String::new(),
    };
    Box::new(move |text: &str| {
        lines.pending.push_str(text);
        if let Some(end) = lines.pending.rfind('\n') {
            let rest = lines.pending.split_off(end + 1);
            let whole = std::mem::replace(&mut lines.pending, rest);
            lines.print(whole);
        }
    })
}
