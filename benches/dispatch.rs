//! Dispatch overhead: lookup + validation + policy + sanitize around `calculate`, and the bare
//! evaluation for comparison. Run: `cargo bench --bench dispatch`.

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;
use tackle_agent::approvers::NonInteractiveApprover;
use tackle_agent::{CallRequest, Dispatcher, DispatcherConfig, Registry, Sanitizer};
use tackle_protocol::ToolCall;

fn dispatcher(state: &std::path::Path) -> Dispatcher {
    let registry = Registry::new(vec![tackle_tools::system::extension()]).expect("registry");
    let host = tackle_host::NativeHostProvider::new(tackle_host::HostConfig::new(state));
    Dispatcher::new(
        Arc::new(registry),
        Arc::new(host),
        DispatcherConfig {
            workspace: std::env::temp_dir(),
            security: Default::default(),
            agent: "bench".into(),
            agent_grants: None,
            default_timeout: Duration::from_secs(10),
            sanitizer: Sanitizer::default(),
        },
    )
}

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
