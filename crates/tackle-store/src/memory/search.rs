//! Full-text recall, the one part of memory the engines do differently: FTS5 (BM25) in the
//! SQLite file; on PostgreSQL a `tsvector` of the same words, written by the store, ranked
//! by `ts_rank`. Both find the memories holding any query word as a whole word, case and
//! Latin accents aside; equal scores come newest first.

use super::{id_range, MemoryHit};
use crate::error::StoreError;
use crate::sql::{vals, Db, Engine, Row, Val};
use std::collections::BTreeMap;

/// The query words as an FTS5 query: each quoted, joined by OR, so no word is an operator.
pub(super) fn fts5_match(words: &[String]) -> String {
    let quoted: Vec<String> = words.iter().map(|w| format!("\"{w}\"")).collect();
    quoted.join(" OR ")
}

/// Longest word PostgreSQL keeps in a `tsvector` or `tsquery`, in bytes.
const MAX_LEXEME_BYTES: usize = 2047;
/// Highest word position a `tsvector` records, and most positions it keeps per word.
const MAX_POSITION: usize = 16_383;
const MAX_POSITIONS_PER_WORD: usize = 256;

/// A `tsvector` literal of the words of `texts`, split and lowercased as FTS5's unicode61
/// splits them (runs of letters and digits). Written here rather than by the server's
/// `to_tsvector`, whose parser reads e-mail addresses, paths and versions as single words
/// and whose idea of a letter depends on the database's locale: with the words decided in
/// one place, a query finds the same memories on both engines. Words longer than
/// PostgreSQL keeps are left out (no memory holds them there).
pub(super) fn ts_vector(texts: &[&str]) -> String {
    let mut positions: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let words = texts
        .iter()
        .flat_map(|t| t.split(|c: char| !c.is_alphanumeric()))
        .filter(|w| !w.is_empty());
    for (i, w) in words.enumerate() {
        let w = fold(w);
        if w.len() > MAX_LEXEME_BYTES {
            continue;
        }
        let at = (i + 1).min(MAX_POSITION);
        let list = positions.entry(w).or_default();
        if list.len() < MAX_POSITIONS_PER_WORD && list.last() != Some(&at) {
            list.push(at);
        }
    }
    let mut out = String::new();
    for (w, at) in positions {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&lexeme(&w));
        out.push(':');
        let at: Vec<String> = at.iter().map(usize::to_string).collect();
        out.push_str(&at.join(","));
    }
    out
}

/// The query words as a `tsquery` literal (any of them), or `None` when none of them can
/// be in a `tsvector`.
fn ts_query(words: &[String]) -> Option<String> {
    let quoted: Vec<String> = words
        .iter()
        .map(|w| fold(w))
        .filter(|w| w.len() <= MAX_LEXEME_BYTES)
        .map(|w| lexeme(&w))
        .collect();
    (!quoted.is_empty()).then(|| quoted.join(" | "))
}

/// A word as FTS5's unicode61 compares it: lowercase, and without the accents of Latin
/// letters (`Café` is `cafe`), so PostgreSQL finds what SQLite finds. Only the combining
/// diacritical marks (U+0300–U+036F) go; the vowel signs of other scripts are letters.
fn fold(word: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    word.to_lowercase()
        .nfd()
        .filter(|c| !('\u{300}'..='\u{36f}').contains(c))
        .nfc()
        .collect()
}

/// One word quoted for a `tsvector` / `tsquery` literal. The words are letters and digits,
/// but quotes and backslashes are escaped all the same, so no input can change the literal.
fn lexeme(w: &str) -> String {
    format!("'{}'", w.replace('\\', "\\\\").replace('\'', "''"))
}

pub(super) struct Filter<'a> {
    pub(super) scope: i64,
    pub(super) name: &'a str,
    pub(super) tags_json: &'a str,
    pub(super) n_tags: i64,
    pub(super) limit: i64,
}

/// The statements that differ between the engines, all of them here: writing a memory
/// (PostgreSQL stores its words as a `tsvector`; FTS5's triggers index them on SQLite),
/// the full-text search, and the tag filter. The search's parameters are engine-specific
/// too, so [`search`] is the one other place that tells the engines apart.
pub(super) struct SearchSql {
    /// `?1` id, `?2` scope, `?3` key, `?4` value, `?5` tags, `?6` now, and `?7` the
    /// `tsvector` when `indexes_words`.
    pub(super) upsert: &'static str,
    pub(super) indexes_words: bool,
    /// `?1` scope, `?2` limit, `?3` tags (a JSON array of `?4` distinct lowercase tags).
    newest: &'static str,
}

pub(super) fn search_sql(engine: Engine) -> &'static SearchSql {
    match engine {
        Engine::Sqlite => &SQLITE,
        Engine::Postgres => &POSTGRES,
    }
}

/// Every requested tag (`?3`, a JSON array of `?4` distinct lowercase tags) is on `m`; the
/// queries that use it number their other parameters around these two.
macro_rules! sqlite_tags_match {
    () => {
        "(?4 = 0 OR (SELECT COUNT(*) FROM json_each(m.tags) t
      WHERE t.value IN (SELECT value FROM json_each(?3))) = ?4)"
    };
}

/// The same on PostgreSQL: the stored array contains the requested one.
macro_rules! postgres_tags_match {
    () => {
        "(?4 = 0 OR CAST(m.tags AS JSONB) @> CAST(CAST(?3 AS TEXT) AS JSONB))"
    };
}

static SQLITE: SearchSql = SearchSql {
    upsert: "INSERT INTO memories (id, scope, key, value, tags, created_at, updated_at)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)
     ON CONFLICT (scope, key) DO UPDATE SET
        value = excluded.value, tags = excluded.tags, updated_at = excluded.updated_at",
    indexes_words: false,
    newest: concat!(
        "SELECT m.key, m.value, m.tags, m.updated_at, 0.0 FROM memories m
         WHERE m.scope = ?1 AND ",
        sqlite_tags_match!(),
        " ORDER BY m.updated_at DESC, m.id DESC LIMIT ?2"
    ),
};

/// FTS5, untagged: ranked inside FTS5 over the scope's rowid range only, then the best
/// `limit` rows read. `?1` query, `?2 ..= ?3` the range, `?4` limit.
const SQLITE_SEARCH: &str = "SELECT m.key, m.value, m.tags, m.updated_at, -s.score FROM (
        SELECT rowid AS id, bm25(memories_fts) AS score FROM memories_fts
        WHERE memories_fts MATCH ?1 AND rowid BETWEEN ?2 AND ?3
        ORDER BY score, rowid DESC LIMIT ?4
     ) s CROSS JOIN memories m ON m.id = s.id
     ORDER BY s.score, s.id DESC";

/// FTS5 with tags, each match's tags checked before the limit. `?1 ..= ?2` the range,
/// `?3` / `?4` the tags, `?5` query, `?6` limit.
const SQLITE_SEARCH_TAGGED: &str = concat!(
    "SELECT m.key, m.value, m.tags, m.updated_at, -bm25(memories_fts) AS score
     FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid
     WHERE memories_fts MATCH ?5 AND memories_fts.rowid BETWEEN ?1 AND ?2 AND ",
    sqlite_tags_match!(),
    " ORDER BY bm25(memories_fts), m.id DESC LIMIT ?6"
);

static POSTGRES: SearchSql = SearchSql {
    upsert: "INSERT INTO memories (id, scope, key, value, tags, created_at, updated_at, fts)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, CAST(CAST(?7 AS TEXT) AS TSVECTOR))
     ON CONFLICT (scope, key) DO UPDATE SET
        value = excluded.value, tags = excluded.tags, updated_at = excluded.updated_at,
        fts = excluded.fts",
    indexes_words: true,
    newest: concat!(
        "SELECT m.key, m.value, m.tags, m.updated_at, 0 FROM memories m
         WHERE m.scope = ?1 AND ",
        postgres_tags_match!(),
        " ORDER BY m.updated_at DESC, m.id DESC LIMIT ?2"
    ),
};

/// `tsvector` search, tagged or not: `?1` scope, `?2` limit, `?3` / `?4` the tags, `?5`
/// the `tsquery`. `ts_rank` with its length normalisation (rank / (1 + log length)), as
/// BM25 also favours the shorter of two memories holding a word equally often. Ranked on
/// the matches' ids and words only; the best `limit` rows are then read whole.
const POSTGRES_SEARCH: &str = concat!(
    "SELECT r.key, r.value, r.tags, r.updated_at, CAST(s.score AS TEXT) FROM (
        SELECT m.id, ts_rank(m.fts, q.q, 1) AS score
        FROM memories m, (SELECT CAST(CAST(?5 AS TEXT) AS TSQUERY) AS q) q
        WHERE m.scope = ?1 AND m.fts @@ q.q AND ",
    postgres_tags_match!(),
    " ORDER BY score DESC, m.id DESC LIMIT ?2
     ) s JOIN memories r ON r.id = s.id
     ORDER BY s.score DESC, s.id DESC"
);

pub(super) fn newest(db: &mut dyn Db, f: &Filter<'_>) -> Result<Vec<MemoryHit>, StoreError> {
    let sql = search_sql(db.engine());
    let rows = db.query(sql.newest, vals![f.scope, f.limit, f.tags_json, f.n_tags])?;
    rows.iter().map(|r| hit(r, f.name)).collect()
}

/// The best `limit` matches of any of `words`, best first, equal scores newest first.
pub(super) fn search(
    db: &mut dyn Db,
    f: &Filter<'_>,
    words: &[String],
) -> Result<Vec<MemoryHit>, StoreError> {
    let rows = match db.engine() {
        Engine::Sqlite => {
            let (lo, hi) = id_range(f.scope);
            let q = fts5_match(words);
            if f.n_tags == 0 {
                db.query(SQLITE_SEARCH, vals![q, lo, hi, f.limit])?
            } else {
                db.query(
                    SQLITE_SEARCH_TAGGED,
                    vals![lo, hi, f.tags_json, f.n_tags, q, f.limit],
                )?
            }
        }
        Engine::Postgres => {
            // A word too long for a `tsvector` is in no memory there.
            let Some(q) = ts_query(words) else {
                return Ok(Vec::new());
            };
            db.query(
                POSTGRES_SEARCH,
                vals![f.scope, f.limit, f.tags_json, f.n_tags, q],
            )?
        }
    };
    rows.iter().map(|r| hit(r, f.name)).collect()
}

/// A row of `key, value, tags, updated_at` and, when the statement ranks, the score.
pub(super) fn hit(r: &Row, bank: &str) -> Result<MemoryHit, StoreError> {
    let score = match r.0.get(4) {
        None | Some(Val::Null) => 0.0,
        Some(Val::Int(v)) => *v as f64,
        // Each engine hands a real back as its text: SQLite's exactly, PostgreSQL's through
        // a cast in the statement.
        Some(Val::Text(t)) => t.parse::<f64>().map_err(|_| StoreError::BadValue {
            what: "score",
            value: t.clone(),
        })?,
    };
    let tags = r.text(2)?;
    Ok(MemoryHit {
        bank: bank.to_string(),
        key: r.text(0)?,
        value: r.text(1)?,
        // Only this module writes the column, always as a JSON array of strings.
        tags: serde_json::from_str(&tags).unwrap_or_default(),
        updated_at: r.text(3)?,
        score,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_words_postgresql_indexes_are_the_ones_fts5_splits() {
        assert_eq!(
            ts_vector(&["Hello, hello WORLD", "ops@example.com", r#"["it's"]"#]),
            "'com':6 'example':5 'hello':1,2 'it':7 'ops':4 's':8 'world':3"
        );
        // A word longer than a `tsvector` keeps is left out; the rest is still indexed.
        let long = format!("{} needle", "y".repeat(MAX_LEXEME_BYTES + 1));
        assert_eq!(ts_vector(&[&long]), "'needle':2");
        // Positions stop at PostgreSQL's highest, and a word keeps at most its first 256.
        let words: Vec<String> = (0..MAX_POSITION + 10).map(|i| format!("w{i}")).collect();
        let v = ts_vector(&[&words.join(" ")]);
        assert!(v.contains("'w16392':16383"), "a late word is still indexed");
        assert!(v.contains("'w0':1 "));
        let v = ts_vector(&[&"w ".repeat(1000)]);
        assert_eq!(v.matches(',').count() + 1, MAX_POSITIONS_PER_WORD);
        assert!(v.ends_with(",256"), "{v}");
        assert_eq!(
            ts_query(&["it".into(), "x'y".into()]).as_deref(),
            Some("'it' | 'x''y'")
        );
        assert_eq!(ts_query(&["y".repeat(MAX_LEXEME_BYTES + 1)]), None);
        // Accents go as FTS5 drops them; other scripts' signs stay.
        assert_eq!(ts_vector(&["Café NAÏVE"]), "'cafe':1 'naive':2");
        assert_eq!(ts_query(&["crème".into()]).as_deref(), Some("'creme'"));
        assert_eq!(fold("हिन्दी"), "हिन्दी");
    }
}
