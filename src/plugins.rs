//! The `plugins` extension as the binary builds it: `plugins.dirs` resolved against the home
//! and the workspace, the disk through the host crate, the built-in tool names reserved.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use tackle_protocol::config::PluginsConfig;
use tackle_tools::plugins::{LoadReport, PluginDir, Plugins, PluginsSettings};

/// Where plugins live when `plugins.dirs` names none: the user's own config directory
/// (`$XDG_CONFIG_HOME` or the home, absolute only; see [`crate::config::home`]).
fn default_dir(env: crate::config::home::Env) -> (PluginDir, crate::config::home::Derived) {
    let derived = crate::config::home::default_config_dir(
        env,
        "plugins",
        "plugins",
        "name it in `plugins.dirs` to load it",
    );
    let label = if crate::config::home::absolute_var(env, "XDG_CONFIG_HOME") {
        derived.path.display().to_string()
    } else {
        "~/.config/tackle/plugins".into()
    };
    let dir = PluginDir {
        label,
        path: derived.path.clone(),
    };
    (dir, derived)
}

/// One `plugins.dirs` entry: `~/…` in the home, absolute as is, relative inside the workspace.
/// A `~` entry with no home stays relative, which the disk refuses (with the reason).
fn resolve(raw: &str, workspace: &Path, home: Option<&Path>) -> PathBuf {
    match crate::config::home::expand_tilde(raw, home) {
        Ok(p) => workspace.join(p),
        Err(_) => PathBuf::from(raw),
    }
}

/// Load every configured plugin. `reserved` are the names already registered; `mcp` the
/// configured MCP servers, whose `server__` namespaces plugins may not enter.
pub fn load(
    config: &PluginsConfig,
    workspace: &Path,
    home: Option<&Path>,
    reserved: Vec<String>,
    mcp: &[String],
) -> Arc<Plugins> {
    let env = |k: &str| match k {
        "HOME" => home.map(|h| h.display().to_string()),
        _ => std::env::var(k).ok(),
    };
    let mut derived = Vec::new();
    let dirs = if config.dirs.is_empty() {
        let (dir, d) = default_dir(&env);
        derived.push(d);
        vec![dir]
    } else {
        config
            .dirs
            .iter()
            .map(|raw| PluginDir {
                label: raw.clone(),
                path: resolve(raw, workspace, home),
            })
            .collect()
    };
    derived.extend(config.dirs.iter().filter_map(|raw| {
        crate::config::home::tilde_derived(
            raw,
            home,
            "plugins",
            "write it as an absolute path in `plugins.dirs` to load it",
        )
    }));
    // Directories nobody named are refused when they resolve inside the workspace.
    let guard = crate::config::home::guard(derived, workspace.to_path_buf());
    let mut settings = PluginsSettings::new(tackle_host::DiskPluginDirs::guarded(guard));
    settings.dirs = dirs;
    settings.allow = config.allow.clone();
    settings.block = config.block.clone();
    settings.reserved = reserved;
    settings.reserved_prefixes = mcp.iter().map(|m| format!("{m}__")).collect();
    settings.env = Arc::new(|name| std::env::var(name).ok());
    Plugins::new(settings)
}

/// Each problem once on stderr: a bad plugin is skipped, never fatal.
pub fn log(report: &LoadReport) {
    for e in &report.errors {
        tracing::warn!("plugin skipped: {e}");
    }
    for w in &report.warnings {
        tracing::warn!("plugins: {w}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dirs_resolve_home_absolute_and_workspace_relative_entries() {
        let ws = Path::new("/ws");
        let home = Some(Path::new("/home/me"));
        assert_eq!(resolve("~/p", ws, home), PathBuf::from("/home/me/p"));
        assert_eq!(resolve("/opt/p", ws, home), PathBuf::from("/opt/p"));
        assert_eq!(resolve("p", ws, home), PathBuf::from("/ws/p"));
        assert_eq!(resolve("~", ws, home), PathBuf::from("/home/me"));
        // No home: `~` stays relative (refused by the disk), never inside the workspace.
        assert_eq!(resolve("~/p", ws, None), PathBuf::from("~/p"));
        let env = |k: &str| (k == "HOME").then(|| "/home/me".to_string());
        let (d, _) = default_dir(&env);
        assert_eq!(d.path, PathBuf::from("/home/me/.config/tackle/plugins"));
    }
}
