//! What a command pays: the check of a shell line under rules (the analyser on the line as
//! written and on bash's own reading of it: one short-lived `bash --pretty-print` for a line
//! bash has not read before, bash's remembered reading for one it has), running
//! `true` through the host (scrubbed environment, process group, bubblewrap namespaces where
//! available) with no rules, with a deny list (denied programs masked) and with an allow list
//! (the view of only its programs, started through the in-sandbox step that makes every other
//! mount `noexec`), against spawning it directly; and planning the sandbox view, the first time
//! in a process (printed) and warm.

use criterion::{criterion_group, Criterion};
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
    // The first check in a process: bash is located and started once.
    let started = std::time::Instant::now();
    rt.block_on(check_shell_line(
        "git status && ls -la | grep first",
        &grant,
    ));
    println!(
        "check_shell_line, first in the process: {:?}",
        started.elapsed()
    );
    let mut group = c.benchmark_group("shell check");
    group.sample_size(30);
    // A line bash has read before (checked before approval and again when it runs, or
    // repeated by the agent): bash's reading is remembered.
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
    // A line bash has not read before: one short-lived bash each call.
    let mut n = 0u64;
    group.bench_function("check_shell_line, a new line each call (one bash)", |b| {
        b.iter(|| {
            n += 1;
            let line = format!("git status && ls -la | grep foo{n}");
            rt.block_on(check_shell_line(black_box(&line), &grant))
        })
    });
    // A long line (10 KB of arguments) bash has not read before.
    let filler = "a ".repeat(5000);
    group.bench_function("check_shell_line, a new 10 KB line each call", |b| {
        b.iter(|| {
            n += 1;
            let line = format!("ls {filler}{n} | grep foo");
            rt.block_on(check_shell_line(black_box(&line), &grant))
        })
    });
    let state = tempfile::tempdir().expect("a state dir");
    let ws = tempfile::tempdir().expect("a workspace");
    let mut config = tackle_host::HostConfig::new(state.path());
    // This benchmark binary is the sandbox's start-up program too (see `main`).
    config.sandbox_init = std::env::current_exe().ok();
    let provider = tackle_host::NativeHostProvider::new(config);
    let scoped = |shell: Option<ShellGrant>| {
        provider.scoped(&CallScope {
            tool: "bench".into(),
            session_id: "bench".into(),
            agent: "default".into(),
            workspace: ws.path().to_path_buf(),
            grants: Grants {
                shell,
                ..Grants::default()
            },
            cancel: Default::default(),
            approved: false,
        })
    };
    let host = scoped(None);
    let deny = ShellGrant {
        deny: vec!["rm".into(), "curl".into(), "git push".into()],
        ..Default::default()
    };
    let allow = ShellGrant {
        allow: ["git", "ls", "cat", "echo", "grep", "wc", "true"]
            .map(String::from)
            .to_vec(),
        ..Default::default()
    };
    let tmp = state.path().join("tmp");
    for (name, g) in [("deny list", &deny), ("allow list", &allow)] {
        let started = std::time::Instant::now();
        let view = tackle_host::sandbox_view_for(g, ws.path(), &tmp);
        println!(
            "sandbox view, {name}, first in the process: {:?} ({} mounts)",
            started.elapsed(),
            view.mounts.len()
        );
    }
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
    let denied = scoped(Some(deny.clone()));
    group.bench_function(
        "exec true through the host, deny list (masked programs)",
        |b| b.iter(|| rt.block_on(denied.exec(req())).expect("true runs")),
    );
    let allowed = scoped(Some(allow.clone()));
    group.bench_function(
        "exec true through the host, allow list (noexec view)",
        |b| b.iter(|| rt.block_on(allowed.exec(req())).expect("true runs")),
    );
    group.bench_function("sandbox view, deny list, warm", |b| {
        b.iter(|| tackle_host::sandbox_view_for(black_box(&deny), ws.path(), &tmp))
    });
    group.bench_function("sandbox view, allow list, warm", |b| {
        b.iter(|| tackle_host::sandbox_view_for(black_box(&allow), ws.path(), &tmp))
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

fn main() {
    // Commands under an allow list start through this binary's `__sandbox-exec`.
    let mut args = std::env::args_os();
    if args.nth(1).is_some_and(|a| a == "__sandbox-exec") {
        std::process::exit(match tackle_host::sandbox_exec_main(args.collect()) {
            c if c == std::process::ExitCode::SUCCESS => 0,
            _ => 126,
        });
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
