//! What `tackle doctor` shows about the host's protections on this machine.

use crate::sandbox::sandbox_status;
use serde_json::{json, Value};

/// One protection and whether it is in force here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enforcement {
    /// Short name (`sandbox`, `dns_pinning`, …).
    pub protection: &'static str,
    /// Whether it protects commands on this machine now.
    pub enforced: bool,
    /// A sentence for a person: what it does, or why it is not in force.
    pub detail: String,
}

/// The protections this host applies, in a stable order.
pub fn enforcement_report() -> Vec<Enforcement> {
    let landlock = sandbox_status();
    let namespaces = crate::bwrap::usable();
    vec![
        Enforcement {
            protection: "sandbox",
            enforced: namespaces.is_ok() || landlock.is_enforced(),
            detail: match &namespaces {
                Ok(_) => "every command runs in bubblewrap namespaces (see `namespaces`)".into(),
                Err(_) if landlock.is_enforced() => format!(
                    "Landlock only (writes confined to the workspace, allow_write roots and the session TMPDIR; reads, processes and the network are not): {landlock}"
                ),
                Err(why) => format!("no OS sandbox: {why}; Landlock {landlock}"),
            },
        },
        Enforcement {
            protection: "namespaces",
            enforced: namespaces.is_ok(),
            detail: match &namespaces {
                Ok(bwrap) => format!(
                    "{}: read-only system, empty home (toolchains read-only), workspace and allow_write writable, allow_read readable, Tackle's config and state hidden, own PID namespace (no process outlives its call, no signals outside), no capabilities, new session",
                    bwrap.display()
                ),
                Err(why) => why.to_string(),
            },
        },
        Enforcement {
            protection: "network_isolation",
            enforced: namespaces.is_ok(),
            detail: match &namespaces {
                Ok(_) => "commands have no network of their own; with a network grant they reach it through a filtering proxy (HTTP_PROXY/HTTPS_PROXY) that applies the endpoint grants and the SSRF guard to every request".into(),
                Err(_) => "commands share the host network".into(),
            },
        },
        Enforcement {
            protection: "landlock",
            enforced: landlock.is_enforced() && namespaces.is_err(),
            detail: if namespaces.is_ok() {
                format!("not layered under bubblewrap (Landlock forbids its mounts); kernel: {landlock}")
            } else {
                format!("writes confined for commands: {landlock}")
            },
        },
        {
            let filter = crate::seccomp::available();
            Enforcement {
                protection: "seccomp",
                enforced: namespaces.is_ok() && filter.is_ok(),
                detail: match (&namespaces, filter) {
                    (Ok(_), Ok(_)) => format!(
                        "{} system calls refused inside the sandbox (ptrace, mount, bpf, keyctl, userfaultfd, perf_event_open, unshare, new user namespaces …), and no mode with a setuid or setgid bit (chmod family, open, creat, mkdir, mknod)",
                        crate::seccomp::blocked_syscalls().count() + 1
                    ),
                    (Ok(_), Err(why)) => why.to_string(),
                    (Err(_), _) => "applied only inside the namespace sandbox".into(),
                },
            }
        },
        match crate::bash::bash_path() {
            Some(bash) => Enforcement {
                protection: "shell_grammar",
                enforced: true,
                detail: format!(
                    "shell lines run in {} --noprofile --norc, the grammar the shell rules analyse; under rules each line is also checked as bash reads it back",
                    bash.display()
                ),
            },
            None => Enforcement {
                protection: "shell_grammar",
                enforced: false,
                detail: "bash is not installed: shell calls are refused (install bash)".into(),
            },
        },
        Enforcement {
            protection: "program_rules",
            enforced: namespaces.is_ok(),
            detail: match &namespaces {
                Ok(_) => "one-word shell rules hold at exec (layer `kernel`): a denied program is masked in every command's sandbox by name, hard link, symlink, copy and multi-call applet, so no path reaches it; under an allow list only the allowed programs, their libraries and the shell exist, and every other mount is noexec (the dynamic loader cannot map anything else either); rules with arguments (`git push`) are the analyser's (layer `analyser`), which refuses what it cannot see".into(),
                Err(_) if landlock.is_enforced() => format!(
                    "no namespace sandbox: program rules are kept by Landlock in part; lost here: {}",
                    lost_without_namespaces().join("; ")
                ),
                Err(_) => format!(
                    "enforced by the shell analyser only (no namespace sandbox, no Landlock); lost here: {}",
                    lost_without_namespaces().join("; ")
                ),
            },
        },
        Enforcement {
            protection: "fs_grants",
            enforced: true,
            detail: "paths are canonicalised (symlinks resolved) before the fs grant is checked, then opened refusing links (openat2 RESOLVE_NO_SYMLINKS where the kernel has it); writes are atomic".into(),
        },
        Enforcement {
            protection: "dns_pinning",
            enforced: true,
            detail: "HTTP names are resolved once, every address is checked, the connection goes to a checked address".into(),
        },
        Enforcement {
            protection: "redirect_checks",
            enforced: true,
            detail: format!("every redirect hop is checked against the network grant (at most {} hops)", crate::net::MAX_REDIRECTS),
        },
        Enforcement {
            protection: "env_scrubbing",
            enforced: true,
            detail: "child processes get only PATH HOME LANG LC_* TERM USER TZ, the configured passthrough and a per-session TMPDIR".into(),
        },
        Enforcement {
            protection: "process_groups",
            enforced: true,
            detail: "commands run in their own process group, killed as a whole on timeout or cancel".into(),
        },
    ]
}

/// The guarantees of program rules that hold only inside the namespace sandbox, on this
/// machine (where Landlock works, it keeps part of them).
pub(crate) fn lost_without_namespaces() -> Vec<String> {
    if sandbox_status().is_enforced() {
        vec![
            "Landlock keeps a denied program's files from being executed or read, and under an allow list lets only the allowed programs, the shell and the loader be executed (nothing written); but the dynamic loader run by hand can still start any readable program (`/lib64/ld-linux-x86-64.so.2 /usr/bin/python3`), which only the namespace view's noexec mounts stop".into(),
            "when Tackle runs as root, files only root may read are readable, and files with setuid or setgid bits can be made (the seccomp filter runs only inside the namespaces)".into(),
        ]
    } else {
        vec![
            "a denied program is not masked: a path the analyser does not see (an interpreter's code, a config file, a script written then run) still reaches it".into(),
            "under an allow list every installed program exists, and files written in the workspace can be executed".into(),
            "when Tackle runs as root, files only root may read are readable, and files with setuid or setgid bits can be made".into(),
        ]
    }
}

/// The same report as JSON, for `tackle doctor --json`.
pub fn enforcement_report_json() -> Value {
    Value::Array(
        enforcement_report()
            .into_iter()
            .map(
                |e| json!({"protection": e.protection, "enforced": e.enforced, "detail": e.detail}),
            )
            .collect(),
    )
}
