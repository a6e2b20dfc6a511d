//! A session's taint (docs/decisions/0033-taint-gates-sinks.md), kept with the session: the
//! untrusted content it read stays in its history, so a resumed session (the next turn of a
//! chat or an API conversation, `tackle run --session`) must start as tainted as it ended.

use crate::error::StoreError;
use crate::Store;
use rusqlite::{params, OptionalExtension};
use serde::{Deserialize, Serialize};

/// Where a session's untrusted content came from: the first few sources and how many results.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TaintRecord {
    pub sources: Vec<String>,
    pub count: u64,
}

impl Store {
    /// The taint kept for `session`; `None` when it never read untrusted content.
    pub async fn session_taint(&self, session: &str) -> Result<Option<TaintRecord>, StoreError> {
        let session = session.to_string();
        self.with_conn(move |conn| {
            let text: Option<Option<String>> = conn
                .query_row(
                    "SELECT taint FROM sessions WHERE id = ?1",
                    [&session],
                    |r| r.get(0),
                )
                .optional()?;
            Ok(text
                .flatten()
                .and_then(|t| serde_json::from_str::<TaintRecord>(&t).ok()))
        })
        .await
    }

    /// Keeps `taint` as `session`'s; a taint only grows, so a smaller count never replaces
    /// a larger one (two writers of one session cannot clean it).
    pub async fn set_session_taint(
        &self,
        session: &str,
        taint: TaintRecord,
    ) -> Result<(), StoreError> {
        let session = session.to_string();
        self.with_conn(move |conn| {
            let text = serde_json::to_string(&taint).unwrap_or_default();
            let count = i64::try_from(taint.count).unwrap_or(i64::MAX);
            conn.execute(
                "UPDATE sessions SET taint = ?2
                 WHERE id = ?1
                   AND (taint IS NULL OR COALESCE(json_extract(taint, '$.count'), 0) < ?3)",
                params![session, text, count],
            )?;
            Ok(())
        })
        .await
    }
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
