//! Dispatch overhead: lookup + validation + policy + sanitize around `calculate`, and the bare
//! evaluation for comparison. Run: `cargo bench --bench dispatch`.

mod common;

use common::dispatcher;
use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;
use std::hint::black_box;
use std::sync::Arc;
use tackle_agent::approvers::NonInteractiveApprover;
use tackle_agent::CallRequest;
use tackle_protocol::ToolCall;

fn bench(c: &mut Criterion) {
    let state = tempfile::tempdir().expect("tempdir");
    let d = dispatcher(state.path());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let approver = Arc::new(NonInteractiveApprover);
    c.bench_function(
        "dispatch calculate (lookup+validate+policy+sanitize)",
        |b| {
            b.iter(|| {
                let call = ToolCall {
                    id: "1".into(),
                    name: "calculate".into(),
                    arguments: json!({"expression": "2 * pi * 6371"}),
                };
                let out = rt.block_on(d.dispatch(CallRequest::new(call, approver.clone())));
                black_box(out)
            })
        },
    );
    c.bench_function("calculate evaluation alone", |b| {
        b.iter(|| black_box(tackle_tools::system::evaluate(black_box("2 * pi * 6371"))))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
