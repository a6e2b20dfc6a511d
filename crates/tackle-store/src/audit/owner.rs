//! The process that runs a call whose intent is in the audit log, named so that any later
//! process can tell whether it is still running: the boot it runs in, its pid namespace, its
//! pid, and its start time (field 22 of `/proc/PID/stat`, clock ticks since boot). A pid alone
//! is not enough: pids are reused, and a reused one belongs to a process that started later.
//!
//! When the identity cannot be read (no `/proc`), the owner is the bare pid and is never
//! judged gone: an intent left open is better than a running call marked interrupted.
//!
//! On a shared engine daemons of several machines write one log, and another machine's boot
//! id is not a sign of a restart: the owner there ends with the host's name, and only a
//! process of that host judges it. Two machines with one host name would judge each other's
//! intents by their own boot id: host names must be unique among the daemons sharing a log.

use std::sync::OnceLock;

/// This process's identity as stored in `audit.owner`, read once.
pub(crate) fn this_process() -> &'static str {
    static ME: OnceLock<String> = OnceLock::new();
    ME.get_or_init(|| match Identity::of_self() {
        Some(me) => me.to_string(),
        None => std::process::id().to_string(),
    })
}

/// Whether the process `owner` names has ended (or was never of this boot). `false` whenever
/// that cannot be known: another pid namespace, an owner written without a start time, a
/// `/proc` that cannot be read.
pub(crate) fn is_gone(owner: &str) -> bool {
    let Some(owner) = Identity::parse(owner) else {
        return false;
    };
    let Some(me) = Identity::of_self() else {
        return false;
    };
    if owner.boot != me.boot {
        // The machine restarted since: every process of that boot is gone.
        return true;
    }
    if owner.pid_ns != me.pid_ns {
        // Its pids are not the ones this process sees.
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{}/stat", owner.pid)) {
        Ok(stat) => match parse_stat(&stat) {
            // A zombie has ended; only its parent has not collected it yet.
            Some((state, start)) => state == 'Z' || state == 'X' || start != owner.start,
            None => false,
        },
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    }
}

/// This host's name (`/proc/sys/kernel/hostname`), empty when it cannot be read.
pub(crate) fn host() -> &'static str {
    static HOST: OnceLock<String> = OnceLock::new();
    HOST.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .and_then(|h| word(&h))
            .unwrap_or_default()
    })
}

/// This process's identity as stored on a shared engine, where daemons of several machines
/// write one log: [`this_process`] followed by the host's name. Without a readable identity
/// or host name it is the bare pid, which no process ever judges gone.
pub(crate) fn this_process_on_host() -> &'static str {
    static ME: OnceLock<String> = OnceLock::new();
    ME.get_or_init(|| match (Identity::of_self(), host()) {
        (Some(me), host) if !host.is_empty() => format!("{me} {host}"),
        _ => std::process::id().to_string(),
    })
}

/// [`is_gone`] for an owner written by [`this_process_on_host`]: judged only when it names
/// this host, so a call running on another machine (whose boot id is simply another one) is
/// never taken for a call of a process that ended. An owner without a host is never gone.
pub(crate) fn is_gone_here(owner: &str) -> bool {
    let Some((identity, host)) = owner.rsplit_once(' ') else {
        return false;
    };
    let here = self::host();
    !here.is_empty() && host == here && is_gone(identity)
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Identity {
    pid: u32,
    start: u64,
    pid_ns: String,
    boot: String,
}

impl Identity {
    fn of_self() -> Option<Self> {
        static ME: OnceLock<Option<Identity>> = OnceLock::new();
        ME.get_or_init(|| {
            let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
            let (_, start) = parse_stat(&stat)?;
            let pid_ns = std::fs::read_link("/proc/self/ns/pid")
                .ok()?
                .to_string_lossy()
                .into_owned();
            let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
            Some(Identity {
                pid: std::process::id(),
                start,
                pid_ns: word(&pid_ns)?,
                boot: word(&boot)?,
            })
        })
        .clone()
    }

    /// `PID START PID_NS BOOT`, as [`std::fmt::Display`] writes it.
    fn parse(text: &str) -> Option<Self> {
        let mut parts = text.split(' ');
        let identity = Identity {
            pid: parts.next()?.parse().ok()?,
            start: parts.next()?.parse().ok()?,
            pid_ns: parts.next()?.to_string(),
            boot: parts.next()?.to_string(),
        };
        parts.next().is_none().then_some(identity)
    }
}

impl std::fmt::Display for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} {} {}",
            self.pid, self.start, self.pid_ns, self.boot
        )
    }
}

/// `text` trimmed, when it is one non-empty word (so the stored identity splits back).
fn word(text: &str) -> Option<String> {
    let text = text.trim();
    (!text.is_empty() && !text.contains(char::is_whitespace)).then(|| text.to_string())
}

/// The state (field 3) and start time (field 22) of a `/proc/PID/stat` line. The command
/// name (field 2) is in parentheses and may itself hold spaces and parentheses, so the
/// fields are counted from the last `)`.
fn parse_stat(stat: &str) -> Option<(char, u64)> {
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let start = fields.nth(18)?.parse().ok()?;
    Some((state, start))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_from_the_last_parenthesis() {
        let line =
            "42 (a) b (c)) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 200";
        assert_eq!(parse_stat(line), Some(('S', 987_654)));
        assert_eq!(parse_stat("42 (x) Z"), None);
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn this_process_is_alive_and_a_pid_with_another_start_time_is_gone() {
        let me = this_process();
        let Some(id) = Identity::parse(me) else {
            // No /proc here: nothing can be judged, and nothing is.
            assert!(!is_gone(me));
            return;
        };
        assert!(!is_gone(me));
        let reused = Identity {
            start: id.start + 1,
            ..id.clone()
        };
        assert!(
            is_gone(&reused.to_string()),
            "a reused pid is another process"
        );
        let rebooted = Identity {
            boot: "another-boot".into(),
            ..id.clone()
        };
        assert!(is_gone(&rebooted.to_string()));
        let elsewhere = Identity {
            pid: u32::MAX,
            pid_ns: "pid:[1]".into(),
            ..id.clone()
        };
        assert!(!is_gone(&elsewhere.to_string()), "another pid namespace");
        let ended = Identity {
            pid: u32::MAX,
            ..id
        };
        assert!(is_gone(&ended.to_string()));
        for unknown in ["", "123", "1 2 3", "x 2 3 4", "1 2 3 4 5"] {
            assert!(!is_gone(unknown), "{unknown:?}");
        }
    }

    #[test]
    fn on_a_shared_engine_only_this_hosts_ended_processes_are_gone() {
        let me = this_process_on_host();
        assert!(!is_gone_here(me));
        let Some(id) = Identity::parse(this_process()) else {
            return;
        };
        let ended = Identity {
            pid: u32::MAX,
            ..id.clone()
        };
        let rebooted = Identity {
            boot: "another-boot".into(),
            ..id
        };
        for dead in [&ended, &rebooted] {
            assert!(is_gone_here(&format!("{dead} {}", host())));
            // The same identity on another machine: its boot id and pids are its own.
            assert!(!is_gone_here(&format!("{dead} another-host")));
            // No host recorded: which machine it ran on is unknown.
            assert!(!is_gone_here(&dead.to_string()));
        }
    }
}
