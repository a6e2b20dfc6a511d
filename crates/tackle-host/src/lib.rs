//! NativeHost: the only code in Tackle that reads files, spawns processes and opens sockets
//! on behalf of tools, and the place where grants are *enforced*.
//!
//! A tool asks its [`ToolHost`](tackle_protocol::ToolHost) for a capability; a
//! [`NativeHost`], scoped by [`NativeHostProvider`] to one call's grants, workspace and cancel
//! token, checks the request with `tackle-policy`'s pure guards and then does the I/O:
//!
//! - **files**: paths are canonicalised (symlinks resolved) before the path guard sees them;
//!   reads are capped; writes are atomic (temp file, fsync, rename) and never go through a
//!   link out of the grant; `list` and `search` walk with ripgrep's crates and check every
//!   yielded path.
//! - **processes**: the shell analyser checks every command first (a shell line both as
//!   written and as bash reads it back); shell lines run in bash with no start-up files
//!   ([`bash_path`]), never in `/bin/sh`; the child gets a scrubbed
//!   environment, a per-session `TMPDIR`, its own process group (killed whole on timeout or
//!   cancel) and, where the kernel has it, a Landlock sandbox ([`sandbox_status`]).
//! - **HTTP**: every hop is checked against the network grant, names are resolved once and
//!   every address checked, the connection is pinned to a checked address, bodies are capped.
//!
//! It is *not* where policy is decided (that is `tackle-policy`, pure functions) nor where
//! tools live (`tackle-tools`); it holds no configuration loading of its own.
//!
//! ```no_run
//! use tackle_host::{HostConfig, NativeHostProvider};
//! use tackle_protocol::{CallScope, Grants, HostProvider, ReadRequest};
//! # async fn demo() -> Result<(), tackle_protocol::HostError> {
//! let provider = NativeHostProvider::new(HostConfig::new("/var/lib/tackle"));
//! let scope = CallScope {
//!     tool: "read_file".into(),
//!     session_id: "s1".into(),
//!     agent: "default".into(),
//!     workspace: "/home/me/project".into(),
//!     grants: Grants::default(), // no fs grant: the workspace only
//!     cancel: Default::default(),
//!     approved: false,
//! };
//! let host = provider.scoped(&scope);
//! let file = host.read(ReadRequest::whole("README.md")).await?;
//! println!("{} bytes of {}", file.bytes.len(), file.total_size);
//! # Ok(()) }
//! ```

// Every public item says what it is for and what a caller must know.
#![warn(missing_docs)]
// Outside tests, data from outside never panics the process: no unwrap, expect or panic.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod bash;
mod bwrap;
mod config;
mod dir_entries;
mod exec;
mod fd_walk;
mod fs;
mod host;
mod net;
mod paths;
mod pinned_program;
mod plugin_dirs;
mod programs;
mod proxy;
mod report;
mod safe_open;
mod sandbox;
mod sandbox_init;
mod sandbox_view;
mod search_pool;
mod seccomp;
mod skill_dirs;
mod walk;

pub use bash::{bash_path, bash_read_back, ReadBackError};
pub use bwrap::warm_up as warm_up_sandbox;
pub use config::{operator_urls, HostConfig};
pub use exec::check_shell_line;
pub use host::{NativeHost, NativeHostProvider};
pub use net::{install_tls_provider, MAX_REDIRECTS};
pub use plugin_dirs::DiskPluginDirs;
pub use programs::{Found, MaskedProgram};
pub use report::{enforcement_report, enforcement_report_json, Enforcement};
pub use sandbox::{sandbox_status, SandboxStatus};
pub use sandbox_init::sandbox_exec_main;
pub use sandbox_view::{enforced_rules, Executable, Mount, SandboxView};

/// The sandbox view of a command under `shell` in `workspace` on this machine, as `exec` would
/// plan it (for benchmarks and tools that show it).
pub fn sandbox_view_for(
    shell: &tackle_protocol::ShellGrant,
    workspace: &std::path::Path,
    tmpdir: &std::path::Path,
) -> SandboxView {
    sandbox_view::for_command(&sandbox_view::Inputs {
        shell,
        cwd: workspace,
        workspace,
        tmpdir,
        read: &[],
        write: &[],
        home: None,
        home_files: &[],
        hidden: &[],
        also_read: &[],
        proxied_network: false,
    })
}
pub use seccomp::blocked_syscalls;
pub use skill_dirs::DiskSkillDirs;
