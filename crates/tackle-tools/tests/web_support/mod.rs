//! Shared set-up for the web end-to-end tests: the real `NativeHostProvider` (SSRF guard,
//! DNS pinning, redirect checks, body caps) in front of local wiremock servers.

#![allow(dead_code)] // each test file uses a different subset

use std::sync::Arc;
use std::time::Duration;
use tackle_host::{HostConfig, NativeHostProvider};
use tackle_protocol::config::{SearchBackendConfig, SearchBackendType};
use tackle_protocol::{CallScope, Endpoint, Grants, HostProvider, NetworkGrant, Tool, ToolContext};
use tackle_tools::web::{extension, WebSettings};

/// A provider whose operator-written destinations are `operator` (search backends' URLs).
pub fn provider(operator: Vec<String>) -> NativeHostProvider {
    let mut cfg = HostConfig::new(std::env::temp_dir().join("tackle-web-tests"));
    cfg.operator_hosts = operator;
    NativeHostProvider::new(cfg)
}

/// A context for one call under `grants`.
pub fn context(provider: &NativeHostProvider, tool: &str, grants: Grants) -> ToolContext {
    let scope = CallScope {
        tool: tool.into(),
        session_id: "web-e2e".into(),
        agent: "default".into(),
        workspace: std::env::temp_dir(),
        grants,
        cancel: Default::default(),
        approved: false,
    };
    ToolContext::new(&scope, "test", provider.scoped(&scope))
}

/// The grant a local test server needs: loopback allowed.
pub fn private() -> Grants {
    Grants {
        network: Some(NetworkGrant {
            endpoints: Vec::new(),
            allow_private: true,
        }),
        ..Grants::default()
    }
}

/// Loopback allowed, but only `host` with paths under `path_prefix`.
pub fn only(host: &str, path_prefix: &str) -> Grants {
    Grants {
        network: Some(NetworkGrant {
            endpoints: vec![Endpoint {
                host: host.into(),
                path_prefix: Some(path_prefix.into()),
                methods: None,
            }],
            allow_private: true,
        }),
        ..Grants::default()
    }
}

pub fn settings(backends: Vec<SearchBackendConfig>) -> WebSettings {
    WebSettings {
        search_backends: backends,
        fetch_timeout: Duration::from_secs(5),
        search_timeout: Duration::from_millis(700),
        ..WebSettings::default()
    }
}

pub fn backend(kind: SearchBackendType, key: Option<&str>, url: &str) -> SearchBackendConfig {
    SearchBackendConfig {
        kind,
        api_key: key.map(Into::into),
        url: Some(url.to_string()),
    }
}

/// One tool of the `web` extension.
pub fn tool(settings: WebSettings, name: &str) -> Arc<dyn Tool> {
    extension(settings)
        .tools()
        .into_iter()
        .find(|t| t.spec().name == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

/// Peak resident memory of this process so far, in KB (`VmHWM`), where `/proc` has it.
pub fn peak_rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}
