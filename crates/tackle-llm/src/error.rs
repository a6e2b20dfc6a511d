//! What can go wrong talking to a model, with messages that say how to fix it.

use std::time::Duration;

/// A provider call that did not produce a model turn.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    /// The configuration cannot work (bad `api_base`, missing key for a backend that needs one).
    #[error("backend `{backend}`: {message}")]
    Config { backend: String, message: String },

    /// 401/403: the key is missing, wrong or lacks access.
    #[error("backend `{backend}` rejected the API key (HTTP {status}); set `api_key` for it in the config, e.g. api_key: \"${{{env_hint}}}\"{detail}")]
    Auth {
        backend: String,
        status: u16,
        env_hint: String,
        detail: String,
    },

    /// 404: the model does not exist on this backend (or `api_base` points at the wrong path).
    #[error("backend `{backend}` does not know model `{model}` (HTTP 404 from {url}); check the model name and `api_base`{detail}")]
    UnknownModel {
        backend: String,
        model: String,
        url: String,
        detail: String,
    },

    /// The server could not be reached.
    #[error("backend `{backend}`: cannot connect to {url}: {message}; is the server running and `api_base` right?")]
    Connect {
        backend: String,
        url: String,
        message: String,
    },

    /// Any other HTTP status, with the (truncated) body.
    #[error("backend `{backend}` answered HTTP {status} from {url}: {body}")]
    Status {
        backend: String,
        status: u16,
        url: String,
        body: String,
        /// How long the server asked us to wait, when it said so.
        retry_after: Option<Duration>,
    },

    /// The provider reported an error inside a successful response (an SSE `error` event).
    #[error("backend `{backend}` reported {kind}: {message}")]
    Api {
        backend: String,
        kind: String,
        message: String,
        /// Overload-type errors are worth retrying when nothing was delivered yet.
        retryable: bool,
    },

    /// The response could not be understood, or the stream broke off.
    #[error("backend `{backend}`: {message}")]
    Protocol { backend: String, message: String },

    /// No backend configured and none found (environment keys, local servers).
    #[error("no LLM backend configured or found: {0}")]
    NoBackend(String),
}

impl LlmError {
    /// Whether sending the same request again may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            LlmError::Connect { .. } => true,
            LlmError::Status { status, .. } => is_retryable_status(*status),
            LlmError::Api { retryable, .. } => *retryable,
            _ => false,
        }
    }

    /// The wait the server asked for, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    pub(crate) fn protocol(backend: &str, message: impl Into<String>) -> Self {
        LlmError::Protocol {
            backend: backend.to_string(),
            message: message.into(),
        }
    }
}

/// 408, 429, 5xx and Anthropic's 529 "overloaded".
pub(crate) fn is_retryable_status(status: u16) -> bool {
    status == 408 || status == 429 || (500..600).contains(&status)
}
