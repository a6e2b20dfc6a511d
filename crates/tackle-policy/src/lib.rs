//! Pure policy decisions for Tackle: is this shell line, URL, path or tool call allowed, and
//! why?
//!
//! - [`shell`]: finds every command a shell line would run (a real parser, wrappers such as
//!   `env`/`sudo`/`xargs`/`sh -c`/`eval` looked through) and matches them against `allow`/`deny`.
//! - [`net`]: the URL and IP guard (schemes, every IPv4/IPv6 spelling, private ranges and
//!   names, endpoint host globs, path prefixes by segment, methods).
//! - [`path`]: fs roots from a grant and whole-component containment checks.
//! - [`grants`]: layering grants and attenuating them for a child (only ever narrower).
//! - [`resolve`]: a tool's policy from its default, the config and the agent, plus the
//!   approval gate.
//! - [`secrets`]: redaction of API keys, tokens and private keys in tool output.
//!
//! Every check returns a [`tackle_protocol::Decision`] whose `rule` names the config key that
//! decided and whose `why` is a sentence a person and a model can act on.
//!
//! This crate is *not* where anything happens: no I/O, no async, no environment reads. The
//! host resolves symlinks and DNS, then asks these functions; it enforces what they decide.
//!
//! ```
//! use tackle_policy::shell::check_shell;
//! use tackle_protocol::ShellGrant;
//! let grant = ShellGrant { allow: vec!["git".into(), "ls".into()], deny: vec!["rm".into()], ..Default::default() };
//! assert!(check_shell("git status && ls -la", &grant).is_allowed());
//! let d = check_shell("ls; \\rm -rf x", &grant);
//! assert!(d.is_denied());
//! assert_eq!(d.rule, "grants.shell.deny \"rm\"");
//! ```

// Outside tests, data from outside never panics the process: no unwrap, expect or panic.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]
// Every public item says what it is and what a caller must know.
#![warn(missing_docs)]

pub mod grants;
pub mod net;
pub mod path;
pub mod resolve;
pub mod secrets;
pub mod shell;
