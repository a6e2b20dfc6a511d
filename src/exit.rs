//! Exit codes (README, "Using it"), the errors that carry them, and writing to stdout.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use tackle_protocol::ErrorKind;

pub const OK: i32 = 0;
pub const FAILED: i32 = 1;
pub const USAGE: i32 = 2;
/// What a shell reports for a process ended by SIGPIPE (128 + 13).
pub const CLOSED_PIPE: i32 = 141;

/// A usage or configuration error: exit 2 with the message.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

pub fn usage(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(message.into()))
}

/// The reader of stdout went away (`tackle … | head -1`): not a failure, nothing to report.
#[derive(Debug, thiserror::Error)]
#[error("stdout was closed by its reader")]
pub struct StdoutClosed;

static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Whether a write to stdout found it closed.
pub fn stdout_closed() -> bool {
    STDOUT_CLOSED.load(Ordering::Relaxed)
}

/// A locked stdout whose `write!`/`writeln!` return `anyhow` errors: a closed pipe becomes
/// [`StdoutClosed`] (a quiet end) instead of a panic or an error message.
pub struct Stdout(std::io::StdoutLock<'static>);

pub fn stdout() -> Stdout {
    Stdout(std::io::stdout().lock())
}

impl Stdout {
    pub fn write_fmt(&mut self, args: std::fmt::Arguments<'_>) -> anyhow::Result<()> {
        self.0
            .write_fmt(args)
            .and_then(|()| self.0.flush())
            .map_err(stdout_error)
    }
}

/// The error for a failed write to stdout.
pub fn stdout_error(err: std::io::Error) -> anyhow::Error {
    if err.kind() == std::io::ErrorKind::BrokenPipe {
        STDOUT_CLOSED.store(true, Ordering::Relaxed);
        anyhow::Error::new(StdoutClosed)
    } else {
        anyhow::Error::new(err).context("cannot write to stdout")
    }
}

/// `Ok` when `result` failed only because stdout was closed: the caller's own outcome (a
/// tool call's exit code) still stands.
pub fn unless_closed(result: anyhow::Result<()>) -> anyhow::Result<()> {
    match result {
        Err(e) if e.downcast_ref::<StdoutClosed>().is_some() => Ok(()),
        other => other,
    }
}

/// Silence the panic `println!` raises when stdout is a closed pipe (code that does not write
/// through [`stdout`]): it is recorded as a closed stdout and ends the command quietly; every
/// other panic is reported as usual.
pub fn quiet_closed_stdout_panics() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if payload.starts_with("failed printing to stdout")
            && (payload.contains("os error 32") || payload.contains("Broken pipe"))
        {
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
            return;
        }
        report(info);
    }));
}

/// The exit code of a failed tool call.
pub fn for_kind(kind: ErrorKind) -> i32 {
    kind.exit_code()
}

/// The exit code for an error that ended the command.
pub fn for_error(err: &anyhow::Error) -> i32 {
    if err.downcast_ref::<StdoutClosed>().is_some() {
        OK
    } else if err.downcast_ref::<UsageError>().is_some()
        || err.downcast_ref::<crate::config::ConfigError>().is_some()
    {
        USAGE
    } else {
        FAILED
    }
}
