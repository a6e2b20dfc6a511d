//! What the server tells an MCP client about its own work, as `notifications/message` (at the
//! level the client set with `logging/setLevel`) and `notifications/progress`: the protocol-
//! neutral part (levels, what each event says). Sending is [`crate::wire`]'s.

use serde_json::{json, Value};
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;
use tackle_protocol::{ErrorKind, ToolError, ToolOutput};

/// The syslog severities of MCP logging, least severe first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Level {
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
    Alert,
    Emergency,
}

impl Level {
    const ALL: [Level; 8] = [
        Level::Debug,
        Level::Info,
        Level::Notice,
        Level::Warning,
        Level::Error,
        Level::Critical,
        Level::Alert,
        Level::Emergency,
    ];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Level::Debug => "debug",
            Level::Info => "info",
            Level::Notice => "notice",
            Level::Warning => "warning",
            Level::Error => "error",
            Level::Critical => "critical",
            Level::Alert => "alert",
            Level::Emergency => "emergency",
        }
    }

    /// The level named exactly as the protocol names it.
    pub(crate) fn parse(name: &str) -> Option<Level> {
        Self::ALL.into_iter().find(|l| l.as_str() == name)
    }

    fn from_index(i: u8) -> Level {
        Self::ALL
            .get(usize::from(i))
            .copied()
            .unwrap_or(Level::Emergency)
    }
}

/// What a session sends before its client sets a level: warnings and worse (a call denied, or
/// one that needed approval no one could give).
pub(crate) const DEFAULT_LEVEL: Level = Level::Warning;

/// One session's minimum level (`logging/setLevel`).
#[derive(Debug)]
pub(crate) struct SessionLevel(AtomicU8);

impl Default for SessionLevel {
    fn default() -> Self {
        Self(AtomicU8::new(DEFAULT_LEVEL as u8))
    }
}

impl SessionLevel {
    pub(crate) fn set(&self, level: Level) {
        self.0.store(level as u8, Ordering::Relaxed);
    }

    pub(crate) fn get(&self) -> Level {
        Level::from_index(self.0.load(Ordering::Relaxed))
    }

    /// Whether a message at `level` goes out.
    pub(crate) fn allows(&self, level: Level) -> bool {
        level >= self.get()
    }
}

/// The name messages are logged under.
pub(crate) const LOGGER: &str = "tackle";

/// A call began (debug).
pub(crate) fn call_started(tool: &str) -> (Level, Value) {
    (
        Level::Debug,
        json!({"event": "call_started", "tool": tool, "message": format!("`{tool}` started")}),
    )
}

/// How a call ended, and at which level that is worth telling: a call that ran is debug
/// (info when the tool reported a failure); a call the server refused (denied by policy, or
/// needing approval no one gave) is a warning; anything else that stopped it is info.
pub(crate) fn call_ended(
    tool: &str,
    outcome: &Result<ToolOutput, ToolError>,
    elapsed: Duration,
) -> (Level, Value) {
    let secs = elapsed.as_secs_f64();
    let elapsed_ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
    match outcome {
        Ok(out) if !out.is_error => (
            Level::Debug,
            json!({"event": "call_finished", "tool": tool, "elapsed_ms": elapsed_ms,
                   "message": format!("`{tool}` finished in {secs:.1}s")}),
        ),
        Ok(_) => (
            Level::Info,
            json!({"event": "call_failed", "tool": tool, "elapsed_ms": elapsed_ms,
                   "message": format!("`{tool}` reported a failure after {secs:.1}s")}),
        ),
        Err(e) => {
            let level = match e.kind {
                ErrorKind::Denied | ErrorKind::NeedsApproval => Level::Warning,
                ErrorKind::InvalidArguments
                | ErrorKind::NotFound
                | ErrorKind::Timeout
                | ErrorKind::Failed => Level::Info,
            };
            let event = match e.kind {
                ErrorKind::Denied => "call_denied",
                ErrorKind::NeedsApproval => "call_not_approved",
                _ => "call_failed",
            };
            (
                level,
                json!({"event": event, "tool": tool, "kind": e.kind.as_str(),
                       "elapsed_ms": elapsed_ms,
                       "message": format!("`{tool}` {}: {}", e.kind, e.message)}),
            )
        }
    }
}

/// The `notifications/progress` of one call: `0` when it starts, one step per heartbeat while
/// it runs, and a last step equal to `total` when it ends, so progress only ever increases.
pub(crate) fn progress_started(tool: &str) -> (f64, String) {
    (0.0, format!("`{tool}` started"))
}

/// Heartbeat `beat` (1, 2, …), sent every [`HEARTBEAT`] while the call runs.
pub(crate) fn progress_running(tool: &str, beat: u32, elapsed: Duration) -> (f64, String) {
    (
        f64::from(beat),
        format!("`{tool}` running for {}s", elapsed.as_secs()),
    )
}

/// Notification `beat` carrying a line of the tool's output.
pub(crate) fn progress_line(tool: &str, beat: u32, line: &str) -> (f64, String) {
    (f64::from(beat), format!("`{tool}`: {line}"))
}

/// The last notification after `beats` heartbeats: `(progress, total, message)`.
pub(crate) fn progress_finished(
    tool: &str,
    beats: u32,
    ok: bool,
    elapsed: Duration,
) -> (f64, f64, String) {
    let step = f64::from(beats) + 1.0;
    let how = if ok {
        "finished"
    } else {
        "ended with an error"
    };
    (
        step,
        step,
        format!("`{tool}` {how} after {:.1}s", elapsed.as_secs_f64()),
    )
}

/// How often a running call with a progress token says it is still running.
pub(crate) const HEARTBEAT: Duration = Duration::from_secs(1);

/// At most one output line per this long goes out as progress; lines between are skipped
/// (the result has them all).
pub(crate) const LINE_EVERY: Duration = Duration::from_millis(200);

/// Characters of one output line shown in a progress message.
pub(crate) const LINE_CHARS: usize = 200;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_parse_as_the_protocol_names_them_and_order_by_severity() {
        for l in Level::ALL {
            assert_eq!(Level::parse(l.as_str()), Some(l));
            assert_eq!(Level::from_index(l as u8), l);
        }
        assert_eq!(Level::parse("WARNING"), None);
        assert_eq!(Level::parse("warn"), None);
        assert!(Level::Debug < Level::Info && Level::Alert < Level::Emergency);
    }

    #[test]
    fn a_session_level_filters_what_is_less_severe() {
        let level = SessionLevel::default();
        assert!(!level.allows(Level::Info), "the default is warning");
        assert!(level.allows(Level::Warning));
        level.set(Level::Debug);
        assert!(level.allows(Level::Debug));
        level.set(Level::Error);
        assert!(!level.allows(Level::Warning));
        assert!(level.allows(Level::Critical));
        level.set(Level::Emergency);
        assert!(!level.allows(Level::Alert));
    }

    #[test]
    fn refused_calls_are_warnings_and_finished_ones_debug() {
        let d = Duration::from_millis(1500);
        let (level, data) = call_ended(
            "shell",
            &Err(ToolError::new(ErrorKind::Denied, "rm is denied")),
            d,
        );
        assert_eq!(level, Level::Warning);
        assert_eq!(data["event"], "call_denied");
        assert_eq!(data["message"], "`shell` denied: rm is denied");
        let (level, data) = call_ended(
            "shell",
            &Err(ToolError::needs_approval("`shell` needs approval")),
            d,
        );
        assert_eq!(level, Level::Warning);
        assert_eq!(data["kind"], "needs_approval");
        let (level, _) = call_ended("x", &Err(ToolError::not_found("x")), d);
        assert_eq!(level, Level::Info);
        let (level, data) = call_ended("get_time", &Ok(ToolOutput::text("now")), d);
        assert_eq!(level, Level::Debug);
        assert_eq!(data["elapsed_ms"], 1500);
        assert_eq!(data["message"], "`get_time` finished in 1.5s");
        let failed = ToolOutput::error_text("exit 3");
        assert_eq!(call_ended("shell", &Ok(failed), d).0, Level::Info);
    }

    #[test]
    fn progress_only_increases_and_ends_at_its_total() {
        let (start, _) = progress_started("t");
        let (one, msg) = progress_running("t", 1, Duration::from_millis(1200));
        assert_eq!(msg, "`t` running for 1s");
        let (two, _) = progress_running("t", 2, Duration::from_millis(2100));
        let (end, total, msg) = progress_finished("t", 2, true, Duration::from_millis(2500));
        assert!(start < one && one < two && two < end);
        assert_eq!(end, total);
        assert_eq!(msg, "`t` finished after 2.5s");
        let (end, total, _) = progress_finished("t", 0, false, Duration::ZERO);
        assert!(end > start);
        assert_eq!(end, total);
    }
}
