//! `pdf_read` end to end: the real host (fs grants) in front of PDFs made here with lopdf's
//! writer, and a corpus of hostile files, each of which must end as `failed` (or partial text)
//! with a clear message, within a bound, without taking the test process down.
#![cfg(feature = "tool-pdf")]

use lopdf::content::{Content, Operation};
use lopdf::{dictionary, Document, Object, ObjectId, Stream};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tackle_host::{HostConfig, NativeHostProvider};
use tackle_protocol::{
    CallScope, ErrorKind, Grants, HostProvider, Tool, ToolContext, ToolError, ToolOutput,
};
use tackle_tools::media::{extension, MediaSettings};

/// Every hostile file must be answered within this (the parse limit is 30 s).
const BOUND: Duration = Duration::from_secs(45);

struct Setup {
    provider: NativeHostProvider,
    workspace: tempfile::TempDir,
    tool: Arc<dyn Tool>,
}

fn setup() -> Setup {
    let workspace = tempfile::tempdir().unwrap();
    let cfg = HostConfig::new(workspace.path().join(".state"));
    let tool = extension(MediaSettings::default())
        .tools()
        .into_iter()
        .find(|t| t.spec().name == "pdf_read")
        .unwrap();
    Setup {
        provider: NativeHostProvider::new(cfg),
        workspace,
        tool,
    }
}

impl Setup {
    fn context(&self) -> ToolContext {
        let scope = CallScope {
            tool: "pdf_read".into(),
            session_id: "media-pdf".into(),
            agent: "default".into(),
            workspace: self.workspace.path().canonicalize().unwrap(),
            grants: Grants::default(),
            cancel: Default::default(),
            approved: true,
        };
        ToolContext::new(&scope, "test", self.provider.scoped(&scope))
    }

    fn put(&self, name: &str, data: &[u8]) {
        let path = self.workspace.path().join(name);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(path, data).unwrap();
    }

    async fn call(&self, args: Value) -> Result<ToolOutput, ToolError> {
        self.tool.call(args, &self.context()).await
    }

    /// `data` as `name`, read with `pdf_read`, timed against [`BOUND`].
    async fn read(&self, name: &str, data: &[u8]) -> Result<ToolOutput, ToolError> {
        self.put(name, data);
        let started = Instant::now();
        let out = tokio::time::timeout(BOUND, self.call(json!({ "path": name })))
            .await
            .unwrap_or_else(|_| panic!("{name}: no answer within {BOUND:?}"));
        assert!(started.elapsed() < BOUND, "{name}");
        out
    }
}

/// A page content stream showing `lines` in font F1, one line each.
fn content(lines: &[Vec<u8>]) -> Vec<u8> {
    let mut ops = vec![
        Operation::new("BT", vec![]),
        Operation::new("Tf", vec!["F1".into(), 12.into()]),
        Operation::new("Td", vec![72.into(), 720.into()]),
    ];
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            ops.push(Operation::new("Td", vec![0.into(), (-14).into()]));
        }
        ops.push(Operation::new(
            "Tj",
            vec![Object::String(line.clone(), lopdf::StringFormat::Literal)],
        ));
    }
    ops.push(Operation::new("ET", vec![]));
    Content { operations: ops }.encode().unwrap()
}

/// A document whose pages hold these content streams, all with font `font` as F1.
fn document(font: Object, pages: Vec<Vec<u8>>, compress: bool) -> Document {
    document_in(Document::with_version("1.5"), font, pages, compress)
}

/// [`document`], adding to `doc` (which may hold objects `font` refers to).
fn document_in(mut doc: Document, font: Object, pages: Vec<Vec<u8>>, compress: bool) -> Document {
    let pages_id = doc.new_object_id();
    let font_id = doc.add_object(font);
    let resources_id = doc.add_object(dictionary! { "Font" => dictionary! { "F1" => font_id } });
    let mut kids: Vec<Object> = Vec::new();
    for data in pages {
        let mut stream = Stream::new(dictionary! {}, data);
        if compress {
            stream.compress().unwrap();
        }
        let content_id = doc.add_object(stream);
        let page_id = doc.add_object(dictionary! {
            "Type" => "Page",
            "Parent" => pages_id,
            "Contents" => content_id,
        });
        kids.push(page_id.into());
    }
    let count = kids.len() as i64;
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! {
            "Type" => "Pages",
            "Kids" => kids,
            "Count" => count,
            "Resources" => resources_id,
            "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()],
        }),
    );
    let catalog_id = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    doc.trailer.set("Root", catalog_id);
    doc
}

fn courier() -> Object {
    Object::Dictionary(dictionary! {
        "Type" => "Font",
        "Subtype" => "Type1",
        "BaseFont" => "Courier",
    })
}

fn save(mut doc: Document) -> Vec<u8> {
    let mut out = Vec::new();
    doc.save_to(&mut out).unwrap();
    out
}

/// A PDF whose pages show these ASCII lines.
fn ascii_pdf(pages: &[&[&str]]) -> Vec<u8> {
    let pages = pages
        .iter()
        .map(|lines| {
            content(
                &lines
                    .iter()
                    .map(|l| l.as_bytes().to_vec())
                    .collect::<Vec<_>>(),
            )
        })
        .collect();
    save(document(courier(), pages, true))
}

fn text(out: &Result<ToolOutput, ToolError>) -> &str {
    match out {
        Ok(o) => &o.content,
        Err(e) => &e.message,
    }
}

#[tokio::test]
async fn one_page_reads_back_its_text() {
    let s = setup();
    let out = s
        .read(
            "doc.pdf",
            &ascii_pdf(&[&["Hello from page one", "Second line"]]),
        )
        .await
        .unwrap();
    assert_eq!(
        out.content,
        "--- Page 1 ---\nHello from page one\nSecond line"
    );
    let st = out.structured.unwrap();
    assert_eq!(st["pages"], 1);
    assert_eq!(st["truncated"], false);
}

#[tokio::test]
async fn several_pages_come_in_order_with_headers() {
    let s = setup();
    let out = s
        .read(
            "docs/three.pdf",
            &ascii_pdf(&[&["alpha"], &["beta"], &["gamma"]]),
        )
        .await
        .unwrap();
    assert_eq!(
        out.content,
        "--- Page 1 ---\nalpha\n\n--- Page 2 ---\nbeta\n\n--- Page 3 ---\ngamma"
    );
}

/// A font whose ToUnicode map sends one-byte codes 1, 2, 3 to é, 中 and 😀 (a surrogate pair).
fn unicode_font(doc: &mut Document) -> Object {
    let cmap = b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n\
/CMapName /Test def /CMapType 2 def\n\
1 begincodespacerange <00> <FF> endcodespacerange\n\
3 beginbfchar\n<01> <00E9>\n<02> <4E2D>\n<03> <D83DDE00>\nendbfchar\n\
endcmap CMapName currentdict /CMap defineresource pop end end\n";
    let to_unicode = doc.add_object(Stream::new(dictionary! {}, cmap.to_vec()));
    Object::Dictionary(dictionary! {
        "Type" => "Font",
        "Subtype" => "Type1",
        "BaseFont" => "Custom",
        "ToUnicode" => to_unicode,
    })
}

fn unicode_pdf(repeat: usize) -> Vec<u8> {
    let mut doc = Document::with_version("1.5");
    let font = unicode_font(&mut doc);
    let line: Vec<u8> = [1u8, 2, 3].repeat(repeat);
    save(document_in(doc, font, vec![content(&[line])], false))
}

#[tokio::test]
async fn unicode_text_comes_through_its_tounicode_map() {
    let s = setup();
    let out = s.read("u.pdf", &unicode_pdf(2)).await.unwrap();
    assert_eq!(out.content, "--- Page 1 ---\né中😀é中😀");
}

#[tokio::test]
async fn the_cut_at_max_chars_is_char_safe_and_marked() {
    let s = setup();
    s.put("u.pdf", &unicode_pdf(1000));
    // The header is 15 characters; 16 more cut inside the run of multi-byte characters.
    let out = s
        .call(json!({"path": "u.pdf", "max_chars": 31}))
        .await
        .unwrap();
    let expected = format!("--- Page 1 ---\n{}é\n[TRUNCATED]", "é中😀".repeat(5));
    assert_eq!(out.content, expected);
    assert_eq!(out.structured.unwrap()["truncated"], true);
}

#[tokio::test]
async fn max_chars_is_clamped_to_two_hundred_thousand() {
    let s = setup();
    s.put("u.pdf", &unicode_pdf(100_000));
    let out = s
        .call(json!({"path": "u.pdf", "max_chars": 5_000_000}))
        .await
        .unwrap();
    let preview = tackle_protocol::text::preview(&out.content, 300);
    let body = out.content.strip_suffix("\n[TRUNCATED]").expect(&preview);
    assert_eq!(body.chars().count(), 200_000);
}

#[tokio::test]
async fn a_pdf_without_text_is_a_success_that_says_so() {
    let s = setup();
    let empty = content(&[]);
    let out = s
        .read(
            "scan.pdf",
            &save(document(courier(), vec![empty.clone(), empty], true)),
        )
        .await
        .unwrap();
    assert!(
        out.content
            .starts_with("No text found in scan.pdf (2 pages)"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn a_file_over_fifty_mib_is_refused_before_it_is_parsed() {
    let s = setup();
    let mut big = ascii_pdf(&[&["x"]]);
    big.resize(50 * 1024 * 1024 + 1, b' ');
    let out = s.read("big.pdf", &big).await;
    let err = out.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Failed);
    assert!(err.message.contains("at most 50 MiB"), "{}", err.message);
}

#[tokio::test]
async fn only_pdf_files_inside_the_workspace_are_read() {
    let s = setup();
    s.put("notes.txt", &ascii_pdf(&[&["x"]]));
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.pdf");
    std::fs::write(&secret, ascii_pdf(&[&["top secret"]])).unwrap();
    std::os::unix::fs::symlink(&secret, s.workspace.path().join("link.pdf")).unwrap();
    let absolute = secret.display().to_string();
    for (path, kind) in [
        ("notes.txt", ErrorKind::InvalidArguments),
        ("notes", ErrorKind::InvalidArguments),
        ("../secret.pdf", ErrorKind::InvalidArguments),
        (absolute.as_str(), ErrorKind::InvalidArguments),
        ("~/secret.pdf", ErrorKind::InvalidArguments),
    ] {
        let err = s.call(json!({ "path": path })).await.unwrap_err();
        assert_eq!(err.kind, kind, "{path}: {}", err.message);
    }
    // A link out of the workspace is the host's to refuse.
    let out = s.call(json!({"path": "link.pdf"})).await;
    assert!(out.is_err(), "{}", text(&out));
    assert!(!text(&out).contains("top secret"));
    let err = s.call(json!({"path": "missing.pdf"})).await.unwrap_err();
    assert!(err.message.contains("missing.pdf"), "{}", err.message);
}

// --- The hostile corpus ---------------------------------------------------------------

/// A minimal file around one object body, with a trailer whose Root is object 1.
fn raw_pdf(body: &[u8]) -> Vec<u8> {
    let mut out = b"%PDF-1.4\n1 0 obj\n".to_vec();
    out.extend_from_slice(body);
    out.extend_from_slice(b"\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n");
    out
}

/// The answer to a hostile file: a clear failure, or partial text; never a crash or a hang.
fn assert_contained(name: &str, out: &Result<ToolOutput, ToolError>) {
    eprintln!("{name}: {}", tackle_protocol::text::preview(text(out), 300));
    match out {
        Ok(o) => assert!(!o.content.is_empty(), "{name}: empty success"),
        Err(e) => {
            assert_eq!(e.kind, ErrorKind::Failed, "{name}: {}", e.message);
            assert!(
                e.message.contains("could not be read as a PDF"),
                "{name}: {}",
                e.message
            );
        }
    }
}

#[tokio::test]
async fn arrays_nested_a_hundred_thousand_deep_are_refused() {
    let s = setup();
    let body = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let out = s.read("arrays.pdf", &raw_pdf(body.as_bytes())).await;
    assert_contained("arrays", &out);
    assert!(
        text(&out).contains("nests arrays or dictionaries"),
        "{}",
        text(&out)
    );
}

#[tokio::test]
async fn dictionaries_nested_a_hundred_thousand_deep_are_refused() {
    let s = setup();
    let body = format!("{}{}", "<< /A ".repeat(100_000), ">>".repeat(100_000));
    let out = s.read("dicts.pdf", &raw_pdf(body.as_bytes())).await;
    assert_contained("dicts", &out);
    assert!(
        text(&out).contains("nests arrays or dictionaries"),
        "{}",
        text(&out)
    );
}

/// Nesting the file scan cannot see (inside compressed page content) is caught per page.
#[tokio::test]
async fn deep_nesting_inside_compressed_page_content_costs_only_that_page() {
    let s = setup();
    let deep = format!("BT /F1 12 Tf {} ET", "[".repeat(100_000)).into_bytes();
    let pages = vec![content(&[b"fine page".to_vec()]), deep];
    let out = s
        .read("content.pdf", &save(document(courier(), pages, true)))
        .await;
    let out = out.unwrap();
    assert!(
        out.content.contains("--- Page 1 ---\nfine page"),
        "{}",
        out.content
    );
    assert!(
        out.content
            .contains("--- Page 2 ---\n[this page could not be read"),
        "{}",
        out.content
    );
}

/// Nesting inside a compressed object stream reaches lopdf's own parser (the file scan skips
/// stream data); lopdf bounds it, on a thread with room to spare.
#[tokio::test]
async fn deep_nesting_inside_a_compressed_object_stream_is_contained() {
    let s = setup();
    let mut doc = document(courier(), vec![content(&[b"visible".to_vec()])], false);
    let deep_id: ObjectId = (doc.max_id + 1, 0);
    let member = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let header = format!("{} 0 ", deep_id.0);
    let mut objstm = Stream::new(
        dictionary! {
            "Type" => "ObjStm",
            "N" => 1,
            "First" => header.len() as i64,
        },
        format!("{header}{member}").into_bytes(),
    );
    objstm.compress().unwrap();
    doc.add_object(objstm);
    let out = s.read("objstm.pdf", &save(doc)).await;
    assert_contained("objstm", &out);
}

#[tokio::test]
async fn a_page_tree_whose_kids_loop_back_is_read_once_per_page() {
    let s = setup();
    // 2: Pages with Kids [3 (page), 2 (itself), 4 (Pages whose Kids go back to 2)].
    let body = b"<< /Type /Catalog /Pages 2 0 R >>\nendobj\n\
2 0 obj\n<< /Type /Pages /Kids [3 0 R 2 0 R 4 0 R] /Count 3 >>\nendobj\n\
3 0 obj\n<< /Type /Page /Parent 2 0 R /Contents 5 0 R >>\nendobj\n\
4 0 obj\n<< /Type /Pages /Parent 2 0 R /Kids [2 0 R 4 0 R 3 0 R] /Count 1 >>\nendobj\n\
5 0 obj\n<< /Length 0 >>\nstream\n\nendstream";
    let out = s.read("loop.pdf", &raw_pdf(body)).await;
    assert_contained("loop", &out);
    if let Ok(o) = &out {
        assert_eq!(o.structured.as_ref().unwrap()["pages"], 1, "{}", o.content);
    }
}

#[tokio::test]
async fn an_object_stream_that_references_itself_is_contained() {
    let s = setup();
    let inner = b"1 0 << /Type /Catalog /Pages 2 0 R >>";
    let mut objstm = Stream::new(
        dictionary! {
            "Type" => "ObjStm", "N" => 1, "First" => 4, "Extends" => Object::Reference((2, 0)),
        },
        inner.to_vec(),
    );
    objstm.compress().unwrap();
    let mut doc = Document::with_version("1.5");
    doc.objects.insert((2, 0), Object::Stream(objstm));
    doc.max_id = 2;
    doc.trailer.set("Root", Object::Reference((1, 0)));
    let out = s.read("selfref.pdf", &save(doc)).await;
    assert_contained("selfref", &out);
}

#[tokio::test]
async fn a_truncated_file_fails_or_gives_what_it_has() {
    let s = setup();
    let whole = ascii_pdf(&[&["before the cut"], &["after"]]);
    for keep in [whole.len() / 2, whole.len() - 40, 9] {
        let out = s.read("cut.pdf", whole.get(..keep).unwrap()).await;
        assert_contained("truncated", &out);
    }
}

#[tokio::test]
async fn garbage_after_the_header_fails_clearly() {
    let s = setup();
    let mut data = b"%PDF-".to_vec();
    let mut x: u32 = 0x1234_5678;
    for _ in 0..200_000 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        data.push((x >> 24) as u8);
    }
    let out = s.read("garbage.pdf", &data).await;
    assert_contained("garbage", &out);
    let out = s.read("text.pdf", b"just some text, not a PDF").await;
    assert!(text(&out).contains("PDF header"), "{}", text(&out));
}

#[tokio::test]
async fn an_xref_pointing_out_of_the_file_is_contained() {
    let s = setup();
    let mut data = ascii_pdf(&[&["xref test"]]);
    let at = data.windows(9).rposition(|w| w == b"startxref").unwrap();
    data.truncate(at);
    data.extend_from_slice(b"startxref\n999999999999\n%%EOF\n");
    let out = s.read("xref.pdf", &data).await;
    assert_contained("xref", &out);
    // And an xref table whose entries point past the end.
    let table = b"%PDF-1.4\nxref\n0 3\n0000000000 65535 f \n9999999999 00000 n \n8888888888 00000 n \ntrailer\n<< /Size 3 /Root 1 0 R >>\nstartxref\n9\n%%EOF\n";
    let out = s.read("xref2.pdf", table).await;
    assert_contained("xref2", &out);
}

#[tokio::test]
async fn ten_thousand_pages_give_partial_text_within_the_bound() {
    let s = setup();
    let pages: Vec<Vec<u8>> = (1..=10_000)
        .map(|n| content(&[format!("text of page {n}").into_bytes()]))
        .collect();
    let out = s
        .read("many.pdf", &save(document(courier(), pages, false)))
        .await
        .unwrap();
    assert!(
        out.content.starts_with("--- Page 1 ---\ntext of page 1\n"),
        "{}",
        tackle_protocol::text::preview(&out.content, 100)
    );
    let st = out.structured.unwrap();
    assert_eq!(st["pages"], 10_000);
    assert!(st["pages_read"].as_u64().unwrap() < 10_000, "{st}");
    assert_eq!(st["truncated"], true);
}

#[tokio::test]
async fn a_stream_claiming_a_gigabyte_is_contained() {
    let s = setup();
    let body = b"<< /Type /Catalog /Pages 2 0 R >>\nendobj\n\
2 0 obj\n<< /Type /Pages /Kids [3 0 R] /Count 1 >>\nendobj\n\
3 0 obj\n<< /Type /Page /Parent 2 0 R /Contents 4 0 R >>\nendobj\n\
4 0 obj\n<< /Length 1073741824 >>\nstream\nBT (short) Tj ET\nendstream";
    let out = s.read("claim.pdf", &raw_pdf(body)).await;
    assert_contained("claim", &out);
}

#[tokio::test]
async fn a_deflate_bomb_in_page_content_is_cut_off() {
    let s = setup();
    // 64 MiB of spaces compresses to a few tens of KiB; the stream cap is 32 MiB.
    let bomb = vec![b' '; 64 * 1024 * 1024];
    let pages = vec![content(&[b"before the bomb".to_vec()]), bomb];
    let data = save(document(courier(), pages, true));
    assert!(data.len() < 1024 * 1024, "{}", data.len());
    let out = s.read("bomb.pdf", &data).await;
    let out = out.unwrap();
    assert!(out.content.contains("before the bomb"), "{}", out.content);
    assert!(
        out.content
            .contains("--- Page 2 ---\n[this page could not be read"),
        "{}",
        out.content
    );
}
