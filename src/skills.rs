//! The `skills` extension as the binary builds it: `skills.dirs` resolved against the home
//! and the workspace, the registry from `skills.registry_url`, the disk through the host crate,
//! and the agents' stored skills and skill banks in the state store.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use tackle_protocol::config::SkillsConfig;
use tackle_protocol::Extension;
use tackle_tools::skills::{self, SkillDir, SkillsSettings};

/// Where skills live when `skills.dirs` names none: the user's own config directory, never
/// the workspace (a cloned repository must not bring instructions in unasked): `$XDG_CONFIG_HOME`
/// or the home, absolute only (see [`crate::config::home`]).
fn default_dir(env: crate::config::home::Env) -> (SkillDir, crate::config::home::Derived) {
    let derived = crate::config::home::default_config_dir(
        env,
        "skills",
        "skills",
        "name it in `skills.dirs` to load it",
    );
    let label = if crate::config::home::absolute_var(env, "XDG_CONFIG_HOME") {
        derived.path.display().to_string()
    } else {
        "~/.config/tackle/skills".into()
    };
    let dir = SkillDir {
        label,
        path: derived.path.clone(),
    };
    (dir, derived)
}

/// One `skills.dirs` entry: `~/…` in the home, absolute as is, relative inside the workspace.
/// A `~` entry with no home stays relative, which the disk refuses (with the reason).
fn resolve(raw: &str, workspace: &Path, home: Option<&Path>) -> PathBuf {
    match crate::config::home::expand_tilde(raw, home) {
        Ok(p) => workspace.join(p),
        Err(_) => PathBuf::from(raw),
    }
}

pub fn settings(config: &SkillsConfig, workspace: &Path, home: Option<&Path>) -> SkillsSettings {
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
            .map(|raw| SkillDir {
                label: raw.clone(),
                path: resolve(raw, workspace, home),
            })
            .collect()
    };
    derived.extend(config.dirs.iter().filter_map(|raw| {
        crate::config::home::tilde_derived(
            raw,
            home,
            "skills",
            "write it as an absolute path in `skills.dirs` to load it",
        )
    }));
    // Directories nobody named are refused when they resolve inside the workspace; say so
    // now, not only when the catalogue is first read.
    let guard = crate::config::home::guard(derived, workspace.to_path_buf());
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
