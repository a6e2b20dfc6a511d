//! Landlock for child processes: read and execute everywhere, write only where the call may.
//!
//! The ruleset is built in the parent (allocation, path opening, error handling), and the
//! child only makes two system calls between `fork` and `exec` (`prctl(NO_NEW_PRIVS)` and
//! `landlock_restrict_self`), which are async-signal-safe. When the kernel has no Landlock the
//! state is an explicit [`SandboxStatus::NotEnforced`], reported by `tackle doctor` and logged
//! once at the first command, never silent.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Whether shell commands run inside an OS sandbox on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SandboxStatus {
    /// Landlock is applied to every child; `abi` is the kernel's Landlock ABI version.
    Enforced {
        /// The kernel's Landlock ABI version (what rules it can express).
        abi: i32,
    },
    /// Children run without an OS sandbox; `reason` says why.
    NotEnforced {
        /// Why not, for a person (kernel too old, Landlock disabled, …).
        reason: String,
    },
}

impl SandboxStatus {
    /// Whether children run under Landlock.
    pub fn is_enforced(&self) -> bool {
        matches!(self, SandboxStatus::Enforced { .. })
    }
}

impl std::fmt::Display for SandboxStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SandboxStatus::Enforced { abi } => write!(f, "enforced (Landlock ABI {abi})"),
            SandboxStatus::NotEnforced { reason } => write!(f, "not enforced: {reason}"),
        }
    }
}

/// This machine's sandbox state, probed once.
pub fn sandbox_status() -> SandboxStatus {
    static STATUS: OnceLock<SandboxStatus> = OnceLock::new();
    STATUS.get_or_init(probe).clone()
}

#[cfg(target_os = "linux")]
fn probe() -> SandboxStatus {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: the documented version query: null attributes, size 0, no fd is created.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if v > 0 {
        return SandboxStatus::Enforced { abi: v as i32 };
    }
    let reason = match std::io::Error::last_os_error().raw_os_error() {
        Some(libc::EOPNOTSUPP) => "Landlock is built into this kernel but disabled at boot (add `landlock` to the `lsm=` boot parameter)",
        Some(libc::ENOSYS) => "this kernel has no Landlock (Linux 5.13 or later with CONFIG_SECURITY_LANDLOCK is needed), or a seccomp filter hides it",
        _ => "the Landlock version query failed",
    };
    SandboxStatus::NotEnforced {
        reason: reason.to_string(),
    }
}

#[cfg(not(target_os = "linux"))]
fn probe() -> SandboxStatus {
    SandboxStatus::NotEnforced {
        reason: "Landlock exists only on Linux".to_string(),
    }
}

/// A ruleset ready to be applied in a child, or the reason there is none.
pub(crate) struct Prepared {
    fd: Option<OwnedFd>,
    pub status: SandboxStatus,
}

impl Prepared {
    /// No ruleset: another layer confines the child.
    pub fn none() -> Self {
        Self {
            fd: None,
            status: SandboxStatus::NotEnforced {
                reason: "namespaces confine this command instead".into(),
            },
        }
    }

    /// The raw descriptor for the child; valid while `self` lives (until after spawn).
    pub fn raw_fd(&self) -> Option<i32> {
        use std::os::fd::AsRawFd;
        self.fd.as_ref().map(|f| f.as_raw_fd())
    }
}

/// Devices a normal command writes to; not data, so not worth confining.
const WRITABLE_DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
    "/dev/random",
    "/dev/urandom",
];

/// What Landlock makes of a grant's program rules where namespaces are missing.
#[derive(Debug, Clone, Default)]
pub(crate) enum ProgramLimits {
    /// Read and execute everywhere.
    #[default]
    None,
    /// These files (a denied program, by every name and identity) can be neither read nor
    /// executed; everything else can.
    Hidden(Vec<PathBuf>),
    /// Only these files, and what is beneath these directories, can be executed (the allowed
    /// programs, the shell, the loader; helper directories); nothing writable can.
    ExecuteOnly(Vec<PathBuf>),
}

/// Build the ruleset: read+execute on `/` (narrowed by `programs`), full access beneath
/// `writable` and the devices.
#[cfg(target_os = "linux")]
pub(crate) fn prepare(writable: &[PathBuf], programs: &ProgramLimits) -> Prepared {
    use landlock::{
        path_beneath_rules, Access, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr, ABI,
    };
    let status = sandbox_status();
    if !status.is_enforced() {
        return Prepared { fd: None, status };
    }
    // V3 adds Refer and Truncate; later ABIs add device ioctls, which would break terminals.
    let abi = ABI::V3;
    let no_exec = |a: landlock::BitFlags<AccessFs>| a & !AccessFs::Execute;
    let (read, write) = match programs {
        ProgramLimits::ExecuteOnly(_) => (
            no_exec(AccessFs::from_read(abi)),
            no_exec(AccessFs::from_all(abi)),
        ),
        _ => (AccessFs::from_read(abi), AccessFs::from_all(abi)),
    };
    // Landlock only grants; a file is kept out by granting everything around it.
    let readable: Vec<PathBuf> = match programs {
        ProgramLimits::Hidden(files) => around(Path::new("/"), files),
        _ => vec![PathBuf::from("/")],
    };
    let executable: &[PathBuf] = match programs {
        ProgramLimits::ExecuteOnly(files) => files,
        _ => &[],
    };
    let built = Ruleset::default()
        .handle_access(AccessFs::from_all(abi))
        .and_then(|r| r.create())
        // Directories stay listable wherever a file in them is kept out.
        .and_then(|r| r.add_rules(path_beneath_rules(["/"], AccessFs::ReadDir)))
        .and_then(|r| r.add_rules(path_beneath_rules(&readable, read)))
        .and_then(|r| r.add_rules(path_beneath_rules(executable, read | AccessFs::Execute)))
        .and_then(|r| r.add_rules(path_beneath_rules(writable, write)))
        .and_then(|r| r.add_rules(path_beneath_rules(WRITABLE_DEVICES, write)));
    match built {
        Ok(created) => {
            let fd: Option<OwnedFd> = created.into();
            match fd {
                Some(fd) => Prepared {
                    fd: Some(fd),
                    status,
                },
                None => not_enforced("the kernel accepted no Landlock ruleset".to_string()),
            }
        }
        Err(e) => not_enforced(format!("building the Landlock ruleset failed: {e}")),
    }
}

/// The entries that cover everything beneath `dir` except `hidden`: each directory on the way
/// to a hidden file is opened up into its entries, and every other entry is kept whole.
/// Symlinks are left out (access through one is decided where it leads).
fn around(dir: &Path, hidden: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let path = e.path();
        let Ok(kind) = e.file_type() else { continue };
        if kind.is_symlink() || hidden.contains(&path) {
            continue;
        }
        if kind.is_dir() && hidden.iter().any(|h| h.starts_with(&path)) {
            out.extend(around(&path, hidden));
        } else {
            out.push(path);
        }
    }
    out
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn prepare(_writable: &[PathBuf], _programs: &ProgramLimits) -> Prepared {
    Prepared {
        fd: None,
        status: sandbox_status(),
    }
}

fn not_enforced(reason: String) -> Prepared {
    Prepared {
        fd: None,
        status: SandboxStatus::NotEnforced { reason },
    }
}

/// Runs in the forked child before `exec`: two syscalls, no allocation, no locks.
#[cfg(target_os = "linux")]
pub(crate) fn restrict_in_child(ruleset_fd: i32) -> std::io::Result<()> {
    // SAFETY: plain syscalls on integers; the fd was inherited from the parent and is open.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::syscall(libc::SYS_landlock_restrict_self, ruleset_fd, 0u32) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn restrict_in_child(_ruleset_fd: i32) -> std::io::Result<()> {
    Ok(())
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    /// Runs `sh -c line` under the ruleset; its exit status.
    fn under(prepared: &Prepared, line: &str) -> i32 {
        let mut cmd = std::process::Command::new("/bin/sh");
        cmd.args(["-c", line]);
        if let Some(fd) = prepared.raw_fd() {
            // SAFETY: as in `exec`: two async-signal-safe system calls.
            unsafe {
                cmd.pre_exec(move || restrict_in_child(fd));
            }
        }
        cmd.status().ok().and_then(|s| s.code()).unwrap_or(-1)
    }

    #[test]
    fn landlock_keeps_a_hidden_program_out_and_an_allow_list_to_its_programs() {
        if !sandbox_status().is_enforced() {
            eprintln!("skipped: no Landlock here ({})", sandbox_status());
            return;
        }
        let d = tempfile::tempdir().unwrap();
        let dir = std::fs::canonicalize(d.path()).unwrap();
        let bin = dir.join("bin");
        std::fs::create_dir(&bin).unwrap();
        for name in ["hidden", "kept"] {
            std::fs::copy("/bin/true", bin.join(name)).unwrap();
        }
        let hidden = ProgramLimits::Hidden(vec![bin.join("hidden")]);
        let p = prepare(&[], &hidden);
        let hid = bin.join("hidden").display().to_string();
        let kept = bin.join("kept").display().to_string();
        assert_ne!(under(&p, &hid), 0, "a hidden program ran");
        assert_ne!(
            under(&p, &format!("cat {hid} > /dev/null")),
            0,
            "a hidden program was read"
        );
        assert_eq!(under(&p, &kept), 0, "its neighbour must still run");
        assert_eq!(under(&p, &format!("ls {} > /dev/null", bin.display())), 0);

        let work = dir.join("work");
        std::fs::create_dir(&work).unwrap();
        let shell = std::fs::canonicalize("/bin/sh").unwrap();
        let mut allowed = vec![shell, bin.join("kept")];
        allowed.extend(
            crate::programs::LOADERS
                .iter()
                .filter_map(|l| std::fs::canonicalize(l).ok()),
        );
        let only = ProgramLimits::ExecuteOnly(allowed);
        let p = prepare(std::slice::from_ref(&work), &only);
        assert_eq!(under(&p, &kept), 0, "an allowed program must run");
        assert_ne!(under(&p, &hid), 0, "a program outside the list ran");
        let copy = work.join("copy");
        let line = format!("cat {kept} > {c}; chmod +x {c}; {c}", c = copy.display());
        assert_ne!(
            under(&p, &line),
            0,
            "a file written in a writable place ran"
        );
    }
}
