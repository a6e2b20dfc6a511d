mod common;

use common::*;
use serde_json::json;
use tackle_llm::{
    discover, discover_with, provider_from_config, EnvSnapshot, LlmError, LocalProbe,
};
use tackle_protocol::config::{BackendConfig, BackendType};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn backend(kind: BackendType, api_base: Option<&str>, api_key: Option<&str>) -> BackendConfig {
    BackendConfig {
        name: "b".into(),
        kind,
        api_base: api_base.map(str::to_string),
        api_key: api_key.map(Into::into),
        models: vec![],
        stream: None,
        timeouts: None,
    }
}

fn env(pairs: &[(&str, &str)]) -> EnvSnapshot {
    EnvSnapshot::from_vars(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())))
}

#[test]
fn an_anthropic_backend_without_a_key_is_a_config_error_saying_what_to_set() {
    let err = provider_from_config(&backend(BackendType::Anthropic, None, Some("")))
        .err()
        .unwrap();
    assert!(matches!(err, LlmError::Config { .. }));
    assert!(err.to_string().contains("ANTHROPIC_API_KEY"), "{err}");
}

#[test]
fn a_malformed_api_base_is_a_config_error_naming_it() {
    for base in ["not a url", "ftp://example.com/v1"] {
        let err = provider_from_config(&backend(BackendType::Openai, Some(base), None))
            .err()
            .unwrap();
        assert!(err.to_string().contains(base), "{err}");
    }
}

#[test]
fn a_keyless_openai_compatible_backend_is_accepted_for_local_servers() {
    let p = provider_from_config(&backend(
        BackendType::Openai,
        Some("http://127.0.0.1:11434/v1"),
        None,
    ))
    .unwrap();
    assert_eq!(p.name(), "b");
}

#[tokio::test]
async fn environment_keys_are_taken_in_order_openai_anthropic_openrouter() {
    let found = discover_with(
        &env(&[("OPENROUTER_API_KEY", "or"), ("ANTHROPIC_API_KEY", "an")]),
        &[],
    )
    .await
    .unwrap();
    assert_eq!(found.backend.kind, BackendType::Anthropic);
    assert_eq!(found.source, "ANTHROPIC_API_KEY");
    assert_eq!(found.backend.api_key.as_deref(), Some("an"));
    let found = discover_with(
        &env(&[("OPENAI_API_KEY", "sk"), ("ANTHROPIC_API_KEY", "an")]),
        &[],
    )
    .await
    .unwrap();
    assert_eq!(found.source, "OPENAI_API_KEY");
    assert!(provider_from_config(&found.backend).is_ok());
}

#[tokio::test]
async fn empty_keys_count_as_unset() {
    let found = discover_with(
        &env(&[("OPENAI_API_KEY", " "), ("OPENROUTER_API_KEY", "or")]),
        &[],
    )
    .await
    .unwrap();
    assert_eq!(found.backend.name, "openrouter");
    assert_eq!(
        found.backend.api_base.as_deref(),
        Some("https://openrouter.ai/api/v1")
    );
}

#[test]
fn the_snapshot_keeps_only_the_variables_discovery_reads() {
    let snap = env(&[("AWS_SECRET_ACCESS_KEY", "x"), ("OPENAI_API_KEY", "sk")]);
    assert!(!format!("{snap:?}").contains("AWS_SECRET"));
}

#[tokio::test]
async fn a_local_ollama_is_found_with_its_first_model() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/tags"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"models": [{"name": "qwen2.5:7b"}, {"name": "llama3:8b"}]})),
        )
        .mount(&server)
        .await;
    let probe = LocalProbe {
        label: "Ollama".into(),
        root: server.uri(),
        ollama_tags: true,
    };
    let found = discover_with(&EnvSnapshot::default(), &[probe])
        .await
        .unwrap();
    assert_eq!(found.model, "qwen2.5:7b");
    assert_eq!(found.backend.api_base, Some(format!("{}/v1", server.uri())));
    assert_eq!(found.backend.models.len(), 2);
    assert!(found.source.contains("Ollama"));
}

#[tokio::test]
async fn a_local_llama_cpp_is_found_through_v1_models_after_a_dead_probe() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v1/models"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"object": "list", "data": [{"id": "model.gguf"}]})),
        )
        .mount(&server)
        .await;
    let probes = [
        LocalProbe {
            label: "Ollama".into(),
            root: closed_port_url(),
            ollama_tags: true,
        },
        LocalProbe {
            label: "llama.cpp".into(),
            root: server.uri(),
            ollama_tags: false,
        },
    ];
    let found = discover_with(&EnvSnapshot::default(), &probes)
        .await
        .unwrap();
    assert_eq!(found.model, "model.gguf");
}

#[tokio::test]
async fn a_local_server_with_no_models_does_not_count() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"models": []})))
        .mount(&server)
        .await;
    let probe = LocalProbe {
        label: "Ollama".into(),
        root: server.uri(),
        ollama_tags: true,
    };
    assert!(discover_with(&EnvSnapshot::default(), &[probe])
        .await
        .is_err());
}

#[tokio::test]
async fn finding_nothing_says_exactly_what_to_set() {
    let probe = LocalProbe {
        label: "Ollama".into(),
        root: closed_port_url(),
        ollama_tags: true,
    };
    let err = discover_with(&EnvSnapshot::default(), &[probe])
        .await
        .unwrap_err();
    let msg = err.to_string();
    for want in [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "OPENROUTER_API_KEY",
        "Ollama",
        "backends:",
    ] {
        assert!(msg.contains(want), "{want} missing from: {msg}");
    }
}

#[tokio::test]
async fn default_discovery_prefers_environment_keys_without_probing() {
    let found = discover(&env(&[("OPENAI_API_KEY", "sk")])).await.unwrap();
    assert_eq!(found.backend.kind, BackendType::Openai);
}
