//! Memory banks: named key/value notes the model can store and find again by full-text
//! search (SQLite FTS5, ranked by BM25).

use crate::error::StoreError;
use crate::{now_rfc3339, Store};
use rusqlite::{params, Connection};
use serde::{Deserialize, Serialize};

/// One recalled note.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryHit {
    pub bank: String,
    pub key: String,
    pub value: String,
    pub updated_at: String,
    /// BM25 relevance, higher is better; 0 when listed without a query.
    pub score: f64,
}

/// A bank and how many notes it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BankInfo {
    pub name: String,
    pub entries: i64,
}

impl Store {
    /// Stores `value` under `key` in `bank`, replacing what was there.
    pub async fn remember(&self, bank: &str, key: &str, value: &str) -> Result<(), StoreError> {
        let (bank, key, value) = (bank.to_string(), key.to_string(), value.to_string());
        self.with_conn(move |conn| {
            conn.execute(
                "INSERT INTO memory (bank, key, value, updated_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (bank, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                params![bank, key, value, now_rfc3339()],
            )?;
            Ok(())
        })
        .await
    }

    /// Removes `key` from `bank`; returns whether it was there.
    pub async fn forget(&self, bank: &str, key: &str) -> Result<bool, StoreError> {
        let (bank, key) = (bank.to_string(), key.to_string());
        self.with_conn(move |conn| {
            let n = conn.execute(
                "DELETE FROM memory WHERE bank = ?1 AND key = ?2",
                params![bank, key],
            )?;
            Ok(n > 0)
        })
        .await
    }

    /// The notes that best match `query` (any of its words, in key or value), best first.
    /// `bank: None` searches every bank. A query with no words lists the newest notes.
    /// The query is plain text: FTS5 operators in it are matched as words, not obeyed.
    pub async fn recall(
        &self,
        bank: Option<&str>,
        query: &str,
        limit: usize,
    ) -> Result<Vec<MemoryHit>, StoreError> {
        let bank = bank.map(str::to_string);
        let fts = fts_query(query);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.with_conn(move |conn| match fts {
            Some(q) => search(conn, bank.as_deref(), &q, limit),
            None => newest(conn, bank.as_deref(), limit),
        })
        .await
    }

    /// Every bank with its note count, by name.
    pub async fn list_banks(&self) -> Result<Vec<BankInfo>, StoreError> {
        self.with_conn(|conn| {
            let mut stmt =
                conn.prepare("SELECT bank, COUNT(*) FROM memory GROUP BY bank ORDER BY bank")?;
            let rows = stmt.query_map([], |r| {
                Ok(BankInfo {
                    name: r.get(0)?,
                    entries: r.get(1)?,
                })
            })?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
        .await
    }
}

/// Plain words → `"w1" OR "w2"`: each word quoted, so `NEAR`, `*`, `:` or quotes in the
/// query cannot change its meaning or make it a syntax error.
fn fts_query(query: &str) -> Option<String> {
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(32)
        .map(|w| format!("\"{w}\""))
        .collect();
    (!words.is_empty()).then(|| words.join(" OR "))
}

fn search(
    conn: &Connection,
    bank: Option<&str>,
    q: &str,
    limit: i64,
) -> Result<Vec<MemoryHit>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT m.bank, m.key, m.value, m.updated_at, -bm25(memory_fts) AS score
         FROM memory_fts JOIN memory m ON m.rowid = memory_fts.rowid
         WHERE memory_fts MATCH ?1 AND (?2 IS NULL OR m.bank = ?2)
         ORDER BY bm25(memory_fts) LIMIT ?3",
    )?;
    let rows = stmt.query_map(params![q, bank, limit], hit)?;
    Ok(rows.collect::<Result<Vec<_>, _>>()?)
}

fn newest(conn: &Connection, bank: Option<&str>, limit: i64) -> Result<Vec<MemoryHit>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT bank, key, value, updated_at, 0.0 FROM memory
         WHERE (?1 IS NULL OR bank = ?1) ORDER BY updated_at DESC, rowid DESC LIMIT ?2",
    )?;
    let rows = stmt.query_map(params![bank, limit], hit)?;
    Ok(rows.collect::<Result<Vec<_>, _>>()?)
}

fn hit(r: &rusqlite::Row<'_>) -> rusqlite::Result<MemoryHit> {
    Ok(MemoryHit {
        bank: r.get(0)?,
        key: r.get(1)?,
        value: r.get(2)?,
        updated_at: r.get(3)?,
        score: r.get(4)?,
    })
}
