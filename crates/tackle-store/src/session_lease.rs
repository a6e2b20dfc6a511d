//! One daemon at a time serves a session: a turn of a conversation takes the session's lease
//! before it reads the history and gives it up after its last entry, so two turns of one
//! conversation on two daemons sharing the sessions (`state_url: postgres://…`) never
//! interleave their entries. Built on the named leases of `leases`; on SQLite it keeps the
//! processes that share one state directory apart the same way.

use crate::error::StoreError;
use crate::sessions::SessionId;
use crate::Store;
use time::OffsetDateTime;

/// The lease's name for a session: its own namespace among the named leases.
pub fn session_lease_name(id: &SessionId) -> String {
    format!("session:{}", id.as_str())
}

impl Store {
    /// Takes (or renews) the right to serve session `id` for `owner` until `now + ttl`;
    /// `false` while another owner holds it past `now`. A holder that died stops renewing, and
    /// once its lease lapses the next daemon takes the session over.
    pub async fn claim_session(
        &self,
        id: &SessionId,
        owner: &str,
        now: OffsetDateTime,
        ttl: time::Duration,
    ) -> Result<bool, StoreError> {
        self.claim_lease(&session_lease_name(id), owner, now, ttl)
            .await
    }

    /// Gives session `id` up at once, if `owner` serves it.
    pub async fn release_session(&self, id: &SessionId, owner: &str) -> Result<(), StoreError> {
        self.release_lease(&session_lease_name(id), owner).await
    }

    /// Who serves session `id` and until when (a lapsed lease included); `None`: no one.
    pub async fn session_holder(
        &self,
        id: &SessionId,
    ) -> Result<Option<(String, OffsetDateTime)>, StoreError> {
        self.lease_holder(&session_lease_name(id)).await
    }
}
