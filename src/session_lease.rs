//! One daemon at a time serves a session when daemons share their state (`state_url:
//! postgres://…`, docs/scale-out.md): two turns of one conversation taken by two daemons at
//! once would each read the history without the other's entries and interleave their own.
//! A turn holds the session's lease (the store's `claim_session`) from before it reads the
//! history to after its last entry, renewed while it runs; a turn of the same session on
//! another daemon waits, and takes the session over once the lease lapses (its holder died).
//! Without a shared engine the agent's turn lock already keeps the turns apart.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tackle_store::{SessionId, Store, StoreError};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How long a hold lasts without renewal: a daemon that died mid-turn keeps the session from
/// the others at most this long.
const TTL: Duration = Duration::from_secs(30);
/// How often the holder renews, well inside [`TTL`].
const RENEW: Duration = Duration::from_secs(10);
/// How often a turn waiting for the session asks again.
const RETRY: Duration = Duration::from_millis(200);

/// This daemon serves a session until [`SessionHold::release`].
pub(crate) struct SessionHold {
    store: Store,
    id: SessionId,
    owner: String,
    renewing: CancellationToken,
    renewer: JoinHandle<()>,
}

/// Each turn holds as an owner of its own, so a release ends only its own hold.
fn owner() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}#{}",
        crate::waiter::this_process(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

fn ttl() -> time::Duration {
    time::Duration::try_from(TTL).unwrap_or(time::Duration::MINUTE)
}

/// Waits until this daemon serves `session`: `Ok(None)` without a shared engine (nothing to
/// hold) or when `cancel` ends the wait first.
pub(crate) async fn hold(
    store: &Store,
    session: &str,
    cancel: &CancellationToken,
) -> Result<Option<SessionHold>, StoreError> {
    if store.shared_poll().is_none() {
        return Ok(None);
    }
    let id = SessionId::from(session);
    let owner = owner();
    loop {
        let now = time::OffsetDateTime::now_utc();
        if store.claim_session(&id, &owner, now, ttl()).await? {
            break;
        }
        tokio::select! {
            () = cancel.cancelled() => return Ok(None),
            () = tokio::time::sleep(RETRY) => {}
        }
    }
    let renewing = CancellationToken::new();
    let renewer = tokio::spawn(renew(
        store.clone(),
        id.clone(),
        owner.clone(),
        renewing.clone(),
    ));
    Ok(Some(SessionHold {
        store: store.clone(),
        id,
        owner,
        renewing,
        renewer,
    }))
}

/// Keeps the hold alive while the turn runs.
async fn renew(store: Store, id: SessionId, owner: String, stop: CancellationToken) {
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(RENEW) => {}
        }
        let now = time::OffsetDateTime::now_utc();
        match store.claim_session(&id, &owner, now, ttl()).await {
            Ok(true) => {}
            Ok(false) => {
                tracing::warn!("session {id}: another daemon took it over during a turn");
                return;
            }
            Err(e) => tracing::warn!("session {id}: cannot renew its lease: {e}"),
        }
    }
}

impl SessionHold {
    /// Gives the session up at once, so a turn waiting on another daemon need not wait for
    /// the lease to lapse.
    pub(crate) async fn release(self) {
        self.renewing.cancel();
        let _ = self.renewer.await;
        if let Err(e) = self.store.release_session(&self.id, &self.owner).await {
            tracing::warn!("session {}: cannot give up its lease: {e}", self.id);
        }
    }
}
