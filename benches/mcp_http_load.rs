//! `tackle mcp serve --http` at its limit: 1, 10 and 100 MCP client sessions at once, each
//! calling `calculate` back to back for a fixed window through the real server (the whole
//! pipeline: schema, policy, audit log with its hash chain, sanitizer). Clients are rmcp's own
//! Streamable HTTP client in this process, so the figure is the server's, not a Python
//! client's (which tops out near 140 calls/s).
//!
//! Run: `cargo bench --bench mcp_http_load` (builds release); `TACKLE_BENCH_BIN` measures
//! another build of `tackle`, `TACKLE_BENCH_SECS` sets each window (5 s unless set).

use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port on 127.0.0.1")
}

fn start_server(dir: &Path, port: u16) -> Child {
    let bin = std::env::var_os("TACKLE_BENCH_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_tackle")));
    let config = dir.join("config.yaml");
    std::fs::write(
        &config,
        format!("state_dir: {}\n", dir.join("state").display()),
    )
    .expect("config");
    Command::new(bin)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir.join("home"))
        .arg("--config")
        .arg(&config)
        .arg("-q")
        .args(["mcp", "serve", "--http", &format!("127.0.0.1:{port}")])
        .arg("--workspace")
        .arg(dir.join("ws"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn tackle mcp serve --http")
}

/// One client session: calls until `until`, returns each call's latency.
async fn session(url: String, until: Instant) -> Vec<Duration> {
    let transport = StreamableHttpClientTransport::from_uri(url);
    let client = ().serve(transport).await.expect("MCP initialize");
    let params: CallToolRequestParams = serde_json::from_value(
        serde_json::json!({"name": "calculate", "arguments": {"expression": "6 * 7"}}),
    )
    .expect("call parameters");
    let mut took = Vec::new();
    while Instant::now() < until {
        let t = Instant::now();
        let result = client.call_tool(params.clone()).await.expect("tools/call");
        took.push(t.elapsed());
        assert_ne!(result.is_error, Some(true), "calculate failed: {result:?}");
    }
    let _ = client.cancel().await;
    took
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len().saturating_sub(1)) as f64 * p).round() as usize;
    sorted.get(i).map_or(f64::NAN, |d| d.as_secs_f64() * 1000.0)
}

/// The server, killed however the bench ends (a failed session panics the bench).
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn main() {
    // rmcp's HTTP client is built on a reqwest without a bundled crypto provider.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let secs: u64 = env_or("TACKLE_BENCH_SECS", 5);
    let dir = tempfile::tempdir().expect("tempdir");
    for sub in ["home", "ws", "state"] {
        std::fs::create_dir_all(dir.path().join(sub)).expect("mkdir");
    }
    let port = free_port();
    let _server = Server(start_server(dir.path(), port));
    let url = format!("http://127.0.0.1:{port}/mcp");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the server never listened");
        std::thread::sleep(Duration::from_millis(20));
    }
    println!("| sessions | calls | calls/s | p50 ms | p99 ms |");
    println!("| --- | --- | --- | --- | --- |");
    for sessions in [1usize, 10, 100] {
        let started = Instant::now();
        let until = started + Duration::from_secs(secs);
        let mut all: Vec<Duration> = rt.block_on(async {
            let tasks: Vec<_> = (0..sessions)
                .map(|_| tokio::spawn(session(url.clone(), until)))
                .collect();
            let mut all = Vec::new();
            for t in tasks {
                all.extend(t.await.expect("session task"));
            }
            all
        });
        let window = started.elapsed().as_secs_f64();
        all.sort_unstable();
        println!(
            "| {sessions} | {} | {:.0} | {:.2} | {:.2} |",
            all.len(),
            all.len() as f64 / window,
            percentile(&all, 0.5),
            percentile(&all, 0.99)
        );
    }
}
