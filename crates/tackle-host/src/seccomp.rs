//! The system-call filter bubblewrap installs in every sandbox, held as data: what no tool
//! needs and what would reach past the namespaces (debugging other processes, mounting,
//! loading kernel code, key rings, new user namespaces). Blocked calls fail with `EPERM`;
//! `clone3` fails with `ENOSYS`, so that libc falls back to `clone`, whose flags the filter
//! can see.

use std::os::fd::OwnedFd;

/// Why the filter cannot be built or installed here.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SeccompError {
    /// seccompiler has no target for this machine's architecture.
    #[error("no seccomp filter for the {0} architecture")]
    Arch(&'static str),
    /// A rule or filter was refused by seccompiler's compiler.
    #[error(transparent)]
    Compile(#[from] seccompiler::BackendError),
    /// The kernel refused to install a compiled filter.
    #[error(transparent)]
    Install(#[from] seccompiler::Error),
}

/// Why a memory file could not be made and filled.
#[derive(Debug, thiserror::Error)]
pub(crate) enum MemfdError {
    /// `memfd_create` failed (no memory files on this kernel, or out of descriptors).
    #[error("memfd_create: {0}")]
    Create(#[source] std::io::Error),
    /// The data could not be written to it, or the file not rewound.
    #[error("filling a memory file: {0}")]
    Fill(#[source] std::io::Error),
}

/// Why the filters could not be handed to bubblewrap.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FiltersError {
    /// The filters cannot be built here (the answer is made once per process).
    #[error(transparent)]
    Build(&'static SeccompError),
    /// A filter could not be put in the memory file bubblewrap reads.
    #[error(transparent)]
    File(#[from] MemfdError),
}

/// (system call, why no tool needs it).
const BLOCKED: &[(i64, &str)] = &[
    (libc::SYS_ptrace, "debugging another process"),
    (
        libc::SYS_process_vm_readv,
        "reading another process's memory",
    ),
    (
        libc::SYS_process_vm_writev,
        "writing another process's memory",
    ),
    (libc::SYS_mount, "mounting"),
    (libc::SYS_umount2, "unmounting"),
    (libc::SYS_pivot_root, "changing the root"),
    (libc::SYS_move_mount, "mounting"),
    (libc::SYS_open_tree, "mounting"),
    (libc::SYS_fsopen, "mounting"),
    (libc::SYS_fsmount, "mounting"),
    (libc::SYS_fsconfig, "mounting"),
    (libc::SYS_fspick, "mounting"),
    (libc::SYS_kexec_load, "loading a kernel"),
    (libc::SYS_kexec_file_load, "loading a kernel"),
    (libc::SYS_init_module, "loading kernel code"),
    (libc::SYS_finit_module, "loading kernel code"),
    (libc::SYS_delete_module, "unloading kernel code"),
    (libc::SYS_bpf, "loading BPF programs"),
    (
        libc::SYS_perf_event_open,
        "observing other processes and the kernel",
    ),
    (libc::SYS_userfaultfd, "a primitive of kernel exploits"),
    (libc::SYS_keyctl, "the kernel key rings"),
    (libc::SYS_add_key, "the kernel key rings"),
    (libc::SYS_request_key, "the kernel key rings"),
    (libc::SYS_unshare, "new namespaces inside the sandbox"),
    (libc::SYS_setns, "entering other namespaces"),
    (libc::SYS_reboot, "rebooting"),
    (libc::SYS_swapon, "swap"),
    (libc::SYS_swapoff, "swap"),
    (libc::SYS_acct, "process accounting"),
    (
        libc::SYS_open_by_handle_at,
        "opening files by handle, past the mounts",
    ),
    (libc::SYS_name_to_handle_at, "file handles"),
    (libc::SYS_quotactl, "disk quotas"),
    (libc::SYS_syslog, "the kernel log"),
    (libc::SYS_settimeofday, "the system clock"),
    (libc::SYS_clock_settime, "the system clock"),
    (libc::SYS_adjtimex, "the system clock"),
    (libc::SYS_iopl, "hardware I/O ports"),
    (libc::SYS_ioperm, "hardware I/O ports"),
    (libc::SYS_vhangup, "hanging up the terminal"),
];

/// The blocked system calls and why, for `tackle doctor` and tests.
pub fn blocked_syscalls() -> impl Iterator<Item = (i64, &'static str)> {
    BLOCKED.iter().copied()
}

/// The two compiled filters (the `EPERM` list with `clone` of a new user namespace, and
/// `clone3` → `ENOSYS`), each in a memory file bubblewrap reads. Close-on-exec is set: the
/// child clears it for itself (see `exec`), so no other command inherits them.
pub(crate) fn filters() -> Result<Vec<OwnedFd>, FiltersError> {
    compiled()
        .map_err(FiltersError::Build)?
        .iter()
        .map(|bytes| memfd_with(bytes).map_err(FiltersError::from))
        .collect()
}

/// Whether the filter can be built here (for `tackle doctor`), without making files for it.
pub(crate) fn available() -> Result<(), &'static SeccompError> {
    compiled().map(|_| ())
}

fn compiled() -> Result<&'static [Vec<u8>], &'static SeccompError> {
    static COMPILED: std::sync::OnceLock<Result<Vec<Vec<u8>>, SeccompError>> =
        std::sync::OnceLock::new();
    COMPILED
        .get_or_init(|| Ok(programs()?.iter().map(|p| bpf_bytes(p)).collect()))
        .as_deref()
}

/// Installs the filters on the calling thread (and so on what it executes), for the
/// in-sandbox start-up step, which needs `mount` before it gives it up. The caller has set
/// `no_new_privs`.
pub(crate) fn apply_here() -> Result<(), SeccompError> {
    for program in programs()? {
        seccompiler::apply_filter(&program)?;
    }
    Ok(())
}

/// What the filter refuses, one line each, for `--explain` (made once: every command's view
/// holds it).
pub(crate) fn summary() -> &'static [String] {
    static SUMMARY: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    SUMMARY.get_or_init(describe)
}

fn describe() -> Vec<String> {
    let mut out: Vec<String> = BLOCKED
        .iter()
        .map(|(nr, why)| format!("syscall {nr}: {why}"))
        .collect();
    out.push("clone with CLONE_NEWUSER: new user namespaces".into());
    out.push("clone3: ENOSYS, so that libc falls back to clone".into());
    out.push(
        "chmod, fchmod, fchmodat, fchmodat2, open, openat, creat, mkdir, mkdirat, mknod, mknodat with a setuid or setgid bit: no setuid or setgid file".into(),
    );
    out.push("openat2: ENOSYS (its mode cannot be seen), so that libc falls back to openat".into());
    out
}

/// The filters as programs: the `EPERM` list (with the mode checks), and the `ENOSYS` one.
fn programs() -> Result<Vec<seccompiler::BpfProgram>, SeccompError> {
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    };
    let arch = target_arch()?;
    let mut rules: std::collections::BTreeMap<i64, Vec<SeccompRule>> =
        BLOCKED.iter().map(|(nr, _)| (*nr, Vec::new())).collect();
    let new_user = libc::CLONE_NEWUSER as u64;
    let flag = SeccompCondition::new(
        0,
        SeccompCmpArgLen::Qword,
        SeccompCmpOp::MaskedEq(new_user),
        new_user,
    )
    .and_then(|c| SeccompRule::new(vec![c]))?;
    rules.insert(libc::SYS_clone, vec![flag]);
    // A file the command makes can never be setuid or setgid: the mode argument of every call
    // that sets or creates with a mode is checked for either bit. (Running as root, the
    // command owns what it makes; a setuid-root file left in the workspace would outlive it.)
    for (nr, arg) in MODE_ARGS {
        let mut per_bit = Vec::new();
        for bit in [libc::S_ISUID, libc::S_ISGID] {
            let bit = u64::from(bit);
            let rule = SeccompCondition::new(
                arg,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::MaskedEq(bit),
                bit,
            )
            .and_then(|c| SeccompRule::new(vec![c]))?;
            per_bit.push(rule);
        }
        rules.insert(nr, per_bit);
    }
    let eperm = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )?;
    let enosys = SeccompFilter::new(
        [(libc::SYS_clone3, Vec::new()), (SYS_OPENAT2, Vec::new())]
            .into_iter()
            .collect(),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )?;
    [eperm, enosys]
        .into_iter()
        .map(|f| f.try_into().map_err(SeccompError::Compile))
        .collect()
}

/// `openat2`, the same number on every architecture Linux has added it to since 5.6.
const SYS_OPENAT2: i64 = 437;
/// `fchmodat2` (Linux 6.6), likewise.
const SYS_FCHMODAT2: i64 = 452;

/// (system call, index of its mode argument).
#[cfg(target_arch = "x86_64")]
const MODE_ARGS: [(i64, u8); 11] = [
    (libc::SYS_chmod, 1),
    (libc::SYS_fchmod, 1),
    (libc::SYS_fchmodat, 2),
    (SYS_FCHMODAT2, 2),
    (libc::SYS_open, 2),
    (libc::SYS_openat, 3),
    (libc::SYS_creat, 1),
    (libc::SYS_mkdir, 1),
    (libc::SYS_mkdirat, 2),
    (libc::SYS_mknod, 1),
    (libc::SYS_mknodat, 2),
];
#[cfg(not(target_arch = "x86_64"))]
const MODE_ARGS: [(i64, u8); 5] = [
    (libc::SYS_fchmod, 1),
    (libc::SYS_fchmodat, 2),
    (SYS_FCHMODAT2, 2),
    (libc::SYS_openat, 3),
    (libc::SYS_mkdirat, 2),
];

fn target_arch() -> Result<seccompiler::TargetArch, SeccompError> {
    match std::env::consts::ARCH {
        "x86_64" => Ok(seccompiler::TargetArch::x86_64),
        "aarch64" => Ok(seccompiler::TargetArch::aarch64),
        other => Err(SeccompError::Arch(other)),
    }
}

/// The program as the kernel's `struct sock_filter` array, which bubblewrap passes on as is.
fn bpf_bytes(program: &[seccompiler::sock_filter]) -> Vec<u8> {
    let mut out = Vec::with_capacity(program.len() * 8);
    for ins in program {
        out.extend_from_slice(&ins.code.to_ne_bytes());
        out.push(ins.jt);
        out.push(ins.jf);
        out.extend_from_slice(&ins.k.to_ne_bytes());
    }
    out
}

/// A memory file holding `data`, positioned at its start.
pub(crate) fn memfd_with(data: &[u8]) -> Result<OwnedFd, MemfdError> {
    use std::io::{Seek, Write};
    use std::os::fd::FromRawFd;
    // SAFETY: a plain system call with a NUL-terminated name; the result is checked.
    let fd = unsafe { libc::memfd_create(c"tackle-seccomp".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(MemfdError::Create(std::io::Error::last_os_error()));
    }
    // SAFETY: `fd` was just created and is owned by nothing else.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut file = std::fs::File::from(owned);
    file.write_all(data).map_err(MemfdError::Fill)?;
    file.rewind().map_err(MemfdError::Fill)?;
    Ok(OwnedFd::from(file))
}
