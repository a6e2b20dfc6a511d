//! `grep` over a generated 50,000-file tree against the `rg` binary (when installed), and
//! `edit_file` on a 10 MB file, both through the real `NativeHost`.
//!
//! Run: `cargo bench -p tackle-tools --bench grep`. The tree and the file are made through the
//! host (a shell loop, a host write) in a temporary workspace that is removed afterwards.

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;
use std::cell::Cell;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;
use tackle_host::{HostConfig, NativeHostProvider};
use tackle_protocol::{
    CallScope, ExecCommand, ExecRequest, HostProvider, Tool, ToolContext, ToolHost, WriteRequest,
};
use tackle_tools::fs::{EditFile, Grep};

const TREE_SCRIPT: &str = r#"
body=$(for i in $(seq 1 20); do echo "line $i: lorem ipsum dolor sit amet, consectetur adipiscing elit"; done)
for d in $(seq 0 499); do
  mkdir -p "d$d"
  for f in $(seq 0 99); do
    if [ $(( (d * 100 + f) % 1000 )) -eq 0 ]; then n="NEEDLE_$d"; else n="hay"; fi
    printf '%s\n// %s\n' "$body" "$n" > "d$d/f$f.rs"
  done
done
"#;

struct Workspace {
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    scope: CallScope,
    host: Arc<dyn ToolHost>,
}

fn workspace() -> Workspace {
    let ws = tempfile::tempdir().expect("a temporary workspace");
    let state = tempfile::tempdir().expect("a temporary state dir");
    let scope = CallScope {
        tool: "bench".into(),
        session_id: "bench".into(),
        agent: "default".into(),
        workspace: ws.path().to_path_buf(),
        grants: Default::default(),
        cancel: Default::default(),
        approved: false,
    };
    let host = NativeHostProvider::new(HostConfig::new(state.path())).scoped(&scope);
    Workspace {
        _dirs: (ws, state),
        scope,
        host,
    }
}

async fn exec(host: &dyn ToolHost, command: ExecCommand) -> Option<tackle_protocol::ExecOutput> {
    let req = ExecRequest {
        command,
        cwd: Some(host.workspace().to_path_buf()),
        timeout: Duration::from_secs(600),
        env: Vec::new(),
        stdin: None,
        max_output_bytes: 1 << 20,
        output_lines: None,
        program_sha256: None,
        data_values: Vec::new(),
    };
    host.exec(req).await.ok()
}

fn bench_grep(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().expect("a tokio runtime");
    let w = workspace();
    let made = rt.block_on(exec(
        w.host.as_ref(),
        ExecCommand::Shell(TREE_SCRIPT.into()),
    ));
    assert!(
        made.is_some_and(|o| o.exit_code == Some(0)),
        "generating the tree failed"
    );
    let cx = ToolContext::new(&w.scope, "bench", w.host.clone());
    let args = json!({"pattern": "NEEDLE_\\d+", "max_results": 1000});
    let out = rt
        .block_on(Grep.call(args.clone(), &cx))
        .expect("grep runs");
    assert_eq!(out.content.lines().count(), 50, "{}", out.content);

    let mut g = c.benchmark_group("grep_50k_files");
    g.sample_size(10).measurement_time(Duration::from_secs(20));
    g.bench_function("tackle_grep_tool", |b| {
        b.iter(|| {
            black_box(
                rt.block_on(Grep.call(args.clone(), &cx))
                    .map(|o| o.content.len()),
            )
        })
    });
    let rg = ExecCommand::Argv {
        program: "rg".into(),
        args: vec![
            "-n".into(),
            "--no-heading".into(),
            "NEEDLE_\\d+".into(),
            ".".into(),
        ],
    };
    match rt.block_on(exec(w.host.as_ref(), rg.clone())) {
        Some(o) if o.exit_code == Some(0) => {
            g.bench_function("ripgrep_binary", |b| {
                b.iter(|| {
                    black_box(
                        rt.block_on(exec(w.host.as_ref(), rg.clone()))
                            .map(|o| o.stdout.len()),
                    )
                })
            });
        }
        _ => println!("skip ripgrep_binary: `rg` is not installed (apt-get install ripgrep)"),
    }
    g.finish();
}

fn bench_edit(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().expect("a tokio runtime");
    let w = workspace();
    let mut text = String::with_capacity(10_000_100);
    let mut i = 0;
    while text.len() < 10_000_000 {
        if i == 100_000 {
            text.push_str("MARKER_A\n");
        }
        text.push_str(&format!(
            "line {i}: the quick brown fox jumps over the lazy dog\n"
        ));
        i += 1;
    }
    let path = w.host.workspace().join("big.txt");
    let write = WriteRequest {
        expected: None,
        path,
        data: text.into_bytes(),
        create_dirs: false,
    };
    rt.block_on(w.host.write(write))
        .expect("writing the 10 MB file");
    let cx = ToolContext::new(&w.scope, "bench", w.host.clone());
    let flip = Cell::new(false);

    let mut g = c.benchmark_group("edit_file");
    g.sample_size(10).measurement_time(Duration::from_secs(20));
    g.bench_function("single_edit_10mb", |b| {
        b.iter(|| {
            let (old, new) = if flip.get() {
                ("MARKER_B", "MARKER_A")
            } else {
                ("MARKER_A", "MARKER_B")
            };
            flip.set(!flip.get());
            let args = json!({"path": "big.txt", "old_text": old, "new_text": new});
            let out = rt
                .block_on(EditFile.call(args, &cx))
                .expect("the edit applies");
            black_box(out.content.len())
        })
    });
    g.finish();
}

criterion_group!(benches, bench_grep, bench_edit);
criterion_main!(benches);
