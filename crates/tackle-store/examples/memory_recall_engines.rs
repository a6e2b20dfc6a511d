//! `recall` latency over 100,000 memories in one agent's store, on SQLite and, given the URL
//! of an empty PostgreSQL database, on PostgreSQL: the same corpus (the `memory` bench's),
//! the same queries, each engine's p50 / p99.
//!
//! Run: `cargo run --release -p tackle-store --features postgres --example memory_recall_engines -- [postgres://…/empty_db]`
//! (`MEMORIES=N` in the environment changes the count).

use std::time::{Duration, Instant};
use tackle_store::{MemoryAccess, RecallQuery, Store};

const VOCABULARY: usize = 2_000;
const WORDS_PER_VALUE: usize = 12;

/// A small deterministic generator, so every run and every engine stores the same corpus.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn word(i: usize) -> String {
    let letters = b"bcdfghjklmnpqrstvwxz";
    let mut s = String::new();
    let mut n = i;
    loop {
        s.push(letters[n % letters.len()] as char);
        n /= letters.len();
        if n == 0 {
            break;
        }
    }
    s.push('o');
    s
}

fn memory(rng: &mut Rng, i: usize) -> (String, String, Vec<String>) {
    let value: Vec<String> = (0..WORDS_PER_VALUE)
        .map(|_| word(rng.below(VOCABULARY)))
        .collect();
    (
        format!("note-{i}"),
        value.join(" "),
        vec![format!("tag{}", rng.below(20))],
    )
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(idx).copied().unwrap_or_default()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

async fn measure(name: &str, store: &Store, memories: usize) {
    let me = MemoryAccess::own_only("bench");
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let started = Instant::now();
    for i in 0..memories {
        let (k, v, t) = memory(&mut rng, i);
        store
            .remember(&me, None, &k, &v, &t)
            .await
            .expect("remember");
    }
    let fill = started.elapsed();
    println!(
        "{name}: remember {memories} one by one: {:.1} s ({:.0}/s)",
        fill.as_secs_f64(),
        memories as f64 / fill.as_secs_f64()
    );
    let two_words: Vec<RecallQuery> = (0..200)
        .map(|_| RecallQuery {
            query: format!(
                "{} {}",
                word(rng.below(VOCABULARY)),
                word(rng.below(VOCABULARY))
            ),
            tags: vec![],
            limit: 10,
        })
        .collect();
    let tagged: Vec<RecallQuery> = (0..200)
        .map(|_| RecallQuery {
            query: word(rng.below(VOCABULARY)),
            tags: vec![format!("tag{}", rng.below(20))],
            limit: 10,
        })
        .collect();
    let newest = vec![RecallQuery {
        query: String::new(),
        tags: vec![],
        limit: 10,
    }];
    for (label, queries, rounds) in [
        ("2 words, limit 10", &two_words, 5),
        ("1 word + 1 tag, limit 10", &tagged, 5),
        ("no query (newest), limit 10", &newest, 200),
    ] {
        let mut samples = Vec::new();
        let mut hits = 0usize;
        for round in 0..rounds {
            for q in queries.iter() {
                let t = Instant::now();
                let found = store.recall(&me, None, q).await.expect("recall");
                // The first round warms caches and is not counted.
                if round > 0 {
                    samples.push(t.elapsed());
                    hits += found.len();
                }
            }
        }
        samples.sort();
        println!(
            "{name}: recall {label} over {memories}: {} calls, p50 {:.3} ms, p99 {:.3} ms, {:.1} hits/call",
            samples.len(),
            ms(percentile(&samples, 0.5)),
            ms(percentile(&samples, 0.99)),
            hits as f64 / samples.len().max(1) as f64
        );
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let memories: usize = std::env::var("MEMORIES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000);
    let url = std::env::args().nth(1);
    let dir = tempfile::tempdir().expect("tempdir");
    let sqlite = Store::open(dir.path()).expect("sqlite store");
    measure("sqlite", &sqlite, memories).await;
    drop(sqlite);
    if let Some(url) = url {
        let pg_dir = tempfile::tempdir().expect("tempdir");
        let pg = Store::open_with_url(pg_dir.path(), Some(&url)).expect("postgresql store");
        measure("postgresql", &pg, memories).await;
    }
}
