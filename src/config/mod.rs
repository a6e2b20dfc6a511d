//! Loading configuration: the search order of the README's global flags, `${VAR}` interpolation, `TACKLE_*`
//! overrides, and errors that name the key's path. The typed structs live in
//! `tackle_protocol::config`; this is the only place that reads a config file or the environment
//! for configuration (docs/architecture.md).

mod env_override;
pub mod home;
mod interpolate;
mod presets;
mod report;
pub mod secrets;
pub mod user_dirs;

use std::path::{Path, PathBuf};
use tackle_protocol::config::Config;

pub use env_override::apply_env_overrides;
pub use interpolate::interpolate;

/// Why the configuration could not be loaded; every variant says how to fix it.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    // The cause is part of the message, not a `source`: reported once, not twice.
    #[error("cannot read config file {path}: {cause}")]
    Read {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("{path}: not valid YAML: {message}")]
    Yaml { path: String, message: String },
    #[error("{origin}: `{key}`: {message}")]
    Invalid {
        origin: String,
        key: String,
        message: String,
    },
    #[error("{0}")]
    Override(String),
}

/// A loaded configuration and where it came from.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub config: Config,
    /// The file that was read, or `None` for built-in defaults.
    pub source: Option<PathBuf>,
    /// Non-fatal notes (unset `${VAR}`s, deprecated keys), printed once at start-up.
    pub warnings: Vec<String>,
    /// Every credential of the config, for the output redactor (see [`secrets::collect`]).
    pub secrets: Vec<tackle_protocol::config::Secret>,
}

/// Where to look for the config file: `--config`, then `$TACKLE_CONFIG`, then
/// `$XDG_CONFIG_HOME/tackle/config.yaml` (or `~/.config/tackle/config.yaml`), where only an
/// absolute `$XDG_CONFIG_HOME` or `$HOME` counts and the home falls back to the password
/// database's (see [`home`]). Returns `(path, explicit)`; an explicit path must exist.
pub fn locate(
    flag: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<(PathBuf, bool)> {
    if let Some(p) = flag {
        return Some((p.to_path_buf(), true));
    }
    if let Some(p) = env("TACKLE_CONFIG").filter(|p| !p.is_empty()) {
        return Some((PathBuf::from(p), true));
    }
    let base = home::config_home_with(env)?;
    Some((base.join("tackle").join("config.yaml"), false))
}

/// Load the configuration following the search order. `workspace` is `--workspace` (else the
/// current directory is the workspace): a config file found by the search (not named) that
/// resolves inside it is not read, with a warning — a repository does not configure Tackle.
pub fn load(
    flag: Option<&Path>,
    workspace: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
    env_vars: &[(String, String)],
) -> Result<Loaded, ConfigError> {
    let mut refused = Vec::new();
    let located = locate(flag, env).filter(|(path, explicit)| {
        if *explicit {
            return true;
        }
        let derived = home::Derived {
            path: path.clone(),
            account_default: home::account_home()
                .map(|h| h.join(".config").join("tackle").join("config.yaml")),
            kind: "configuration".into(),
            to_name_it: "pass it with --config or $TACKLE_CONFIG to read it".into(),
        };
        match home::refuse_derived(&derived, &home::workspace_or_cwd(workspace)) {
            Some(why) => {
                refused.push(format!("{}: not read, {why}", path.display()));
                false
            }
            None => true,
        }
    });
    let (text, source) = match located {
        Some((path, explicit)) => match std::fs::read_to_string(&path) {
            Ok(text) => (text, Some(path)),
            Err(e) if !explicit && e.kind() == std::io::ErrorKind::NotFound => {
                (String::new(), None)
            }
            Err(cause) => return Err(ConfigError::Read { path, cause }),
        },
        None => (String::new(), None),
    };
    let origin = source
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "built-in defaults".to_string());
    parse_with_secrets(&text, &origin, env, env_vars).map(|(config, mut warnings, secrets)| {
        refused.append(&mut warnings);
        Loaded {
            config,
            source,
            warnings: refused,
            secrets,
        }
    })
}

/// Parse YAML text into a [`Config`]: YAML → tree → `${VAR}` → `TACKLE_*` → typed, then checks.
#[cfg(test)]
pub fn parse(
    text: &str,
    origin: &str,
    env: &dyn Fn(&str) -> Option<String>,
    env_vars: &[(String, String)],
) -> Result<(Config, Vec<String>), ConfigError> {
    parse_with_secrets(text, origin, env, env_vars).map(|(config, warnings, _)| (config, warnings))
}

/// [`parse`], and the config's credentials with the values interpolated into them.
pub fn parse_with_secrets(
    text: &str,
    origin: &str,
    env: &dyn Fn(&str) -> Option<String>,
    env_vars: &[(String, String)],
) -> Result<(Config, Vec<String>, Vec<tackle_protocol::config::Secret>), ConfigError> {
    let mut tree: serde_json::Value = if text.trim().is_empty() {
        serde_json::Value::Object(Default::default())
    } else {
        serde_saphyr::from_str(text).map_err(|e| ConfigError::Yaml {
            path: origin.to_string(),
            message: report::yaml_error(&e, origin),
        })?
    };
    if tree.is_null() {
        tree = serde_json::Value::Object(Default::default());
    }
    let mut warnings = Vec::new();
    let substituted = interpolate(&mut tree, env, &mut warnings);
    let overrides = apply_env_overrides(&mut tree, env_vars).map_err(ConfigError::Override)?;
    let config: Result<Config, ConfigError> = serde_path_to_error::deserialize(tree).map_err(|e| {
        let path = e.path().to_string();
        let message = e.inner().to_string();
        // A value set by a `TACKLE_*` variable is that variable's problem, not the file's.
        match env_override::blame(&overrides, &path, &message) {
            Some(o) => ConfigError::Invalid {
                origin: format!("environment variable {}", o.var),
                key: o.key.clone(),
                message,
            },
            None => ConfigError::Invalid {
                origin: origin.to_string(),
                key: display_path(&path),
                message: report::friendly(&message),
            },
        }
    });
    let mut config = config.map_err(|e| located(e, text, origin))?;
    check(&config, origin, &mut warnings).map_err(|e| located(e, text, origin))?;
    presets::apply(&mut config);
    let secrets = secrets::collect(&config, &substituted, &mut warnings);
    Ok((config, warnings, secrets))
}

/// A file's error with the line and column of its key (`config.yaml:12:5`).
fn located(e: ConfigError, text: &str, origin: &str) -> ConfigError {
    match e {
        ConfigError::Invalid {
            origin: o,
            key,
            message,
        } if o == origin => {
            // An unknown key is pointed at itself, where the path may stop at its parent.
            let unknown = message
                .strip_prefix("unknown key `")
                .and_then(|m| m.split_once('`'))
                .map(|(name, _)| match key.as_str() {
                    "(top level)" => name.to_string(),
                    parent if parent.ends_with(name) => parent.to_string(),
                    parent => format!("{parent}.{name}"),
                });
            let at = unknown
                .and_then(|k| report::locate(text, &k))
                .or_else(|| report::locate(text, &key));
            let origin = match at {
                Some((line, column)) => format!("{o}:{line}:{column}"),
                None => o,
            };
            ConfigError::Invalid {
                origin,
                key,
                message,
            }
        }
        other => other,
    }
}

fn display_path(path: &str) -> String {
    if path.is_empty() || path == "." {
        "(top level)".to_string()
    } else {
        path.to_string()
    }
}

/// Cross-references serde cannot check.
fn check(config: &Config, origin: &str, warnings: &mut Vec<String>) -> Result<(), ConfigError> {
    let invalid = |key: String, message: String| ConfigError::Invalid {
        origin: origin.to_string(),
        key,
        message,
    };
    for (i, agent) in config.agents.iter().enumerate() {
        // The one id rule: an agent's name is typed on command lines and keys its memory.
        if let Err(e) =
            tackle_protocol::ids::check(tackle_protocol::ids::IdKind::Agent, &agent.name)
        {
            return Err(invalid(format!("agents[{i}].name"), e.to_string()));
        }
        if let Some(backend) = &agent.backend {
            if !config.backends.iter().any(|b| &b.name == backend) {
                return Err(invalid(
                    format!("agents[{i}].backend"),
                    format!(
                        "no backend named `{backend}`; add it under `backends:` or fix the name"
                    ),
                ));
            }
        }
        if let Some(profile) = &agent.tool_profile {
            if !config.tool_profiles.contains_key(profile) {
                return Err(invalid(
                    format!("agents[{i}].tool_profile"),
                    format!("no profile named `{profile}` under `tool_profiles:`"),
                ));
            }
        }
    }
    if let Err((key, message)) = presets::check(config) {
        return Err(invalid(key, message));
    }
    for (name, profile) in &config.tool_profiles {
        if let Err(e) = tackle_agent::ToolProfile::compile(name, profile) {
            return Err(invalid(
                format!("tool_profiles.{name}.tools"),
                e.to_string(),
            ));
        }
    }
    if let Err(e) =
        tackle_agent::profiles::ToolSelection::compile(config.mcp.serve_tools.as_deref())
    {
        return Err(invalid(
            format!("mcp.serve_tools[{}]", e.index),
            e.to_string(),
        ));
    }
    for (i, pattern) in config.security.untrusted_paths.iter().enumerate() {
        // A pattern that marks nothing would leave those files trusted: refused, not skipped.
        if let Err(e) = tackle_agent::taint::check_marked_path(pattern) {
            return Err(invalid(
                format!("security.untrusted_paths[{i}]"),
                e.to_string(),
            ));
        }
    }
    for (name, server) in &config.mcp_servers {
        match (&server.command, &server.url) {
            (Some(_), None) | (None, Some(_)) => {}
            _ => {
                return Err(invalid(
                    format!("mcp_servers.{name}"),
                    "set exactly one of `command` (a stdio server) or `url` (Streamable HTTP)"
                        .to_string(),
                ))
            }
        }
    }
    for (name, bank) in &config.memory_banks {
        if let Err(e) = tackle_store::check_bank_name(name) {
            return Err(invalid(format!("memory_banks.{name}"), e.to_string()));
        }
        for agent in bank.read.iter().chain(&bank.write) {
            if !config.agents.iter().any(|a| &a.name == agent) && agent != "default" {
                warnings.push(format!(
                    "memory_banks.{name} names agent `{agent}`, which is not under `agents:`"
                ));
            }
        }
    }
    if let Err((key, message)) =
        tackle_tools::devices::check_hardware_config(&config.devices.hardware)
    {
        return Err(invalid(key, message));
    }
    // The resolver's own words: the warning says what it does with the keys.
    if let Some(legacy) = tackle_policy::resolve::legacy_grants(&config.security) {
        warnings.push(legacy.warning);
    }
    Ok(())
}

#[cfg(test)]
mod tests;
