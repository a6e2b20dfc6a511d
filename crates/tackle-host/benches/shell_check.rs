//! What a shell line under rules pays before it runs: the analyser on the line as written and
//! on bash's own reading of it (one short-lived `bash --pretty-print`).

use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;
use tackle_host::check_shell_line;
use tackle_protocol::ShellGrant;

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let grant = ShellGrant {
        allow: vec!["git".into(), "ls".into(), "grep".into()],
        deny: vec!["rm".into(), "git push".into()],
        ..Default::default()
    };
    let mut group = c.benchmark_group("shell check");
    group.sample_size(30);
    group.bench_function(
        "check_shell_line typical line (analyser + bash read-back)",
        |b| {
            b.iter(|| {
                rt.block_on(check_shell_line(
                    black_box("git status && ls -la | grep foo"),
                    &grant,
                ))
            })
        },
    );
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
