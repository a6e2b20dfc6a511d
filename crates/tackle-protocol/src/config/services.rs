//! `services:` credentials and bases of the `services` extension's tools.

use crate::secret::Secret;
use serde::{Deserialize, Serialize};

/// `services:` credentials of the `services` extension's tools. A tool whose section is
/// missing stays listed and fails with `services.NAME is not configured`. Each section's
/// `api_base` (r8r: `url`) is a destination the operator wrote (docs/architecture.md, "Grants").
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServicesConfig {
    /// The `whatsapp` tool's Cloud API credentials; unset: the tool fails as not configured.
    #[serde(default)]
    pub whatsapp: Option<WhatsappConfig>,
    /// The `gsheets` tool's key or token; unset: the tool fails as not configured.
    #[serde(default)]
    pub gsheets: Option<GsheetsConfig>,
    /// The `stripe` tool's key; unset: the tool fails as not configured.
    #[serde(default)]
    pub stripe: Option<StripeConfig>,
    /// The `r8r` tool's server; unset: the tool fails as not configured.
    #[serde(default)]
    pub r8r: Option<R8rConfig>,
    /// The `project` tool's GitHub issues.
    #[serde(default)]
    pub github: GithubServiceConfig,
}

impl ServicesConfig {
    /// Every base URL the operator wrote here, for the host's list of trusted destinations.
    /// r8r has no public default: a configured section means its URL (or the default
    /// `http://localhost:8080`) is the operator's.
    pub fn operator_urls(&self) -> Vec<String> {
        let mut out = Vec::new();
        out.extend(self.whatsapp.as_ref().and_then(|c| c.api_base.clone()));
        out.extend(self.gsheets.as_ref().and_then(|c| c.api_base.clone()));
        out.extend(self.gsheets.as_ref().and_then(|c| c.token_uri.clone()));
        out.extend(self.stripe.as_ref().and_then(|c| c.api_base.clone()));
        out.extend(self.r8r.as_ref().map(R8rConfig::base));
        out
    }

    /// Every credential here (its [`Secret`] fields), for the output redactor.
    pub fn secrets(&self) -> Vec<String> {
        crate::secret::values(self)
    }
}

/// `services.whatsapp`: the WhatsApp Cloud API.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WhatsappConfig {
    /// Sent as `Authorization: Bearer …`.
    pub access_token: Secret,
    /// The sending number's id in the Cloud API (digits).
    pub phone_number_id: String,
    /// Unset = `https://graph.facebook.com`.
    #[serde(default)]
    pub api_base: Option<String>,
}

/// `services.gsheets`: Google Sheets v4, authorised by a service-account key or a token.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GsheetsConfig {
    /// A service-account JSON key; its token is minted (RS256 JWT) and cached.
    #[serde(default)]
    pub service_account_file: Option<String>,
    /// A pre-minted OAuth access token, used instead of a key.
    #[serde(default)]
    pub access_token: Option<Secret>,
    /// Unset = `https://sheets.googleapis.com`.
    #[serde(default)]
    pub api_base: Option<String>,
    /// Where tokens are minted; unset = the key's own `token_uri`.
    #[serde(default)]
    pub token_uri: Option<String>,
}

/// `services.stripe`: the Stripe API.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StripeConfig {
    /// Sent as the Basic-auth user name (empty password).
    pub secret_key: Secret,
    /// Unset = `https://api.stripe.com`.
    #[serde(default)]
    pub api_base: Option<String>,
    /// The endpoint's signing secret (`whsec_…`), for `verify_webhook`.
    #[serde(default)]
    pub webhook_secret: Option<Secret>,
    /// For `create_payment` without `currency`; unset = `usd`.
    #[serde(default)]
    pub currency: Option<String>,
}

/// `services.r8r`: an r8r workflow server.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct R8rConfig {
    /// The server's base URL; unset = `http://localhost:8080`.
    #[serde(default, alias = "api_base")]
    pub url: Option<String>,
    /// Sent as `Authorization: Bearer …` when the server wants one.
    #[serde(default)]
    pub token: Option<Secret>,
}

impl R8rConfig {
    /// The base used when `url` is unset.
    pub const DEFAULT_URL: &'static str = "http://localhost:8080";

    /// The configured base URL, or the default.
    pub fn base(&self) -> String {
        self.url
            .clone()
            .filter(|u| !u.trim().is_empty())
            .unwrap_or_else(|| Self::DEFAULT_URL.to_string())
    }
}

/// `services.github`: the token (else `$GITHUB_TOKEN`) and the API base (default
/// `https://api.github.com`; a GitHub Enterprise base or a local server). The base is written by
/// the operator, so it is a trusted destination even when private.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GithubServiceConfig {
    /// Sent as `Authorization: Bearer …`; unset: `$GITHUB_TOKEN`, else anonymous (public issues
    /// only).
    #[serde(default)]
    pub token: Option<Secret>,
    /// Unset: `https://api.github.com`; trusted as operator-written even when private.
    #[serde(default)]
    pub api_base: Option<String>,
}

impl std::fmt::Debug for GithubServiceConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GithubServiceConfig")
            .field("token", &self.token.as_ref().map(|_| "[redacted]"))
            .field("api_base", &self.api_base)
            .finish()
    }
}
