//! The shared vocabulary of Tackle's tool layer.
//!
//! This crate holds the types every other crate speaks: what a tool *is* ([`ToolSpec`],
//! the [`Tool`] trait, the [`Extension`] that owns it), what a call looks like ([`ToolCall`],
//! [`ToolOutput`], [`ToolError`]), what a tool may ask the machine for ([`ToolHost`] and its
//! [`Capability`] enum), the grant data that decides whether it gets it ([`Grants`]), and the
//! typed configuration ([`config::Config`]).
//!
//! It is *not* where decisions or I/O happen: `tackle-policy` decides, `tackle-host` acts,
//! `tackle-agent` dispatches. Nothing here touches files, sockets or processes.
//!
//! ```
//! use tackle_protocol::{ToolSpec, Risk, ApprovalMode};
//! let spec = ToolSpec::new("get_time", "Returns the current UTC time", "system")
//!     .risk(Risk::Low)
//!     .approval(ApprovalMode::Never);
//! assert!(tackle_protocol::ToolName::parse(&spec.name).is_ok());
//! ```

// Outside tests, data from outside never panics the process: no unwrap, expect or panic.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]
// Every public item says what it is and what a caller must know.
#![warn(missing_docs)]

pub mod agents;
pub mod approval;
pub mod call;
pub mod config;
pub mod decision;
pub mod env;
pub mod error;
pub mod grants;
pub mod host;
pub mod ids;
pub mod message;
pub mod plugins;
pub mod secret;
pub mod skills;
pub mod spec;
pub mod suggest;
pub mod text;
pub mod tool;

pub use agents::{AgentServices, ChildKind, SpawnRequest, SpawnResult};
pub use approval::{
    ApprovalAnswer, ApprovalRequest, ApprovalUnavailable, Approver, FormAsker, FormReply,
    FormUnavailable,
};
pub use call::{ToolCall, ToolOutput};
pub use decision::{Decision, Verdict};
pub use error::{ErrorKind, ToolError};
pub use grants::{Endpoint, FsGrant, Grants, NetworkGrant, OpaqueMode, ShellGrant, ToolPolicy};
pub use host::{
    Capability, DirEntry, ExecCommand, ExecOutput, ExecRequest, FileContent, FileVersion,
    HostError, HostProvider, HttpRequest, HttpResponse, ListRequest, OutputLines, ReadRequest,
    SearchHit, SearchRequest, ToolHost, WriteReport, WriteRequest,
};
pub use spec::{ApprovalMode, NameError, Risk, ToolName, ToolSpec};
pub use tool::{CallScope, Extension, ProgressSink, Provenance, Tool, ToolCatalog, ToolContext};
