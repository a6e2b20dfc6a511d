//! The built-in extensions, one row each: its name (what `agents[].extensions` enables and
//! disables), the cargo feature that builds it, how it is built from the config, which of its
//! tools cannot work until a config section exists, which credentials it holds outside the
//! config's typed secrets, and what `tackle doctor` checks of it. Adding an extension is one
//! row here (and its crate); every front end, the redactor, doctor and the answers for
//! left-out tools read this table.
//!
//! The user's own tools come after the built-ins and are not rows: plugins (loaded once the
//! built-ins' names are known, so none can shadow one) and MCP servers (one extension per
//! configured server).

pub mod not_built;
pub mod unconfigured;

use crate::commands::doctor::Check;
use anyhow::Result;
use std::path::Path;
use std::sync::Arc;
use tackle_protocol::config::{AgentConfig, Config};
use tackle_protocol::Extension;
use tackle_store::Store;
use tackle_tools::services::ServicesSettings;

/// What the rows build from: the loaded config and what the front end resolved around it.
pub struct Inputs<'a> {
    pub config: &'a Config,
    pub workspace: &'a Path,
    /// The user's home (`config::home::home`), for `~/…` entries.
    pub home: Option<&'a Path>,
    pub store: &'a Store,
    /// `tools.coding_tools` or `--template coder`: the opt-in coding tools.
    pub coding_tools: bool,
    /// `services:` with its credential files read (`crate::services::settings`).
    pub services: &'a ServicesSettings,
}

/// What a row's `build` gives: the extension, or `None` in a build without its feature.
pub type Built = Result<Option<Arc<dyn Extension>>>;

/// A tool that cannot work until a config section exists, and what to add.
pub type Unconfigured = (&'static str, String);

/// One built-in extension.
pub struct Row {
    /// The extension's name: what `agents[].extensions` names and what its tools' `owner` is.
    pub name: &'static str,
    /// The binary's cargo feature that builds it; `None` when every build has it.
    pub feature: Option<&'static str>,
    /// Its tools, for a build that leaves it out (naming one says which feature builds it).
    /// Empty for an extension every build has.
    pub tools: &'static [&'static str],
    /// Builds it; `Ok(None)` in a build without its feature.
    pub build: fn(&Inputs) -> Built,
    /// Its tools that need a config section the config lacks, with what to add: they are not
    /// offered (see [`unconfigured`]).
    pub unconfigured: fn(&Config) -> Vec<Unconfigured>,
    /// Credentials it holds that are not typed secrets of the config file (redacted from
    /// every output and log line like the config's own).
    pub secrets: fn(&Inputs) -> Vec<String>,
    /// What `tackle doctor` reports of it, beyond the tools it registered.
    pub doctor: fn(&Inputs) -> Vec<Check>,
}

fn all_configured(_: &Config) -> Vec<Unconfigured> {
    Vec::new()
}

fn no_secrets(_: &Inputs) -> Vec<String> {
    Vec::new()
}

fn no_checks(_: &Inputs) -> Vec<Check> {
    Vec::new()
}

fn built(ext: Arc<dyn Extension>) -> Built {
    Ok(Some(ext))
}

/// Every built-in extension, in the order its tools are listed.
pub const CATALOGUE: &[Row] = &[
    Row {
        name: tackle_tools::system::NAME,
        feature: None,
        tools: &[],
        build: |_| built(tackle_tools::system::extension()),
        unconfigured: all_configured,
        secrets: no_secrets,
        doctor: no_checks,
    },
    Row {
        name: "core",
        feature: None,
        tools: &[],
        build: |i| {
            built(tackle_tools::core::extension_with_channels(
                i.config.channels.clone(),
            ))
        },
        unconfigured: all_configured,
        secrets: no_secrets,
        doctor: no_checks,
    },
    Row {
        name: "fs",
        feature: None,
        tools: &[],
        build: |i| built(tackle_tools::fs::extension(i.coding_tools)),
        unconfigured: all_configured,
        secrets: no_secrets,
        doctor: no_checks,
    },
    Row {
        name: "web",
        feature: None,
        tools: &[],
        build: |i| {
            use tackle_tools::web;
            built(web::extension(web::WebSettings::from_config(
                &i.config.web_search,
            )))
        },
        unconfigured: |config| {
            config.web_search.backends.is_empty().then(|| {
                (
                    "web_search",
                    "web_search has no backends configured: add at least one under `web_search.backends` in the config (e.g. `- type: duckduckgo`, or `- type: searxng` with `url:`)".to_string(),
                )
            }).into_iter().collect()
        },
        secrets: no_secrets,
        doctor: no_checks,
    },
    Row {
        name: "dev",
        feature: None,
        tools: &[],
        build: |i| {
            use tackle_tools::dev;
            built(dev::extension(dev::DevSettings {
                github_token: github_token(i.config),
                github_api_base: i.config.services.github.api_base.clone(),
            }))
        },
        unconfigured: all_configured,
        // `$GITHUB_TOKEN`, the `project` tool's fallback when the config names no token.
        secrets: |_| std::env::var("GITHUB_TOKEN").ok().into_iter().collect(),
        doctor: no_checks,
    },
    Row {
        name: tackle_tools::devices::NAME,
        feature: None,
        tools: &[],
        build: |i| {
            use tackle_tools::devices;
            built(devices::extension(devices::DevicesSettings::from_config(
                &i.config.devices,
            )))
        },
        unconfigured: all_configured,
        secrets: no_secrets,
        doctor: no_checks,
    },
    Row {
        name: tackle_tools::memory::NAME,
        feature: None,
        tools: &[],
        build: |i| {
            use tackle_tools::memory;
            built(memory::extension(memory::MemorySettings {
                store: i.store.clone(),
                banks: i.config.memory_banks.clone(),
            }))
        },
        unconfigured: all_configured,
        secrets: no_secrets,
        doctor: no_checks,
    },
    Row {
        name: tackle_tools::services::NAME,
        feature: Some("services"),
        tools: &["whatsapp", "gsheets", "stripe", "r8r"],
        build: build_services,
        unconfigured: |config| {
            let s = &config.services;
            [
                ("whatsapp", s.whatsapp.is_some()),
                ("gsheets", s.gsheets.is_some()),
                ("stripe", s.stripe.is_some()),
                ("r8r", s.r8r.is_some()),
            ]
            .into_iter()
            .filter(|(_, present)| !present)
            .map(|(name, _)| {
                (
                    name,
                    format!(
                        "services.{name} is not configured; add a `services.{name}` section to the config"
                    ),
                )
            })
            .collect()
        },
        // A service-account key's private key, read from its file.
        secrets: |i| i.services.secrets(),
        doctor: no_checks,
    },
    Row {
        name: "media",
        feature: Some("media"),
        tools: &["transcribe"],
        build: build_media,
        unconfigured: all_configured,
        secrets: no_secrets,
        doctor: no_checks,
    },
    Row {
        name: tackle_tools::schedule::NAME,
        feature: None,
        tools: &[],
        build: |i| {
            let settings = crate::schedules::settings(i.config, i.store)?;
            built(tackle_tools::schedule::extension(settings))
        },
        unconfigured: all_configured,
        secrets: no_secrets,
        doctor: no_checks,
    },
    Row {
        name: tackle_tools::skills::NAME,
        feature: None,
        tools: &[],
        build: |i| {
            built(crate::skills::extension(
                &i.config.skills,
                i.workspace,
                i.home,
                tackle_tools::skills::StoredSkills {
                    store: i.store.clone(),
                    banks: i.config.memory_banks.clone(),
                },
            ))
        },
        unconfigured: all_configured,
        secrets: no_secrets,
        doctor: |i| crate::commands::doctor::skill_checks(&i.config.skills, i.workspace, i.home),
    },
];

/// The config's GitHub token, else `$GITHUB_TOKEN` (the fallback it always was).
fn github_token(config: &Config) -> Option<String> {
    config
        .services
        .github
        .token
        .as_deref()
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .or_else(|| std::env::var("GITHUB_TOKEN").ok().filter(|t| !t.is_empty()))
}

// Left out of a build without the feature (the edge build): the linker then drops their tools
// (docs/decisions/0039-edge-build.md).
fn build_services(i: &Inputs) -> Built {
    #[cfg(feature = "services")]
    return built(tackle_tools::services::extension(i.services.clone()));
    #[cfg(not(feature = "services"))]
    {
        let _ = i;
        Ok(None)
    }
}

fn build_media(i: &Inputs) -> Built {
    #[cfg(feature = "media")]
    return built(tackle_tools::media::extension(
        tackle_tools::media::MediaSettings {
            transcribe: i.config.transcribe.clone(),
            screenshot: i.config.screenshot.clone(),
        },
    ));
    #[cfg(not(feature = "media"))]
    {
        let _ = i;
        Ok(None)
    }
}

/// Whether `agent` (none: every extension) runs the extension named `name`.
pub fn enabled(agent: Option<&AgentConfig>, name: &str) -> bool {
    agent.is_none_or(|a| a.extensions.is_enabled(name))
}

/// The built-in extensions this build has and `agent` enables, each without the tools its
/// config does not set up, then the two that only answer for what this build lacks.
pub fn build(inputs: &Inputs, agent: Option<&AgentConfig>) -> Result<Vec<Arc<dyn Extension>>> {
    let missing = unconfigured::missing(inputs.config);
    let mut out = Vec::new();
    for row in CATALOGUE.iter().filter(|r| enabled(agent, r.name)) {
        if let Some(ext) = (row.build)(inputs)? {
            out.push(unconfigured::without(ext, &missing));
        }
    }
    // Owns no tools: it only answers for the feature-gated tools this build lacks.
    out.push(tackle_tools::gated::extension());
    // Owns no tools: it answers for the extensions this build leaves out (the edge build).
    if CATALOGUE.iter().any(|r| !r.is_built()) {
        out.push(not_built::extension());
    }
    Ok(out)
}

/// The credentials the built-in extensions hold outside the config's typed secrets, whether
/// or not an agent enables them.
pub fn secrets(inputs: &Inputs) -> Vec<String> {
    CATALOGUE.iter().flat_map(|r| (r.secrets)(inputs)).collect()
}

/// What `tackle doctor` checks of the built-in extensions, in catalogue order.
pub fn doctor_checks(inputs: &Inputs) -> Vec<Check> {
    CATALOGUE.iter().flat_map(|r| (r.doctor)(inputs)).collect()
}

impl Row {
    /// Whether this build has the extension (its feature, if it needs one, is on).
    pub fn is_built(&self) -> bool {
        self.feature.is_none_or(feature_on)
    }
}

/// Whether the binary was built with the cargo feature `name` (the features rows name).
fn feature_on(name: &str) -> bool {
    match name {
        "services" => cfg!(feature = "services"),
        "media" => cfg!(feature = "media"),
        // A feature no row should name: treated as absent, and the test below fails.
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_inputs<T>(config: &Config, f: impl FnOnce(&Inputs) -> T) -> T {
        let store = Store::open_in_memory().expect("an in-memory store");
        let services = ServicesSettings::default();
        let dir = tempfile::tempdir().expect("a temporary directory");
        f(&Inputs {
            config,
            workspace: dir.path(),
            home: None,
            store: &store,
            coding_tools: false,
            services: &services,
        })
    }

    #[test]
    fn each_row_builds_the_extension_it_names_and_names_are_unique() {
        let config = Config::default();
        with_inputs(&config, |inputs| {
            let mut seen = std::collections::BTreeSet::new();
            for row in CATALOGUE {
                assert!(seen.insert(row.name), "{} is listed twice", row.name);
                let ext = (row.build)(inputs).expect("builds from the default config");
                assert_eq!(ext.is_some(), row.is_built(), "{}", row.name);
                if let Some(ext) = ext {
                    assert_eq!(ext.name(), row.name);
                    // A row that lists its tools for a left-out build lists them all.
                    let names: Vec<String> = ext.tools().iter().map(|t| t.spec().name).collect();
                    for tool in row.tools {
                        assert!(names.iter().any(|n| n == tool), "{}: {tool}", row.name);
                    }
                }
            }
        });
    }

    #[test]
    fn a_gated_row_names_a_feature_the_binary_declares_and_lists_its_tools() {
        let manifest = include_str!("../../Cargo.toml");
        for row in CATALOGUE {
            if let Some(feature) = row.feature {
                assert!(
                    manifest.contains(&format!("\n{feature} = [")),
                    "{}: no feature `{feature}` in Cargo.toml",
                    row.name
                );
                assert_eq!(row.is_built(), feature_on(feature));
                assert!(!row.tools.is_empty(), "{}", row.name);
            }
        }
    }

    #[test]
    fn an_agent_that_disables_an_extension_does_not_get_it() {
        let config = Config::default();
        let agent: AgentConfig = serde_json::from_value(serde_json::json!({
            "name": "a", "extensions": {"disable": ["web", "memory"]}
        }))
        .expect("an agent");
        with_inputs(&config, |inputs| {
            let names: Vec<String> = build(inputs, Some(&agent))
                .expect("builds")
                .iter()
                .map(|e| e.name().to_string())
                .collect();
            assert!(
                !names.iter().any(|n| n == "web" || n == "memory"),
                "{names:?}"
            );
            assert!(names.iter().any(|n| n == "fs"), "{names:?}");
        });
    }
}
