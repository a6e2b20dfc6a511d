//! Records with their row id and place in the chain, for `tackle audit export`.

use super::detail::{detail_from_row, AuditDetail, DETAIL_COLUMNS};
use super::{checked, entry_from_row, AuditEntry, AuditQuery, ENTRY_COLUMNS, ENTRY_COLUMN_COUNT};
use crate::error::StoreError;
use crate::Store;
use rusqlite::params;
use serde::Serialize;

/// One record as exported: its id, its chain position and hash (absent while its call runs,
/// and for records written before the chain), and the record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExportedEntry {
    pub id: i64,
    pub chain_seq: Option<i64>,
    /// Hex SHA-256.
    pub hash: Option<String>,
    #[serde(flatten)]
    pub entry: AuditEntry,
    #[serde(flatten)]
    pub detail: AuditDetail,
}

impl Store {
    /// The records matching `query` (its `limit` keeps the newest), oldest first.
    pub async fn audit_export(&self, query: AuditQuery) -> Result<Vec<ExportedEntry>, StoreError> {
        let since = match &query.since {
            None => None,
            Some(since) => since.lower_bound()?,
        };
        let limit = query
            .limit
            .map(|n| i64::try_from(n).unwrap_or(i64::MAX))
            .unwrap_or(-1);
        self.with_conn(move |conn| {
            let mut stmt = conn.prepare(&format!(
                "SELECT id, chain_seq, hash, {ENTRY_COLUMNS}, {DETAIL_COLUMNS}
                 FROM (SELECT * FROM audit
                       WHERE (?1 IS NULL OR session_id = ?1)
                         AND (?2 IS NULL OR tool = ?2)
                         AND (?3 IS NULL OR ts >= ?3)
                       ORDER BY id DESC LIMIT ?4)
                 ORDER BY id"
            ))?;
            let rows = stmt.query_map(params![query.session, query.tool, since, limit], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, Option<i64>>(1)?,
                    r.get::<_, Option<Vec<u8>>>(2)?,
                    entry_from_row(r, 3)?,
                    detail_from_row(r, 3 + ENTRY_COLUMN_COUNT)?,
                ))
            })?;
            let mut out = Vec::new();
            for row in rows {
                let (id, chain_seq, hash, entry, detail) = row?;
                out.push(ExportedEntry {
                    id,
                    chain_seq,
                    hash: hash.map(|h| super::key::hex(&h)),
                    entry: checked(entry)?,
                    detail,
                });
            }
            Ok(out)
        })
        .await
    }
}
