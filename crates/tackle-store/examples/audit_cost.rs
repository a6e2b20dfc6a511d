//! What the audit log costs one tool call, measured on a real database file: the single
//! record a call had before intents (one insert), against an intent and its outcome (an insert
//! before the call runs, an update after). Both run in the calling task, as in the dispatcher.
//!
//! Then the rate with contention: two daemons' handles, four tasks each, appending at once.
//!
//! `cargo run --release -p tackle-store --example audit_cost [CALLS] [STATE_URL]`
//!
//! With a `postgres://` STATE_URL the log is in that database, as daemons sharing it keep it
//! (give an empty database: the chain of an earlier run is continued, not replaced).

use std::time::{Duration, Instant};
use tackle_protocol::Verdict;
use tackle_store::{AuditDetail, AuditEntry, AuditOutcome, AuditRecord, Store};

fn entry(i: usize) -> AuditEntry {
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

/// Per-call times in microseconds: median and 99th percentile.
fn summary(mut times: Vec<Duration>) -> (f64, f64) {
    times.sort();
    let at = |q: f64| {
        let i = ((times.len() as f64 - 1.0) * q).round() as usize;
        times.get(i).map(|d| d.as_secs_f64() * 1e6).unwrap_or(0.0)
    };
    (at(0.5), at(0.99))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let calls: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(5_000);
    let url = args.next();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let run = format!("tackle-audit-cost-{}", std::process::id());
    let dir = |n: usize| std::env::temp_dir().join(format!("{run}-{n}"));
    let open = |n: usize| Store::open_with_url(&dir(n), url.as_deref());
    let first = open(0)?;
    println!(
        "{calls} calls on {}, per call (µs), in the calling task:",
        first.state_engine()
    );
    for intents in [false, true] {
        let times = rt.block_on(measure(&first, calls, intents))?;
        let slow = times.iter().filter(|t| t.as_micros() > 500).count();
        let total: Duration = times.iter().sum();
        let rate = calls as f64 / total.as_secs_f64();
        let (median, p99) = summary(times);
        let what = if intents {
            "intent + outcome (now):     "
        } else {
            "one record (before intents):"
        };
        println!(
            "  {what}  median {median:7.1}  p99 {p99:7.1}  over 0.5 ms: {slow:4}  {rate:8.0} calls/s"
        );
    }
    // On SQLite both handles open the one file (two processes of one machine); on a shared
    // engine each has its own state directory and key (two daemons).
    let second = if url.is_some() { open(1)? } else { open(0)? };
    let tasks = 4;
    let per_task = (calls / (2 * tasks)).max(1);
    let start = Instant::now();
    rt.block_on(async {
        let mut running = Vec::new();
        for store in [&first, &second] {
            for _ in 0..tasks {
                let store = store.clone();
                running.push(tokio::spawn(async move {
                    measure(&store, per_task, true).await.map(drop)
                }));
            }
        }
        for r in running {
            r.await
                .map_err(|e| tackle_store::StoreError::Task(e.to_string()))??;
        }
        Ok::<_, tackle_store::StoreError>(())
    })?;
    let took = start.elapsed();
    let done = 2 * tasks * per_task;
    println!(
        "  2 handles x {tasks} tasks, intent + outcome: {done} calls in {:.2} s = {:.0} calls/s",
        took.as_secs_f64(),
        done as f64 / took.as_secs_f64()
    );
    let verified = rt.block_on(first.verify_audit(None))?;
    println!(
        "  verify: {} chained, problem: {}",
        verified.chained,
        verified
            .problem
            .map_or_else(|| "none".to_string(), |p| p.to_string())
    );
    drop((first, second));
    for n in 0..2 {
        let _ = std::fs::remove_dir_all(dir(n));
    }
    Ok(())
}

async fn measure(
    store: &Store,
    calls: usize,
    intents: bool,
) -> Result<Vec<Duration>, tackle_store::StoreError> {
    let mut times = Vec::with_capacity(calls);
    for i in 0..calls {
        let t = Instant::now();
        if intents {
            let e = entry(i);
            let d = detail(&e);
            let id = store.begin_audit_with(e, d).await?;
            store
                .finish_audit(
                    id,
                    AuditOutcome {
                        outcome: "ok".into(),
                        rule: String::new(),
                        why: String::new(),
                        duration_ms: Some(1),
                        layer: String::new(),
                        result_digest: Some(tackle_store::text_digest("6.283185307179586")),
                    },
                )
                .await?;
        } else {
            let e = entry(i);
            let d = detail(&e);
            store.append_audit_with(e, d).await?;
        }
        times.push(t.elapsed());
    }
    Ok(times)
}
