//! The tamper-evident audit log: what chaining and signing add to a call's audit writes, and
//! `audit verify` over 100,000 records.
//!
//! The unchained side is the write the log did before the chain, on the same schema and
//! connection settings through its own connection: one INSERT (a refusal), or an INSERT and
//! an UPDATE (a call that runs: intent, outcome). The chained side is the store's API, which
//! also goes through its async wrapper, so the difference overstates the chain's cost a little.
//!
//! Run: `cargo bench -p tackle-store --bench audit_chain -- --warm-up-time 1 --measurement-time 5`.

use criterion::{criterion_group, criterion_main, Criterion};
use rusqlite::{params, Connection};
use std::time::{Duration, Instant};
use tackle_protocol::Verdict;
use tackle_store::{AuditDetail, AuditEntry, AuditOutcome, AuditRecord, Store, DB_FILE};

const VERIFY_RECORDS: usize = 100_000;

fn entry(i: u64) -> AuditEntry {
    AuditEntry {
        record: AuditRecord {
            ts: String::new(),
            session_id: Some("mcp-serve-6760a1b2-1f2e3d4c-stdio".into()),
            agent: "default".into(),
            tool: "calculate".into(),
            args_summary: format!("{{\"expression\":\"2 * pi * {i}\"}}"),
            verdict: Verdict::Allow,
            rule: String::new(),
            why: String::new(),
            approver: Some("policy".into()),
            outcome: "ok".into(),
            duration_ms: Some(1),
        },
        caller: "mcp".into(),
    }
}

/// What the dispatcher records besides the entry: the layer, the argument digest and the
/// redacted arguments (the result digest comes with the outcome).
fn detail(e: &AuditEntry) -> AuditDetail {
    let mut d = AuditDetail {
        layer: "approval".into(),
        args_digest: Some(tackle_store::text_digest(&e.record.args_summary)),
        ..AuditDetail::default()
    };
    d.keep_arguments(&e.record.args_summary);
    d
}

fn outcome() -> AuditOutcome {
    AuditOutcome {
        outcome: "ok".into(),
        rule: String::new(),
        why: String::new(),
        duration_ms: Some(1),
        layer: String::new(),
        result_digest: Some(tackle_store::text_digest("6.283185307179586")),
    }
}

/// The pre-chain writes, on their own connection to a migrated database.
struct Unchained(Connection);

impl Unchained {
    fn open(dir: &std::path::Path) -> Self {
        drop(Store::open(dir).unwrap());
        let conn = Connection::open(dir.join(DB_FILE)).unwrap();
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
        conn.pragma_update(None, "synchronous", "NORMAL").unwrap();
        // Checkpoints are taken off the timed path (see `timed`), as the store takes them.
        conn.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        Self(conn)
    }

    fn insert(&self, i: u64, owner: Option<&str>) -> i64 {
        let e = entry(i);
        let r = &e.record;
        self.0
            .prepare_cached(
                "INSERT INTO audit (ts, session_id, agent, tool, args_summary, verdict, rule, why, approver, outcome, duration_ms, caller, owner)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
            )
            .unwrap()
            .execute(params![
                "2026-12-06T10:00:00.000000Z",
                r.session_id,
                r.agent,
                r.tool,
                r.args_summary,
                "allow",
                r.rule,
                r.why,
                r.approver,
                r.outcome,
                1,
                e.caller,
                owner
            ])
            .unwrap();
        self.0.last_insert_rowid()
    }

    fn finish(&self, id: i64) {
        self.0
            .prepare_cached(
                "UPDATE audit SET outcome = ?2, rule = ?3, why = ?4, duration_ms = ?5, owner = NULL WHERE id = ?1",
            )
            .unwrap()
            .execute(params![id, "ok", "", "", 1])
            .unwrap();
    }
}

/// Times `write` alone, `iters` times. The unchained side checkpoints its log between
/// writes, untimed, as the store does off the call's path (see `checkpoint.rs`).
fn timed(iters: u64, plain: Option<&Unchained>, mut write: impl FnMut()) -> Duration {
    let mut total = Duration::ZERO;
    for n in 0..iters {
        let t = Instant::now();
        write();
        total += t.elapsed();
        if let Some(p) = plain.filter(|_| n % 256 == 255) {
            p.0.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
                .unwrap();
        }
    }
    total
}

fn writes(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut g = c.benchmark_group("audit write per call");
    let plain_dir = tempfile::tempdir().unwrap();
    let plain = Unchained::open(plain_dir.path());
    let chained_dir = tempfile::tempdir().unwrap();
    let chained = Store::open(chained_dir.path()).unwrap();
    let mut i = 0u64;

    g.bench_function("one record, unchained", |b| {
        b.iter_custom(|iters| {
            timed(iters, Some(&plain), || {
                i += 1;
                plain.insert(i, None);
            })
        })
    });
    g.bench_function("one record, chained and signed", |b| {
        b.iter_custom(|iters| {
            timed(iters, None, || {
                i += 1;
                let e = entry(i);
                let d = detail(&e);
                rt.block_on(chained.append_audit_with(e, d)).unwrap()
            })
        })
    });
    g.bench_function("intent + outcome, unchained", |b| {
        b.iter_custom(|iters| {
            timed(iters, Some(&plain), || {
                i += 1;
                let id = plain.insert(i, Some("1 2 3 4"));
                plain.finish(id)
            })
        })
    });
    g.bench_function("intent + outcome, chained and signed", |b| {
        b.iter_custom(|iters| {
            timed(iters, None, || {
                i += 1;
                rt.block_on(async {
                    let e = entry(i);
                    let d = detail(&e);
                    let id = chained.begin_audit_with(e, d).await.unwrap();
                    chained.finish_audit(id, outcome()).await.unwrap()
                })
            })
        })
    });
    g.finish();
}

fn verify(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    rt.block_on(async {
        for i in 0..VERIFY_RECORDS as u64 {
            let e = entry(i);
            let d = detail(&e);
            store.append_audit_with(e, d).await.unwrap();
        }
    });
    let mut g = c.benchmark_group("audit verify");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(10));
    g.bench_function("100k records", |b| {
        b.iter(|| {
            let v = rt.block_on(store.verify_audit(None)).unwrap();
            assert!(v.problem.is_none(), "{:?}", v.problem);
            assert_eq!(v.chained, VERIFY_RECORDS as u64);
        })
    });
    g.finish();
}

criterion_group!(benches, writes, verify);
criterion_main!(benches);
