//! Exit codes (SPEC.md §1) and the errors that carry them.

use tackle_protocol::ErrorKind;

pub const OK: i32 = 0;
pub const FAILED: i32 = 1;
pub const USAGE: i32 = 2;

/// A usage or configuration error: exit 2 with the message.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

pub fn usage(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(message.into()))
}

/// The exit code of a failed tool call.
pub fn for_kind(kind: ErrorKind) -> i32 {
    kind.exit_code()
}

/// The exit code for an error that ended the command.
pub fn for_error(err: &anyhow::Error) -> i32 {
    if err.downcast_ref::<UsageError>().is_some()
        || err.downcast_ref::<crate::config::ConfigError>().is_some()
    {
        USAGE
    } else {
        FAILED
    }
}
