//! The namespace sandbox every command runs in where bubblewrap works: a read-only view of the
//! system, the user's home replaced by an empty one (toolchains visible read-only), the
//! workspace and the write grants writable, the read grants readable, Tackle's config and state
//! hidden, its own PID namespace (every process dies with the call), no network unless the call
//! has a network grant, no capabilities, a new session (no terminal injection).
//!
//! bubblewrap does the mounting; this module only decides the view. The arguments are built in
//! the parent, so nothing here runs between `fork` and `exec`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// System directories shown read-only (as links where the host has links: `/bin` → `usr/bin`).
const SYSTEM: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix",
];

/// Secrets kept in the system directories (readable to root, who may be running Tackle).
const SYSTEM_SECRETS: &[&str] = &[
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/ssl/private",
    "/etc/sudoers",
    "/etc/sudoers.d",
];

/// Toolchains under the home directory, shown read-only so that `cargo`, `rustup`, `pyenv`,
/// `nvm` … still work. Credentials kept beside them (`~/.cargo/credentials.toml`) are not
/// among these paths.
const HOME_TOOLCHAINS: &[&str] = &[
    ".cargo/bin",
    ".cargo/registry",
    ".cargo/git",
    ".rustup",
    ".pyenv",
    ".nvm",
    ".local/bin",
    ".local/lib",
    ".deno",
    ".bun",
    ".volta",
    "go/bin",
    "go/pkg",
    ".gitconfig",
];

/// What one command may see.
pub(crate) struct View<'a> {
    pub cwd: &'a Path,
    pub workspace: &'a Path,
    pub tmpdir: &'a Path,
    pub read: &'a [PathBuf],
    pub write: &'a [PathBuf],
    pub home: Option<&'a Path>,
    /// Files and directories that stay invisible even inside a granted root (Tackle's config
    /// file and state directory).
    pub hidden: &'a [PathBuf],
    /// More paths to show read-only (the network bridge program).
    pub also_read: &'a [PathBuf],
    /// Descriptors of compiled seccomp filters the child inherits.
    pub seccomp: &'a [i32],
}

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

/// Directories programs come from outside the system ones: `PATH` entries (a toolchain in
/// `/root/.cargo/bin` while `HOME` points elsewhere) and the toolchain homes named by
/// `CARGO_HOME`/`RUSTUP_HOME`. Never the home directory itself or anything above it.
fn program_dirs(home: Option<&Path>) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    if let Some(cargo) = std::env::var_os("CARGO_HOME").map(PathBuf::from) {
        dirs.extend(["bin", "registry", "git"].map(|s| cargo.join(s)));
    }
    dirs.extend(std::env::var_os("RUSTUP_HOME").map(PathBuf::from));
    dirs.retain(|d| {
        d.is_absolute()
            && d.components().count() > 2
            && home.is_none_or(|h| !h.starts_with(d))
            && !SYSTEM.iter().any(|s| d.starts_with(s))
    });
    dirs
}

/// The bubblewrap arguments that run `program args…` inside the view.
pub(crate) fn args(view: &View<'_>, program: &Path, program_args: &[OsString]) -> Vec<OsString> {
    let mut a = Args::default();
    for dir in SYSTEM {
        let p = Path::new(dir);
        match std::fs::read_link(p) {
            Ok(target) => a.push(["--symlink"]).path(&target).path(p),
            Err(_) if p.is_dir() => a.push(["--ro-bind"]).path(p).path(p),
            Err(_) => &mut a,
        };
    }
    for secret in SYSTEM_SECRETS.iter().map(Path::new) {
        hide(&mut a, secret);
    }
    // The host's SSH keys sit beside the client's configuration, which ssh still needs.
    if let Ok(entries) = std::fs::read_dir("/etc/ssh") {
        for e in entries.flatten() {
            let name = e.file_name();
            if name.to_string_lossy().starts_with("ssh_host_") {
                hide(&mut a, &e.path());
            }
        }
    }
    a.push(["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/run"]);
    a.push(["--tmpfs", "/tmp", "--tmpfs", "/var/tmp"]);
    if let Some(home) = view.home.filter(|h| h.is_absolute()) {
        // An empty, writable home that vanishes with the call; toolchains read-only on top.
        a.push(["--tmpfs"]).path(home);
        for sub in HOME_TOOLCHAINS {
            let p = home.join(sub);
            a.push(["--ro-bind-try"]).path(&p).path(&p);
        }
    }
    for dir in program_dirs(view.home) {
        a.push(["--ro-bind-try"]).path(&dir).path(&dir);
    }
    for r in view.read.iter().chain(view.also_read) {
        a.push(["--ro-bind-try"]).path(r).path(r);
    }
    for w in view.write.iter().chain([&view.workspace.to_path_buf()]) {
        a.push(["--bind-try"]).path(w).path(w);
    }
    for h in view.hidden {
        hide(&mut a, h);
    }
    // The session's TMPDIR lives in the (hidden) state directory: bound again on top.
    a.push(["--bind"]).path(view.tmpdir).path(view.tmpdir);
    // Nothing else is writable: `/tmp` and the sandbox's own root are made read-only (the
    // session's TMPDIR is where temporary files go), so a write elsewhere fails loudly.
    a.push([
        "--remount-ro",
        "/tmp",
        "--remount-ro",
        "/var/tmp",
        "--remount-ro",
        "/",
    ]);
    a.push(["--chdir"]).path(view.cwd);
    // No network: a command with a network grant reaches it through the bridge and the proxy.
    a.push(["--unshare-all"]);
    for fd in view.seccomp {
        a.push(["--add-seccomp-fd"]);
        a.0.push(fd.to_string().into());
    }
    a.push([
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--",
    ]);
    a.path(program);
    a.0.extend(program_args.iter().cloned());
    a.0
}

/// Covers a directory with an empty one and a file with an empty file.
fn hide(a: &mut Args, path: &Path) {
    if path.is_dir() {
        a.push(["--tmpfs"]).path(path);
    } else if path.exists() {
        a.push(["--ro-bind", "/dev/null"]).path(path);
    }
}

#[derive(Default)]
struct Args(Vec<OsString>);

impl Args {
    fn push<const N: usize>(&mut self, words: [&str; N]) -> &mut Self {
        self.0.extend(words.iter().map(OsString::from));
        self
    }

    fn path(&mut self, p: &Path) -> &mut Self {
        self.0.push(p.as_os_str().to_owned());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view<'a>(hidden: &'a [PathBuf], bridge: &'a [PathBuf]) -> View<'a> {
        View {
            cwd: Path::new("/w"),
            workspace: Path::new("/w"),
            tmpdir: Path::new("/s/tmp/x"),
            read: &[],
            write: &[],
            home: Some(Path::new("/home/u")),
            hidden,
            also_read: bridge,
            seccomp: &[],
        }
    }

    fn joined(a: &[OsString]) -> String {
        a.iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn home_is_replaced_and_the_workspace_is_writable() {
        let a = joined(&args(&view(&[], &[]), Path::new("/usr/bin/bash"), &[]));
        assert!(a.contains("--tmpfs /home/u"), "{a}");
        assert!(a.contains("--bind-try /w /w"), "{a}");
        assert!(
            a.contains("--unshare-all") && !a.contains("--share-net"),
            "{a}"
        );
        assert!(a.ends_with("-- /usr/bin/bash"), "{a}");
    }

    #[test]
    fn the_network_is_never_shared_and_the_bridge_is_read_only() {
        let bridge = [PathBuf::from("/opt/tackle/tackle")];
        let a = joined(&args(&view(&[], &bridge), Path::new("/bin/true"), &[]));
        assert!(
            !a.contains("--share-net") && a.contains("--unshare-all"),
            "{a}"
        );
        assert!(
            a.contains("--ro-bind-try /opt/tackle/tackle /opt/tackle/tackle"),
            "{a}"
        );
    }

    #[test]
    fn the_tmpdir_is_bound_after_the_hidden_state_dir() {
        let hidden = [std::env::temp_dir()];
        let a = joined(&args(&view(&hidden, &[]), Path::new("/bin/true"), &[]));
        let hide = a.find(&format!("--tmpfs {}", hidden[0].display()));
        let tmp = a.find("--bind /s/tmp/x /s/tmp/x");
        assert!(hide.is_some() && tmp.is_some() && hide < tmp, "{a}");
    }
}
