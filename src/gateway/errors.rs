//! The API's one error shape, `{"error": {"kind", "message"}}`, with the same kinds a
//! `--json` tool error carries (`tackle_protocol::ErrorKind`), so a script reads both alike.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use schemars::JsonSchema;
use serde::Serialize;
use tackle_protocol::ErrorKind;

/// The body of every error response.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ErrorDetail {
    /// `invalid_arguments`, `not_found`, `denied`, `needs_approval`, `timeout` or `failed`.
    pub kind: String,
    pub message: String,
}

/// An error response: its status, kind and message.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub kind: ErrorKind,
    pub message: String,
    /// A 405's `Allow` header: the methods the path takes.
    allow: Option<String>,
}

impl ApiError {
    pub fn new(status: StatusCode, kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            status,
            kind,
            message: message.into(),
            allow: None,
        }
    }

    /// 405: `path` is served, but not with `method`; `methods` are what it takes.
    pub fn method_not_allowed(method: &str, path: &str, methods: &[&str]) -> Self {
        let allow = methods.join(", ");
        let mut e = Self::new(
            StatusCode::METHOD_NOT_ALLOWED,
            ErrorKind::InvalidArguments,
            format!(
                "{method} is not served at {}; it takes {allow}",
                tackle_protocol::text::preview(path, 200)
            ),
        );
        e.allow = Some(allow);
        e
    }

    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, ErrorKind::Denied, message)
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, ErrorKind::Denied, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, ErrorKind::NotFound, message)
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            ErrorKind::InvalidArguments,
            message,
        )
    }

    pub fn failed(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorKind::Failed,
            message,
        )
    }

    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            error: ErrorDetail {
                kind: self.kind.as_str().to_string(),
                message: self.message.clone(),
            },
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, axum::Json(self.body())).into_response();
        // RFC 9110, 15.5.6: a 405 says which methods the resource takes.
        if let Some(allow) = self
            .allow
            .as_deref()
            .and_then(|m| axum::http::HeaderValue::from_str(m).ok())
        {
            response
                .headers_mut()
                .insert(axum::http::header::ALLOW, allow);
        }
        // The audit line of the request names the kind it ended in.
        response.extensions_mut().insert(self.kind);
        response
    }
}

/// A request body axum could not take: too large (413), or not the JSON the endpoint reads.
impl From<axum::extract::rejection::JsonRejection> for ApiError {
    fn from(rejection: axum::extract::rejection::JsonRejection) -> Self {
        let status = rejection.status();
        if status == StatusCode::PAYLOAD_TOO_LARGE {
            return Self::new(
                status,
                ErrorKind::InvalidArguments,
                "the request body is larger than gateway.max_body_bytes",
            );
        }
        Self::new(
            status,
            ErrorKind::InvalidArguments,
            crate::errors::render_error(&rejection),
        )
    }
}
