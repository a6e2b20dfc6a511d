//! Which process waits for a queued approval, named so that another process on the same
//! machine can tell whether it still runs: `HOST/BOOT/PID/START` (the host name, the kernel's
//! boot id, the process id and its start time in clock ticks since boot, which together never
//! name two processes). An entry whose waiter has ended (kill -9, a crash) can no longer
//! release anything, so [`close_abandoned`] records it `cancelled` with why instead of
//! leaving it answerable until its deadline.

use std::sync::OnceLock;
use tackle_store::{ApprovalStatus, Store, StoreError};
use time::OffsetDateTime;

/// This process's name as a waiter.
pub fn this_process() -> &'static str {
    static ME: OnceLock<String> = OnceLock::new();
    ME.get_or_init(|| {
        let pid = std::process::id();
        format!(
            "{}/{}/{pid}/{}",
            host(),
            boot_id(),
            start_ticks(pid).unwrap_or_default()
        )
    })
}

/// This machine's name (empty where it cannot be read).
pub(crate) fn host() -> String {
    read_trimmed("/proc/sys/kernel/hostname").unwrap_or_default()
}

/// Who holds a fire's lease: `KIND-HOST-PID-MS` (`daemon-…`, `chat-…`), unique per process and
/// across the machines that share one database, and readable in a fire record.
pub(crate) fn lease_owner(kind: &str) -> String {
    let ms = time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000;
    let host: String = host()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.'))
        .take(64)
        .collect();
    let host = if host.is_empty() { "host".into() } else { host };
    format!("{kind}-{host}-{}-{ms}", std::process::id())
}

fn boot_id() -> String {
    read_trimmed("/proc/sys/kernel/random/boot_id").unwrap_or_default()
}

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty() && !s.contains('/'))
}

/// Field 22 of `/proc/PID/stat`, after the command name (which may hold spaces and `)`).
fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, after_name) = stat.rsplit_once(')')?;
    after_name.split_whitespace().nth(19)?.parse().ok()
}

/// Whether `waiter` has certainly ended: named on this machine (same host and boot, or the
/// same host rebooted since) and no process with its id and start time runs. A waiter of
/// another machine, or a name this build cannot read, is taken as alive: its entry ends at
/// its deadline as before.
fn ended(waiter: &str) -> bool {
    let mut parts = waiter.split('/');
    let (Some(h), Some(boot), Some(pid), Some(start), None) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return false;
    };
    let (me_host, me_boot) = (host(), boot_id());
    if h.is_empty() || h != me_host || me_boot.is_empty() {
        return false;
    }
    if boot != me_boot {
        return true;
    }
    let Ok(pid) = pid.parse::<u32>() else {
        return false;
    };
    start_ticks(pid).is_none_or(|ticks| ticks.to_string() != start)
}

/// Records every pending approval whose waiter has ended as `cancelled`; returns their ids.
/// Run before the queue is listed or answered, and when the daemon starts.
pub async fn close_abandoned(store: &Store) -> Result<Vec<String>, StoreError> {
    let mut closed = Vec::new();
    for a in store
        .list_pending_approvals(OffsetDateTime::now_utc())
        .await?
    {
        let Some(waiter) = a.waiter.as_deref().filter(|w| ended(w)) else {
            continue;
        };
        let pid = waiter.split('/').nth(2).unwrap_or("?");
        let why = format!("its waiter ended (process {pid}): no call waits for this answer");
        if let Some(row) = store
            .close_approval(&a.id, ApprovalStatus::Cancelled, &why)
            .await?
        {
            if row.status == ApprovalStatus::Cancelled {
                closed.push(a.id);
            }
        }
    }
    Ok(closed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_process_that_ended_is_not() {
        let me = this_process();
        assert_eq!(me.split('/').count(), 4, "{me}");
        assert!(!ended(me), "{me}");
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let start = start_ticks(pid).unwrap_or_default();
        child.wait().unwrap();
        let gone = format!("{}/{}/{pid}/{start}", host(), boot_id());
        assert!(ended(&gone), "{gone}");
        // Another start time under this pid is another process (the pid was reused).
        let reused = format!("{}/{}/{}/1", host(), boot_id(), std::process::id());
        assert!(ended(&reused), "{reused}");
        // Another boot of this host: ended. Another host, or junk: unknown, so alive.
        assert!(ended(&format!("{}/not-this-boot/1/1", host())));
        for unknown in [
            "other-host/boot/1/1",
            "",
            "a/b",
            "a/b/c/d/e",
            &format!("{}/{}/x/1", host(), boot_id()),
        ] {
            assert!(!ended(unknown), "{unknown}");
        }
    }
}
