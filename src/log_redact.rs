//! The log lines on stderr pass through the same secret redactor as tool results: a library's
//! warning quotes what it was given (an MCP server's last stderr line with the token its
//! environment holds, a URL with a key in it), and stderr is output like any other.
//!
//! The redactor is known only once the config is loaded, so it is installed then
//! ([`install`]); lines logged before that are written as they are (they come from loading
//! the config, which never logs a value).

use std::io::Write;
use std::sync::{Arc, RwLock};
use tackle_agent::sanitizer::Redact;

static REDACTOR: RwLock<Option<Redact>> = RwLock::new(None);

/// Redact every later log line with `redact`.
pub fn install(redact: Redact) {
    if let Ok(mut slot) = REDACTOR.write() {
        *slot = Some(redact);
    }
}

fn current() -> Option<Redact> {
    REDACTOR
        .read()
        .ok()
        .and_then(|slot| slot.as_ref().map(Arc::clone))
}

/// `text` redacted like a log line: for what is printed on stderr outside the log (the final
/// `error: …` line).
pub fn redact(text: &str) -> String {
    match current() {
        Some(redact) => redact(text).into_owned(),
        None => text.to_string(),
    }
}

/// The stderr writer of the log subscriber. tracing formats each event into one buffer and
/// writes it with one call, so a secret is never split between two writes.
pub struct Stderr;

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Stderr {
    type Writer = Line;

    fn make_writer(&'a self) -> Line {
        Line
    }
}

pub struct Line;

impl Write for Line {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match current() {
            Some(redact) => {
                let text = String::from_utf8_lossy(buf);
                std::io::stderr().write_all(redact(&text).as_bytes())?;
            }
            None => std::io::stderr().write_all(buf)?,
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}
