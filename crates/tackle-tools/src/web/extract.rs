//! Turning a fetched body into something a model can read: the main content of an HTML page
//! as Markdown or plain text (Readability, as browsers' reader modes do), JSON pretty-printed.
//! Pure functions, no I/O.

use dom_query::Document;
use dom_smoothie::{Config, Readability, TextMode};

/// How `web_fetch` renders a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Markdown,
    Text,
    Raw,
}

impl Format {
    pub(crate) fn parse(raw: Option<&str>) -> Option<Self> {
        match raw.unwrap_or("markdown") {
            "markdown" | "md" => Some(Format::Markdown),
            "text" => Some(Format::Text),
            "raw" | "html" => Some(Format::Raw),
            _ => None,
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Format::Markdown => "markdown",
            Format::Text => "text",
            Format::Raw => "raw",
        }
    }
}

/// The readable part of a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Page {
    pub(crate) title: Option<String>,
    /// The author line Readability found (it is taken out of the content).
    pub(crate) byline: Option<String>,
    pub(crate) content: String,
    /// `true` when Readability found an article; `false` when the whole body was converted.
    pub(crate) article: bool,
}

impl Page {
    /// Content shown as is: no title, not an article.
    pub(crate) fn plain(content: String) -> Self {
        Self {
            title: None,
            byline: None,
            content,
            article: false,
        }
    }
}

/// Elements that are page furniture rather than content, dropped when Readability finds no
/// article and the whole body is converted instead.
const FURNITURE: &str =
    "script, style, noscript, template, nav, header, footer, aside, form, iframe, svg";

/// The main content of `html` as Markdown or text. `url` (the final URL) resolves relative links.
pub(crate) fn page(html: &str, url: &str, format: Format) -> Page {
    let text_mode = match format {
        Format::Text => TextMode::Formatted,
        Format::Markdown | Format::Raw => TextMode::Markdown,
    };
    let cfg = Config {
        text_mode,
        ..Config::default()
    };
    let reader = Readability::new(html, Some(url), Some(cfg.clone()))
        .or_else(|_| Readability::new(html, None, Some(cfg)));
    // A page with too little prose to be an article (a listing, a login form) is converted
    // whole: Readability's last-resort pass would keep the navigation as "content".
    match reader {
        Ok(reader) if reader.is_probably_readable() => {
            article(reader).unwrap_or_else(|| whole_body(html, format))
        }
        _ => whole_body(html, format),
    }
}

fn article(mut reader: Readability) -> Option<Page> {
    let article = reader.parse().ok()?;
    let content = tidy(&article.text_content);
    (!content.is_empty()).then(|| Page {
        title: non_empty(article.title.trim()),
        byline: article.byline.as_deref().and_then(|b| non_empty(b.trim())),
        content,
        article: true,
    })
}

/// Fallback for pages Readability cannot make sense of (listings, apps, tiny pages).
fn whole_body(html: &str, format: Format) -> Page {
    let doc = Document::from(html);
    let title = doc
        .try_select("title")
        .map(|t| t.first().text().trim().to_string())
        .and_then(|t| non_empty(&t));
    if let Some(furniture) = doc.try_select(FURNITURE) {
        furniture.remove();
    }
    let body = doc.try_select("body").map(|b| b.first());
    let content = match (body.as_ref().and_then(|b| b.nodes().first()), format) {
        (Some(node), Format::Text) => node.formatted_text().to_string(),
        (Some(node), _) => node.md(None).to_string(),
        (None, Format::Text) => doc.formatted_text().to_string(),
        (None, _) => doc.md(None).to_string(),
    };
    Page {
        title,
        byline: None,
        content: tidy(&content),
        article: false,
    }
}

fn non_empty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}

/// Trim trailing spaces and squeeze runs of blank lines: extraction leaves many, and every
/// byte of them costs the model context.
fn tidy(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut blank_run = 0;
    for line in s.lines() {
        let line = line.trim_end();
        if line.trim().is_empty() {
            blank_run += 1;
            if blank_run > 1 {
                continue;
            }
        } else {
            blank_run = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim().to_string()
}

/// The charset an HTML document declares in its first 4 KB (`<meta charset=…>` or
/// `<meta http-equiv="Content-Type" content="…; charset=…">`).
pub(crate) fn meta_charset(body: &[u8]) -> Option<String> {
    let head = body.get(..4096).unwrap_or(body).to_ascii_lowercase();
    let mut rest = head.as_slice();
    while let Some(start) = find(rest, b"<meta") {
        rest = rest.get(start + 5..)?;
        let end = rest.iter().position(|&b| b == b'>').unwrap_or(rest.len());
        let tag = rest.get(..end)?;
        if let Some(at) = find(tag, b"charset=") {
            let value = tag.get(at + 8..)?;
            let value: Vec<u8> = value
                .iter()
                .skip_while(|b| matches!(b, b'"' | b'\'' | b' '))
                .take_while(|b| !matches!(b, b'"' | b'\'' | b' ' | b';' | b'/' | b'>'))
                .copied()
                .collect();
            if !value.is_empty() {
                return String::from_utf8(value).ok();
            }
        }
    }
    None
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Pretty-printed JSON, or `None` when the text is not JSON (then it is shown as is).
pub(crate) fn pretty_json(text: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    serde_json::to_string_pretty(&value).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ARTICLE: &str = r#"<!doctype html><html><head><title>Tidal Locking | Sky Notes</title></head>
<body>
<nav><a href="/">Home</a> <a href="/about">About us</a> <a href="/shop">Shop the store</a></nav>
<header><h1>Sky Notes</h1><p>Subscribe to our newsletter for more!</p></header>
<main><article>
<h1>Tidal Locking</h1>
<p>Tidal locking happens when a body's orbital period matches its rotational period, so the
same hemisphere always faces the partner. The Moon is the best-known example: it keeps one face
toward Earth because tidal forces slowed its spin over millions of years.</p>
<p>The effect is common among moons in the solar system. Most large moons, including the
Galilean moons of Jupiter, are tidally locked to their planets, and some binary systems, like
Pluto and Charon, are mutually locked so each always shows the same side to the other.</p>
<p>Astronomers study locking to understand <a href="/exoplanets">exoplanet</a> climates, since a
locked planet has a permanent day side and a permanent night side, with strong winds between.</p>
</article></main>
<footer><p>Copyright 2026 Sky Notes. Privacy policy. Cookie settings.</p></footer>
</body></html>"#;

    #[test]
    fn article_text_comes_out_without_nav_or_footer() {
        let page = page(ARTICLE, "https://sky.example/tidal", Format::Markdown);
        assert!(page.article);
        assert!(
            page.content.contains("Tidal locking happens"),
            "{}",
            page.content
        );
        assert!(page.content.contains("Pluto and Charon"));
        assert!(!page.content.contains("Shop the store"), "{}", page.content);
        assert!(!page.content.contains("Copyright 2026"), "{}", page.content);
        assert!(!page.content.contains("newsletter"), "{}", page.content);
        assert_eq!(page.title.as_deref(), Some("Tidal Locking | Sky Notes"));
    }

    #[test]
    fn markdown_keeps_links_resolved_against_the_page_url() {
        let page = page(ARTICLE, "https://sky.example/tidal", Format::Markdown);
        assert!(
            page.content.contains("(https://sky.example/exoplanets)"),
            "{}",
            page.content
        );
    }

    #[test]
    fn text_format_has_no_markdown_link_syntax() {
        let page = page(ARTICLE, "https://sky.example/tidal", Format::Text);
        assert!(page.content.contains("exoplanet climates"));
        assert!(!page.content.contains("]("), "{}", page.content);
    }

    #[test]
    fn pages_without_an_article_fall_back_to_the_body_minus_furniture() {
        let html = "<html><head><title>Tiny</title></head><body><nav>menu</nav><p>Just one line.</p></body></html>";
        let page = page(html, "https://x.example/", Format::Markdown);
        assert!(page.content.contains("Just one line."), "{page:?}");
        assert!(!page.content.contains("menu"), "{page:?}");
        assert_eq!(page.title.as_deref(), Some("Tiny"));
    }

    #[test]
    fn garbage_and_empty_input_do_not_panic() {
        for html in [
            "",
            "<",
            "<<<>>>",
            "\u{0}\u{1}",
            "<html><body></body></html>",
            "<meta charset=",
        ] {
            let _ = page(html, "not a url", Format::Markdown);
            let _ = page(html, "https://x.example/", Format::Text);
            let _ = meta_charset(html.as_bytes());
        }
    }

    #[test]
    fn meta_charset_is_found_in_both_spellings() {
        assert_eq!(
            meta_charset(b"<META CHARSET='Shift_JIS'>").as_deref(),
            Some("shift_jis")
        );
        let http_equiv =
            br#"<meta http-equiv="Content-Type" content="text/html; charset=iso-8859-1">"#;
        assert_eq!(meta_charset(http_equiv).as_deref(), Some("iso-8859-1"));
        assert_eq!(meta_charset(b"<p>charset=utf-8</p>"), None);
    }

    #[test]
    fn json_is_pretty_printed_and_non_json_is_left_alone() {
        assert_eq!(
            pretty_json(r#"{"a":[1,2]}"#).unwrap(),
            "{\n  \"a\": [\n    1,\n    2\n  ]\n}"
        );
        assert_eq!(pretty_json("not json"), None);
    }
}
