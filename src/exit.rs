//! The one exit-code table (README, "Exit codes"; `tackle --help`), the errors that carry
//! the codes, and writing to stdout. Every subcommand ends with one of these codes.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use tackle_protocol::{ErrorKind, ToolError};

pub const OK: i32 = 0;
/// The tool or task failed (a backend that cannot be reached, a tool that reported an error,
/// an agent stopped at `max_iterations` or by the loop guard before it finished).
pub const FAILED: i32 = 1;
/// A usage or configuration error (a bad flag, id or config key).
pub const USAGE: i32 = 2;
/// A call was denied by policy.
pub const DENIED: i32 = 3;
/// A call needed approval that could not be asked (no terminal and no `--yes`).
pub const NEEDS_APPROVAL: i32 = 4;
/// You answered no at an approval prompt.
pub const DECLINED: i32 = 5;
/// What was named does not exist: a tool, session, schedule, memory, skill, agent, backend or
/// MCP server.
pub const NOT_FOUND: i32 = 6;
/// Ctrl-C ended the task (128 + SIGINT).
pub const CANCELLED: i32 = 130;
/// What a shell reports for a process ended by SIGPIPE (128 + 13).
pub const CLOSED_PIPE: i32 = 141;

/// The table as `tackle --help` prints it; the README's "Exit codes" says the same.
pub const TABLE: &[(i32, &str)] = &[
    (OK, "success"),
    (
        FAILED,
        "the tool or task failed, or the agent stopped before it finished (max_iterations)",
    ),
    (USAGE, "usage or configuration error"),
    (DENIED, "a call was denied by policy"),
    (
        NEEDS_APPROVAL,
        "a call needed approval that could not be asked (no terminal, no --yes)",
    ),
    (DECLINED, "you answered no at an approval prompt"),
    (
        NOT_FOUND,
        "what was named does not exist (tool, session, schedule, memory, skill, agent, backend, MCP server)",
    ),
    (CANCELLED, "cancelled with Ctrl-C"),
];

/// The table as text for `--help`.
pub fn help_text() -> String {
    let mut out = String::from("Exit codes:\n");
    for (code, meaning) in TABLE {
        out.push_str(&format!("  {code:>3}  {meaning}\n"));
    }
    out
}

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
    match kind {
        ErrorKind::Denied => DENIED,
        ErrorKind::NeedsApproval => NEEDS_APPROVAL,
        ErrorKind::NotFound => NOT_FOUND,
        ErrorKind::InvalidArguments | ErrorKind::Timeout | ErrorKind::Failed => FAILED,
    }
}

/// The exit code of a failed tool call: a "no" at the prompt is not a policy's denial.
pub fn for_tool_error(e: &ToolError) -> i32 {
    if e.is_declined() {
        DECLINED
    } else {
        for_kind(e.kind)
    }
}

/// Something named on the command line does not exist: exit [`NOT_FOUND`] with the message.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct NotFoundError(pub String);

pub fn not_found(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(NotFoundError(message.into()))
}

/// An agent name that is not under `agents:`: not found, with the closest names.
pub fn unknown_agent(config: &tackle_protocol::config::Config, name: &str) -> anyhow::Error {
    let names = config.agents.iter().map(|a| a.name.as_str());
    let near = tackle_protocol::suggest::nearest(name, names, 0.75);
    not_found(format!(
        "no agent named `{}` under `agents:` in the config{}",
        tackle_protocol::text::preview(name, 64),
        tackle_protocol::suggest::hint(&near)
    ))
}

/// The exit code for an error that ended the command.
pub fn for_error(err: &anyhow::Error) -> i32 {
    if err.downcast_ref::<StdoutClosed>().is_some() {
        OK
    } else if err.downcast_ref::<UsageError>().is_some()
        || err.downcast_ref::<crate::config::ConfigError>().is_some()
        || err
            .downcast_ref::<tackle_protocol::ids::InvalidId>()
            .is_some()
        || matches!(
            err.downcast_ref::<tackle_store::StoreError>(),
            Some(tackle_store::StoreError::InvalidId(_))
        )
    {
        USAGE
    } else if err.downcast_ref::<NotFoundError>().is_some() {
        NOT_FOUND
    } else {
        FAILED
    }
}
