//! What a command pays: the check of a shell line under rules (the analyser on the line as
//! written and on bash's own reading of it, one short-lived `bash --pretty-print`), and running
//! `true` through the host (scrubbed environment, process group, bubblewrap namespaces where
//! available) against spawning it directly.

use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;
use tackle_host::check_shell_line;
use tackle_protocol::{CallScope, ExecCommand, ExecRequest, Grants, HostProvider, ShellGrant};

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
    let state = tempfile::tempdir().expect("a state dir");
    let ws = tempfile::tempdir().expect("a workspace");
    let provider = tackle_host::NativeHostProvider::new(tackle_host::HostConfig::new(state.path()));
    let scope = CallScope {
        tool: "bench".into(),
        session_id: "bench".into(),
        agent: "default".into(),
        workspace: ws.path().to_path_buf(),
        grants: Grants::default(),
        cancel: Default::default(),
        approved: false,
    };
    let host = provider.scoped(&scope);
    let req = || ExecRequest {
        command: ExecCommand::Argv {
            program: "true".into(),
            args: vec![],
        },
        cwd: None,
        timeout: std::time::Duration::from_secs(10),
        env: Vec::new(),
        stdin: None,
        max_output_bytes: 1024,
        output_lines: None,
        program_sha256: None,
        data_values: Vec::new(),
    };
    group.bench_function("exec true through the host (sandboxed)", |b| {
        b.iter(|| rt.block_on(host.exec(req())).expect("true runs"))
    });
    group.bench_function("spawn true directly (no sandbox)", |b| {
        b.iter(|| {
            rt.block_on(async { tokio::process::Command::new("true").status().await })
                .expect("true runs")
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
