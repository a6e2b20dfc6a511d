//! `pdf_read {path, max_chars}`: the text of a PDF file in the workspace, page by page.
//!
//! The file is read through the host (fs grants) and refused over 50 MiB before it is read.
//! Parsing is local and bounded (see [`super::pdf_text`]): a hostile file ends the call as
//! `failed` or with partial text, never with a crash or a hang.

use super::file;
use super::pdf_text::{self, Extracted, Limits, Stop};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use std::time::Duration;
use tackle_protocol::{
    ApprovalMode, Capability, Risk, Tool, ToolContext, ToolError, ToolOutput, ToolSpec,
};

/// The largest PDF read.
pub(crate) const MAX_PDF_BYTES: u64 = 50 * 1024 * 1024;
pub(crate) const DEFAULT_MAX_CHARS: usize = 50_000;
pub(crate) const MAX_MAX_CHARS: usize = 200_000;
/// Pages read at most; the rest of a longer document is named, not read.
pub(crate) const MAX_PAGES: usize = 2_000;
/// Parsing, after the file is read.
pub(crate) const PARSE_TIME: Duration = Duration::from_secs(30);

pub(crate) struct PdfRead;

/// Arguments of `pdf_read`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The PDF file, relative to the workspace (no `..`), ending in `.pdf`; at most 50 MiB.
    path: String,
    /// The most characters of text returned (default 50000, at most 200000); longer text is
    /// cut and marked `[TRUNCATED]`.
    #[serde(default)]
    max_chars: Option<u64>,
}

/// The PDF's path inside the workspace, or why it is refused.
fn check_path(raw: &str) -> Result<std::path::PathBuf, ToolError> {
    let path = file::relative_path(raw, "path")?;
    if file::extension_of(&path) != "pdf" {
        return Err(ToolError::invalid_arguments(format!(
            "`{}` is not a PDF file: `path` must end in `.pdf`",
            tackle_protocol::text::preview(raw, 200)
        )));
    }
    Ok(path)
}

fn max_chars(raw: Option<u64>) -> usize {
    raw.map_or(DEFAULT_MAX_CHARS, |n| {
        usize::try_from(n)
            .unwrap_or(MAX_MAX_CHARS)
            .clamp(1, MAX_MAX_CHARS)
    })
}

/// `s` cut to at most `max` characters, never inside one.
fn cut_chars(s: &str, max: usize) -> Option<&str> {
    s.char_indices().nth(max).and_then(|(at, _)| s.get(..at))
}

/// The reply text: a header per page, then its text; cut at `max` characters.
fn render(shown: &str, doc: &Extracted, max: usize) -> (String, bool) {
    let mut body = String::new();
    for page in &doc.pages {
        if !body.is_empty() {
            body.push_str("\n\n");
        }
        body.push_str(&format!("--- Page {} ---\n", page.number));
        match &page.text {
            Ok(text) if text.is_empty() => body.push_str("[no text on this page]"),
            Ok(text) => body.push_str(text),
            Err(why) => body.push_str(&format!(
                "[this page could not be read: {}]",
                tackle_protocol::text::preview(&why.to_string(), 200)
            )),
        }
    }
    let read = doc.pages.len();
    let mut truncated = false;
    if let Some(cut) = cut_chars(&body, max) {
        body = format!("{cut}\n[TRUNCATED]");
        truncated = true;
    }
    let rest = doc.page_count.saturating_sub(read);
    match doc.stopped {
        Some(Stop::Pages) => body.push_str(&format!(
            "\n\n[{shown} has {} pages; only the first {read} were read]",
            doc.page_count
        )),
        Some(Stop::Time) => body.push_str(&format!(
            "\n\n[parsing stopped at the {} s limit: {rest} of {} pages were not read]",
            PARSE_TIME.as_secs(),
            doc.page_count
        )),
        Some(Stop::Chars) if !truncated => {
            body.push_str(&format!("\n[TRUNCATED: {rest} more pages not read]"));
            truncated = true;
        }
        _ => {}
    }
    (body, truncated)
}

#[async_trait]
impl Tool for PdfRead {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "pdf_read",
            "Read the text of a PDF file in the workspace, page by page (at most 50 MiB). \
             Scanned pages without a text layer have no text.",
            "media",
        )
        .parameters(crate::args::schema::<Args>())
        .risk(Risk::Low)
        .approval(ApprovalMode::Never)
    }

    fn planned_capabilities(&self, args: &Value, cx: &ToolContext) -> Vec<Capability> {
        let raw = args.get("path").and_then(Value::as_str).unwrap_or(".");
        vec![Capability::FileRead {
            path: cx.host().workspace().join(raw),
        }]
    }

    fn timeout(&self) -> Option<Duration> {
        // Reading 50 MiB, then the parse limit and its grace.
        Some(PARSE_TIME + Duration::from_secs(30))
    }

    fn provenance(&self, args: &Value) -> tackle_protocol::Provenance {
        // A document or recording someone else made: its words are theirs.
        let path = args.get("path").and_then(Value::as_str).unwrap_or("a file");
        tackle_protocol::Provenance::Untrusted(format!(
            "the document {}",
            tackle_protocol::text::preview(path, 200)
        ))
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = crate::args::parse(args)?;
        let rel = check_path(&args.path)?;
        let max = max_chars(args.max_chars);
        let shown = rel.display().to_string();
        let cap = file::Cap {
            bytes: MAX_PDF_BYTES,
            label: "50 MiB",
            verb: "pdf_read reads",
        };
        let data = file::read_capped(cx, &cx.host().workspace().join(&rel), &shown, &cap).await?;
        if data.is_empty() {
            return Err(ToolError::failed(format!("{shown} is empty, not a PDF")));
        }
        let bytes = data.len();
        let limits = Limits {
            time: PARSE_TIME,
            max_pages: MAX_PAGES,
            max_chars: max,
        };
        let doc = pdf_text::extract(data, limits, cx.cancel.cancelled())
            .await
            .map_err(|e| ToolError::failed(format!("{shown} could not be read as a PDF: {e}")))?;
        let has_text = doc
            .pages
            .iter()
            .any(|p| p.text.as_ref().is_ok_and(|t| !t.is_empty()));
        let (content, truncated) = if doc.page_count == 0 {
            (format!("{shown} has no pages, so no text."), false)
        } else if !has_text && doc.pages.iter().all(|p| p.text.is_ok()) {
            (
                format!(
                    "No text found in {shown} ({} pages): its pages have no text layer (a \
                     scanned document holds images of text, which this tool does not read).",
                    doc.page_count
                ),
                false,
            )
        } else {
            render(&shown, &doc, max)
        };
        let structured = json!({
            "path": shown,
            "bytes": bytes,
            "pages": doc.page_count,
            "pages_read": doc.pages.len(),
            "truncated": truncated,
        });
        Ok(ToolOutput::text(content).with_structured(structured))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::media::pdf_text::PageText;
    use tackle_protocol::ErrorKind;

    #[test]
    fn paths_must_be_relative_pdf_files() {
        for bad in [
            "",
            "/etc/a.pdf",
            "../a.pdf",
            "~/a.pdf",
            "a.txt",
            "a.pdf.txt",
            "pdf",
        ] {
            let err = check_path(bad).unwrap_err();
            assert_eq!(err.kind, ErrorKind::InvalidArguments, "{bad}");
        }
        assert!(check_path("docs/Report.PDF").is_ok());
    }

    #[test]
    fn max_chars_defaults_and_clamps() {
        assert_eq!(max_chars(None), 50_000);
        assert_eq!(max_chars(Some(10)), 10);
        assert_eq!(max_chars(Some(0)), 1);
        assert_eq!(max_chars(Some(10_000_000)), 200_000);
        assert_eq!(max_chars(Some(u64::MAX)), 200_000);
    }

    fn doc(texts: &[&str], page_count: usize, stopped: Option<Stop>) -> Extracted {
        Extracted {
            page_count,
            pages: texts
                .iter()
                .enumerate()
                .map(|(i, t)| PageText {
                    number: i + 1,
                    text: Ok(t.to_string()),
                })
                .collect(),
            stopped,
        }
    }

    #[test]
    fn pages_get_headers_and_the_cut_is_marked() {
        let (text, truncated) = render("a.pdf", &doc(&["one", "two"], 2, None), 1000);
        assert_eq!(text, "--- Page 1 ---\none\n\n--- Page 2 ---\ntwo");
        assert!(!truncated);
        let (text, truncated) = render("a.pdf", &doc(&["ééééé"], 1, None), 17);
        assert_eq!(text, "--- Page 1 ---\néé\n[TRUNCATED]");
        assert!(truncated);
    }

    #[test]
    fn stopping_early_is_said() {
        let (text, _) = render("a.pdf", &doc(&["x"], 5000, Some(Stop::Pages)), 1000);
        assert!(
            text.ends_with("[a.pdf has 5000 pages; only the first 1 were read]"),
            "{text}"
        );
        let (text, truncated) = render("a.pdf", &doc(&["x"], 3, Some(Stop::Chars)), 1000);
        assert!(
            text.ends_with("[TRUNCATED: 2 more pages not read]"),
            "{text}"
        );
        assert!(truncated);
        let (text, _) = render("a.pdf", &doc(&["x"], 3, Some(Stop::Time)), 1000);
        assert!(text.contains("30 s limit: 2 of 3 pages"), "{text}");
    }
}
