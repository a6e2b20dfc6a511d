//! The chat channels' checks: for each channel the daemon reads (`channels.NAME.inbound`), a
//! live probe of its credentials (one call, no retries) and how its reading stood when the
//! daemon last wrote it: when it last read, its last failure, messages not yet answered
//! (docs/decisions/0035-channel-inbox.md).

use super::Check;
use std::path::Path;
use std::time::Duration;
use tackle_protocol::config::Config;
use tackle_store::{ChannelState, Store};
use time::OffsetDateTime;

/// How long one probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

pub(super) async fn checks(config: &Config, store: &Store, state_dir: &Path) -> Vec<Check> {
    let reading = config
        .channels
        .iter()
        .filter(|(_, entry)| entry.inbound().is_some());
    let probes = reading.map(|(name, entry)| async move {
        let label = format!("channel {name} ({})", entry.kind());
        let probe = match crate::channels::open(name, entry, state_dir) {
            Ok(channel) => match tokio::time::timeout(PROBE_TIMEOUT, channel.whoami()).await {
                Ok(Ok(me)) => Ok(me),
                Ok(Err(e)) => Err(e.to_string()),
                Err(_) => Err(format!("no answer within {} s", PROBE_TIMEOUT.as_secs())),
            },
            Err(e) => Err(format!("{e:#}")),
        };
        let state = store.channel_state(name).await;
        check(label, probe, state.ok(), OffsetDateTime::now_utc())
    });
    futures::future::join_all(probes).await
}

/// One channel's line: the probe decides failure; the daemon's last reading adds detail and
/// warns when its last receive failed.
fn check(
    label: String,
    probe: Result<String, String>,
    state: Option<ChannelState>,
    now: OffsetDateTime,
) -> Check {
    let me = match probe {
        Ok(me) => me,
        Err(e) => return Check::fail(label, format!("the probe failed: {e}")).quoting(),
    };
    let Some(state) = state else {
        return Check::ok(label, format!("answers as {me}"));
    };
    let ago = |t: OffsetDateTime| {
        let secs = (now - t).whole_seconds().max(0);
        match secs {
            0..=119 => format!("{secs} s ago"),
            120..=7199 => format!("{} min ago", secs / 60),
            _ => format!("{} h ago", secs / 3600),
        }
    };
    let read = match state.polled {
        Some(t) => format!("last read {}", ago(t)),
        None => "not read by a daemon yet".to_string(),
    };
    let waiting = match state.unanswered {
        0 => String::new(),
        n => format!("; {n} message(s) taken and not yet answered"),
    };
    match (state.error, state.error_at) {
        (Some(error), Some(at)) if state.polled.is_none_or(|p| at > p) => Check::warn(
            label,
            format!(
                "answers as {me}; {read}; its last receive failed {}: {error}{waiting}",
                ago(at)
            ),
        )
        .quoting(),
        _ => Check::ok(label, format!("answers as {me}; {read}{waiting}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::doctor::Status;

    fn at(secs: i64) -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(1_700_000_000 + secs).unwrap()
    }

    #[test]
    fn a_failure_newer_than_the_last_read_warns_and_an_older_one_does_not() {
        let failing = ChannelState {
            polled: Some(at(0)),
            error: Some("the platform answered 502".into()),
            error_at: Some(at(30)),
            ..ChannelState::default()
        };
        let c = check("c".into(), Ok("@bot".into()), Some(failing.clone()), at(40));
        assert!(matches!(c.status, Status::Warn), "{c:?}");
        assert!(
            c.detail.contains("502") && c.detail.contains("10 s ago"),
            "{}",
            c.detail
        );
        let recovered = ChannelState {
            polled: Some(at(35)),
            ..failing
        };
        let c = check("c".into(), Ok("@bot".into()), Some(recovered), at(40));
        assert!(matches!(c.status, Status::Ok), "{c:?}");
    }

    #[test]
    fn a_refused_probe_fails_whatever_the_daemon_last_wrote() {
        let c = check("c".into(), Err("refused".into()), None, at(0));
        assert!(matches!(c.status, Status::Fail), "{c:?}");
    }
}
