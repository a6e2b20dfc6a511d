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
use std::sync::OnceLock;

/// bubblewrap, found once, and whether it can create namespaces on this machine.
static BWRAP: OnceLock<Result<PathBuf, String>> = OnceLock::new();

/// bubblewrap's path, or why commands cannot run in its namespaces; probes on first use.
pub(crate) fn usable() -> Result<&'static Path, String> {
    BWRAP
        .get_or_init(probe)
        .as_ref()
        .map(PathBuf::as_path)
        .map_err(Clone::clone)
}

/// [`usable`] for a call on the runtime: the first probe (one sandboxed `true`, ~10 ms) runs on
/// the blocking pool, so that it never stalls a worker thread that sibling calls need.
pub(crate) async fn usable_on_runtime() -> Result<&'static Path, String> {
    if BWRAP.get().is_none() {
        if let Err(e) = tokio::task::spawn_blocking(usable).await {
            return Err(format!("the bubblewrap probe did not finish: {e}"));
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

fn probe() -> Result<PathBuf, String> {
    let path = ["/usr/bin/bwrap", "/bin/bwrap", "/usr/local/bin/bwrap"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .ok_or_else(|| {
            "bubblewrap is not installed (Debian: apt-get install bubblewrap)".to_string()
        })?;
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
        Ok(out) => Err(format!(
            "bubblewrap cannot create namespaces here: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => Err(format!("bubblewrap could not be started: {e}")),
    }
}
