//! What the host needs from the operator, decided once at start-up by the binary.

use std::net::IpAddr;
use std::path::PathBuf;
use tackle_protocol::config::Config;

/// Settings shared by every host the provider scopes.
///
/// Limits here are *ceilings*: a request may ask for less, never for more.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostConfig {
    /// Tackle's state directory; per-session `TMPDIR`s are created under `state_dir/tmp/`.
    pub state_dir: PathBuf,
    /// The user's home directory, for `~` in grants and request paths. `None` = `~` stays literal.
    pub home: Option<PathBuf>,
    /// Environment variables passed to child processes on top of the scrubbed base
    /// (`PATH HOME LANG LC_* TERM USER TZ`). An entry ending in `*` is a prefix (`CARGO_*`).
    pub env_passthrough: Vec<String>,
    /// Ceiling for one `read` (and the default when the request sets none).
    pub max_read_bytes: u64,
    /// Ceiling for each of stdout and stderr of one `exec`.
    pub max_output_bytes: usize,
    /// Ceiling for the entries of one `list`.
    pub max_list_entries: usize,
    /// Ceiling for the hits of one `search`.
    pub max_search_results: usize,
    /// Ceiling for one HTTP response body.
    pub max_http_bytes: u64,
    /// Destinations the operator wrote into the config (a backend's `api_base`, a search
    /// backend's `url`, an MCP server's `url`). An `HttpRequest` marked `operator_configured`
    /// is trusted as written only when its URL matches one of these: an entry with a scheme
    /// (`http://127.0.0.1:8888/x`) matches by origin (scheme, host, port); a bare entry
    /// (`127.0.0.1:8888`, `searx.lan`) matches by host, and by port when it has one.
    pub operator_hosts: Vec<String>,
    /// Names that resolve to fixed addresses without asking DNS (like curl's `--resolve`).
    /// The addresses are still checked by the IP guard like any resolved address.
    pub dns_overrides: Vec<(String, IpAddr)>,
    /// `User-Agent` sent with every HTTP request.
    pub user_agent: String,
    /// Paths no command may see, even inside a granted root (the config file, the state dir).
    pub hidden: Vec<PathBuf>,
    /// `security.sandbox: required`: refuse to run commands without the namespace sandbox.
    pub sandbox_required: bool,
    /// The program that bridges a sandboxed command's network to the filtering proxy (the
    /// `tackle` binary itself, `tackle __net-bridge`). Without one, a command with a network
    /// grant gets no network at all.
    pub net_bridge: Option<PathBuf>,
    /// The program that finishes an allow-list sandbox from inside (the `tackle` binary
    /// itself, `tackle __sandbox-exec`; a program embedding the host calls
    /// [`crate::sandbox_exec_main`] for that argument). Without one, commands under an allow
    /// list are refused, since the list could not be made true.
    pub sandbox_init: Option<PathBuf>,
    /// Decoy credentials (`security.honeytokens`) set in every command's environment, each
    /// only where the scrubbed environment does not already pass a variable of that name.
    pub decoy_env: Vec<(String, String)>,
    /// Decoy files shown read-only to commands inside the namespace sandbox: (the file,
    /// where under the sandbox's empty home it appears). Without namespaces the real home is
    /// visible, and nothing is planted in it.
    pub decoy_home_files: Vec<(PathBuf, PathBuf)>,
}

impl HostConfig {
    /// Defaults for everything but the state directory.
    pub fn new(state_dir: impl Into<PathBuf>) -> Self {
        Self {
            state_dir: state_dir.into(),
            home: None,
            env_passthrough: Vec::new(),
            max_read_bytes: 10 * 1024 * 1024,
            max_output_bytes: 1024 * 1024,
            max_list_entries: 10_000,
            max_search_results: 5_000,
            max_http_bytes: 20 * 1024 * 1024,
            operator_hosts: Vec::new(),
            dns_overrides: Vec::new(),
            user_agent: concat!("tackle/", env!("CARGO_PKG_VERSION")).to_string(),
            hidden: Vec::new(),
            sandbox_required: false,
            net_bridge: None,
            sandbox_init: None,
            decoy_env: Vec::new(),
            decoy_home_files: Vec::new(),
        }
    }

    /// Keeps `path` (and everything below it) invisible to commands.
    pub fn hide(mut self, path: impl Into<PathBuf>) -> Self {
        self.hidden.push(path.into());
        self
    }

    /// Sets the user's home directory, which `~` in grants and request paths expands to
    /// (`None`: `~` stays literal).
    pub fn with_home(mut self, home: Option<PathBuf>) -> Self {
        self.home = home;
        self
    }

    /// Takes `security.env_passthrough` and the operator-written URLs from `config`.
    pub fn with_config(mut self, config: &Config) -> Self {
        self.env_passthrough = config.security.env_passthrough.clone();
        self.sandbox_required =
            config.security.sandbox == tackle_protocol::config::SandboxMode::Required;
        self.operator_hosts = operator_urls(config);
        self
    }
}

/// Where Slack takes uploaded files: trusted with the Slack channel that names Slack.
const SLACK_FILES: &str = "https://files.slack.com";

/// Every URL the operator wrote into `config`: backends' `api_base`, search backends' `url`,
/// MCP servers' `url`, the skills registry, channels' `url` or API base, the services' bases,
/// `transcribe.api_base`, `services.github.api_base`.
pub fn operator_urls(config: &Config) -> Vec<String> {
    let backends = config.backends.iter().filter_map(|b| b.api_base.clone());
    let search = config
        .web_search
        .backends
        .iter()
        .filter_map(|b| b.url.clone());
    let mcp = config.mcp_servers.values().filter_map(|m| m.url.clone());
    let skills = config.skills.registry_url.clone();
    let channels = config.channels.values().flat_map(|c| {
        let mut urls = vec![c.operator_url()];
        // Slack hands out the upload URLs of `files.getUploadURLExternal` on its file host
        // (the `message` tool's `file`, which sends there only that host or the API's own).
        if matches!(c, tackle_protocol::config::ChannelConfig::Slack { .. }) {
            urls.push(SLACK_FILES.to_string());
        }
        urls
    });
    let transcribe = config.transcribe.api_base.clone();
    let github = config.services.github.api_base.clone();
    backends
        .chain(search)
        .chain(mcp)
        .chain(skills)
        .chain(channels)
        .chain(config.services.operator_urls())
        .chain(transcribe)
        .chain(github)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operator_urls_come_from_backends_search_mcp_and_the_skills_registry() {
        // Built from data, not struct literals, so new optional config fields do not break it.
        let config: Config = serde_json::from_value(serde_json::json!({
            "backends": [{"name": "local", "type": "openai", "api_base": "http://127.0.0.1:11434/v1"},
                         {"name": "claude", "type": "anthropic"}],
            "web_search": {"backends": [{"type": "searxng", "url": "http://127.0.0.1:8888"}]},
            "mcp_servers": {"remote": {"url": "https://mcp.example.com/mcp"},
                            "local": {"command": "npx"}},
            "security": {"env_passthrough": ["CARGO_*"]},
            "skills": {"registry_url": "http://127.0.0.1:9911"},
            "transcribe": {"api_base": "http://127.0.0.1:9000/v1"},
            "services": {"github": {"api_base": "http://127.0.0.1:9912/api"}}
        }))
        .unwrap();
        let host = HostConfig::new("/state").with_config(&config);
        assert_eq!(
            host.operator_hosts,
            vec![
                "http://127.0.0.1:11434/v1",
                "http://127.0.0.1:8888",
                "https://mcp.example.com/mcp",
                "http://127.0.0.1:9911",
                "http://127.0.0.1:9000/v1",
                "http://127.0.0.1:9912/api"
            ]
        );
        assert_eq!(host.env_passthrough, vec!["CARGO_*"]);
    }

    #[test]
    fn the_services_configured_bases_are_operator_urls() {
        let config: Config = serde_json::from_value(serde_json::json!({
            "services": {
                "whatsapp": {"access_token": "t", "phone_number_id": "1"},
                "stripe": {"secret_key": "k", "api_base": "http://127.0.0.1:12111"},
                "gsheets": {"access_token": "t", "api_base": "http://127.0.0.1:8081"},
                "r8r": {}
            }
        }))
        .unwrap();
        assert_eq!(
            operator_urls(&config),
            vec![
                "http://127.0.0.1:8081",
                "http://127.0.0.1:12111",
                "http://localhost:8080"
            ]
        );
    }

    #[test]
    fn a_channels_url_or_api_base_is_an_operator_url_defaults_included() {
        let config: Config = serde_json::from_value(serde_json::json!({
            "channels": {
                "a": {"type": "webhook", "url": "http://127.0.0.1:9/hook"},
                "b": {"type": "telegram", "bot_token": "1:x"},
                "c": {"type": "slack", "bot_token": "x", "api_base": "http://127.0.0.1:7/api/"},
                "d": {"type": "discord", "bot_token": "x"},
                "e": {"type": "whatsapp", "access_token": "x", "phone_number_id": "1"}
            }
        }))
        .unwrap();
        assert_eq!(
            operator_urls(&config),
            vec![
                "http://127.0.0.1:9/hook",
                "https://api.telegram.org",
                "http://127.0.0.1:7/api",
                "https://files.slack.com",
                "https://discord.com/api/v10",
                "https://graph.facebook.com"
            ]
        );
    }
}
