//! The only code that speaks to the MCP SDK (`rmcp`). Everything else in this crate uses
//! the neutral types of [`crate::content`], so an SDK major version touches this module only.
//!
//! Both sides pin the protocol to `2025-11-25`: it keeps server-to-client requests
//! (elicitation for approvals) and unscoped `tools/list_changed` notifications, which the
//! `2026-07-28` revision replaces with multi-round-trip results and subscriptions.

mod child;
pub(crate) mod client;
mod plain;
pub(crate) mod server;
mod stdio;

/// What went wrong talking MCP.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("could not start `{command}`: {why}")]
    Spawn { command: String, why: String },
    #[error("header `{0}` is not a valid HTTP header name or value")]
    InvalidHeader(String),
    #[error("the MCP handshake failed: {0}")]
    Handshake(String),
    #[error("{0}")]
    Request(String),
    #[error("the server sent a reply that is not valid MCP: {0}")]
    Protocol(String),
    #[error("the connection to the server is closed")]
    Closed,
    #[error("{0}")]
    Config(String),
}

/// Make ring the process's TLS provider before a `reqwest` client is built: reqwest is built
/// without one, so that the binary carries a single TLS backend. Idempotent.
pub(crate) fn install_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
