//! A ClawHub-compatible registry (README, "Skills"): `GET /api/v1/search` and
//! `GET /api/v1/download/{slug}`, through the host's HTTP client.

use serde::Deserialize;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tackle_protocol::{ErrorKind, HttpRequest, HttpResponse, ToolContext, ToolError};

/// The largest archive downloaded; counted while the body streams (the host's ceiling applies too).
pub(crate) const MAX_ARCHIVE_BYTES: u64 = 50 * 1024 * 1024;
const MAX_SEARCH_BYTES: u64 = 2 * 1024 * 1024;
const TIMEOUT: Duration = Duration::from_secs(30);
const CACHE_TTL: Duration = Duration::from_secs(300);
const CACHE_ENTRIES: usize = 50;
/// More hops than this and the answer is refused (the host checks each hop it follows).
pub(crate) const MAX_REDIRECTS: usize = 5;

/// One search hit as the registry sends it; every field but `slug` may be missing.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(crate) struct Hit {
    pub slug: String,
    #[serde(default)]
    pub display_name: Option<String>,
    #[serde(default)]
    pub summary: Option<String>,
    #[serde(default, deserialize_with = "lenient_string")]
    pub version: Option<String>,
    #[serde(default)]
    pub sha256: Option<String>,
    #[serde(default)]
    pub is_suspicious: Option<bool>,
}

/// A version may come as `"1.2.0"` or as a bare number.
fn lenient_string<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let v = Option::<serde_json::Value>::deserialize(d)?;
    Ok(match v {
        Some(serde_json::Value::String(s)) => Some(s),
        Some(serde_json::Value::Number(n)) => Some(n.to_string()),
        _ => None,
    })
}

/// A downloaded archive and the digest the registry published for it.
pub(crate) struct Download {
    pub body: Vec<u8>,
    pub published_sha256: Option<String>,
}

pub(crate) struct Registry {
    base: String,
    operator_configured: bool,
    cache: Mutex<HashMap<String, (Instant, Vec<Hit>)>>,
}

/// Percent-encode everything but `A-Za-z0-9-_.~`.
pub(crate) fn encode(q: &str) -> String {
    let mut out = String::with_capacity(q.len());
    for b in q.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A slug names one directory: `[A-Za-z0-9_-]+`.
pub(crate) fn valid_slug(slug: &str) -> bool {
    !slug.is_empty()
        && slug.len() <= 128
        && slug
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// 64 hex digits, lower-cased.
pub(crate) fn valid_sha256(s: &str) -> Option<String> {
    let s = s.trim();
    (s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())).then(|| s.to_ascii_lowercase())
}

impl Registry {
    pub(crate) fn new(base: &str, operator_configured: bool) -> Self {
        Self {
            base: base.trim_end_matches('/').to_string(),
            operator_configured,
            cache: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn base(&self) -> &str {
        &self.base
    }

    pub(crate) fn operator_configured(&self) -> bool {
        self.operator_configured
    }

    pub(crate) fn search_url(&self, query: &str, limit: u64) -> String {
        format!(
            "{}/api/v1/search?q={}&limit={limit}",
            self.base,
            encode(query)
        )
    }

    pub(crate) fn download_url(&self, slug: &str) -> String {
        format!("{}/api/v1/download/{slug}", self.base)
    }

    async fn get(
        &self,
        cx: &ToolContext,
        url: String,
        max_bytes: u64,
    ) -> Result<HttpResponse, ToolError> {
        let req = HttpRequest {
            method: "GET".into(),
            url,
            headers: vec![("Accept".into(), "application/json, application/zip".into())],
            body: None,
            max_bytes,
            timeout: TIMEOUT,
            follow_redirects: true,
            operator_configured: self.operator_configured,
        };
        let resp = tokio::select! {
            res = cx.host().http(req) => res.map_err(ToolError::from)?,
            () = cx.cancel.cancelled() => return Err(ToolError::failed("the request was cancelled")),
        };
        if resp.redirects.len() > MAX_REDIRECTS {
            return Err(ToolError::failed(format!(
                "the registry redirected {} times (at most {MAX_REDIRECTS} are followed)",
                resp.redirects.len()
            )));
        }
        Ok(resp)
    }

    pub(crate) async fn search(
        &self,
        cx: &ToolContext,
        query: &str,
        limit: u64,
    ) -> Result<Vec<Hit>, ToolError> {
        let key = format!("{query}:{limit}");
        if let Some(hits) = self.cached(&key) {
            return Ok(hits);
        }
        let resp = self
            .get(cx, self.search_url(query, limit), MAX_SEARCH_BYTES)
            .await?;
        check_status(&resp, "search")?;
        if resp.truncated {
            return Err(ToolError::failed(format!(
                "the registry's search reply is larger than {MAX_SEARCH_BYTES} bytes"
            )));
        }
        let hits: Vec<Hit> = serde_json::from_slice(&resp.body).map_err(|e| {
            ToolError::failed(format!(
                "the registry's search reply is not a JSON array of skills: {e}"
            ))
        })?;
        let hits: Vec<Hit> = hits
            .into_iter()
            .filter(|h| valid_slug(&h.slug))
            .take(usize::try_from(limit).unwrap_or(usize::MAX))
            .collect();
        self.remember(key, hits.clone());
        Ok(hits)
    }

    fn cached(&self, key: &str) -> Option<Vec<Hit>> {
        let cache = self.cache.lock().ok()?;
        let (at, hits) = cache.get(key)?;
        (at.elapsed() < CACHE_TTL).then(|| hits.clone())
    }

    fn remember(&self, key: String, hits: Vec<Hit>) {
        let Ok(mut cache) = self.cache.lock() else {
            return;
        };
        cache.retain(|_, (at, _)| at.elapsed() < CACHE_TTL);
        while cache.len() >= CACHE_ENTRIES {
            let Some(oldest) = cache
                .iter()
                .min_by_key(|(_, (at, _))| *at)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            cache.remove(&oldest);
        }
        cache.insert(key, (Instant::now(), hits));
    }

    pub(crate) async fn download(
        &self,
        cx: &ToolContext,
        slug: &str,
    ) -> Result<Download, ToolError> {
        // One byte past the cap tells a body at the cap from a larger one.
        let resp = self
            .get(cx, self.download_url(slug), MAX_ARCHIVE_BYTES + 1)
            .await?;
        check_status(&resp, &format!("download of `{slug}`"))?;
        if resp.truncated || resp.body.len() as u64 > MAX_ARCHIVE_BYTES {
            // The body stopped at the lower of this cap and the host's own ceiling.
            let limit = (resp.body.len() as u64).min(MAX_ARCHIVE_BYTES);
            return Err(ToolError::failed(format!(
                "the archive of `{slug}` is larger than the download limit ({limit} bytes); nothing was installed"
            )));
        }
        let published_sha256 = match resp.header("x-skill-sha256") {
            None => None,
            Some(h) => Some(valid_sha256(h).ok_or_else(|| {
                ToolError::failed(format!(
                    "the registry sent an x-skill-sha256 header that is not 64 hex digits for `{slug}`; nothing was installed"
                ))
            })?),
        };
        Ok(Download {
            body: resp.body,
            published_sha256,
        })
    }
}

fn check_status(resp: &HttpResponse, what: &str) -> Result<(), ToolError> {
    match resp.status {
        200..=299 => Ok(()),
        404 => Err(ToolError::new(
            ErrorKind::NotFound,
            format!("the registry has no such skill ({what}: HTTP 404)"),
        )),
        s => Err(ToolError::failed(format!(
            "the registry answered HTTP {s} to the {what}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_percent_encoded_except_unreserved_characters() {
        assert_eq!(
            encode("git hooks/ä&x=1~._-"),
            "git%20hooks%2F%C3%A4%26x%3D1~._-"
        );
    }

    #[test]
    fn slugs_and_digests_are_checked() {
        assert!(valid_slug("my-skill_2"));
        for bad in ["", "a/b", "..", "a b", "ä"] {
            assert!(!valid_slug(bad), "{bad}");
        }
        let hex = "AB".repeat(32);
        assert_eq!(valid_sha256(&hex), Some("ab".repeat(32)));
        assert_eq!(valid_sha256("abc"), None);
        assert_eq!(valid_sha256(&"g".repeat(64)), None);
    }

    #[test]
    fn search_hits_parse_with_missing_fields_and_numeric_versions() {
        let hits: Vec<Hit> = serde_json::from_str(
            r#"[{"slug":"a","version":1.5},{"slug":"b","is_suspicious":true}]"#,
        )
        .unwrap();
        assert_eq!(hits[0].version.as_deref(), Some("1.5"));
        assert_eq!(hits[1].is_suspicious, Some(true));
    }

    #[test]
    fn urls_follow_the_registry_routes() {
        let r = Registry::new("http://127.0.0.1:9/", true);
        assert_eq!(
            r.search_url("a b", 5),
            "http://127.0.0.1:9/api/v1/search?q=a%20b&limit=5"
        );
        assert_eq!(
            r.download_url("demo"),
            "http://127.0.0.1:9/api/v1/download/demo"
        );
    }
}
