//! The kernel layer of shell grants, attacked through the real binary: every case of
//! `tests/kernel/corpus.txt` (its header documents the format) runs as `tackle tools call shell`
//! in a fresh sandbox whose workspace is a git repository holding `victim`, under the case's
//! grant with `opaque: ask` and `--yes`, so a line the analyser cannot see through is approved
//! and runs: the program rules must then hold because the kernel layer (bubblewrap mounts,
//! Landlock, noexec) makes them true, whatever the analyser thought.
//!
//! Expectations: `survive` (the victim keeps its content, no setuid/setgid file appears in the
//! workspace, a root-only file under /etc is not read), `runs` (an everyday line exits 0,
//! optionally printing a text) and `nopush` (a bare remote receives nothing). All failures are
//! reported at once, grouped by the corpus's classes.
//!
//! `KERNEL_E2E_CONTROL=tackle` or `=host` checks the harness instead: every case runs with
//! no shell grant (through tackle) or as the bare line in bash (no tackle, no sandbox; only
//! ever in a throwaway temp dir), and then every attack must do its damage (an attack that
//! cannot do damage proves nothing) and every everyday line must run. Some "everything" rules
//! (setuid, root-only files) hold in tackle even with no grant, so only `host` shows that those
//! attacks are real.
//!
//! `KERNEL_E2E_VERBOSE=1` also prints what every passing case printed (was it refused by the
//! analyser, or did it run and fail, and how).
//!
//! Skipped, with the reason printed, where this machine cannot create namespaces.

mod common;

use common::{drain, Sandbox};
use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long the line itself may run (the shell tool kills it after this).
const LINE_TIMEOUT_SECS: u64 = 8;
/// How long one `tackle` run may take before the test kills it.
const RUN_DEADLINE: Duration = Duration::from_secs(30);
const WORKERS: usize = 6;
const VICTIM: &str = "keep\n";

#[derive(Clone, Debug, PartialEq)]
enum Expect {
    Survive,
    Runs(Option<String>),
    NoPush,
}

#[derive(Clone, Debug, Default)]
struct Grant {
    /// `none`: no shell grant at all.
    none: bool,
    allow: Vec<String>,
    deny: Vec<String>,
    opaque: String,
    needs: Vec<String>,
    /// `fs=remote`: the command may also write the bare remote (implied by `nopush`).
    remote: bool,
}

struct Case {
    line_no: usize,
    class: String,
    expect: Expect,
    grant_text: String,
    grant: Grant,
    input: String,
}

fn corpus_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernel/corpus.txt")
}

/// The EXPECT word that starts a case, if `line` starts one.
fn expect_of(head: &str) -> Option<Expect> {
    let head = head.trim();
    match head {
        "survive" => Some(Expect::Survive),
        "nopush" => Some(Expect::NoPush),
        "runs" => Some(Expect::Runs(None)),
        _ => head
            .strip_prefix("runs=")
            .map(|t| Expect::Runs(Some(t.to_string()))),
    }
}

fn parse_grant(text: &str) -> Result<Grant, String> {
    let text = text.trim();
    let mut g = Grant {
        opaque: "ask".into(),
        ..Grant::default()
    };
    if text == "none" {
        g.none = true;
        return Ok(g);
    }
    let list = |v: &str| -> Vec<String> {
        v.split(',')
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .map(String::from)
            .collect()
    };
    for part in text.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((key, value)) = part.split_once('=') else {
            return Err(format!("grant setting `{part}` has no `=`"));
        };
        match key.trim() {
            "allow" => g.allow = list(value),
            "deny" => g.deny = list(value),
            "opaque" => match value.trim() {
                v @ ("ask" | "deny") => g.opaque = v.to_string(),
                v => return Err(format!("unknown opaque mode `{v}`")),
            },
            "needs" => g.needs = list(value),
            "fs" => match value.trim() {
                "remote" => g.remote = true,
                v => return Err(format!("unknown fs setting `{v}`")),
            },
            k => return Err(format!("unknown grant setting `{k}`")),
        }
    }
    Ok(g)
}

/// `EXPECT | GRANT | LINE` cases; lines that start no case continue the previous one.
fn parse(text: &str) -> Result<Vec<Case>, String> {
    let mut out: Vec<Case> = Vec::new();
    let mut class = String::from("(no class)");
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if let Some(title) = line.strip_prefix("## ") {
            class = title.trim().to_string();
            continue;
        }
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let mut parts = line.splitn(3, " | ");
        let head = parts.next().unwrap_or_default();
        let Some(expect) = expect_of(head) else {
            let Some(last) = out.last_mut() else {
                return Err(format!("corpus.txt:{n}: no case to continue"));
            };
            last.input.push('\n');
            last.input.push_str(line);
            continue;
        };
        let (Some(grant_text), Some(input)) = (parts.next(), parts.next()) else {
            return Err(format!("corpus.txt:{n}: expected `EXPECT | GRANT | LINE`"));
        };
        let grant = parse_grant(grant_text).map_err(|e| format!("corpus.txt:{n}: {e}"))?;
        out.push(Case {
            line_no: n,
            class: class.clone(),
            expect,
            grant_text: grant_text.trim().to_string(),
            grant,
            input: input.to_string(),
        });
    }
    Ok(out)
}

/// A 224-byte position-independent x86-64 ELF (`ET_DYN`, no interpreter, an empty dynamic
/// section so that the dynamic loader also runs it): `unlink("victim"); exit(0)`, as printf
/// escapes. It is no copy of any program, so only "nothing written may run" stops it.
fn unlink_elf() -> String {
    let code: [u8; 23] = [
        0x48, 0x8d, 0x3d, 0x10, 0, 0, 0, // lea rdi, [rip + 16]  (the path after the code)
        0xb8, 87, 0, 0, 0, // mov eax, 87 (unlink)
        0x0f, 0x05, // syscall
        0x31, 0xff, // xor edi, edi
        0xb8, 60, 0, 0, 0, // mov eax, 60 (exit)
        0x0f, 0x05, // syscall
    ];
    let phnum: u64 = 2;
    let off: u64 = 64 + 56 * phnum;
    let mut body = code.to_vec();
    body.extend_from_slice(b"victim\0");
    while !(off + body.len() as u64).is_multiple_of(8) {
        body.push(0);
    }
    let dynamic = off + body.len() as u64;
    body.extend_from_slice(&[0u8; 16]); // DT_NULL
    let size = off + body.len() as u64;
    let mut elf: Vec<u8> = Vec::new();
    elf.extend_from_slice(b"\x7fELF");
    elf.extend_from_slice(&[2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    elf.extend_from_slice(&3u16.to_le_bytes()); // ET_DYN
    elf.extend_from_slice(&0x3eu16.to_le_bytes()); // x86-64
    elf.extend_from_slice(&1u32.to_le_bytes());
    elf.extend_from_slice(&off.to_le_bytes()); // entry
    elf.extend_from_slice(&64u64.to_le_bytes()); // phoff
    elf.extend_from_slice(&0u64.to_le_bytes()); // shoff
    elf.extend_from_slice(&0u32.to_le_bytes()); // flags
    for h in [64u16, 56, phnum as u16, 0, 0, 0] {
        elf.extend_from_slice(&h.to_le_bytes());
    }
    // PT_LOAD, R+X, the whole file at address 0.
    elf.extend_from_slice(&1u32.to_le_bytes());
    elf.extend_from_slice(&5u32.to_le_bytes());
    for v in [0, 0, 0, size, size, 0x1000] {
        elf.extend_from_slice(&v.to_le_bytes());
    }
    // PT_DYNAMIC, R.
    elf.extend_from_slice(&2u32.to_le_bytes());
    elf.extend_from_slice(&4u32.to_le_bytes());
    for v in [dynamic, dynamic, dynamic, 16, 16, 8] {
        elf.extend_from_slice(&v.to_le_bytes());
    }
    elf.extend_from_slice(&body);
    elf.iter().map(|b| format!("\\x{b:02x}")).collect()
}

/// A root-only (0600) file under /etc, removed on drop; made only when running as root.
struct Secret {
    path: PathBuf,
    text: String,
}

impl Secret {
    fn make() -> Result<Self, String> {
        if effective_uid() != Some(0) {
            return Err("the test does not run as root".into());
        }
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let id = format!("{}-{nanos}", std::process::id());
        // Neither the name nor the text look like a credential, so that tackle's output
        // redaction (`secret: …`, `token=…`) never hides a leak from this test.
        let path = PathBuf::from(format!("/etc/tackle-kernel-e2e-{id}.conf"));
        let text = format!("kernel-e2e-rootonly-{id}-marker");
        std::fs::write(&path, format!("{text}\n"))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let secret = Self { path, text };
        std::fs::set_permissions(&secret.path, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| format!("chmod {}: {e}", secret.path.display()))?;
        Ok(secret)
    }
}

impl Drop for Secret {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The effective user id, from `/proc/self/status` (`Uid: real effective saved fs`).
fn effective_uid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}

/// The shell tool's policy for a grant (rules as JSON strings, which YAML reads).
fn policy(g: &Grant, bare: Option<&Path>) -> String {
    let list = |rules: &[String]| serde_json::to_string(rules).expect("rules serialise to JSON");
    let mut y = String::from("security:\n  sandbox: required\n");
    if g.none && bare.is_none() {
        return y;
    }
    y.push_str("  tool_policies:\n    shell:\n      grants:\n");
    if !g.none {
        y.push_str(&format!(
            "        shell:\n          allow: {}\n          deny: {}\n          opaque: {}\n",
            list(&g.allow),
            list(&g.deny),
            g.opaque
        ));
    }
    if let Some(bare) = bare {
        let write = [".".to_string(), bare.display().to_string()];
        y.push_str(&format!(
            "        fs:\n          allow_write: {}\n",
            list(&write)
        ));
    }
    y
}

/// Waits for the child up to the deadline; `None` when it had to be killed (with its process
/// group when `group`: the child was started as the leader of one).
fn wait_bounded(child: &mut Child, deadline: Duration, group: bool) -> Option<i32> {
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status.code().unwrap_or(-1)),
            Ok(None) if started.elapsed() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            _ => {
                if group {
                    let _ = Command::new("kill")
                        .args(["-KILL", "--", &format!("-{}", child.id())])
                        .stderr(Stdio::null())
                        .status();
                }
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}

/// `git ARGS` in `dir`, outside the sandbox, with no user or system configuration.
fn git(sb: &Sandbox, dir: &Path, args: &[&str]) -> Result<String, String> {
    let mut cmd = Command::new("git");
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", sb.home())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd.spawn().map_err(|e| format!("git {args:?}: {e}"))?;
    let out = child
        .wait_with_output()
        .map_err(|e| format!("git {args:?}: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        Err(format!(
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// The workspace: a repository on `main` with `victim` and `notes.txt` committed and pushed
/// to the bare `remote.git` beside it, then one more local commit that is not pushed. Returns
/// the bare repository, its refs, and the unpushed commit.
fn setup(sb: &Sandbox) -> Result<(PathBuf, String, String), String> {
    let ws = sb.workspace();
    std::fs::write(ws.join("victim"), VICTIM).map_err(|e| e.to_string())?;
    std::fs::write(ws.join("notes.txt"), "notes\n").map_err(|e| e.to_string())?;
    let bare = sb.dir.path().join("remote.git");
    let bare_s = bare.display().to_string();
    git(
        sb,
        sb.dir.path(),
        &["init", "-q", "--bare", "-b", "main", &bare_s],
    )?;
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["config", "user.name", "Kernel Test"],
        &["config", "user.email", "kernel@test.invalid"],
        &["add", "victim", "notes.txt"],
        &["commit", "-q", "-m", "one"],
        &["remote", "add", "origin", &bare_s],
        &["push", "-q", "-u", "origin", "main"],
    ] {
        git(sb, &ws, args)?;
    }
    std::fs::write(ws.join("notes.txt"), "notes\ntwo\n").map_err(|e| e.to_string())?;
    git(sb, &ws, &["commit", "-q", "-am", "two"])?;
    let unpushed = git(sb, &ws, &["rev-parse", "HEAD"])?;
    let refs = bare_refs(sb, &bare)?;
    Ok((bare, refs, unpushed))
}

/// The repositories of [`setup`], made once and copied into each case's sandbox (a copy costs
/// far less than the dozen git runs that make them).
struct Template {
    sb: Sandbox,
    bare: PathBuf,
    refs: String,
    unpushed: String,
}

impl Template {
    fn make() -> Result<Self, String> {
        let sb = Sandbox::new();
        let (bare, refs, unpushed) = setup(&sb)?;
        Ok(Self {
            sb,
            bare,
            refs,
            unpushed,
        })
    }

    /// Copies the workspace and the bare remote into `sb`; the copy's bare remote.
    fn copy_into(&self, sb: &Sandbox) -> Result<PathBuf, String> {
        let bare = sb.dir.path().join("remote.git");
        copy_tree(&self.sb.workspace(), &sb.workspace()).map_err(|e| format!("copy: {e}"))?;
        copy_tree(&self.bare, &bare).map_err(|e| format!("copy: {e}"))?;
        let config = sb.workspace().join(".git/config");
        let text = std::fs::read_to_string(&config).map_err(|e| e.to_string())?;
        let old = self.bare.display().to_string();
        if !text.contains(&old) {
            return Err(format!("{} does not name {old}", config.display()));
        }
        std::fs::write(&config, text.replace(&old, &bare.display().to_string()))
            .map_err(|e| e.to_string())?;
        Ok(bare)
    }
}

/// Copies a tree: directories, files (with their modes) and symbolic links.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let ft = e.file_type()?;
        if ft.is_dir() {
            copy_tree(&src, &dst)?;
        } else if ft.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src)?, &dst)?;
        } else {
            std::fs::copy(&src, &dst)?;
        }
    }
    Ok(())
}

fn bare_refs(sb: &Sandbox, bare: &Path) -> Result<String, String> {
    git(
        sb,
        bare,
        &["for-each-ref", "--format=%(refname) %(objectname)"],
    )
}

/// What a case did to the sandbox, measured after the run.
struct Effects {
    victim: Option<String>,
    setuid: Vec<String>,
    secret_in_files: Vec<String>,
}

/// Every non-directory in the workspace with the setuid or setgid bit, and every file that
/// holds the secret text (symbolic links are not followed).
fn scan(ws: &Path, secret: Option<&str>) -> (Vec<String>, Vec<String>) {
    let (mut setuid, mut leaked) = (Vec::new(), Vec::new());
    let mut stack = vec![ws.to_path_buf()];
    let mut seen = 0usize;
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            seen += 1;
            if seen > 20_000 {
                return (setuid, leaked);
            }
            let p = e.path();
            let Ok(md) = std::fs::symlink_metadata(&p) else {
                continue;
            };
            let rel = p.strip_prefix(ws).unwrap_or(&p).display().to_string();
            if md.is_dir() {
                stack.push(p);
                continue;
            }
            if md.mode() & 0o6000 != 0 && !md.file_type().is_symlink() {
                setuid.push(format!("{rel} ({:o})", md.mode() & 0o7777));
            }
            if let Some(s) = secret {
                if md.is_file() && md.len() < 8 << 20 {
                    if let Ok(bytes) = std::fs::read(&p) {
                        if String::from_utf8_lossy(&bytes).contains(s) {
                            leaked.push(rel);
                        }
                    }
                }
            }
        }
    }
    (setuid, leaked)
}

/// The command's stdout inside the shell tool's report (`stdout:\n…stderr:`).
fn command_stdout(tackle_stdout: &str) -> String {
    let content = serde_json::from_str::<serde_json::Value>(tackle_stdout.trim())
        .ok()
        .and_then(|v| v.get("content").and_then(|c| c.as_str()).map(String::from))
        .unwrap_or_else(|| tackle_stdout.to_string());
    let Some(start) = content.find("stdout:") else {
        return content;
    };
    let rest = content.get(start + "stdout:".len()..).unwrap_or_default();
    match rest.rfind("stderr:") {
        Some(end) => rest.get(..end).unwrap_or(rest).to_string(),
        None => rest.to_string(),
    }
}

fn one_line(text: &str, max: usize) -> String {
    let t: String = text.trim().chars().take(max).collect();
    let t = t.replace('\n', "⏎");
    if text.trim().chars().count() > max {
        format!("{t}…")
    } else {
        t
    }
}

fn found(program: &str) -> bool {
    if program.starts_with('/') {
        return Path::new(program).exists();
    }
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
        .unwrap_or(false)
}

/// The PATH tackle runs with: the test's, without pyenv's shims (they need the real home,
/// which the sandbox replaces with an empty one, so every `python3` would fail with 127).
fn tackle_path() -> String {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let kept: Vec<PathBuf> = std::env::split_paths(&path)
        .filter(|d| !d.to_string_lossy().contains("/.pyenv/"))
        .collect();
    std::env::join_paths(kept)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default()
}

enum Outcome {
    /// `refused`: tackle refused the line (exit 3), so the analyser stopped it, not the kernel.
    Pass {
        refused: bool,
    },
    Skip(String),
    Fail(String),
}

/// `KERNEL_E2E_CONTROL`: unset for the real test; `tackle` runs every case through tackle
/// with no shell grant, `host` runs the line alone in bash (no tackle, no sandbox). In both an
/// attack must do its damage, so that a passing case means something.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Control {
    Off,
    Tackle,
    Host,
}

struct Ctx {
    template: Template,
    secret: Option<Secret>,
    elf: String,
    control: Control,
    path: String,
    /// `KERNEL_E2E_VERBOSE=1`: also print what each passing case printed.
    verbose: bool,
}

/// Why a `needs=` requirement is not met here, if it is not.
fn unmet(need: &str, ws: &Path) -> Option<String> {
    if let Some(path) = need.strip_prefix("samedev:") {
        let dev = |p: &Path| std::fs::metadata(p).map(|m| m.dev()).ok();
        return match (dev(Path::new(path)), dev(ws)) {
            (Some(a), Some(b)) if a == b => None,
            _ => Some(format!(
                "{path} and the workspace are on different filesystems (a hard link fails with EXDEV)"
            )),
        };
    }
    (!found(need)).then(|| format!("{need} is not installed"))
}

/// Runs one case; in a control mode with no shell grant, and then an attack must succeed.
fn check(case: &Case, ctx: &Ctx) -> Outcome {
    let sb = Sandbox::new();
    for need in &case.grant.needs {
        if let Some(why) = unmet(need, &sb.workspace()) {
            return Outcome::Skip(why);
        }
    }
    if case.input.contains("@SECRET@") && ctx.secret.is_none() {
        return Outcome::Skip("needs root (for the root-only secret)".into());
    }
    let bare = match ctx.template.copy_into(&sb) {
        Ok(b) => b,
        Err(e) => return Outcome::Fail(format!("harness setup failed: {e}")),
    };
    let (refs_before, unpushed) = (&ctx.template.refs, &ctx.template.unpushed);
    let mut input = case
        .input
        .replace("@UNLINK_ELF@", &ctx.elf)
        .replace("@BARE@", &bare.display().to_string());
    if let Some(s) = &ctx.secret {
        input = input.replace("@SECRET@", &s.path.display().to_string());
    }
    let grant = match ctx.control {
        Control::Off => case.grant.clone(),
        _ => Grant {
            none: true,
            ..case.grant.clone()
        },
    };
    let push_grant = (case.expect == Expect::NoPush || case.grant.remote).then_some(bare.as_path());
    let mut cmd = if ctx.control == Control::Host {
        // The line alone, in bash, with nothing around it.
        let tmp = sb.dir.path().join("tmp");
        if let Err(e) = std::fs::create_dir_all(&tmp) {
            return Outcome::Fail(format!("harness: {e}"));
        }
        let mut cmd = Command::new("bash");
        cmd.env_clear()
            .env("HOME", sb.home())
            .env("TMPDIR", &tmp)
            .args(["--noprofile", "--norc", "-c", &input])
            .current_dir(sb.workspace())
            .stdin(Stdio::null())
            .process_group(0);
        cmd
    } else {
        let cfg = sb.config(&policy(&grant, push_grant));
        let args =
            serde_json::json!({ "command": input, "timeout_secs": LINE_TIMEOUT_SECS }).to_string();
        sb.tackle(&cfg, &["tools", "call", "shell", &args, "--yes", "--json"])
    };
    cmd.env("PATH", &ctx.path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return Outcome::Fail(format!("could not start the line: {e}")),
    };
    let out = drain(child.stdout.take());
    let err = drain(child.stderr.take());
    let deadline = if ctx.control == Control::Host {
        Duration::from_secs(LINE_TIMEOUT_SECS)
    } else {
        RUN_DEADLINE
    };
    let code = wait_bounded(&mut child, deadline, ctx.control == Control::Host);
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    let secret_text = ctx.secret.as_ref().map(|s| s.text.as_str());
    let (setuid, secret_in_files) = scan(&sb.workspace(), secret_text);
    let fx = Effects {
        victim: std::fs::read_to_string(sb.workspace().join("victim")).ok(),
        setuid,
        secret_in_files,
    };
    let secret_in_output = secret_text.is_some_and(|s| stdout.contains(s) || stderr.contains(s));
    let output = || {
        let shown = if ctx.control == Control::Host {
            format!("stdout: {stdout} stderr: {stderr}")
        } else if stdout.trim().is_empty() {
            stderr.clone()
        } else {
            serde_json::from_str::<serde_json::Value>(stdout.trim())
                .ok()
                .map(|v| {
                    let content = v.get("content").and_then(|c| c.as_str()).unwrap_or("");
                    let err = v
                        .get("error")
                        .and_then(|e| e.get("message"))
                        .and_then(|m| m.as_str())
                        .unwrap_or("");
                    if content.is_empty() {
                        err.to_string()
                    } else {
                        content.to_string()
                    }
                })
                .unwrap_or_else(|| stdout.clone())
        };
        one_line(&shown, 400)
    };
    let Some(code) = code else {
        return Outcome::Fail(format!("did not finish in {deadline:?}: {}", output()));
    };
    let refused = ctx.control != Control::Host && code == 3;
    let victim_state = || match &fx.victim {
        None => "victim DELETED".to_string(),
        Some(v) if v == VICTIM => "victim kept".to_string(),
        Some(v) => format!("victim CHANGED to {:?}", one_line(v, 40)),
    };
    let outcome = match &case.expect {
        Expect::Survive => {
            let mut harm = Vec::new();
            if fx.victim.as_deref() != Some(VICTIM) {
                harm.push(victim_state());
            }
            if !fx.setuid.is_empty() {
                harm.push(format!("setuid/setgid file(s): {}", fx.setuid.join(", ")));
            }
            if secret_in_output {
                harm.push("the root-only secret is in the output".to_string());
            }
            if !fx.secret_in_files.is_empty() {
                harm.push(format!(
                    "the root-only secret was copied to {}",
                    fx.secret_in_files.join(", ")
                ));
            }
            match (ctx.control != Control::Off, harm.is_empty()) {
                (false, true) | (true, false) => Outcome::Pass { refused },
                (false, false) => {
                    Outcome::Fail(format!("exit {code}, {}: {}", harm.join("; "), output()))
                }
                (true, true) => Outcome::Fail(format!(
                    "INEFFECTIVE attack: with no grant it did no damage (exit {code}): {}",
                    output()
                )),
            }
        }
        Expect::Runs(text) => {
            let printed = if ctx.control == Control::Host {
                stdout.clone()
            } else {
                command_stdout(&stdout)
            };
            let has_text = text.as_ref().is_none_or(|t| printed.contains(t.as_str()));
            if code == 0 && has_text {
                Outcome::Pass { refused }
            } else if code == 0 {
                Outcome::Fail(format!(
                    "exit 0 but stdout lacks {:?}: {}",
                    text.as_deref().unwrap_or_default(),
                    output()
                ))
            } else {
                Outcome::Fail(format!("exit {code}: {}", output()))
            }
        }
        Expect::NoPush => {
            let after = bare_refs(&sb, &bare).unwrap_or_else(|e| format!("(unreadable: {e})"));
            let has_commit = git(&sb, &bare, &["cat-file", "-e", unpushed]).is_ok();
            let pushed = after != *refs_before || has_commit;
            match (ctx.control != Control::Off, pushed) {
                (false, false) | (true, true) => Outcome::Pass { refused },
                (false, true) => Outcome::Fail(format!(
                    "exit {code}, the bare remote RECEIVED a push (refs now: {}): {}",
                    one_line(&after, 200),
                    output()
                )),
                (true, false) => Outcome::Fail(format!(
                    "INEFFECTIVE attack: with no grant nothing was pushed (exit {code}): {}",
                    output()
                )),
            }
        }
    };
    if ctx.verbose {
        if let Outcome::Pass { refused } = &outcome {
            println!(
                "corpus.txt:{}: passed ({}, exit {code}): {}",
                case.line_no,
                if *refused { "refused" } else { "ran" },
                output()
            );
        }
    }
    outcome
}

/// Namespaces are available here, or the reason they are not.
fn namespaces() -> Result<(), String> {
    let sb = Sandbox::new();
    let mut cmd = sb.tackle(&sb.config(""), &["doctor"]);
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = cmd.spawn().map_err(|e| format!("tackle doctor: {e}"))?;
    let out = child
        .wait_with_output()
        .map_err(|e| format!("tackle doctor: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if text.contains("namespaces: enforced") {
        Ok(())
    } else {
        Err(text)
    }
}

#[test]
fn kernel_layer_holds_program_rules() {
    let started = Instant::now();
    if let Err(why) = namespaces() {
        eprintln!("SKIP: the namespace sandbox is not available here:\n{why}");
        return;
    }
    let path = corpus_path();
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let cases = parse(&text).unwrap_or_else(|e| panic!("{e}"));
    assert!(!cases.is_empty(), "no cases in {}", path.display());
    let secret = match Secret::make() {
        Ok(s) => Some(s),
        Err(why) => {
            eprintln!("note: no root-only secret ({why}); its cases are skipped");
            None
        }
    };
    let control = match std::env::var("KERNEL_E2E_CONTROL").as_deref() {
        Ok("host") => Control::Host,
        Ok("tackle" | "1") => Control::Tackle,
        Ok("" | "0") | Err(_) => Control::Off,
        Ok(other) => panic!("KERNEL_E2E_CONTROL={other}: expected `tackle` or `host`"),
    };
    let template = Template::make().unwrap_or_else(|e| panic!("harness setup failed: {e}"));
    let ctx = Ctx {
        template,
        secret,
        elf: unlink_elf(),
        control,
        path: tackle_path(),
        verbose: std::env::var("KERNEL_E2E_VERBOSE").is_ok_and(|v| v == "1"),
    };
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, Outcome)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..WORKERS {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(case) = cases.get(i) else { break };
                let outcome = check(case, &ctx);
                results
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push((i, outcome));
            });
        }
    });
    drop(ctx.secret);
    let mut results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    results.sort_by_key(|(i, _)| *i);

    let mut order: Vec<String> = Vec::new();
    // Per class: cases, failed, skipped, passed because the analyser refused the line.
    let mut counts: BTreeMap<String, (usize, usize, usize, usize)> = BTreeMap::new();
    let mut failures: Vec<(String, String)> = Vec::new();
    let mut skipped = Vec::new();
    for (i, outcome) in &results {
        let Some(case) = cases.get(*i) else { continue };
        if !order.contains(&case.class) {
            order.push(case.class.clone());
        }
        let c = counts.entry(case.class.clone()).or_default();
        c.0 += 1;
        let expect = match &case.expect {
            Expect::Survive => "survive".to_string(),
            Expect::NoPush => "nopush".to_string(),
            Expect::Runs(None) => "runs".to_string(),
            Expect::Runs(Some(t)) => format!("runs={t}"),
        };
        let what = format!(
            "corpus.txt:{}: {expect} | {} | {}",
            case.line_no,
            case.grant_text,
            one_line(&case.input, 200)
        );
        match outcome {
            Outcome::Pass { refused } => c.3 += usize::from(*refused),
            Outcome::Skip(why) => {
                c.2 += 1;
                skipped.push(format!("  {what}\n      skipped: {why}"));
            }
            Outcome::Fail(why) => {
                c.1 += 1;
                failures.push((case.class.clone(), format!("  {what}\n      {why}")));
            }
        }
    }
    let mut report = String::new();
    for class in &order {
        let (n, failed, skip, refused) = counts.get(class).copied().unwrap_or_default();
        report.push_str(&format!(
            "{class}: {n} cases, {failed} failed, {skip} skipped; {} passed with the line run, {refused} refused by the analyser (exit 3)\n",
            n - failed - skip - refused
        ));
    }
    println!(
        "{}ran {} cases in {:.1}s; {} failed, {} skipped\n{report}",
        match control {
            Control::Off => "",
            Control::Tackle => "CONTROL (through tackle, no shell grants): ",
            Control::Host => "CONTROL (the line alone in bash, no tackle, no sandbox): ",
        },
        cases.len(),
        started.elapsed().as_secs_f64(),
        failures.len(),
        skipped.len()
    );
    for s in &skipped {
        println!("{s}");
    }
    let mut listed = String::new();
    for class in &order {
        let mine: Vec<&String> = failures
            .iter()
            .filter(|(c, _)| c == class)
            .map(|(_, f)| f)
            .collect();
        if !mine.is_empty() {
            listed.push_str(&format!("\n## {class} ({} failed)\n", mine.len()));
            for f in mine {
                listed.push_str(f);
                listed.push('\n');
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{report}{listed}",
        failures.len(),
        cases.len()
    );
}
