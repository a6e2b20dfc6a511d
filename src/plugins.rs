//! The `plugins` extension as the binary builds it: `plugins.dirs` resolved against the home
//! and the workspace, the disk through the host crate, the built-in tool names reserved.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use tackle_protocol::config::PluginsConfig;
use tackle_tools::plugins::{LoadReport, PluginDir, Plugins, PluginsSettings};

/// Where plugins live when `plugins.dirs` names none: the user's own config directory.
fn default_dir(home: Option<&Path>, xdg_config: Option<&str>) -> PluginDir {
    match (xdg_config.filter(|v| !v.is_empty()), home) {
        (Some(xdg), _) => {
            let path = PathBuf::from(xdg).join("tackle/plugins");
            PluginDir {
                label: path.display().to_string(),
                path,
            }
        }
        (None, Some(h)) => PluginDir {
            label: "~/.config/tackle/plugins".into(),
            path: h.join(".config/tackle/plugins"),
        },
        (None, None) => PluginDir {
            label: ".config/tackle/plugins".into(),
            path: PathBuf::from(".config/tackle/plugins"),
        },
    }
}

/// One `plugins.dirs` entry: `~/…` in the home, absolute as is, relative inside the workspace.
fn resolve(raw: &str, workspace: &Path, home: Option<&Path>) -> PathBuf {
    match (raw.strip_prefix("~/"), home) {
        (Some(rest), Some(h)) => h.join(rest),
        _ => workspace.join(raw),
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
    let xdg = std::env::var("XDG_CONFIG_HOME").ok();
    let dirs = if config.dirs.is_empty() {
        vec![default_dir(home, xdg.as_deref())]
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
    let mut settings = PluginsSettings::new(Arc::new(tackle_host::DiskPluginDirs));
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
        let d = default_dir(home, None);
        assert_eq!(d.path, PathBuf::from("/home/me/.config/tackle/plugins"));
    }
}
