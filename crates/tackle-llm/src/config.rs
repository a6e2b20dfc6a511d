//! Building a provider from a `backends:` entry.

use crate::anthropic::AnthropicProvider;
use crate::error::LlmError;
use crate::kinds::ProviderKind;
use crate::openai::OpenAiProvider;
use crate::retry::RetryPolicy;
use crate::timeouts::Timeouts;
use crate::Provider;
use std::sync::Arc;
use tackle_protocol::config::{BackendConfig, BackendType};

/// The URL every request of `backend` is built on (`…/chat/completions`, `…/messages`,
/// `…/models`): its `api_base` (else the provider's default) normalised by [`normalize_api_base`].
pub fn api_base(backend: &BackendConfig) -> Result<String, LlmError> {
    let written = backend
        .api_base
        .as_deref()
        .map(str::trim)
        .filter(|b| !b.is_empty());
    let base = written.unwrap_or(ProviderKind::of(backend.kind).default_api_base);
    normalize_api_base(&backend.name, base)
}

/// The one rule for `api_base`, the same for every provider: an http(s) URL with a host; a
/// bare host (`http://127.0.0.1:11434`) means its `/v1`, a path (`…/v1`, `…/api/v1`,
/// `…/v1beta/openai`) is taken as written; no trailing `/`. So `https://api.anthropic.com`
/// and `https://api.anthropic.com/v1` both reach `…/v1/messages`.
pub fn normalize_api_base(backend: &str, base: &str) -> Result<String, LlmError> {
    let base = base.trim();
    let parsed = reqwest::Url::parse(base).map_err(|e| LlmError::Config {
        backend: backend.to_string(),
        message: format!("api_base `{base}` is not a URL: {e}"),
    })?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host().is_none() {
        return Err(LlmError::Config {
            backend: backend.to_string(),
            message: format!("api_base `{base}` must be an http:// or https:// URL with a host"),
        });
    }
    let trimmed = base.trim_end_matches('/');
    Ok(if parsed.path().trim_matches('/').is_empty() {
        format!("{trimmed}/v1")
    } else {
        trimmed.to_string()
    })
}

/// The provider for one configured backend, with the default retry policy and the
/// backend's `timeouts` (defaults for unset keys).
pub fn provider_from_config(backend: &BackendConfig) -> Result<Arc<dyn Provider>, LlmError> {
    provider_from_config_with(backend, RetryPolicy::default())
}

/// As [`provider_from_config`], with an explicit retry policy.
pub fn provider_from_config_with(
    backend: &BackendConfig,
    retry: RetryPolicy,
) -> Result<Arc<dyn Provider>, LlmError> {
    // `${VAR}` of an unset variable interpolates to "", which means "no key" here.
    let key = backend
        .api_key
        .as_deref()
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .map(str::to_string);
    let base = api_base(backend)?;
    let timeouts = Timeouts::from_config(&backend.name, backend.timeouts.as_ref())?;
    match backend.kind {
        BackendType::Openai => Ok(Arc::new(
            OpenAiProvider::new(&backend.name, &base, key)?
                .with_retry(retry)
                .with_timeouts(timeouts),
        )),
        BackendType::Anthropic => {
            let key = key.ok_or_else(|| LlmError::Config {
                backend: backend.name.clone(),
                message: missing_key(ProviderKind::of(backend.kind)),
            })?;
            Ok(Arc::new(
                AnthropicProvider::new(&backend.name, &base, key)?
                    .with_retry(retry)
                    .with_timeouts(timeouts),
            ))
        }
    }
}

/// What to do about a kind that needs a key and was given none.
pub fn missing_key(kind: &ProviderKind) -> String {
    format!(
        "type {} needs an API key; set api_key: \"${{{var}}}\" and export {var}",
        kind.name,
        var = kind.key_var
    )
}
