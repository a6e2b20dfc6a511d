//! The `plugins` extension as the binary builds it: `plugins.dirs` resolved against the home
//! and the workspace, the disk through the host crate, the built-in tool names reserved.

use std::path::Path;
use std::sync::Arc;
use tackle_protocol::config::PluginsConfig;
use tackle_tools::plugins::{LoadReport, PluginDir, Plugins, PluginsSettings};

/// Load every configured plugin. `reserved` are the names already registered; `mcp` the
/// configured MCP servers, whose `server__` namespaces plugins may not enter.
pub fn load(
    config: &PluginsConfig,
    workspace: &Path,
    home: Option<&Path>,
    reserved: Vec<String>,
    mcp: &[String],
) -> Arc<Plugins> {
    let (dirs, guard) = crate::config::user_dirs::resolve("plugins", &config.dirs, workspace, home);
    let mut settings = PluginsSettings::new(tackle_host::DiskPluginDirs::guarded(guard));
    settings.dirs = dirs
        .into_iter()
        .map(|d| PluginDir {
            label: d.label,
            path: d.path,
        })
        .collect();
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
