//! What Tackle knows about each kind of provider, in one place: where its API lives by
//! default, which variable holds its key, how the key is sent, which paths the requests and
//! the model listing use, and which hosted services discovery looks for. Requests
//! (`openai`, `anthropic`), `backends:` validation (`config`), discovery (`discover`) and
//! `tackle doctor`'s probe all read these rows, so adding a hosted service of a known kind is
//! one row of [`HOSTED`], and a fact about a kind is changed in one place.

use tackle_protocol::config::BackendType;

/// How a request carries the API key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyHeader {
    /// `Authorization: Bearer KEY`.
    Bearer,
    /// The key alone in the named header (`x-api-key: KEY`).
    Named(&'static str),
}

/// One kind of provider API (the `type` of a `backends:` entry).
#[derive(Debug, PartialEq, Eq)]
pub struct ProviderKind {
    /// The config enum value this row describes.
    pub kind: BackendType,
    /// The `type` as written in the config.
    pub name: &'static str,
    /// The vendor's own API, used when a backend sets no `api_base`.
    pub default_api_base: &'static str,
    /// The variable the vendor's key is usually kept in: named in messages about a missing
    /// or refused key, and read by discovery.
    pub key_var: &'static str,
    /// The variable the vendor's own SDKs read to point at another server (a proxy, a
    /// compatible local server); discovery uses it in place of the default base.
    pub base_var: Option<&'static str>,
    /// Whether every server of this kind needs a key (an OpenAI-compatible local server
    /// usually needs none).
    pub key_required: bool,
    /// How requests carry the key.
    pub key_header: KeyHeader,
    /// A header every request carries (the API version the wire format is written for).
    pub version_header: Option<(&'static str, &'static str)>,
    /// Appended to the base for a chat turn.
    pub chat_path: &'static str,
    /// Appended to the base for the model listing (`tackle doctor`'s probe spends no tokens).
    pub models_path: &'static str,
    /// The model discovery picks when it finds the vendor's key.
    pub default_model: &'static str,
}

impl ProviderKind {
    /// The row of `kind`.
    pub fn of(kind: BackendType) -> &'static ProviderKind {
        match kind {
            BackendType::Openai => &OPENAI,
            BackendType::Anthropic => &ANTHROPIC,
        }
    }

    /// The headers a request sends besides its body's: the version header, and the key in
    /// the kind's header when there is one.
    pub fn headers(&self, key: Option<&str>) -> Vec<(&'static str, String)> {
        let mut headers = Vec::with_capacity(2);
        if let Some((name, value)) = self.version_header {
            headers.push((name, value.to_string()));
        }
        if let Some(key) = key {
            headers.push(match self.key_header {
                KeyHeader::Bearer => ("Authorization", format!("Bearer {key}")),
                KeyHeader::Named(name) => (name, key.to_string()),
            });
        }
        headers
    }
}

/// OpenAI's Chat Completions, and every server that speaks it (OpenRouter, Groq, Ollama, vLLM,
/// llama.cpp, LM Studio).
pub const OPENAI: ProviderKind = ProviderKind {
    kind: BackendType::Openai,
    name: "openai",
    default_api_base: "https://api.openai.com/v1",
    key_var: "OPENAI_API_KEY",
    base_var: Some("OPENAI_BASE_URL"),
    key_required: false,
    key_header: KeyHeader::Bearer,
    version_header: None,
    chat_path: "/chat/completions",
    models_path: "/models",
    default_model: "gpt-4o-mini",
};

/// Anthropic's Messages API.
pub const ANTHROPIC: ProviderKind = ProviderKind {
    kind: BackendType::Anthropic,
    name: "anthropic",
    default_api_base: "https://api.anthropic.com/v1",
    key_var: "ANTHROPIC_API_KEY",
    base_var: Some("ANTHROPIC_BASE_URL"),
    key_required: true,
    key_header: KeyHeader::Named("x-api-key"),
    version_header: Some(("anthropic-version", "2023-06-01")),
    chat_path: "/messages",
    models_path: "/models",
    default_model: "claude-sonnet-4-5",
};

/// A hosted service discovery finds by its key in the environment.
#[derive(Debug, PartialEq, Eq)]
pub struct HostedService {
    /// The backend's name once found.
    pub name: &'static str,
    /// The wire format the service speaks.
    pub kind: &'static ProviderKind,
    /// The environment variable whose presence (non-empty) makes discovery pick the service.
    pub key_var: &'static str,
    /// The service's API base, used unless `base_var` is set.
    pub api_base: &'static str,
    /// The variable that overrides `api_base`, if the vendor's SDKs read one.
    pub base_var: Option<&'static str>,
    /// The model discovery picks for the service.
    pub model: &'static str,
}

impl HostedService {
    /// The vendor of a kind, at its own API.
    const fn vendor(kind: &'static ProviderKind) -> Self {
        Self {
            name: kind.name,
            kind,
            key_var: kind.key_var,
            api_base: kind.default_api_base,
            base_var: kind.base_var,
            model: kind.default_model,
        }
    }
}

/// The hosted services discovery looks for, in the order it looks.
pub const HOSTED: [HostedService; 3] = [
    HostedService::vendor(&OPENAI),
    HostedService::vendor(&ANTHROPIC),
    HostedService {
        name: "openrouter",
        kind: &OPENAI,
        key_var: "OPENROUTER_API_KEY",
        api_base: "https://openrouter.ai/api/v1",
        base_var: None,
        model: "anthropic/claude-sonnet-4",
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_sends_its_key_its_own_way() {
        assert_eq!(
            OPENAI.headers(Some("sk")),
            [("Authorization", "Bearer sk".to_string())]
        );
        assert_eq!(
            ANTHROPIC.headers(Some("an")),
            [
                ("anthropic-version", "2023-06-01".to_string()),
                ("x-api-key", "an".to_string())
            ]
        );
        assert!(OPENAI.headers(None).is_empty());
        assert_eq!(ANTHROPIC.headers(None).len(), 1);
    }

    #[test]
    fn every_row_is_found_by_its_kind_and_names_a_distinct_variable() {
        for kind in [BackendType::Openai, BackendType::Anthropic] {
            assert_eq!(ProviderKind::of(kind).kind, kind);
        }
        let mut vars: Vec<_> = HOSTED.iter().map(|h| h.key_var).collect();
        vars.sort_unstable();
        vars.dedup();
        assert_eq!(vars.len(), HOSTED.len());
    }
}
