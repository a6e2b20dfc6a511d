//! `tackle __sandbox-exec [--empty DIR]… [--show FILE AT]… [--bind-self PATH]… [--close-fd N]
//! -- PROGRAM ARGS…`: the first process inside a sandbox whose view is an allow list (see
//! `sandbox_view`). It is started from a descriptor of Tackle's binary (`/proc/self/fd/N`), so
//! the binary is never part of the command's view.
//!
//! bubblewrap has built the rest of the view; this step, which alone holds `CAP_SYS_ADMIN` in
//! the sandbox's namespaces, finishes what bubblewrap cannot express:
//! 1. it closes the descriptor it was started from (`--close-fd`);
//! 2. it empties each program directory (`--empty`: a tmpfs over it), shows each allowed
//!    program in its place (`--show`: a bind of the real file, opened before any directory was
//!    emptied), makes the emptied directories read-only, and binds each library, the loader and
//!    each helper directory on itself (`--bind-self`);
//! 3. it remounts every other mount of the view `noexec`, so nothing written and nothing else
//!    found can be executed, nor mapped executable by the dynamic loader;
//! 4. it drops every capability, the bounding set included, sets `no_new_privs`, installs the
//!    system-call filter, and executes the command.
//!
//! Any step that fails ends the command before it starts (exit 126): a view that could not be
//! made is never run half-made.

use std::ffi::{CString, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Exit status when the sandbox could not be finished (as a shell says "cannot execute").
const CANNOT_START: u8 = 126;

/// Why the start-up step stopped before the command: a bad command line (exit 2) or a step of
/// the view that could not be made (exit 126).
#[derive(Debug, thiserror::Error)]
enum InitError {
    #[error("expected `-- PROGRAM`")]
    NoSeparator,
    #[error("{flag} needs {what}")]
    MissingValue {
        flag: &'static str,
        what: &'static str,
    },
    #[error("unknown argument {0}")]
    UnknownArgument(String),
    #[error("expected a program after `--`")]
    NoProgram,
    #[error("{} holds a NUL", .0.display())]
    Nul(PathBuf),
    #[error("opening {} to show it: {source}", .file.display())]
    OpenShown {
        file: PathBuf,
        source: std::io::Error,
    },
    #[error("emptying {}: {source}", .dir.display())]
    Empty {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("making {}: {source}", .at.display())]
    MountPoint { at: PathBuf, source: std::io::Error },
    #[error("showing {} at {}: {source}", .src.display(), .at.display())]
    Bind {
        src: PathBuf,
        at: PathBuf,
        source: std::io::Error,
    },
    /// `how` is what the remount was to make of it: "read-only" or "noexec".
    #[error("making {} {how}: {source}", .at.display())]
    Remount {
        at: PathBuf,
        how: &'static str,
        source: std::io::Error,
    },
    #[error("reading the mount table: {0}")]
    MountTable(#[source] std::io::Error),
    #[error("dropping capability {cap}: {source}")]
    DropCapability { cap: i32, source: std::io::Error },
    #[error("dropping capabilities: {0}")]
    DropCapabilities(#[source] std::io::Error),
    #[error("no_new_privs: {0}")]
    NoNewPrivs(#[source] std::io::Error),
    #[error("the system-call filter: {0}")]
    Seccomp(#[from] crate::seccomp::SeccompError),
    #[error("{}: {source}", .program.display())]
    Exec {
        program: PathBuf,
        source: std::io::Error,
    },
}

struct Plan {
    empty: Vec<PathBuf>,
    show: Vec<(PathBuf, PathBuf)>,
    bind_self: Vec<PathBuf>,
    close_fd: Option<i32>,
    program: OsString,
    args: Vec<OsString>,
}

/// Runs the step; returns only when it failed.
pub fn sandbox_exec_main(args: Vec<OsString>) -> ExitCode {
    let plan = match parse(args) {
        Ok(p) => p,
        Err(why) => {
            eprintln!("tackle sandbox: {why}");
            return ExitCode::from(2);
        }
    };
    match finish_and_exec(&plan) {
        Ok(never) => match never {},
        Err(why) => {
            eprintln!("tackle sandbox: the command was not run: {why}");
            ExitCode::from(CANNOT_START)
        }
    }
}

/// A flag without the value it needs.
fn missing(flag: &'static str, what: &'static str) -> InitError {
    InitError::MissingValue { flag, what }
}

fn parse(args: Vec<OsString>) -> Result<Plan, InitError> {
    let mut it = args.into_iter();
    let mut empty = Vec::new();
    let mut show = Vec::new();
    let mut bind_self = Vec::new();
    let mut close_fd = None;
    loop {
        let Some(flag) = it.next() else {
            return Err(InitError::NoSeparator);
        };
        match flag.as_bytes() {
            b"--" => break,
            b"--empty" => empty.push(PathBuf::from(
                it.next().ok_or_else(|| missing("--empty", "a directory"))?,
            )),
            b"--show" => {
                let show_needs = || missing("--show", "a file and a place");
                let file = it.next().ok_or_else(show_needs)?;
                let at = it.next().ok_or_else(show_needs)?;
                show.push((PathBuf::from(file), PathBuf::from(at)));
            }
            b"--bind-self" => bind_self.push(PathBuf::from(
                it.next().ok_or_else(|| missing("--bind-self", "a path"))?,
            )),
            b"--close-fd" => {
                let n = it.next().ok_or_else(|| missing("--close-fd", "a number"))?;
                let n = n.to_str().and_then(|n| n.parse().ok());
                close_fd = Some(n.ok_or_else(|| missing("--close-fd", "a number"))?);
            }
            other => {
                return Err(InitError::UnknownArgument(
                    String::from_utf8_lossy(other).into_owned(),
                ))
            }
        }
    }
    let program = it.next().ok_or(InitError::NoProgram)?;
    Ok(Plan {
        empty,
        show,
        bind_self,
        close_fd,
        program,
        args: it.collect(),
    })
}

enum Never {}

fn finish_and_exec(plan: &Plan) -> Result<Never, InitError> {
    if let Some(fd) = plan.close_fd.filter(|fd| *fd > 2) {
        // SAFETY: closes a descriptor this process was given for starting itself; nothing
        // else here holds it.
        unsafe { libc::close(fd) };
    }
    show_only_allowed(plan)?;
    let keep: Vec<&PathBuf> = plan
        .show
        .iter()
        .map(|(_, at)| at)
        .chain(&plan.bind_self)
        .collect();
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").map_err(InitError::MountTable)?;
    for at in mount_points(&mounts) {
        if keep.contains(&&at) {
            continue;
        }
        remount_noexec(&at)?;
    }
    drop_capabilities()?;
    // SAFETY: a plain prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(InitError::NoNewPrivs(last_error()));
    }
    crate::seccomp::apply_here()?;
    let source = std::process::Command::new(&plan.program)
        .args(&plan.args)
        .exec();
    Err(InitError::Exec {
        program: PathBuf::from(&plan.program),
        source,
    })
}

/// Step 2: the program directories emptied but for the allowed programs, and the libraries,
/// loader and helper directories bound on themselves, each a mount of its own.
fn show_only_allowed(plan: &Plan) -> Result<(), InitError> {
    use std::os::fd::AsRawFd;
    // Opened first: a program's real file may sit in a directory about to be emptied.
    let mut sources = Vec::with_capacity(plan.show.len());
    for (file, at) in &plan.show {
        let opened = std::fs::File::open(file).map_err(|source| InitError::OpenShown {
            file: file.clone(),
            source,
        })?;
        sources.push((opened, at));
    }
    for p in &plan.bind_self {
        bind(p, p)?;
    }
    for d in &plan.empty {
        let c = cstring(d)?;
        // SAFETY: a plain system call with NUL-terminated strings.
        let rc = unsafe {
            libc::mount(
                c"tmpfs".as_ptr(),
                c.as_ptr(),
                c"tmpfs".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV,
                c"mode=0755,size=64k".as_ptr().cast(),
            )
        };
        if rc != 0 {
            return Err(InitError::Empty {
                dir: d.clone(),
                source: last_error(),
            });
        }
    }
    for (opened, at) in &sources {
        std::fs::File::create(at).map_err(|source| InitError::MountPoint {
            at: PathBuf::from(at),
            source,
        })?;
        bind(
            Path::new(&format!("/proc/self/fd/{}", opened.as_raw_fd())),
            at,
        )?;
    }
    drop(sources);
    for d in &plan.empty {
        let flags =
            libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV;
        remount(d, flags, "read-only")?;
    }
    Ok(())
}

/// A bind remount of the mount at `at` with exactly `flags`, to make it `how` (for the error).
fn remount(at: &Path, flags: libc::c_ulong, how: &'static str) -> Result<(), InitError> {
    let c = cstring(at)?;
    // SAFETY: a plain system call; null source, type and data are what a bind remount takes.
    let rc = unsafe {
        libc::mount(
            std::ptr::null(),
            c.as_ptr(),
            std::ptr::null(),
            flags,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        return Err(InitError::Remount {
            at: at.to_path_buf(),
            how,
            source: last_error(),
        });
    }
    Ok(())
}

/// A bind mount of `src` (followed if a link, as `/proc/self/fd/N` is) at `at`.
fn bind(src: &Path, at: &Path) -> Result<(), InitError> {
    let (s, a) = (cstring(src)?, cstring(at)?);
    // SAFETY: a plain system call with NUL-terminated paths.
    let rc = unsafe {
        libc::mount(
            s.as_ptr(),
            a.as_ptr(),
            std::ptr::null(),
            libc::MS_BIND,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        return Err(InitError::Bind {
            src: src.to_path_buf(),
            at: at.to_path_buf(),
            source: last_error(),
        });
    }
    Ok(())
}

/// The mount points of `/proc/self/mountinfo`, in its order (the fifth field, with the
/// kernel's octal escapes for space, tab, newline and backslash undone).
fn mount_points(table: &str) -> Vec<PathBuf> {
    table
        .lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(|field| PathBuf::from(OsString::from_vec(unescape(field))))
        .collect()
}

fn unescape(field: &str) -> Vec<u8> {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| b == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match octal {
            Some(d) => {
                let v = d.iter().fold(0u32, |acc, c| acc * 8 + u32::from(c - b'0'));
                out.push(u8::try_from(v).unwrap_or(b'?'));
                i += 4;
            }
            None => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

/// Remounts one mount `noexec` (and `nosuid`), keeping the flags it has: in a user namespace
/// the kernel refuses a remount that would clear a flag the mount was locked with.
fn remount_noexec(at: &Path) -> Result<(), InitError> {
    let c = cstring(at)?;
    // SAFETY: statvfs writes into the zeroed struct we own; the path is NUL-terminated.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        // Gone since the table was read (a lazily unmounted path): nothing to remount.
        return Ok(());
    }
    let have = st.f_flag;
    if have & libc::ST_NOEXEC != 0 && have & libc::ST_NOSUID != 0 {
        return Ok(());
    }
    let mut flags: libc::c_ulong =
        libc::MS_REMOUNT | libc::MS_BIND | libc::MS_NOEXEC | libc::MS_NOSUID;
    // No atime flag is passed: a bind remount without one keeps the mount's own.
    for (st_flag, ms_flag) in [
        (libc::ST_RDONLY, libc::MS_RDONLY),
        (libc::ST_NODEV, libc::MS_NODEV),
    ] {
        if have & st_flag != 0 {
            flags |= ms_flag;
        }
    }
    remount(at, flags, "noexec")
}

/// Drops every capability for good: the bounding set (so that executing a program as uid 0
/// in the namespace grants none back), the ambient set, then effective, permitted and
/// inheritable.
fn drop_capabilities() -> Result<(), InitError> {
    for cap in 0..64 {
        // SAFETY: a plain prctl; EINVAL past the kernel's last capability ends the loop.
        if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) } != 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
                break;
            }
            return Err(InitError::DropCapability {
                cap,
                source: last_error(),
            });
        }
    }
    // SAFETY: as above.
    unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        );
    }
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522;
    let header = Header {
        version: VERSION_3,
        pid: 0,
    };
    let data = [Data {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: capset reads the header and two data structs, laid out as the kernel's v3 ABI.
    if unsafe { libc::syscall(libc::SYS_capset, &header, data.as_ptr()) } != 0 {
        return Err(InitError::DropCapabilities(last_error()));
    }
    Ok(())
}

fn cstring(p: &Path) -> Result<CString, InitError> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| InitError::Nul(p.to_path_buf()))
}

fn last_error() -> std::io::Error {
    std::io::Error::last_os_error()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_points_are_read_with_their_escapes_undone() {
        let table = "22 1 0:21 / / rw,relatime - tmpfs tmpfs rw\n\
                     23 22 254:0 /a\\040b /work/a\\040b rw - ext4 /dev/vda rw\n\
                     24 22 254:0 /x /odd\\134\\011 rw - ext4 /dev/vda rw\n";
        assert_eq!(
            mount_points(table),
            [
                PathBuf::from("/"),
                PathBuf::from("/work/a b"),
                PathBuf::from("/odd\\\t")
            ]
        );
    }

    #[test]
    fn a_stray_backslash_or_short_escape_is_kept_as_it_is() {
        assert_eq!(unescape("a\\9b\\04"), b"a\\9b\\04".to_vec());
    }
}
