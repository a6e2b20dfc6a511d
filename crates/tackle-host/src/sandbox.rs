//! Landlock for child processes: read and execute everywhere, write only where the call may.
//!
//! The ruleset is built in the parent (allocation, path opening, error handling), and the
//! child only makes two system calls between `fork` and `exec` (`prctl(NO_NEW_PRIVS)` and
//! `landlock_restrict_self`), which are async-signal-safe. When the kernel has no Landlock the
//! state is an explicit [`SandboxStatus::NotEnforced`], reported by `tackle doctor` and logged
//! once at the first command, never silent.

use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::OnceLock;

/// Whether shell commands run inside an OS sandbox on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SandboxStatus {
    /// Landlock is applied to every child; `abi` is the kernel's Landlock ABI version.
    Enforced { abi: i32 },
    /// Children run without an OS sandbox; `reason` says why.
    NotEnforced { reason: String },
}

impl SandboxStatus {
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

/// Build the ruleset: read+execute on `/`, full access beneath `writable` and the devices.
#[cfg(target_os = "linux")]
pub(crate) fn prepare(writable: &[PathBuf]) -> Prepared {
    use landlock::{
        path_beneath_rules, Access, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr, ABI,
    };
    let status = sandbox_status();
    if !status.is_enforced() {
        return Prepared { fd: None, status };
    }
    // V3 adds Refer and Truncate; later ABIs add device ioctls, which would break terminals.
    let abi = ABI::V3;
    let built = Ruleset::default()
        .handle_access(AccessFs::from_all(abi))
        .and_then(|r| r.create())
        .and_then(|r| r.add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi))))
        .and_then(|r| r.add_rules(path_beneath_rules(writable, AccessFs::from_all(abi))))
        .and_then(|r| {
            r.add_rules(path_beneath_rules(
                WRITABLE_DEVICES,
                AccessFs::from_all(abi),
            ))
        });
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

#[cfg(not(target_os = "linux"))]
pub(crate) fn prepare(_writable: &[PathBuf]) -> Prepared {
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
