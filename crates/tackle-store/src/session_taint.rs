//! A session's taint (docs/decisions/0033-taint-gates-sinks.md), kept with the session: the
//! untrusted content it read stays in its history, so a resumed session (the next turn of a
//! chat or an API conversation, `tackle run --session`) must start as tainted as it ended.

use crate::error::StoreError;
use crate::sql::{in_tx, vals};
use crate::Store;
use serde::{Deserialize, Serialize};

/// Where a session's untrusted content came from: the first few sources and how many results.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TaintRecord {
    /// The first few sources of untrusted content (a URL, a tool), in the order read.
    pub sources: Vec<String>,
    /// How many untrusted results the session read in all.
    pub count: u64,
}

impl Store {
    /// The taint kept for `session`; `None` when it never read untrusted content.
    pub async fn session_taint(&self, session: &str) -> Result<Option<TaintRecord>, StoreError> {
        let session = session.to_string();
        self.with_db(move |db| {
            let text = db
                .query_opt("SELECT taint FROM sessions WHERE id = ?1", vals![session])?
                .map(|r| r.opt_text(0))
                .transpose()?
                .flatten();
            Ok(text.as_deref().and_then(parse))
        })
        .await
    }

    /// Keeps `taint` as `session`'s; a taint only grows, so a smaller count never replaces
    /// a larger one (two writers of one session, on one daemon or two, cannot clean it).
    pub async fn set_session_taint(
        &self,
        session: &str,
        taint: TaintRecord,
    ) -> Result<(), StoreError> {
        let session = session.to_string();
        self.with_db(move |db| {
            let text = serde_json::to_string(&taint).unwrap_or_default();
            in_tx(db, |tx| {
                // The kept count is compared here, not in SQL (whose JSON functions differ
                // between engines); the row stays locked until the update.
                let read = format!(
                    "SELECT taint FROM sessions WHERE id = ?1{}",
                    tx.for_update()
                );
                let Some(row) = tx.query_opt(&read, vals![&session])? else {
                    return Ok(());
                };
                let kept = row.opt_text(0)?;
                let larger = match kept.as_deref() {
                    None => true,
                    Some(k) => kept_count(k) < taint.count,
                };
                if larger {
                    tx.execute(
                        "UPDATE sessions SET taint = ?2 WHERE id = ?1",
                        vals![&session, text],
                    )?;
                }
                Ok(())
            })
        })
        .await
    }
}

fn parse(text: &str) -> Option<TaintRecord> {
    serde_json::from_str::<TaintRecord>(text).ok()
}

/// The count a kept taint records; 0 when it names none (as `COALESCE(json_extract(…), 0)`
/// read it before).
fn kept_count(text: &str) -> u64 {
    serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .and_then(|v| v.get("count").and_then(serde_json::Value::as_u64))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::TaintRecord;
    use crate::{SessionId, Store};

    #[tokio::test]
    async fn a_taint_is_kept_and_only_grows() {
        let store = Store::open_in_memory().unwrap();
        store
            .ensure_session(&SessionId::from("s1"), "a")
            .await
            .unwrap();
        assert_eq!(store.session_taint("s1").await.unwrap(), None);
        let two = TaintRecord {
            sources: vec!["https://a.example/".into()],
            count: 2,
        };
        store.set_session_taint("s1", two.clone()).await.unwrap();
        assert_eq!(store.session_taint("s1").await.unwrap(), Some(two.clone()));
        let one = TaintRecord {
            sources: vec![],
            count: 1,
        };
        store.set_session_taint("s1", one).await.unwrap();
        assert_eq!(store.session_taint("s1").await.unwrap(), Some(two));
        // Another session is its own.
        assert_eq!(store.session_taint("s2").await.unwrap(), None);
    }
}
