//! `memory {action: search|get, …}`: the workspace's markdown notes (`MEMORY.md`,
//! `memory.md`, `memory/**/*.md`), searched in overlapping chunks and cited by path and
//! lines. Files are listed and read through `cx.host()`; links are never followed.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use std::path::{Component, Path, PathBuf};
use tackle_protocol::{
    Capability, HostError, ListRequest, ReadRequest, Tool, ToolContext, ToolError, ToolOutput,
    ToolSpec,
};

const ROOT_NOTES: [&str; 2] = ["MEMORY.md", "memory.md"];
const NOTES_DIR: &str = "memory";
const MAX_DEPTH: usize = 10;
const CHUNK_LINES: usize = 18;
const CHUNK_STEP: usize = 14;
const SNIPPET_CHARS: usize = 700;
/// Notes larger than this are searched and read up to it.
const MAX_NOTE_BYTES: u64 = 1024 * 1024;
const MAX_NOTES: usize = 2_000;

/// The `memory` tool: searches and reads the workspace's markdown notes.
pub struct WorkspaceNotes;

#[derive(Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq, Default)]
#[schemars(inline)]
#[serde(rename_all = "snake_case")]
enum Action {
    #[default]
    Search,
    Get,
}

// Arguments of `memory`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Default search.
    #[serde(default)]
    action: Action,
    /// For search: words to look for.
    query: Option<String>,
    /// For search: 1 to 50 (default 6).
    max_results: Option<i64>,
    /// For search: 0 to 1 (default 0.2).
    min_score: Option<f64>,
    /// For search: add a `Source: path#La-Lb` line (default true).
    include_citations: Option<bool>,
    /// For get: the note, relative to the workspace.
    path: Option<String>,
    /// For get: first line (default 1).
    #[schemars(range(min = 1))]
    from: Option<i64>,
    /// For get: how many lines, 1 to 400 (default 80).
    lines: Option<i64>,
}

#[async_trait]
impl Tool for WorkspaceNotes {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "memory",
            "Search or read the workspace's notes (MEMORY.md, memory.md, memory/**/*.md). \
             search (query) returns the best passages with path#lines citations; get (path, from, lines) reads a note. \
             Example: {\"action\": \"search\", \"query\": \"release checklist\"}.",
            super::NAME,
        )
        .parameters(crate::args::schema::<Args>())
    }

    fn planned_capabilities(&self, args: &Value, cx: &ToolContext) -> Vec<Capability> {
        let path = match args.get("path").and_then(Value::as_str) {
            Some(p) if args.get("action").and_then(Value::as_str) == Some("get") => {
                cx.host().workspace().join(p)
            }
            _ => cx.host().workspace().to_path_buf(),
        };
        vec![Capability::FileRead { path }]
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = crate::args::parse(args)?;
        match args.action {
            Action::Search => search(&args, cx).await,
            Action::Get => get(&args, cx).await,
        }
    }
}

/// `rel` if it names a note: no absolute or `..` parts, and `MEMORY.md`, `memory.md` or a
/// `.md` file under `memory/` at most ten directories deep.
fn note_path(rel: &str) -> Option<PathBuf> {
    let rel = rel.strip_prefix("./").unwrap_or(rel);
    let path = Path::new(rel);
    let parts: Vec<&str> = path
        .components()
        .map(|c| match c {
            Component::Normal(s) => s.to_str(),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()?;
    let ok = match parts.as_slice() {
        [one] => ROOT_NOTES.contains(one),
        [dir, rest @ ..] => {
            *dir == NOTES_DIR
                && rest.len() <= MAX_DEPTH + 1
                && rest.last().is_some_and(|f| f.ends_with(".md"))
        }
        [] => false,
    };
    ok.then(|| parts.iter().collect())
}

/// The note's text, or `None` when it is missing or is (or sits behind) a link.
async fn read_note(cx: &ToolContext, rel: &Path) -> Result<Option<String>, ToolError> {
    let abs = cx.host().workspace().join(rel);
    if cx.host().canonical(&abs) != abs {
        return Ok(None);
    }
    let req = ReadRequest {
        path: abs,
        offset: 0,
        max_bytes: Some(MAX_NOTE_BYTES),
    };
    match cx.host().read(req).await {
        Ok(content) => Ok(Some(String::from_utf8_lossy(&content.bytes).into_owned())),
        Err(HostError::NotFound { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Every note's workspace-relative path, root notes first, then `memory/` in path order.
async fn note_paths(cx: &ToolContext) -> Result<Vec<PathBuf>, ToolError> {
    let mut out: Vec<PathBuf> = ROOT_NOTES.iter().map(PathBuf::from).collect();
    let dir = cx.host().workspace().join(NOTES_DIR);
    let listed = cx
        .host()
        .list(ListRequest {
            path: dir,
            max_depth: Some(MAX_DEPTH + 1),
            include_hidden: false,
            respect_gitignore: false,
            glob: None,
            max_entries: MAX_NOTES,
        })
        .await;
    match listed {
        Ok(entries) => {
            let mut found: Vec<PathBuf> = entries
                .into_iter()
                .filter(|e| !e.is_dir)
                .filter_map(|e| {
                    let rel = Path::new(NOTES_DIR).join(&e.path);
                    note_path(rel.to_str()?)
                })
                .collect();
            found.sort();
            out.extend(found);
        }
        Err(HostError::NotFound { .. }) => {}
        Err(e) => return Err(e.into()),
    }
    Ok(out)
}

/// Query words: lowercase alphanumeric runs of two characters or more, once each.
fn terms(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in query.split(|c: char| !c.is_alphanumeric()) {
        let w = w.to_lowercase();
        if w.chars().count() >= 2 && !out.contains(&w) {
            out.push(w);
        }
    }
    out
}

/// min(1, 0.7·found/terms + 0.3·min(1, hits/(2·terms)) + 0.25 if the whole query occurs).
fn score(chunk: &str, terms: &[String], phrase: &str) -> (f64, usize) {
    let text = chunk.to_lowercase();
    let found = terms.iter().filter(|t| text.contains(t.as_str())).count();
    let hits: usize = terms.iter().map(|t| text.matches(t.as_str()).count()).sum();
    let n = terms.len().max(1) as f64;
    let bonus = if !phrase.is_empty() && text.contains(phrase) {
        0.25
    } else {
        0.0
    };
    let s = 0.7 * found as f64 / n + 0.3 * (hits as f64 / (2.0 * n)).min(1.0) + bonus;
    (s.min(1.0), found)
}

struct Passage {
    path: String,
    first: usize,
    last: usize,
    score: f64,
    text: String,
}

/// `(first line, last line)`, 1-based: 18-line windows every 14 lines, the last one ending
/// at the note's end.
fn chunks(n_lines: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < n_lines {
        let end = (start + CHUNK_LINES).min(n_lines);
        out.push((start + 1, end));
        if end == n_lines {
            break;
        }
        start += CHUNK_STEP;
    }
    out
}

fn clamp_i(v: Option<i64>, default: i64, lo: i64, hi: i64) -> usize {
    usize::try_from(v.unwrap_or(default).clamp(lo, hi)).unwrap_or(1)
}

async fn search(args: &Args, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
    let query = args
        .query
        .as_deref()
        .filter(|q| !q.trim().is_empty())
        .ok_or_else(|| ToolError::invalid_arguments("`query` is required for action `search`"))?;
    let terms = terms(query);
    if terms.is_empty() {
        return Err(ToolError::invalid_arguments(
            "`query` has no word of two or more letters or digits to search for",
        ));
    }
    let max_results = clamp_i(args.max_results, 6, 1, 50);
    let min_score = args.min_score.unwrap_or(0.2).clamp(0.0, 1.0);
    let citations = args.include_citations.unwrap_or(true);
    let phrase = query.trim().to_lowercase();
    let mut passages = Vec::new();
    for rel in note_paths(cx).await? {
        let Some(text) = read_note(cx, &rel).await? else {
            continue;
        };
        let lines: Vec<&str> = text.lines().collect();
        let shown = rel.display().to_string();
        for (first, last) in chunks(lines.len()) {
            let body = lines
                .get(first - 1..last)
                .map(|l| l.join("\n"))
                .unwrap_or_default();
            let (s, found) = score(&body, &terms, &phrase);
            if found > 0 && s >= min_score {
                passages.push(Passage {
                    path: shown.clone(),
                    first,
                    last,
                    score: s,
                    text: body,
                });
            }
        }
    }
    passages.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.path.cmp(&b.path))
            .then(a.first.cmp(&b.first))
    });
    passages.truncate(max_results);
    if passages.is_empty() {
        return Ok(ToolOutput::text(format!("No notes match `{query}`.")));
    }
    let mut out = Vec::new();
    for (i, p) in passages.iter().enumerate() {
        let mut snippet: String = p.text.chars().take(SNIPPET_CHARS).collect();
        if p.text.chars().count() > SNIPPET_CHARS {
            snippet.push('…');
        }
        let mut block = format!(
            "{}. {} (score {:.2}, lines {}-{})\n{snippet}",
            i + 1,
            p.path,
            p.score,
            p.first,
            p.last
        );
        if citations {
            block.push_str(&format!("\nSource: {}#L{}-L{}", p.path, p.first, p.last));
        }
        out.push(block);
    }
    Ok(ToolOutput::text(out.join("\n\n")).with_structured(json!({
        "results": passages.iter().enumerate().map(|(i, p)| json!({
            "rank": i + 1, "path": p.path, "score": p.score, "from": p.first, "to": p.last,
        })).collect::<Vec<_>>()
    })))
}

async fn get(args: &Args, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
    let raw = args
        .path
        .as_deref()
        .filter(|p| !p.trim().is_empty())
        .ok_or_else(|| ToolError::invalid_arguments("`path` is required for action `get`"))?;
    let not_note = || {
        ToolError::not_found(format!(
            "{raw:?} is not a workspace note (MEMORY.md, memory.md or memory/**/*.md)"
        ))
    };
    let rel = note_path(raw).ok_or_else(not_note)?;
    let from = match args.from {
        None => 1,
        Some(n) if n >= 1 => usize::try_from(n).unwrap_or(usize::MAX),
        Some(n) => {
            return Err(ToolError::invalid_arguments(format!(
                "`from` must be 1 or more, not {n}"
            )))
        }
    };
    let count = clamp_i(args.lines, 80, 1, 400);
    let text = read_note(cx, &rel).await?.ok_or_else(not_note)?;
    let lines: Vec<&str> = text.lines().collect();
    let n = lines.len();
    let shown = rel.display().to_string();
    if n == 0 {
        return Ok(ToolOutput::text(format!("{shown}\nLines 0-0 of 0\n")));
    }
    if from > n {
        return Err(ToolError::invalid_arguments(format!(
            "`from` {from} is past the end of {shown} ({n} lines)"
        )));
    }
    let last = from.saturating_add(count - 1).min(n);
    let body = lines
        .get(from - 1..last)
        .map(|l| l.join("\n"))
        .unwrap_or_default();
    let mut out = format!("{shown}\nLines {from}-{last} of {n}\n");
    if last < n {
        out.push_str(&format!("Truncated: read on with from={}\n", last + 1));
    }
    out.push_str(&body);
    Ok(ToolOutput::text(out).with_structured(json!({
        "path": shown, "from": from, "to": last, "total_lines": n, "truncated": last < n,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock_host::MockHost;
    use std::sync::Arc;
    use tackle_protocol::ErrorKind;

    fn notes_host() -> Arc<MockHost> {
        let mut long = String::new();
        for i in 1..=40 {
            long.push_str(&format!("line {i}\n"));
        }
        long.push_str("the release checklist lives here\n");
        Arc::new(
            MockHost::new()
                .with_file("MEMORY.md", "# Memory\nDeploys happen on tuesdays.\n")
                .with_file("memory/ops/release.md", long)
                .with_file("memory/readme.txt", "release checklist, not a note\n")
                .with_file("other.md", "release checklist outside the notes\n"),
        )
    }

    #[test]
    fn chunks_are_eighteen_lines_every_fourteen_ending_at_the_end() {
        assert_eq!(chunks(0), []);
        assert_eq!(chunks(5), [(1, 5)]);
        assert_eq!(chunks(18), [(1, 18)]);
        assert_eq!(chunks(41), [(1, 18), (15, 32), (29, 41)]);
    }

    #[test]
    fn only_note_paths_without_parent_parts_are_notes() {
        for ok in ["MEMORY.md", "./memory.md", "memory/a.md", "memory/a/b/c.md"] {
            assert!(note_path(ok).is_some(), "{ok}");
        }
        for bad in [
            "other.md",
            "/etc/passwd",
            "memory/../secret.md",
            "memory/a.txt",
            "../MEMORY.md",
            "memory",
            "memory/a/b/c/d/e/f/g/h/i/j/k/l.md",
        ] {
            assert!(note_path(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn the_score_follows_the_formula() {
        let t = terms("release checklist");
        // Both words once, and the phrase: 0.7 + 0.3·min(1, 2/4) + 0.25 → 1 (capped).
        assert_eq!(
            score("the release checklist", &t, "release checklist").0,
            1.0
        );
        // One word of two, once: 0.35 + 0.3·(1/4) = 0.425.
        let (s, found) = score("release day", &t, "release checklist");
        assert!((s - 0.425).abs() < 1e-9, "{s}");
        assert_eq!(found, 1);
    }

    #[tokio::test]
    async fn search_finds_passages_in_notes_only_with_citations() {
        let host = notes_host();
        let cx = host.context();
        let out = WorkspaceNotes
            .call(json!({"query": "release checklist"}), &cx)
            .await
            .unwrap();
        assert!(
            out.content
                .starts_with("1. memory/ops/release.md (score 1.00, lines 29-41)"),
            "{}",
            out.content
        );
        assert!(out
            .content
            .contains("Source: memory/ops/release.md#L29-L41"));
        assert!(!out.content.contains("outside the notes"));
        assert!(!out.content.contains("not a note"));
        let plain = WorkspaceNotes
            .call(
                json!({"query": "tuesdays", "include_citations": false}),
                &cx,
            )
            .await
            .unwrap();
        assert!(
            plain.content.starts_with("1. MEMORY.md"),
            "{}",
            plain.content
        );
        assert!(!plain.content.contains("Source:"));
    }

    #[tokio::test]
    async fn get_reads_a_window_of_lines_and_refuses_other_files() {
        let host = notes_host();
        let cx = host.context();
        let out = WorkspaceNotes
            .call(
                json!({"action": "get", "path": "memory/ops/release.md", "from": 2, "lines": 3}),
                &cx,
            )
            .await
            .unwrap();
        assert_eq!(
            out.content,
            "memory/ops/release.md\nLines 2-4 of 41\nTruncated: read on with from=5\nline 2\nline 3\nline 4"
        );
        for path in [
            "other.md",
            "../MEMORY.md",
            "/ws/other.md",
            "memory/missing.md",
        ] {
            let err = WorkspaceNotes
                .call(json!({"action": "get", "path": path}), &cx)
                .await
                .unwrap_err();
            assert_eq!(err.kind, ErrorKind::NotFound, "{path}");
        }
        assert!(host
            .capabilities()
            .iter()
            .all(|c| matches!(c, Capability::FileRead { .. })));
    }
}
