//! The agent side of Tackle: the tool [`Registry`], the one [`Dispatcher`] every front end
//! calls, the output [`Sanitizer`], the approvers that need no front end, and the
//! [`RoutineEngine`] that fires schedules.
//!
//! A tool call goes lookup → JSON-Schema validation → policy resolution → capability pre-check
//! → approval → execution (timeout, cancellation) → sanitizer → audit, in exactly one place:
//! [`Dispatcher::dispatch`]. Chat, `run`, `tools call` and the MCP server all call it.
//!
//! Not here: I/O (the host does it), policy rules themselves (`tackle-policy`), rendering.
//!
//! ```no_run
//! # async fn demo(dispatcher: tackle_agent::Dispatcher) {
//! use tackle_agent::{CallRequest, approvers::AutoApprover};
//! use std::sync::Arc;
//! let call = tackle_protocol::ToolCall {
//!     id: "1".into(),
//!     name: "calculate".into(),
//!     arguments: serde_json::json!({"expression": "7/2"}),
//! };
//! let out = dispatcher.dispatch(CallRequest::new(call, Arc::new(AutoApprover))).await;
//! assert_eq!(out.unwrap().content, "3.5");
//! # }
//! ```

// Every public item says what it is for: undocumented API fails CI.
#![warn(missing_docs)]
// Outside tests, data from outside never panics the process: no unwrap, expect or panic.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod agent_loop;
pub mod approvers;
pub mod audit;
pub mod compaction;
mod constant;
pub mod context;
pub mod dispatcher;
pub mod events;
pub mod honeytoken;
mod path_locks;
pub mod plan;
pub mod profiles;
pub mod registry;
pub mod routine;
pub mod sanitizer;
pub mod session;
pub mod session_approvals;
pub mod session_extensions;
pub mod taint;
pub mod tree;

pub use agent_loop::{AgentLoop, BudgetMode, LoopConfig, LoopError, TurnOutcome};
pub use audit::{AuditEvent, AuditSink};
pub use compaction::Compactor;
pub use dispatcher::{CallRequest, Dispatcher, DispatcherConfig, Explanation};
pub use events::{AgentEvent, DoneReason, EventSink};
pub use plan::Plan;
pub use profiles::{ProfileError, ToolProfile};
pub use registry::{InvalidSchema, Registry, RegistryError};
pub use routine::{EngineConfig, FireError, FireEvent, FireRunner, RoutineEngine};
pub use sanitizer::Sanitizer;
pub use session::Session;
pub use session_approvals::SessionApprovals;
pub use session_extensions::SessionExtensions;
pub use tree::{Tree, TreeNode, TreePlace, TreeSettings};
