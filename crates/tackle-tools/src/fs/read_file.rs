//! `read_file {path, offset?, limit?}`: text of a file, paged by lines, never whole into context.

use super::{planned_path, resolve, shown};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tackle_protocol::{
    ApprovalMode, Capability, ReadRequest, Risk, Tool, ToolContext, ToolError, ToolOutput, ToolSpec,
};

/// Most text one call returns; below the sanitizer's 50 KB cut so paging, not cutting, applies.
pub(crate) const OUTPUT_BUDGET: usize = 40_000;
/// Bytes asked of the host per read. At least `OUTPUT_BUDGET`, so a small file is one read.
const CHUNK: u64 = 64 * 1024;
/// A longer line is shown cut, with its full length noted.
const LINE_CAP: usize = 8_000;
/// How much of the file's start is inspected to tell text from binary.
const SNIFF: usize = 8 * 1024;

/// The `read_file` tool: a file's text paged by lines.
pub struct ReadFile;

// Arguments of `read_file` (a plain comment, so not sent as the schema's description).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// File path, relative to the workspace or absolute.
    path: String,
    /// First line to return (1-based). Use the value a previous page suggested.
    #[schemars(range(min = 1))]
    offset: Option<u64>,
    /// Most lines to return. A page also stops at about 40 KB of text.
    #[schemars(range(min = 1))]
    limit: Option<u64>,
}

#[async_trait]
impl Tool for ReadFile {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "read_file",
            "Read a text file. Without offset/limit a small file comes back as-is; a large file, or any \
             call with offset/limit, comes back as numbered lines, one page at a time, with the offset \
             to pass for the next page. Binary files are refused with their type and size.",
            "fs",
        )
        .risk(Risk::Low)
        .approval(ApprovalMode::Never)
        .parameters(crate::args::schema::<Args>())
    }

    fn planned_capabilities(&self, args: &Value, cx: &ToolContext) -> Vec<Capability> {
        vec![Capability::FileRead {
            path: planned_path(args, cx, "path", "."),
        }]
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = crate::args::parse(args)?;
        let path = resolve(cx, &args.path);
        let first = cx
            .host()
            .read(ReadRequest {
                path: path.clone(),
                offset: 0,
                max_bytes: Some(CHUNK),
            })
            .await?;
        let name = shown(cx, &first.path);
        if let Some(kind) = binary_kind(&first.bytes) {
            return Err(ToolError::failed(format!(
                "{name} is a binary file ({kind}, {} bytes); read_file returns text only",
                first.total_size
            )));
        }
        if first.total_size == 0 {
            return Ok(ToolOutput::text(format!("[{name} is empty: 0 bytes]")));
        }
        let whole = first.total_size <= OUTPUT_BUDGET as u64
            && first.bytes.len() as u64 == first.total_size;
        if whole && args.offset.is_none() && args.limit.is_none() {
            return Ok(ToolOutput::text(
                String::from_utf8_lossy(&first.bytes).into_owned(),
            ));
        }
        let mut pager = Pager::new(args.offset.unwrap_or(1), args.limit);
        page_through(cx, &path, first, &mut pager).await?;
        pager.into_output(&name)
    }
}

/// Feed the pager chunk by chunk until it has a page or the file ends.
async fn page_through(
    cx: &ToolContext,
    path: &std::path::Path,
    first: tackle_protocol::FileContent,
    pager: &mut Pager,
) -> Result<(), ToolError> {
    let total = first.total_size;
    let mut pos = first.bytes.len() as u64;
    pager.total = total;
    pager.feed(&first.bytes);
    while !pager.done && pos < total {
        if cx.cancel.is_cancelled() {
            return Err(ToolError::failed("cancelled"));
        }
        let next = cx
            .host()
            .read(ReadRequest {
                path: path.to_path_buf(),
                offset: pos,
                max_bytes: Some(CHUNK),
            })
            .await?;
        if next.bytes.is_empty() {
            break;
        }
        pos += next.bytes.len() as u64;
        pager.feed(&next.bytes);
    }
    pager.finish();
    Ok(())
}

/// Collects numbered lines `start..` until `limit` lines or the output budget.
struct Pager {
    start: u64,
    limit: Option<u64>,
    line_no: u64,
    /// The current line's bytes, kept only once it is a line to show (capped at `LINE_CAP`).
    cur: Vec<u8>,
    cur_len: usize,
    out: String,
    shown: u64,
    /// Bytes of the file fully processed (through the last newline handled).
    consumed: u64,
    total: u64,
    done: bool,
}

impl Pager {
    fn new(start: u64, limit: Option<u64>) -> Self {
        Self {
            start: start.max(1),
            limit,
            line_no: 1,
            cur: Vec::new(),
            cur_len: 0,
            out: String::new(),
            shown: 0,
            consumed: 0,
            total: 0,
            done: false,
        }
    }

    fn feed(&mut self, mut chunk: &[u8]) {
        while !self.done {
            match chunk.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    let (line, rest) = chunk.split_at(i);
                    self.push(line);
                    if self.end_line() {
                        self.consumed += 1;
                    }
                    chunk = rest.get(1..).unwrap_or_default();
                }
                None => {
                    self.push(chunk);
                    break;
                }
            }
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        if self.line_no >= self.start {
            let room = LINE_CAP.saturating_sub(self.cur.len());
            self.cur
                .extend_from_slice(bytes.get(..room.min(bytes.len())).unwrap_or_default());
        }
        self.cur_len += bytes.len();
    }

    /// Close the current line; `false` when it did not fit and the page ends before it.
    fn end_line(&mut self) -> bool {
        if self.line_no >= self.start {
            let entry = self.render_line();
            if self.shown > 0 && self.out.len() + entry.len() > OUTPUT_BUDGET {
                self.done = true;
                return false;
            }
            self.out.push_str(&entry);
            self.shown += 1;
            self.done = self.limit.is_some_and(|l| self.shown >= l);
        }
        self.consumed += self.cur_len as u64;
        self.line_no += 1;
        self.cur.clear();
        self.cur_len = 0;
        true
    }

    fn render_line(&self) -> String {
        let text = String::from_utf8_lossy(&self.cur);
        let text = text.strip_suffix('\r').unwrap_or(&text);
        if self.cur_len > self.cur.len() {
            format!(
                "{:>6}\t{text}… [line cut: {} bytes long]\n",
                self.line_no, self.cur_len
            )
        } else {
            format!("{:>6}\t{text}\n", self.line_no)
        }
    }

    /// At end of file, a last line without a trailing newline still counts.
    fn finish(&mut self) {
        if !self.done && self.cur_len > 0 {
            self.end_line();
        }
    }

    fn into_output(self, name: &str) -> Result<ToolOutput, ToolError> {
        let last_line = self.line_no.saturating_sub(1);
        if self.shown == 0 {
            return Err(ToolError::invalid_arguments(format!(
                "offset {} is past the end of {name}, which has {last_line} lines",
                self.start
            )));
        }
        let more = self.consumed < self.total;
        let footer = if more {
            format!(
                "[lines {}-{last_line} of {name} ({} bytes); more follows: call read_file with offset={}]",
                self.start,
                self.total,
                last_line + 1
            )
        } else {
            format!("[lines {}-{last_line} of {name}; end of file]", self.start)
        };
        Ok(ToolOutput::text(format!("{}{footer}", self.out)))
    }
}

/// `Some(description)` when the file's first bytes say it is not text.
pub(crate) fn binary_kind(bytes: &[u8]) -> Option<String> {
    if let Some(kind) = magic_type(bytes) {
        return Some(kind.to_string());
    }
    let sample = bytes.get(..SNIFF.min(bytes.len())).unwrap_or_default();
    if sample.contains(&0) {
        return Some("contains NUL bytes".to_string());
    }
    let lossy = String::from_utf8_lossy(sample);
    let bad = lossy
        .chars()
        .filter(|&c| c == char::REPLACEMENT_CHARACTER)
        .count();
    // A few stray Latin-1 bytes in a text file are readable; mostly-invalid UTF-8 is not.
    (bad * 10 > sample.len().max(1)).then(|| {
        format!(
            "not UTF-8 text: {bad} invalid sequences in the first {} bytes",
            sample.len()
        )
    })
}

fn magic_type(b: &[u8]) -> Option<&'static str> {
    const MAGIC: &[(&[u8], &str)] = &[
        (b"\x89PNG\r\n\x1a\n", "PNG image"),
        (b"\xff\xd8\xff", "JPEG image"),
        (b"GIF87a", "GIF image"),
        (b"GIF89a", "GIF image"),
        (b"%PDF-", "PDF document"),
        (b"PK\x03\x04", "ZIP archive"),
        (b"\x7fELF", "ELF executable"),
        (b"\x1f\x8b", "gzip archive"),
        (b"BZh", "bzip2 archive"),
        (b"\xfd7zXZ\x00", "xz archive"),
        (b"7z\xbc\xaf\x27\x1c", "7-Zip archive"),
        (b"\x28\xb5\x2f\xfd", "zstd archive"),
        (b"\x00asm", "WebAssembly module"),
        (b"SQLite format 3\x00", "SQLite database"),
        (b"\xff\xfe", "UTF-16 (LE) text"),
        (b"\xfe\xff", "UTF-16 (BE) text"),
        (b"MZ", "Windows executable"),
    ];
    if b.len() >= 12 && b.starts_with(b"RIFF") && b.get(8..12) == Some(b"WEBP") {
        return Some("WebP image");
    }
    MAGIC
        .iter()
        .find(|(m, _)| b.starts_with(m))
        .map(|(_, kind)| *kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock_host::MockHost;
    use serde_json::json;
    use std::sync::Arc;
    use tackle_protocol::ErrorKind;

    async fn read(host: MockHost, args: Value) -> (Arc<MockHost>, Result<ToolOutput, ToolError>) {
        let host = Arc::new(host);
        let out = ReadFile.call(args, &host.context()).await;
        (host, out)
    }

    #[tokio::test]
    async fn small_file_comes_back_verbatim_and_records_a_read_capability() {
        let (host, out) = read(
            MockHost::new().with_file("a.txt", "one\ntwo\n"),
            json!({"path": "a.txt"}),
        )
        .await;
        assert_eq!(out.map(|o| o.content), Ok("one\ntwo\n".to_string()));
        assert_eq!(
            host.capabilities(),
            vec![Capability::FileRead {
                path: "/ws/a.txt".into()
            }]
        );
    }

    #[tokio::test]
    async fn a_range_is_numbered_and_says_where_the_next_page_starts() {
        let text: String = (1..=10).map(|i| format!("line {i}\n")).collect();
        let (_, out) = read(
            MockHost::new().with_file("a.txt", text),
            json!({"path": "a.txt", "offset": 3, "limit": 2}),
        )
        .await;
        let content = out.map(|o| o.content).unwrap_or_default();
        assert!(
            content.contains("     3\tline 3\n     4\tline 4\n"),
            "{content}"
        );
        assert!(!content.contains("line 5"), "{content}");
        assert!(content.contains("offset=5"), "{content}");
    }

    #[tokio::test]
    async fn large_file_is_paged_within_the_budget_and_never_read_whole() {
        let text: String = (1..=20_000).map(|i| format!("row number {i}\n")).collect();
        let (host, out) = read(
            MockHost::new().with_file("big.txt", text),
            json!({"path": "big.txt"}),
        )
        .await;
        let content = out.map(|o| o.content).unwrap_or_default();
        assert!(content.len() <= OUTPUT_BUDGET + 200, "{}", content.len());
        assert!(content.contains("more follows"), "{content}");
        // One 64 KiB read covered the first page; the 270 KB file was not read to the end.
        assert_eq!(host.capabilities().len(), 1);
    }

    #[tokio::test]
    async fn binary_files_are_refused_with_their_type_and_size() {
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        let (_, out) = read(
            MockHost::new().with_file("i.png", png),
            json!({"path": "i.png"}),
        )
        .await;
        let err = out.err().map(|e| (e.kind, e.message));
        assert!(
            matches!(&err, Some((ErrorKind::Failed, m)) if m.contains("PNG image") && m.contains("16 bytes")),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn offset_past_the_end_says_how_many_lines_there_are() {
        let (_, out) = read(
            MockHost::new().with_file("a.txt", "x\ny\nz"),
            json!({"path": "a.txt", "offset": 9}),
        )
        .await;
        let err = out.err().map(|e| (e.kind, e.message));
        assert!(
            matches!(&err, Some((ErrorKind::InvalidArguments, m)) if m.contains("has 3 lines")),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn a_huge_line_is_cut_with_its_length_noted() {
        let text = format!("{}\nshort\n", "x".repeat(100_000));
        let (_, out) = read(
            MockHost::new().with_file("h.txt", text),
            json!({"path": "h.txt"}),
        )
        .await;
        let content = out.map(|o| o.content).unwrap_or_default();
        assert!(
            content.contains("line cut: 100000 bytes long"),
            "{}",
            crate::fs::read_file::tests::head(&content)
        );
        assert!(content.contains("     2\tshort"));
    }

    #[tokio::test]
    async fn a_denied_read_is_a_denied_error() {
        let host = MockHost::new().with_file("secret", "k");
        host.deny_matching("secret");
        let (_, out) = read(host, json!({"path": "secret"})).await;
        assert_eq!(out.err().map(|e| e.kind), Some(ErrorKind::Denied));
    }

    fn head(s: &str) -> &str {
        tackle_protocol::text::truncate_at_char_boundary(s, 300)
    }

    proptest::proptest! {
        #[test]
        fn paging_arbitrary_bytes_never_panics_and_respects_the_limit(
            data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..3000),
            start in 1u64..50,
            limit in proptest::option::of(1u64..20),
        ) {
            let mut pager = Pager::new(start, limit);
            pager.total = data.len() as u64;
            for chunk in data.chunks(7) {
                pager.feed(chunk);
            }
            pager.finish();
            if let Some(l) = limit {
                proptest::prop_assert!(pager.shown <= l);
            }
            let _ = binary_kind(&data);
            let _ = pager.into_output("f");
        }
    }
}
