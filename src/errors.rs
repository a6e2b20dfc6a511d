//! The one way an error reaches a person on the command line: the chain of causes in plain
//! words, each said once. Errors are shown with `Display` only; and because some libraries'
//! `Display` embeds Rust debug output (a struct dump, a type path, a `Duration`'s
//! nanoseconds), [`plain`] rewrites what slipped through into words before it is printed.

use regex::Regex;
use std::sync::LazyLock;

/// `err` and its causes, outermost first, joined by `: `; a cause whose text the line already
/// holds (a context that quotes its source) is not repeated.
pub fn render(err: &anyhow::Error) -> String {
    let err: &(dyn std::error::Error + Send + Sync + 'static) = err.as_ref();
    render_error(err)
}

/// As [`render`], for an error that is not an `anyhow::Error`.
pub fn render_error(err: &(dyn std::error::Error + 'static)) -> String {
    let mut line = String::new();
    let mut cause = Some(err);
    while let Some(e) = cause {
        let text = e.to_string();
        let text = text.trim();
        if !text.is_empty() && !line.contains(text) {
            if !line.is_empty() {
                line.push_str(": ");
            }
            line.push_str(text);
        }
        cause = e.source();
    }
    plain(&line)
}

/// A pattern written in this file: the tests build every one of them (each test of
/// `plain` reaches them), so a typo fails the suite, never a user's command.
#[allow(clippy::expect_used)]
fn constant_regex(pattern: &str) -> Regex {
    Regex::new(pattern).expect("a constant pattern compiles")
}

/// The start of a debug-printed struct: `ErrorData { code: …`, `reqwest::Error { kind: …`.
static STRUCT_START: LazyLock<Regex> = LazyLock::new(|| {
    constant_regex(
        r"\b(?:[a-z_][a-z0-9_]*::)*[A-Z][A-Za-z0-9_]*(?:<[^{}]*?>)? \{ [a-z_][a-z0-9_]*: ",
    )
});
/// A `message: "…"` field inside a struct dump: the part worth keeping.
static MESSAGE_FIELD: LazyLock<Regex> =
    LazyLock::new(|| constant_regex(r#"message: (?:Some\()?"((?:[^"\\]|\\.)*)""#));
/// `Transport [rmcp::transport::child_process::TokioChildProcess] error: …`.
static TYPE_IN_BRACKETS: LazyLock<Regex> =
    LazyLock::new(|| constant_regex(r"\s?\[(?:[a-z_][a-z0-9_]*::)+[A-Za-z0-9_:<>, ]*\]"));
/// A Rust type path of three or more names, generics included, as `type_name` prints one
/// (`rmcp::transport::WorkerTransport<…>`); a two-name path (`foo::bar`) may be a person's
/// own words and is left alone.
static TYPE_PATH: LazyLock<Regex> = LazyLock::new(|| {
    constant_regex(r"\b(?:[a-z_][a-z0-9_]*::){2,}([A-Za-z_][A-Za-z0-9_]*)(?:<[^\s]*>)?")
});
/// A `Duration` printed with `{:?}`: `288.188443ms`, `1.500000001s`.
static DEBUG_DURATION: LazyLock<Regex> =
    LazyLock::new(|| constant_regex(r"\b(\d+\.\d{4,})(ns|µs|us|ms|s)\b"));

/// `text` with the debug output some libraries put in their messages turned into words:
/// a struct dump becomes its `message` (or is left out), a bracketed or bare type path
/// becomes nothing or its last name, a `Duration` in debug form becomes seconds.
pub fn plain(text: &str) -> String {
    let text = without_struct_dumps(text);
    let text = TYPE_IN_BRACKETS.replace_all(&text, "");
    let text = TYPE_PATH.replace_all(&text, "$1");
    let text = DEBUG_DURATION.replace_all(&text, |c: &regex::Captures<'_>| {
        let value: f64 = c[1].parse().unwrap_or(0.0);
        let secs = match &c[2] {
            "ns" => value / 1e9,
            "µs" | "us" => value / 1e6,
            "ms" => value / 1e3,
            _ => value,
        };
        format!("{secs:.1} s")
    });
    text.into_owned()
}

/// Each `Name { field: … }` (balanced braces) replaced by the dump's `message`, or by
/// nothing when it has none.
fn without_struct_dumps(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(found) = STRUCT_START.find(rest) {
        out.push_str(&rest[..found.start()]);
        let from_brace = &rest[found.start()..];
        let end = balanced_end(from_brace).unwrap_or(from_brace.len());
        let dump = &from_brace[..end];
        if let Some(m) = MESSAGE_FIELD.captures(dump) {
            out.push_str(&m[1].replace("\\\"", "\""));
        } else {
            while out.ends_with([' ', ':', '(']) {
                out.pop();
            }
        }
        rest = &from_brace[end..];
    }
    out.push_str(rest);
    out
}

/// The byte just past the `}` that closes the first `{` of `text` (strings in the dump are
/// skipped, so a brace inside a message does not count).
fn balanced_end(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' => depth += 1,
            '}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i + c.len_utf8());
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a person must never see.
    pub(crate) fn assert_plain(text: &str) {
        for leak in ["::", "ErrorData {", "reqwest::Error", "Some(", " { "] {
            assert!(!text.contains(leak), "`{leak}` in {text:?}");
        }
        assert!(
            !DEBUG_DURATION.is_match(text),
            "a debug duration in {text:?}"
        );
    }

    #[test]
    fn a_struct_dump_becomes_its_message() {
        let said = plain(
            r#"MCP server `x`: ErrorData { code: ErrorCode(-32022), message: "tool \"ls\" is disabled", data: None }"#,
        );
        assert_eq!(said, r#"MCP server `x`: tool "ls" is disabled"#);
        assert_plain(&said);
    }

    #[test]
    fn a_struct_dump_without_a_message_is_left_out() {
        let said = plain(
            r#"cannot connect: reqwest::Error { kind: Request, url: "http://x/{a}", source: hyper::Error(Connect, ConnectError("tcp connect error", Os { code: 111 })) }"#,
        );
        assert_eq!(said, "cannot connect");
        assert_plain(&said);
    }

    #[test]
    fn type_paths_and_debug_durations_become_words() {
        let said = plain(
            "Transport [rmcp::transport::child_process::TokioChildProcess] error: Broken pipe; rmcp::transport::WorkerTransport<rmcp::transport::streamable_http_client::StreamableHttpClientWorker<reqwest::Client>> closed; wait=288.188443ms",
        );
        assert_eq!(
            said,
            "Transport error: Broken pipe; WorkerTransport closed; wait=0.3 s"
        );
        assert_plain(&said);
    }

    #[test]
    fn plain_text_is_left_alone() {
        for text in [
            "no session `abc`; `tackle sessions list` shows the stored sessions",
            "backend `dead`: cannot connect to http://127.0.0.1:9/v1/chat/completions: Connection refused (os error 111)",
            "retrying in 0.5 s (try 2 of 4)",
            "serving MCP at http://[::1]:8765/mcp",
            "config.yaml: agents[0].name: agent name `a b` is not valid",
            "cannot resolve `serde::Deserialize` here",
        ] {
            assert_eq!(plain(text), text);
        }
    }

    #[test]
    fn a_chain_says_each_cause_once() {
        let inner = std::io::Error::other("Connection refused (os error 111)");
        let err = anyhow::Error::new(inner)
            .context("cannot connect: Connection refused (os error 111)")
            .context("backend `dead`");
        assert_eq!(
            render(&err),
            "backend `dead`: cannot connect: Connection refused (os error 111)"
        );
    }
}
