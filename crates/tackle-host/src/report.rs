//! What `tackle doctor` shows about the host's protections on this machine.

use crate::sandbox::sandbox_status;
use serde_json::{json, Value};

/// One protection and whether it is in force here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enforcement {
    /// Short name (`sandbox`, `dns_pinning`, …).
    pub protection: &'static str,
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
                Err(why) => why.clone(),
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
                        "{} system calls refused inside the sandbox (ptrace, mount, bpf, keyctl, userfaultfd, perf_event_open, unshare, new user namespaces …)",
                        crate::seccomp::blocked_syscalls().count() + 1
                    ),
                    (Ok(_), Err(why)) => why,
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
