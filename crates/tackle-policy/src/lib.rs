//! Pure policy decisions for Tackle: grants and their algebra, policy resolution, the shell
//! analyser, the URL/IP guard, the path guard and the secret redactor.
//!
//! Everything here is a pure function: no I/O, no async, no environment reads. `tackle-host`
//! calls these functions and enforces what they decide; this crate never touches the machine.
//!
//! ```
//! use tackle_policy::shell::check_shell;
//! use tackle_protocol::ShellGrant;
//! let grant = ShellGrant { allow: vec!["git".into(), "ls".into()], deny: vec!["rm".into()] };
//! assert!(check_shell("git status && ls -la", &grant).is_allowed());
//! assert!(check_shell("ls; \\rm -rf x", &grant).is_denied());
//! ```

pub mod grants;
pub mod net;
pub mod path;
pub mod resolve;
pub mod secrets;
pub mod shell;
