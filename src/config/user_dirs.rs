//! `plugins.dirs` and `skills.dirs`: directories of the user's own files that the binary
//! reads, resolved one way for both. Entries are `~/…` in the home, absolute as written, or
//! relative inside the workspace; with none configured, the user's config directory
//! (`$XDG_CONFIG_HOME/tackle/KIND` or `~/.config/tackle/KIND`). A directory nobody named (the
//! default, or a `~` entry read through a home that points into the workspace) is refused when
//! it resolves inside the workspace, because a cloned repository must not bring code or
//! instructions in unasked (see [`crate::config::home`]).

use super::home::{self, Guard};
use std::path::{Path, PathBuf};

/// One directory to read: the config's words for people and the path to read.
pub struct UserDir {
    /// As the config wrote it (the default spelled `~/.config/tackle/KIND`).
    pub label: String,
    /// Absolute, except a `~` entry with no home, which stays relative so the disk refuses it
    /// with the reason.
    pub path: PathBuf,
}

/// The directories `KIND.dirs` names (or the default one) and the guard every read passes.
pub fn resolve(
    kind: &str,
    configured: &[String],
    workspace: &Path,
    home: Option<&Path>,
) -> (Vec<UserDir>, Guard) {
    let env = |k: &str| match k {
        "HOME" => home.map(|h| h.display().to_string()),
        _ => std::env::var(k).ok(),
    };
    let mut derived = Vec::new();
    let dirs = if configured.is_empty() {
        let (dir, d) = default_dir(&env, kind);
        derived.push(d);
        vec![dir]
    } else {
        configured
            .iter()
            .map(|raw| UserDir {
                label: raw.clone(),
                path: entry_path(raw, workspace, home),
            })
            .collect()
    };
    let to_name_it = format!("write it as an absolute path in `{kind}.dirs` to load it");
    derived.extend(
        configured
            .iter()
            .filter_map(|raw| home::tilde_derived(raw, home, kind, &to_name_it)),
    );
    (dirs, home::guard(derived, workspace.to_path_buf()))
}

/// Where the user's KIND live when `KIND.dirs` names none: the user's own config directory
/// (`$XDG_CONFIG_HOME` or the home, absolute only), never the workspace.
fn default_dir(env: home::Env, kind: &str) -> (UserDir, home::Derived) {
    let derived = home::default_config_dir(
        env,
        kind,
        kind,
        &format!("name it in `{kind}.dirs` to load it"),
    );
    let label = if home::absolute_var(env, "XDG_CONFIG_HOME") {
        derived.path.display().to_string()
    } else {
        format!("~/.config/tackle/{kind}")
    };
    let dir = UserDir {
        label,
        path: derived.path.clone(),
    };
    (dir, derived)
}

/// One `KIND.dirs` entry: `~/…` in the home, absolute as is, relative inside the workspace.
/// A `~` entry with no home stays relative, which the disk refuses (with the reason).
fn entry_path(raw: &str, workspace: &Path, home: Option<&Path>) -> PathBuf {
    match home::expand_tilde(raw, home) {
        Ok(p) => workspace.join(p),
        Err(_) => PathBuf::from(raw),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_resolve_home_absolute_and_workspace_relative() {
        let ws = Path::new("/ws");
        let home = Some(Path::new("/home/me"));
        assert_eq!(entry_path("~/p", ws, home), PathBuf::from("/home/me/p"));
        assert_eq!(entry_path("/opt/p", ws, home), PathBuf::from("/opt/p"));
        assert_eq!(entry_path("p", ws, home), PathBuf::from("/ws/p"));
        assert_eq!(entry_path("~", ws, home), PathBuf::from("/home/me"));
        // No home: `~` stays relative (refused by the disk), never inside the workspace.
        assert_eq!(entry_path("~/p", ws, None), PathBuf::from("~/p"));
    }

    #[test]
    fn with_no_entries_only_the_users_config_directory_of_the_kind_is_read() {
        for kind in ["plugins", "skills"] {
            let (dirs, guard) = resolve(kind, &[], Path::new("/ws"), Some(Path::new("/home/me")));
            assert_eq!(dirs.len(), 1);
            if std::env::var_os("XDG_CONFIG_HOME").is_none() {
                assert_eq!(
                    dirs[0].path,
                    PathBuf::from(format!("/home/me/.config/tackle/{kind}"))
                );
                assert_eq!(dirs[0].label, format!("~/.config/tackle/{kind}"));
            }
            assert!(
                !dirs[0].path.starts_with("/ws"),
                "{}",
                dirs[0].path.display()
            );
            // A relative path (a `~` entry with no home) is refused by the guard.
            assert!(guard(Path::new("rel/p")).is_some());
        }
    }
}
