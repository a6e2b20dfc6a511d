//! One daemon at a time reads a channel when daemons share their state (`state_url:
//! postgres://…`, docs/scale-out.md): two daemons polling one bot would each answer every
//! message. The reader holds the lease `channel:NAME`, renewed before every receive; another
//! daemon waits, and takes the channel over once the lease lapses (its holder died or stopped).
//! Without a shared engine there is one daemon per store, and no lease is taken.

use std::time::Duration;
use tackle_store::Store;
use tokio_util::sync::CancellationToken;

/// How much longer than one receive (the platform's long poll, `inbound.poll_timeout_secs`) a
/// lease holds without renewal, so a reader waiting on its platform never loses the channel;
/// a daemon that died is taken over after at most the poll time and this.
const MARGIN: Duration = Duration::from_secs(10);
/// How often a daemon without the lease asks again.
const RETRY: Duration = Duration::from_secs(2);

pub(crate) struct ChannelLease {
    name: String,
    owner: String,
    ttl: Duration,
    /// Whether this daemon held the lease at its last look (said once each way).
    held: Option<bool>,
}

impl ChannelLease {
    pub(crate) fn new(channel: &str, poll: Duration) -> Self {
        Self {
            name: format!("channel:{channel}"),
            owner: crate::waiter::this_process().to_string(),
            ttl: poll + MARGIN,
            held: None,
        }
    }

    /// Returns once this daemon holds the lease (renewed), or `false` at `stop`.
    pub(crate) async fn hold(
        &mut self,
        store: &Store,
        channel: &str,
        stop: &CancellationToken,
    ) -> bool {
        if store.shared_poll().is_none() {
            return !stop.is_cancelled();
        }
        let ttl = time::Duration::try_from(self.ttl).unwrap_or(time::Duration::MINUTE);
        while !stop.is_cancelled() {
            let now = time::OffsetDateTime::now_utc();
            match store.claim_lease(&self.name, &self.owner, now, ttl).await {
                Ok(true) => {
                    if self.held != Some(true) {
                        eprintln!("daemon: channel {channel}: this daemon reads it");
                    }
                    self.held = Some(true);
                    return true;
                }
                Ok(false) => {
                    if self.held != Some(false) {
                        eprintln!(
                            "daemon: channel {channel} is read by another daemon; this one takes over if that one stops"
                        );
                    }
                    self.held = Some(false);
                }
                Err(e) => tracing::warn!("channel {channel}: cannot take its lease: {e}"),
            }
            tokio::select! {
                () = stop.cancelled() => {}
                () = tokio::time::sleep(RETRY) => {}
            }
        }
        false
    }

    /// Gives the channel up at once on a clean stop, so another daemon need not wait.
    pub(crate) async fn release(&self, store: &Store) {
        if store.shared_poll().is_some() && self.held == Some(true) {
            let _ = store.release_lease(&self.name, &self.owner).await;
        }
    }
}
