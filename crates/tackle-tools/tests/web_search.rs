//! `web_search` end to end: each backend against a local server replaying its documented
//! response shape, through the real host, with failover on errors only.

mod web_support;

use serde_json::{json, Value};
use std::time::Duration;
use tackle_protocol::config::SearchBackendType as Kind;
use tackle_protocol::{Grants, ToolOutput};
use web_support::{backend, context, provider, settings, tool};
use wiremock::matchers::{body_json, header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

const KAGI: &str = include_str!("web_fixtures/kagi.json");
const TAVILY: &str = include_str!("web_fixtures/tavily.json");
const BRAVE: &str = include_str!("web_fixtures/brave.json");
const SERPER: &str = include_str!("web_fixtures/serper.json");
const SEARXNG: &str = include_str!("web_fixtures/searxng.json");
const DDG: &str = include_str!("web_fixtures/duckduckgo.html");

fn json_reply(body: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(body, "application/json")
}

/// Search with `backends` under the default grant (no private addresses): the servers are
/// reachable only because they are operator-configured.
async fn search(
    backends: Vec<tackle_protocol::config::SearchBackendConfig>,
    args: Value,
) -> Result<ToolOutput, tackle_protocol::ToolError> {
    let operator = backends.iter().filter_map(|b| b.url.clone()).collect();
    let host = provider(operator);
    let web_search = tool(settings(backends), "web_search");
    web_search
        .call(args, &context(&host, "web_search", Grants::default()))
        .await
}

fn urls(out: &ToolOutput) -> Vec<String> {
    out.structured.as_ref().unwrap()["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["url"].as_str().unwrap().to_string())
        .collect()
}

fn outcomes(out: &ToolOutput) -> Vec<String> {
    out.structured.as_ref().unwrap()["trail"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            format!(
                "{}:{}",
                t["backend"].as_str().unwrap(),
                t["outcome"].as_str().unwrap()
            )
        })
        .collect()
}

#[tokio::test]
async fn kagi_sends_its_bot_token_and_parses_search_records_only() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/search"))
        .and(query_param("q", "crdt sync"))
        .and(query_param("limit", "5"))
        .and(header("Authorization", "Bot kagi-key"))
        .respond_with(json_reply(KAGI))
        .expect(1)
        .mount(&server)
        .await;
    let out = search(
        vec![backend(Kind::Kagi, Some("kagi-key"), &server.uri())],
        json!({"query": "crdt sync"}),
    )
    .await
    .unwrap();
    assert_eq!(
        urls(&out),
        [
            "https://crdt.tech/",
            "https://en.wikipedia.org/wiki/Conflict-free_replicated_data_type"
        ]
    );
    server.verify().await;
}

#[tokio::test]
async fn tavily_posts_json_with_a_bearer_key() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/search"))
        .and(header("Authorization", "Bearer tvly-key"))
        .and(body_json(
            json!({"query": "crdt", "max_results": 2, "search_depth": "basic"}),
        ))
        .respond_with(json_reply(TAVILY))
        .expect(1)
        .mount(&server)
        .await;
    let out = search(
        vec![backend(Kind::Tavily, Some("tvly-key"), &server.uri())],
        json!({"query": "crdt", "max_results": 2}),
    )
    .await
    .unwrap();
    assert_eq!(urls(&out), ["https://crdt.tech/", "https://automerge.org/"]);
    server.verify().await;
}

#[tokio::test]
async fn brave_sends_its_subscription_token_and_strips_markup() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/web/search"))
        .and(query_param("q", "crdt"))
        .and(query_param("count", "5"))
        .and(header("X-Subscription-Token", "brave-key"))
        .respond_with(json_reply(BRAVE))
        .expect(1)
        .mount(&server)
        .await;
    let out = search(
        vec![backend(Kind::Brave, Some("brave-key"), &server.uri())],
        json!({"query": "crdt"}),
    )
    .await
    .unwrap();
    assert!(
        out.content
            .contains("1. About CRDTs\n   https://crdt.tech/"),
        "{}",
        out.content
    );
    assert!(!out.content.contains("<strong>"), "{}", out.content);
    server.verify().await;
}

#[tokio::test]
async fn serper_posts_q_and_num_with_its_api_key_header() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/search"))
        .and(header("X-API-KEY", "serper-key"))
        .and(body_json(json!({"q": "crdt", "num": 5})))
        .respond_with(json_reply(SERPER))
        .expect(1)
        .mount(&server)
        .await;
    let out = search(
        vec![backend(Kind::Serper, Some("serper-key"), &server.uri())],
        json!({"query": "crdt"}),
    )
    .await
    .unwrap();
    assert_eq!(urls(&out), ["https://crdt.tech/", "https://automerge.org/"]);
    server.verify().await;
}

#[tokio::test]
async fn searxng_uses_its_json_api() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/search"))
        .and(query_param("format", "json"))
        .and(query_param("q", "crdt"))
        .respond_with(json_reply(SEARXNG))
        .expect(1)
        .mount(&server)
        .await;
    let out = search(
        vec![backend(Kind::Searxng, None, &server.uri())],
        json!({"query": "crdt"}),
    )
    .await
    .unwrap();
    assert_eq!(urls(&out), ["https://crdt.tech/", "https://automerge.org/"]);
    assert_eq!(outcomes(&out), ["searxng:answered"]);
    server.verify().await;
}

#[tokio::test]
async fn duckduckgo_html_is_parsed_without_ads() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/html/"))
        .and(query_param("q", "crdt"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(DDG, "text/html; charset=utf-8"))
        .expect(1)
        .mount(&server)
        .await;
    let out = search(
        vec![backend(Kind::Duckduckgo, None, &server.uri())],
        json!({"query": "crdt"}),
    )
    .await
    .unwrap();
    assert_eq!(urls(&out), ["https://crdt.tech/", "https://automerge.org/"]);
    assert!(!out.content.contains("Buy CRDTs"), "{}", out.content);
    server.verify().await;
}

#[tokio::test]
async fn errors_and_bad_json_fail_over_in_order() {
    let broken = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(500).set_body_string("boom"))
        .mount(&broken)
        .await;
    let garbled = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(json_reply("{\"results\": ["))
        .mount(&garbled)
        .await;
    let good = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(json_reply(SEARXNG))
        .mount(&good)
        .await;
    let out = search(
        vec![
            backend(Kind::Searxng, None, &broken.uri()),
            backend(Kind::Searxng, None, &garbled.uri()),
            backend(Kind::Searxng, None, &good.uri()),
        ],
        json!({"query": "crdt"}),
    )
    .await
    .unwrap();
    assert_eq!(
        outcomes(&out),
        ["searxng:failed", "searxng:failed", "searxng:answered"]
    );
    assert!(out.content.contains("HTTP 500: boom"), "{}", out.content);
    assert!(
        out.content.contains("unparsable response"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn an_empty_answer_does_not_fail_over() {
    let empty = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(json_reply(
            r#"{"type":"search","query":{"original":"zzqx"}}"#,
        ))
        .mount(&empty)
        .await;
    let never = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(json_reply(SEARXNG))
        .expect(0)
        .mount(&never)
        .await;
    let out = search(
        vec![
            backend(Kind::Brave, Some("k"), &empty.uri()),
            backend(Kind::Searxng, None, &never.uri()),
        ],
        json!({"query": "zzqx"}),
    )
    .await
    .unwrap();
    assert!(
        out.content.starts_with("No results for \"zzqx\""),
        "{}",
        out.content
    );
    assert_eq!(outcomes(&out), ["brave:answered"]);
    never.verify().await;
}

#[tokio::test]
async fn a_slow_backend_times_out_and_the_next_answers() {
    let slow = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(json_reply(SEARXNG).set_delay(Duration::from_secs(5)))
        .mount(&slow)
        .await;
    let good = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(json_reply(SEARXNG))
        .mount(&good)
        .await;
    let started = std::time::Instant::now();
    let out = search(
        vec![
            backend(Kind::Searxng, None, &slow.uri()),
            backend(Kind::Searxng, None, &good.uri()),
        ],
        json!({"query": "crdt"}),
    )
    .await
    .unwrap();
    assert_eq!(outcomes(&out), ["searxng:failed", "searxng:answered"]);
    assert!(out.content.contains("timed out"), "{}", out.content);
    assert!(started.elapsed() < Duration::from_secs(4));
}

#[tokio::test]
async fn a_backend_url_the_operator_did_not_configure_gets_no_private_access() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(json_reply(SEARXNG))
        .expect(0)
        .mount(&server)
        .await;
    // The provider trusts nothing; the default grant blocks loopback.
    let host = provider(vec![]);
    let web_search = tool(
        settings(vec![backend(Kind::Searxng, None, &server.uri())]),
        "web_search",
    );
    let err = web_search
        .call(
            json!({"query": "crdt"}),
            &context(&host, "web_search", Grants::default()),
        )
        .await
        .unwrap_err();
    assert!(
        err.message.contains("every web_search backend failed"),
        "{}",
        err.message
    );
    server.verify().await;
}
