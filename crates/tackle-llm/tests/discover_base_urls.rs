//! Discovery honours the base-URL variables the vendors' own SDKs read, so a key plus
//! `OPENAI_BASE_URL` (a proxy, a compatible local server) is used where it points.

use tackle_llm::{discover_with, EnvSnapshot};

fn env(pairs: &[(&str, &str)]) -> EnvSnapshot {
    EnvSnapshot::from_vars(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())))
}

#[tokio::test]
async fn openai_base_url_replaces_the_hosted_api() {
    let found = discover_with(
        &env(&[
            ("OPENAI_API_KEY", "sk"),
            ("OPENAI_BASE_URL", "http://127.0.0.1:9999/v1/"),
        ]),
        &[],
    )
    .await
    .unwrap();
    assert_eq!(
        found.backend.api_base.as_deref(),
        Some("http://127.0.0.1:9999/v1")
    );
    assert!(found.source.contains("OPENAI_BASE_URL"), "{}", found.source);
}

#[tokio::test]
async fn anthropic_base_url_replaces_the_hosted_api() {
    let found = discover_with(
        &env(&[
            ("ANTHROPIC_API_KEY", "an"),
            ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9998"),
        ]),
        &[],
    )
    .await
    .unwrap();
    assert_eq!(
        found.backend.api_base.as_deref(),
        Some("http://127.0.0.1:9998")
    );
}

#[tokio::test]
async fn a_base_url_alone_is_not_a_backend_and_a_blank_one_is_unset() {
    let found = discover_with(
        &env(&[("OPENAI_API_KEY", "sk"), ("OPENAI_BASE_URL", "  ")]),
        &[],
    )
    .await
    .unwrap();
    assert_eq!(
        found.backend.api_base.as_deref(),
        Some("https://api.openai.com/v1")
    );
    assert!(
        discover_with(&env(&[("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")]), &[])
            .await
            .is_err()
    );
}
