//! Named leases: one holder at a time for work that must not run twice, such as reading a chat
//! channel's updates (two daemons polling one bot would answer each message twice). A lease is
//! held until its deadline and renewed by its holder; once the deadline passes, anyone may take
//! it. On a shared engine (`state_url: postgres://…`) the daemons of every machine see the same
//! leases (docs/scale-out.md).

use crate::error::StoreError;
use crate::schedules::{from_ms, to_ms};
use crate::sql::{in_tx, vals};
use crate::Store;
use time::OffsetDateTime;

impl Store {
    /// Takes (or renews) the lease `name` for `owner` until `now + ttl`; `false` when someone
    /// else holds it past `now`.
    pub async fn claim_lease(
        &self,
        name: &str,
        owner: &str,
        now: OffsetDateTime,
        ttl: time::Duration,
    ) -> Result<bool, StoreError> {
        let (name, owner) = (name.to_string(), owner.to_string());
        self.with_db(move |db| {
            in_tx(db, |tx| {
                let n = tx.execute(
                    "INSERT INTO leases (name, owner, until_ms) VALUES (?1, ?2, ?3)
                     ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, until_ms = excluded.until_ms
                     WHERE leases.owner = excluded.owner OR leases.until_ms <= ?4",
                    vals![name, owner, to_ms(now + ttl), to_ms(now)],
                )?;
                Ok(n > 0)
            })
        })
        .await
    }

    /// Gives the lease `name` up at once, if `owner` holds it.
    pub async fn release_lease(&self, name: &str, owner: &str) -> Result<(), StoreError> {
        let (name, owner) = (name.to_string(), owner.to_string());
        self.with_db(move |db| {
            db.execute(
                "DELETE FROM leases WHERE name = ?1 AND owner = ?2",
                vals![name, owner],
            )?;
            Ok(())
        })
        .await
    }

    /// Who holds the lease `name` and until when (a lapsed one included).
    pub async fn lease_holder(
        &self,
        name: &str,
    ) -> Result<Option<(String, OffsetDateTime)>, StoreError> {
        let name = name.to_string();
        self.with_db(move |db| {
            let Some(row) = db.query_opt(
                "SELECT owner, until_ms FROM leases WHERE name = ?1",
                vals![name],
            )?
            else {
                return Ok(None);
            };
            let until = row.int(1)?;
            let until = from_ms(until).ok_or(StoreError::BadValue {
                what: "lease time",
                value: until.to_string(),
            })?;
            Ok(Some((row.text(0)?, until)))
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::Duration;

    #[tokio::test]
    async fn one_holder_until_the_lease_lapses() {
        let store = Store::open_in_memory().unwrap();
        let t0 = OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap();
        let ttl = Duration::seconds(30);
        assert!(store.claim_lease("channel:tg", "a", t0, ttl).await.unwrap());
        assert!(!store
            .claim_lease("channel:tg", "b", t0 + Duration::seconds(10), ttl)
            .await
            .unwrap());
        // The holder renews; the other still waits.
        assert!(store
            .claim_lease("channel:tg", "a", t0 + Duration::seconds(20), ttl)
            .await
            .unwrap());
        assert!(!store
            .claim_lease("channel:tg", "b", t0 + Duration::seconds(40), ttl)
            .await
            .unwrap());
        // The holder stops renewing (it died): once lapsed, the other takes it.
        assert!(store
            .claim_lease("channel:tg", "b", t0 + Duration::seconds(51), ttl)
            .await
            .unwrap());
        let (holder, _) = store.lease_holder("channel:tg").await.unwrap().unwrap();
        assert_eq!(holder, "b");
        // A release by someone who does not hold it changes nothing; by the holder, frees it.
        store.release_lease("channel:tg", "a").await.unwrap();
        assert_eq!(
            store.lease_holder("channel:tg").await.unwrap().unwrap().0,
            "b"
        );
        store.release_lease("channel:tg", "b").await.unwrap();
        assert!(store
            .claim_lease("channel:tg", "a", t0 + Duration::seconds(52), ttl)
            .await
            .unwrap());
    }
}
