//! `web_fetch` of a 1 MB article-like HTML page from a local server, through the real host
//! (URL guard, pinned DNS, capped body) and Readability + Markdown extraction.
//!
//! Run: `cargo bench -p tackle-tools --bench web_extract`.

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;
use std::time::Duration;
use tackle_host::{HostConfig, NativeHostProvider};
use tackle_protocol::{CallScope, Grants, HostProvider, NetworkGrant, ToolContext};
use tackle_tools::web::{extension, WebSettings};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// About 1 MB of HTML: navigation, a long article of paragraphs with links, a footer.
fn page() -> String {
    let mut html = String::from(
        "<!doctype html><html><head><title>Bench article</title></head><body>\
         <nav><a href=\"/\">Home</a> <a href=\"/a\">About</a> <a href=\"/s\">Shop</a></nav><article><h1>Bench</h1>",
    );
    let mut i = 0;
    while html.len() < 1_000_000 {
        html.push_str(&format!(
            "<h2>Section {i}</h2><p>Paragraph {i} discusses tidal forces, orbital resonance and the \
             slow exchange of angular momentum between bodies, with a <a href=\"/ref/{i}\">reference</a> \
             and some <em>emphasis</em> to keep the converter honest about inline markup.</p>\
             <ul><li>first point {i}</li><li>second point {i}</li></ul>"
        ));
        i += 1;
    }
    html.push_str("</article><footer>Copyright</footer></body></html>");
    html
}

/// A keep-alive-free HTTP/1.1 server answering every connection with `body`.
async fn serve(body: String) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let response = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let response = std::sync::Arc::new(response);
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let response = response.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = sock.read(&mut buf).await;
                let _ = sock.write_all(response.as_bytes()).await;
            });
        }
    });
    format!("http://{addr}/article")
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let url = rt.block_on(serve(page()));
    let provider =
        NativeHostProvider::new(HostConfig::new(std::env::temp_dir().join("tackle-bench")));
    let scope = CallScope {
        tool: "web_fetch".into(),
        session_id: "bench".into(),
        agent: "default".into(),
        workspace: std::env::temp_dir(),
        grants: Grants {
            network: Some(NetworkGrant {
                endpoints: Vec::new(),
                allow_private: true,
            }),
            ..Grants::default()
        },
        cancel: Default::default(),
        approved: false,
    };
    let cx = ToolContext::new(&scope, "bench", provider.scoped(&scope));
    let fetch = extension(WebSettings::default())
        .tools()
        .into_iter()
        .find(|t| t.spec().name == "web_fetch")
        .expect("web_fetch");
    let args = json!({"url": url});
    // Fail loudly before measuring if the host refuses or extraction finds nothing.
    let first = rt.block_on(fetch.call(args.clone(), &cx)).expect("fetch");
    assert!(
        first.content.contains("Paragraph 1 discusses"),
        "extraction lost the article"
    );

    let mut group = c.benchmark_group("web_extract");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    group.bench_function("fetch_and_extract_1mb_html", |b| {
        b.iter(|| rt.block_on(fetch.call(args.clone(), &cx)).expect("fetch"))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
