//! The client against `mcp-server-time` (PyPI), over stdio.

mod common;

use common::*;
use serde_json::json;
use tackle_mcp::McpOptions;
use tackle_protocol::{ApprovalMode, Risk};

#[tokio::test]
async fn time_tools_appear_namespaced_as_medium_risk_needing_approval() {
    let server = require!(time_server(), "mcp-server-time is not installed");
    let mgr = start(vec![("time", stdio(&server, &[]))], McpOptions::default()).await;
    let mut names = tool_names(&mgr);
    names.sort();
    assert_eq!(names, ["time__convert_time", "time__get_current_time"]);
    let spec = find_tool(&mgr, "time__get_current_time").unwrap().spec();
    assert_eq!(spec.owner, "time");
    assert_eq!(spec.risk, Risk::Medium);
    assert_eq!(spec.approval, ApprovalMode::UnlessAutoApproved);
    assert_eq!(spec.parameters["type"], "object");
    let status = mgr.status().await;
    assert_eq!(status[0].tools.len(), 2);
}

#[tokio::test]
async fn a_call_returns_the_time_with_structured_content() {
    let server = require!(time_server(), "mcp-server-time is not installed");
    let mgr = start(vec![("time", stdio(&server, &[]))], McpOptions::default()).await;
    let tool = find_tool(&mgr, "time__get_current_time").unwrap();
    let out = call(&tool, json!({"timezone": "Asia/Tokyo"}))
        .await
        .unwrap();
    assert!(!out.is_error, "{}", out.content);
    assert!(out.content.contains("Asia/Tokyo"), "{}", out.content);
    assert!(out.content.contains("+09:00"), "{}", out.content);
    assert_eq!(out.structured.unwrap()["timezone"], "Asia/Tokyo");
}

#[tokio::test]
async fn an_invalid_timezone_returns_the_servers_error() {
    let server = require!(time_server(), "mcp-server-time is not installed");
    let mgr = start(vec![("time", stdio(&server, &[]))], McpOptions::default()).await;
    let tool = find_tool(&mgr, "time__get_current_time").unwrap();
    let out = call(&tool, json!({"timezone": "Mars/Olympus_Mons"}))
        .await
        .unwrap();
    assert!(out.is_error);
    assert!(out.content.contains("Invalid timezone"), "{}", out.content);
    assert!(out.content.contains("Mars/Olympus_Mons"), "{}", out.content);
}

/// Median latency of our client against calling the server with its own SDK's client.
/// Run: cargo nextest run -p tackle-mcp --run-ignored only --no-capture
#[tokio::test]
#[ignore = "benchmark"]
async fn bench_client_overhead_over_the_python_sdk_client() {
    let server = require!(time_server(), "mcp-server-time is not installed");
    let python = require!(venv_python(), "the .ci venv is not installed");
    let mgr = start(vec![("time", stdio(&server, &[]))], McpOptions::default()).await;
    let tool = find_tool(&mgr, "time__get_current_time").unwrap();
    let mut samples = Vec::new();
    for _ in 0..1000 {
        let t0 = std::time::Instant::now();
        call(&tool, json!({"timezone": "UTC"})).await.unwrap();
        samples.push(t0.elapsed().as_secs_f64() * 1000.0);
    }
    samples.sort_by(f64::total_cmp);
    let ours = (samples[500], samples[990]);
    let steps = json!([["bench", "get_current_time", {"timezone": "UTC"}, 1000]]).to_string();
    let out = std::process::Command::new(&python)
        .arg(client_script())
        .arg(steps)
        .arg("--")
        .arg(&server)
        .output()
        .unwrap();
    let sdk: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    println!(
        "tackle-mcp client: median {:.3} ms, p99 {:.3} ms; python SDK client: median {:.3} ms, p99 {:.3} ms",
        ours.0, ours.1, sdk[0]["median_ms"], sdk[0]["p99_ms"]
    );
}
