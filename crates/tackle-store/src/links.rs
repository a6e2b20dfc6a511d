//! Child sessions: the session of an agent another agent started, linked to its parent's
//! session, so `tackle sessions list --tree` can show the tree.

use crate::error::StoreError;
use crate::sessions::{insert_new_session, insert_signed, Entry, SessionId, Signer, StoredEntry};
use crate::sql::{in_tx, vals};
use crate::{now_rfc3339, Store};
use serde::Serialize;

/// One child session's link to its parent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionLink {
    /// The child session.
    pub id: SessionId,
    /// The session of the agent that started it.
    pub parent: SessionId,
    /// The child agent's path in the tree (`default › researcher`).
    pub path: String,
}

impl Store {
    /// Starts a new session for `agent`, a child of `parent` at `path` in the tree, with
    /// `first` as its first entry (the child's task), in one transaction: a child is started
    /// on the way to its first model request, where each separate write would cost a commit
    /// and a trip to the blocking pool; and a child session never exists without its link.
    pub async fn create_child_session(
        &self,
        agent: &str,
        parent: &SessionId,
        path: &str,
        first: Entry,
    ) -> Result<StoredEntry, StoreError> {
        let (agent, parent, path) = (agent.to_string(), parent.0.clone(), path.to_string());
        let keys = self.agent_keys.clone();
        let shared = self.sessions_shared();
        self.with_db(move |db| {
            in_tx(db, |tx| {
                let now = now_rfc3339();
                let id = insert_new_session(tx, &agent, &now)?;
                tx.execute(
                    "INSERT INTO session_links (id, parent_id, tree_path) VALUES (?1, ?2, ?3)",
                    vals![&id.0, &parent, &path],
                )?;
                // Touch the parent so a listing by activity shows the tree together.
                tx.execute(
                    "UPDATE sessions SET updated_at = ?2 WHERE id = ?1",
                    vals![&parent, &now],
                )?;
                let signer = Signer {
                    keys: &keys,
                    shared,
                };
                let entry_id = insert_signed(tx, signer, &agent, &id.0, 1, &first, &now)?;
                Ok(StoredEntry {
                    id: entry_id,
                    session_id: id,
                    seq: 1,
                    kind: first.kind,
                    content: first.content,
                    created_at: now,
                })
            })
        })
        .await
    }

    /// Every child session's link.
    pub async fn session_links(&self) -> Result<Vec<SessionLink>, StoreError> {
        self.with_db(|db| {
            db.query(
                "SELECT id, parent_id, tree_path FROM session_links ORDER BY rowid",
                &[],
            )?
            .iter()
            .map(|r| {
                Ok(SessionLink {
                    id: SessionId(r.text(0)?),
                    parent: SessionId(r.text(1)?),
                    path: r.text(2)?,
                })
            })
            .collect()
        })
        .await
    }
}
