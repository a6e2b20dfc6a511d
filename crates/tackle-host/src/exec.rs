//! Running processes: checked by the shell analyser, scrubbed environment, own process group,
//! Landlock, output capped while streaming, killed with its whole group on timeout or cancel.

use crate::bash;
use crate::paths::PathGuard;
use crate::sandbox::{self, Prepared};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tackle_policy::path::Access;
use tackle_policy::shell::{check_argv, check_shell};
use tackle_protocol::{
    Decision, ExecCommand, ExecOutput, ExecRequest, HostError, ShellGrant, Verdict,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};
use tokio_util::sync::CancellationToken;

/// Variables every child gets from our own environment, when set.
const BASE_ENV: &[&str] = &["PATH", "HOME", "LANG", "TERM", "USER", "TZ"];

/// How long output may still be drained after the process ended, for descendants that left
/// the process group (`setsid`) and kept the pipes open.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// Everything `run` needs from the scoped host.
pub(crate) struct ExecScope<'a> {
    pub guard: &'a PathGuard,
    pub shell: &'a ShellGrant,
    pub tmpdir: &'a Path,
    pub passthrough: &'a [String],
    pub output_ceiling: usize,
    pub cancel: &'a CancellationToken,
    /// A person approved this call (see [`tackle_protocol::CallScope::approved`]).
    pub approved: bool,
}

/// The shell analyser's decision for this command. A shell line under rules is checked twice:
/// as written, and as bash itself reads it back, and the stricter decision stands.
pub(crate) async fn decide(command: &ExecCommand, grant: &ShellGrant) -> Decision {
    match command {
        ExecCommand::Shell(line) => check_shell_line(line, grant).await,
        ExecCommand::Argv { program, args } => {
            let argv: Vec<String> = std::iter::once(program.clone())
                .chain(args.iter().cloned())
                .collect();
            check_argv(&argv, grant)
        }
    }
}

/// The decision taken before a shell line runs: the analyser's verdict on the line as written
/// and, while any rule is in force, on the line as bash itself reads it back; the stricter one.
pub async fn check_shell_line(line: &str, grant: &ShellGrant) -> Decision {
    let written = check_shell(line, grant);
    let restricted = !grant.allow.is_empty() || !grant.deny.is_empty();
    if written.is_denied() || !restricted {
        return written;
    }
    match bash::read_back(line).await {
        Ok(read) => stricter(written, check_shell(&read, grant)),
        Err(e) => Decision::deny(
            "grants.shell",
            format!(
                "`{}` is denied: {e}",
                tackle_protocol::text::preview(line, 120)
            ),
        ),
    }
}

/// Deny over ask over allow; the first of two equal decisions (the line as written).
fn stricter(written: Decision, read: Decision) -> Decision {
    let rank = |d: &Decision| match d.verdict {
        Verdict::Allow => 0,
        Verdict::Ask => 1,
        Verdict::Deny => 2,
    };
    if rank(&read) > rank(&written) {
        Decision {
            why: format!("{} (as bash reads the line)", read.why),
            ..read
        }
    } else {
        written
    }
}

pub(crate) async fn run(scope: &ExecScope<'_>, req: ExecRequest) -> Result<ExecOutput, HostError> {
    let decision = decide(&req.command, scope.shell).await;
    // A line the policy could not check runs only when a person approved this very call.
    let approved_ask = decision.verdict == Verdict::Ask && scope.approved;
    if !decision.is_allowed() && !approved_ask {
        return Err(HostError::Denied(Decision::deny(
            decision.rule,
            decision.why,
        )));
    }
    let cwd = checked_cwd(scope.guard, req.cwd.as_deref())?;
    prepare_tmpdir(scope.tmpdir)?;
    let mut cmd = command(&req.command)?;
    cmd.current_dir(&cwd)
        .env_clear()
        .envs(base_env(scope.passthrough));
    cmd.env("TMPDIR", scope.tmpdir);
    for (k, v) in &req.env {
        validate_env_name(k)?;
        cmd.env(k, v);
    }
    let stdin = if req.stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    };
    cmd.stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd.process_group(0).kill_on_drop(true);
    let sandbox = sandbox::prepare(&writable_roots(scope));
    apply_sandbox(&mut cmd, &sandbox);
    let started = Instant::now();
    let child = cmd.spawn().map_err(|e| spawn_error(&req.command, e))?;
    drop(sandbox); // the child holds its own copy of the ruleset descriptor
                   // If this future is dropped mid-way (the caller gave up), the group still dies.
    let _group = GroupGuard(child.id());
    supervise(child, req, scope, started).await
}

fn command(command: &ExecCommand) -> Result<Command, HostError> {
    match command {
        ExecCommand::Shell(line) => {
            let bash = bash::bash_path()
                .ok_or_else(|| HostError::Invalid(bash::ReadBackError::Missing.to_string()))?;
            let mut c = Command::new(bash);
            c.args(bash::BASH_ARGS).arg("-c").arg(line);
            Ok(c)
        }
        ExecCommand::Argv { program, args } => {
            let mut c = Command::new(program);
            c.args(args);
            Ok(c)
        }
    }
}

fn spawn_error(command: &ExecCommand, e: std::io::Error) -> HostError {
    let what = match command {
        ExecCommand::Shell(_) => "bash",
        ExecCommand::Argv { program, .. } => program.as_str(),
    };
    if e.kind() == std::io::ErrorKind::NotFound {
        HostError::NotFound {
            path: PathBuf::from(what),
        }
    } else {
        HostError::Io(format!("could not start {what}: {e}"))
    }
}

/// The working directory: the workspace by default, and always inside the read grant.
fn checked_cwd(guard: &PathGuard, cwd: Option<&Path>) -> Result<PathBuf, HostError> {
    let requested = cwd.unwrap_or(&guard.workspace);
    let canon = guard.resolve(requested).map_err(|e| e.into_host_error())?;
    if !canon.exists || !canon.path.is_dir() {
        return Err(HostError::NotFound {
            path: requested.to_path_buf(),
        });
    }
    guard.require(&canon.path, Access::Read)?;
    Ok(canon.path)
}

fn prepare_tmpdir(dir: &Path) -> Result<(), HostError> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| {
            HostError::Io(format!(
                "could not create the session TMPDIR {}: {e}",
                dir.display()
            ))
        })
}

/// The scrubbed base: the fixed allowlist, `LC_*`, and the operator's passthrough entries.
pub(crate) fn base_env(passthrough: &[String]) -> Vec<(String, String)> {
    std::env::vars()
        .filter(|(k, _)| !bash::is_shell_startup_variable(k))
        .filter(|(k, _)| {
            BASE_ENV.contains(&k.as_str())
                || k.starts_with("LC_")
                || passthrough.iter().any(|p| match p.strip_suffix('*') {
                    Some(prefix) => k.starts_with(prefix),
                    None => p == k,
                })
        })
        .collect()
}

/// Tools may add variables, but not ones that change what code the loader runs.
fn validate_env_name(name: &str) -> Result<(), HostError> {
    let bad_chars = name.is_empty() || name.contains(['=', '\0']);
    let loader = name.starts_with("LD_") || name.starts_with("DYLD_");
    if bad_chars || loader || name == "TMPDIR" || bash::is_shell_startup_variable(name) {
        return Err(HostError::Invalid(format!(
            "environment variable {name:?} may not be set by a tool"
        )));
    }
    Ok(())
}

fn writable_roots(scope: &ExecScope<'_>) -> Vec<PathBuf> {
    let mut w = vec![scope.guard.workspace.clone(), scope.tmpdir.to_path_buf()];
    w.extend(scope.guard.roots.write.iter().cloned());
    w
}

fn apply_sandbox(cmd: &mut Command, sandbox: &Prepared) {
    static WARNED: AtomicBool = AtomicBool::new(false);
    let Some(fd) = sandbox.raw_fd() else {
        if !WARNED.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "shell commands run WITHOUT an OS sandbox: {}",
                sandbox.status
            );
        }
        tracing::debug!("sandbox {}", sandbox.status);
        return;
    };
    // SAFETY: the closure only makes async-signal-safe syscalls (see `restrict_in_child`),
    // and `fd` stays open in the parent until `spawn` has returned.
    unsafe {
        cmd.pre_exec(move || sandbox::restrict_in_child(fd));
    }
}

enum Ending {
    Exited(std::process::ExitStatus),
    TimedOut,
    Cancelled,
}

async fn supervise(
    mut child: Child,
    req: ExecRequest,
    scope: &ExecScope<'_>,
    started: Instant,
) -> Result<ExecOutput, HostError> {
    let cap = req.max_output_bytes.min(scope.output_ceiling);
    let stop = CancellationToken::new();
    // Readers stop when this call ends, however it ends (a dropped future included).
    let _stop_readers = stop.clone().drop_guard();
    let out = child
        .stdout
        .take()
        .map(|r| tokio::spawn(read_capped(r, cap, stop.clone())));
    let err = child
        .stderr
        .take()
        .map(|r| tokio::spawn(read_capped(r, cap, stop.clone())));
    if let (Some(mut w), Some(data)) = (child.stdin.take(), req.stdin) {
        // A child that does not read its input must not block us: write in the background.
        tokio::spawn(async move {
            let _ = w.write_all(&data).await;
        });
    }
    let ending = wait_or_kill(&mut child, req.timeout, scope.cancel).await?;
    let stopper = {
        let stop = stop.clone();
        tokio::spawn(async move {
            tokio::time::sleep(DRAIN_GRACE).await;
            stop.cancel();
        })
    };
    let (stdout, out_cut) = join_reader(out).await;
    let (stderr, err_cut) = join_reader(err).await;
    stopper.abort();
    let (exit_code, timed_out) = match ending {
        Ending::Exited(status) => (status.code(), false),
        Ending::TimedOut => (None, true),
        Ending::Cancelled => return Err(HostError::Cancelled),
    };
    Ok(ExecOutput {
        exit_code,
        stdout: lossy_utf8(&stdout, out_cut),
        stderr: lossy_utf8(&stderr, err_cut),
        duration: started.elapsed(),
        truncated: out_cut || err_cut,
        timed_out,
    })
}

/// Wait for the child; on timeout or cancel kill its whole group, and always reap it.
async fn wait_or_kill(
    child: &mut Child,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<Ending, HostError> {
    let pgid = child.id();
    let ending = tokio::select! {
        status = child.wait() => {
            // Background jobs the command left behind die with it.
            kill_group(pgid);
            return status.map(Ending::Exited).map_err(|e| HostError::Io(format!("waiting for the command: {e}")));
        }
        _ = tokio::time::sleep(timeout) => Ending::TimedOut,
        _ = cancel.cancelled() => Ending::Cancelled,
    };
    kill_group(pgid);
    let _ = child.wait().await; // reap: no zombie
    Ok(ending)
}

/// Kills the process group when dropped: the end of every path out of `run`, including a
/// dropped future. After a normal exit the group is usually empty already (ESRCH).
struct GroupGuard(Option<u32>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        kill_group(self.0);
    }
}

fn kill_group(pgid: Option<u32>) {
    // Never 0 or 1: killpg(0) is our own group and 1 is init.
    if let Some(pgid) = pgid.and_then(|p| i32::try_from(p).ok()).filter(|p| *p > 1) {
        // SAFETY: sending a signal has no memory effects; ESRCH (already gone) is fine.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
    }
}

async fn join_reader(task: Option<tokio::task::JoinHandle<(Vec<u8>, bool)>>) -> (Vec<u8>, bool) {
    match task {
        Some(t) => t.await.unwrap_or_default(),
        None => (Vec::new(), false),
    }
}

/// Read everything (so the child never blocks on a full pipe) but keep only `cap` bytes.
async fn read_capped<R: AsyncRead + Unpin>(
    mut r: R,
    cap: usize,
    stop: CancellationToken,
) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut truncated = false;
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        let n = tokio::select! {
            res = r.read(&mut chunk) => match res {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            },
            _ = stop.cancelled() => break,
        };
        let room = cap.saturating_sub(kept.len());
        if n > room {
            truncated = true;
        }
        kept.extend_from_slice(chunk.get(..n.min(room)).unwrap_or_default());
    }
    (kept, truncated)
}

/// Lossy UTF-8; when the bytes were cut, an incomplete last character is dropped rather than
/// shown as a replacement character.
pub(crate) fn lossy_utf8(bytes: &[u8], cut: bool) -> String {
    let bytes = match (cut, std::str::from_utf8(bytes)) {
        (true, Err(e)) if e.error_len().is_none() => bytes.get(..e.valid_up_to()).unwrap_or(bytes),
        _ => bytes,
    };
    String::from_utf8_lossy(bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_output_drops_a_split_last_character() {
        let s = "aé".as_bytes();
        assert_eq!(lossy_utf8(&s[..2], true), "a");
        assert_eq!(lossy_utf8(&s[..2], false), "a\u{fffd}");
    }

    #[test]
    fn loader_variables_cannot_be_set_by_tools() {
        assert!(validate_env_name("LD_PRELOAD").is_err());
        assert!(validate_env_name("A=B").is_err());
        assert!(validate_env_name("GIT_TERMINAL_PROMPT").is_ok());
    }
}
