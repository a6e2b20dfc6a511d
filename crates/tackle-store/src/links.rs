//! Child sessions: the session of an agent another agent started, linked to its parent's
//! session, so `tackle sessions list --tree` can show the tree.

use crate::error::StoreError;
use crate::sessions::SessionId;
use crate::{now_rfc3339, Store};
use rusqlite::params;
use serde::Serialize;

/// One child session's link to its parent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionLink {
    pub id: SessionId,
    pub parent: SessionId,
    /// The child agent's path in the tree (`default › researcher`).
    pub path: String,
}

impl Store {
    /// Starts a new session for `agent`, a child of `parent`, in one transaction.
    pub async fn create_child_session(
        &self,
        agent: &str,
        parent: &SessionId,
        path: &str,
    ) -> Result<SessionId, StoreError> {
        let id = self.create_session(agent).await?;
        let (child, parent, path) = (id.0.clone(), parent.0.clone(), path.to_string());
        self.with_conn(move |conn| {
            conn.execute(
                "INSERT INTO session_links (id, parent_id, tree_path) VALUES (?1, ?2, ?3)",
                params![child, parent, path],
            )?;
            // Touch the parent so a listing by activity shows the tree together.
            conn.execute(
                "UPDATE sessions SET updated_at = ?2 WHERE id = ?1",
                params![parent, now_rfc3339()],
            )?;
            Ok(())
        })
        .await?;
        Ok(id)
    }

    /// Every child session's link.
    pub async fn session_links(&self) -> Result<Vec<SessionLink>, StoreError> {
        self.with_conn(|conn| {
            let mut stmt =
                conn.prepare("SELECT id, parent_id, tree_path FROM session_links ORDER BY rowid")?;
            let rows = stmt.query_map([], |r| {
                Ok(SessionLink {
                    id: SessionId(r.get(0)?),
                    parent: SessionId(r.get(1)?),
                    path: r.get(2)?,
                })
            })?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
        .await
    }
}
