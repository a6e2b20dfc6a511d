//! How long a provider waits, and what it says while it waits.
//!
//! One policy for every provider: a connect timeout, a first-byte timeout (after connecting,
//! until the response headers and the first byte of the body) and an idle timeout (the longest
//! gap between two chunks of a streamed answer). While no answer has arrived the transport
//! reports [`Progress::Waiting`] every [`WAITING_NOTICE_EVERY`], and [`Progress::Retrying`]
//! before each retry, to the request's [`ProgressHook`].

use crate::error::LlmError;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;
use tackle_protocol::config::BackendTimeouts;

/// How often a "waiting for the model" notice is given while nothing has arrived.
pub const WAITING_NOTICE_EVERY: Duration = Duration::from_secs(15);

/// The longest timeout accepted from the config (a day); longer values are refused there and
/// clamped to it when set in code, so deadline arithmetic cannot overflow.
pub const MAX_TIMEOUT_SECS: u64 = 86_400;
const MAX_TIMEOUT: Duration = Duration::from_secs(MAX_TIMEOUT_SECS);
/// The shortest interval between waiting notices when they are on.
const MIN_NOTICE_INTERVAL: Duration = Duration::from_millis(100);

/// A backend's timeouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Establishing the connection (TCP and TLS).
    pub connect: Duration,
    /// After connecting, until the headers and the first byte of the body arrive.
    pub first_byte: Duration,
    /// The longest gap between two chunks of the body once it has started.
    pub idle: Duration,
    /// How often [`Progress::Waiting`] is reported while nothing has arrived (default
    /// [`WAITING_NOTICE_EVERY`]); zero turns the notices off.
    pub waiting_notice: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(BackendTimeouts::DEFAULT_CONNECT_SECS),
            first_byte: Duration::from_secs(BackendTimeouts::DEFAULT_FIRST_BYTE_SECS),
            idle: Duration::from_secs(BackendTimeouts::DEFAULT_IDLE_SECS),
            waiting_notice: WAITING_NOTICE_EVERY,
        }
    }
}

impl Timeouts {
    /// The timeouts a `backends[].timeouts` entry asks for, defaults filling unset keys.
    /// Zero is refused (it would fail every request), and so is more than a day.
    pub fn from_config(backend: &str, cfg: Option<&BackendTimeouts>) -> Result<Self, LlmError> {
        let cfg = cfg.copied().unwrap_or_default();
        let secs = |value: Option<u64>, default: u64, key: &str| match value {
            Some(n) if n == 0 || n > MAX_TIMEOUT_SECS => Err(LlmError::Config {
                backend: backend.to_string(),
                message: format!(
                    "timeouts.{key} is {n}; it must be between 1 and {MAX_TIMEOUT_SECS} (seconds)"
                ),
            }),
            Some(n) => Ok(Duration::from_secs(n)),
            None => Ok(Duration::from_secs(default)),
        };
        Ok(Self {
            connect: secs(
                cfg.connect_secs,
                BackendTimeouts::DEFAULT_CONNECT_SECS,
                "connect_secs",
            )?,
            first_byte: secs(
                cfg.first_byte_secs,
                BackendTimeouts::DEFAULT_FIRST_BYTE_SECS,
                "first_byte_secs",
            )?,
            idle: secs(
                cfg.idle_secs,
                BackendTimeouts::DEFAULT_IDLE_SECS,
                "idle_secs",
            )?,
            waiting_notice: WAITING_NOTICE_EVERY,
        })
    }
}

/// How much longer than the connect timeout the first-byte wait lasts at least, so a connect
/// that fails always ends as a connect error and never as a stall.
const CONNECT_MARGIN: Duration = Duration::from_millis(250);

impl Timeouts {
    /// Every timeout at most a day, and a non-zero notice interval at least 100 ms, so
    /// deadlines never overflow and notices never spin.
    pub(crate) fn clamped(self) -> Self {
        let notice = if self.waiting_notice.is_zero() {
            Duration::ZERO
        } else {
            self.waiting_notice.clamp(MIN_NOTICE_INTERVAL, MAX_TIMEOUT)
        };
        Self {
            connect: self.connect.min(MAX_TIMEOUT),
            first_byte: self.first_byte.min(MAX_TIMEOUT),
            idle: self.idle.min(MAX_TIMEOUT),
            waiting_notice: notice,
        }
    }

    /// The wait for the first byte, counted from sending (so `first_byte_secs: 60` is a minute
    /// of waiting): `first_byte`, but never less than the connect timeout plus a margin, so
    /// that when it passes the server was reached and has said nothing.
    pub(crate) fn first_byte_wait(&self) -> Duration {
        self.first_byte
            .max(self.connect.saturating_add(CONNECT_MARGIN))
    }
}

/// What a provider is doing while the caller waits.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Progress {
    /// Nothing of the answer has arrived yet; given every [`WAITING_NOTICE_EVERY`].
    Waiting {
        /// The backend's configured name.
        backend: String,
        /// Since the request was first sent (retries included).
        elapsed: Duration,
        /// The try under way, from 1.
        attempt: u32,
    },
    /// A try failed in a way worth retrying; the next starts after `wait`.
    Retrying {
        /// The backend's configured name.
        backend: String,
        /// The try that failed, from 1.
        attempt: u32,
        /// The total tries allowed ([`crate::RetryPolicy::max_attempts`]).
        max_attempts: u32,
        /// The backoff (or the server's `Retry-After`) before the next try.
        wait: Duration,
        /// Why the try failed (the error's message).
        reason: String,
    },
}

impl fmt::Display for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Progress::Waiting {
                backend,
                elapsed,
                attempt,
            } => {
                write!(
                    f,
                    "waiting for the model (backend `{backend}`)… {} s",
                    elapsed.as_secs()
                )?;
                if *attempt > 1 {
                    write!(f, " (try {attempt})")?;
                }
                Ok(())
            }
            Progress::Retrying {
                attempt,
                max_attempts,
                wait,
                reason,
                ..
            } => write!(
                f,
                "{reason}; retrying in {:.1} s (try {} of {max_attempts})",
                wait.as_secs_f64(),
                attempt.saturating_add(1)
            ),
        }
    }
}

/// Where a request's [`Progress`] goes. Called on the runtime's threads; must not block.
#[derive(Clone)]
pub struct ProgressHook(Arc<dyn Fn(&Progress) + Send + Sync>);

impl ProgressHook {
    /// Wraps a closure that receives every notice of the requests it is attached to.
    pub fn new(f: impl Fn(&Progress) + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    /// Hands `progress` to the closure, on the caller's thread.
    pub fn call(&self, progress: &Progress) {
        (self.0)(progress)
    }
}

impl fmt::Debug for ProgressHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ProgressHook")
    }
}

/// Two hooks are equal when they are the same closure.
impl PartialEq for ProgressHook {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// Reports `progress` to `hook`, or as a warning on the log when the caller set none, so a
/// front end that wires nothing still says why it is silent.
pub(crate) fn report(hook: Option<&ProgressHook>, progress: &Progress) {
    match hook {
        Some(h) => h.call(progress),
        None => tracing::warn!("{progress}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_keys_take_the_defaults_and_zero_is_refused() {
        assert_eq!(
            Timeouts::from_config("b", None).unwrap(),
            Timeouts::default()
        );
        let cfg = BackendTimeouts {
            connect_secs: Some(2),
            first_byte_secs: None,
            idle_secs: Some(5),
        };
        let t = Timeouts::from_config("b", Some(&cfg)).unwrap();
        assert_eq!(t.connect, Duration::from_secs(2));
        assert_eq!(t.first_byte, Duration::from_secs(60));
        assert_eq!(t.idle, Duration::from_secs(5));
        let zero = BackendTimeouts {
            idle_secs: Some(0),
            ..BackendTimeouts::default()
        };
        let err = Timeouts::from_config("b", Some(&zero)).unwrap_err();
        assert!(err.to_string().contains("timeouts.idle_secs"), "{err}");
        let huge = BackendTimeouts {
            first_byte_secs: Some(u64::MAX),
            ..BackendTimeouts::default()
        };
        let err = Timeouts::from_config("b", Some(&huge)).unwrap_err();
        assert!(
            err.to_string().contains("timeouts.first_byte_secs"),
            "{err}"
        );
    }

    #[test]
    fn timeouts_set_in_code_are_clamped_so_deadlines_cannot_overflow() {
        let t = Timeouts {
            connect: Duration::MAX,
            first_byte: Duration::MAX,
            idle: Duration::MAX,
            waiting_notice: Duration::from_nanos(1),
        }
        .clamped();
        assert_eq!(t.connect, MAX_TIMEOUT);
        assert_eq!(t.first_byte_wait(), MAX_TIMEOUT + CONNECT_MARGIN);
        assert_eq!(t.waiting_notice, MIN_NOTICE_INTERVAL);
        let _ = tokio::time::Instant::now() + t.first_byte_wait() + t.idle;
    }

    #[test]
    fn progress_reads_as_a_sentence() {
        let waiting = Progress::Waiting {
            backend: "local".into(),
            elapsed: Duration::from_secs(15),
            attempt: 1,
        };
        assert_eq!(
            waiting.to_string(),
            "waiting for the model (backend `local`)… 15 s"
        );
        let retrying = Progress::Retrying {
            backend: "local".into(),
            attempt: 1,
            max_attempts: 4,
            wait: Duration::from_millis(500),
            reason: "boom".into(),
        };
        assert_eq!(retrying.to_string(), "boom; retrying in 0.5 s (try 2 of 4)");
    }
}
