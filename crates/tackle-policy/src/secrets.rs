//! Secret redaction for tool output: API keys, tokens and private keys become
//! `[redacted secret]` before text reaches the model or the logs.
//!
//! A curated [`regex::RegexSet`] finds which patterns occur (one linear pass; text without a
//! secret is returned borrowed), then each pattern that occurred replaces its matches. The
//! `regex` crate guarantees linear time, so no input can make redaction slow. Secrets known
//! from the loaded config (`extra_exact`, 8 characters or longer) are replaced wherever they
//! appear.
//!
//! ```
//! use tackle_policy::secrets::SecretRedactor;
//! let r = SecretRedactor::new(vec![]);
//! assert_eq!(r.redact("key: ghp_abcdefghijklmnopqrstuvwxyz0123456789"), "key: [redacted secret]");
//! ```

use regex::{Captures, Regex, RegexSet};
use std::borrow::Cow;

/// What a secret is replaced with.
pub const REDACTED: &str = "[redacted secret]";

/// Secrets from the config shorter than this are ignored: they would redact ordinary words.
const MIN_EXACT_LEN: usize = 8;

/// How much of a match is secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// The whole match.
    Whole,
    /// Capture group 1 only (the value after a name such as `aws_secret_access_key=`).
    Group,
    /// Group 1, and only when it looks random (generic `TOKEN=…` assignments).
    RandomGroup,
}

const PATTERNS: &[(&str, Scope)] = &[
    // Whole PEM private keys, or to the end of the text when the end marker was cut off.
    (
        r"-----BEGIN[ A-Z0-9]*PRIVATE KEY-----(?s:.*?)(?:-----END[ A-Z0-9]*PRIVATE KEY-----|\z)",
        Scope::Whole,
    ),
    (r"sk-ant-[A-Za-z0-9_\-]{20,}", Scope::Whole),
    (
        r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}",
        Scope::Whole,
    ),
    (r"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}", Scope::Whole),
    (r"github_pat_[A-Za-z0-9_]{20,}", Scope::Whole),
    (r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b", Scope::Whole),
    (
        r#"(?i)aws_secret_access_key["']?\s*[:=]\s*["']?([A-Za-z0-9/+=]{40})"#,
        Scope::Group,
    ),
    (r"xox[abprs]-[A-Za-z0-9\-]{10,}", Scope::Whole),
    (
        r"https://hooks\.slack\.com/services/[A-Za-z0-9/_\-]+",
        Scope::Whole,
    ),
    (r"AIza[0-9A-Za-z_\-]{35}", Scope::Whole),
    (r"(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{10,}", Scope::Whole),
    (
        r"eyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]*",
        Scope::Whole,
    ),
    (
        r"(?i)\b(?:proxy-)?authorization\s*:\s*(?:bearer|basic|token)\s+([A-Za-z0-9._~+/=\-]{8,})",
        Scope::Group,
    ),
    (r"(?i)\bbearer\s+([A-Za-z0-9._~+/=\-]{20,})", Scope::Group),
    (
        r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^/\s:@]+:([^/\s@]{3,})@",
        Scope::Group,
    ),
    (
        r#"(?i)[A-Z0-9_.\-]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PWD|CREDENTIALS?)[A-Z0-9_.\-]*["']?\s*[:=]\s*["']?([^\s"',;]{6,})"#,
        Scope::RandomGroup,
    ),
];

/// Finds and replaces secrets in text. Build once, use for every tool result.
#[derive(Debug, Clone)]
pub struct SecretRedactor {
    set: RegexSet,
    patterns: Vec<(Regex, Scope)>,
}

impl SecretRedactor {
    /// A redactor for the built-in patterns plus the exact strings in `extra_exact`.
    pub fn new(extra_exact: Vec<String>) -> Self {
        let mut sources: Vec<(String, Scope)> = PATTERNS
            .iter()
            .map(|(p, s)| ((*p).to_string(), *s))
            .collect();
        let mut exact: Vec<String> = extra_exact
            .into_iter()
            .filter(|s| s.chars().count() >= MIN_EXACT_LEN)
            .collect();
        // Longest first, so a secret that contains another is replaced whole.
        exact.sort_by_key(|s| std::cmp::Reverse(s.len()));
        exact.dedup();
        if !exact.is_empty() {
            let alternation: Vec<String> = exact.iter().map(|s| regex::escape(s)).collect();
            sources.push((alternation.join("|"), Scope::Whole));
        }
        let mut patterns = Vec::new();
        let mut kept = Vec::new();
        for (src, scope) in sources {
            // The built-in patterns are fixed and tested; a config string that still fails to
            // compile (e.g. too large) is skipped rather than disabling every other pattern.
            if let Ok(re) = Regex::new(&src) {
                patterns.push((re, scope));
                kept.push(src);
            }
        }
        let set = RegexSet::new(&kept).unwrap_or_else(|_| RegexSet::empty());
        Self { set, patterns }
    }

    /// `text` with every secret replaced by `[redacted secret]`; borrowed when nothing matched.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let hits = self.set.matches(text);
        if !hits.matched_any() {
            return Cow::Borrowed(text);
        }
        let mut out: Cow<'a, str> = Cow::Borrowed(text);
        for i in hits.iter() {
            let Some((re, scope)) = self.patterns.get(i) else {
                continue;
            };
            let replaced = re.replace_all(&out, |c: &Captures<'_>| replace(c, *scope));
            if let Cow::Owned(s) = replaced {
                out = Cow::Owned(s);
            }
        }
        out
    }
}

fn replace(c: &Captures<'_>, scope: Scope) -> String {
    let Some(whole) = c.get(0) else {
        return String::new();
    };
    let group = match scope {
        Scope::Whole => return REDACTED.to_string(),
        Scope::Group | Scope::RandomGroup => c.get(1),
    };
    let Some(g) = group else {
        return REDACTED.to_string();
    };
    if scope == Scope::RandomGroup && !is_credential(whole.as_str(), g.as_str()) {
        return whole.as_str().to_string();
    }
    let text = whole.as_str();
    let (start, end) = (g.start() - whole.start(), g.end() - whole.start());
    format!(
        "{}{REDACTED}{}",
        text.get(..start).unwrap_or(""),
        text.get(end..).unwrap_or("")
    )
}

/// Whether a `NAME=value` assignment holds a credential. Passwords and secrets count whatever
/// they look like (6+ characters, not a placeholder); keys and tokens must look random (12+
/// characters, mixed classes), so `MAX_TOKENS=4096` or `key: string` stay.
fn is_credential(assignment: &str, value: &str) -> bool {
    const PLACEHOLDERS: &[&str] = &[
        "string",
        "null",
        "none",
        "undefined",
        "required",
        "optional",
        "true",
        "false",
        "password",
        "secret",
        "redacted",
        "example",
        "changeit",
        "xxxxxx",
        "hidden",
    ];
    let lower = value.to_ascii_lowercase();
    if is_placeholder(value) || PLACEHOLDERS.contains(&lower.as_str()) {
        return false;
    }
    let name_len = assignment.len().saturating_sub(value.len());
    let name = assignment
        .get(..name_len)
        .unwrap_or("")
        .to_ascii_uppercase();
    let password = ["PASSWORD", "PASSWD", "PWD", "SECRET"]
        .iter()
        .any(|n| name.contains(n));
    (password && value.chars().count() >= 6) || (value.chars().count() >= 12 && looks_random(value))
}

fn is_placeholder(v: &str) -> bool {
    v.starts_with(['$', '<', '{', '*', '%', '(', '['])
        || v.chars().all(|c| c == v.chars().next().unwrap_or(c))
}

/// A value that looks like a credential rather than a word: mixing character classes, and
/// with enough distinct characters.
fn looks_random(v: &str) -> bool {
    let classes = [
        v.chars().any(|c| c.is_ascii_lowercase()),
        v.chars().any(|c| c.is_ascii_uppercase()),
        v.chars().any(|c| c.is_ascii_digit()),
        v.chars().any(|c| !c.is_ascii_alphanumeric()),
    ]
    .iter()
    .filter(|b| **b)
    .count();
    classes >= 2 && entropy(v) >= 3.0
}

/// Shannon entropy in bits per character.
fn entropy(v: &str) -> f64 {
    let mut counts = std::collections::HashMap::new();
    let mut n = 0usize;
    for c in v.chars() {
        *counts.entry(c).or_insert(0usize) += 1;
        n += 1;
    }
    let n = n as f64;
    counts
        .values()
        .map(|&k| {
            let p = k as f64 / n;
            -p * p.log2()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(text: &str) -> String {
        SecretRedactor::new(vec!["my-config-secret-value".into(), "short".into()])
            .redact(text)
            .into_owned()
    }

    #[test]
    fn every_known_token_shape_is_redacted() {
        let cases = [
            "sk-abcdefghijklmnopqrstuvwxyz012345",
            "sk-proj-abcdefghijklmnopqrstuvwxyz012345",
            "sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
            "AKIAIOSFODNN7EXAMPLE",
            "xoxb-123456789012-abcdefghijkl",
            "AIzaSyA-abcdefghijklmnopqrstuvwxyz01234",
            "sk_live_abcdefghijklmnop",
            "rk_live_abcdefghijklmnop",
            "sk_test_abcdefghijklmnop",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "my-config-secret-value",
        ];
        for secret in cases {
            let out = r(&format!("before {secret} after"));
            assert_eq!(out, format!("before {REDACTED} after"), "{secret}");
        }
    }

    #[test]
    fn only_the_value_after_a_name_is_redacted() {
        let out = r("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY");
        assert_eq!(out, format!("aws_secret_access_key = {REDACTED}"));
        assert_eq!(
            r("API_TOKEN=Zx9_kQ2mR7vLp4Tn"),
            format!("API_TOKEN={REDACTED}")
        );
        assert_eq!(
            r("Authorization: Bearer abc.DEF-123_xyz"),
            format!("Authorization: Bearer {REDACTED}")
        );
        assert_eq!(
            r("https://bob:hunter2x@example.com/"),
            format!("https://bob:{REDACTED}@example.com/")
        );
    }

    #[test]
    fn ordinary_settings_and_short_config_values_are_left_alone() {
        assert_eq!(r("PASSWORD=hunter2!"), format!("PASSWORD={REDACTED}"));
        assert_eq!(
            r("db_password: \"correcthorse\""),
            format!("db_password: \"{REDACTED}\"")
        );
        for text in [
            "password: string",
            "keyboard=qwerty12",
            "MAX_TOKENS=4096",
            "password: ********",
            "token: undefined",
            "short story",
            "KEY=${OPENAI_API_KEY}",
        ] {
            assert_eq!(r(text), text);
        }
    }

    #[test]
    fn a_pem_block_is_redacted_whole_even_when_cut_off() {
        let pem = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----";
        assert_eq!(r(&format!("x\n{pem}\ny")), format!("x\n{REDACTED}\ny"));
        assert_eq!(
            r("a -----BEGIN RSA PRIVATE KEY-----\nMIIEow"),
            format!("a {REDACTED}")
        );
    }

    #[test]
    fn text_without_secrets_is_borrowed() {
        let red = SecretRedactor::new(vec![]);
        assert!(matches!(red.redact("hello world"), Cow::Borrowed(_)));
    }
}
