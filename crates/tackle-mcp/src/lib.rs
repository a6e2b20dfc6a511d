//! Tackle's bridge to the Model Context Protocol, both ways.
//!
//! **Client** ([`McpManager`]): starts the servers in `mcp_servers` (stdio children with a
//! scrubbed environment, or Streamable HTTP), keeps them up (start-up timeout, restart with
//! backoff, `tools/list_changed`, re-initialised HTTP sessions) and exposes each server as an
//! [`Extension`](tackle_protocol::Extension) whose tools are named `<server>__<tool>`. Every
//! MCP tool is medium risk and needs approval unless auto-approved: the server's annotations
//! are shown to the model, and trusted for policy only where the operator sets
//! `trust_annotations: true` for that server (a read-only tool then runs as Low · never).
//! The client lists the agent's readable directories as MCP roots (`roots/list`), answers a
//! server's elicitation through the front end (under `mcp serve`, the calling MCP client;
//! declined where no one can answer), lets a
//! server sample our model only where the operator allows it and a person approves each
//! request (`sampling: ask`), and logs in to OAuth-protected servers (`tackle mcp login`).
//!
//! **Server** ([`serve_stdio`], [`serve_http`]): serves a [`ToolService`] (the agent's full
//! dispatcher) to other MCP clients; approvals are asked back through MCP elicitation, or the
//! call ends as `needs_approval` when the client cannot be asked. A client's
//! `notifications/cancelled` stops the call it names. The server logs its own events
//! (`logging/setLevel`, `notifications/message`: a call started, finished, was denied), sends
//! `notifications/progress` for calls that carry a progress token (with a command's output
//! lines as they come), annotates every tool from
//! its risk and approval (`readOnlyHint`, `destructiveHint`, `openWorldHint`, `title`), lists
//! tools in pages of 100 and announces `notifications/tools/list_changed` when the service's
//! list changes. Over HTTP, requests whose `Origin` is not
//! a local page, or whose `Host` does not name this machine, are refused with 403 before
//! anything else looks at them (browsers and DNS rebinding).
//!
//! Not here: policy decisions (the dispatcher makes them for MCP tools like any other), file
//! writes (oversized results go through an injected [`ResultSpill`]), config loading.
//!
//! ```no_run
//! # async fn demo() {
//! use std::collections::BTreeMap;
//! use tackle_mcp::{McpManager, McpOptions};
//! use tackle_protocol::config::McpServerConfig;
//!
//! let mut servers = BTreeMap::new();
//! servers.insert("time".to_string(), McpServerConfig {
//!     command: Some("mcp-server-time".into()),
//!     ..Default::default()
//! });
//! let mcp = McpManager::start(servers, McpOptions::default());
//! mcp.wait_settled(std::time::Duration::from_secs(30)).await;
//! for ext in mcp.extensions() {
//!     for tool in ext.tools() {
//!         println!("{}", tool.spec().name); // time__get_current_time, time__convert_time
//!     }
//! }
//! # }
//! ```

// Every public item says what it is for and what a caller must know.
#![warn(missing_docs)]
// Outside tests, data from outside never panics the process: no unwrap, expect or panic.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod auth;
mod client;
pub mod content;
pub mod elicit;
mod events;
mod listing;
pub mod naming;
pub mod pinning;
pub mod roots;
pub mod sampling;
mod server;
mod wire;

pub use client::{McpManager, McpOptions, ServerState, ServerStatus, ToolPinStatus};
pub use content::{ResultSpill, SpillError};
pub use elicit::{ElicitAnswer, ElicitError, ElicitRequest, ElicitationHandler};
pub use roots::Roots;
pub use sampling::{SampleAnswer, SampleError, SampleRequest, SamplingHandler};
pub use server::{bind_http, serve_http, serve_http_on, serve_stdio, LocalOnly, ToolService};

use std::net::SocketAddr;

/// Why `tackle mcp serve` could not serve.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// The address is not loopback and no bearer token is configured; nothing was bound.
    #[error("refusing to serve MCP on {addr} without a bearer token: a non-loopback address needs `mcp.bearer_token` in the config")]
    TokenRequired {
        /// The address asked for.
        addr: SocketAddr,
    },
    /// The address could not be bound (in use, not this machine's, no permission).
    #[error("could not listen on {addr}: {why}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The system's reason.
        why: String,
    },
    /// Serving ended with an error (the transport failed, or the session task died); holds
    /// what went wrong.
    #[error("the MCP server stopped: {0}")]
    Serve(String),
}
