//! The `services` extension: `whatsapp` (WhatsApp Cloud API), `gsheets` (Google Sheets v4),
//! `stripe` (payments, customers, refunds, webhook signatures) and `r8r` (workflows).
//!
//! Credentials come from the `services:` config section, handed down as [`ServicesSettings`].
//! A tool whose section is missing stays listed and fails with `services.NAME is not
//! configured`, so the catalogue does not change with the config. Every request goes through
//! `cx.host().http(..)`. A base URL from config (`api_base`, r8r's `url`) is the operator's and
//! is marked `operator_configured`; the built-in public bases are checked against the network
//! grant like any URL. Credentials are scrubbed from every result and error a tool returns
//! (the dispatcher's redactor knows them too).
//!
//! Not here: reading the key file or the config (the binary), the HTTP client (`tackle-host`).
//!
//! ```
//! use tackle_tools::services::{extension, ServicesSettings};
//!
//! let services = extension(ServicesSettings::default());
//! let names: Vec<String> = services.tools().iter().map(|t| t.spec().name).collect();
//! assert_eq!(names, ["whatsapp", "gsheets", "stripe", "r8r"]);
//! ```

pub(crate) mod client;
#[cfg(test)]
mod contract_tests;
mod gsheets;
mod gsheets_auth;
mod r8r;
use crate::secrets;
mod stripe;
mod stripe_webhook;
pub(crate) mod whatsapp;

use std::sync::Arc;
use std::time::Duration;
use tackle_protocol::config::{R8rConfig, ServicesConfig, StripeConfig, WhatsappConfig};
use tackle_protocol::{Extension, Tool, ToolError};

pub use gsheets_auth::{AuthError, ServiceAccountKey};

/// The extension's name, for `agents[].extensions`.
pub const NAME: &str = "services";

/// Everything the services tools need from configuration.
#[derive(Debug, Clone)]
pub struct ServicesSettings {
    /// `services.whatsapp`; `None`: `whatsapp` calls fail as not configured.
    pub whatsapp: Option<WhatsappConfig>,
    /// `services.gsheets`; `None`: `gsheets` calls fail as not configured.
    pub gsheets: Option<GsheetsSettings>,
    /// `services.stripe`; `None`: `stripe` calls fail as not configured.
    pub stripe: Option<StripeConfig>,
    /// `services.r8r`; `None`: `r8r` calls fail as not configured.
    pub r8r: Option<R8rConfig>,
    /// Time limit for one request (r8r runs get [`Self::r8r_timeout`]).
    pub timeout: Duration,
    /// Time limit for one r8r request: `wait: true` holds it until the workflow ends.
    pub r8r_timeout: Duration,
    /// The longest `Retry-After` a 429 may ask for and still be retried once (Stripe).
    pub max_retry_after: Duration,
}

impl Default for ServicesSettings {
    fn default() -> Self {
        Self {
            whatsapp: None,
            gsheets: None,
            stripe: None,
            r8r: None,
            timeout: Duration::from_secs(30),
            r8r_timeout: Duration::from_secs(300),
            max_retry_after: Duration::from_secs(30),
        }
    }
}

/// `services.gsheets`, with the service-account key already read and parsed.
#[derive(Debug, Clone)]
pub struct GsheetsSettings {
    /// Overrides the Sheets API base URL (tests, proxies); `None`: Google's.
    pub api_base: Option<String>,
    /// The parsed key and its cached access token.
    pub auth: GsheetsAuth,
    /// Overrides the key's `token_uri` (config `token_uri`).
    pub token_uri: Option<String>,
}

/// How `gsheets` gets its OAuth token.
#[derive(Debug, Clone)]
pub enum GsheetsAuth {
    /// A pre-minted access token from config.
    Token(String),
    /// A service-account key: a signed JWT is exchanged for a token, cached until near expiry.
    ServiceAccount(Box<ServiceAccountKey>),
    /// The configured key could not be used; calls fail with this reason.
    Unusable(String),
}

/// A service-account key file that could not be read, as the reader given to
/// [`ServicesSettings::from_config`] reports it.
#[derive(Debug, thiserror::Error)]
#[error("cannot read {}: {source}", .path.display())]
pub struct KeyFileError {
    /// The file as it was opened (after `~/` was expanded).
    pub path: std::path::PathBuf,
    /// Why it could not be read.
    pub source: std::io::Error,
}

/// Why the configured service-account key cannot be used.
#[derive(Debug, thiserror::Error)]
enum KeyError {
    #[error(transparent)]
    Read(#[from] KeyFileError),
    #[error(transparent)]
    Parse(#[from] gsheets_auth::AuthError),
}

/// The service-account key `file` names, read with `key_file` and checked.
fn service_account_key(
    file: &str,
    key_file: &dyn Fn(&str) -> Result<String, KeyFileError>,
) -> Result<ServiceAccountKey, KeyError> {
    Ok(ServiceAccountKey::from_json(&key_file(file)?)?)
}

impl ServicesSettings {
    /// Settings from the `services:` section. `key_file` reads the service-account key the
    /// config names (the binary does the I/O; this crate never opens files).
    pub fn from_config(
        config: &ServicesConfig,
        key_file: &dyn Fn(&str) -> Result<String, KeyFileError>,
    ) -> Self {
        let gsheets = config.gsheets.as_ref().map(|g| {
            let token = g
                .access_token
                .as_deref()
                .map(str::to_string)
                .filter(|t| !t.trim().is_empty());
            let file = g
                .service_account_file
                .clone()
                .filter(|f| !f.trim().is_empty());
            let auth = match (token, file) {
                (Some(t), _) => GsheetsAuth::Token(t),
                (None, Some(f)) => match service_account_key(&f, key_file) {
                    Ok(key) => GsheetsAuth::ServiceAccount(Box::new(key)),
                    Err(e) => GsheetsAuth::Unusable(format!(
                        "services.gsheets.service_account_file `{f}` is not usable: {e}"
                    )),
                },
                (None, None) => GsheetsAuth::Unusable(
                    "services.gsheets needs `service_account_file` or `access_token`".into(),
                ),
            };
            GsheetsSettings {
                api_base: g.api_base.clone(),
                auth,
                token_uri: g.token_uri.clone(),
            }
        });
        Self {
            whatsapp: config.whatsapp.clone(),
            gsheets,
            stripe: config.stripe.clone(),
            r8r: config.r8r.clone(),
            ..Self::default()
        }
    }

    /// Destinations the operator wrote outside the config file: the service-account key's
    /// `token_uri` (the key file is the operator's, like the config).
    pub fn operator_urls(&self) -> Vec<String> {
        match &self.gsheets {
            Some(GsheetsSettings {
                auth: GsheetsAuth::ServiceAccount(key),
                token_uri: None,
                ..
            }) => vec![key.token_uri.clone()],
            _ => Vec::new(),
        }
    }

    /// Credentials outside the config file (the key's private key), for the redactor.
    pub fn secrets(&self) -> Vec<String> {
        match &self.gsheets {
            Some(GsheetsSettings {
                auth: GsheetsAuth::ServiceAccount(key),
                ..
            }) => vec![key.private_key.clone()],
            _ => Vec::new(),
        }
    }
}

/// The `services` extension with its four tools.
pub fn extension(settings: ServicesSettings) -> Arc<dyn Extension> {
    Arc::new(ServicesExtension {
        settings: Arc::new(settings),
        tokens: Arc::default(),
    })
}

struct ServicesExtension {
    settings: Arc<ServicesSettings>,
    /// Minted Google tokens, shared by every `gsheets` instance this extension lists (the
    /// tools are listed again on reloads and by wrappers).
    tokens: Arc<gsheets_auth::TokenCache>,
}

impl Extension for ServicesExtension {
    fn name(&self) -> &str {
        NAME
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let s = &self.settings;
        vec![
            Arc::new(whatsapp::Whatsapp::new(s)),
            Arc::new(gsheets::Gsheets::new(s, self.tokens.clone())),
            Arc::new(stripe::Stripe::new(s)),
            Arc::new(r8r::R8r::new(s)),
        ]
    }
}

/// The error of a tool whose config section is missing.
pub(crate) fn not_configured(section: &str) -> ToolError {
    ToolError::failed(format!(
        "services.{section} is not configured; add a `services.{section}` section to the config"
    ))
}

/// A value that goes into a URL path: non-empty, only `allowed` characters besides ASCII
/// letters and digits, and never `.` or `..` (which would climb the path).
pub(crate) fn path_id(field: &str, value: &str, allowed: &str) -> Result<String, ToolError> {
    let ok = !value.is_empty()
        && value.len() <= 256
        && value != "."
        && value != ".."
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || allowed.contains(c));
    if ok {
        Ok(value.to_string())
    } else {
        let extra: String = allowed.chars().map(|c| format!(" `{c}`")).collect();
        Err(ToolError::invalid_arguments(format!(
            "`{field}` must be letters, digits{} only, got `{}`",
            if extra.is_empty() {
                String::new()
            } else {
                format!(" and{extra}")
            },
            tackle_protocol::text::preview(value, 60)
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tackle_protocol::{ApprovalMode, Risk};

    #[test]
    fn tools_carry_the_catalogue_risk_and_approval() {
        let specs: Vec<_> = extension(ServicesSettings::default())
            .tools()
            .iter()
            .map(|t| t.spec())
            .collect();
        for s in &specs {
            let approval = if s.name == "stripe" {
                ApprovalMode::Always
            } else {
                ApprovalMode::UnlessAutoApproved
            };
            assert_eq!((s.risk, s.approval), (Risk::Medium, approval), "{}", s.name);
            assert_eq!(s.owner, NAME);
            assert!(tackle_protocol::ToolName::parse(&s.name).is_ok());
        }
    }

    #[test]
    fn path_ids_refuse_what_would_change_the_path() {
        for bad in ["", ".", "..", "a/b", "a?b", "a b", "a%2F"] {
            assert!(path_id("id", bad, "._-").is_err(), "{bad}");
        }
        assert_eq!(path_id("id", "pi_123", "_").ok().as_deref(), Some("pi_123"));
        assert!(path_id("id", "a.b", "_").is_err());
    }

    #[test]
    fn a_broken_key_file_is_reported_at_call_time_not_start_up() {
        let config: ServicesConfig = serde_json::from_value(serde_json::json!({
            "gsheets": {"service_account_file": "/nope.json"}
        }))
        .unwrap_or_default();
        let s = ServicesSettings::from_config(&config, &|f| {
            Err(KeyFileError {
                path: f.into(),
                source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
            })
        });
        match s.gsheets.map(|g| g.auth) {
            Some(GsheetsAuth::Unusable(why)) => assert!(why.contains("no such file"), "{why}"),
            other => panic!("{other:?}"),
        }
    }
}
