//! The user's own directories: the home, `$XDG_CONFIG_HOME`, `$XDG_STATE_HOME`, `~` in
//! configured paths, and which directories nobody named must not be read from the workspace.
//!
//! The rule (issue #38): the home is `$HOME` when it is an absolute path, else the home the
//! password database gives the effective user (`getpwuid_r`); an XDG variable counts only when
//! it is absolute (as the XDG spec says); `~` never expands to a relative path. A directory
//! Tackle derives by itself (the default plugins, skills and config locations) is refused when
//! it resolves, links followed, inside the workspace, unless it is the account's own default
//! (derived from the password database's home): a cloned repository must not bring its own
//! plugins, skills or configuration because `HOME` is unset, relative or points into it.
//! Directories the operator names (`plugins.dirs`, `skills.dirs`, `--config`,
//! `$TACKLE_CONFIG`) are used as named.

use std::ffi::{CStr, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// A lookup of one environment variable.
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Asked before a guarded directory (or a file under it) is read: `Some(why)` refuses it.
pub type Guard = Arc<dyn Fn(&Path) -> Option<String> + Send + Sync>;

/// `value` as a path when it is absolute (an unset, empty or relative value is ignored).
fn absolute(value: Option<String>) -> Option<PathBuf> {
    value.map(PathBuf::from).filter(|p| p.is_absolute())
}

/// Is `name` set to an absolute path (and so used)?
pub fn absolute_var(env: Env, name: &str) -> bool {
    absolute(env(name)).is_some()
}

/// The home directory of the effective user in the password database, if it has an absolute
/// one. Looked up once.
pub fn account_home() -> Option<PathBuf> {
    static HOME: OnceLock<Option<PathBuf>> = OnceLock::new();
    HOME.get_or_init(lookup_account_home).clone()
}

fn lookup_account_home() -> Option<PathBuf> {
    // SAFETY: geteuid cannot fail and touches no memory of ours.
    let uid = unsafe { libc::geteuid() };
    let mut len = 1024usize;
    loop {
        let mut buf = vec![0u8; len];
        // SAFETY: a zeroed `passwd` is a valid value for getpwuid_r to fill in.
        let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: every pointer is valid for the call; `buf` outlives every use of `pwd`.
        let rc = unsafe {
            libc::getpwuid_r(
                uid,
                &mut pwd,
                buf.as_mut_ptr().cast::<libc::c_char>(),
                buf.len(),
                &mut result,
            )
        };
        if rc == libc::ERANGE && len < 1 << 20 {
            len *= 4;
            continue;
        }
        if rc != 0 || result.is_null() || pwd.pw_dir.is_null() {
            return None;
        }
        // SAFETY: getpwuid_r succeeded: `pw_dir` is a NUL-terminated string inside `buf`.
        let dir = unsafe { CStr::from_ptr(pwd.pw_dir) };
        let path = PathBuf::from(OsStr::from_bytes(dir.to_bytes()));
        return path.is_absolute().then_some(path);
    }
}

/// The home: `$HOME` when absolute, else the password database's.
pub fn home_with(env: Env) -> Option<PathBuf> {
    absolute(env("HOME")).or_else(account_home)
}

/// [`home_with`] over the process environment.
pub fn home() -> Option<PathBuf> {
    home_with(&|k| std::env::var(k).ok())
}

/// `$XDG_CONFIG_HOME` when absolute, else `<home>/.config`.
pub fn config_home_with(env: Env) -> Option<PathBuf> {
    absolute(env("XDG_CONFIG_HOME")).or_else(|| home_with(env).map(|h| h.join(".config")))
}

/// `$XDG_STATE_HOME` when absolute, else `<home>/.local/state`.
pub fn state_home_with(env: Env) -> Option<PathBuf> {
    absolute(env("XDG_STATE_HOME")).or_else(|| home_with(env).map(|h| h.join(".local/state")))
}

/// Why a `~` path cannot be used.
pub const NO_HOME: &str = "`~` cannot be expanded: HOME is unset, empty or not an absolute \
     path and the password database has no home for this user";

/// `~` and `~/…` in the home; anything else as written (the caller places relative paths).
/// `~` is never expanded to a relative path: without a home it is an error, and so is
/// `~user`, which is not supported.
pub fn expand_tilde(raw: &str, home: Option<&Path>) -> Result<PathBuf, String> {
    let rest = if raw == "~" {
        ""
    } else if let Some(rest) = raw.strip_prefix("~/") {
        rest.trim_start_matches('/')
    } else if raw.starts_with('~') {
        return Err(format!(
            "`{raw}`: `~user` is not expanded; write the absolute path"
        ));
    } else {
        return Ok(PathBuf::from(raw));
    };
    match home.filter(|h| h.is_absolute()) {
        Some(h) if rest.is_empty() => Ok(h.to_path_buf()),
        Some(h) => Ok(h.join(rest)),
        None => Err(NO_HOME.to_string()),
    }
}

/// `path` with links resolved as far as it exists: component by component, each prefix that
/// exists is replaced by its canonical form, so `..` applies to what is really there and a
/// link met anywhere is followed. A relative path is taken from the current directory.
pub fn resolve_existing(path: &Path) -> PathBuf {
    let mut out = if path.is_absolute() {
        PathBuf::from("/")
    } else {
        std::fs::canonicalize(".").unwrap_or_else(|_| PathBuf::from("/"))
    };
    for c in path.components() {
        match c {
            Component::Normal(n) => {
                out.push(n);
                if let Ok(real) = std::fs::canonicalize(&out) {
                    out = real;
                }
            }
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

/// Does `path` resolve (links followed) to `dir` or below it?
pub fn resolves_inside(path: &Path, dir: &Path) -> bool {
    resolve_existing(path).starts_with(resolve_existing(dir))
}

/// Where a directory came from, for the warning that refuses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Derived {
    /// The directory as it would be read.
    pub path: PathBuf,
    /// The same directory derived from the password database's home alone: the account's own
    /// default, never refused.
    pub account_default: Option<PathBuf>,
    /// What it holds, for people: `plugins`, `skills`, `configuration`.
    pub kind: String,
    /// How the operator loads it anyway: `name it in plugins.dirs`, …
    pub to_name_it: String,
}

/// Why the derived directory `d` must not be read, as of now: it resolves inside `workspace`
/// and is not the account's own default.
pub fn refuse_derived(d: &Derived, workspace: &Path) -> Option<String> {
    if !d.path.is_absolute() {
        return Some(NO_HOME.to_string());
    }
    if !resolves_inside(&d.path, workspace) {
        return None;
    }
    if let Some(own) = &d.account_default {
        if resolve_existing(own) == resolve_existing(&d.path) {
            return None;
        }
    }
    Some(format!(
        "it resolves inside the workspace {} and nobody named it (it was derived from HOME or \
         an XDG variable); a repository does not bring its own {}: {}",
        resolve_existing(workspace).display(),
        d.kind,
        d.to_name_it
    ))
}

/// The guard for a kind of directory: each of `derived` (and any path below one) is refused
/// while [`refuse_derived`] says so; every other absolute path is allowed.
pub fn guard(derived: Vec<Derived>, workspace: PathBuf) -> Guard {
    Arc::new(move |path: &Path| {
        if !path.is_absolute() {
            return Some(NO_HOME.to_string());
        }
        derived
            .iter()
            .filter(|d| path.starts_with(&d.path))
            .find_map(|d| refuse_derived(d, &workspace))
    })
}

/// The default directory `<config home>/tackle/<leaf>` (`plugins`, `skills`): the derived
/// path, or a relative placeholder (always refused) when there is no config home at all.
pub fn default_config_dir(env: Env, leaf: &str, kind: &str, to_name_it: &str) -> Derived {
    let tail = Path::new("tackle").join(leaf);
    Derived {
        path: config_home_with(env)
            .map(|c| c.join(&tail))
            .unwrap_or_else(|| Path::new(".config").join(&tail)),
        account_default: account_home().map(|h| h.join(".config").join(&tail)),
        kind: kind.to_string(),
        to_name_it: to_name_it.to_string(),
    }
}

/// A configured `~/…` entry depends on `HOME`, so it counts as derived: refused like a
/// default when it resolves inside the workspace (unless it is where the password database's
/// home puts it). `None` for any other entry, which is used as written.
pub fn tilde_derived(
    raw: &str,
    home: Option<&Path>,
    kind: &str,
    to_name_it: &str,
) -> Option<Derived> {
    if !raw.starts_with('~') {
        return None;
    }
    let path = expand_tilde(raw, home).ok()?;
    Some(Derived {
        path,
        account_default: expand_tilde(raw, account_home().as_deref()).ok(),
        kind: kind.to_string(),
        to_name_it: to_name_it.to_string(),
    })
}

/// The workspace as `--workspace` names it, else the current directory.
pub fn workspace_or_cwd(flag: Option<&Path>) -> PathBuf {
    match flag {
        Some(p) => resolve_existing(p),
        None => resolve_existing(Path::new(".")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn only_an_absolute_home_counts_else_the_password_database() {
        let account = account_home();
        for home in ["", ".", "relative/dir", "~", "./x"] {
            let pairs: &'static [(&str, &str)] = Box::leak(Box::new([("HOME", home)]));
            assert_eq!(home_with(&env_of(pairs)), account, "HOME={home:?}");
        }
        assert_eq!(home_with(&env_of(&[])), account);
        assert_eq!(
            home_with(&env_of(&[("HOME", "/home/u")])),
            Some(PathBuf::from("/home/u"))
        );
        // Whatever the database says, it is never relative.
        assert!(account.as_deref().is_none_or(Path::is_absolute));
    }

    #[test]
    fn relative_xdg_values_are_ignored() {
        let e = env_of(&[
            ("HOME", "/h"),
            ("XDG_CONFIG_HOME", ".config"),
            ("XDG_STATE_HOME", "s"),
        ]);
        assert_eq!(config_home_with(&e), Some(PathBuf::from("/h/.config")));
        assert_eq!(state_home_with(&e), Some(PathBuf::from("/h/.local/state")));
        let e = env_of(&[
            ("HOME", "/h"),
            ("XDG_CONFIG_HOME", "/x"),
            ("XDG_STATE_HOME", "/y"),
        ]);
        assert_eq!(config_home_with(&e), Some(PathBuf::from("/x")));
        assert_eq!(state_home_with(&e), Some(PathBuf::from("/y")));
    }

    #[test]
    fn tilde_never_becomes_relative() {
        let h = Some(Path::new("/home/u"));
        assert_eq!(expand_tilde("~", h), Ok(PathBuf::from("/home/u")));
        assert_eq!(expand_tilde("~/a", h), Ok(PathBuf::from("/home/u/a")));
        assert_eq!(expand_tilde("~//etc", h), Ok(PathBuf::from("/home/u/etc")));
        assert_eq!(expand_tilde("rel", h), Ok(PathBuf::from("rel")));
        assert!(expand_tilde("~/a", None).is_err());
        assert!(expand_tilde("~", None).is_err());
        assert!(expand_tilde("~/a", Some(Path::new("rel"))).is_err());
        assert!(expand_tilde("~bob/a", h).is_err());
        assert!(expand_tilde("~é", h).is_err());
    }

    #[test]
    fn derived_dirs_inside_the_workspace_are_refused_links_followed() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().join("ws");
        let home = d.path().join("home");
        std::fs::create_dir_all(ws.join(".config/tackle/plugins")).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        let derived = |path: PathBuf| Derived {
            path,
            account_default: None,
            kind: "plugins".into(),
            to_name_it: "name it in `plugins.dirs` to load it".into(),
        };
        // HOME is the workspace, or below it: refused.
        let inside = derived(ws.join(".config/tackle/plugins"));
        let why = refuse_derived(&inside, &ws).expect("refused");
        assert!(why.contains("inside the workspace"), "{why}");
        assert!(refuse_derived(&derived(ws.join("nope/x")), &ws).is_some());
        // A link from the home into the workspace.
        std::os::unix::fs::symlink(ws.join(".config"), home.join(".config")).unwrap();
        assert!(refuse_derived(&derived(home.join(".config/tackle/plugins")), &ws).is_some());
        assert!(refuse_derived(&derived(home.join("x/../.config/tackle")), &ws).is_some());
        // Outside: allowed; relative: refused.
        assert!(refuse_derived(&derived(home.join("other")), &ws).is_none());
        assert!(refuse_derived(&derived(PathBuf::from(".config/tackle/plugins")), &ws).is_some());
        // The account's own default is never refused, even from inside the workspace.
        let own = Derived {
            account_default: Some(ws.join(".config/tackle/plugins")),
            ..inside.clone()
        };
        assert!(refuse_derived(&own, &ws).is_none());
        // The guard covers files below a derived dir, and only those.
        let g = guard(vec![inside], ws.clone());
        assert!(g(&ws.join(".config/tackle/plugins/a/plugin.json")).is_some());
        assert!(g(&ws.join("explicit")).is_none());
        assert!(g(Path::new("rel")).is_some());
    }

    #[test]
    fn resolve_existing_handles_missing_tails_and_dots() {
        let d = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(d.path()).unwrap();
        assert_eq!(resolve_existing(&d.path().join("a/b")), base.join("a/b"));
        assert_eq!(
            resolve_existing(&d.path().join("a/../b/./c")),
            base.join("b/c")
        );
        assert_eq!(resolve_existing(d.path()), base);
    }
}
