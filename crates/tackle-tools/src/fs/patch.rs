//! Applying one file's unified diff to text, hunk by hunk, all or nothing.
//!
//! `diffy` parses the diff; placing hunks is ours so that a hunk whose line numbers drifted
//! still lands where its context matches (searching outward from the stated line, as GNU
//! patch does), and so that *every* rejected hunk is reported, not just the first.

use tackle_protocol::text::preview;
use tackle_protocol::ToolError;

/// The patched text, and one note per hunk that landed away from its stated line.
pub(crate) struct Patched {
    pub text: String,
    pub notes: Vec<String>,
}

struct Hunk<'a> {
    header: String,
    /// Where the hunk says its old lines start (0-based).
    expected: usize,
    pre: Vec<&'a str>,
    post: Vec<&'a str>,
}

/// Apply `diff` (one file, unified format) to `text` (LF line endings).
pub(crate) fn apply_unified(text: &str, diff: &str) -> Result<Patched, ToolError> {
    let diff = normalized_diff(diff);
    if diff.lines().filter(|l| l.starts_with("+++ ")).count() > 1 {
        return Err(ToolError::invalid_arguments(
            "the diff touches more than one file; edit_file applies one file's diff per call",
        ));
    }
    let patch = diffy::Patch::from_str(&diff)
        .map_err(|e| ToolError::invalid_arguments(format!("the diff could not be parsed: {e}")))?;
    let hunks: Vec<Hunk<'_>> = patch.hunks().iter().map(to_hunk).collect();
    if hunks.is_empty() {
        return Err(ToolError::invalid_arguments(
            "the diff has no hunks (`@@ -a,b +c,d @@` sections)",
        ));
    }
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut out = String::with_capacity(text.len() + diff.len());
    let mut cursor = 0;
    let (mut notes, mut rejects) = (Vec::new(), Vec::new());
    for (i, hunk) in hunks.iter().enumerate() {
        match place(&lines, hunk, cursor) {
            Some(pos) => {
                lines
                    .iter()
                    .take(pos)
                    .skip(cursor)
                    .for_each(|l| out.push_str(l));
                hunk.post.iter().for_each(|l| out.push_str(l));
                ensure_separated(&mut out, &lines, pos + hunk.pre.len());
                if pos != hunk.expected {
                    let off = pos as i64 - hunk.expected as i64;
                    notes.push(format!(
                        "hunk {} applied at line {} (offset {off:+})",
                        i + 1,
                        pos + 1
                    ));
                }
                cursor = pos + hunk.pre.len();
            }
            None => rejects.push(rejection(i + 1, hunk, &lines)),
        }
    }
    if !rejects.is_empty() {
        return Err(ToolError::failed(format!(
            "{} of {} hunks rejected; nothing was written:\n{}",
            rejects.len(),
            hunks.len(),
            rejects.join("\n")
        )));
    }
    lines.iter().skip(cursor).for_each(|l| out.push_str(l));
    Ok(Patched { text: out, notes })
}

/// Diffs written by hand often lack the `---`/`+++` header or the final newline.
fn normalized_diff(diff: &str) -> String {
    let mut d = if diff.trim_start().starts_with("@@") {
        format!("--- a\n+++ b\n{}", diff.trim_start())
    } else {
        diff.to_string()
    };
    if !d.ends_with('\n') {
        d.push('\n');
    }
    d
}

fn to_hunk<'a>(h: &diffy::Hunk<'a, str>) -> Hunk<'a> {
    let (mut pre, mut post) = (Vec::new(), Vec::new());
    for line in h.lines() {
        match line {
            diffy::Line::Context(l) => {
                pre.push(*l);
                post.push(*l);
            }
            diffy::Line::Delete(l) => pre.push(*l),
            diffy::Line::Insert(l) => post.push(*l),
        }
    }
    let old = h.old_range();
    // `-5,0` means "after line 5"; `-5,3` means "starting at line 5".
    let expected = if old.is_empty() {
        old.start()
    } else {
        old.start().saturating_sub(1)
    };
    let header = format!(
        "@@ -{},{} +{},{} @@",
        old.start(),
        old.len(),
        h.new_range().start(),
        h.new_range().len()
    );
    Hunk {
        header,
        expected,
        pre,
        post,
    }
}

/// Lines match ignoring a missing final newline (a file that does not end in one).
fn same(a: &str, b: &str) -> bool {
    a.strip_suffix('\n').unwrap_or(a) == b.strip_suffix('\n').unwrap_or(b)
}

fn matches_at(lines: &[&str], pre: &[&str], pos: usize) -> bool {
    lines
        .get(pos..pos + pre.len())
        .is_some_and(|window| window.iter().zip(pre).all(|(a, b)| same(a, b)))
}

/// The position nearest the stated one, at or after `cursor`, where the hunk's old lines are.
fn place(lines: &[&str], hunk: &Hunk<'_>, cursor: usize) -> Option<usize> {
    let last = lines.len().checked_sub(hunk.pre.len())?;
    if last < cursor {
        return None;
    }
    let start = hunk.expected.clamp(cursor, last);
    let farthest = (start - cursor).max(last - start);
    // start, start+1, start-1, start+2, … staying inside [cursor, last].
    (0..=farthest)
        .flat_map(|d| [Some(start + d), start.checked_sub(d).filter(|_| d > 0)])
        .flatten()
        .filter(|&p| p >= cursor && p <= last)
        .find(|&p| matches_at(lines, &hunk.pre, p))
}

/// If the file's last line had no newline and the hunk put text after it, keep lines apart.
fn ensure_separated(out: &mut String, lines: &[&str], next: usize) {
    if next < lines.len() && !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
}

fn rejection(n: usize, hunk: &Hunk<'_>, lines: &[&str]) -> String {
    let mismatch = hunk.pre.iter().enumerate().find_map(|(k, want)| {
        let at = hunk.expected + k;
        let have = lines.get(at).copied().unwrap_or("<end of file>");
        (!same(have, want)).then(|| {
            format!(
                "at line {} the diff expects `{}` but the file has `{}`",
                at + 1,
                preview(want.trim_end(), 80),
                preview(have.trim_end(), 80)
            )
        })
    });
    format!(
        "  hunk {n} ({}) rejected: its context and removed lines are not in the file{}",
        hunk.header,
        mismatch.map(|m| format!("; {m}")).unwrap_or_default()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "a\nb\nc\nd\ne\nf\ng\n";

    #[test]
    fn a_hunk_at_its_stated_line_applies() {
        let diff = "@@ -2,3 +2,3 @@\n b\n-c\n+C\n d\n";
        let p = apply_unified(BASE, diff).map(|p| (p.text, p.notes.len()));
        assert_eq!(p.ok(), Some(("a\nb\nC\nd\ne\nf\ng\n".to_string(), 0)));
    }

    #[test]
    fn a_hunk_whose_line_numbers_drifted_applies_where_its_context_is() {
        let diff = "--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n e\n-f\n+F\n g\n";
        let p = apply_unified(BASE, diff);
        let p = p.map(|p| (p.text, p.notes)).unwrap_or_default();
        assert_eq!(p.0, "a\nb\nc\nd\ne\nF\ng\n");
        assert_eq!(
            p.1,
            vec!["hunk 1 applied at line 5 (offset +4)".to_string()]
        );
    }

    #[test]
    fn every_rejected_hunk_is_reported_and_nothing_applies() {
        let diff = "@@ -1,2 +1,2 @@\n a\n-X\n+Y\n@@ -4,2 +4,2 @@\n d\n-e\n+E\n@@ -6,2 +6,2 @@\n f\n-Q\n+R\n";
        let err = apply_unified(BASE, diff)
            .err()
            .map(|e| e.message)
            .unwrap_or_default();
        assert!(err.starts_with("2 of 3 hunks rejected"), "{err}");
        assert!(err.contains("hunk 1 (@@ -1,2 +1,2 @@)"), "{err}");
        assert!(err.contains("hunk 3"), "{err}");
        assert!(err.contains("expects `X` but the file has `b`"), "{err}");
    }

    #[test]
    fn garbage_is_an_invalid_argument() {
        let err = apply_unified(BASE, "not a diff at all")
            .err()
            .map(|e| e.kind);
        assert_eq!(err, Some(tackle_protocol::ErrorKind::InvalidArguments));
    }

    #[test]
    fn a_diff_for_several_files_is_refused() {
        let diff = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n--- a/y\n+++ b/y\n@@ -1 +1 @@\n-a\n+b\n";
        let err = apply_unified("a\n", diff)
            .err()
            .map(|e| e.message)
            .unwrap_or_default();
        assert!(err.contains("more than one file"), "{err}");
    }

    #[test]
    fn insertion_into_an_empty_file_works() {
        let p = apply_unified("", "@@ -0,0 +1,2 @@\n+hello\n+world\n").map(|p| p.text);
        assert_eq!(p.ok().as_deref(), Some("hello\nworld\n"));
    }

    #[test]
    fn a_file_without_a_final_newline_still_matches() {
        let p = apply_unified("x\ny", "@@ -1,2 +1,2 @@\n x\n-y\n+z\n").map(|p| p.text);
        assert_eq!(p.ok().as_deref(), Some("x\nz\n"));
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_diffs_never_panic(text in "[ab\n]{0,40}", diff in "(@@ -[0-9],[0-9] \\+[0-9],[0-9] @@\n|[ +-][ab]{0,3}\n){0,12}") {
            let _ = apply_unified(&text, &diff);
        }

        #[test]
        fn a_diff_made_from_two_texts_turns_one_into_the_other(a in "([abc]{0,3}\n){0,12}", b in "([abc]{0,3}\n){0,12}") {
            let patch = diffy::create_patch(&a, &b).to_string();
            if a != b {
                let got = apply_unified(&a, &patch).map(|p| p.text);
                proptest::prop_assert_eq!(got.ok(), Some(b));
            }
        }
    }
}
