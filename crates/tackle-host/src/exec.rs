//! Running processes: checked by the shell analyser, scrubbed environment, own process group,
//! Landlock, output capped while streaming, killed with its whole group on timeout or cancel.

use crate::bash;
use crate::bwrap;
use crate::paths::PathGuard;
use crate::pinned_program::PinnedProgram;
use crate::sandbox::{self, Prepared};
use crate::sandbox_view;
use std::ffi::OsString;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tackle_policy::path::Access;
use tackle_policy::shell::{check_argv, check_shell};
use tackle_protocol::{
    Decision, ExecCommand, ExecOutput, ExecRequest, HostError, OutputLines, ShellGrant, Verdict,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};
use tokio_util::sync::CancellationToken;

/// Variables every child gets from our own environment, when set.
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
    /// Kept invisible inside the sandbox: Tackle's config file and state directory.
    pub hidden: &'a [PathBuf],
    /// The call's network grant: its traffic goes through the filtering proxy.
    pub network: Option<&'a tackle_protocol::NetworkGrant>,
    /// The program that bridges the sandbox to the proxy (see `HostConfig::net_bridge`).
    pub net_bridge: Option<&'a Path>,
    /// The allow-list start-up program (see `HostConfig::sandbox_init`).
    pub sandbox_init: Option<&'a Path>,
    pub dns_overrides: &'a [(String, std::net::IpAddr)],
    /// `security.sandbox: required`: no command runs without the namespace sandbox.
    pub sandbox_required: bool,
    /// Decoy credentials for the environment (see `HostConfig::decoy_env`).
    pub decoy_env: &'a [(String, String)],
    /// Decoy files under the sandbox's home (see `HostConfig::decoy_home_files`).
    pub decoy_home_files: &'a [(PathBuf, PathBuf)],
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
    if let ExecCommand::Argv { program, args } = &req.command {
        let argv: Vec<String> = std::iter::once(program.clone())
            .chain(args.iter().cloned())
            .collect();
        if let Err(why) = tackle_policy::shell::values_stay_data(&argv, &req.data_values) {
            return Err(HostError::Denied(Decision::deny(
                "plugins.argv",
                why.to_string(),
            )));
        }
    }
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
    let (program, args) = command_line(&req.command)?;
    // A pinned program is checked here, once, and the child runs the checked copy.
    let pinned = match &req.program_sha256 {
        Some(want) => Some(PinnedProgram::load(&program, want)?),
        None => None,
    };
    let program = pinned.as_ref().map_or(program, PinnedProgram::path);
    let namespaces = bwrap::usable_on_runtime().await;
    // With a network grant, the command reaches the network only through the proxy, which
    // lives as long as this call.
    let proxy = match (&namespaces, scope.network) {
        (Ok(_), Some(grant)) => net_proxy(scope, grant)?,
        _ => None,
    };
    let bridge_exe: Vec<PathBuf> = proxy.iter().map(|(_, b)| b.to_path_buf()).collect();
    let view = match &namespaces {
        Ok(bwrap) => Some((
            *bwrap,
            sandbox_view::for_command(&sandbox_view::Inputs {
                shell: scope.shell,
                cwd: &cwd,
                workspace: &scope.guard.workspace,
                tmpdir: scope.tmpdir,
                read: &scope.guard.roots.read,
                write: &scope.guard.roots.write,
                home: scope.guard.home.as_deref(),
                home_files: scope.decoy_home_files,
                hidden: scope.hidden,
                also_read: &bridge_exe,
                proxied_network: proxy.is_some(),
            }),
        )),
        Err(_) => None,
    };
    // Under an allow list the command starts through the sandbox's start-up step (Tackle's
    // own binary, passed as a descriptor), which makes every other mount `noexec` and
    // installs the system-call filter itself.
    let init = match &view {
        Some((_, v)) if v.needs_init() => Some(init_program(scope.sandbox_init)?),
        _ => None,
    };
    let (program, args) = match (&view, &init) {
        (Some((_, v)), Some(exe)) => {
            let fd = exe.as_raw_fd();
            let mut a = v.init_args(fd);
            a.push(program.into());
            a.extend(args);
            (PathBuf::from(format!("/proc/self/fd/{fd}")), a)
        }
        _ => (program, args),
    };
    let (program, args) = match &proxy {
        Some((p, bridge)) => {
            let mut a: Vec<OsString> = vec!["__net-bridge".into(), p.socket.clone().into()];
            a.push("--".into());
            a.push(program.into());
            a.extend(args);
            (bridge.to_path_buf(), a)
        }
        None => (program, args),
    };
    let filters = match &view {
        Some((_, v)) if !v.needs_init() => seccomp_filters(scope.sandbox_required)?,
        _ => Vec::new(),
    };
    let filter_fds: Vec<i32> = filters.iter().map(|f| f.as_raw_fd()).collect();
    let mut cmd = match (&view, &namespaces) {
        (Some((bwrap, view)), _) => {
            let mut c = Command::new(bwrap);
            c.args(view.bwrap_args(&filter_fds));
            c.arg(&program);
            c.args(&args);
            c
        }
        (None, Err(why)) if scope.sandbox_required => return Err(sandbox_required(why)),
        (None, why) => {
            let why = why
                .as_ref()
                .err()
                .map(ToString::to_string)
                .unwrap_or_default();
            static WARNED: AtomicBool = AtomicBool::new(false);
            warn_once(&WARNED, || {
                format!(
                "commands run WITHOUT namespace isolation ({why}): the home directory, Tackle's config and other processes are reachable, the network is not cut off, program rules are enforced only by the shell analyser, and background processes may outlive their call; `security.sandbox: required` refuses such commands"
            )
            });
            let mut c = Command::new(&program);
            c.args(&args);
            c
        }
    };
    let base = base_env(scope.passthrough);
    // A decoy never replaces a variable the operator passes through (a real credential).
    let decoys: Vec<&(String, String)> = scope
        .decoy_env
        .iter()
        .filter(|(name, _)| !base.iter().any(|(k, _)| k == name))
        .collect();
    cmd.current_dir(&cwd).env_clear().envs(base);
    cmd.envs(decoys.into_iter().map(|(k, v)| (k, v)));
    cmd.env("TMPDIR", scope.tmpdir);
    for (k, v) in &req.env {
        validate_env_name(k)?;
        cmd.env(k, v);
    }
    if proxy.is_some() {
        let url = format!("http://127.0.0.1:{}", crate::proxy::BRIDGE_PORT);
        for k in [
            "http_proxy",
            "https_proxy",
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "ALL_PROXY",
            "all_proxy",
        ] {
            cmd.env(k, &url);
        }
        cmd.env_remove("NO_PROXY").env_remove("no_proxy");
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
    let mut keep = filter_fds.clone();
    keep.extend(pinned.as_ref().map(PinnedProgram::raw_fd));
    keep.extend(init.as_ref().map(AsRawFd::as_raw_fd));
    // SAFETY: only `close_range` and `fcntl` run between fork and exec (async-signal-safe
    // system calls, no allocation); the kept descriptors stay open in the parent until `spawn`
    // has returned.
    unsafe {
        cmd.pre_exec(move || only_these_descriptors(&keep));
    }
    // Landlock forbids the mounts bubblewrap makes, so it is the layer of its own only where
    // namespaces are not available.
    let sandbox = if namespaces.is_ok() {
        sandbox::Prepared::none()
    } else {
        let limits = sandbox_view::landlock_limits(scope.shell);
        let prepared = sandbox::prepare(&writable_roots(scope), &limits);
        apply_sandbox(&mut cmd, &prepared);
        prepared
    };
    let started = Instant::now();
    let child = cmd.spawn().map_err(|e| spawn_error(&req.command, e))?;
    drop(filters);
    drop(pinned);
    drop(init);
    drop(sandbox); // the child holds its own copy of the ruleset descriptor
                   // If this future is dropped mid-way (the caller gave up), the group still dies.
    let _group = GroupGuard(child.id());
    supervise(child, req, scope, started).await
}

/// In the child: every descriptor above stderr that Tackle itself inherited or opened is closed
/// at exec, except `keep` (the seccomp filters bubblewrap reads), which stay open.
fn only_these_descriptors(keep: &[i32]) -> std::io::Result<()> {
    const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
    let mut from: libc::c_uint = 3;
    let mut sorted = [0i32; 8];
    let n = keep.len().min(sorted.len());
    sorted[..n].copy_from_slice(&keep[..n]);
    sorted[..n].sort_unstable();
    for &fd in &sorted[..n] {
        let Ok(fd) = libc::c_uint::try_from(fd) else {
            continue;
        };
        if fd > from {
            // SAFETY: marks descriptors close-on-exec; no memory is touched.
            unsafe { libc::syscall(libc::SYS_close_range, from, fd - 1, CLOSE_RANGE_CLOEXEC) };
        }
        // SAFETY: as above, for one descriptor the child must keep.
        if unsafe { libc::fcntl(fd as i32, libc::F_SETFD, 0) } == -1 {
            return Err(std::io::Error::last_os_error());
        }
        from = fd + 1;
    }
    // SAFETY: as above; an old kernel without close_range leaves the descriptors as they were.
    unsafe {
        libc::syscall(
            libc::SYS_close_range,
            from,
            libc::c_uint::MAX,
            CLOSE_RANGE_CLOEXEC,
        )
    };
    Ok(())
}

/// The proxy for a call with a network grant, and the bridge that reaches it; none (no
/// network at all, said once) where no bridge program is known.
fn net_proxy<'s>(
    scope: &ExecScope<'s>,
    grant: &tackle_protocol::NetworkGrant,
) -> Result<Option<(crate::proxy::Proxy, &'s Path)>, HostError> {
    let Some(bridge) = scope.net_bridge else {
        static WARNED: AtomicBool = AtomicBool::new(false);
        warn_once(&WARNED, || {
            "commands with a network grant get no network: no bridge to the filtering proxy is configured".into()
        });
        return Ok(None);
    };
    let proxy = crate::proxy::start(scope.tmpdir, grant, scope.dns_overrides)?;
    Ok(Some((proxy, bridge)))
}

/// The sandbox's start-up program (Tackle's own binary), opened to start it from. Without it
/// an allow list cannot be made true, and the command is refused.
fn init_program(path: Option<&Path>) -> Result<std::fs::File, HostError> {
    let refuse = |why: String| {
        HostError::Denied(Decision::deny(
            "grants.shell.allow",
            format!("the allow list cannot be enforced here ({why}), so the command is not run"),
        ))
    };
    let path = path.ok_or_else(|| refuse("no sandbox start-up program is configured".into()))?;
    std::fs::File::open(path).map_err(|e| refuse(format!("{}: {e}", path.display())))
}

/// The compiled seccomp filters, or none (said once) where they cannot be built here.
fn seccomp_filters(required: bool) -> Result<Vec<std::os::fd::OwnedFd>, HostError> {
    match crate::seccomp::filters() {
        Ok(f) => Ok(f),
        Err(why) if required => Err(sandbox_required(format!(
            "its seccomp filter cannot be built: {why}"
        ))),
        Err(why) => {
            static WARNED: AtomicBool = AtomicBool::new(false);
            warn_once(&WARNED, || {
                format!("commands run without the seccomp filter: {why}")
            });
            Ok(Vec::new())
        }
    }
}

/// `security.sandbox: required` refuses a command that would run without a layer.
fn sandbox_required(missing: impl std::fmt::Display) -> HostError {
    HostError::Denied(Decision::deny(
        "security.sandbox = required",
        format!("commands run only inside the full sandbox here, and {missing}"),
    ))
}

/// A warning about a missing protection, logged once per process (at the first command).
fn warn_once(flag: &AtomicBool, message: impl FnOnce() -> String) {
    if !flag.swap(true, Ordering::Relaxed) {
        tracing::warn!("{}", message());
    }
}

/// The program to start and its arguments. A bare program name is looked up in `PATH` here,
/// so that a missing program is `not_found` whether or not the sandbox starts it.
fn command_line(command: &ExecCommand) -> Result<(PathBuf, Vec<OsString>), HostError> {
    match command {
        ExecCommand::Shell(line) => {
            let bash = bash::bash_path()
                .ok_or_else(|| HostError::Invalid(bash::ReadBackError::Missing.to_string()))?;
            let mut args: Vec<OsString> = bash::BASH_ARGS.iter().map(OsString::from).collect();
            args.push("-c".into());
            args.push(line.into());
            Ok((bash.to_path_buf(), args))
        }
        ExecCommand::Argv { program, args } => {
            let found = find_program(program).ok_or_else(|| HostError::NotFound {
                path: PathBuf::from(program),
            })?;
            Ok((found, args.iter().map(OsString::from).collect()))
        }
    }
}

/// `program` as given when it holds a `/`, else the first match in `PATH`.
pub(crate) fn find_program(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        let p = PathBuf::from(program);
        return is_executable(&p).then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| is_executable(p))
}

pub(crate) fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
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

/// The scrubbed base every command starts from (one rule for every child; see
/// `tackle_protocol::env`).
pub(crate) fn base_env(passthrough: &[String]) -> Vec<(String, String)> {
    tackle_protocol::env::inherited(std::env::vars_os(), passthrough)
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
        warn_once(&WARNED, || {
            format!(
                "shell commands run WITHOUT an OS sandbox: {}",
                sandbox.status
            )
        });
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
    let lines = req.output_lines.clone();
    let out = child
        .stdout
        .take()
        .map(|r| tokio::spawn(read_capped(r, cap, stop.clone(), lines.clone())));
    let err = child
        .stderr
        .take()
        .map(|r| tokio::spawn(read_capped(r, cap, stop.clone(), lines)));
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

/// Read everything (so the child never blocks on a full pipe) but keep only `cap` bytes;
/// each line also goes to `lines` as it completes.
async fn read_capped<R: AsyncRead + Unpin>(
    mut r: R,
    cap: usize,
    stop: CancellationToken,
    lines: Option<OutputLines>,
) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut truncated = false;
    let mut chunk = vec![0u8; 16 * 1024];
    let mut splitter = lines.map(LineSplitter::new);
    loop {
        let n = tokio::select! {
            res = r.read(&mut chunk) => match res {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            },
            _ = stop.cancelled() => break,
        };
        let read = chunk.get(..n).unwrap_or_default();
        if let Some(s) = splitter.as_mut() {
            s.push(read);
        }
        let room = cap.saturating_sub(kept.len());
        if n > room {
            truncated = true;
        }
        kept.extend_from_slice(read.get(..n.min(room)).unwrap_or_default());
    }
    if let Some(s) = splitter.as_mut() {
        s.finish();
    }
    (kept, truncated)
}

/// The longest line handed on whole; a longer one is cut there (the result keeps all of it).
const MAX_LINE_BYTES: usize = 4096;

/// Cuts a byte stream into lines for an [`OutputLines`] sink.
struct LineSplitter {
    sink: OutputLines,
    pending: Vec<u8>,
    /// The current line was already cut and handed on; drop the rest of it.
    skipping: bool,
}

impl LineSplitter {
    fn new(sink: OutputLines) -> Self {
        Self {
            sink,
            pending: Vec::new(),
            skipping: false,
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if b == b'\n' {
                if !self.skipping {
                    self.emit();
                }
                self.pending.clear();
                self.skipping = false;
            } else if !self.skipping {
                self.pending.push(b);
                if self.pending.len() >= MAX_LINE_BYTES {
                    self.emit();
                    self.pending.clear();
                    self.skipping = true;
                }
            }
        }
    }

    fn finish(&mut self) {
        if !self.skipping && !self.pending.is_empty() {
            self.emit();
        }
        self.pending.clear();
    }

    fn emit(&self) {
        let text = lossy_utf8(&self.pending, true);
        let text = text.strip_suffix('\r').unwrap_or(&text);
        self.sink.0.line(text);
    }
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
mod line_tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[derive(Default)]
    struct Seen(Mutex<Vec<String>>);

    impl tackle_protocol::ProgressSink for Seen {
        fn line(&self, text: &str) {
            self.0.lock().unwrap().push(text.to_string());
        }
    }

    #[test]
    fn lines_are_cut_across_chunks_without_their_line_ends_and_long_ones_once() {
        let seen = Arc::new(Seen::default());
        let mut s = LineSplitter::new(OutputLines(seen.clone()));
        s.push(b"one\r\ntw");
        s.push(b"o\n\nthr");
        s.push(&vec![b'x'; MAX_LINE_BYTES * 2]);
        s.push(b"\nlast");
        s.finish();
        let got = seen.0.lock().unwrap().clone();
        assert_eq!(got.len(), 5, "{got:?}");
        assert_eq!(got[..3], ["one", "two", ""]);
        assert_eq!(got[3].len(), MAX_LINE_BYTES);
        assert!(got[3].starts_with("thrxx"));
        assert_eq!(got[4], "last");
    }

    #[test]
    fn a_line_cut_in_the_middle_of_a_character_is_not_garbled() {
        let seen = Arc::new(Seen::default());
        let mut s = LineSplitter::new(OutputLines(seen.clone()));
        let mut bytes = vec![b'a'; MAX_LINE_BYTES - 1];
        bytes.extend_from_slice("é\n".as_bytes());
        s.push(&bytes);
        let got = seen.0.lock().unwrap().clone();
        assert_eq!(got.len(), 1);
        assert!(!got[0].contains('\u{fffd}'), "{:?}", got[0].chars().last());
    }
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn a_pinned_program_runs_under_the_landlock_layer_too() {
        // Where namespaces are missing Landlock is the sandbox; executing the sealed copy
        // through `/proc/self/fd` must still work under it.
        use sha2::Digest;
        let d = tempfile::tempdir().unwrap();
        let body = "#!/bin/sh\necho pinned ok\n";
        let p = d.path().join("prog");
        std::fs::write(&p, body).unwrap();
        std::os::unix::fs::PermissionsExt::set_mode(
            &mut std::fs::metadata(&p).unwrap().permissions(),
            0o755,
        );
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let want: String = sha2::Sha256::digest(body.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let pinned = PinnedProgram::load(&p, &want).expect("pinned");
        let prepared = sandbox::prepare(&[d.path().to_path_buf()], &Default::default());
        let mut cmd = Command::new(pinned.path());
        cmd.stdout(Stdio::piped());
        let keep = vec![pinned.raw_fd()];
        // SAFETY: as in `run`: close_range and fcntl only.
        unsafe {
            cmd.pre_exec(move || only_these_descriptors(&keep));
        }
        apply_sandbox(&mut cmd, &prepared);
        println!("sandbox: {}", prepared.status);
        let out = cmd.output().await.expect("runs");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "pinned ok\n",
            "{:?} {}",
            out,
            prepared.status
        );
    }

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
