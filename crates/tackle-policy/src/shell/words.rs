//! Turning one shell word into what the command would see: quotes and escapes removed, and
//! every part the shell would compute at run time (expansions, globs) marked as dynamic.

use super::nesting::{possible_nesting, MAX_POSSIBLE_NESTING};
use brush_parser::word::{ParameterExpr, ParameterTransformOp, WordPiece, WordPieceWithSource};

/// One word of a command after quote removal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Word {
    /// The unquoted text; for a dynamic word, the source text (e.g. `$X`), for messages.
    pub text: String,
    /// The shell computes (part of) this word at run time: its final value is unknown.
    pub dynamic: bool,
}

impl Word {
    pub(crate) fn literal(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            dynamic: false,
        }
    }

    pub(crate) fn unknown(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            dynamic: true,
        }
    }
}

/// Something inside a word that runs code: a command to analyse, or code that cannot be seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Embedded {
    /// `$(…)`, backticks: the text of the inner program.
    Program(String),
    /// Arithmetic text, evaluated by the shell (and able to run code through variables).
    Arithmetic(String),
    /// Code the analyser cannot see, with a phrase saying what it is.
    Opaque(String),
}

/// The result of reading one word.
#[derive(Debug, Default)]
pub(crate) struct WordScan {
    text: String,
    dynamic: bool,
    pub embedded: Vec<Embedded>,
}

impl WordScan {
    pub(crate) fn into_word(self, source: &str) -> Word {
        if self.dynamic {
            Word::unknown(source)
        } else {
            Word::literal(self.text)
        }
    }
}

pub(crate) fn options() -> brush_parser::ParserOptions {
    brush_parser::ParserOptions {
        enable_extended_globbing: true,
        posix_mode: false,
        sh_mode: false,
        tilde_expansion_at_word_start: true,
        tilde_expansion_after_colon: false,
        parser_impl: brush_parser::ParserImpl::Peg,
    }
}

/// Reads a word as the shell would, or `None` when the word parser rejects it or the word
/// could nest deep enough to exhaust the parser's stack.
pub(crate) fn scan_word(source: &str) -> Option<WordScan> {
    if possible_nesting(source) > MAX_POSSIBLE_NESTING {
        return None;
    }
    let pieces = guarded(|| brush_parser::word::parse(source, &options()).ok())?;
    let mut scan = WordScan::default();
    scan_pieces(&pieces, source, false, &mut scan);
    Some(scan)
}

/// Reads a here-document body that is subject to expansion.
pub(crate) fn scan_heredoc(body: &str) -> Option<WordScan> {
    if possible_nesting(body) > MAX_POSSIBLE_NESTING {
        return None;
    }
    let pieces = guarded(|| brush_parser::word::parse_heredoc(body, &options()).ok())?;
    let mut scan = WordScan::default();
    scan_pieces(&pieces, body, true, &mut scan);
    Some(scan)
}

/// Runs parser code so that a bug in it denies instead of taking the process down.
pub(crate) fn guarded<T>(f: impl FnOnce() -> Option<T> + std::panic::UnwindSafe) -> Option<T> {
    std::panic::catch_unwind(f).ok().flatten()
}

fn scan_pieces(pieces: &[WordPieceWithSource], source: &str, quoted: bool, scan: &mut WordScan) {
    for p in pieces {
        let raw = source.get(p.start_index..p.end_index).unwrap_or("");
        scan_piece(&p.piece, source, raw, quoted, scan);
    }
}

fn scan_piece(piece: &WordPiece, source: &str, raw: &str, quoted: bool, scan: &mut WordScan) {
    match piece {
        WordPiece::Text(t) => {
            if !quoted && is_pattern(t) {
                scan.dynamic = true;
            }
            if t.contains("$[") {
                scan.dynamic = true;
                scan.embedded
                    .push(Embedded::Opaque(format!("the old arithmetic form `{t}`")));
            }
            scan.text.push_str(t);
        }
        WordPiece::SingleQuotedText(t) => scan.text.push_str(t),
        WordPiece::AnsiCQuotedText(t) => scan.text.push_str(&decode_ansi_c(t)),
        WordPiece::DoubleQuotedSequence(inner) | WordPiece::GettextDoubleQuotedSequence(inner) => {
            scan_pieces(inner, source, true, scan);
        }
        WordPiece::TildeExpansion(_) => scan.text.push_str(raw),
        WordPiece::EscapeSequence(e) => scan.text.push_str(unescape(e)),
        WordPiece::ParameterExpansion(expr) => {
            scan.dynamic = true;
            scan_parameter(expr, raw, scan);
        }
        WordPiece::CommandSubstitution(body) | WordPiece::BackquotedCommandSubstitution(body) => {
            scan.dynamic = true;
            scan.embedded.push(Embedded::Program(body.clone()));
        }
        WordPiece::ArithmeticExpression(e) => {
            scan.dynamic = true;
            scan.embedded.push(Embedded::Arithmetic(e.value.clone()));
        }
    }
}

/// `\x` outside single quotes is `x`; a backslash-newline is a line continuation.
fn unescape(e: &str) -> &str {
    let rest = e.strip_prefix('\\').unwrap_or(e);
    if rest == "\n" {
        ""
    } else {
        rest
    }
}

/// Unquoted text the shell would expand into other words: globs (`*`, `?`, `[…]`), extglobs
/// (`@(…)`), braces (`{a,b}`, `{1..3}`). A lone `[` (the test command) is not a pattern.
fn is_pattern(t: &str) -> bool {
    let bracket = t
        .find('[')
        .is_some_and(|i| t.get(i + 1..).is_some_and(|r| r.contains(']')));
    let extglob = ["?(", "*(", "+(", "@(", "!("].iter().any(|p| t.contains(p));
    let brace = t.find('{').is_some_and(|i| {
        t.get(i + 1..)
            .is_some_and(|r| r.contains('}') && (r.contains(',') || r.contains("..")))
    });
    t.contains(['*', '?']) || bracket || extglob || brace
}

/// Parameter expansions can hide code: substitutions in defaults and subscripts, prompt
/// expansion (`@P`), and arithmetic (subscripts, offsets) that evaluates variable values.
fn scan_parameter(expr: &ParameterExpr, raw: &str, scan: &mut WordScan) {
    if let ParameterExpr::Transform {
        op: ParameterTransformOp::PromptExpand,
        ..
    } = expr
    {
        scan.embedded.push(Embedded::Opaque(format!(
            "prompt expansion `{raw}`, which runs code hidden in a variable"
        )));
    }
    if let ParameterExpr::Substring { offset, length, .. } = expr {
        scan.embedded
            .push(Embedded::Arithmetic(offset.value.clone()));
        if let Some(l) = length {
            scan.embedded.push(Embedded::Arithmetic(l.value.clone()));
        }
    }
    let interior = raw
        .strip_prefix("${")
        .and_then(|s| s.strip_suffix('}'))
        .unwrap_or("");
    // `${!x}` expands the variable named by x's value, and evaluates a subscript in it.
    let listing =
        interior.ends_with(['*', '@']) || interior.ends_with("[@]") || interior.ends_with("[*]");
    if interior.starts_with('!') && !listing {
        scan.embedded.push(Embedded::Opaque(format!(
            "the indirect expansion `{raw}`, whose target may hold a subscript that runs code"
        )));
    }
    if let Some(open) = interior.find('[') {
        let index = interior.get(open + 1..).unwrap_or("");
        let index = index
            .get(..index.rfind(']').unwrap_or(index.len()))
            .unwrap_or("");
        if index != "@" && index != "*" {
            scan.embedded.push(Embedded::Arithmetic(index.to_string()));
        }
    }
    if interior.contains(['$', '`']) {
        scan_interior(interior, raw, scan);
        // Inside double quotes (and here-documents) single quotes in `${x:-'…'}` are plain
        // characters, so `"${x:-'$(cmd)'}"` runs cmd: read the text again without them.
        if interior.contains('\'') {
            scan_interior(&interior.replace('\'', "\""), raw, scan);
        }
    }
}

fn scan_interior(interior: &str, raw: &str, scan: &mut WordScan) {
    if let Some(inner) = scan_word(interior) {
        scan.embedded.extend(inner.embedded);
    } else {
        scan.embedded.push(Embedded::Opaque(format!(
            "the expansion `{raw}`, which cannot be read"
        )));
    }
}

/// Decodes the body of `$'…'` the way bash does, which ends the string at a NUL.
pub(crate) fn decode_ansi_c(s: &str) -> String {
    let mut out = decode_escapes(s);
    if let Some(nul) = out.find('\0') {
        out.truncate(nul);
    }
    out
}

fn decode_escapes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(e) = chars.next() else {
            out.push('\\');
            break;
        };
        match e {
            'a' => out.push('\x07'),
            'b' => out.push('\x08'),
            'e' | 'E' => out.push('\x1b'),
            'f' => out.push('\x0c'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\x0b'),
            'x' => push_code(&mut out, &mut chars, 16, 2, "\\x"),
            'u' => push_code(&mut out, &mut chars, 16, 4, "\\u"),
            'U' => push_code(&mut out, &mut chars, 16, 8, "\\U"),
            'c' => match chars.next() {
                Some(x) => out.push(char::from(x as u8 & 0x1f)),
                None => out.push_str("\\c"),
            },
            '0'..='7' => {
                let mut v = e.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match chars.peek().and_then(|d| d.to_digit(8)) {
                        Some(d) => {
                            v = v * 8 + d;
                            chars.next();
                        }
                        None => break,
                    }
                }
                out.push(char::from_u32(v & 0xff).unwrap_or('\u{fffd}'));
            }
            '\\' | '\'' | '"' | '?' => out.push(e),
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    out
}

fn push_code(
    out: &mut String,
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    radix: u32,
    max: usize,
    prefix: &str,
) {
    let mut v: u32 = 0;
    let mut n = 0;
    while n < max {
        match chars.peek().and_then(|d| d.to_digit(radix)) {
            Some(d) => {
                v = v.saturating_mul(radix).saturating_add(d);
                chars.next();
                n += 1;
            }
            None => break,
        }
    }
    if n == 0 {
        out.push_str(prefix);
    } else {
        out.push(char::from_u32(v).unwrap_or('\u{fffd}'));
    }
}

/// The variables an arithmetic text reads (their values are evaluated as arithmetic in turn),
/// or `None` when it evaluates text whose origin cannot be told: a command's output, a
/// positional parameter, an expansion other than a plain `$name`/`${name}`.
pub(crate) fn arithmetic_variables(text: &str) -> Option<Vec<String>> {
    let chars: Vec<char> = text.chars().collect();
    let mut names = Vec::new();
    let mut i = 0;
    let is_name_char = |c: char| c.is_ascii_alphanumeric() || c == '_';
    while let Some(&c) = chars.get(i) {
        if c.is_ascii_digit() {
            // Numbers, including 0x1f and 16#ff forms, may contain letters.
            while chars
                .get(i)
                .is_some_and(|d| d.is_ascii_alphanumeric() || matches!(d, '#' | '_' | '@'))
            {
                i += 1;
            }
            continue;
        }
        // Quotes and escapes change what the text means; a character outside ASCII is no part
        // of arithmetic syntax, so what the shell makes of it is not known here either.
        if c == '`' || c == '\\' || c == '"' || c == '\'' || !c.is_ascii() {
            return None;
        }
        if c == '$' {
            i += 1;
            let braced = chars.get(i) == Some(&'{');
            if braced {
                i += 1;
            }
            let start = i;
            while chars.get(i).copied().is_some_and(is_name_char) {
                i += 1;
            }
            let name: String = chars.get(start..i).unwrap_or(&[]).iter().collect();
            let numeric_special =
                matches!(chars.get(i), Some('#' | '?' | '$' | '!')) && name.is_empty();
            if numeric_special {
                i += 1;
            } else if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
                // `$(…)`, `$1`, `$@`, `${x:-…}`: text from outside the line.
                return None;
            } else {
                names.push(name);
            }
            if braced {
                if chars.get(i) != Some(&'}') {
                    return None;
                }
                i += 1;
            }
            continue;
        }
        if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while chars.get(i).copied().is_some_and(is_name_char) {
                i += 1;
            }
            names.push(chars.get(start..i).unwrap_or(&[]).iter().collect());
            continue;
        }
        i += 1;
    }
    Some(names)
}

/// Names given a value by plain `=` inside arithmetic (`i=0`, `x = y + 1`): always an integer.
pub(crate) fn arithmetic_assignments(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        let starts_name = (c.is_ascii_alphabetic() || c == '_')
            && (i == 0
                || chars
                    .get(i - 1)
                    .is_some_and(|p| !(p.is_ascii_alphanumeric() || *p == '_' || *p == '$')));
        if !starts_name {
            i += 1;
            continue;
        }
        let start = i;
        while chars
            .get(i)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_')
        {
            i += 1;
        }
        let name: String = chars.get(start..i).unwrap_or(&[]).iter().collect();
        let mut j = i;
        while chars.get(j) == Some(&' ') {
            j += 1;
        }
        if chars.get(j) == Some(&'=') && chars.get(j + 1) != Some(&'=') {
            out.push(name);
        }
    }
    out
}

/// A value whose arithmetic evaluation runs nothing: a plain integer.
pub(crate) fn inert_arithmetic_value(value: &str) -> bool {
    let v = value.trim();
    let v = v.strip_prefix(['-', '+']).unwrap_or(v);
    !v.is_empty()
        && v.chars().all(|c| c.is_ascii_alphanumeric() || c == '#')
        && v.starts_with(|c: char| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_variables_are_named_and_outside_text_is_refused() {
        assert_eq!(
            arithmetic_variables("n*2 + ${m} - $k + 0x1f"),
            Some(vec!["n".into(), "m".into(), "k".into()])
        );
        assert_eq!(arithmetic_variables("$(cat f) + 1"), None);
        assert_eq!(arithmetic_variables("$1 + 1"), None);
        assert_eq!(arithmetic_variables("`x`"), None);
        assert_eq!(arithmetic_variables("$# + $?"), Some(vec![]));
        // A letter outside ASCII once made this loop push empty names until memory ran out.
        for text in ["\u{11336}", "ü+1", "x*é", "?&:p\u{20d9}Q%x"] {
            assert_eq!(arithmetic_variables(text), None, "{text:?}");
        }
        assert!(inert_arithmetic_value("42") && inert_arithmetic_value("-0x1f"));
        assert!(!inert_arithmetic_value("a[$(rm x)]") && !inert_arithmetic_value("n"));
    }

    #[test]
    fn ansi_c_hex_octal_and_unicode_escapes_decode() {
        assert_eq!(decode_ansi_c("\\x72m"), "rm");
        assert_eq!(decode_ansi_c("\\162\\155"), "rm");
        assert_eq!(decode_ansi_c("\\u0072m"), "rm");
        assert_eq!(decode_ansi_c("a\\'b"), "a'b");
        assert_eq!(decode_ansi_c("rm\\0x"), "rm");
    }

    #[test]
    fn arithmetic_with_only_numbers_reads_no_variable() {
        assert_eq!(arithmetic_variables("1 + 0x1f * 16#ff"), Some(vec![]));
        assert_eq!(arithmetic_variables("x + 1"), Some(vec!["x".to_string()]));
    }

    #[test]
    fn quoted_and_escaped_names_unquote_to_the_plain_name() {
        for src in ["\\rm", "\"rm\"", "r''m", "'r'm", "$'\\x72m'"] {
            let w = scan_word(src).map(|s| s.into_word(src));
            assert_eq!(w, Some(Word::literal("rm")), "{src}");
        }
    }
}
