//! A cheap pass over PDF bytes that refuses nesting the parser would have to recurse through.
//!
//! lopdf parses arrays and dictionaries recursively. It bounds that depth itself, but a stack
//! overflow aborts the whole process (no `catch_unwind` catches it), so `pdf_read` does not rely
//! on one check deep inside a dependency: this scan runs first, over the file and over each
//! page's decoded content, and fails closed past [`MAX_NESTING`]. It is a lexer only (strings,
//! comments and stream data are skipped so their bytes are not counted), iterative, one pass.

/// Deeper nesting of `[` / `<<` is refused. Real documents stay in single digits.
pub(crate) const MAX_NESTING: usize = 64;

/// How deeply the bytes nest, or the offset where they first go past [`MAX_NESTING`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Nesting {
    Within(usize),
    TooDeep { offset: usize },
}

/// Scan `data` as PDF syntax. `skip_streams` skips from each `stream` keyword to its
/// `endstream` (stream data is binary in a file; a page's decoded content has no streams).
pub(crate) fn nesting(data: &[u8], skip_streams: bool) -> Nesting {
    let mut depth = 0usize;
    let mut deepest = 0usize;
    let mut i = 0usize;
    while let Some(&b) = data.get(i) {
        match b {
            b'%' => i = skip_comment(data, i),
            b'(' => i = skip_literal_string(data, i),
            b'[' => {
                depth += 1;
                i += 1;
            }
            b']' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            b'<' if data.get(i + 1) == Some(&b'<') => {
                depth += 1;
                i += 2;
            }
            // A hex string: up to its `>`.
            b'<' => i = find(data, i + 1, b">").map_or(data.len(), |end| end + 1),
            b'>' if data.get(i + 1) == Some(&b'>') => {
                depth = depth.saturating_sub(1);
                i += 2;
            }
            b's' if skip_streams && starts_stream(data, i) => {
                i = find(data, i + 6, b"endstream").map_or(data.len(), |end| end + 9);
            }
            // An inline image's data (`BI … ID <bytes> EI`) in page content is binary too.
            b'I' if !skip_streams && starts_inline_data(data, i) => {
                i = find(data, i + 3, b"EI").map_or(data.len(), |end| end + 2);
            }
            _ => i += 1,
        }
        if depth > MAX_NESTING {
            return Nesting::TooDeep { offset: i };
        }
        deepest = deepest.max(depth);
    }
    Nesting::Within(deepest)
}

/// Past the comment that starts at `i`: to the end of its line.
fn skip_comment(data: &[u8], i: usize) -> usize {
    let mut j = i;
    while let Some(&c) = data.get(j) {
        if c == b'\n' || c == b'\r' {
            break;
        }
        j += 1;
    }
    j
}

/// Past the literal string that opens at `i`: balanced parentheses, `\` escapes one byte.
/// An unterminated string runs to the end of the data.
fn skip_literal_string(data: &[u8], i: usize) -> usize {
    let mut open = 0usize;
    let mut j = i;
    while let Some(&c) = data.get(j) {
        match c {
            b'\\' => j += 1,
            b'(' => open += 1,
            b')' => {
                open = open.saturating_sub(1);
                if open == 0 {
                    return j + 1;
                }
            }
            _ => {}
        }
        j += 1;
    }
    data.len()
}

/// Whether the keyword `stream` (not the end of `endstream` or of a longer name) starts at `i`,
/// followed by the end of line that begins stream data.
fn starts_stream(data: &[u8], i: usize) -> bool {
    let word = data.get(i..i + 6) == Some(b"stream".as_slice());
    let before_ok = i == 0
        || data
            .get(i - 1)
            .is_some_and(|c| !c.is_ascii_alphanumeric() && *c != b'/');
    let eol = matches!(data.get(i + 6), Some(b'\r' | b'\n'));
    word && before_ok && eol
}

/// Whether the operator `ID`, which begins an inline image's data, starts at `i`.
fn starts_inline_data(data: &[u8], i: usize) -> bool {
    let word = data.get(i..i + 2) == Some(b"ID".as_slice());
    let before_ok = i == 0 || data.get(i - 1).is_some_and(u8::is_ascii_whitespace);
    let after_ok = data.get(i + 2).is_some_and(u8::is_ascii_whitespace);
    word && before_ok && after_ok
}

/// The offset of the first `needle` at or after `from`.
fn find(data: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    data.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_objects_nest_shallowly() {
        let obj = b"1 0 obj << /Type /Page /MediaBox [0 0 612 792] /Resources << /Font << /F1 2 0 R >> >> >> endobj";
        assert_eq!(nesting(obj, true), Nesting::Within(3));
    }

    #[test]
    fn deep_arrays_and_dictionaries_are_refused() {
        let arrays = "[".repeat(100_000);
        assert!(matches!(
            nesting(arrays.as_bytes(), true),
            Nesting::TooDeep { offset: 65 }
        ));
        let dicts = "<</A ".repeat(MAX_NESTING + 1);
        assert!(matches!(
            nesting(dicts.as_bytes(), false),
            Nesting::TooDeep { .. }
        ));
        let at_limit = format!("{}{}", "[".repeat(MAX_NESTING), "]".repeat(MAX_NESTING));
        assert_eq!(
            nesting(at_limit.as_bytes(), false),
            Nesting::Within(MAX_NESTING)
        );
    }

    #[test]
    fn brackets_in_strings_comments_and_stream_data_do_not_count() {
        let deep = "[".repeat(200);
        let cases = [
            format!("({deep})"),
            format!("(a \\) {deep})"),
            format!("(nested (parens) {deep})"),
            format!("% {deep}\n[]"),
            format!("<</Length 200>>\nstream\n{deep}\nendstream"),
        ];
        for case in &cases {
            assert!(
                matches!(nesting(case.as_bytes(), true), Nesting::Within(d) if d <= 1),
                "{case}"
            );
        }
        // Without stream skipping (decoded page content), the same bytes count.
        assert!(matches!(
            nesting(cases[4].as_bytes(), false),
            Nesting::TooDeep { .. }
        ));
    }

    #[test]
    fn inline_image_data_in_page_content_does_not_count() {
        let content = format!(
            "q BI /W 8 /H 8 /BPC 8 /CS /G ID {} EI Q [(a)] TJ",
            "[".repeat(300)
        );
        assert_eq!(nesting(content.as_bytes(), false), Nesting::Within(1));
    }

    #[test]
    fn a_hex_string_is_not_a_dictionary() {
        assert_eq!(
            nesting(b"<48656c6c6f> <</A <00>>>", false),
            Nesting::Within(1)
        );
    }

    #[test]
    fn stray_closers_do_not_hide_later_nesting() {
        let data = format!("{}{}", "]".repeat(1000), "[".repeat(MAX_NESTING + 1));
        assert!(matches!(
            nesting(data.as_bytes(), false),
            Nesting::TooDeep { .. }
        ));
    }
}
