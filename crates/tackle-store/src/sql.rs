//! The statements that must run on both engines (SQLite, and PostgreSQL where the schedules
//! live there; docs/decisions/0038-shared-schedules-on-postgresql.md) go through [`Db`]: one
//! SQL text, `?N` placeholders, values as [`Val`]. Each engine adapts the text (PostgreSQL
//! wants `$N`) and converts the values; the statements themselves keep to what both engines
//! read alike (`ON CONFLICT DO NOTHING`, `IS NOT DISTINCT FROM`, integers for flags).

use crate::error::StoreError;

/// A value bound to a statement or read back from a row. Flags are integers (0 / 1) on both
/// engines, so the same comparison (`enabled = 1`) means the same everywhere.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Val {
    Null,
    Int(i64),
    Text(String),
}

impl From<i64> for Val {
    fn from(v: i64) -> Self {
        Val::Int(v)
    }
}

impl From<u32> for Val {
    fn from(v: u32) -> Self {
        Val::Int(i64::from(v))
    }
}

impl From<bool> for Val {
    fn from(v: bool) -> Self {
        Val::Int(i64::from(v))
    }
}

impl From<&str> for Val {
    fn from(v: &str) -> Self {
        Val::Text(v.to_string())
    }
}

impl From<String> for Val {
    fn from(v: String) -> Self {
        Val::Text(v)
    }
}

impl From<&String> for Val {
    fn from(v: &String) -> Self {
        Val::Text(v.clone())
    }
}

impl<T: Into<Val>> From<Option<T>> for Val {
    fn from(v: Option<T>) -> Self {
        v.map_or(Val::Null, Into::into)
    }
}

/// `vals![a, b, c]`: the statement's values in placeholder order.
macro_rules! vals {
    ($($v:expr),* $(,)?) => { &[$($crate::sql::Val::from($v)),*][..] };
}
pub(crate) use vals;

/// One row read back, its columns in the order of the `SELECT`.
#[derive(Debug, Clone)]
pub(crate) struct Row(pub(crate) Vec<Val>);

impl Row {
    fn col(&self, i: usize) -> Result<&Val, StoreError> {
        self.0.get(i).ok_or_else(|| StoreError::BadValue {
            what: "column",
            value: i.to_string(),
        })
    }

    pub(crate) fn opt_int(&self, i: usize) -> Result<Option<i64>, StoreError> {
        match self.col(i)? {
            Val::Null => Ok(None),
            Val::Int(v) => Ok(Some(*v)),
            Val::Text(t) => Err(StoreError::BadValue {
                what: "integer",
                value: t.clone(),
            }),
        }
    }

    pub(crate) fn int(&self, i: usize) -> Result<i64, StoreError> {
        self.opt_int(i)?.ok_or(StoreError::BadValue {
            what: "integer",
            value: "NULL".into(),
        })
    }

    pub(crate) fn opt_u32(&self, i: usize) -> Result<Option<u32>, StoreError> {
        self.opt_int(i)?
            .map(|v| {
                u32::try_from(v).map_err(|_| StoreError::BadValue {
                    what: "count",
                    value: v.to_string(),
                })
            })
            .transpose()
    }

    pub(crate) fn u32(&self, i: usize) -> Result<u32, StoreError> {
        self.opt_u32(i)?.ok_or(StoreError::BadValue {
            what: "count",
            value: "NULL".into(),
        })
    }

    pub(crate) fn flag(&self, i: usize) -> Result<bool, StoreError> {
        Ok(self.int(i)? != 0)
    }

    pub(crate) fn opt_text(&self, i: usize) -> Result<Option<String>, StoreError> {
        match self.col(i)? {
            Val::Null => Ok(None),
            Val::Text(t) => Ok(Some(t.clone())),
            Val::Int(v) => Err(StoreError::BadValue {
                what: "text",
                value: v.to_string(),
            }),
        }
    }

    pub(crate) fn text(&self, i: usize) -> Result<String, StoreError> {
        self.opt_text(i)?.ok_or(StoreError::BadValue {
            what: "text",
            value: "NULL".into(),
        })
    }
}

/// Which engine a [`Db`] is, for the few things the two engines cannot share: full-text
/// search (FTS5 on SQLite, `tsvector` on PostgreSQL), and how audit-chain writers take turns
/// and number their rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) enum Engine {
    /// The store's own file, one process's connection at a time.
    Sqlite,
    /// PostgreSQL shared by several daemons (`state_url`).
    Postgres,
}

/// A connection to one engine.
pub(crate) trait Db {
    /// The engine behind this connection.
    fn engine(&self) -> Engine;
    /// Runs a statement; the number of rows it changed.
    fn execute(&mut self, sql: &str, args: &[Val]) -> Result<usize, StoreError>;
    /// Runs a query; every row.
    fn query(&mut self, sql: &str, args: &[Val]) -> Result<Vec<Row>, StoreError>;
    /// Runs an `INSERT` into a table whose key is `id`; the new row's id.
    fn insert(&mut self, sql: &str, args: &[Val]) -> Result<i64, StoreError>;
    /// Starts a transaction that will write: SQLite takes its write lock at once
    /// (`IMMEDIATE`); PostgreSQL locks rows as statements reach them.
    fn begin(&mut self) -> Result<(), StoreError>;
    fn commit(&mut self) -> Result<(), StoreError>;
    fn rollback(&mut self);
    /// Appended to a `SELECT` whose rows the transaction then changes: PostgreSQL locks them
    /// (a second daemon waits, then sees the first one's change); SQLite's `IMMEDIATE`
    /// transaction already holds the whole database.
    fn for_update(&self) -> &'static str;

    /// The first row, if any.
    fn query_opt(&mut self, sql: &str, args: &[Val]) -> Result<Option<Row>, StoreError> {
        Ok(self.query(sql, args)?.into_iter().next())
    }
}

/// Runs `f` in one transaction: committed when it returns `Ok`, rolled back otherwise.
pub(crate) fn in_tx<T>(
    db: &mut dyn Db,
    f: impl FnOnce(&mut dyn Db) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    db.begin()?;
    match f(db) {
        Ok(v) => {
            if let Err(e) = db.commit() {
                db.rollback();
                return Err(e);
            }
            Ok(v)
        }
        Err(e) => {
            db.rollback();
            Err(e)
        }
    }
}

/// SQLite through the store's one connection.
pub(crate) struct Lite<'c>(pub(crate) &'c rusqlite::Connection);

impl rusqlite::ToSql for Val {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, Value, ValueRef};
        Ok(match self {
            Val::Null => ToSqlOutput::Owned(Value::Null),
            Val::Int(v) => ToSqlOutput::Owned(Value::Integer(*v)),
            Val::Text(t) => ToSqlOutput::Borrowed(ValueRef::Text(t.as_bytes())),
        })
    }
}

impl Db for Lite<'_> {
    fn engine(&self) -> Engine {
        Engine::Sqlite
    }

    fn execute(&mut self, sql: &str, args: &[Val]) -> Result<usize, StoreError> {
        let mut stmt = self.0.prepare_cached(sql)?;
        Ok(stmt.execute(rusqlite::params_from_iter(args))?)
    }

    fn query(&mut self, sql: &str, args: &[Val]) -> Result<Vec<Row>, StoreError> {
        use rusqlite::types::ValueRef;
        let mut stmt = self.0.prepare_cached(sql)?;
        let width = stmt.column_count();
        let mut rows = stmt.query(rusqlite::params_from_iter(args))?;
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            let mut cols = Vec::with_capacity(width);
            for i in 0..width {
                cols.push(match r.get_ref(i)? {
                    ValueRef::Null => Val::Null,
                    ValueRef::Integer(v) => Val::Int(v),
                    // Only integers and text are stored by these statements; a real is read
                    // as the integer it holds, a blob as text, so nothing is silently lost
                    // in a way a caller could not see (it fails its type check instead).
                    ValueRef::Real(v) => Val::Text(v.to_string()),
                    ValueRef::Text(t) | ValueRef::Blob(t) => {
                        Val::Text(String::from_utf8_lossy(t).into_owned())
                    }
                });
            }
            out.push(Row(cols));
        }
        Ok(out)
    }

    fn insert(&mut self, sql: &str, args: &[Val]) -> Result<i64, StoreError> {
        self.execute(sql, args)?;
        Ok(self.0.last_insert_rowid())
    }

    fn begin(&mut self) -> Result<(), StoreError> {
        Ok(self.0.execute_batch("BEGIN IMMEDIATE")?)
    }

    fn commit(&mut self) -> Result<(), StoreError> {
        Ok(self.0.execute_batch("COMMIT")?)
    }

    fn rollback(&mut self) {
        let _ = self.0.execute_batch("ROLLBACK");
    }

    fn for_update(&self) -> &'static str {
        ""
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_transaction_leaves_nothing_behind() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
            .unwrap();
        let mut db = Lite(&conn);
        let failed: Result<(), StoreError> = in_tx(&mut db, |db| {
            db.execute("INSERT INTO t (v) VALUES (?1)", vals!["kept?"])?;
            Err(StoreError::Task("stop".into()))
        });
        assert!(failed.is_err());
        let id = in_tx(&mut db, |db| {
            db.insert("INSERT INTO t (v) VALUES (?1)", vals![Some("x")])
        })
        .unwrap();
        let rows = db.query("SELECT id, v FROM t", &[]).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].int(0).unwrap(), id);
        assert_eq!(rows[0].text(1).unwrap(), "x");
    }
}
