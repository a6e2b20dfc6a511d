//! Building a provider from a `backends:` entry.

use crate::anthropic::{self, AnthropicProvider};
use crate::error::LlmError;
use crate::openai::{self, OpenAiProvider};
use crate::retry::RetryPolicy;
use crate::timeouts::Timeouts;
use crate::Provider;
use std::sync::Arc;
use tackle_protocol::config::{BackendConfig, BackendType};

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
    let base = backend
        .api_base
        .as_deref()
        .map(str::trim)
        .filter(|b| !b.is_empty());
    let timeouts = Timeouts::from_config(&backend.name, backend.timeouts.as_ref())?;
    match backend.kind {
        BackendType::Openai => {
            let base = base.unwrap_or(openai::DEFAULT_API_BASE);
            Ok(Arc::new(
                OpenAiProvider::new(&backend.name, base, key)?
                    .with_retry(retry)
                    .with_timeouts(timeouts),
            ))
        }
        BackendType::Anthropic => {
            let key = key.ok_or_else(|| LlmError::Config {
                backend: backend.name.clone(),
                message: "type anthropic needs an API key; set api_key: \"${ANTHROPIC_API_KEY}\" and export ANTHROPIC_API_KEY".to_string(),
            })?;
            let base = base.unwrap_or(anthropic::DEFAULT_API_BASE);
            Ok(Arc::new(
                AnthropicProvider::new(&backend.name, base, key)?
                    .with_retry(retry)
                    .with_timeouts(timeouts),
            ))
        }
    }
}
