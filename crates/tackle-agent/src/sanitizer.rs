//! Cleans every tool result before it reaches the model (docs/architecture.md, "The call pipeline"): base64 `data:` URIs
//! and long hex runs removed, secrets redacted, and the whole cut at a char boundary with a
//! note of how much was cut.

use regex::Regex;
use std::borrow::Cow;
use std::sync::{Arc, LazyLock};
use tackle_protocol::text::truncate_at_char_boundary;

/// `data:[mime][;params];base64,PAYLOAD`, any payload length. Parameters may carry values
/// (`;charset=utf-8`); the payload alphabet includes the URL-safe variant and padding.
static DATA_URI: LazyLock<Regex> = LazyLock::new(|| {
    crate::constant::regex(
        r"(?i)data:[a-z0-9!#$&^_.+\-]*(?:/[a-z0-9!#$&^_.+\-]*)?(?:;[a-z0-9!#$&^_.+\-]+(?:=[^;,\s]*)?)*;base64,[A-Za-z0-9+/_\-]*=*",
    )
});

/// More than 100 hex digits in a row.
static HEX_RUN: LazyLock<Regex> = LazyLock::new(|| crate::constant::regex(r"[0-9A-Fa-f]{101,}"));

/// What a removed base64 `data:` URI is replaced with.
pub const BASE64_NOTE: &str = "[base64 data removed]";
/// What a removed run of more than 100 hex digits is replaced with.
pub const HEX_NOTE: &str = "[hex data removed]";

/// Redacts secrets; supplied by `tackle-policy`'s secret redactor.
pub type Redact = Arc<dyn Fn(&str) -> Cow<'_, str> + Send + Sync>;

/// Cleans tool results before the model sees them: drops base64 `data:` URIs and long hex
/// runs, redacts secrets (with a redactor), and cuts the text at `limit` bytes.
#[derive(Clone)]
pub struct Sanitizer {
    limit: usize,
    redact: Option<Redact>,
}

impl std::fmt::Debug for Sanitizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sanitizer")
            .field("limit", &self.limit)
            .field("redacts_secrets", &self.redact.is_some())
            .finish()
    }
}

impl Default for Sanitizer {
    fn default() -> Self {
        Self::new(tackle_protocol::config::ToolsConfig::DEFAULT_OUTPUT_LIMIT)
    }
}

impl Sanitizer {
    /// A sanitizer that cuts results longer than `limit` bytes.
    pub fn new(limit: usize) -> Self {
        Self {
            limit,
            redact: None,
        }
    }

    /// Redacts secrets with `redact` as well.
    pub fn with_redactor(mut self, redact: Redact) -> Self {
        self.redact = Some(redact);
        self
    }

    /// The most bytes of a result kept, before the note of what was cut.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Blob removal and secret redaction, without the length cut (for error messages).
    pub fn clean<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = DATA_URI.replace_all(text, BASE64_NOTE);
        if let Cow::Owned(s) = HEX_RUN.replace_all(&out, HEX_NOTE) {
            out = Cow::Owned(s);
        }
        if let Some(redact) = &self.redact {
            if let Cow::Owned(s) = redact(&out) {
                out = Cow::Owned(s);
            }
        }
        out
    }

    /// Every string in a machine-readable result, keys included, cleaned like text: what is
    /// removed from `content` never comes back through `structured`.
    pub fn clean_value(&self, value: &mut serde_json::Value) {
        use serde_json::Value;
        match value {
            Value::String(s) => {
                if let Cow::Owned(c) = self.clean(s) {
                    *s = c;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.clean_value(v)),
            Value::Object(map) => {
                map.values_mut().for_each(|v| self.clean_value(v));
                // Keys almost never change: the map is rebuilt (in order) only when one does.
                if map.keys().any(|k| matches!(self.clean(k), Cow::Owned(_))) {
                    for (k, v) in std::mem::take(map) {
                        map.insert(self.clean(&k).into_owned(), v);
                    }
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    /// The full treatment: clean, then cut to the limit at a char boundary with a note.
    pub fn sanitize(&self, text: &str) -> String {
        self.sanitized(text).into_owned()
    }

    /// [`Self::sanitize`] of text the caller gives up: when nothing changes, it comes back
    /// as it was, not copied.
    pub fn sanitize_owned(&self, text: String) -> String {
        let changed = match self.sanitized(&text) {
            Cow::Borrowed(_) => None,
            Cow::Owned(s) => Some(s),
        };
        changed.unwrap_or(text)
    }

    fn sanitized<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let cleaned = self.clean(text);
        if cleaned.len() <= self.limit {
            return cleaned;
        }
        let kept = truncate_at_char_boundary(&cleaned, self.limit);
        let cut = cleaned.len() - kept.len();
        Cow::Owned(format!("{kept}{}", truncation_note(cut, cleaned.len())))
    }
}

/// The note appended to a cut result. Its length is bounded (two numbers), so output never
/// exceeds `limit + MAX_NOTE_LEN`.
pub fn truncation_note(cut: usize, total: usize) -> String {
    format!("\n[output truncated: {cut} of {total} bytes cut]")
}

/// Upper bound on [`truncation_note`]'s length.
pub const MAX_NOTE_LEN: usize = 80;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn data_uris_of_any_size_and_mime_are_removed() {
        let s = Sanitizer::new(1_000_000);
        let big = "A".repeat(200_000);
        let text = format!("x data:image/png;base64,{big}== y");
        assert_eq!(s.sanitize(&text), format!("x {BASE64_NOTE} y"));
        let with_params = "data:text/plain;charset=utf-8;base64,SGVsbG8=";
        assert_eq!(s.sanitize(with_params), BASE64_NOTE);
        assert_eq!(s.sanitize("data:;base64,AAAA"), BASE64_NOTE);
    }

    #[test]
    fn hex_runs_over_100_chars_are_removed_and_shorter_ones_kept() {
        let s = Sanitizer::new(1_000_000);
        let long = "ab".repeat(51); // 102 chars
        assert_eq!(s.sanitize(&format!("h:{long}.")), format!("h:{HEX_NOTE}."));
        let exact = "a".repeat(100);
        assert_eq!(s.sanitize(&exact), exact);
    }

    #[test]
    fn long_output_is_cut_at_a_char_boundary_with_a_note() {
        let s = Sanitizer::new(10);
        let out = s.sanitize("ééééééééé"); // 18 bytes
        assert!(
            out.starts_with("ééééé\n[output truncated: 8 of 18 bytes cut]"),
            "{out}"
        );
    }

    #[test]
    fn redactor_runs_after_blob_removal() {
        let s = Sanitizer::new(1000).with_redactor(Arc::new(|t: &str| {
            Cow::Owned(t.replace("sk-secret", "[redacted secret]"))
        }));
        assert_eq!(s.sanitize("key sk-secret"), "key [redacted secret]");
    }

    #[test]
    fn structured_values_are_cleaned_in_keys_and_values_keeping_key_order() {
        let s = Sanitizer::new(1000).with_redactor(Arc::new(|t: &str| {
            Cow::Owned(t.replace("sk-secret", "[redacted secret]"))
        }));
        let mut value = serde_json::json!({
            "a": "plain",
            "sk-secret": {"inner sk-secret": ["x sk-secret"]},
            "z": 1
        });
        s.clean_value(&mut value);
        assert!(!value.to_string().contains("sk-secret"), "{value}");
        let keys: Vec<&String> = value.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["a", "[redacted secret]", "z"]);
        let inner = &value["[redacted secret]"]["inner [redacted secret]"][0];
        assert_eq!(inner, "x [redacted secret]");
    }

    proptest! {
        #[test]
        fn sanitize_owned_gives_what_sanitize_gives(text in ".{0,300}", hex in "[0-9a-f]{0,130}", limit in 0usize..400) {
            let s = Sanitizer::new(limit);
            let text = format!("{text}{hex}");
            prop_assert_eq!(s.sanitize_owned(text.clone()), s.sanitize(&text));
        }

        #[test]
        fn sanitize_never_panics_and_respects_the_bound(text in ".{0,400}", limit in 0usize..300) {
            let s = Sanitizer::new(limit);
            let out = s.sanitize(&text);
            prop_assert!(out.len() <= limit + MAX_NOTE_LEN);
        }

        #[test]
        fn sanitize_handles_blob_like_input(prefix in "[ -~]{0,20}", hex in "[0-9a-f]{90,130}", b64 in "[A-Za-z0-9+/]{0,300}") {
            let s = Sanitizer::new(50_000);
            let out = s.sanitize(&format!("{prefix}{hex} data:a/b;base64,{b64}"));
            prop_assert!(!out.contains("base64,"));
            let has_long_hex = out.as_bytes().windows(101).any(|w| w.iter().all(u8::is_ascii_hexdigit));
            prop_assert!(!has_long_hex);
        }
    }
}
