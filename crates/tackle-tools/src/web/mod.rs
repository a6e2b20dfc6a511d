//! The `web` extension: `web_fetch` (a page as readable Markdown), `http_request` (any method,
//! raw status, headers and body) and `web_search` (configured search backends with failover).
//!
//! Every request goes through `cx.host().http(..)`: the host checks the network grant, pins
//! DNS, re-checks each redirect, caps the body and times out. These tools only shape requests
//! and read answers; they never open a socket. A search backend's `url` is a destination the
//! operator wrote in config, so its requests are marked `operator_configured` (trusted as
//! written, e.g. a SearxNG on 127.0.0.1); providers' built-in public API bases are checked
//! like any other URL.
//!
//! Not here: SSRF rules (`tackle-policy`), the HTTP client (`tackle-host`), result sanitizing
//! (the dispatcher).
//!
//! ```
//! use tackle_tools::web::{extension, WebSettings};
//! use tackle_protocol::config::{SearchBackendConfig, SearchBackendType};
//!
//! let settings = WebSettings {
//!     search_backends: vec![SearchBackendConfig {
//!         kind: SearchBackendType::Duckduckgo,
//!         api_key: None,
//!         url: None,
//!     }],
//!     ..WebSettings::default()
//! };
//! let web = extension(settings);
//! let names: Vec<String> = web.tools().iter().map(|t| t.spec().name).collect();
//! assert_eq!(names, ["web_fetch", "http_request", "web_search"]);
//! ```

mod extract;
mod fetch;
pub(crate) mod net;
mod request;
mod search;

use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tackle_protocol::config::{SearchBackendConfig, WebSearchConfig};
use tackle_protocol::{Extension, Tool};

pub use search::SearchHit;

/// Everything the web tools need from configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct WebSettings {
    /// `web_search.backends`, tried in order.
    pub search_backends: Vec<SearchBackendConfig>,
    /// Body cap for `web_fetch` and `http_request` when the call sets none.
    pub default_max_bytes: u64,
    /// The largest `max_bytes` a call may ask for; larger requests are lowered to this.
    pub max_bytes_limit: u64,
    /// Time limit for one `web_fetch` or `http_request` (including redirects).
    pub fetch_timeout: Duration,
    /// Time limit for one search backend; a slow backend fails over to the next.
    pub search_timeout: Duration,
    /// Sent as `User-Agent` unless the call sets its own.
    pub user_agent: String,
}

impl Default for WebSettings {
    fn default() -> Self {
        Self {
            search_backends: Vec::new(),
            default_max_bytes: 2 * 1024 * 1024,
            max_bytes_limit: 10 * 1024 * 1024,
            fetch_timeout: Duration::from_secs(30),
            search_timeout: Duration::from_secs(15),
            user_agent: format!("tackle/{} (+web tools)", env!("CARGO_PKG_VERSION")),
        }
    }
}

impl WebSettings {
    /// Defaults with the search backends from the `web_search:` config section.
    pub fn from_config(web_search: &WebSearchConfig) -> Self {
        Self {
            search_backends: web_search.backends.clone(),
            ..Self::default()
        }
    }
}

/// The `web` extension with its three tools.
pub fn extension(settings: WebSettings) -> Arc<dyn Extension> {
    Arc::new(WebExtension {
        settings: Arc::new(settings),
    })
}

struct WebExtension {
    settings: Arc<WebSettings>,
}

impl Extension for WebExtension {
    fn name(&self) -> &str {
        "web"
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        vec![
            Arc::new(fetch::WebFetch::new(self.settings.clone())),
            Arc::new(request::HttpRequestTool::new(self.settings.clone())),
            Arc::new(search::WebSearch::new(self.settings.clone())),
        ]
    }
}

/// What a request carries out besides its method and URL (which the dispatcher reads from the
/// planned capability): any header, body or JSON the model chose, whatever the method. A GET
/// with a header or a body sends data as surely as a POST does
/// (docs/decisions/0033-taint-gates-sinks.md).
pub(crate) fn request_sink(args: &Value) -> Option<String> {
    let chosen = |key: &str| match args.get(key) {
        None | Some(Value::Null) => false,
        Some(Value::Object(m)) => !m.is_empty(),
        Some(Value::String(s)) => !s.is_empty(),
        Some(_) => true,
    };
    let what: Vec<&str> = ["headers", "body", "json"]
        .into_iter()
        .filter(|k| chosen(k))
        .collect();
    if what.is_empty() {
        return None;
    }
    let url = args.get("url").and_then(Value::as_str).unwrap_or("a URL");
    Some(format!(
        "sends data ({}) to {}",
        what.join(", "),
        tackle_protocol::text::preview(url, 120)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tackle_protocol::{ApprovalMode, Risk};

    #[tokio::test]
    async fn web_schemas_keep_their_names_and_refuse_unknown_or_missing_arguments() {
        let tools = extension(WebSettings::default()).tools();
        let cases: [(&str, &[&str], &[&str], Value); 3] = [
            (
                "web_fetch",
                &["url", "method", "body", "headers", "max_bytes", "format"],
                &["url"],
                json!({"url": "https://x.example/", "method": "POST", "body": "b",
                       "headers": {"Accept": "text/html"}, "max_bytes": 10, "format": "text"}),
            ),
            (
                "http_request",
                &["method", "url", "headers", "body", "json"],
                &["method", "url"],
                json!({"method": "PUT", "url": "https://x.example/", "json": {"a": [1]}}),
            ),
            (
                "web_search",
                &["query", "max_results"],
                &["query"],
                json!({"query": "rust", "max_results": 3}),
            ),
        ];
        for (name, properties, required, valid) in cases {
            let Some(tool) = tools.iter().find(|t| t.spec().name == name) else {
                panic!("no tool {name}")
            };
            let schema = tool.spec().parameters;
            crate::args::contract::assert_names(&schema, properties, required);
            crate::args::contract::assert_refusals(tool.as_ref(), valid, required).await;
        }
        let schema = |name: &str| {
            tools
                .iter()
                .map(|t| t.spec())
                .find(|s| s.name == name)
                .map(|s| s.parameters)
                .unwrap_or_default()
        };
        let accepts = crate::args::contract::accepts;
        let fetch = schema("web_fetch");
        for bad in [
            json!({"url": "u", "method": "PUT"}),
            json!({"url": "u", "format": "pdf"}),
            json!({"url": "u", "max_bytes": 0}),
            json!({"url": "u", "headers": {"A": 1}}),
        ] {
            assert!(!accepts(&fetch, &bad), "{bad}");
        }
        let search = schema("web_search");
        assert!(!accepts(&search, &json!({"query": ""})));
        assert!(!accepts(&search, &json!({"query": "q", "max_results": 11})));
        assert!(accepts(
            &schema("http_request"),
            &json!({"method": "POST", "url": "u", "json": null})
        ));
    }

    #[test]
    fn tools_carry_the_catalogue_risk_and_approval() {
        let web = extension(WebSettings::default());
        let specs: Vec<_> = web.tools().iter().map(|t| t.spec()).collect();
        let by_name = |n: &str| specs.iter().find(|s| s.name == n).cloned();
        let fetch = by_name("web_fetch").unwrap();
        assert_eq!(
            (fetch.risk, fetch.approval),
            (Risk::Medium, ApprovalMode::UnlessAutoApproved)
        );
        let request = by_name("http_request").unwrap();
        assert_eq!(
            (request.risk, request.approval),
            (Risk::Medium, ApprovalMode::UnlessAutoApproved)
        );
        let search = by_name("web_search").unwrap();
        assert_eq!(
            (search.risk, search.approval),
            (Risk::Low, ApprovalMode::Never)
        );
        assert!(specs.iter().all(|s| s.owner == "web"));
        assert!(specs
            .iter()
            .all(|s| tackle_protocol::ToolName::parse(&s.name).is_ok()));
    }
}
