//! Memory: `recall` latency (p50/p99) over 100,000 memories in one agent's store, `remember`
//! throughput with WAL, and the store's size per 100,000 memories.
//! Run: `cargo bench -p tackle-store --bench memory -- --warm-up-time 1 --measurement-time 3`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use std::time::{Duration, Instant};
use tackle_store::{MemoryAccess, RecallQuery, Store};

const MEMORIES: usize = 100_000;
const VOCABULARY: usize = 2_000;
const WORDS_PER_VALUE: usize = 12;

/// A small deterministic generator, so every run stores the same corpus.
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
    // Letters only, so every word is one token: w0 → "ba", w1 → "ca", …
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
    let tags = vec![format!("tag{}", rng.below(20))];
    (format!("note-{i}"), value.join(" "), tags)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(idx).copied().unwrap_or_default()
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    let me = MemoryAccess::own_only("bench");
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);

    // Fill: one transaction per remember, as the tool does it.
    let store = Store::open(dir.path()).expect("store");
    let started = Instant::now();
    rt.block_on(async {
        for i in 0..MEMORIES {
            let (k, v, t) = memory(&mut rng, i);
            store
                .remember(&me, None, &k, &v, &t)
                .await
                .expect("remember");
        }
    });
    let fill = started.elapsed();
    println!(
        "remember {MEMORIES} memories one by one (WAL, synchronous=NORMAL): {:.2} s, {:.0} rows/s",
        fill.as_secs_f64(),
        MEMORIES as f64 / fill.as_secs_f64()
    );
    drop(store);
    let size: u64 = ["tackle.db", "tackle.db-wal"]
        .iter()
        .filter_map(|f| std::fs::metadata(dir.path().join(f)).ok())
        .map(|m| m.len())
        .sum();
    println!(
        "store size with {MEMORIES} memories (after close): {:.1} MiB",
        size as f64 / (1024.0 * 1024.0)
    );

    let store = Store::open(dir.path()).expect("store");
    let queries: Vec<RecallQuery> = (0..200)
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
    let mut samples = Vec::new();
    rt.block_on(async {
        for round in 0..10 {
            for q in &queries {
                let t = Instant::now();
                let hits = store.recall(&me, None, q).await.expect("recall");
                if round > 0 {
                    samples.push(t.elapsed());
                }
                black_box(hits);
            }
        }
    });
    samples.sort();
    println!(
        "recall (2 words, limit 10) over {MEMORIES} memories, {} calls: p50 {:.3} ms, p99 {:.3} ms",
        samples.len(),
        percentile(&samples, 0.5).as_secs_f64() * 1e3,
        percentile(&samples, 0.99).as_secs_f64() * 1e3
    );

    let mut i = 0usize;
    c.bench_function("recall 2 words, limit 10, 100k memories", |b| {
        b.iter(|| {
            i = (i + 1) % queries.len();
            black_box(rt.block_on(store.recall(&me, None, &queries[i])))
        })
    });
    let newest = RecallQuery {
        query: String::new(),
        tags: vec![],
        limit: 10,
    };
    c.bench_function("recall newest first, limit 10, 100k memories", |b| {
        b.iter(|| black_box(rt.block_on(store.recall(&me, None, &newest))))
    });
    let tagged = RecallQuery {
        query: word(7),
        tags: vec!["tag3".into()],
        limit: 10,
    };
    c.bench_function("recall 1 word + 1 tag, limit 10, 100k memories", |b| {
        b.iter(|| black_box(rt.block_on(store.recall(&me, None, &tagged))))
    });

    let mut group = c.benchmark_group("remember");
    group.throughput(Throughput::Elements(1));
    let mut n = MEMORIES;
    group.bench_function("one new memory into a 100k store (WAL)", |b| {
        b.iter(|| {
            n += 1;
            let (k, v, t) = memory(&mut rng, n);
            black_box(rt.block_on(store.remember(&me, None, &k, &v, &t)))
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
