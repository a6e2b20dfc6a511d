//! The client's Streamable HTTP session handling, against our own server (which answers an
//! unknown session with the 404 the spec asks for).

mod common;
#[path = "common/fake_service.rs"]
mod fake_service;

use common::*;
use serde_json::json;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tackle_mcp::{McpOptions, ServerState};
use tackle_protocol::config::McpServerConfig;
use tokio_util::sync::CancellationToken;

async fn serve_on(addr: SocketAddr) -> CancellationToken {
    let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
    let cancel = CancellationToken::new();
    let service = Arc::new(fake_service::FakeService);
    tokio::spawn(tackle_mcp::serve_http_on(
        service,
        listener,
        None,
        cancel.clone(),
    ));
    cancel
}

#[tokio::test]
async fn an_expired_http_session_is_reinitialised_without_failing_the_call() {
    let addr: SocketAddr = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap()
    };
    let first = serve_on(addr).await;
    let config = McpServerConfig {
        url: Some(format!("http://{addr}/mcp")),
        call_timeout_secs: Some(10),
        ..Default::default()
    };
    let mgr = start(vec![("self", config)], McpOptions::default()).await;
    assert_eq!(
        state_of(&mgr, "self").await,
        Some(ServerState::Ready),
        "{:?}",
        mgr.status().await
    );
    let echo = find_tool(&mgr, "self__echo").unwrap();
    assert_eq!(
        call(&echo, json!({"text": "one"})).await.unwrap().content,
        "one"
    );

    // A new server process knows none of the old sessions.
    first.cancel();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let _second = serve_on(addr).await;
    let echo = find_tool(&mgr, "self__echo").expect("tools stay while the session is re-made");
    let out = call(&echo, json!({"text": "two"})).await.unwrap();
    assert_eq!(out.content, "two");
}
