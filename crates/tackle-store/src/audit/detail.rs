//! What a record proves about its call beyond the decision
//! (docs/decisions/0032-tamper-evident-audit.md, "What records say"): the protection layer
//! that decided, digests of the full arguments and of the result, and the redacted arguments
//! whole (bounded) so `tackle policy replay` re-plans the call as it was made.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use tackle_protocol::text::truncate_at_char_boundary;

/// The longest redacted arguments kept whole; longer ones are cut at a char boundary and
/// flagged, and replay does not re-plan them.
pub const ARGUMENTS_MAX_BYTES: usize = 16 * 1024;

/// A record's evidence. Every field is empty in records written before it was kept
/// (schema version 16) and in records of front ends that do not dispatch tool calls.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditDetail {
    /// The protection layer whose rule decided (`lookup`, `schema`, `policy`, `taint`,
    /// `approval`, `tool`, `sandbox`: the dispatcher's `Layer`).
    #[serde(default)]
    pub layer: String,
    /// Hex SHA-256 of the canonical JSON (keys sorted, compact) of the full arguments.
    #[serde(default)]
    pub args_digest: Option<String>,
    /// Hex SHA-256 of the result text as returned to the model (the error message when the
    /// call failed); absent until the call ends.
    #[serde(default)]
    pub result_digest: Option<String>,
    /// The arguments after the redactor, whole up to [`ARGUMENTS_MAX_BYTES`].
    #[serde(default)]
    pub arguments: Option<String>,
    /// `arguments` were cut at [`ARGUMENTS_MAX_BYTES`].
    #[serde(default)]
    pub arguments_cut: bool,
}

impl AuditDetail {
    /// Keeps `redacted` (the arguments' JSON text after the redactor), cut to
    /// [`ARGUMENTS_MAX_BYTES`] and flagged when longer.
    pub fn keep_arguments(&mut self, redacted: &str) {
        let kept = truncate_at_char_boundary(redacted, ARGUMENTS_MAX_BYTES);
        self.arguments_cut = kept.len() < redacted.len();
        self.arguments = Some(kept.to_string());
    }

    /// Cuts what a caller handed in to the stored bound, before it is written and hashed.
    pub(crate) fn normalize(&mut self) {
        if let Some(args) = &self.arguments {
            if args.len() > ARGUMENTS_MAX_BYTES {
                self.arguments = Some(truncate_at_char_boundary(args, ARGUMENTS_MAX_BYTES).into());
                self.arguments_cut = true;
            }
        }
    }
}

/// Hex SHA-256 of `value` as canonical JSON: objects' keys in sorted order, no whitespace.
/// Streamed into the hash, so a call's megabyte of arguments is not copied to be sorted.
pub fn json_digest(value: &Value) -> String {
    let mut h = HashWriter(Sha256::new());
    canonical(value, &mut h);
    super::key::hex(&h.0.finalize())
}

/// Hex SHA-256 of `text`.
pub fn text_digest(text: &str) -> String {
    super::key::hex(&Sha256::digest(text.as_bytes()))
}

struct HashWriter(Sha256);

impl std::io::Write for HashWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Writes `value` as `serde_json` writes it compactly once `sort_all_objects` has run.
fn canonical(value: &Value, out: &mut HashWriter) {
    use std::io::Write as _;
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let _ = out.write_all(b"{");
            for (n, key) in keys.into_iter().enumerate() {
                if n > 0 {
                    let _ = out.write_all(b",");
                }
                // Writing into a hash cannot fail; a string always serialises.
                let _ = serde_json::to_writer(&mut *out, key);
                let _ = out.write_all(b":");
                if let Some(v) = map.get(key) {
                    canonical(v, out);
                }
            }
            let _ = out.write_all(b"}");
        }
        Value::Array(items) => {
            let _ = out.write_all(b"[");
            for (n, v) in items.iter().enumerate() {
                if n > 0 {
                    let _ = out.write_all(b",");
                }
                canonical(v, out);
            }
            let _ = out.write_all(b"]");
        }
        scalar => {
            let _ = serde_json::to_writer(&mut *out, scalar);
        }
    }
}

/// The columns [`detail_from_row`] reads, in its order.
pub(crate) const DETAIL_COLUMNS: &str =
    "layer, args_digest, result_digest, arguments, arguments_cut";

/// The detail from [`DETAIL_COLUMNS`] starting at column `at`.
pub(crate) fn detail_from(
    r: &crate::sql::Row,
    at: usize,
) -> Result<AuditDetail, crate::StoreError> {
    Ok(AuditDetail {
        layer: r.text(at)?,
        args_digest: r.opt_text(at + 1)?,
        result_digest: r.opt_text(at + 2)?,
        arguments: r.opt_text(at + 3)?,
        arguments_cut: r.flag(at + 4)?,
    })
}

/// [`detail_from`] on a row SQLite returned directly, for tests that rewrite the file.
#[cfg(test)]
pub(crate) fn detail_from_row(r: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<AuditDetail> {
    Ok(AuditDetail {
        layer: r.get(at)?,
        args_digest: r.get(at + 1)?,
        result_digest: r.get(at + 2)?,
        arguments: r.get(at + 3)?,
        arguments_cut: r.get(at + 4)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_digest_is_of_the_canonical_text_whatever_the_key_order() {
        let a: Value = serde_json::from_str(r#"{"b":[1,{"y":"é\"","x":null}],"a":true}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"a":true,"b":[1,{"x":null,"y":"é\""}]}"#).unwrap();
        assert_eq!(json_digest(&a), json_digest(&b));
        let mut sorted = a.clone();
        sorted.sort_all_objects();
        assert_eq!(json_digest(&a), text_digest(&sorted.to_string()));
        assert_ne!(json_digest(&a), json_digest(&json!({"a": false})));
        assert_eq!(json_digest(&a).len(), 64);
    }

    #[test]
    fn arguments_past_the_bound_are_cut_on_a_char_and_flagged() {
        let mut d = AuditDetail::default();
        d.keep_arguments("{}");
        assert_eq!(
            (d.arguments.as_deref(), d.arguments_cut),
            (Some("{}"), false)
        );
        let long = format!("\"{}\"", "é".repeat(ARGUMENTS_MAX_BYTES));
        d.keep_arguments(&long);
        let kept = d.arguments.clone().unwrap();
        assert!(d.arguments_cut);
        assert!(kept.len() <= ARGUMENTS_MAX_BYTES && kept.len() > ARGUMENTS_MAX_BYTES - 4);
    }
}
