//! The namespace sandbox every command runs in where bubblewrap works: a read-only view of the
//! system, the user's home replaced by an empty one (toolchains visible read-only), the
//! workspace and the write grants writable, the read grants readable, Tackle's config and state
//! hidden, its own PID namespace (every process dies with the call), no network unless the call
//! has a network grant, no capabilities, a new session (no terminal injection).
//!
//! bubblewrap does the mounting; `sandbox_view` decides the view and this module only finds
//! bubblewrap and checks that it works here. The arguments are built in the parent, so
//! nothing runs between `fork` and `exec`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// Why commands cannot run in bubblewrap's namespaces here. Cloned out of the probe's cached
/// answer, so the sources are shared.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum BwrapError {
    #[error("bubblewrap is not installed (Debian: apt-get install bubblewrap)")]
    NotInstalled,
    /// The probe ran and failed; holds what bubblewrap printed about it.
    #[error("bubblewrap cannot create namespaces here: {stderr}")]
    NoNamespaces { stderr: String },
    #[error("bubblewrap could not be started: {0}")]
    NotStarted(#[source] Arc<std::io::Error>),
    #[error("the bubblewrap probe did not finish: {0}")]
    ProbeUnfinished(#[source] Arc<tokio::task::JoinError>),
}

/// bubblewrap, found once, and whether it can create namespaces on this machine.
static BWRAP: OnceLock<Result<PathBuf, BwrapError>> = OnceLock::new();

/// bubblewrap's path, or why commands cannot run in its namespaces; probes on first use.
pub(crate) fn usable() -> Result<&'static Path, BwrapError> {
    BWRAP
        .get_or_init(probe)
        .as_ref()
        .map(PathBuf::as_path)
        .map_err(Clone::clone)
}

/// [`usable`] for a call on the runtime: the first probe (one sandboxed `true`, ~10 ms) runs on
/// the blocking pool, so that it never stalls a worker thread that sibling calls need.
pub(crate) async fn usable_on_runtime() -> Result<&'static Path, BwrapError> {
    if BWRAP.get().is_none() {
        if let Err(e) = tokio::task::spawn_blocking(usable).await {
            return Err(BwrapError::ProbeUnfinished(Arc::new(e)));
        }
    }
    usable()
}

/// Start the probe on a thread of its own, so that a front end that will run commands has the
/// answer before its first one (a model's first reply takes longer than the probe).
pub fn warm_up() {
    if BWRAP.get().is_none() {
        let spawned = std::thread::Builder::new()
            .name("tackle-bwrap-probe".into())
            .spawn(|| {
                let _ = usable();
            });
        // Without a thread, the first command probes itself.
        drop(spawned);
    }
}

fn probe() -> Result<PathBuf, BwrapError> {
    let path = ["/usr/bin/bwrap", "/bin/bwrap", "/usr/local/bin/bwrap"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .ok_or(BwrapError::NotInstalled)?;
    // One real sandbox: the kernel may refuse user or PID namespaces.
    let status = std::process::Command::new(&path)
        .args([
            "--ro-bind",
            "/",
            "/",
            "--unshare-all",
            "--die-with-parent",
            "--",
            "/bin/true",
        ])
        .env_clear()
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .output();
    match status {
        Ok(out) if out.status.success() => Ok(path),
        Ok(out) => Err(BwrapError::NoNamespaces {
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        }),
        Err(e) => Err(BwrapError::NotStarted(Arc::new(e))),
    }
}
