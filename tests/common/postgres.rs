//! A fresh PostgreSQL database per test, on the throwaway cluster `.ci/postgres-peers.sh`
//! starts (its URL in `.ci/postgres.url`) or the one `TACKLE_TEST_POSTGRES_URL` names.
//! Included by path from the store's tests as well, so both suites reach it the same way.

use std::sync::atomic::{AtomicU32, Ordering};

/// The URL of a new, empty database, or `None` with the reason printed (the test then skips).
pub fn fresh_database() -> Option<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    // The store crate sits two levels below the repository's root.
    let candidates = [
        root.join(".ci/postgres.url"),
        root.join("../../.ci/postgres.url"),
    ];
    let base = std::env::var("TACKLE_TEST_POSTGRES_URL").ok().or_else(|| {
        candidates
            .iter()
            .find_map(|p| std::fs::read_to_string(p).ok())
            .map(|s| s.trim().to_string())
    });
    let Some(base) = base.filter(|b| !b.is_empty()) else {
        eprintln!(
            "SKIP: no PostgreSQL (run .ci/postgres-peers.sh or set TACKLE_TEST_POSTGRES_URL)"
        );
        return None;
    };
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let name = format!(
        "t_{}_{}_{}",
        std::process::id(),
        nanos,
        N.fetch_add(1, Ordering::Relaxed)
    );
    // On a thread of its own: the synchronous client may not run inside a test's runtime.
    let created = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let mut client = postgres::Client::connect(&base, postgres::NoTls)?;
                client.batch_execute(&format!("CREATE DATABASE {name}"))
            })
            .join()
    });
    match created {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            eprintln!("SKIP: PostgreSQL at {base} is not reachable: {e}");
            return None;
        }
        Err(_) => panic!("creating a test database panicked"),
    }
    // The same URL with the new database's name as its path.
    let (head, query) = base.split_once('?').unwrap_or((base.as_str(), ""));
    let server = head.rsplit_once('/').map_or(head, |(s, _)| s);
    Some(if query.is_empty() {
        format!("{server}/{name}")
    } else {
        format!("{server}/{name}?{query}")
    })
}

/// Every row `sql` returns, each column as text (NULL as `None`), read on a thread of its own.
pub fn rows(url: &str, sql: &str) -> Vec<Vec<Option<String>>> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let mut client =
                    postgres::Client::connect(url, postgres::NoTls).expect("connect to PostgreSQL");
                client
                    .simple_query(sql)
                    .expect("query PostgreSQL")
                    .into_iter()
                    .filter_map(|m| match m {
                        postgres::SimpleQueryMessage::Row(r) => {
                            Some((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect())
                        }
                        _ => None,
                    })
                    .collect()
            })
            .join()
            .expect("the query thread")
    })
}
