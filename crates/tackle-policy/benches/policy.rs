//! The cost of the checks every tool call pays: one shell line, one URL, one redaction.

use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;
use tackle_policy::{net, secrets::SecretRedactor, shell};
use tackle_protocol::{Endpoint, NetworkGrant, ShellGrant};

fn bench(c: &mut Criterion) {
    let grant = ShellGrant {
        allow: vec!["git".into(), "ls".into(), "grep".into()],
        deny: vec!["rm".into(), "git push".into()],
        ..Default::default()
    };
    c.bench_function("check_shell typical line", |b| {
        b.iter(|| shell::check_shell(black_box("git status && ls -la | grep foo"), &grant))
    });
    let busy = "tar -czf out.tgz --exclude=target src && git log --oneline | head -n 5; \
                cat <<'EOF' | grep -c x\nx\nEOF\nfor f in *.rs; do wc -l \"$f\"; done";
    let busy_grant = ShellGrant {
        allow: ["tar", "git", "head", "cat", "grep", "wc"]
            .map(String::from)
            .to_vec(),
        deny: vec!["rm".into()],
        ..Default::default()
    };
    c.bench_function(
        "check_shell line with runners, here-document and loop",
        |b| b.iter(|| shell::check_shell(black_box(busy), &busy_grant)),
    );
    let net = NetworkGrant {
        endpoints: vec![Endpoint {
            host: "*.example.com".into(),
            path_prefix: Some("/v1".into()),
            methods: Some(vec!["GET".into()]),
        }],
        allow_private: false,
    };
    c.bench_function("check_url typical url", |b| {
        b.iter(|| {
            net::check_url(
                "GET",
                black_box("https://api.example.com/v1/users?page=2"),
                &net,
            )
        })
    });
    let redactor = SecretRedactor::new(vec!["config-secret-value".into()]);
    let text = "total 24\ndrwxr-xr-x 2 root root 4096 Dec  1 05:35 src\n".repeat(200);
    c.bench_function("redact 10 KB without secrets", |b| {
        b.iter(|| redactor.redact(black_box(&text)).len())
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
