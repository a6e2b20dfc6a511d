//! What the audit log costs one tool call, measured on a real database file: the single
//! record a call had before intents (one insert), against an intent and its outcome (an insert
//! before the call runs, an update after). Both run in the calling task, as in the dispatcher.
//!
//! `cargo run --release -p tackle-store --example audit_cost [CALLS]`

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
    let calls: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(5_000);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    println!("{calls} calls, per call (µs), each way on a fresh database:");
    for intents in [false, true] {
        let dir = std::env::temp_dir().join(format!(
            "tackle-audit-cost-{}-{intents}",
            std::process::id()
        ));
        let store = Store::open(&dir)?;
        let times = rt.block_on(measure(&store, calls, intents))?;
        let slow = times.iter().filter(|t| t.as_micros() > 500).count();
        let (median, p99) = summary(times);
        let what = if intents {
            "intent + outcome (now):     "
        } else {
            "one record (before intents):"
        };
        println!("  {what}  median {median:7.1}  p99 {p99:7.1}  over 0.5 ms: {slow}");
        drop(store);
        let _ = std::fs::remove_dir_all(&dir);
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
