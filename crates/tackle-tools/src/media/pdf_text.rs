//! Text out of PDF bytes, bounded: no stack overflow, no panic, no unbounded time or memory.
//!
//! lopdf does the parsing. Around it:
//! - the bytes are refused up front when they nest deeper than [`pdf_scan::MAX_NESTING`], and
//!   so is each page's decoded content before it is parsed (a stack overflow would abort the
//!   process, which nothing can catch);
//! - parsing runs on its own thread with a large explicit stack, inside `catch_unwind`;
//! - every stream decompresses to at most [`MAX_STREAM_BYTES`] (deflate bombs);
//! - the page loop and each page's operator loop check a deadline, a page cap and a stop flag
//!   set when the caller gives up, so an abandoned parse ends at the next check instead of
//!   burning CPU; only lopdf's own document load cannot be interrupted, and it is linear in
//!   a file that is at most 50 MiB;
//! - at most [`MAX_PARSERS`] parses run at once, an abandoned one included, so a stream of
//!   hostile files cannot pile up threads.

use super::pdf_scan::{self, Nesting};
use lopdf::content::Content;
use lopdf::{Dictionary, Document, Encoding, LoadOptions, Object, ObjectId};
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{oneshot, Semaphore};

/// The largest any one stream (page content, object stream, font map) may decompress to.
pub(crate) const MAX_STREAM_BYTES: usize = 32 * 1024 * 1024;
/// The parse thread's stack: far more than lopdf's bounded recursion needs, even unoptimised.
const PARSE_STACK: usize = 256 * 1024 * 1024;
/// Parses running at once, across all calls.
pub(crate) const MAX_PARSERS: usize = 2;
/// How often, in content operators, a page checks the deadline and the stop flag.
const CHECK_EVERY: usize = 256;
/// How long past the deadline the caller waits for the partial text the parse thread returns
/// when it sees the deadline.
const GRACE: Duration = Duration::from_secs(2);

static PARSERS: Semaphore = Semaphore::const_new(MAX_PARSERS);

/// Why no text came out.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PdfError {
    #[error("it does not start with a PDF header (`%PDF-`)")]
    NotPdf,
    #[error(
        "it nests arrays or dictionaries more than {} deep (at byte {offset}); such a file is \
         refused rather than parsed",
        pdf_scan::MAX_NESTING
    )]
    TooDeep { offset: usize },
    #[error("it could not be parsed: {0}")]
    Unreadable(String),
    #[error("the PDF parser failed on it (internal error); the file is likely malformed")]
    Panicked,
    #[error("parsing took longer than {} s", .0.as_secs())]
    TimedOut(Duration),
    #[error("{MAX_PARSERS} other PDFs were still being parsed; try again shortly")]
    Busy,
    #[error("the call was cancelled")]
    Cancelled,
    #[error("the parser could not start: {0}")]
    Thread(String),
}

/// Bounds of one extraction.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) time: Duration,
    pub(crate) max_pages: usize,
    /// Extraction stops once this many characters of text are in hand.
    pub(crate) max_chars: usize,
}

/// Why one page has no text (the other pages are still read).
#[derive(Debug, thiserror::Error)]
pub(crate) enum PageError {
    /// The page's content streams could not be found or decoded.
    #[error(transparent)]
    Content(#[from] lopdf::Error),
    #[error(
        "its content nests more than {} deep; not parsed",
        pdf_scan::MAX_NESTING
    )]
    TooDeep,
    #[error("its content stream could not be parsed")]
    Unparsable,
}

/// The text of one page, or why that page has none.
#[derive(Debug)]
pub(crate) struct PageText {
    pub(crate) number: usize,
    pub(crate) text: Result<String, PageError>,
}

/// Why extraction stopped before the last page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    Chars,
    Pages,
    Time,
}

#[derive(Debug)]
pub(crate) struct Extracted {
    /// Pages in the page tree (each counted once).
    pub(crate) page_count: usize,
    pub(crate) pages: Vec<PageText>,
    pub(crate) stopped: Option<Stop>,
}

/// Extract the text of `data`, off the async runtime, within `limits`; `cancelled` completes
/// when the call is cancelled.
pub(crate) async fn extract(
    data: Vec<u8>,
    limits: Limits,
    cancelled: impl Future<Output = ()>,
) -> Result<Extracted, PdfError> {
    let cancelled = std::pin::pin!(cancelled);
    let mut cancelled = cancelled;
    let deadline = Instant::now() + limits.time;
    let permit = tokio::select! {
        p = PARSERS.acquire() => p.map_err(|_| PdfError::Busy)?,
        _ = tokio::time::sleep(limits.time) => return Err(PdfError::Busy),
        _ = &mut cancelled => return Err(PdfError::Cancelled),
    };
    let stop = StopOnDrop(Arc::new(AtomicBool::new(false)));
    let budget = Budget {
        deadline,
        limits,
        stop: Arc::clone(&stop.0),
    };
    let (tx, rx) = oneshot::channel();
    std::thread::Builder::new()
        .name("pdf_read".into())
        .stack_size(PARSE_STACK)
        .spawn(move || {
            // Held until the thread really ends, abandoned or not.
            let _permit = permit;
            let out = catch_unwind(AssertUnwindSafe(|| parse(&data, &budget)))
                .unwrap_or(Err(PdfError::Panicked));
            let _ = tx.send(out);
        })
        .map_err(|e| PdfError::Thread(e.to_string()))?;
    let wait_until = tokio::time::Instant::from_std(deadline + GRACE);
    tokio::select! {
        out = rx => out.unwrap_or(Err(PdfError::Panicked)),
        _ = tokio::time::sleep_until(wait_until) => Err(PdfError::TimedOut(limits.time)),
        _ = &mut cancelled => Err(PdfError::Cancelled),
    }
}

/// Sets the stop flag when the caller stops waiting, however it stops (timeout, cancel, or
/// the call's own future dropped).
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

struct Budget {
    deadline: Instant,
    limits: Limits,
    stop: Arc<AtomicBool>,
}

impl Budget {
    /// Whether to stop now: past the deadline, or nobody is waiting any more.
    fn spent(&self) -> bool {
        self.stop.load(Ordering::Relaxed) || Instant::now() >= self.deadline
    }
}

/// The synchronous part, on the parse thread.
fn parse(data: &[u8], budget: &Budget) -> Result<Extracted, PdfError> {
    let head = data.get(..1024).unwrap_or(data);
    if !head.windows(5).any(|w| w == b"%PDF-") {
        return Err(PdfError::NotPdf);
    }
    if let Nesting::TooDeep { offset } = pdf_scan::nesting(data, true) {
        return Err(PdfError::TooDeep { offset });
    }
    let options = LoadOptions {
        max_decompressed_size: Some(MAX_STREAM_BYTES),
        ..LoadOptions::default()
    };
    let doc = Document::load_mem_with_options(data, options)
        .map_err(|e| PdfError::Unreadable(tackle_protocol::text::preview(&e.to_string(), 300)))?;
    if budget.spent() {
        return Err(PdfError::TimedOut(budget.limits.time));
    }
    // A page tree can list a page twice (or loop back to an ancestor, which lopdf's walk
    // bounds by the object count): each page is read once.
    let mut seen = HashSet::new();
    let page_ids: Vec<ObjectId> = doc.page_iter().filter(|id| seen.insert(*id)).collect();
    let mut fonts = FontCache::default();
    let mut out = Extracted {
        page_count: page_ids.len(),
        pages: Vec::new(),
        stopped: None,
    };
    let mut chars = 0usize;
    for (index, id) in page_ids.iter().enumerate() {
        if chars >= budget.limits.max_chars {
            out.stopped = Some(Stop::Chars);
        } else if index >= budget.limits.max_pages {
            out.stopped = Some(Stop::Pages);
        } else if budget.spent() {
            out.stopped = Some(Stop::Time);
        }
        if out.stopped.is_some() {
            break;
        }
        let text = page_text(&doc, *id, &mut fonts, budget);
        if let Ok(t) = &text {
            chars += t.chars().count();
        }
        out.pages.push(PageText {
            number: index + 1,
            text,
        });
    }
    if budget.stop.load(Ordering::Relaxed) {
        return Err(PdfError::TimedOut(budget.limits.time));
    }
    Ok(out)
}

/// Font encodings by font dictionary, resolved once per document (a ToUnicode map is parsed
/// the first time a page selects the font, not once per page).
#[derive(Default)]
struct FontCache<'a> {
    by_font: HashMap<*const Dictionary, Option<Encoding<'a>>>,
}

impl<'a> FontCache<'a> {
    fn get(&mut self, doc: &'a Document, font: &'a Dictionary) -> Option<&Encoding<'a>> {
        self.by_font
            .entry(font as *const Dictionary)
            .or_insert_with(|| {
                font.get_font_encoding_with_limit(doc, MAX_STREAM_BYTES)
                    .ok()
            })
            .as_ref()
    }
}

/// The text one page shows, in content order. A content stream that breaks off part-way
/// keeps the text before the break.
fn page_text<'a>(
    doc: &'a Document,
    page: ObjectId,
    fonts: &mut FontCache<'a>,
    budget: &Budget,
) -> Result<String, PageError> {
    let page_fonts = doc.get_page_fonts(page).unwrap_or_default();
    let content = doc.get_page_content_with_limit(page, MAX_STREAM_BYTES)?;
    if let Nesting::TooDeep { .. } = pdf_scan::nesting(&content, false) {
        return Err(PageError::TooDeep);
    }
    let mut text = String::new();
    let mut font: Option<&Dictionary> = None;
    for (n, op) in Content::decode_iter(&content).enumerate() {
        if n % CHECK_EVERY == 0 && budget.spent() {
            break;
        }
        let Ok(op) = op else {
            if text.is_empty() {
                return Err(PageError::Unparsable);
            }
            break;
        };
        match op.operator.as_str() {
            "Tf" => {
                font = op
                    .operands
                    .first()
                    .and_then(|o| o.as_name().ok())
                    .and_then(|name| page_fonts.get(name).copied());
            }
            "Tj" | "TJ" | "'" | "\"" => {
                if op.operator != "Tj" && op.operator != "TJ" {
                    new_line(&mut text);
                }
                if let Some(encoding) = font.and_then(|f| fonts.get(doc, f)) {
                    show(&mut text, encoding, &op.operands);
                }
            }
            "T*" | "ET" => new_line(&mut text),
            // A move down starts a line; a move along the same line separates words.
            "Td" | "TD" => match op.operands.get(1).and_then(|y| y.as_float().ok()) {
                Some(dy) if dy != 0.0 => new_line(&mut text),
                _ => space(&mut text),
            },
            _ => {}
        }
        if text.len() > budget.limits.max_chars.saturating_mul(4) {
            break;
        }
    }
    Ok(text.trim().to_string())
}

fn new_line(text: &mut String) {
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
}

fn space(text: &mut String) {
    if !text.is_empty() && !text.ends_with(char::is_whitespace) {
        text.push(' ');
    }
}

/// The strings of a show-text operator (`Tj`, `'`, `"`: a string; `TJ`: an array of strings
/// and kerning numbers, a large negative one standing for a space). One level of array only,
/// so this never recurses.
fn show(text: &mut String, encoding: &Encoding<'_>, operands: &[Object]) {
    for operand in operands {
        match operand {
            Object::String(bytes, _) => {
                let _ = encoding.write_to_string(bytes, text);
            }
            Object::Array(items) => {
                for item in items {
                    match item {
                        Object::String(bytes, _) => {
                            let _ = encoding.write_to_string(bytes, text);
                        }
                        Object::Integer(i) if *i < -100 => text.push(' '),
                        Object::Real(r) if *r < -100.0 => text.push(' '),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(time: Duration) -> Limits {
        Limits {
            time,
            max_pages: 10,
            max_chars: 1000,
        }
    }

    #[tokio::test]
    async fn a_spent_deadline_ends_the_parse_as_timed_out() {
        let data =
            b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n";
        let out = extract(
            data.to_vec(),
            limits(Duration::ZERO),
            std::future::pending(),
        )
        .await;
        assert!(matches!(out, Err(PdfError::TimedOut(_))), "{out:?}");
    }

    #[tokio::test]
    async fn cancelling_the_call_stops_waiting() {
        let data = b"%PDF-1.4\n".to_vec();
        let out = extract(
            data,
            limits(Duration::from_secs(30)),
            std::future::ready(()),
        )
        .await;
        assert!(
            matches!(out, Err(PdfError::Cancelled) | Err(PdfError::Unreadable(_))),
            "{out:?}"
        );
    }

    #[test]
    fn bytes_without_a_header_are_not_parsed() {
        let budget = Budget {
            deadline: Instant::now() + Duration::from_secs(30),
            limits: limits(Duration::from_secs(30)),
            stop: Arc::new(AtomicBool::new(false)),
        };
        assert!(matches!(parse(b"<html>", &budget), Err(PdfError::NotPdf)));
        let stopped = Budget {
            stop: Arc::new(AtomicBool::new(true)),
            ..budget
        };
        let doc =
            b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n";
        assert!(matches!(parse(doc, &stopped), Err(PdfError::TimedOut(_))));
    }
}
