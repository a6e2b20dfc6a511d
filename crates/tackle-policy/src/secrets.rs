//! Secret redaction for tool output: API keys, tokens and private keys become
//! `[redacted secret]` before text reaches the model or the logs.
//!
//! A curated [`regex::RegexSet`] finds which patterns occur (one linear pass; text without a
//! secret is returned borrowed), then each pattern that occurred replaces its matches. The
//! `regex` crate guarantees linear time, so no input can make redaction slow. Secrets known
//! from the loaded config (`extra_exact`) are replaced wherever they appear: as written,
//! URL-encoded, JSON-escaped, and base64-encoded inside a longer string (`user:SECRET` of a
//! Basic header), and so are their parts (the token of `Bearer TOKEN`, the value of
//! `sid=VALUE; Path=/`).
//!
//! A secret (or part) shorter than [`MIN_EXACT_LEN`] characters is not matched exactly: a
//! 4-character password would otherwise redact every word that contains it. Such a value is
//! still caught by the patterns when it appears after a name (`password=…`); the config loader
//! warns about it.
//!
//! ```
//! use tackle_policy::secrets::SecretRedactor;
//! let r = SecretRedactor::new(vec![]);
//! assert_eq!(r.redact("key: ghp_abcdefghijklmnopqrstuvwxyz0123456789"), "key: [redacted secret]");
//! ```

use regex::{Captures, Regex, RegexSet};
use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

/// What a secret is replaced with.
pub const REDACTED: &str = "[redacted secret]";

/// Secrets from the config shorter than this are ignored: they would redact ordinary words.
pub const MIN_EXACT_LEN: usize = 8;

/// How much of a match is secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// The whole match.
    Whole,
    /// The first capture group that matched (the value after a name such as
    /// `aws_secret_access_key=`).
    Group,
    /// That group, and only when it looks random (generic `TOKEN=…` assignments).
    RandomGroup,
    /// That group, when it mixes upper case, lower case and digits (a key glued to a word).
    MixedGroup,
    /// The whole match, when it is base64 whose decoded start names a private key.
    Base64Pem,
}

/// The end of a PEM private key block: `-----END … PRIVATE KEY-----` or `… KEY BLOCK-----`.
const PEM: &str = r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|\z)";

const PATTERNS: &[(&str, Scope)] = &[
    // Whole PEM private keys, or to the end of the text when the end marker was cut off.
    (PEM, Scope::Whole),
    // The same, URL- or form-encoded (`-----BEGIN%20PRIVATE%20KEY-----%0AMII…`).
    (
        r"-----BEGIN(?:[A-Z0-9+]|%20)*PRIVATE(?:\+|%20)KEY(?:(?:\+|%20)BLOCK)?-----[A-Za-z0-9%+/=]*(?:-----END(?:[A-Z0-9+]|%20)*KEY(?:(?:\+|%20)BLOCK)?-----)?",
        Scope::Whole,
    ),
    // A PEM block encoded as base64 (Kubernetes secrets, `base64 key.pem`).
    (
        r"LS0tLS1CRUdJTi[A-Za-z0-9+/=]*(?:\r?\n[ \t]*[A-Za-z0-9+/=]{4,})*",
        Scope::Base64Pem,
    ),
    // The body of a PEM key whose BEGIN line was cut off (a read from an offset), up to its
    // END line, and OpenSSH key bodies by their `openssh-key-v1` magic.
    (
        r"(?:[A-Za-z0-9+/=]{16,}\r?\n)+-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----",
        Scope::Whole,
    ),
    (
        r"b3BlbnNzaC1rZXktdjE[A-Za-z0-9+/=]*(?:\r?\n[A-Za-z0-9+/=]{4,})*",
        Scope::Whole,
    ),
    // PuTTY private keys.
    (
        r"Private-Lines: *\d+\r?\n(?:[A-Za-z0-9+/=]+\r?\n?)+",
        Scope::Whole,
    ),
    (r"sk-ant-[A-Za-z0-9_\-]{20,}", Scope::Whole),
    (
        r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}",
        Scope::Whole,
    ),
    // `sk-…` glued to a word (`OPENAI_sk-…`, `%3Dsk-…`); mixed classes keep slugs such as
    // `risk-assessment-…` out.
    (
        r"[A-Za-z0-9_](sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,})",
        Scope::MixedGroup,
    ),
    (r"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}", Scope::Whole),
    (r"github_pat_[A-Za-z0-9_]{20,}", Scope::Whole),
    (r"glpat-[A-Za-z0-9_\-]{20,}", Scope::Whole),
    (r"npm_[A-Za-z0-9]{36}", Scope::Whole),
    (r"hf_[A-Za-z0-9]{30,}", Scope::Whole),
    (r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{20,}", Scope::Whole),
    (r"ya29\.[0-9A-Za-z_\-]{20,}", Scope::Whole),
    (
        r"SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}",
        Scope::Whole,
    ),
    (r"whsec_[A-Za-z0-9+/=]{24,}", Scope::Whole),
    (r"dop_v1_[a-f0-9]{64}", Scope::Whole),
    (r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}", Scope::Whole),
    // No word boundary: URL-encoded text glues the key to `%22`.
    (r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}", Scope::Whole),
    (
        r#"(?i)aws_secret_access_key["']?\s*[:=]\s*["']?((?:[A-Za-z0-9/+=]|\\/){40,})"#,
        Scope::Group,
    ),
    (r"xox[abprs]-[A-Za-z0-9\-]{10,}", Scope::Whole),
    (r"xapp-\d-[A-Za-z0-9\-]{10,}", Scope::Whole),
    (
        r"https://hooks\.slack\.com/services/[A-Za-z0-9/_\-]+",
        Scope::Whole,
    ),
    (
        r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]+",
        Scope::Whole,
    ),
    (r"\b\d{8,10}:AA[A-Za-z0-9_\-]{33}", Scope::Whole),
    // Signed URLs: Azure SAS `sig=`, S3 and GCS `X-Amz-Signature=` / `X-Goog-Signature=`.
    (
        r"(?i)[?&](?:sig|x-amz-signature|x-goog-signature)=([A-Za-z0-9%+/=]{20,})",
        Scope::Group,
    ),
    (r"AIza[0-9A-Za-z_\-]{35}", Scope::Whole),
    (r"(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{10,}", Scope::Whole),
    (
        r"eyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]*",
        Scope::Whole,
    ),
    // Header lines and their JSON / dict forms (`"Authorization": "Basic …"`).
    (
        r#"(?i)\b(?:proxy-)?authorization["']?\s*[:=]\s*["']?(?:(?:bearer|basic|token|digest|negotiate|apikey|key)\s+)?([A-Za-z0-9._~+/=\-]{8,})"#,
        Scope::Group,
    ),
    (
        r#"(?i)\b(?:set-)?cookie["']?\s*:\s*["']?([^\r\n"']{8,})"#,
        Scope::Group,
    ),
    (r"(?i)\bbearer\s+([A-Za-z0-9._~+/=\-]{20,})", Scope::Group),
    // `scheme://user:password@host`; the password runs to the last `@` of the authority.
    (
        r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^/\s:@]+:([^/\s?#]+)@",
        Scope::Group,
    ),
    // `curl -u user:password`.
    (
        r#"(?:^|\s)(?:-u|--user)\s*["']?[^\s:"']+:([^\s"']+)"#,
        Scope::Group,
    ),
    // `NAME=value`, `"name": "value"`: a quoted value runs to its closing quote.
    (
        r#"(?i)[A-Z0-9_.\-]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PWD|CREDENTIALS?)[A-Z0-9_.\-]*["']?\s*[:=]\s*(?:"((?:[^"\\\r\n]|\\.){6,})"|'([^'\r\n]{6,})'|["']?([^\s"',;]{6,}))"#,
        Scope::RandomGroup,
    ),
];

/// Finds and replaces secrets in text. Build once, use for every tool result.
///
/// The patterns are compiled on the first redaction, not when the redactor is built: a
/// command that never redacts (`tackle tools list`) should not pay for compiling them.
/// Clones share one compiled set.
#[derive(Debug, Clone)]
pub struct SecretRedactor {
    exact: Arc<[String]>,
    compiled: Arc<OnceLock<Compiled>>,
}

#[derive(Debug)]
struct Compiled {
    /// `None` when the patterns are too many to combine; each then runs on its own.
    set: Option<RegexSet>,
    patterns: Vec<(Regex, Scope)>,
}

impl SecretRedactor {
    /// A redactor for the built-in patterns plus the exact strings in `extra_exact` and
    /// their parts (see [`parts`]).
    pub fn new(extra_exact: Vec<String>) -> Self {
        let mut exact: Vec<String> = extra_exact
            .iter()
            .flat_map(|s| std::iter::once(s.as_str()).chain(parts(s)))
            .map(str::trim)
            .filter(|s| s.chars().count() >= MIN_EXACT_LEN)
            .map(str::to_string)
            .collect();
        // Longest first, so a secret that contains another is replaced whole.
        exact.sort_by_key(|s| std::cmp::Reverse(s.len()));
        exact.dedup();
        Self {
            exact: exact.into(),
            compiled: Arc::default(),
        }
    }

    fn compiled(&self) -> &Compiled {
        self.compiled.get_or_init(|| compile(&self.exact))
    }

    /// `text` with every secret replaced by `[redacted secret]`; borrowed when nothing matched.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let compiled = self.compiled();
        let hits: Vec<usize> = match &compiled.set {
            Some(set) => set.matches(text).into_iter().collect(),
            None => (0..compiled.patterns.len()).collect(),
        };
        let mut out: Cow<'a, str> = Cow::Borrowed(text);
        for i in hits {
            let Some((re, scope)) = compiled.patterns.get(i) else {
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

/// The built-in patterns and the exact strings, each compiled, and the set that finds which
/// of them match.
fn compile(exact: &[String]) -> Compiled {
    let mut patterns: Vec<(Regex, Scope)> = Vec::new();
    let mut kept = Vec::new();
    for (src, scope) in PATTERNS {
        // The built-in patterns are fixed and tested; this never skips one.
        if let Ok(re) = Regex::new(src) {
            patterns.push((re, *scope));
            kept.push((*src).to_string());
        }
    }
    for chunk in exact.chunks(EXACT_CHUNK) {
        for (src, re) in exact_regexes(chunk)
            .into_iter()
            .chain(base64_regexes(chunk))
        {
            patterns.push((re, Scope::Whole));
            kept.push(src);
        }
    }
    // Too large a set would otherwise turn redaction off: then every pattern runs alone.
    let set = RegexSet::new(&kept).ok();
    Compiled { set, patterns }
}

fn replace(c: &Captures<'_>, scope: Scope) -> String {
    let Some(whole) = c.get(0) else {
        return String::new();
    };
    let text = whole.as_str();
    let group = match scope {
        Scope::Whole => return REDACTED.to_string(),
        Scope::Base64Pem if names_private_key(text) => return REDACTED.to_string(),
        Scope::Base64Pem => return text.to_string(),
        Scope::Group | Scope::RandomGroup | Scope::MixedGroup => c.iter().skip(1).flatten().next(),
    };
    let Some(g) = group else {
        return REDACTED.to_string();
    };
    let keep = match scope {
        Scope::RandomGroup => !is_credential(text, g.as_str()),
        Scope::MixedGroup => !is_mixed(g.as_str()),
        _ => false,
    };
    if keep {
        return text.to_string();
    }
    let (start, end) = (g.start() - whole.start(), g.end() - whole.start());
    format!(
        "{}{REDACTED}{}",
        text.get(..start).unwrap_or(""),
        text.get(end..).unwrap_or("")
    )
}

/// The pieces of a secret that are secrets on their own: what a header value splits into at
/// spaces, `;` and `,` (`Bearer TOKEN` → `TOKEN`), and the value of each `name=value`
/// (`sid=VALUE; Path=/` → `VALUE`). A tool that sends the header may show any of them.
pub fn parts(secret: &str) -> impl Iterator<Item = &str> {
    secret
        .split(|c: char| c.is_whitespace() || c == ';' || c == ',')
        .flat_map(|part| {
            let value = part.split_once('=').map(|(_, v)| v);
            std::iter::once(part).chain(value)
        })
        .filter(move |p| !p.is_empty() && *p != secret)
}

/// Config secrets are compiled this many to a regex, so one too large to compile costs
/// only its own chunk the encoded forms.
const EXACT_CHUNK: usize = 32;

/// Regexes for a chunk of config secrets: with their encoded forms when that compiles, else
/// as written, else one by one. A secret is never dropped for the others' sake.
fn exact_regexes(chunk: &[String]) -> Vec<(String, Regex)> {
    let join = |f: &dyn Fn(&str) -> String| -> String {
        chunk.iter().map(|s| f(s)).collect::<Vec<_>>().join("|")
    };
    for src in [join(&exact_pattern), join(&|s| regex::escape(s))] {
        if let Ok(re) = Regex::new(&src) {
            return vec![(src, re)];
        }
    }
    chunk
        .iter()
        .filter_map(|s| {
            let src = regex::escape(s);
            Regex::new(&src).ok().map(|re| (src, re))
        })
        .collect()
}

/// Characters of standard and URL-safe base64.
const B64_STD: &str = "[A-Za-z0-9+/]";
const B64_URL: &str = "[A-Za-z0-9_-]";

/// Regexes for the base64 forms of a chunk of config secrets: the whole base64 run (to its
/// padding) that contains a secret encoded at any of the three byte alignments, so
/// `Basic base64(user:SECRET)` and `base64(SECRET:)` are redacted whole, not only `SECRET`.
fn base64_regexes(chunk: &[String]) -> Vec<(String, Regex)> {
    let mut std_cores = Vec::new();
    let mut url_cores = Vec::new();
    for secret in chunk {
        for core in base64_cores(secret.as_bytes()) {
            let url = core.replace('+', "-").replace('/', "_");
            if url != core {
                url_cores.push(regex::escape(&url));
            }
            std_cores.push(regex::escape(&core));
        }
    }
    let mut out = Vec::new();
    for (class, cores) in [(B64_STD, std_cores), (B64_URL, url_cores)] {
        if cores.is_empty() {
            continue;
        }
        let src = format!("{class}*(?:{}){class}*={{0,2}}", cores.join("|"));
        if let Ok(re) = Regex::new(&src) {
            out.push((src, re));
        }
    }
    out
}

/// The base64 text that `secret` always encodes to when it sits at byte offset 0, 1 or 2 of
/// a 3-byte group: the characters made only of the secret's bits. Whatever precedes or follows
/// it in the encoded string, one of these three appears in the encoding.
fn base64_cores(secret: &[u8]) -> Vec<String> {
    use base64::Engine;
    let mut out = Vec::new();
    for shift in 0..3usize {
        let mut bytes = vec![0u8; shift];
        bytes.extend_from_slice(secret);
        let encoded = base64::engine::general_purpose::STANDARD_NO_PAD.encode(&bytes);
        // Characters carry 6 bits: skip those holding any filler bit, and the last one when
        // it holds bits of whatever follows the secret.
        let start = (8 * shift).div_ceil(6);
        let end = 8 * bytes.len() / 6;
        if let Some(core) = encoded.get(start..end).filter(|c| c.len() >= MIN_EXACT_LEN) {
            out.push(core.to_string());
        }
    }
    out
}

/// A regex for a config secret as written, URL-encoded (`%2F`, `+` for space) or
/// JSON-escaped (`\\/`, `\\"`, `\\u002f`), in any mix.
fn exact_pattern(secret: &str) -> String {
    let mut out = String::new();
    for ch in secret.chars() {
        if ch.is_ascii_alphanumeric() {
            out.push(ch);
            continue;
        }
        let mut forms = vec![regex::escape(ch.encode_utf8(&mut [0u8; 4]))];
        let mut buf = [0u8; 4];
        let pct: String = ch
            .encode_utf8(&mut buf)
            .bytes()
            .map(|b| format!("%{b:02X}"))
            .collect();
        forms.push(format!("(?i:{pct})"));
        if let Ok(unit) = u16::try_from(u32::from(ch)) {
            forms.push(format!(r"\\(?i:u{unit:04X})"));
        }
        match ch {
            ' ' => forms.push(r"\+".into()),
            '"' | '\\' | '/' => forms.push(format!(r"\\{}", regex::escape(&ch.to_string()))),
            _ => {}
        }
        out.push_str(&format!("(?:{})", forms.join("|")));
    }
    out
}

/// Whether base64 text (its first line) decodes to the start of a PEM private key.
fn names_private_key(b64: &str) -> bool {
    let first = b64.lines().next().unwrap_or("").trim_end_matches('=');
    let take = first.len().min(96) / 4 * 4;
    let decoded = decode_base64(first.get(..take).unwrap_or(""));
    String::from_utf8_lossy(&decoded).contains("PRIVATE KEY")
}

/// Standard base64 without padding; stops at the first byte outside the alphabet.
fn decode_base64(text: &str) -> Vec<u8> {
    let value = |b: u8| -> Option<u32> {
        match b {
            b'A'..=b'Z' => Some(u32::from(b - b'A')),
            b'a'..=b'z' => Some(u32::from(b - b'a') + 26),
            b'0'..=b'9' => Some(u32::from(b - b'0') + 52),
            b'+' => Some(62),
            b'/' => Some(63),
            _ => None,
        }
    };
    let mut out = Vec::new();
    for chunk in text.as_bytes().chunks(4) {
        let Some(vals) = chunk
            .iter()
            .map(|b| value(*b))
            .collect::<Option<Vec<u32>>>()
        else {
            break;
        };
        let n = vals.iter().fold(0u32, |acc, v| (acc << 6) | v) << (6 * (4 - vals.len()));
        let bytes = n.to_be_bytes();
        out.extend_from_slice(bytes.get(1..vals.len()).unwrap_or(&[]));
    }
    out
}

/// Upper case, lower case and digits all present: how generated keys look, not words.
fn is_mixed(v: &str) -> bool {
    v.chars().any(|c| c.is_ascii_uppercase())
        && v.chars().any(|c| c.is_ascii_lowercase())
        && v.chars().any(|c| c.is_ascii_digit())
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
    // `[redacted` is an earlier pattern's replacement, cut at its space.
    if is_placeholder(value)
        || PLACEHOLDERS.contains(&lower.as_str())
        || value.starts_with("[redacted")
    {
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
    // Keys and tokens hold no spaces; a quoted sentence under a `*_key` name is a message.
    let spaced = value.chars().any(char::is_whitespace);
    (password && value.chars().count() >= 6)
        || (!spaced && value.chars().count() >= 12 && looks_random(value))
}

/// References and stand-ins rather than values: `${VAR}`, `$VAR`, `<your-key>`,
/// `{{ var }}`, `%VAR%`, `[redacted]`, `********`. A value that merely *starts* with `$` or
/// `%` is not one (`$ecretP4ss!` is a password).
fn is_placeholder(v: &str) -> bool {
    let wrapped =
        |open: char, close: char| v.starts_with(open) && v.ends_with(close) && v.len() > 1;
    let is_name =
        |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    let var = v.strip_prefix('$').is_some_and(is_name);
    let percent_var = v
        .strip_prefix('%')
        .and_then(|s| s.strip_suffix('%'))
        .is_some_and(is_name);
    var || percent_var
        || (v.starts_with("${") && v.ends_with('}'))
        || wrapped('<', '>')
        || wrapped('{', '}')
        || wrapped('[', ']')
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
    fn the_token_of_a_configured_header_value_is_redacted_on_its_own() {
        let red = SecretRedactor::new(vec![
            "Bearer tok-Zx9kQ2mR7vLp".into(),
            "sid=c00kieValue99; Path=/".into(),
        ]);
        assert_eq!(
            red.redact("echo tok-Zx9kQ2mR7vLp"),
            format!("echo {REDACTED}")
        );
        assert_eq!(red.redact("got c00kieValue99"), format!("got {REDACTED}"));
        // The scheme word and short parts are not secrets.
        assert_eq!(red.redact("Bearer Path=/"), "Bearer Path=/");
    }

    #[test]
    fn base64_of_a_secret_inside_a_longer_string_is_redacted_at_every_alignment() {
        use base64::Engine;
        let secret = "tok-Zx9kQ2mR7vLp";
        let red = SecretRedactor::new(vec![secret.into()]);
        for user in ["", "a", "ab", "abc", "user", "admin1"] {
            for engine in [
                base64::engine::general_purpose::STANDARD,
                base64::engine::general_purpose::URL_SAFE,
            ] {
                let encoded = engine.encode(format!("{user}:{secret}:x"));
                let out = red
                    .redact(&format!("Authorization: Basic {encoded} end"))
                    .into_owned();
                assert!(!out.contains(&encoded), "{user}: {out}");
                assert!(out.ends_with(&format!("{REDACTED} end")), "{user}: {out}");
            }
        }
        let plain = base64::engine::general_purpose::STANDARD.encode("user:other-password");
        assert_eq!(red.redact(&plain), plain);
    }

    #[test]
    fn short_config_secrets_do_not_redact_ordinary_text() {
        // `abc123` is shorter than MIN_EXACT_LEN: matching it would redact every `abc123x`.
        let red = SecretRedactor::new(vec!["abc123".into(), "Bearer abc123".into()]);
        assert_eq!(red.redact("id abc123 and abc1234"), "id abc123 and abc1234");
        // The whole header value is long enough and still redacted.
        assert_eq!(red.redact("Bearer abc123"), REDACTED);
    }

    #[test]
    fn text_without_secrets_is_borrowed() {
        let red = SecretRedactor::new(vec![]);
        assert!(matches!(red.redact("hello world"), Cow::Borrowed(_)));
    }
}
