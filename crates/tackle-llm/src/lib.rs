//! Talking to language models: one [`Provider`] trait with one streaming call, and clients
//! for the two wire formats Tackle speaks, OpenAI-compatible Chat Completions (OpenAI,
//! OpenRouter, Groq, Ollama, vLLM, llama.cpp, LM Studio) and the Anthropic Messages API.
//!
//! A provider turns a [`ChatRequest`] into a stream of [`StreamEvent`]s: text deltas, tool
//! calls (start, argument deltas, end; several may interleave), usage and one stop reason.
//! [`complete`] collects a stream into a [`Completion`] whose tool-call arguments stay raw
//! strings, so the caller decides what malformed JSON means. Requests are retried with
//! exponential backoff and jitter on 408/429/5xx/529 and connection errors, honouring
//! `Retry-After`, but never once content has been delivered.
//!
//! Every provider waits under one [`Timeouts`] policy (`backends[].timeouts`): connect,
//! first byte (the server was reached but says nothing) and idle (a stream stops midway).
//! A stall is reported as [`LlmError::FirstByteTimeout`] or [`LlmError::StreamStalled`] and
//! retried at most once; while nothing has arrived, the request's [`ProgressHook`] hears a
//! [`Progress::Waiting`] notice every 15 s.
//!
//! This crate is not the agent loop (no tool execution, no history) and reads no
//! configuration or environment on its own: the binary passes a [`BackendConfig`] or an
//! [`EnvSnapshot`].
//!
//! ```no_run
//! use tackle_llm::{complete, provider_from_config, ChatRequest};
//! use tackle_protocol::config::{BackendConfig, BackendType};
//! use tackle_protocol::message::Message;
//!
//! # async fn demo() -> Result<(), tackle_llm::LlmError> {
//! let backend = BackendConfig {
//!     name: "local".into(),
//!     kind: BackendType::Openai,
//!     api_base: Some("http://127.0.0.1:11434/v1".into()),
//!     api_key: None,
//!     models: vec![],
//!     stream: None,
//!     timeouts: None,
//! };
//! let provider = provider_from_config(&backend)?;
//! let req = ChatRequest::new("qwen2.5:7b", vec![Message::user("Say hi")]);
//! let turn = complete(provider.as_ref(), req).await?;
//! println!("{}", turn.text);
//! # Ok(()) }
//! ```

// Outside tests, data from outside never panics the process: no unwrap, expect or panic.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]
// Every public item says what it is and what a caller must know.
#![warn(missing_docs)]

pub mod anthropic;
mod complete;
mod config;
mod discover;
mod error;
mod http;
pub mod kinds;
pub mod openai;
mod retry;
mod timeouts;
mod types;

pub use anthropic::AnthropicProvider;
pub use complete::{complete, Assembler};
pub use config::{api_base, missing_key, provider_from_config, provider_from_config_with};
pub use discover::{discover, discover_with, DiscoveredBackend, EnvSnapshot, LocalProbe};
pub use error::LlmError;
pub use kinds::{KeyHeader, ProviderKind};
pub use openai::OpenAiProvider;
pub use retry::{parse_retry_after, RetryPolicy};
pub use timeouts::{Progress, ProgressHook, Timeouts, MAX_TIMEOUT_SECS, WAITING_NOTICE_EVERY};
pub use types::{
    AssembledToolCall, ChatRequest, Completion, EventStream, StopReason, StreamEvent, ToolDef,
    Usage,
};

use async_trait::async_trait;

/// The JSON body the provider of `kind` sends for `req`, exactly as it goes on the wire;
/// for measuring request sizes (tool profiles) and for tests.
pub fn request_body(
    kind: tackle_protocol::config::BackendType,
    req: &ChatRequest,
) -> serde_json::Value {
    match kind {
        tackle_protocol::config::BackendType::Openai => openai::request_body(req),
        tackle_protocol::config::BackendType::Anthropic => anthropic::request_body(req),
    }
}
#[cfg(doc)]
use tackle_protocol::config::BackendConfig;

/// A language model backend.
#[async_trait]
pub trait Provider: Send + Sync {
    /// The backend's configured name, used in every message about it.
    fn name(&self) -> &str;

    /// Sends one turn and streams the answer. Errors before the first content event
    /// (statuses, connection failures, early stream errors) come back here after retries;
    /// errors after it come through the stream and are never retried.
    async fn stream(&self, req: ChatRequest) -> Result<EventStream, LlmError>;
}
