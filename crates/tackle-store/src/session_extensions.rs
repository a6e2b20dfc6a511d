//! The extensions switched off for one session (`/disable EXT` in `tackle chat`, the
//! `X-Tackle-Disabled-Extensions` header of the HTTP API), kept with the session so that its
//! next turn, in this process or another (a resumed chat, the daemon's next API request),
//! starts with them off.

use crate::error::StoreError;
use crate::sql::vals;
use crate::Store;

impl Store {
    /// The extensions off in `session`, by name; empty for none (or no such session).
    pub async fn session_disabled_extensions(
        &self,
        session: &str,
    ) -> Result<Vec<String>, StoreError> {
        let session = session.to_string();
        self.with_db(move |db| {
            let text = db
                .query_opt(
                    "SELECT disabled_extensions FROM sessions WHERE id = ?1",
                    vals![session],
                )?
                .map(|r| r.opt_text(0))
                .transpose()?;
            Ok(text
                .flatten()
                .and_then(|t| serde_json::from_str::<Vec<String>>(&t).ok())
                .unwrap_or_default())
        })
        .await
    }

    /// Keeps `off` as the extensions off in `session` (replacing what was kept).
    pub async fn set_session_disabled_extensions(
        &self,
        session: &str,
        off: Vec<String>,
    ) -> Result<(), StoreError> {
        let session = session.to_string();
        self.with_db(move |db| {
            let mut off = off;
            off.sort();
            off.dedup();
            let text = (!off.is_empty()).then(|| serde_json::to_string(&off).unwrap_or_default());
            db.execute(
                "UPDATE sessions SET disabled_extensions = ?2 WHERE id = ?1",
                vals![session, text],
            )?;
            Ok(())
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use crate::Store;

    #[tokio::test]
    async fn the_extensions_off_are_kept_with_the_session_and_replaced_whole() {
        let store = Store::open_in_memory().unwrap();
        let s = store.create_session("default").await.unwrap();
        assert!(store
            .session_disabled_extensions(s.as_str())
            .await
            .unwrap()
            .is_empty());
        store
            .set_session_disabled_extensions(
                s.as_str(),
                vec!["web".into(), "git".into(), "web".into()],
            )
            .await
            .unwrap();
        assert_eq!(
            store.session_disabled_extensions(s.as_str()).await.unwrap(),
            ["git", "web"]
        );
        store
            .set_session_disabled_extensions(s.as_str(), vec![])
            .await
            .unwrap();
        assert!(store
            .session_disabled_extensions(s.as_str())
            .await
            .unwrap()
            .is_empty());
        // Another session is untouched, an unknown one reads as none.
        assert!(store
            .session_disabled_extensions("nope")
            .await
            .unwrap()
            .is_empty());
    }
}
