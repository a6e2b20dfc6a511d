//! Finding a backend when none is configured: API keys the caller read from the environment,
//! then a local server on 127.0.0.1.

use crate::error::LlmError;
use crate::http::error_chain;
use crate::kinds::HOSTED;
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;
use tackle_protocol::config::{BackendConfig, BackendType, ModelConfig};

/// The environment variables discovery looks at, as the caller read them. This crate never
/// reads the environment itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvSnapshot {
    vars: BTreeMap<String, String>,
}

impl EnvSnapshot {
    /// Keeps only the variables discovery uses, so a snapshot of the whole environment does
    /// not carry unrelated secrets around.
    pub fn from_vars(vars: impl IntoIterator<Item = (String, String)>) -> Self {
        Self {
            vars: vars
                .into_iter()
                .filter(|(k, _)| {
                    HOSTED
                        .iter()
                        .any(|s| s.key_var == k || s.base_var == Some(k.as_str()))
                })
                .collect(),
        }
    }

    /// The API keys among the variables: secrets to redact like the config's own, since
    /// discovery may send one to a server whose error quotes it back.
    pub fn keys(&self) -> Vec<String> {
        HOSTED
            .iter()
            .filter_map(|s| self.get(s.key_var))
            .map(str::to_string)
            .collect()
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)
            .map(|v| v.trim())
            .filter(|v| !v.is_empty())
    }
}

/// A backend discovery found, ready to hand to [`crate::provider_from_config`].
#[derive(Debug, Clone, PartialEq)]
pub struct DiscoveredBackend {
    /// The backend as if configured under `backends:` (name, type, base, key).
    pub backend: BackendConfig,
    /// The model to use: a sensible default for hosted APIs, the first listed for local servers.
    pub model: String,
    /// What was found, for `tackle doctor` (`OPENAI_API_KEY`, `Ollama at http://127.0.0.1:11434`).
    pub source: String,
}

/// A local server to probe: its root URL and which listing it answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalProbe {
    /// Shown in messages (`Ollama`, `llama.cpp`).
    pub label: String,
    /// Scheme, host and port, no trailing slash (`http://127.0.0.1:11434`).
    pub root: String,
    /// Ollama's `/api/tags` (else the OpenAI-style `/v1/models`).
    pub ollama_tags: bool,
}

impl LocalProbe {
    /// Ollama on 11434 (its own listing, then the OpenAI one) and llama.cpp on 8080.
    pub fn defaults() -> Vec<LocalProbe> {
        let probe = |label: &str, root: &str, ollama_tags| LocalProbe {
            label: label.to_string(),
            root: root.to_string(),
            ollama_tags,
        };
        vec![
            probe("Ollama", "http://127.0.0.1:11434", true),
            probe("Ollama", "http://127.0.0.1:11434", false),
            probe("llama.cpp", "http://127.0.0.1:8080", false),
        ]
    }
}

/// Finds a backend: `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `OPENROUTER_API_KEY` in that
/// order (at `OPENAI_BASE_URL` / `ANTHROPIC_BASE_URL` when set), then Ollama (127.0.0.1:11434) and llama.cpp (127.0.0.1:8080).
pub async fn discover(env: &EnvSnapshot) -> Result<DiscoveredBackend, LlmError> {
    discover_with(env, &LocalProbe::defaults()).await
}

/// As [`discover`], probing the given local servers instead of the default ports.
pub async fn discover_with(
    env: &EnvSnapshot,
    probes: &[LocalProbe],
) -> Result<DiscoveredBackend, LlmError> {
    if let Some(found) = from_env(env) {
        return Ok(found);
    }
    crate::http::install_tls_provider();
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_millis(500))
        .timeout(Duration::from_secs(2))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| {
            LlmError::NoBackend(format!("cannot build an HTTP client: {}", error_chain(&e)))
        })?;
    let mut tried = Vec::new();
    for probe in probes {
        match probe_local(&client, probe).await {
            Some(found) => return Ok(found),
            None => tried.push(format!("{} at {}", probe.label, probe.root)),
        }
    }
    tried.dedup();
    Err(LlmError::NoBackend(format!(
        "set one of {}, start a local server ({}) with a model pulled, or add a `backends:` entry to the config",
        key_vars_in_words(),
        tried.join(", ")
    )))
}

/// `A, B or C`: the variables discovery reads keys from, in its order.
fn key_vars_in_words() -> String {
    let vars: Vec<&str> = HOSTED.iter().map(|s| s.key_var).collect();
    match vars.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => vars.concat(),
    }
}

fn from_env(env: &EnvSnapshot) -> Option<DiscoveredBackend> {
    HOSTED.iter().find_map(|s| {
        let key = env.get(s.key_var)?;
        let base = s.base_var.and_then(|v| env.get(v));
        let source = match (base, s.base_var) {
            (Some(_), Some(var)) => format!("{} and {var}", s.key_var),
            _ => s.key_var.to_string(),
        };
        Some(DiscoveredBackend {
            backend: BackendConfig {
                name: s.name.to_string(),
                kind: s.kind.kind,
                api_base: Some(base.unwrap_or(s.api_base).trim_end_matches('/').to_string()),
                api_key: Some(key.into()),
                models: vec![model_config(s.model)],
                stream: None,
                timeouts: None,
            },
            model: s.model.to_string(),
            source,
        })
    })
}

async fn probe_local(client: &reqwest::Client, probe: &LocalProbe) -> Option<DiscoveredBackend> {
    let path = if probe.ollama_tags {
        "/api/tags"
    } else {
        "/v1/models"
    };
    let resp = client
        .get(format!("{}{path}", probe.root))
        .send()
        .await
        .ok()?;
    if !resp.status().is_success() {
        return None;
    }
    let body: Value = json_capped(resp).await?;
    let models = if probe.ollama_tags {
        names(&body, "models", "name")
    } else {
        names(&body, "data", "id")
    };
    let model = models.first()?.clone();
    Some(DiscoveredBackend {
        backend: BackendConfig {
            name: "local".to_string(),
            kind: BackendType::Openai,
            api_base: Some(format!("{}/v1", probe.root)),
            api_key: None,
            models: models.iter().map(|m| model_config(m)).collect(),
            stream: None,
            timeouts: None,
        },
        model,
        source: format!("{} at {}", probe.label, probe.root),
    })
}

fn names(body: &Value, list: &str, field: &str) -> Vec<String> {
    body.get(list)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|m| m.get(field).and_then(Value::as_str))
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect()
}

fn model_config(name: &str) -> ModelConfig {
    ModelConfig {
        name: name.to_string(),
        context_window: None,
    }
}

/// A model listing is small; a local server that sends megabytes is not the one we want.
async fn json_capped(mut resp: reqwest::Response) -> Option<Value> {
    const CAP: usize = 1024 * 1024;
    let mut buf = Vec::new();
    while let Some(chunk) = resp.chunk().await.ok()? {
        buf.extend_from_slice(&chunk);
        if buf.len() > CAP {
            return None;
        }
    }
    serde_json::from_slice(&buf).ok()
}
