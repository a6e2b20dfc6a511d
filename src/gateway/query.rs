//! The API's query strings (`?limit=`, `?agent=`, the audit filters): `name=value` pairs,
//! percent-decoded, each name one the endpoint reads (a misspelt filter is refused rather
//! than silently matching everything).

use super::errors::ApiError;
use axum::http::Uri;
use std::collections::HashMap;

/// One query parameter an endpoint reads: the route table lists them (for `/openapi.json`)
/// and the handler reads exactly those.
#[derive(Debug, Clone, Copy)]
pub struct Param {
    pub name: &'static str,
    pub about: &'static str,
    pub kind: ParamKind,
}

#[derive(Debug, Clone, Copy)]
pub enum ParamKind {
    Text,
    /// A whole number of at least 1.
    Count,
    /// An id of this kind ([`tackle_protocol::ids::check`]).
    Id(tackle_protocol::ids::IdKind),
}

pub const LIMIT: Param = Param {
    name: "limit",
    about: "At most this many",
    kind: ParamKind::Count,
};

/// The pairs of `uri`'s query; a name outside `known`, or given twice, is a 400.
pub fn pairs(uri: &Uri, known: &[Param]) -> Result<HashMap<String, String>, ApiError> {
    let mut out = HashMap::new();
    let raw = uri.query().unwrap_or_default();
    for (name, value) in form_urlencoded::parse(raw.as_bytes()) {
        let Some(param) = known.iter().find(|p| p.name == name) else {
            let names: Vec<&str> = known.iter().map(|p| p.name).collect();
            let reads = if names.is_empty() {
                "no query parameters".to_string()
            } else {
                names.join(", ")
            };
            return Err(ApiError::bad_request(format!(
                "unknown query parameter `{}`; this endpoint reads {reads}",
                tackle_protocol::text::preview(&name, 40),
            )));
        };
        check(param, &value)?;
        if out.insert(name.to_string(), value.into_owned()).is_some() {
            return Err(ApiError::bad_request(format!(
                "query parameter `{name}` is given twice"
            )));
        }
    }
    Ok(out)
}

/// Refuses a value its parameter's kind does not take, as the document's schema says.
fn check(param: &Param, value: &str) -> Result<(), ApiError> {
    match param.kind {
        ParamKind::Text if value.is_empty() => Err(ApiError::bad_request(format!(
            "query parameter `{}` is empty",
            param.name
        ))),
        ParamKind::Text => Ok(()),
        ParamKind::Count => count(value).map(|_| ()),
        ParamKind::Id(kind) => checked_id(kind, value),
    }
}

fn count(text: &str) -> Result<usize, ApiError> {
    match text.trim().parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        Err(e) if *e.kind() == std::num::IntErrorKind::PosOverflow => Ok(usize::MAX),
        _ => Err(ApiError::bad_request(format!(
            "limit `{}` is not a whole number of at least 1",
            tackle_protocol::text::preview(text, 40)
        ))),
    }
}

/// `limit`, when given: a whole number of at least 1 (one too large for this machine is as
/// good as no limit).
pub fn limit(pairs: &HashMap<String, String>) -> Result<Option<usize>, ApiError> {
    pairs.get("limit").map(|text| count(text)).transpose()
}

/// An id from a path or a filter, checked as the CLI checks it.
pub fn checked_id(kind: tackle_protocol::ids::IdKind, id: &str) -> Result<(), ApiError> {
    tackle_protocol::ids::check(kind, id).map_err(|e| ApiError::bad_request(e.to_string()))
}
