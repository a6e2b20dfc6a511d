//! The engines a store suite runs on: SQLite, and PostgreSQL on a fresh database where a
//! server is reachable (`.ci/postgres-peers.sh`; otherwise `fresh_database` prints why it
//! skips). Each engine gives a suite the handles of several daemons and raw access to its
//! database, for what someone with write access could do behind the store's back.

#![allow(dead_code)]

#[cfg(feature = "postgres")]
#[path = "../../../../tests/common/postgres.rs"]
pub mod postgres_db;

use tackle_store::{Store, DB_FILE};

/// How many daemons (state directories) a shared engine offers a test.
const DAEMONS: usize = 3;

pub struct Engine {
    pub name: &'static str,
    /// Each daemon's state directory: on PostgreSQL one per daemon, as on separate machines;
    /// SQLite has one (daemons sharing a store share its file).
    dirs: Vec<tempfile::TempDir>,
    /// The shared database; `None`: SQLite.
    pub url: Option<String>,
}

impl Engine {
    fn new(name: &'static str, daemons: usize, url: Option<String>) -> Self {
        Self {
            name,
            dirs: (0..daemons).map(|_| tempfile::tempdir().unwrap()).collect(),
            url,
        }
    }

    /// The first daemon's handle, with its own connection.
    pub fn open(&self) -> Store {
        self.daemon(0)
    }

    /// Daemon `n`'s handle, with its own connection: on PostgreSQL with its own state
    /// directory (and key files); on SQLite another process on the one file.
    pub fn daemon(&self, n: usize) -> Store {
        let dir = self.dirs.get(n).unwrap_or(&self.dirs[0]);
        Store::open_with_url(dir.path(), self.url.as_deref()).unwrap()
    }

    pub fn is_shared(&self) -> bool {
        self.url.is_some()
    }

    /// Runs `sql` as it is on the engine's database.
    pub fn raw(&self, sql: &str) {
        match &self.url {
            None => rusqlite::Connection::open(self.dirs[0].path().join(DB_FILE))
                .unwrap()
                .execute_batch(sql)
                .unwrap(),
            #[cfg(feature = "postgres")]
            Some(url) => {
                postgres_db::rows(url, sql);
            }
            #[cfg(not(feature = "postgres"))]
            Some(_) => unreachable!("no PostgreSQL in this build"),
        }
    }

    /// The first column of every row `sql` returns, as text.
    pub fn column(&self, sql: &str) -> Vec<Option<String>> {
        match &self.url {
            None => {
                let conn = rusqlite::Connection::open(self.dirs[0].path().join(DB_FILE)).unwrap();
                let mut stmt = conn.prepare(sql).unwrap();
                stmt.query_map([], |r| {
                    let v: rusqlite::types::Value = r.get(0)?;
                    Ok(match v {
                        rusqlite::types::Value::Null => None,
                        rusqlite::types::Value::Integer(i) => Some(i.to_string()),
                        rusqlite::types::Value::Text(t) => Some(t),
                        other => Some(format!("{other:?}")),
                    })
                })
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap()
            }
            #[cfg(feature = "postgres")]
            Some(url) => postgres_db::rows(url, sql)
                .into_iter()
                .map(|mut r| r.remove(0))
                .collect(),
            #[cfg(not(feature = "postgres"))]
            Some(_) => unreachable!("no PostgreSQL in this build"),
        }
    }
}

/// Every engine this build has.
pub fn engines() -> Vec<Engine> {
    let mut all = vec![Engine::new("sqlite", 1, None)];
    all.extend(shared());
    all
}

/// PostgreSQL alone, for what only a shared engine does (several machines, one database).
pub fn shared() -> Option<Engine> {
    #[cfg(feature = "postgres")]
    if let Some(url) = postgres_db::fresh_database() {
        return Some(Engine::new("postgresql", DAEMONS, Some(url)));
    }
    None
}
