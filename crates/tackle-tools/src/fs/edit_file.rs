//! `edit_file`: exact-text replacement (one, or several applied all-or-nothing) or a unified
//! diff. The result shows a short diff of what changed. CRLF files stay CRLF.

use super::patch::apply_unified;
use super::read_file::binary_kind;
use super::{planned_path, resolve, shown};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use similar::{Algorithm, DiffTag, TextDiff};
use std::time::Duration;
use tackle_protocol::text::{preview, truncate_at_char_boundary};
use tackle_protocol::{
    ApprovalMode, Capability, FileVersion, ReadRequest, Risk, Tool, ToolContext, ToolError,
    ToolOutput, ToolSpec, WriteRequest,
};

/// Files larger than this are not edited in memory.
const MAX_EDIT_BYTES: u64 = 64 * 1024 * 1024;
/// The diff shown in the result is cut here; the edit itself is not.
const SHOWN_DIFF_BYTES: usize = 4_000;
/// Lines scanned when suggesting near matches for an old_text that was not found.
const SIMILAR_SCAN_LINES: usize = 100_000;

/// The `edit_file` tool: exact-text replacements (all-or-nothing) or a unified diff.
pub struct EditFile;

// Arguments of `edit_file`. Which of the optional fields go together (exactly one mode) is
// checked by [`mode_of`], which says what is wrong in words the model can act on.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// File to edit, relative to the workspace or absolute.
    path: String,
    /// Single-edit mode: exact text to replace; must occur exactly once.
    old_text: Option<String>,
    /// Single-edit mode: the replacement text.
    new_text: Option<String>,
    /// Multi-edit mode: replacements applied in order, all or nothing.
    #[schemars(length(min = 1))]
    edits: Option<Vec<Edit>>,
    /// Diff mode: a unified diff (`@@ -a,b +c,d @@` hunks) for this file.
    diff: Option<String>,
}

// Inlined, so each item's schema sits under `edits` where the model reads it.
#[derive(Deserialize, JsonSchema, Clone)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
struct Edit {
    /// Exact text to replace; must occur exactly once.
    old_text: String,
    /// Replacement text (may be empty to delete).
    new_text: String,
}

enum Mode {
    Edits(Vec<Edit>),
    Diff(String),
}

#[async_trait]
impl Tool for EditFile {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "edit_file",
            "Change part of a text file. Give exactly one of: `old_text` + `new_text` (replace one exact \
             occurrence); `edits` (several replacements applied in order, all or nothing; each old_text \
             must occur exactly once in the file as it stands before that edit); or `diff` (a unified \
             diff for this one file; hunks must match the file's lines, and may sit at a shifted line). \
             old_text must match exactly, including indentation; include enough surrounding lines to \
             make it unique. Returns a short diff of the change.",
            "fs",
        )
        .risk(Risk::Medium)
        .approval(ApprovalMode::UnlessAutoApproved)
        .parameters(crate::args::schema::<Args>())
    }

    fn planned_capabilities(&self, args: &Value, cx: &ToolContext) -> Vec<Capability> {
        let path = planned_path(args, cx, "path", ".");
        vec![
            Capability::FileRead { path: path.clone() },
            Capability::FileWrite { path },
        ]
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = crate::args::parse(args)?;
        let mode = mode_of(args.old_text, args.new_text, args.edits, args.diff)?;
        let path = resolve(cx, &args.path);
        let (original, real_path, version) = read_text(cx, &path).await?;
        let name = shown(cx, &real_path);
        let crlf = is_crlf(&original);
        let work = if crlf {
            original.replace("\r\n", "\n")
        } else {
            original.clone()
        };
        let (edited, notes, count) = match &mode {
            Mode::Edits(edits) => (
                apply_edits(&work, edits, crlf, &name)?,
                Vec::new(),
                edits.len(),
            ),
            Mode::Diff(diff) => {
                let p = apply_unified(&work, &diff.replace("\r\n", "\n"))?;
                (p.text, p.notes, 1)
            }
        };
        if edited == work {
            return Ok(ToolOutput::text(format!(
                "No change: the edit leaves {name} as it was."
            )));
        }
        let data = if crlf {
            edited.replace('\n', "\r\n")
        } else {
            edited.clone()
        };
        cx.host()
            .write(WriteRequest {
                path: real_path,
                data: data.into_bytes(),
                create_dirs: false,
                // A change made since the read (another edit, a command) is reported rather
                // than overwritten with an edit of the older text.
                expected: version,
            })
            .await?;
        Ok(ToolOutput::text(summary(
            &name, &mode, count, &notes, &work, &edited,
        )))
    }
}

fn mode_of(
    old: Option<String>,
    new: Option<String>,
    edits: Option<Vec<Edit>>,
    diff: Option<String>,
) -> Result<Mode, ToolError> {
    match (old, new, edits, diff) {
        (Some(old_text), Some(new_text), None, None) => {
            Ok(Mode::Edits(vec![Edit { old_text, new_text }]))
        }
        (None, None, Some(edits), None) if !edits.is_empty() => Ok(Mode::Edits(edits)),
        (None, None, None, Some(diff)) => Ok(Mode::Diff(diff)),
        (Some(_), None, None, None) | (None, Some(_), None, None) => Err(
            ToolError::invalid_arguments("`old_text` and `new_text` go together; give both"),
        ),
        _ => Err(ToolError::invalid_arguments(
            "give exactly one of: `old_text` + `new_text`, a non-empty `edits` array, or `diff`",
        )),
    }
}

/// The whole file as UTF-8 text, the canonical path the host read and the version read.
async fn read_text(
    cx: &ToolContext,
    path: &std::path::Path,
) -> Result<(String, std::path::PathBuf, Option<FileVersion>), ToolError> {
    let read = ReadRequest {
        path: path.to_path_buf(),
        offset: 0,
        max_bytes: Some(MAX_EDIT_BYTES),
    };
    let content = cx.host().read(read).await?;
    let name = shown(cx, &content.path);
    if content.total_size > content.bytes.len() as u64 {
        // The host caps reads below our own cap; editing a prefix would truncate the file.
        return Err(ToolError::failed(format!(
            "{name} is {} bytes but only {} can be read at once here, so edit_file cannot edit it safely",
            content.total_size,
            content.bytes.len()
        )));
    }
    if let Some(kind) = binary_kind(&content.bytes) {
        return Err(ToolError::failed(format!(
            "{name} is a binary file ({kind}); edit_file edits text only"
        )));
    }
    let text = String::from_utf8(content.bytes).map_err(|e| {
        ToolError::failed(format!(
            "{name} is not valid UTF-8 (first bad byte at offset {}); editing it as text would corrupt it",
            e.utf8_error().valid_up_to()
        ))
    })?;
    Ok((text, content.path, content.version))
}

/// Every line ends in CRLF (a file mixing endings is edited byte for byte instead).
fn is_crlf(text: &str) -> bool {
    let lf = text.matches('\n').count();
    lf > 0 && text.matches("\r\n").count() == lf
}

/// Apply exact edits in order; the first that does not match exactly once fails them all.
fn apply_edits(text: &str, edits: &[Edit], crlf: bool, name: &str) -> Result<String, ToolError> {
    let mut current = text.to_string();
    for (i, edit) in edits.iter().enumerate() {
        let (old, new) = if crlf {
            (
                edit.old_text.replace("\r\n", "\n"),
                edit.new_text.replace("\r\n", "\n"),
            )
        } else {
            (edit.old_text.clone(), edit.new_text.clone())
        };
        let which = if edits.len() == 1 {
            "the edit".to_string()
        } else {
            format!("edit {} of {}", i + 1, edits.len())
        };
        if old.is_empty() {
            return Err(ToolError::invalid_arguments(format!(
                "{which}: old_text is empty"
            )));
        }
        let starts = occurrences(&current, &old, 10);
        if starts.len() != 1 {
            let nothing = if edits.len() > 1 {
                " No edits were applied."
            } else {
                ""
            };
            return Err(ToolError::failed(format!(
                "{which} failed: old_text {}.{nothing}",
                match_problem(&current, &old, &starts, name)
            )));
        }
        current = current.replacen(&old, &new, 1);
    }
    Ok(current)
}

/// Byte offsets where `needle` starts, overlapping ones included, at most `max`.
fn occurrences(hay: &str, needle: &str, max: usize) -> Vec<usize> {
    let step = needle.chars().next().map_or(1, char::len_utf8);
    let mut found = Vec::new();
    let mut from = 0;
    while found.len() < max {
        match hay.get(from..).and_then(|rest| rest.find(needle)) {
            Some(p) => {
                found.push(from + p);
                from += p + step;
            }
            None => break,
        }
    }
    found
}

fn line_of(text: &str, byte: usize) -> usize {
    text.as_bytes()
        .iter()
        .take(byte)
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// Why `old` did not match exactly once, with what would help the model fix it.
fn match_problem(text: &str, old: &str, starts: &[usize], name: &str) -> String {
    if starts.len() > 1 {
        let lines: Vec<String> = starts
            .iter()
            .map(|&s| line_of(text, s).to_string())
            .collect();
        let count = if starts.len() >= 10 {
            "10 or more".to_string()
        } else {
            starts.len().to_string()
        };
        return format!(
            "occurs {count} times in {name} (at lines {}); include more surrounding text to make it unique",
            lines.join(", ")
        );
    }
    let mut msg = format!("occurs 0 times in {name}");
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    if !old.trim().is_empty() && squash(text).contains(&squash(old)) {
        msg.push_str(
            "; it matches only if whitespace or indentation is ignored, so copy it exactly",
        );
    }
    let near = similar_lines(text, old);
    if !near.is_empty() {
        msg.push_str("; nearest similar lines:\n");
        msg.push_str(&near.join("\n"));
    }
    msg
}

/// Up to three lines most like the first non-blank line of `old`, as `  line N: text`.
fn similar_lines(text: &str, old: &str) -> Vec<String> {
    let Some(target) = old.lines().map(str::trim).find(|l| !l.is_empty()) else {
        return Vec::new();
    };
    let target = truncate_at_char_boundary(target, 200);
    let mut scored: Vec<(f64, usize, &str)> = text
        .lines()
        .take(SIMILAR_SCAN_LINES)
        .enumerate()
        .filter_map(|(i, line)| {
            let t = truncate_at_char_boundary(line.trim(), 200);
            // Lengths far apart cannot be similar; skip them before the quadratic comparison.
            if t.is_empty() || t.len() * 2 < target.len() || target.len() * 2 < t.len() {
                return None;
            }
            let score = strsim::normalized_levenshtein(t, target);
            (score >= 0.5).then_some((score, i + 1, line))
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored
        .into_iter()
        .take(3)
        .map(|(_, n, line)| format!("  line {n}: {}", preview(line, 160)))
        .collect()
}

/// What was done, and a short unified diff of it.
fn summary(
    name: &str,
    mode: &Mode,
    count: usize,
    notes: &[String],
    old: &str,
    new: &str,
) -> String {
    let diff = TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .timeout(Duration::from_millis(500))
        .diff_lines(old, new);
    let (mut added, mut removed) = (0, 0);
    // Counted from the ops' ranges: walking every equal line of a large file would cost more.
    for op in diff.ops() {
        let (tag, old_range, new_range) = op.as_tag_tuple();
        match tag {
            DiffTag::Insert => added += new_range.len(),
            DiffTag::Delete => removed += old_range.len(),
            DiffTag::Replace => {
                added += new_range.len();
                removed += old_range.len();
            }
            DiffTag::Equal => {}
        }
    }
    let what = match mode {
        Mode::Edits(_) if count == 1 => "1 edit".to_string(),
        Mode::Edits(_) => format!("{count} edits"),
        Mode::Diff(_) => "the diff".to_string(),
    };
    let mut out = format!("Edited {name}: applied {what} (+{added} -{removed} lines)\n");
    for note in notes {
        out.push_str(note);
        out.push('\n');
    }
    let text = diff
        .unified_diff()
        .context_radius(2)
        .header(&format!("a/{name}"), &format!("b/{name}"))
        .to_string();
    out.push_str(truncate_at_char_boundary(&text, SHOWN_DIFF_BYTES));
    if text.len() > SHOWN_DIFF_BYTES {
        out.push_str(&format!("\n[diff cut: {} bytes in all]", text.len()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock_host::MockHost;
    use serde_json::json;
    use std::sync::Arc;
    use tackle_protocol::ErrorKind;

    async fn edit(host: &Arc<MockHost>, args: Value) -> Result<ToolOutput, ToolError> {
        EditFile.call(args, &host.context()).await
    }

    fn text(host: &MockHost, path: &str) -> String {
        String::from_utf8(host.file(path).unwrap_or_default()).unwrap_or_default()
    }

    #[tokio::test]
    async fn single_edit_replaces_and_shows_a_diff() {
        let host = Arc::new(MockHost::new().with_file("a.rs", "fn main() {\n    todo!()\n}\n"));
        let out = edit(
            &host,
            json!({"path": "a.rs", "old_text": "todo!()", "new_text": "println!(\"hi\")"}),
        )
        .await;
        let content = out.map(|o| o.content).unwrap_or_default();
        assert!(
            content.starts_with("Edited a.rs: applied 1 edit (+1 -1 lines)"),
            "{content}"
        );
        assert!(
            content.contains("-    todo!()\n+    println!(\"hi\")"),
            "{content}"
        );
        assert_eq!(
            text(&host, "a.rs"),
            "fn main() {\n    println!(\"hi\")\n}\n"
        );
    }

    #[tokio::test]
    async fn multi_edit_is_all_or_nothing_and_names_the_failing_edit() {
        let host = Arc::new(MockHost::new().with_file("c.toml", "version = 1\nverbose = false\n"));
        let args = json!({"path": "c.toml", "edits": [
            {"old_text": "version = 1", "new_text": "version = 2"},
            {"old_text": "verbose = flase", "new_text": "verbose = true"}
        ]});
        let err = edit(&host, args)
            .await
            .err()
            .map(|e| e.message)
            .unwrap_or_default();
        assert!(
            err.starts_with("edit 2 of 2 failed: old_text occurs 0 times in c.toml"),
            "{err}"
        );
        assert!(err.contains("line 2: verbose = false"), "{err}");
        assert!(err.contains("No edits were applied"), "{err}");
        assert_eq!(text(&host, "c.toml"), "version = 1\nverbose = false\n");
        // Nothing was written: only the read was asked for.
        assert_eq!(host.capabilities().len(), 1);
    }

    #[tokio::test]
    async fn an_ambiguous_old_text_reports_how_many_times_and_where() {
        let host = Arc::new(MockHost::new().with_file("a.txt", "x = 1\ny = 2\nx = 1\n"));
        let err = edit(
            &host,
            json!({"path": "a.txt", "old_text": "x = 1", "new_text": "x = 3"}),
        )
        .await;
        let msg = err.err().map(|e| e.message).unwrap_or_default();
        assert!(
            msg.contains("occurs 2 times in a.txt (at lines 1, 3)"),
            "{msg}"
        );
    }

    #[tokio::test]
    async fn later_edits_see_the_result_of_earlier_ones() {
        let host = Arc::new(MockHost::new().with_file("a.txt", "alpha beta\n"));
        let args = json!({"path": "a.txt", "edits": [
            {"old_text": "alpha", "new_text": "gamma"},
            {"old_text": "gamma beta", "new_text": "delta"}
        ]});
        assert!(edit(&host, args).await.is_ok());
        assert_eq!(text(&host, "a.txt"), "delta\n");
    }

    #[tokio::test]
    async fn crlf_files_keep_crlf_when_old_text_uses_lf() {
        let host = Arc::new(MockHost::new().with_file("w.txt", "one\r\ntwo\r\nthree\r\n"));
        let out = edit(
            &host,
            json!({"path": "w.txt", "old_text": "one\ntwo", "new_text": "1\n2"}),
        )
        .await;
        assert!(out.is_ok(), "{out:?}");
        assert_eq!(text(&host, "w.txt"), "1\r\n2\r\nthree\r\n");
    }

    #[tokio::test]
    async fn whitespace_only_mismatch_gets_a_hint() {
        let host = Arc::new(MockHost::new().with_file("a.py", "def f():\n    return 1\n"));
        let err = edit(
            &host,
            json!({"path": "a.py", "old_text": "def f():\n  return 1", "new_text": "x"}),
        )
        .await;
        let msg = err.err().map(|e| e.message).unwrap_or_default();
        assert!(msg.contains("whitespace or indentation"), "{msg}");
    }

    #[tokio::test]
    async fn mixing_modes_is_an_invalid_argument() {
        let host = Arc::new(MockHost::new().with_file("a", "x"));
        let err = edit(
            &host,
            json!({"path": "a", "old_text": "x", "new_text": "y", "diff": "@@"}),
        )
        .await;
        assert_eq!(err.err().map(|e| e.kind), Some(ErrorKind::InvalidArguments));
    }

    #[tokio::test]
    async fn diff_mode_edits_and_reports_offsets() {
        let host = Arc::new(MockHost::new().with_file("a.txt", "a\nb\nc\nd\n"));
        let out = edit(
            &host,
            json!({"path": "a.txt", "diff": "@@ -1,2 +1,2 @@\n c\n-d\n+D\n"}),
        )
        .await;
        let content = out.map(|o| o.content).unwrap_or_default();
        assert!(
            content.contains("hunk 1 applied at line 3 (offset +2)"),
            "{content}"
        );
        assert_eq!(text(&host, "a.txt"), "a\nb\nc\nD\n");
    }

    #[tokio::test]
    async fn non_utf8_files_are_refused_rather_than_corrupted() {
        let host = Arc::new(MockHost::new().with_file("l1.txt", b"caf\xe9 au lait\n".to_vec()));
        let err = edit(
            &host,
            json!({"path": "l1.txt", "old_text": "au", "new_text": "o"}),
        )
        .await;
        let msg = err.err().map(|e| e.message).unwrap_or_default();
        assert!(msg.contains("not valid UTF-8"), "{msg}");
    }

    #[test]
    fn overlapping_occurrences_count_as_ambiguous() {
        assert_eq!(occurrences("aaa", "aa", 10), vec![0, 1]);
        assert_eq!(occurrences("éé", "é", 10), vec![0, 2]);
    }
}
