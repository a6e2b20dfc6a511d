//! Our MCP server against the official Python SDK client (`tests/mcp_client/client.py`), over
//! Streamable HTTP (in-process server) and stdio (the `fake_serve` example).

mod common;
#[path = "common/fake_service.rs"]
mod fake_service;

use common::*;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Serves the fake dispatcher on 127.0.0.1:0 until dropped.
struct HttpServer {
    url: String,
    cancel: CancellationToken,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

async fn http_server(token: Option<&str>) -> HttpServer {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let cancel = CancellationToken::new();
    let service = Arc::new(fake_service::FakeService);
    let token = token.map(String::from);
    tokio::spawn(tackle_mcp::serve_http_on(
        service,
        listener,
        token,
        cancel.clone(),
    ));
    HttpServer { url, cancel }
}

/// Run the Python client with `options`, `steps` and (for stdio) the server `command`;
/// `Err(stderr)` when it fails.
async fn python_client(
    options: &[String],
    steps: Value,
    command: &[String],
) -> Result<Value, String> {
    let python = venv_python().ok_or("no venv")?;
    let out = tokio::process::Command::new(python)
        .arg(client_script())
        .args(options)
        .arg(steps.to_string())
        .arg("--")
        .args(command)
        .output()
        .await
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

fn http_target(url: &str, extra: &[&str]) -> Vec<String> {
    let mut v = vec!["--url".to_string(), url.to_string()];
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

#[tokio::test]
async fn the_python_sdk_initializes_lists_and_calls_over_http() {
    require!(venv_python(), "the .ci venv is not installed");
    let server = http_server(None).await;
    let steps = json!([["list"], ["call", "echo", {"text": "héllo"}], ["call", "broken", {}]]);
    let out = python_client(&http_target(&server.url, &[]), steps, &[])
        .await
        .unwrap();
    assert_eq!(out[0]["tools"], json!(["echo", "guarded", "broken"]));
    assert_eq!(out[1]["text"], "héllo");
    assert_eq!(out[1]["is_error"], false);
    assert_eq!(out[1]["structured"], json!({"echoed": "héllo"}));
    assert_eq!(out[2]["is_error"], true);
    assert_eq!(out[2]["text"], "failed: it broke on purpose");
}

#[tokio::test]
async fn approval_is_asked_through_elicitation_and_the_answer_is_honoured() {
    require!(venv_python(), "the .ci venv is not installed");
    let server = http_server(None).await;
    let steps = json!([["call", "guarded", {}]]);
    let once = python_client(
        &http_target(&server.url, &["--elicit", "once"]),
        steps.clone(),
        &[],
    )
    .await
    .unwrap();
    assert_eq!(once[0]["text"], "ran once, approved via mcp-elicitation");
    let session = python_client(
        &http_target(&server.url, &["--elicit", "session"]),
        steps.clone(),
        &[],
    )
    .await
    .unwrap();
    assert_eq!(
        session[0]["text"],
        "ran, approved for the session via mcp-elicitation"
    );
    let denied = python_client(&http_target(&server.url, &["--elicit", "deny"]), steps, &[])
        .await
        .unwrap();
    assert_eq!(denied[0]["is_error"], true);
    assert_eq!(denied[0]["text"], "denied: the person said no to `guarded`");
}

#[tokio::test]
async fn a_client_without_elicitation_gets_needs_approval_never_a_run() {
    require!(venv_python(), "the .ci venv is not installed");
    let server = http_server(None).await;
    let out = python_client(
        &http_target(&server.url, &[]),
        json!([["call", "guarded", {}]]),
        &[],
    )
    .await
    .unwrap();
    assert_eq!(out[0]["is_error"], true);
    let text = out[0]["text"].as_str().unwrap();
    assert!(text.starts_with("needs_approval: "), "{text}");
    assert!(text.contains("elicitation"), "{text}");
}

#[tokio::test]
async fn a_bearer_token_is_required_when_configured() {
    require!(venv_python(), "the .ci venv is not installed");
    let server = http_server(Some("s3cret-token")).await;
    let steps = json!([["list"]]);
    let without = python_client(&http_target(&server.url, &[]), steps.clone(), &[]).await;
    assert!(without.is_err(), "{without:?}");
    let wrong = python_client(
        &http_target(&server.url, &["--token", "s3cret-tokeN"]),
        steps.clone(),
        &[],
    )
    .await;
    assert!(wrong.is_err(), "{wrong:?}");
    let right = python_client(
        &http_target(&server.url, &["--token", "s3cret-token"]),
        steps,
        &[],
    )
    .await
    .unwrap();
    assert_eq!(right[0]["tools"][0], "echo");
}

/// `target/debug/examples/fake_serve`, built by `cargo test`/`nextest` beside the tests.
fn fake_serve() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let path = exe.parent()?.parent()?.join("examples/fake_serve");
    path.exists().then_some(path)
}

#[tokio::test]
async fn the_python_sdk_initializes_lists_and_calls_over_stdio() {
    require!(venv_python(), "the .ci venv is not installed");
    let serve = require!(fake_serve(), "the fake_serve example is not built");
    let steps = json!([["list"], ["call", "echo", {"text": "piped"}], ["call", "nope", {}]]);
    let out = python_client(&[], steps, &[serve.display().to_string()])
        .await
        .unwrap();
    assert_eq!(out[0]["tools"], json!(["echo", "guarded", "broken"]));
    assert_eq!(out[1]["text"], "piped");
    assert_eq!(out[2]["text"], "not_found: no tool `nope`");
}

/// Round trip of a trivial call through the stdio server, 1,000 calls from the Python SDK.
/// Run: cargo nextest run -p tackle-mcp --run-ignored only --no-capture
#[tokio::test]
#[ignore = "benchmark"]
async fn bench_stdio_round_trip_from_the_python_sdk() {
    require!(venv_python(), "the .ci venv is not installed");
    let serve = require!(fake_serve(), "the fake_serve example is not built");
    let steps = json!([["bench", "echo", {"text": "x"}, 1000]]);
    let out = python_client(&[], steps, &[serve.display().to_string()])
        .await
        .unwrap();
    println!("stdio round trip through tackle-mcp's server: {}", out[0]);
}
