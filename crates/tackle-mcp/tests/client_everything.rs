//! The client against `@modelcontextprotocol/server-everything` (npm), over stdio and
//! Streamable HTTP: listing, calls, time-outs, and restart after a kill.

mod common;

use common::*;
use serde_json::json;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tackle_mcp::{McpOptions, ServerState};
use tackle_protocol::config::McpServerConfig;
use tackle_protocol::ErrorKind;

/// The tools it registers for every client (its conditional ones need client capabilities).
const EVERYTHING_TOOLS: [&str; 12] = [
    "echo",
    "get-annotated-message",
    "get-env",
    "get-resource-links",
    "get-resource-reference",
    "get-structured-content",
    "get-sum",
    "get-tiny-image",
    "gzip-file-as-resource",
    "toggle-simulated-logging",
    "toggle-subscriber-updates",
    "trigger-long-running-operation",
];

fn everything() -> Option<(PathBuf, PathBuf)> {
    Some((on_path("node")?, everything_js()?))
}

fn everything_stdio(node: &std::path::Path, js: &std::path::Path) -> McpServerConfig {
    stdio(node, &[&js.display().to_string(), "stdio"])
}

#[tokio::test]
async fn every_tool_is_listed_and_a_call_with_arguments_works_over_stdio() {
    let (node, js) = require!(everything(), "node or server-everything is not installed");
    let mgr = start(
        vec![("everything", everything_stdio(&node, &js))],
        McpOptions::default(),
    )
    .await;
    let names = tool_names(&mgr);
    for tool in EVERYTHING_TOOLS {
        assert!(
            names.contains(&format!("everything__{tool}")),
            "{tool} missing from {names:?}"
        );
    }
    let sum = find_tool(&mgr, "everything__get-sum").unwrap();
    let out = call(&sum, json!({"a": 19, "b": 23})).await.unwrap();
    assert!(out.content.contains("42"), "{}", out.content);
    let image = find_tool(&mgr, "everything__get-tiny-image").unwrap();
    let out = call(&image, json!({})).await.unwrap();
    assert!(
        out.content.contains("[image: image/png,"),
        "{}",
        out.content
    );
    assert!(
        !out.content.contains("base64"),
        "binary data must not reach the model"
    );
}

#[tokio::test]
async fn annotations_show_in_the_description_without_lowering_approval() {
    let (node, js) = require!(everything(), "node or server-everything is not installed");
    let mgr = start(
        vec![("everything", everything_stdio(&node, &js))],
        McpOptions::default(),
    )
    .await;
    let spec = find_tool(&mgr, "everything__trigger-long-running-operation")
        .unwrap()
        .spec();
    assert!(
        spec.description.contains("read-only"),
        "{}",
        spec.description
    );
    assert_eq!(
        spec.approval,
        tackle_protocol::ApprovalMode::UnlessAutoApproved
    );
}

#[tokio::test]
async fn a_long_running_tool_times_out_cleanly_and_the_server_stays_usable() {
    let (node, js) = require!(everything(), "node or server-everything is not installed");
    let mut config = everything_stdio(&node, &js);
    config.call_timeout_secs = Some(1);
    let mgr = start(vec![("everything", config)], McpOptions::default()).await;
    let slow = find_tool(&mgr, "everything__trigger-long-running-operation").unwrap();
    let t0 = Instant::now();
    let err = call(&slow, json!({"duration": 10, "steps": 2}))
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Timeout);
    assert!(err.message.contains("within 1s"), "{}", err.message);
    assert!(
        t0.elapsed() < Duration::from_secs(3),
        "took {:?}",
        t0.elapsed()
    );
    let sum = find_tool(&mgr, "everything__get-sum").unwrap();
    assert!(call(&sum, json!({"a": 1, "b": 2}))
        .await
        .unwrap()
        .content
        .contains('3'));
}

#[tokio::test]
async fn a_killed_stdio_server_restarts_and_its_tools_return() {
    let (node, js) = require!(everything(), "node or server-everything is not installed");
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let script = format!(
        "echo $$ > '{}'; exec '{}' '{}' stdio",
        pidfile.display(),
        node.display(),
        js.display()
    );
    let config = stdio(std::path::Path::new("/bin/sh"), &["-c", &script]);
    let mgr = start(vec![("everything", config)], McpOptions::default()).await;
    assert_eq!(state_of(&mgr, "everything").await, Some(ServerState::Ready));
    let first_pid = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .to_string();
    let killed = std::process::Command::new("kill")
        .args(["-9", &first_pid])
        .status()
        .unwrap();
    assert!(killed.success());

    let restarted = eventually(Duration::from_secs(30), || {
        std::fs::read_to_string(&pidfile).is_ok_and(|p| p.trim() != first_pid)
            && find_tool(&mgr, "everything__get-sum").is_some()
    })
    .await;
    assert!(
        restarted,
        "the server did not come back: {:?}",
        mgr.status().await
    );
    let sum = find_tool(&mgr, "everything__get-sum").unwrap();
    let out = call(&sum, json!({"a": 2, "b": 2})).await.unwrap();
    assert!(out.content.contains('4'), "{}", out.content);
}

/// A port nothing listens on right now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Kills the HTTP server when the test ends, pass or fail.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Start server-everything's Streamable HTTP mode on `port` and wait until it listens.
async fn everything_http(node: &std::path::Path, js: &std::path::Path, port: u16) -> Child {
    let child = Child(
        std::process::Command::new(node)
            .arg(js)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let up = eventually(Duration::from_secs(20), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    })
    .await;
    assert!(up, "server-everything did not listen on {port}");
    child
}

#[tokio::test]
async fn every_tool_is_listed_and_a_call_works_over_streamable_http() {
    let (node, js) = require!(everything(), "node or server-everything is not installed");
    let port = free_port();
    let _server = everything_http(&node, &js, port).await;
    let config = McpServerConfig {
        url: Some(format!("http://127.0.0.1:{port}/mcp")),
        ..Default::default()
    };
    let mgr = start(vec![("web", config)], McpOptions::default()).await;
    assert_eq!(
        state_of(&mgr, "web").await,
        Some(ServerState::Ready),
        "{:?}",
        mgr.status().await
    );
    let names = tool_names(&mgr);
    for tool in EVERYTHING_TOOLS {
        assert!(
            names.contains(&format!("web__{tool}")),
            "{tool} missing from {names:?}"
        );
    }
    let echo = find_tool(&mgr, "web__echo").unwrap();
    let out = call(&echo, json!({"message": "over http"})).await.unwrap();
    assert!(out.content.contains("over http"), "{}", out.content);
}

/// server-everything answers an unknown session with 400 and an id-less error instead of the
/// 404 the spec asks for, so the transport cannot re-initialise by itself: the call times out,
/// the ping that follows gets no answer either, and the connection is rebuilt.
#[tokio::test]
async fn a_server_restarted_under_an_http_session_is_reconnected_after_a_timeout() {
    let (node, js) = require!(everything(), "node or server-everything is not installed");
    let port = free_port();
    let server = everything_http(&node, &js, port).await;
    let config = McpServerConfig {
        url: Some(format!("http://127.0.0.1:{port}/mcp")),
        call_timeout_secs: Some(2),
        ..Default::default()
    };
    let mgr = start(vec![("web", config)], McpOptions::default()).await;
    let echo = find_tool(&mgr, "web__echo").unwrap();
    assert!(call(&echo, json!({"message": "before"})).await.is_ok());

    drop(server);
    let _server = everything_http(&node, &js, port).await;
    let first = call(&echo, json!({"message": "lost"})).await;
    assert!(
        first.is_ok() || first.as_ref().unwrap_err().kind == ErrorKind::Timeout,
        "{first:?}"
    );
    let mut answered = false;
    for _ in 0..40 {
        if let Some(echo) = find_tool(&mgr, "web__echo") {
            if let Ok(out) = call(&echo, json!({"message": "after"})).await {
                answered = out.content.contains("after");
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(answered, "{:?}", mgr.status().await);
}
