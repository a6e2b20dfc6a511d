//! `web_search`: the configured backends (`web_search.backends`), tried in order. Only an error
//! (no connection, a non-2xx status, a body that does not parse, a time-out) moves on to the
//! next backend; an empty result list is an answer. The trail of which backend answered and
//! which failed (and why) is part of the result.

mod backends;

use super::net;
use super::WebSettings;
use async_trait::async_trait;
use backends::BackendError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tackle_protocol::config::SearchBackendConfig;
use tackle_protocol::text::truncate_at_char_boundary;
use tackle_protocol::{
    ApprovalMode, ErrorKind, Risk, Tool, ToolContext, ToolError, ToolOutput, ToolSpec,
};

/// One normalised search result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchHit {
    /// The result's title.
    pub title: String,
    /// The result's address.
    pub url: String,
    /// A short excerpt of the page, as the engine gave it.
    pub snippet: String,
}

/// What happened to one backend during a search.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
struct TrailEntry {
    backend: &'static str,
    /// `answered`, `failed` or `skipped`.
    outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
}

pub(crate) struct WebSearch {
    settings: Arc<WebSettings>,
}

impl WebSearch {
    pub(crate) fn new(settings: Arc<WebSettings>) -> Self {
        Self { settings }
    }
}

const DEFAULT_RESULTS: u64 = 5;
const MAX_RESULTS: u64 = 10;

// Arguments of `web_search` (a plain comment, so not sent as the schema's description).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// What to search for.
    #[schemars(length(min = 1))]
    query: String,
    #[serde(default = "default_results")]
    #[schemars(range(min = 1, max = MAX_RESULTS))]
    max_results: u64,
}

fn default_results() -> u64 {
    DEFAULT_RESULTS
}

#[async_trait]
impl Tool for WebSearch {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "web_search",
            "Search the web. Returns up to 10 results, each with title, url and snippet; \
             pair with web_fetch to read a result.",
            "web",
        )
        .parameters(crate::args::schema::<Args>())
        .risk(Risk::Low)
        .approval(ApprovalMode::Never)
    }

    // No planned capabilities: the model chooses only the query, never the destination.
    // Backends' `url`s are operator-configured; built-in API bases are public hosts that the
    // host still checks against this tool's grant on every request.

    fn timeout(&self) -> Option<Duration> {
        let backends = self.settings.search_backends.len().max(1) as u32;
        Some(self.settings.search_timeout * backends + Duration::from_secs(5))
    }

    fn provenance(&self, _args: &Value) -> tackle_protocol::Provenance {
        tackle_protocol::Provenance::Untrusted("web search results".into())
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = crate::args::parse(args)?;
        let query = args.query.trim();
        if query.is_empty() {
            return Err(ToolError::invalid_arguments("query must not be empty"));
        }
        let max_results = args.max_results.clamp(1, MAX_RESULTS) as usize;
        if self.settings.search_backends.is_empty() {
            return Err(ToolError::failed(
                "web_search has no backends configured: add at least one under \
                 `web_search.backends` in the config (e.g. `- type: duckduckgo`, or \
                 `- type: searxng` with `url:`)",
            ));
        }
        let mut trail = Vec::new();
        for cfg in &self.settings.search_backends {
            let name = backends::name(cfg.kind);
            match self.ask(cx, cfg, query, max_results).await {
                Ok(mut hits) => {
                    hits.truncate(max_results);
                    trail.push(TrailEntry {
                        backend: name,
                        outcome: "answered",
                        reason: None,
                    });
                    return Ok(answer(query, name, &hits, &trail));
                }
                Err(e) if e.is_skip() => trail.push(entry(name, "skipped", e, cfg)),
                Err(e) => {
                    if cx.cancel.is_cancelled() {
                        return Err(ToolError::failed("the search was cancelled"));
                    }
                    trail.push(entry(name, "failed", e, cfg));
                }
            }
        }
        Err(all_failed(&trail))
    }
}

impl WebSearch {
    /// One backend: build its request, send it, parse the answer.
    async fn ask(
        &self,
        cx: &ToolContext,
        cfg: &SearchBackendConfig,
        query: &str,
        max_results: usize,
    ) -> Result<Vec<SearchHit>, BackendError> {
        let s = &self.settings;
        let req = backends::request(cfg, query, max_results, s.search_timeout, &s.user_agent)?;
        let resp = net::send(cx, req).await.map_err(|e| match e.kind {
            ErrorKind::Timeout if !e.message.contains("timed out") => {
                BackendError::Request(format!("timed out: {}", e.message))
            }
            _ => BackendError::Request(e.message),
        })?;
        if !(200..300).contains(&resp.status) {
            let body = String::from_utf8_lossy(&resp.body);
            let detail = tackle_protocol::text::preview(body.trim(), 120);
            let detail = if detail.is_empty() {
                String::new()
            } else {
                format!(": {detail}")
            };
            return Err(BackendError::Status {
                status: resp.status,
                detail,
            });
        }
        backends::parse(cfg.kind, &resp.body)
    }
}

/// A trail entry, with the backend's API key scrubbed from the reason in case an error
/// message quoted a request back.
fn entry(
    backend: &'static str,
    outcome: &'static str,
    err: BackendError,
    cfg: &SearchBackendConfig,
) -> TrailEntry {
    let mut reason = err.to_string();
    if let Some(key) = cfg.api_key.as_deref().filter(|k| k.len() >= 4) {
        reason = reason.replace(key, net::REDACTED);
    }
    let reason = reason
        .strip_prefix("skipped: ")
        .map(str::to_string)
        .unwrap_or(reason);
    TrailEntry {
        backend,
        outcome,
        reason: Some(reason),
    }
}

fn trail_line(trail: &[TrailEntry]) -> String {
    trail
        .iter()
        .map(|t| match &t.reason {
            Some(r) => format!("{} {} ({r})", t.backend, t.outcome),
            None => format!("{} {}", t.backend, t.outcome),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn answer(query: &str, backend: &str, hits: &[SearchHit], trail: &[TrailEntry]) -> ToolOutput {
    let mut text = if hits.is_empty() {
        format!("No results for \"{query}\".\n")
    } else {
        format!("Results for \"{query}\":\n")
    };
    for (i, hit) in hits.iter().enumerate() {
        let snippet = truncate_at_char_boundary(&hit.snippet, 500);
        text.push_str(&format!("\n{}. {}\n   {}\n", i + 1, hit.title, hit.url));
        if !snippet.is_empty() {
            text.push_str(&format!("   {snippet}\n"));
        }
    }
    text.push_str(&format!("\nBackends: {}\n", trail_line(trail)));
    ToolOutput::text(text).with_structured(json!({
        "query": query,
        "backend": backend,
        "results": hits,
        "trail": trail,
    }))
}

fn all_failed(trail: &[TrailEntry]) -> ToolError {
    let every_skip = trail.iter().all(|t| t.outcome == "skipped");
    let lead = if every_skip {
        "no web_search backend is usable; fix `web_search.backends` in the config"
    } else {
        "every web_search backend failed"
    };
    ToolError::failed(format!("{lead}: {}", trail_line(trail)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock_host::{http_json, MockHost};
    use tackle_protocol::config::SearchBackendType;
    use tackle_protocol::HostError;

    fn backend(kind: SearchBackendType, key: Option<&str>) -> SearchBackendConfig {
        SearchBackendConfig {
            kind,
            api_key: key.map(Into::into),
            url: Some("http://127.0.0.1:9".into()),
        }
    }

    fn tool(backends: Vec<SearchBackendConfig>) -> WebSearch {
        WebSearch::new(Arc::new(WebSettings {
            search_backends: backends,
            ..WebSettings::default()
        }))
    }

    const SEARX_ONE: &str =
        r#"{"results":[{"title":"T","url":"https://t.example/","content":"S"}]}"#;

    #[tokio::test]
    async fn errors_fail_over_and_the_trail_says_why() {
        let host = Arc::new(MockHost::new());
        host.reply_http(Err(HostError::Network("connection refused".into())));
        host.reply_http(Ok(http_json(503, "busy")));
        host.reply_http(Ok(http_json(200, "{not json")));
        host.reply_http(Ok(http_json(200, SEARX_ONE)));
        let t = tool(vec![
            backend(SearchBackendType::Searxng, None),
            backend(SearchBackendType::Brave, Some("k1")),
            backend(SearchBackendType::Serper, Some("k2")),
            backend(SearchBackendType::Searxng, None),
        ]);
        let out = t
            .call(json!({"query": "q"}), &host.context())
            .await
            .unwrap();
        let trail = out.structured.as_ref().unwrap()["trail"]
            .as_array()
            .unwrap()
            .clone();
        let outcomes: Vec<_> = trail
            .iter()
            .map(|t| t["outcome"].as_str().unwrap())
            .collect();
        assert_eq!(outcomes, ["failed", "failed", "failed", "answered"]);
        assert!(
            out.content.contains("searxng failed (connection refused)"),
            "{}",
            out.content
        );
        assert!(
            out.content.contains("brave failed (HTTP 503: busy)"),
            "{}",
            out.content
        );
        assert!(
            out.content.contains("serper failed (unparsable response"),
            "{}",
            out.content
        );
        assert!(
            out.content.contains("1. T\n   https://t.example/\n   S"),
            "{}",
            out.content
        );
    }

    #[tokio::test]
    async fn an_empty_result_list_is_an_answer_and_stops_the_search() {
        let host = Arc::new(MockHost::new());
        host.reply_http(Ok(http_json(200, r#"{"results":[]}"#)));
        let t = tool(vec![
            backend(SearchBackendType::Searxng, None),
            backend(SearchBackendType::Searxng, None),
        ]);
        let out = t
            .call(json!({"query": "zzqx"}), &host.context())
            .await
            .unwrap();
        assert!(out.content.starts_with("No results for \"zzqx\""));
        assert_eq!(host.http_requests().len(), 1);
    }

    #[tokio::test]
    async fn backends_without_keys_are_skipped_with_a_note() {
        let host = Arc::new(MockHost::new());
        host.reply_http(Ok(http_json(200, SEARX_ONE)));
        let t = tool(vec![
            backend(SearchBackendType::Kagi, None),
            backend(SearchBackendType::Searxng, None),
        ]);
        let out = t
            .call(json!({"query": "q"}), &host.context())
            .await
            .unwrap();
        assert!(
            out.content.contains("kagi skipped (no api_key configured)"),
            "{}",
            out.content
        );
        assert_eq!(host.http_requests().len(), 1);
        assert!(host.http_requests()[0].operator_configured);
    }

    #[tokio::test]
    async fn no_backends_is_an_error_naming_the_config_key() {
        let host = Arc::new(MockHost::new());
        let err = tool(vec![])
            .call(json!({"query": "q"}), &host.context())
            .await
            .unwrap_err();
        assert!(
            err.message.contains("web_search.backends"),
            "{}",
            err.message
        );
    }

    #[tokio::test]
    async fn all_failing_lists_every_reason_without_the_api_key() {
        let host = Arc::new(MockHost::new());
        host.reply_http(Err(HostError::Network(
            "refused, sent X-API-KEY: sekrit-key".into(),
        )));
        let t = tool(vec![
            backend(SearchBackendType::Serper, Some("sekrit-key")),
            backend(SearchBackendType::Tavily, None),
        ]);
        let err = t
            .call(json!({"query": "q"}), &host.context())
            .await
            .unwrap_err();
        assert!(
            err.message.starts_with("every web_search backend failed"),
            "{}",
            err.message
        );
        assert!(err.message.contains("tavily skipped"), "{}", err.message);
        assert!(!err.message.contains("sekrit-key"), "{}", err.message);
    }

    #[tokio::test]
    async fn max_results_caps_what_comes_back() {
        let host = Arc::new(MockHost::new());
        let many: Vec<Value> = (0..8)
            .map(|i| json!({"title": format!("t{i}"), "url": format!("https://r{i}.example/"), "content": ""}))
            .collect();
        host.reply_http(Ok(http_json(200, &json!({"results": many}).to_string())));
        let t = tool(vec![backend(SearchBackendType::Searxng, None)]);
        let out = t
            .call(json!({"query": "q", "max_results": 3}), &host.context())
            .await
            .unwrap();
        assert_eq!(
            out.structured.unwrap()["results"].as_array().unwrap().len(),
            3
        );
    }
}
