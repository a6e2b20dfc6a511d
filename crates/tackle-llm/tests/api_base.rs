//! One rule for `api_base`, whatever the provider: written with or without `/v1`, every request
//! goes to `<host>/v1/…` (never `/v1/v1/…`), and `api_base` names the URL the requests use.

mod common;

use common::*;
use tackle_llm::{api_base, complete, provider_from_config, ChatRequest};
use tackle_protocol::config::{BackendConfig, BackendType};
use tackle_protocol::message::Message;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer};

fn backend(kind: BackendType, base: String) -> BackendConfig {
    BackendConfig {
        name: "b".into(),
        kind,
        api_base: Some(base),
        api_key: Some("sk-test-key".into()),
        models: vec![],
        stream: None,
        timeouts: None,
    }
}

fn request() -> ChatRequest {
    ChatRequest::new("m", vec![Message::user("hi")])
}

/// Answers only on the right path; any other path is a 404 the test would see as an error.
async fn answer_once(kind: BackendType, base: String) -> Result<(), String> {
    let server = MockServer::start().await;
    let (route, fixture) = match kind {
        BackendType::Openai => ("/v1/chat/completions", "openai_text.sse"),
        BackendType::Anthropic => ("/v1/messages", "anthropic_text.sse"),
    };
    Mock::given(method("POST"))
        .and(path(route))
        .respond_with(sse(fixture))
        .mount(&server)
        .await;
    let provider =
        provider_from_config(&backend(kind, base.replace("{uri}", &server.uri()))).unwrap();
    complete(provider.as_ref(), request())
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[tokio::test]
async fn both_providers_accept_api_base_with_or_without_v1() {
    for kind in [BackendType::Openai, BackendType::Anthropic] {
        for base in ["{uri}", "{uri}/", "{uri}/v1", "{uri}/v1/"] {
            answer_once(kind, base.to_string())
                .await
                .unwrap_or_else(|e| panic!("{kind:?} with api_base {base}: {e}"));
        }
    }
}

#[test]
fn the_normalised_base_is_what_requests_and_probes_append_to() {
    let b = |kind, base: &str| api_base(&backend(kind, base.to_string())).unwrap();
    for kind in [BackendType::Openai, BackendType::Anthropic] {
        assert_eq!(b(kind, "http://127.0.0.1:8080"), "http://127.0.0.1:8080/v1");
        assert_eq!(
            b(kind, "http://127.0.0.1:8080/v1/"),
            "http://127.0.0.1:8080/v1"
        );
        // A server whose version path is not `/v1` is taken as written.
        assert_eq!(
            b(kind, "https://example.com/v1beta/openai"),
            "https://example.com/v1beta/openai"
        );
    }
    let default = |kind| {
        api_base(&BackendConfig {
            api_base: None,
            ..backend(kind, String::new())
        })
        .unwrap()
    };
    assert_eq!(default(BackendType::Openai), "https://api.openai.com/v1");
    assert_eq!(
        default(BackendType::Anthropic),
        "https://api.anthropic.com/v1"
    );
    assert!(api_base(&backend(BackendType::Openai, "ftp://x/v1".into())).is_err());
}
