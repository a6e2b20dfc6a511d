//! Tackle's built-in tools, one module per extension (docs/architecture.md, "Tools").
//!
//! Each module exposes an [`Extension`](tackle_protocol::Extension) whose `tools()` lists its
//! tools. Tools never do I/O themselves: they ask `cx.host()` (docs/architecture.md).
//!
//! Not here: the registry and dispatcher (`tackle-agent`), MCP tools (`tackle-mcp`).

// Outside tests, data from outside never panics the process: no unwrap, expect or panic.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]
// Undocumented public items fail CI's `clippy -D warnings`.
#![warn(missing_docs)]

mod args;
pub mod core;
pub mod dev;
pub mod devices;
pub mod fs;
pub mod gated;
pub mod media;
pub mod memory;
pub mod plugins;
pub mod schedule;
pub(crate) mod secrets;
pub mod services;
pub mod skills;
pub mod system;
pub mod web;

#[cfg(test)]
pub(crate) mod mock_host;
