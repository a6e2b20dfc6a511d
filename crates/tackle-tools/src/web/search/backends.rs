//! One request builder and one response parser per search provider, shaped after each
//! provider's public API documentation. Pure functions: the failover loop sends and decides.

use super::SearchHit;
use dom_query::Document;
use serde_json::{json, Value};
use std::time::Duration;
use tackle_protocol::config::{SearchBackendConfig, SearchBackendType};
use tackle_protocol::HttpRequest;
use url::Url;

/// Why a backend gave no answer. Every variant moves the search on to the next backend.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum BackendError {
    #[error("skipped: no api_key configured")]
    NoApiKey,
    #[error("skipped: no url configured")]
    NoUrl,
    #[error("skipped: url `{0}` is not an absolute http(s) URL")]
    BadUrl(String),
    #[error("{0}")]
    Request(String),
    #[error("HTTP {status}{detail}")]
    Status { status: u16, detail: String },
    #[error("unparsable response: {0}")]
    Parse(String),
}

impl BackendError {
    /// Configuration made this backend unusable; it was never asked.
    pub(crate) fn is_skip(&self) -> bool {
        matches!(self, Self::NoApiKey | Self::NoUrl | Self::BadUrl(_))
    }
}

pub(crate) fn name(kind: SearchBackendType) -> &'static str {
    match kind {
        SearchBackendType::Kagi => "kagi",
        SearchBackendType::Tavily => "tavily",
        SearchBackendType::Brave => "brave",
        SearchBackendType::Serper => "serper",
        SearchBackendType::Searxng => "searxng",
        SearchBackendType::Duckduckgo => "duckduckgo",
    }
}

/// The provider's API base when config's `url` does not override it.
fn default_base(kind: SearchBackendType) -> Option<&'static str> {
    match kind {
        SearchBackendType::Kagi => Some("https://kagi.com/api/v0"),
        SearchBackendType::Tavily => Some("https://api.tavily.com"),
        SearchBackendType::Brave => Some("https://api.search.brave.com/res/v1"),
        SearchBackendType::Serper => Some("https://google.serper.dev"),
        SearchBackendType::Duckduckgo => Some("https://html.duckduckgo.com"),
        SearchBackendType::Searxng => None,
    }
}

/// `base` + `path`, with the query pairs appended.
fn endpoint(base: &str, path: &str, query: &[(&str, &str)]) -> Result<String, BackendError> {
    let joined = format!("{}{path}", base.trim_end_matches('/'));
    let mut url = Url::parse(&joined).map_err(|_| BackendError::BadUrl(base.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(BackendError::BadUrl(base.to_string()));
    }
    if !query.is_empty() {
        url.query_pairs_mut().extend_pairs(query);
    }
    Ok(url.to_string())
}

/// The request one backend needs for `query`, or why it is skipped.
pub(crate) fn request(
    cfg: &SearchBackendConfig,
    query: &str,
    max_results: usize,
    timeout: Duration,
    user_agent: &str,
) -> Result<HttpRequest, BackendError> {
    let base = cfg
        .url
        .as_deref()
        .filter(|u| !u.trim().is_empty())
        .or(default_base(cfg.kind))
        .ok_or(BackendError::NoUrl)?;
    let key = cfg.api_key.as_deref().filter(|k| !k.trim().is_empty());
    let needs_key = !matches!(
        cfg.kind,
        SearchBackendType::Searxng | SearchBackendType::Duckduckgo
    );
    let key = match (key, needs_key) {
        (None, true) => return Err(BackendError::NoApiKey),
        (k, _) => k.unwrap_or_default(),
    };
    let n = max_results.to_string();
    let json_accept = ("Accept".to_string(), "application/json".to_string());
    let (method, url, mut headers, body) = match cfg.kind {
        SearchBackendType::Kagi => {
            let url = endpoint(base, "/search", &[("q", query), ("limit", &n)])?;
            (
                "GET",
                url,
                vec![("Authorization".into(), format!("Bot {key}")), json_accept],
                None,
            )
        }
        SearchBackendType::Tavily => {
            let body = json!({"query": query, "max_results": max_results, "search_depth": "basic"});
            let headers = vec![
                ("Authorization".into(), format!("Bearer {key}")),
                ("Content-Type".into(), "application/json".into()),
                json_accept,
            ];
            (
                "POST",
                endpoint(base, "/search", &[])?,
                headers,
                Some(body.to_string()),
            )
        }
        SearchBackendType::Brave => {
            let url = endpoint(base, "/web/search", &[("q", query), ("count", &n)])?;
            (
                "GET",
                url,
                vec![
                    ("X-Subscription-Token".into(), key.to_string()),
                    json_accept,
                ],
                None,
            )
        }
        SearchBackendType::Serper => {
            let body = json!({"q": query, "num": max_results});
            let headers = vec![
                ("X-API-KEY".into(), key.to_string()),
                ("Content-Type".into(), "application/json".into()),
                json_accept,
            ];
            (
                "POST",
                endpoint(base, "/search", &[])?,
                headers,
                Some(body.to_string()),
            )
        }
        SearchBackendType::Searxng => {
            let url = endpoint(base, "/search", &[("q", query), ("format", "json")])?;
            ("GET", url, vec![json_accept], None)
        }
        SearchBackendType::Duckduckgo => {
            let url = endpoint(base, "/html/", &[("q", query)])?;
            (
                "GET",
                url,
                vec![("Accept".into(), "text/html".into())],
                None,
            )
        }
    };
    headers.push(("User-Agent".into(), user_agent.to_string()));
    Ok(HttpRequest {
        method: method.to_string(),
        url,
        headers,
        body: body.map(String::into_bytes),
        max_bytes: 2 * 1024 * 1024,
        timeout,
        follow_redirects: true,
        // Only a `url` the operator wrote is trusted as written (and the host trusts only
        // URLs it finds in the config). A provider's built-in public API base is checked like
        // any URL under this tool's network grant, which allows public hosts by default.
        operator_configured: cfg.url.is_some(),
    })
}

/// The results in one backend's answer. An empty list is an answer, not an error.
pub(crate) fn parse(kind: SearchBackendType, body: &[u8]) -> Result<Vec<SearchHit>, BackendError> {
    if kind == SearchBackendType::Duckduckgo {
        return parse_duckduckgo(&String::from_utf8_lossy(body));
    }
    let value: Value =
        serde_json::from_slice(body).map_err(|e| BackendError::Parse(format!("not JSON ({e})")))?;
    if !value.is_object() {
        return Err(BackendError::Parse("expected a JSON object".into()));
    }
    // (path to the result array, title key, url key, snippet key)
    let (list, title, url, snippet): (&[&str], _, _, _) = match kind {
        SearchBackendType::Kagi => (&["data"], "title", "url", "snippet"),
        SearchBackendType::Tavily => (&["results"], "title", "url", "content"),
        SearchBackendType::Brave => (&["web", "results"], "title", "url", "description"),
        SearchBackendType::Serper => (&["organic"], "title", "link", "snippet"),
        SearchBackendType::Searxng => (&["results"], "title", "url", "content"),
        SearchBackendType::Duckduckgo => return Ok(Vec::new()),
    };
    let items = match lookup(&value, list) {
        Some(Value::Array(items)) => items.as_slice(),
        Some(Value::Null) | None if optional_list(kind, &value) => &[],
        _ => {
            return Err(BackendError::Parse(format!(
                "no `{}` array",
                list.join(".")
            )))
        }
    };
    Ok(items
        .iter()
        // Kagi mixes related-search records (`t: 1`) into `data`; results are `t: 0`.
        .filter(|item| {
            kind != SearchBackendType::Kagi || item.get("t").and_then(Value::as_i64) == Some(0)
        })
        .filter_map(|item| hit(item, title, url, snippet))
        .collect())
}

fn lookup<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(value, |v, key| v.get(key))
}

/// Brave omits `web` when nothing matched; that is an empty answer. Kagi reports failures as
/// `data: null` with an `error` list, which is not.
fn optional_list(kind: SearchBackendType, value: &Value) -> bool {
    match kind {
        SearchBackendType::Brave => value.get("type").and_then(Value::as_str) == Some("search"),
        SearchBackendType::Serper => value.get("searchParameters").is_some(),
        _ => false,
    }
}

fn hit(item: &Value, title: &str, url: &str, snippet: &str) -> Option<SearchHit> {
    let text = |k: &str| {
        item.get(k)
            .and_then(Value::as_str)
            .map(plain)
            .unwrap_or_default()
    };
    let url = item.get(url).and_then(Value::as_str)?.trim().to_string();
    // A result the model cannot fetch (`javascript:`, `data:`, empty) is not a result.
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        return None;
    }
    Some(SearchHit {
        title: text(title),
        url,
        snippet: text(snippet),
    })
}

/// Snippets may carry highlighting markup (`<strong>`) and entities: reduce to plain text.
fn plain(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_tag = false;
    for c in s.chars() {
        match (c, in_tag) {
            ('<', _) => in_tag = true,
            ('>', true) => in_tag = false,
            (c, false) => out.push(c),
            _ => {}
        }
    }
    let out = out
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'")
        .replace("&nbsp;", " ")
        .replace("&amp;", "&");
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// DuckDuckGo's HTML page: `#links` holds `.result` blocks with `a.result__a` (title and a
/// `/l/?uddg=` redirect link) and `.result__snippet`. Ads (`.result--ad`) are dropped. A page
/// without `#links` is not a result page (a bot challenge, an error) and fails over.
fn parse_duckduckgo(html: &str) -> Result<Vec<SearchHit>, BackendError> {
    let doc = Document::from(html);
    if doc.try_select("#links, .no-results").is_none() {
        return Err(BackendError::Parse(
            "no result list in the page (DuckDuckGo may have served a bot challenge)".into(),
        ));
    }
    let Some(results) = doc.try_select("#links .result") else {
        return Ok(Vec::new());
    };
    let mut hits = Vec::new();
    for result in results.iter() {
        if result.has_class("result--ad") {
            continue;
        }
        let Some(link) = result.try_select("a.result__a") else {
            continue;
        };
        let Some(href) = link.attr("href") else {
            continue;
        };
        let Some(url) = ddg_target(&href) else {
            continue;
        };
        let snippet = result
            .try_select(".result__snippet")
            .map(|s| plain(&s.text()))
            .unwrap_or_default();
        hits.push(SearchHit {
            title: plain(&link.text()),
            url,
            snippet,
        });
    }
    Ok(hits)
}

/// The destination of a result link: `//duckduckgo.com/l/?uddg=ENCODED` → the decoded target.
fn ddg_target(href: &str) -> Option<String> {
    let absolute = if href.starts_with("//") {
        format!("https:{href}")
    } else {
        href.to_string()
    };
    let url = Url::parse(&absolute).ok()?;
    if url.path() == "/l/" {
        return url
            .query_pairs()
            .find(|(k, _)| k == "uddg")
            .map(|(_, v)| v.into_owned());
    }
    matches!(url.scheme(), "http" | "https").then(|| url.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fixtures the integration tests replay through wiremock, compiled in.
    fn fixture(name: &str) -> &'static [u8] {
        match name {
            "kagi.json" => include_bytes!("../../../tests/web_fixtures/kagi.json"),
            "tavily.json" => include_bytes!("../../../tests/web_fixtures/tavily.json"),
            "brave.json" => include_bytes!("../../../tests/web_fixtures/brave.json"),
            "serper.json" => include_bytes!("../../../tests/web_fixtures/serper.json"),
            "searxng.json" => include_bytes!("../../../tests/web_fixtures/searxng.json"),
            "duckduckgo.html" => include_bytes!("../../../tests/web_fixtures/duckduckgo.html"),
            "duckduckgo_empty.html" => {
                include_bytes!("../../../tests/web_fixtures/duckduckgo_empty.html")
            }
            "duckduckgo_challenge.html" => {
                include_bytes!("../../../tests/web_fixtures/duckduckgo_challenge.html")
            }
            other => panic!("no fixture {other}"),
        }
    }

    fn cfg(kind: SearchBackendType, key: Option<&str>, url: Option<&str>) -> SearchBackendConfig {
        SearchBackendConfig {
            kind,
            api_key: key.map(Into::into),
            url: url.map(str::to_string),
        }
    }

    #[test]
    fn every_documented_response_shape_parses_to_title_url_snippet() {
        for (kind, file) in [
            (SearchBackendType::Kagi, "kagi.json"),
            (SearchBackendType::Tavily, "tavily.json"),
            (SearchBackendType::Brave, "brave.json"),
            (SearchBackendType::Serper, "serper.json"),
            (SearchBackendType::Searxng, "searxng.json"),
            (SearchBackendType::Duckduckgo, "duckduckgo.html"),
        ] {
            let hits = parse(kind, fixture(file)).unwrap();
            assert_eq!(hits.len(), 2, "{file}: {hits:?}");
            assert_eq!(hits[0].url, "https://crdt.tech/", "{file}");
            assert_eq!(hits[0].title, "About CRDTs", "{file}");
            assert!(
                hits[0].snippet.starts_with("Conflict-free Replicated"),
                "{file}: {hits:?}"
            );
            assert!(!hits[0].snippet.contains('<'), "{file}: {hits:?}");
        }
    }

    #[test]
    fn brave_entities_and_markup_are_reduced_to_plain_text() {
        let hits = parse(SearchBackendType::Brave, fixture("brave.json")).unwrap();
        assert!(
            hits[0]
                .snippet
                .ends_with("distributed data storage & sync."),
            "{hits:?}"
        );
    }

    #[test]
    fn empty_answers_are_answers() {
        let empty = [
            (
                SearchBackendType::Brave,
                r#"{"type":"search","query":{"original":"zz"}}"#,
            ),
            (SearchBackendType::Searxng, r#"{"query":"zz","results":[]}"#),
            (SearchBackendType::Tavily, r#"{"query":"zz","results":[]}"#),
            (
                SearchBackendType::Serper,
                r#"{"searchParameters":{"q":"zz"}}"#,
            ),
            (SearchBackendType::Kagi, r#"{"meta":{},"data":[]}"#),
        ];
        for (kind, body) in empty {
            assert_eq!(parse(kind, body.as_bytes()), Ok(Vec::new()), "{kind:?}");
        }
        let ddg = parse(
            SearchBackendType::Duckduckgo,
            fixture("duckduckgo_empty.html"),
        );
        assert_eq!(ddg, Ok(Vec::new()));
    }

    #[test]
    fn bad_bodies_are_errors() {
        for kind in [
            SearchBackendType::Kagi,
            SearchBackendType::Brave,
            SearchBackendType::Searxng,
        ] {
            assert!(matches!(
                parse(kind, b"<html>oops"),
                Err(BackendError::Parse(_))
            ));
            assert!(matches!(parse(kind, b"[1,2]"), Err(BackendError::Parse(_))));
        }
        let kagi_error = br#"{"meta":{},"data":null,"error":[{"code":1,"msg":"Unauthorized"}]}"#;
        assert!(parse(SearchBackendType::Kagi, kagi_error).is_err());
        let challenge = parse(
            SearchBackendType::Duckduckgo,
            fixture("duckduckgo_challenge.html"),
        );
        assert!(matches!(challenge, Err(BackendError::Parse(_))));
    }

    #[test]
    fn requests_follow_each_providers_documented_shape() {
        let t = Duration::from_secs(1);
        let q = "rust & tokio";
        let kagi = request(
            &cfg(SearchBackendType::Kagi, Some("K"), None),
            q,
            3,
            t,
            "ua",
        )
        .unwrap();
        assert_eq!(
            kagi.url,
            "https://kagi.com/api/v0/search?q=rust+%26+tokio&limit=3"
        );
        assert!(kagi
            .headers
            .contains(&("Authorization".into(), "Bot K".into())));
        let brave = request(
            &cfg(SearchBackendType::Brave, Some("B"), None),
            q,
            3,
            t,
            "ua",
        )
        .unwrap();
        assert_eq!(
            brave.url,
            "https://api.search.brave.com/res/v1/web/search?q=rust+%26+tokio&count=3"
        );
        let serper = request(
            &cfg(SearchBackendType::Serper, Some("S"), None),
            q,
            3,
            t,
            "ua",
        )
        .unwrap();
        assert_eq!(
            (serper.method.as_str(), serper.url.as_str()),
            ("POST", "https://google.serper.dev/search")
        );
        let body: Value = serde_json::from_slice(serper.body.as_deref().unwrap()).unwrap();
        assert_eq!(body, json!({"q": q, "num": 3}));
        let searx = request(
            &cfg(
                SearchBackendType::Searxng,
                None,
                Some("http://127.0.0.1:8888/"),
            ),
            q,
            3,
            t,
            "ua",
        )
        .unwrap();
        assert_eq!(
            searx.url,
            "http://127.0.0.1:8888/search?q=rust+%26+tokio&format=json"
        );
        let ddg = request(
            &cfg(SearchBackendType::Duckduckgo, None, None),
            q,
            3,
            t,
            "ua",
        )
        .unwrap();
        assert_eq!(
            ddg.url,
            "https://html.duckduckgo.com/html/?q=rust+%26+tokio"
        );
        assert!(searx.operator_configured);
        assert!([kagi, brave, serper, ddg]
            .iter()
            .all(|r| !r.operator_configured));
    }

    #[test]
    fn missing_keys_and_urls_skip_the_backend() {
        let t = Duration::from_secs(1);
        let no_key = request(
            &cfg(SearchBackendType::Tavily, Some(" "), None),
            "q",
            3,
            t,
            "ua",
        );
        assert_eq!(no_key, Err(BackendError::NoApiKey));
        let no_url = request(
            &cfg(SearchBackendType::Searxng, None, None),
            "q",
            3,
            t,
            "ua",
        );
        assert_eq!(no_url, Err(BackendError::NoUrl));
        let bad_url = request(
            &cfg(SearchBackendType::Searxng, None, Some("file:///x")),
            "q",
            3,
            t,
            "ua",
        );
        assert!(bad_url.unwrap_err().is_skip());
    }

    #[test]
    fn results_without_a_web_url_are_dropped() {
        let body = br#"{"results":[{"title":"x","url":"javascript:alert(1)"},{"title":"y","url":""},{"title":"z"}]}"#;
        assert_eq!(parse(SearchBackendType::Searxng, body), Ok(Vec::new()));
    }

    #[test]
    fn hostile_bodies_never_panic() {
        let kinds = [
            SearchBackendType::Kagi,
            SearchBackendType::Tavily,
            SearchBackendType::Brave,
            SearchBackendType::Serper,
            SearchBackendType::Searxng,
            SearchBackendType::Duckduckgo,
        ];
        let bodies: [&[u8]; 8] = [
            b"",
            b"\xff\xfe\x00",
            b"null",
            br#"{"data":[{"t":0,"url":5,"title":[]}]}"#,
            br#"{"web":{"results":"nope"},"type":"search"}"#,
            br#"{"results":[null,1,"s",{"url":{"a":1}}]}"#,
            b"<div id=links><div class=result><a class=result__a>no href</a></div></div>",
            b"<div id=links><div class=result><a class=result__a href='//duckduckgo.com/l/?uddg=%FF'>x</a>",
        ];
        for kind in kinds {
            for body in bodies {
                let _ = parse(kind, body);
            }
        }
    }

    #[test]
    fn duckduckgo_redirect_links_are_unwrapped() {
        assert_eq!(
            ddg_target("//duckduckgo.com/l/?uddg=https%3A%2F%2Fa.example%2Fx%3Fy%3D1&rut=z")
                .as_deref(),
            Some("https://a.example/x?y=1")
        );
        assert_eq!(ddg_target("javascript:alert(1)"), None);
    }
}
