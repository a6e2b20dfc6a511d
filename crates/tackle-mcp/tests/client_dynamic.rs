//! The client against a server on the official Python SDK that changes its tools, crashes,
//! hangs and answers big (`tests/mcp_client/dynamic_server.py`).

mod common;

use async_trait::async_trait;
use common::*;
use serde_json::json;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tackle_mcp::{McpOptions, ResultSpill, ServerState, SpillError};
use tackle_protocol::config::McpServerConfig;
use tackle_protocol::ErrorKind;

fn dynamic() -> Option<McpServerConfig> {
    let python = venv_python()?;
    Some(stdio(
        &python,
        &[&dynamic_server_script().display().to_string()],
    ))
}

#[tokio::test]
async fn list_changed_adds_and_removes_tools() {
    let config = require!(dynamic(), "the .ci venv is not installed");
    let mgr = start(vec![("dyn", config)], McpOptions::default()).await;
    assert!(find_tool(&mgr, "dyn__fresh").is_none());
    let add = find_tool(&mgr, "dyn__add_tool").unwrap();
    call(&add, json!({"name": "fresh"})).await.unwrap();
    assert!(
        eventually(Duration::from_secs(10), || find_tool(&mgr, "dyn__fresh")
            .is_some())
        .await
    );
    let fresh = find_tool(&mgr, "dyn__fresh").unwrap();
    assert!(call(&fresh, json!({}))
        .await
        .unwrap()
        .content
        .contains("I am fresh"));

    let remove = find_tool(&mgr, "dyn__remove_tool").unwrap();
    call(&remove, json!({"name": "fresh"})).await.unwrap();
    assert!(
        eventually(Duration::from_secs(10), || find_tool(&mgr, "dyn__fresh")
            .is_none())
        .await
    );
    assert!(find_tool(&mgr, "dyn__echo").is_some(), "other tools stay");
}

#[tokio::test]
async fn a_crash_mid_call_is_a_clear_error_and_the_server_comes_back() {
    let config = require!(dynamic(), "the .ci venv is not installed");
    let mgr = start(vec![("dyn", config)], McpOptions::default()).await;
    let crash = find_tool(&mgr, "dyn__crash").unwrap();
    let err = tokio::time::timeout(Duration::from_secs(10), call(&crash, json!({})))
        .await
        .expect("a crash must not hang the call")
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Failed);
    assert!(err.message.contains("MCP server `dyn`"), "{}", err.message);
    let back = eventually(Duration::from_secs(30), || {
        find_tool(&mgr, "dyn__echo").is_some()
    })
    .await;
    assert!(back, "{:?}", mgr.status().await);
    let echo = find_tool(&mgr, "dyn__echo").unwrap();
    assert_eq!(
        call(&echo, json!({"text": "again"})).await.unwrap().content,
        "again"
    );
}

#[tokio::test]
async fn the_child_gets_a_scrubbed_environment_plus_what_its_config_names() {
    let mut config = require!(dynamic(), "the .ci venv is not installed");
    config.env.insert("GIVEN".into(), "by config".into());
    // Each test binary runs in its own process under nextest, so this leaks nowhere.
    std::env::set_var("TACKLE_TEST_PARENT_SECRET", "must not leak");
    let mgr = start(vec![("dyn", config)], McpOptions::default()).await;
    let env = find_tool(&mgr, "dyn__env").unwrap();
    let get = |name: &'static str| {
        let env = env.clone();
        async move { call(&env, json!({"name": name})).await.unwrap().content }
    };
    assert_eq!(get("TACKLE_TEST_PARENT_SECRET").await, "<unset>");
    assert_eq!(get("GIVEN").await, "by config");
    assert_ne!(get("PATH").await, "<unset>");
}

struct Recorder(Mutex<Vec<usize>>);

#[async_trait]
impl ResultSpill for Recorder {
    async fn spill(&self, _tool: &str, content: &str) -> Result<PathBuf, SpillError> {
        self.0.lock().unwrap().push(content.len());
        Ok(PathBuf::from("/state/mcp/result-1.txt"))
    }
}

#[tokio::test]
async fn an_oversized_result_is_capped_and_spilled_in_full() {
    let config = require!(dynamic(), "the .ci venv is not installed");
    let spill = Arc::new(Recorder(Mutex::new(Vec::new())));
    let options = McpOptions {
        spill: Some(spill.clone()),
        ..Default::default()
    };
    let mgr = start(vec![("dyn", config)], options).await;
    let big = find_tool(&mgr, "dyn__big").unwrap();
    let out = call(&big, json!({"size": 80_000})).await.unwrap();
    assert!(out.content.len() < 52_000, "{}", out.content.len());
    assert!(out.content.contains("/state/mcp/result-1.txt"));
    assert_eq!(spill.0.lock().unwrap().as_slice(), [80_000]);
}

#[tokio::test]
async fn a_hung_call_times_out_with_the_setting_named() {
    let mut config = require!(dynamic(), "the .ci venv is not installed");
    config.call_timeout_secs = Some(1);
    let mgr = start(vec![("dyn", config)], McpOptions::default()).await;
    let sleep = find_tool(&mgr, "dyn__sleep").unwrap();
    let err = call(&sleep, json!({"seconds": 30})).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Timeout);
    assert!(err.message.contains("call_timeout_secs"), "{}", err.message);
}

#[tokio::test]
async fn a_missing_command_fails_with_the_reason_and_says_so_for_its_tools() {
    let config = stdio(std::path::Path::new("/nonexistent/mcp-server"), &[]);
    let mgr = start(vec![("ghost", config)], McpOptions::default()).await;
    let Some(ServerState::Failed(why)) = state_of(&mgr, "ghost").await else {
        panic!("{:?}", mgr.status().await)
    };
    assert!(
        why.contains("could not start `/nonexistent/mcp-server`"),
        "{why}"
    );
    let ext = mgr.extensions().pop().unwrap();
    assert_eq!(ext.name(), "ghost");
    let said = ext.unavailable("ghost__anything").unwrap();
    assert!(said.starts_with("MCP server `ghost` failed:"), "{said}");
    assert_eq!(ext.unavailable("other__tool"), None);
}

#[tokio::test]
async fn a_server_that_never_answers_fails_start_up_within_its_timeout() {
    let sleep = require!(on_path("sleep"), "no `sleep` on PATH");
    let mut config = stdio(&sleep, &["30"]);
    config.startup_timeout_secs = Some(1);
    let configs = [("mute".to_string(), config)].into_iter().collect();
    let mgr = tackle_mcp::McpManager::start(configs, McpOptions::default());
    let ext = mgr.extensions().pop().unwrap();
    assert_eq!(
        ext.unavailable("mute__x").as_deref(),
        Some("MCP server `mute` is still starting")
    );
    mgr.wait_settled(Duration::from_secs(10)).await;
    let Some(ServerState::Failed(why)) = state_of(&mgr, "mute").await else {
        panic!("{:?}", mgr.status().await)
    };
    assert!(why.contains("within 1s (startup_timeout_secs)"), "{why}");
}

#[tokio::test]
async fn cancelling_the_call_context_ends_a_running_call_at_once() {
    let config = require!(dynamic(), "the .ci venv is not installed");
    let mgr = start(vec![("dyn", config)], McpOptions::default()).await;
    let sleep = find_tool(&mgr, "dyn__sleep").unwrap();
    let cancel = tokio_util::sync::CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        trigger.cancel();
    });
    let t0 = std::time::Instant::now();
    let err = sleep
        .call(json!({"seconds": 30}), &context_with(cancel))
        .await
        .unwrap_err();
    assert!(
        t0.elapsed() < Duration::from_secs(3),
        "took {:?}",
        t0.elapsed()
    );
    assert!(err.message.contains("was cancelled"), "{}", err.message);
    let echo = find_tool(&mgr, "dyn__echo").unwrap();
    assert_eq!(
        call(&echo, json!({"text": "still here"}))
            .await
            .unwrap()
            .content,
        "still here"
    );
}
