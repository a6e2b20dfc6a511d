//! `plugins:` and `skills:`: where extra tools and skills are found.

use serde::{Deserialize, Serialize};

/// `plugins:` where plugins are found and which of them may load.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginsConfig {
    /// Directories holding `<plugin>/plugin.json`; relative entries are inside the workspace.
    /// Empty: `~/.config/tackle/plugins`.
    #[serde(default)]
    pub dirs: Vec<String>,
    /// Plugin names that may load; empty: every plugin not blocked.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Plugin names that never load, even when allowed (block wins).
    #[serde(default)]
    pub block: Vec<String>,
}

/// `skills:` where skills are found and which registry `find_skills` / `install_skill` use.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillsConfig {
    /// Searched in order, first name wins; `install_skill` installs into the first. A relative
    /// entry is inside the workspace (repository-controlled), so it is read only when named
    /// here. Empty = `~/.config/tackle/skills`.
    #[serde(default)]
    pub dirs: Vec<String>,
    /// A ClawHub-compatible registry; unset = `https://clawhub.ai`.
    #[serde(default)]
    pub registry_url: Option<String>,
}
