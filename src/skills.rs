//! The `skills` extension as the binary builds it: `skills.dirs` resolved against the home
//! and the workspace, the registry from `skills.registry_url`, the disk through the host crate,
//! and the agents' stored skills and skill banks in the state store.

use std::path::Path;
use std::sync::Arc;
use tackle_protocol::config::SkillsConfig;
use tackle_protocol::Extension;
use tackle_tools::skills::{self, SkillDir, SkillsSettings};

/// The skills settings from the config: `skills.dirs` (or the user's default directory) and
/// the registry.
pub fn settings(config: &SkillsConfig, workspace: &Path, home: Option<&Path>) -> SkillsSettings {
    let (dirs, guard) = crate::config::user_dirs::resolve("skills", &config.dirs, workspace, home);
    let dirs: Vec<SkillDir> = dirs
        .into_iter()
        .map(|d| SkillDir {
            label: d.label,
            path: d.path,
        })
        .collect();
    // Directories nobody named are refused when they resolve inside the workspace; say so
    // now, not only when the catalogue is first read.
    for d in &dirs {
        if let Some(why) = guard(&d.path).filter(|_| std::fs::symlink_metadata(&d.path).is_ok()) {
            tracing::warn!("skills: {}: refused, {why}", d.path.display());
        }
    }
    let mut settings = SkillsSettings::new(tackle_host::DiskSkillDirs::guarded(guard));
    settings.dirs = dirs;
    if let Some(url) = config
        .registry_url
        .as_deref()
        .filter(|u| !u.trim().is_empty())
    {
        settings.registry_url = url.trim().to_string();
        settings.registry_configured = true;
    }
    settings
}

/// The extension with the store's skills after the directories: the calling agent's own,
/// then those of the banks granted to it (docs/decisions/0037-skill-sources.md).
pub fn extension(
    config: &SkillsConfig,
    workspace: &Path,
    home: Option<&Path>,
    stored: skills::StoredSkills,
) -> Arc<dyn Extension> {
    let mut settings = settings(config, workspace, home);
    settings.stored = Some(stored);
    skills::extension(settings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_configured_dirs_only_the_user_directory_is_read() {
        let cfg = SkillsConfig::default();
        let s = settings(&cfg, Path::new("/ws"), Some(Path::new("/home/me")));
        assert_eq!(s.dirs.len(), 1);
        assert!(!s.dirs[0].path.starts_with("/ws"), "{:?}", s.dirs);
        assert!(!s.registry_configured);
        assert_eq!(s.registry_url, skills::DEFAULT_REGISTRY);
    }
}
