//! The `skills` extension as the binary builds it: `skills.dirs` resolved against the home
//! and the workspace, the registry from `skills.registry_url`, the disk through the host crate.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use tackle_protocol::config::SkillsConfig;
use tackle_protocol::Extension;
use tackle_tools::skills::{self, SkillDir, SkillsSettings};

/// Where skills live when `skills.dirs` names none: the user's own config directory, never
/// the workspace (a cloned repository must not bring instructions in unasked).
fn default_dir(home: Option<&Path>, xdg_config: Option<&str>) -> (String, PathBuf) {
    match (xdg_config.filter(|v| !v.is_empty()), home) {
        (Some(xdg), _) => {
            let p = PathBuf::from(xdg).join("tackle/skills");
            (p.display().to_string(), p)
        }
        (None, Some(h)) => (
            "~/.config/tackle/skills".into(),
            h.join(".config/tackle/skills"),
        ),
        (None, None) => (
            ".config/tackle/skills".into(),
            PathBuf::from(".config/tackle/skills"),
        ),
    }
}

/// One `skills.dirs` entry: `~/…` in the home, absolute as is, relative inside the workspace.
fn resolve(raw: &str, workspace: &Path, home: Option<&Path>) -> PathBuf {
    match (raw.strip_prefix("~/"), home) {
        (Some(rest), Some(h)) => h.join(rest),
        _ if raw == "~" => home
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from(raw)),
        _ => workspace.join(raw),
    }
}

pub fn settings(config: &SkillsConfig, workspace: &Path, home: Option<&Path>) -> SkillsSettings {
    let xdg = std::env::var("XDG_CONFIG_HOME").ok();
    let dirs = if config.dirs.is_empty() {
        let (label, path) = default_dir(home, xdg.as_deref());
        vec![SkillDir { label, path }]
    } else {
        config
            .dirs
            .iter()
            .map(|raw| SkillDir {
                label: raw.clone(),
                path: resolve(raw, workspace, home),
            })
            .collect()
    };
    let mut settings = SkillsSettings::new(Arc::new(tackle_host::DiskSkillDirs));
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

pub fn extension(
    config: &SkillsConfig,
    workspace: &Path,
    home: Option<&Path>,
) -> Arc<dyn Extension> {
    skills::extension(settings(config, workspace, home))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dirs_resolve_home_absolute_and_workspace_relative_entries() {
        let ws = Path::new("/ws");
        let home = Some(Path::new("/home/me"));
        assert_eq!(resolve("~/s", ws, home), PathBuf::from("/home/me/s"));
        assert_eq!(resolve("/opt/s", ws, home), PathBuf::from("/opt/s"));
        assert_eq!(
            resolve(".tackle/skills", ws, home),
            PathBuf::from("/ws/.tackle/skills")
        );
    }

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
