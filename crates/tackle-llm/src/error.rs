//! What can go wrong talking to a model, with messages that say how to fix it.

use std::time::Duration;

/// A provider call that did not produce a model turn.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    /// The configuration cannot work (bad `api_base`, missing key for a backend that needs one).
    #[error("backend `{backend}`: {message}")]
    Config {
        /// The backend's configured name (`backends[].name`).
        backend: String,
        /// What is wrong and how to fix it.
        message: String,
    },

    /// 401/403: the key is missing, wrong or lacks access.
    #[error("backend `{backend}` rejected the API key (HTTP {status}); set `api_key` for it in the config, e.g. api_key: \"${{{env_hint}}}\"{detail}")]
    Auth {
        /// The backend's configured name (`backends[].name`).
        backend: String,
        /// The HTTP status, 401 or 403.
        status: u16,
        /// The environment variable the key usually lives in (e.g. `OPENAI_API_KEY`), for
        /// the suggested config line.
        env_hint: String,
        /// `; the server said: …` with the error body, or empty when there was none.
        detail: String,
    },

    /// 404: the model does not exist on this backend (or `api_base` points at the wrong path).
    #[error("backend `{backend}` does not know model `{model}` (HTTP 404 from {url}); check the model name and `api_base`{detail}")]
    UnknownModel {
        /// The backend's configured name (`backends[].name`).
        backend: String,
        /// The model name the request asked for.
        model: String,
        /// The URL the request went to.
        url: String,
        /// `; the server said: …` with the error body, or empty when there was none.
        detail: String,
    },

    /// The server could not be reached.
    #[error("backend `{backend}`: cannot connect to {url}: {message}; is the server running and `api_base` right?")]
    Connect {
        /// The backend's configured name (`backends[].name`).
        backend: String,
        /// The URL the request went to.
        url: String,
        /// The transport error with its causes (e.g. `connection refused`).
        message: String,
    },

    /// The connection was made, then broke (closed or reset) before the response headers.
    #[error("backend `{backend}`: the model server at {url} closed the connection before answering: {message}")]
    Disconnected {
        /// The backend's configured name (`backends[].name`).
        backend: String,
        /// The URL the request went to.
        url: String,
        /// The transport error with its causes (e.g. `connection reset`).
        message: String,
    },

    /// The server accepted the connection but sent nothing (or only the response headers)
    /// within the first-byte timeout.
    #[error("backend `{backend}`: the model server at {url} accepted the connection but {} for {secs} s (first-byte timeout; raise `timeouts.first_byte_secs` of backend `{backend}` if the model is only slow to start)", first_byte_what(.headers))]
    FirstByteTimeout {
        /// The backend's configured name (`backends[].name`).
        backend: String,
        /// The URL the request went to.
        url: String,
        /// The first-byte timeout that ran out, in seconds.
        secs: u64,
        /// The response headers had arrived; the body had not started.
        headers: bool,
    },

    /// A streamed answer stopped arriving: no data within the idle timeout.
    #[error("backend `{backend}`: the stream from {url} stalled: no data for {secs} s after {events} event{} (idle timeout; `timeouts.idle_secs` of backend `{backend}`)", plural(.events))]
    StreamStalled {
        /// The backend's configured name (`backends[].name`).
        backend: String,
        /// The URL the request went to.
        url: String,
        /// The idle timeout that ran out, in seconds.
        secs: u64,
        /// Server-sent events received before the stall.
        events: u64,
    },

    /// Any other HTTP status, with the (truncated) body.
    #[error("backend `{backend}` answered HTTP {status} from {url}: {body}")]
    Status {
        /// The backend's configured name (`backends[].name`).
        backend: String,
        /// The HTTP status (not 2xx, 401, 403 or 404).
        status: u16,
        /// The URL the request went to.
        url: String,
        /// The response body, trimmed and cut to 2,000 bytes.
        body: String,
        /// How long the server asked us to wait, when it said so.
        retry_after: Option<Duration>,
    },

    /// The provider reported an error inside a successful response (an SSE `error` event).
    #[error("backend `{backend}` reported {kind}: {message}")]
    Api {
        /// The backend's configured name (`backends[].name`).
        backend: String,
        /// The provider's error type, e.g. `overloaded_error`.
        kind: String,
        /// The provider's error message, cut to 2,000 bytes.
        message: String,
        /// Overload-type errors are worth retrying when nothing was delivered yet.
        retryable: bool,
    },

    /// The response could not be understood, or the stream broke off.
    #[error("backend `{backend}`: {message}")]
    Protocol {
        /// The backend's configured name (`backends[].name`).
        backend: String,
        /// What was wrong with the response.
        message: String,
    },

    /// No backend configured and none found (environment keys, local servers).
    #[error("no LLM backend configured or found: {0}")]
    NoBackend(String),
}

impl LlmError {
    /// Whether sending the same request again may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            LlmError::Connect { .. } | LlmError::Disconnected { .. } => true,
            // Retried at most once (see `is_stall`): a server that hung once may hang again.
            LlmError::FirstByteTimeout { .. } | LlmError::StreamStalled { .. } => true,
            LlmError::Status { status, .. } => is_retryable_status(*status),
            LlmError::Api { retryable, .. } => *retryable,
            _ => false,
        }
    }

    /// A server that was reached but went silent (first-byte or idle timeout).
    pub fn is_stall(&self) -> bool {
        matches!(
            self,
            LlmError::FirstByteTimeout { .. } | LlmError::StreamStalled { .. }
        )
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

fn first_byte_what(headers: &bool) -> &'static str {
    if *headers {
        "sent no data after the response headers"
    } else {
        "sent nothing"
    }
}

fn plural(n: &u64) -> &'static str {
    if *n == 1 {
        ""
    } else {
        "s"
    }
}
