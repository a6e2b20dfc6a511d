//! `git {action, args}`: git run with argv (no shell) in the workspace. The action comes
//! from a fixed list; destructive actions always ask for approval.
//!
//! The model can write every file in the workspace, `.git/config` and attributes files
//! included, so before git runs the tool works out what git would do beyond the
//! repository and neutralises or refuses it (docs/decisions/0008-git-tool-hardening.md):
//!
//! - system and global config are not read (`GIT_CONFIG_NOSYSTEM`, `GIT_CONFIG_GLOBAL`,
//!   `HOME` and `XDG_CONFIG_HOME` pointing at `/dev/null`); attributes come from the empty
//!   tree instead of the work tree (`GIT_ATTR_SOURCE`), so `.gitattributes` cannot select a
//!   driver, and the protocols git may use are fixed (`GIT_ALLOW_PROTOCOL`);
//! - a fixed set of settings ([`config::FORCED`]) is given at command-line precedence;
//! - the repository's config, and that of every repository nested in its work tree, is
//!   listed and every key sorted by [`config::examine`]: harmless, neutralised, or refused;
//! - the repository's directories, its alternate object stores, files named in arguments and
//!   repositories git would contact on this machine must be inside the grants.

mod args;
mod config;
mod remote;
mod repo;

use crate::core::finish_exec;
use crate::fs::resolve;
use args::{Access, ArgPlan};
use async_trait::async_trait;
use remote::Url;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tackle_protocol::{
    ApprovalMode, Capability, ErrorKind, ExecCommand, ExecRequest, HostError, ListRequest, Risk,
    Tool, ToolContext, ToolError, ToolOutput, ToolSpec,
};

pub(crate) const ACTIONS: &[&str] = &[
    "status",
    "diff",
    "log",
    "show",
    "branch",
    "add",
    "commit",
    "checkout",
    "switch",
    "restore",
    "reset",
    "stash",
    "tag",
    "push",
    "pull",
    "fetch",
    "clean",
    "rebase",
    "merge",
    "rm",
    "mv",
    "blame",
    "remote",
    "cherry-pick",
    "revert",
    "init",
    "ls-files",
    "rev-parse",
    "describe",
    "shortlog",
];

/// Actions that only read the repository.
const READ_ONLY: &[&str] = &[
    "status",
    "diff",
    "log",
    "show",
    "blame",
    "ls-files",
    "rev-parse",
    "describe",
    "shortlog",
];

/// Actions that never run git inside the repositories nested in the work tree.
const NO_NESTED: &[&str] = &[
    "log",
    "show",
    "shortlog",
    "rev-parse",
    "branch",
    "tag",
    "remote",
    "fetch",
    "push",
    "init",
    "blame",
    "ls-files",
];

/// Actions that contact remotes.
const NETWORK: &[&str] = &["fetch", "pull", "push", "remote"];

/// The protocols git may use; `ext`, `fd`, `git` (which can run `core.gitProxy`) and remote
/// helpers are not among them. This overrides every `protocol.*.allow` in config.
const PROTOCOLS: &str = "file:https:http:ssh";

/// Nested repositories checked before giving up (and refusing), and how deep.
const MAX_NESTED: usize = 64;
const MAX_NESTED_DEPTH: usize = 8;

const TIMEOUT_SECS: u64 = 300;
const MAX_STREAM_BYTES: usize = 24_000;

/// The `git` tool: one action from a fixed list, run with argv in the workspace.
pub struct Git;

// Arguments of `git`. The action stays a string checked against [`ACTIONS`], which the
// lists of read-only, network and nested-repository actions are written in.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The git subcommand.
    #[schemars(extend("enum" = ACTIONS))]
    action: String,
    /// Arguments after the subcommand, one per item, e.g. ["-m", "Fix typo"].
    #[serde(default)]
    args: Vec<String>,
}

#[async_trait]
impl Tool for Git {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "git",
            "Run a git subcommand in the workspace, e.g. {\"action\": \"log\", \"args\": [\"--oneline\", \"-5\"]}. \
             Arguments are passed as-is, without a shell. Editors and pagers are disabled, so give commit \
             messages with -m. The repository's config cannot make git run programs (hooks, filters, \
             external diffs and similar settings are turned off or refused), and files and repositories \
             named in arguments must be inside the workspace or the granted paths. Destructive actions \
             (push, clean, rebase, reset --hard, discarding changes, force-deleting branches) always ask \
             for approval.",
            "dev",
        )
        .risk(Risk::Medium)
        .approval(ApprovalMode::UnlessAutoApproved)
        .parameters(crate::args::schema::<Args>())
    }

    /// Destructive actions always ask; so do arguments that do not read, which may be one.
    fn approval_for(&self, args: &Value) -> Option<ApprovalMode> {
        crate::args::decide(args, Some(ApprovalMode::Always), |a: Args| {
            is_destructive(&a.action, &a.args).then_some(ApprovalMode::Always)
        })
    }

    fn planned_capabilities(&self, args: &Value, cx: &ToolContext) -> Vec<Capability> {
        let Ok(parsed) = serde_json::from_value::<Args>(args.clone()) else {
            return Vec::new();
        };
        let exec = |args: Vec<String>| Capability::Exec {
            program: "git".into(),
            args,
        };
        let own = |cmd: &[&str]| exec(cmd.iter().map(|s| s.to_string()).collect());
        let mut caps = vec![exec(argv(&parsed)), own(repo::PROBE), own(repo::LISTING)];
        if let Ok(plan) = args::analyse(&parsed.action, &parsed.args) {
            caps.extend(planned_files(&plan, cx));
        }
        caps
    }

    fn timeout(&self) -> Option<Duration> {
        Some(Duration::from_secs(TIMEOUT_SECS + 60))
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = crate::args::parse(args)?;
        check_action(&args.action)?;
        let plan = args::analyse(&args.action, &args.args)?;
        for (raw, access) in &plan.files {
            let why = format!("`{raw}` names a file git would use");
            repo::require(cx, &resolve(cx, raw), *access, &why).await?;
        }
        let prepared = prepare(cx, &args.action, &plan).await?;
        let ws = cx.host().workspace().to_path_buf();
        let mut env = base_env(&ws, false);
        env.push((
            "GIT_ATTR_SOURCE".into(),
            config::empty_tree(prepared.sha256).into(),
        ));
        let mut settings = forced();
        settings.push((format!("pager.{}", args.action), "false".into()));
        settings.extend(prepared.config);
        env.extend(config_env(&settings));
        let req = ExecRequest {
            command: ExecCommand::Argv {
                program: "git".into(),
                args: argv(&args),
            },
            cwd: Some(ws),
            timeout: Duration::from_secs(TIMEOUT_SECS),
            env,
            stdin: None,
            max_output_bytes: MAX_STREAM_BYTES,
            output_lines: None,
            program_sha256: None,
            data_values: Vec::new(),
        };
        let out = cx.host().exec(req).await?;
        finish_exec(&out, TIMEOUT_SECS)
    }
}

/// The file capabilities the arguments alone need, for the dispatcher's check before the
/// call. Repositories given by a bare word may be a remote's name, so only words that look
/// like paths are planned; `call` checks every one.
fn planned_files(plan: &ArgPlan, cx: &ToolContext) -> Vec<Capability> {
    let cap = |path: PathBuf, access: Access| match access {
        Access::Read => Capability::FileRead { path },
        Access::Write => Capability::FileWrite { path },
    };
    let mut caps: Vec<Capability> = plan
        .files
        .iter()
        .map(|(raw, access)| cap(resolve(cx, raw), *access))
        .collect();
    for (word, access) in &plan.repos {
        let pathlike = word.contains('/') || word.starts_with('.');
        if let (true, Ok(Url::Local(path))) = (pathlike, remote::classify(word)) {
            for candidate in remote::local_candidates(&path) {
                caps.push(cap(resolve(cx, &candidate), *access));
            }
        }
    }
    caps
}

/// The argv after `git`. Actions that can print diffs get `--no-ext-diff` and
/// `--no-textconv`, so no diff or text-conversion program named in config runs whatever
/// the attributes say.
fn argv(args: &Args) -> Vec<String> {
    let injected: &[&str] = match args.action.as_str() {
        "diff" | "log" | "show" => &["--no-ext-diff", "--no-textconv"],
        "blame" => &["--no-textconv"],
        _ => &[],
    };
    std::iter::once(args.action.clone())
        .chain(injected.iter().map(|s| s.to_string()))
        .chain(args.args.iter().cloned())
        .collect()
}

/// The environment of every git the tool runs. No editor, pager or credential prompt can
/// block the call waiting for a person; system config is never read, and the user's global
/// config only by the listing (`global`), which takes the identity from it. Git does not
/// look for a repository above `dir`.
fn base_env(dir: &Path, global: bool) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = [
        ("GIT_CONFIG_NOSYSTEM", "1"),
        ("GIT_CONFIG_SYSTEM", "/dev/null"),
        ("GIT_ATTR_NOSYSTEM", "1"),
        ("GIT_ALLOW_PROTOCOL", PROTOCOLS),
        ("GIT_EDITOR", "true"),
        ("GIT_SEQUENCE_EDITOR", "true"),
        ("GIT_PAGER", "cat"),
        ("PAGER", "cat"),
        ("GIT_TERMINAL_PROMPT", "0"),
        ("GIT_ASKPASS", "true"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    if !global {
        for key in ["GIT_CONFIG_GLOBAL", "HOME", "XDG_CONFIG_HOME"] {
            env.push((key.into(), "/dev/null".into()));
        }
    }
    if let Some(parent) = dir.parent() {
        env.push((
            "GIT_CEILING_DIRECTORIES".into(),
            parent.to_string_lossy().into_owned(),
        ));
    }
    env
}

fn forced() -> Vec<(String, String)> {
    config::FORCED
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Config at command-line precedence, above the repository's own.
fn config_env(settings: &[(String, String)]) -> Vec<(String, String)> {
    let mut env = vec![("GIT_CONFIG_COUNT".to_string(), settings.len().to_string())];
    for (i, (key, value)) in settings.iter().enumerate() {
        env.push((format!("GIT_CONFIG_KEY_{i}"), key.clone()));
        env.push((format!("GIT_CONFIG_VALUE_{i}"), value.clone()));
    }
    env
}

/// The environment of the tool's own probes in `dir`.
fn probe_env(dir: &Path, global: bool) -> Vec<(String, String)> {
    let mut env = base_env(dir, global);
    env.extend(config_env(&forced()));
    env
}

/// What the checks add to the run.
struct Prepared {
    /// Settings at command-line precedence besides [`config::FORCED`].
    config: Vec<(String, String)>,
    sha256: bool,
}

async fn prepare(cx: &ToolContext, action: &str, plan: &ArgPlan) -> Result<Prepared, ToolError> {
    let ws = cx.host().workspace().to_path_buf();
    let access = if READ_ONLY.contains(&action) {
        Access::Read
    } else {
        Access::Write
    };
    repo::check_redirects(cx, &ws, access, "the repository").await?;
    let main = repo::probe(cx, &ws, &probe_env(&ws, false)).await?;
    let config_file = main.as_ref().map_or_else(
        || ".git/config".to_string(),
        |d| repo::shown(&ws, &d.common_dir.join("config")),
    );
    // The user's global config is read only for the identity; if git cannot read it, the
    // repository's config alone is listed (and the identity is not taken from it).
    let entries = match repo::listing(cx, &ws, &probe_env(&ws, true)).await {
        Ok(entries) => entries,
        Err(e) if e.kind == ErrorKind::Failed => {
            repo::listing(cx, &ws, &probe_env(&ws, false)).await?
        }
        Err(e) => return Err(e),
    };
    let found = config::examine(
        &entries,
        &format!("the repository's config ({config_file})"),
    )?;
    let mut settings = found.overrides.clone();
    settings.extend(found.identity.iter().cloned());
    // Where git did not find a repository, `.git` is still checked: the sandbox may hide
    // what its parts link to, and the tool refuses rather than rely on that.
    if main.is_none() {
        let default = repo::Dirs {
            git_dir: ws.join(".git"),
            common_dir: ws.join(".git"),
        };
        repo::check_dirs(cx, &default, access, "the repository").await?;
    }
    if let Some(dirs) = &main {
        repo::check_dirs(cx, dirs, access, "the repository").await?;
        let top = work_tree(cx, &ws, dirs, found.worktree.as_deref(), access).await?;
        if !NO_NESTED.contains(&action) {
            nested(cx, top, dirs.clone(), found.sha256, access, &mut settings).await?;
        }
    }
    remotes(cx, action, plan, &found, main.as_ref(), &mut settings).await?;
    Ok(Prepared {
        config: settings,
        sha256: found.sha256,
    })
}

/// The work tree `core.worktree` names, which must be inside the grants; `dir` otherwise.
async fn work_tree(
    cx: &ToolContext,
    dir: &Path,
    dirs: &repo::Dirs,
    worktree: Option<&str>,
    access: Access,
) -> Result<PathBuf, ToolError> {
    let Some(value) = worktree else {
        return Ok(dir.to_path_buf());
    };
    let path = dirs.git_dir.join(value);
    let why = format!(
        "core.worktree in {} makes git work on {}",
        repo::shown(cx.host().workspace(), &dirs.common_dir.join("config")),
        path.display()
    );
    repo::require(cx, &path, access, &why).await?;
    Ok(path)
}

/// Check every repository nested in the work tree as a gitlink, and theirs: git runs itself
/// inside them (with their own config) to see whether they changed.
async fn nested(
    cx: &ToolContext,
    top: PathBuf,
    dirs: repo::Dirs,
    sha256: bool,
    access: Access,
    settings: &mut Vec<(String, String)>,
) -> Result<(), ToolError> {
    let ws = cx.host().workspace().to_path_buf();
    let mut queue = vec![(top, dirs, sha256, 0usize)];
    let mut checked = 0usize;
    while let Some((top, dirs, sha256, depth)) = queue.pop() {
        for link in repo::gitlinks(cx, &dirs, sha256).await? {
            let path = top.join(&link);
            let name = repo::shown(&ws, &path);
            let what = format!("the nested repository {name}");
            repo::check_redirects(cx, &path, access, &what).await?;
            let Some(sub) = repo::probe(cx, &path, &probe_env(&path, false)).await? else {
                continue;
            };
            checked += 1;
            if checked > MAX_NESTED || depth >= MAX_NESTED_DEPTH {
                return Err(ToolError::failed(format!(
                    "git is not run: the work tree holds more nested repositories than this tool checks ({MAX_NESTED}, {MAX_NESTED_DEPTH} deep)"
                )));
            }
            repo::check_dirs(cx, &sub, access, &what).await?;
            let entries = repo::listing(cx, &path, &probe_env(&path, false)).await?;
            let file = repo::shown(&ws, &sub.common_dir.join("config"));
            let found = config::examine(
                &entries,
                &format!("the config of the nested repository {name} ({file})"),
            )?;
            let sub_top = work_tree(cx, &path, &sub, found.worktree.as_deref(), access).await?;
            settings.extend(found.overrides);
            queue.push((sub_top, sub, found.sha256, depth + 1));
        }
    }
    Ok(())
}

/// Remotes: every configured one gets a known program for the other end, and when git may
/// contact them their URLs (and the repositories named in the arguments) are checked.
async fn remotes(
    cx: &ToolContext,
    action: &str,
    plan: &ArgPlan,
    found: &config::Findings,
    main: Option<&repo::Dirs>,
    settings: &mut Vec<(String, String)>,
) -> Result<(), ToolError> {
    let network = NETWORK.contains(&action) || found.partial_clone;
    let upload = config::remote_side_command("upload-pack");
    let receive = config::remote_side_command("receive-pack");
    let program = |urls: &[String], local: &str, default: &str| {
        let any_local = urls
            .iter()
            .any(|u| matches!(remote::classify(u), Ok(Url::Local(_))));
        if any_local { local } else { default }.to_string()
    };
    for (name, r) in &found.remotes {
        let push_urls = if r.push_urls.is_empty() {
            &r.urls
        } else {
            &r.push_urls
        };
        settings.push((
            format!("remote.{name}.uploadpack"),
            program(&r.urls, &upload, "git-upload-pack"),
        ));
        settings.push((
            format!("remote.{name}.receivepack"),
            program(push_urls, &receive, "git-receive-pack"),
        ));
        if !network {
            continue;
        }
        for url in &r.urls {
            check_url(cx, url, Access::Read, &format!("remote `{name}`")).await?;
        }
        if action == "push" {
            for url in push_urls {
                check_url(cx, url, Access::Write, &format!("remote `{name}`")).await?;
            }
        }
    }
    if network {
        if let Some(dirs) = main {
            legacy_remotes(cx, dirs).await?;
        }
    }
    for (word, access) in &plan.repos {
        if found.remotes.contains_key(word) || found.groups.contains(word) {
            continue;
        }
        match remote::classify(word) {
            Ok(Url::Local(path)) => {
                check_local(cx, &path, *access, &format!("`{word}`")).await?;
                settings.push((format!("remote.{word}.uploadpack"), upload.clone()));
                settings.push((format!("remote.{word}.receivepack"), receive.clone()));
            }
            Ok(Url::Network) => {}
            Err(why) => {
                return Err(ToolError::invalid_arguments(format!(
                    "git argument `{word}` is refused: {why}"
                )))
            }
        }
    }
    for (name, url) in &plan.new_remotes {
        if let Ok(Url::Local(_)) = remote::classify(url) {
            settings.push((format!("remote.{name}.uploadpack"), upload.clone()));
            settings.push((format!("remote.{name}.receivepack"), receive.clone()));
        }
    }
    Ok(())
}

async fn check_url(
    cx: &ToolContext,
    url: &str,
    access: Access,
    what: &str,
) -> Result<(), ToolError> {
    match remote::classify(url) {
        Ok(Url::Local(path)) => check_local(cx, &path, access, what).await,
        Ok(Url::Network) => Ok(()),
        Err(why) => Err(ToolError::invalid_arguments(format!(
            "git is not run: {what} has the URL `{url}`, which is refused: {why}; change it with `git remote set-url`"
        ))),
    }
}

/// A repository on this machine git would read or write: every path git may open for it,
/// and the repository's own directories, must be inside the grants.
async fn check_local(
    cx: &ToolContext,
    path: &str,
    access: Access,
    what: &str,
) -> Result<(), ToolError> {
    let ws = cx.host().workspace().to_path_buf();
    for candidate in remote::local_candidates(path) {
        let p = resolve(cx, &candidate);
        let why = format!("{what} is a repository git would open at {}", p.display());
        repo::require(cx, &p, access, &why).await?;
    }
    for candidate in remote::local_candidates(path) {
        let p = resolve(cx, &candidate);
        repo::check_redirects(cx, &p, access, what).await?;
        if let Some(dirs) = repo::probe(cx, &p, &probe_env(&p, false)).await? {
            let what = format!("the repository {} ({what})", repo::shown(&ws, &p));
            return repo::check_dirs(cx, &dirs, access, &what).await;
        }
    }
    Ok(())
}

/// Remotes defined by files in `.git/remotes` or `.git/branches` are not in the config this
/// tool checks.
async fn legacy_remotes(cx: &ToolContext, dirs: &repo::Dirs) -> Result<(), ToolError> {
    for sub in ["remotes", "branches"] {
        let dir = dirs.common_dir.join(sub);
        let req = ListRequest {
            path: dir.clone(),
            max_depth: Some(1),
            include_hidden: true,
            respect_gitignore: false,
            glob: None,
            max_entries: 100,
        };
        match cx.host().list(req).await {
            Ok(entries) if entries.iter().all(|e| e.is_dir) => {}
            Ok(_) => {
                return Err(ToolError::invalid_arguments(format!(
                    "git is not run: {} defines remotes in files, which this tool does not check; define them with `git remote add` and remove the files",
                    repo::shown(cx.host().workspace(), &dir)
                )))
            }
            Err(HostError::NotFound { .. }) => {}
            Err(e) => {
                return Err(ToolError::failed(format!(
                    "git is not run: could not check {}: {e}",
                    dir.display()
                )))
            }
        }
    }
    Ok(())
}

/// Refuse unknown actions with the list.
fn check_action(action: &str) -> Result<(), ToolError> {
    if ACTIONS.contains(&action) {
        return Ok(());
    }
    Err(ToolError::invalid_arguments(format!(
        "unknown git action `{action}`; use one of: {}",
        ACTIONS.join(", ")
    )))
}

/// Positional (non-option) arguments, stopping at nothing: `--` itself is counted separately.
fn positionals(args: &[String]) -> Vec<&str> {
    args.iter()
        .map(String::as_str)
        .filter(|a| !a.starts_with('-'))
        .collect()
}

fn has(args: &[String], flags: &[&str]) -> bool {
    args.iter().any(|a| flags.contains(&a.as_str()))
}

/// A short-option cluster (`-fd`) containing any of `letters`.
fn short_has(args: &[String], letters: &[char]) -> bool {
    args.iter()
        .filter(|a| a.starts_with('-') && !a.starts_with("--"))
        .any(|a| a.chars().skip(1).any(|c| letters.contains(&c)))
}

/// Actions that lose work or rewrite shared history, which always need a person's yes.
pub(crate) fn is_destructive(action: &str, args: &[String]) -> bool {
    match action {
        "push" | "clean" | "rebase" => true,
        "reset" => has(args, &["--hard", "--merge", "--keep"]),
        "checkout" => {
            let pos = positionals(args);
            // Restoring paths discards edits; `checkout BRANCH` alone does not.
            has(
                args,
                &["--", ".", "--force", "--patch", "--ours", "--theirs"],
            ) || short_has(args, &['f', 'p'])
                || pos.len() > 1
                || pos.iter().any(|p| p.contains('.') || p.contains('*'))
        }
        "restore" => !has(args, &["--staged", "-S"]) || has(args, &["--worktree", "-W"]),
        "switch" => {
            has(args, &["--discard-changes", "--force", "--force-create"])
                || short_has(args, &['f', 'C'])
        }
        "branch" => {
            short_has(args, &['D', 'M', 'C', 'f'])
                || has(args, &["--force"])
                || (has(args, &["--delete", "-d"]) && has(args, &["--force", "-f"]))
        }
        "stash" => args.first().is_some_and(|a| a == "drop" || a == "clear"),
        "tag" => has(args, &["--delete", "--force"]) || short_has(args, &['d', 'f']),
        "rm" => has(args, &["--force"]) || short_has(args, &['f']),
        _ => false,
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod approval_tests {
    use super::*;
    use serde_json::json;

    /// The per-call approval is read from the typed arguments: an omitted `args` is an empty
    /// list, and arguments that do not read as [`Args`] always ask.
    #[test]
    fn approval_follows_the_typed_arguments_and_unread_ones_always_ask() {
        let schema = Git.spec().parameters;
        let always = Some(ApprovalMode::Always);
        for (args, mode) in [
            (json!({"action": "push"}), always),
            (json!({"action": "clean", "args": ["-fd"]}), always),
            (json!({"action": "reset", "args": ["--hard"]}), always),
            (json!({"action": "restore"}), always),
            (json!({"action": "stash", "args": ["clear"]}), always),
            (json!({"action": "status"}), None),
            (json!({"action": "reset", "args": []}), None),
            (json!({"action": "stash", "args": ["list"]}), None),
            (json!({"action": "branch", "args": ["-d", "merged"]}), None),
        ] {
            assert!(crate::args::contract::accepts(&schema, &args), "{args}");
            assert_eq!(Git.approval_for(&args), mode, "{args}");
        }
        for unread in [
            json!({"action": "status", "args": ["-s"], "later": true}),
            json!({"args": ["--hard"]}),
            json!({"action": "status", "args": "-s"}),
        ] {
            assert_eq!(Git.approval_for(&unread), always, "{unread}");
        }
    }
}
