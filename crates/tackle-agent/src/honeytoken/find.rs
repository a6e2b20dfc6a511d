//! Whether text carries a decoy: as written, with separators between its characters, or
//! behind URL, base64 (either alphabet, any alignment) or hex encoding, nested a few times
//! (the base64 of a URL-encoded body, a percent-encoded base64 query value). Decoded and
//! compared, not pattern-matched: the next spelling of an encoding is still that encoding.

use super::decoys::Decoy;
use data_encoding::{Encoding, HEXLOWER_PERMISSIVE};
use regex::Regex;
use std::borrow::Cow;
use std::sync::LazyLock;

/// Runs that may be base64 (standard or URL-safe alphabet); shorter than any decoy's encoding.
static BASE64_RUN: LazyLock<Regex> =
    LazyLock::new(|| crate::constant::regex(r"[A-Za-z0-9+/_\-]{20,}"));
static HEX_RUN: LazyLock<Regex> = LazyLock::new(|| crate::constant::regex(r"[0-9A-Fa-f]{32,}"));

/// Standard base64 without padding that also takes a slice cut mid-character (its last
/// bits not zero), as a run found inside longer text is.
static BASE64_LOOSE: LazyLock<Encoding> = LazyLock::new(|| {
    let mut spec = data_encoding::BASE64_NOPAD.specification();
    spec.check_trailing_bits = false;
    crate::constant::encoding(&spec)
});

/// How many encodings deep a value is unwrapped.
const MAX_DEPTH: usize = 3;
/// Bytes of decoded text examined per argument value at most: decoding shrinks text, but
/// trying every alignment of every run multiplies it.
const BUDGET: usize = 8 * 1024 * 1024;
/// The shortest random part matched on its own.
const MIN_NEEDLE: usize = 16;

/// What was found: which decoy, and how it was wrapped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The decoy's label (never its value).
    pub label: &'static str,
    /// `as written`, or the encodings peeled off, outermost first (`url, base64`).
    pub form: String,
}

/// The strings to look for, per decoy: the whole value and its random part, each also with
/// every character that is not a letter or digit taken out.
pub struct Needles {
    items: Vec<(&'static str, String)>,
}

impl Needles {
    /// The strings to look for in calls, from `decoys`.
    pub fn new(decoys: &[Decoy]) -> Self {
        let mut items = Vec::new();
        for d in decoys {
            let random = d.value.get(d.prefix_len..).unwrap_or(&d.value);
            for s in [d.value.as_str(), random] {
                let squeezed = alnum(s);
                if squeezed.len() >= MIN_NEEDLE {
                    items.push((d.label, squeezed.into_owned()));
                }
            }
        }
        Self { items }
    }

    /// The first decoy `text` carries, in any form this module knows.
    pub fn find(&self, text: &str) -> Option<Found> {
        let mut queue: Vec<(Cow<'_, str>, usize, String)> =
            vec![(Cow::Borrowed(text), 0, String::new())];
        let mut spent = 0usize;
        while let Some((text, depth, form)) = queue.pop() {
            spent = spent.saturating_add(text.len());
            if let Some(label) = self.matches(&text) {
                let form = if form.is_empty() {
                    "as written".to_string()
                } else {
                    form
                };
                return Some(Found { label, form });
            }
            if depth >= MAX_DEPTH || spent > BUDGET {
                continue;
            }
            let wrapped = |kind: &str| {
                if form.is_empty() {
                    kind.to_string()
                } else {
                    format!("{form}, {kind}")
                }
            };
            for (kind, decoded) in decodings(&text) {
                queue.push((Cow::Owned(decoded), depth + 1, wrapped(kind)));
            }
        }
        None
    }

    fn matches(&self, text: &str) -> Option<&'static str> {
        let squeezed = alnum(text);
        self.items
            .iter()
            .find(|(_, needle)| squeezed.contains(needle.as_str()))
            .map(|(label, _)| *label)
    }
}

/// `text` with everything but ASCII letters and digits taken out (`A K I A…`, `AKIA-…`).
fn alnum(text: &str) -> Cow<'_, str> {
    if text.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(text.chars().filter(char::is_ascii_alphanumeric).collect())
}

/// Every text `text` may be an encoding of, named by the encoding.
fn decodings(text: &str) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    if text.contains('%') {
        let decoded = percent_encoding::percent_decode_str(text).decode_utf8_lossy();
        if decoded != text {
            out.push(("url", decoded.into_owned()));
        }
    }
    for run in BASE64_RUN.find_iter(text) {
        let standard: String = run
            .as_str()
            .chars()
            .map(|c| match c {
                '-' => '+',
                '_' => '/',
                c => c,
            })
            .collect();
        // A run found inside longer text may start anywhere in a 4-character group.
        for skip in 0..4 {
            let Some(tail) = standard.get(skip..) else {
                continue;
            };
            // Unpadded base64 is never 1 past a whole group: that character is dropped.
            let usable = tail.len() - usize::from(tail.len() % 4 == 1);
            let Some(part) = tail.get(..usable) else {
                continue;
            };
            if let Ok(bytes) = BASE64_LOOSE.decode(part.as_bytes()) {
                out.push(("base64", String::from_utf8_lossy(&bytes).into_owned()));
            }
        }
    }
    for run in HEX_RUN.find_iter(text) {
        for skip in 0..2 {
            let Some(tail) = run.as_str().get(skip..) else {
                continue;
            };
            let Some(part) = tail.get(..tail.len() - tail.len() % 2) else {
                continue;
            };
            if let Ok(bytes) = HEXLOWER_PERMISSIVE.decode(part.as_bytes()) {
                out.push(("hex", String::from_utf8_lossy(&bytes).into_owned()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn needles() -> (Needles, Decoy) {
        let decoy = Decoy {
            label: "AWS access key id",
            value: "AKIAQX4ZK7MB2LNP5RTV".to_string(),
            prefix_len: 4,
        };
        (Needles::new(std::slice::from_ref(&decoy)), decoy)
    }

    fn b64(s: &str) -> String {
        data_encoding::BASE64.encode(s.as_bytes())
    }

    #[test]
    fn a_decoy_is_found_however_it_is_wrapped() {
        let (n, d) = needles();
        let v = d.value.as_str();
        let url = |s: &str| {
            percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
        };
        let cases = [
            (format!("https://x.example/?k={v}"), "as written"),
            (
                format!("key: A K I A {}", v.get(4..).unwrap_or_default()),
                "as written",
            ),
            // The random part alone, its well-known start dropped.
            (
                format!("id={}", v.get(4..).unwrap_or_default()),
                "as written",
            ),
            (format!("body {}", b64(&format!("user:{v}"))), "base64"),
            // Not aligned: glued to letters before it.
            (format!("xy{}", b64(&format!("aws={v}"))), "base64"),
            (
                data_encoding::BASE64URL_NOPAD.encode(format!("{{\"k\":\"{v}\"}}").as_bytes()),
                "base64",
            ),
            (data_encoding::HEXUPPER.encode(v.as_bytes()), "hex"),
            (format!("q={}", url(&format!("key {v}"))), "as written"),
            (format!("q={}", url(&b64(&format!("k={v}")))), "base64"),
            (b64(&b64(&format!("{v}\n"))), "base64, base64"),
        ];
        for (text, form) in cases {
            let found = n.find(&text);
            let found = found.unwrap_or_else(|| panic!("not found in {text}"));
            assert_eq!(found.label, "AWS access key id");
            assert!(found.form.contains(form), "{text}: {}", found.form);
        }
    }

    #[test]
    fn ordinary_text_and_other_keys_are_not_decoys() {
        let (n, d) = needles();
        let v = d.value.as_str();
        for text in [
            "cargo test --workspace".to_string(),
            b64("hello world, this is an ordinary base64 body"),
            "AKIAIOSFODNN7EXAMPLE".to_string(),
            // Most of the value is not the value.
            v.get(..15).unwrap_or_default().to_string(),
            "0123456789abcdef0123456789abcdef0123".to_string(),
        ] {
            assert_eq!(n.find(&text), None, "{text}");
        }
    }
}
