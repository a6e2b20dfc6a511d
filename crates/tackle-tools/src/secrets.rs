//! Credentials a tool holds or sends, scrubbed from everything it returns: an API that echoes a
//! token in an error, an echo server or a proxy's error page must not hand it to the model.
//! One list for every tool that talks to the network (web, media, services).

use serde_json::Value;
use tackle_protocol::{ToolError, ToolOutput};

use crate::web::net::REDACTED;

#[derive(Debug, Default, Clone)]
pub(crate) struct Secrets(Vec<String>);

impl Secrets {
    /// Shorter values are not scrubbed: replacing every `1` or `abc` would garble the text.
    const MIN_LEN: usize = 6;

    /// The credential values of `headers` (see [`Secrets::add_headers`]).
    pub(crate) fn from_headers(headers: &[(String, String)]) -> Self {
        let mut secrets = Self::default();
        secrets.add_headers(headers);
        secrets
    }

    /// Add the values of credential headers, and their parts (`Bearer TOKEN` → `TOKEN`,
    /// `sid=VALUE; Path=/` → `sid=VALUE` and `VALUE`).
    pub(crate) fn add_headers(&mut self, headers: &[(String, String)]) {
        let sensitive = headers
            .iter()
            .filter(|(k, _)| crate::web::net::is_sensitive(k));
        for (_, value) in sensitive {
            self.add(value);
            for part in value.split([' ', ';', ',']) {
                self.add(part);
                if let Some((_, v)) = part.split_once('=') {
                    self.add(v);
                }
            }
        }
    }

    pub(crate) fn new<I: IntoIterator<Item = String>>(values: I) -> Self {
        let mut s = Self::default();
        for v in values {
            s.add(v);
        }
        s
    }

    pub(crate) fn add(&mut self, value: impl AsRef<str>) {
        let value = value.as_ref().trim();
        if value.len() < Self::MIN_LEN || self.0.iter().any(|s| s == value) {
            return;
        }
        self.0.push(value.to_string());
        // Longest first, so a secret inside a longer one is not left half-replaced.
        self.0.sort_by_key(|s| std::cmp::Reverse(s.len()));
    }

    pub(crate) fn scrub(&self, text: &str) -> String {
        let mut out = text.to_string();
        for secret in &self.0 {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), REDACTED);
            }
        }
        out
    }

    pub(crate) fn scrub_error(&self, mut err: ToolError) -> ToolError {
        err.message = self.scrub(&err.message);
        if let Some(d) = err.decision.as_mut() {
            d.why = self.scrub(&d.why);
            d.rule = self.scrub(&d.rule);
        }
        err
    }

    /// A tool's result: its text and its machine-readable part.
    pub(crate) fn scrub_output(&self, mut out: ToolOutput) -> ToolOutput {
        if self.0.is_empty() {
            return out;
        }
        out.content = self.scrub(&out.content);
        out.structured = out.structured.map(|v| self.scrub_value(v));
        out
    }

    /// Every string in a JSON value, keys included.
    pub(crate) fn scrub_value(&self, value: Value) -> Value {
        match value {
            Value::String(s) => Value::String(self.scrub(&s)),
            Value::Array(a) => Value::Array(a.into_iter().map(|v| self.scrub_value(v)).collect()),
            Value::Object(o) => Value::Object(
                o.into_iter()
                    .map(|(k, v)| (self.scrub(&k), self.scrub_value(v)))
                    .collect(),
            ),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_are_replaced_in_text_errors_and_json() {
        let s = Secrets::new(["sk_test_SECRET".to_string(), "abc".to_string()]);
        assert_eq!(s.scrub("key sk_test_SECRET abc"), "key [redacted] abc");
        let e = s.scrub_error(ToolError::failed("bad sk_test_SECRET"));
        assert_eq!(e.message, "bad [redacted]");
        let v = s.scrub_value(json!({"k": ["sk_test_SECRET"], "sk_test_SECRET": 1}));
        assert_eq!(v, json!({"k": ["[redacted]"], "[redacted]": 1}));
    }

    #[test]
    fn credential_headers_and_their_parts_are_secrets() {
        let headers = vec![
            ("Authorization".to_string(), "Bearer tok-123456".to_string()),
            ("Accept".to_string(), "application/json".to_string()),
        ];
        let s = Secrets::from_headers(&headers);
        assert_eq!(s.scrub("got tok-123456"), "got [redacted]");
        assert_eq!(s.scrub("application/json"), "application/json");
    }
}
