//! Records with their row id and place in the chain, for `tackle audit export`.

use super::detail::{detail_from, AuditDetail, DETAIL_COLUMNS};
use super::{
    checked, entry_from, AuditEntry, AuditQuery, Matching, ENTRY_COLUMNS, ENTRY_COLUMN_COUNT,
};
use crate::error::StoreError;
use crate::Store;
use serde::Serialize;

/// One record as exported: its id, its chain position and hash (absent while its call runs,
/// and for records written before the chain), and the record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExportedEntry {
    /// Row id, as `#17` in `tackle audit verify`'s findings.
    pub id: i64,
    /// Chain position (`None` while its call runs, and for records written before the chain).
    pub chain_seq: Option<i64>,
    /// Hex SHA-256.
    pub hash: Option<String>,
    /// The record.
    #[serde(flatten)]
    pub entry: AuditEntry,
    /// The fields beyond the summary: layer, digests, redacted arguments.
    #[serde(flatten)]
    pub detail: AuditDetail,
}

impl Store {
    /// The records matching `query` (its `limit` keeps the newest), oldest first.
    pub async fn audit_export(&self, query: AuditQuery) -> Result<Vec<ExportedEntry>, StoreError> {
        let matching = Matching::of(query)?;
        self.with_db(move |db| {
            let rows = matching.newest(
                db,
                &format!("id, chain_seq, hex(hash), {ENTRY_COLUMNS}, {DETAIL_COLUMNS}"),
            )?;
            rows.iter()
                .map(|r| {
                    Ok(ExportedEntry {
                        id: r.int(0)?,
                        chain_seq: r.opt_int(1)?,
                        // SQLite's hex() is upper case and gives '' for no hash.
                        hash: r
                            .opt_text(2)?
                            .filter(|h| !h.is_empty())
                            .map(|h| h.to_ascii_lowercase()),
                        entry: checked(entry_from(r, 3)?)?,
                        detail: detail_from(r, 3 + ENTRY_COLUMN_COUNT)?,
                    })
                })
                .collect()
        })
        .await
    }
}
