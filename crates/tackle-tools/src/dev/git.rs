//! `git {action, args}`: git run with argv (no shell) in the workspace. The action comes
//! from a fixed list; options that run programs, write files outside the work tree or set
//! config are refused; destructive actions always ask for approval.

use crate::core::finish_exec;
use crate::fs::parse_args;
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Value};
use std::time::Duration;
use tackle_protocol::{
    ApprovalMode, Capability, ExecCommand, ExecRequest, Risk, Tool, ToolContext, ToolError,
    ToolOutput, ToolSpec,
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

/// Long options that run a program, redirect git's own paths or write where the caller says.
/// Git accepts any unambiguous abbreviation of a long option, so a prefix of these is refused too.
const REFUSED_LONG: &[&str] = &[
    "--exec-path",
    "--upload-pack",
    "--receive-pack",
    "--exec",
    "--config",
    "--config-env",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--output",
    "--template",
    "--super-prefix",
    "--open-files-in-pager",
    "--ext-diff",
    "--textconv",
];

const TIMEOUT_SECS: u64 = 300;
const MAX_STREAM_BYTES: usize = 24_000;

pub struct Git;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    action: String,
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
             messages with -m. Destructive actions (push, clean, rebase, reset --hard, discarding \
             changes, force-deleting branches) always ask for approval.",
            "dev",
        )
        .risk(Risk::Medium)
        .approval(ApprovalMode::UnlessAutoApproved)
        .parameters(json!({
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": ACTIONS, "description": "The git subcommand."},
                "args": {"type": "array", "items": {"type": "string"}, "description": "Arguments after the subcommand, one per item, e.g. [\"-m\", \"Fix typo\"]."}
            },
            "required": ["action"],
            "additionalProperties": false
        }))
    }

    fn approval_for(&self, args: &Value) -> Option<ApprovalMode> {
        let action = args.get("action").and_then(Value::as_str)?;
        let list: Vec<String> = args
            .get("args")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        is_destructive(action, &list).then_some(ApprovalMode::Always)
    }

    fn planned_capabilities(&self, args: &Value, _cx: &ToolContext) -> Vec<Capability> {
        let Ok(parsed) = serde_json::from_value::<Args>(args.clone()) else {
            return Vec::new();
        };
        vec![Capability::Exec {
            program: "git".into(),
            args: argv(&parsed),
        }]
    }

    fn timeout(&self) -> Option<Duration> {
        Some(Duration::from_secs(TIMEOUT_SECS + 15))
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = parse_args(args)?;
        validate(&args.action, &args.args)?;
        let req = ExecRequest {
            command: ExecCommand::Argv {
                program: "git".into(),
                args: argv(&args),
            },
            cwd: Some(cx.host().workspace().to_path_buf()),
            timeout: Duration::from_secs(TIMEOUT_SECS),
            env: quiet_env(),
            stdin: None,
            max_output_bytes: MAX_STREAM_BYTES,
        };
        let out = cx.host().exec(req).await?;
        finish_exec(&out, TIMEOUT_SECS)
    }
}

/// The argv after `git`. Actions that can print diffs get `--no-ext-diff`, so a
/// `diff.external` program set in the repository's config never runs (an empty override
/// would make git try to run "").
fn argv(args: &Args) -> Vec<String> {
    let no_ext_diff = ["diff", "show", "log"]
        .contains(&args.action.as_str())
        .then(|| "--no-ext-diff".to_string());
    std::iter::once(args.action.clone())
        .chain(no_ext_diff)
        .chain(args.args.iter().cloned())
        .collect()
}

/// No editor, pager or credential prompt can block the call waiting for a person, and the
/// repository's own config cannot make git run a program: a model that can write
/// `.git/config` or a hook file must not turn a `git status` into code execution. Config given
/// through `GIT_CONFIG_COUNT` has command-line precedence, above the repository's.
fn quiet_env() -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = [
        ("GIT_EDITOR", "true"),
        ("GIT_SEQUENCE_EDITOR", "true"),
        ("GIT_PAGER", "cat"),
        ("PAGER", "cat"),
        ("GIT_TERMINAL_PROMPT", "0"),
        ("GIT_ASKPASS", "true"),
        ("GIT_CONFIG_NOSYSTEM", "1"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let forced = SAFE_CONFIG;
    env.push(("GIT_CONFIG_COUNT".to_string(), forced.len().to_string()));
    for (i, (key, value)) in forced.iter().enumerate() {
        env.push((format!("GIT_CONFIG_KEY_{i}"), (*key).to_string()));
        env.push((format!("GIT_CONFIG_VALUE_{i}"), (*value).to_string()));
    }
    env
}

/// Settings that would otherwise let repository config run programs. Filter and textconv
/// drivers are named by the repository and cannot be listed here; they still run inside the
/// host's sandbox (writes confined to the workspace).
const SAFE_CONFIG: &[(&str, &str)] = &[
    ("core.hooksPath", "/dev/null"),
    ("core.fsmonitor", "false"),
    ("core.pager", "cat"),
    ("core.editor", "true"),
    ("core.sshCommand", "ssh"),
    ("core.gitProxy", ""),
    ("core.askPass", "true"),
    ("sequence.editor", "true"),
    ("credential.helper", ""),
    ("protocol.ext.allow", "never"),
    ("protocol.fd.allow", "never"),
    ("gpg.program", "gpg"),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
];

/// Refuse unknown actions and arguments that inject config or run programs.
pub(crate) fn validate(action: &str, args: &[String]) -> Result<(), ToolError> {
    if !ACTIONS.contains(&action) {
        return Err(ToolError::invalid_arguments(format!(
            "unknown git action `{action}`; use one of: {}",
            ACTIONS.join(", ")
        )));
    }
    for (i, arg) in args.iter().enumerate() {
        if let Some(why) = refused(action, arg, args.get(i + 1)) {
            return Err(ToolError::invalid_arguments(format!(
                "git argument `{arg}` is refused: {why}"
            )));
        }
    }
    Ok(())
}

fn refused(action: &str, arg: &str, next: Option<&String>) -> Option<&'static str> {
    let name = arg.split('=').next().unwrap_or(arg);
    if name.len() > 2 && name.starts_with("--") && REFUSED_LONG.iter().any(|r| r.starts_with(name))
    {
        return Some(
            "it could run a program, change git's config or paths, or write outside the work tree",
        );
    }
    // `-c key=value` (or `-ckey=value`) is how config, and with it `core.pager`-style commands, is injected.
    if arg == "-c" && next.is_some_and(|n| n.contains('='))
        || (arg.starts_with("-c") && arg.len() > 2 && arg.contains('='))
    {
        return Some("setting git config from arguments is not allowed");
    }
    if action == "rebase" && (arg == "-x" || (arg.starts_with("-x") && !arg.starts_with("--"))) {
        return Some("`rebase -x` runs a shell command");
    }
    if arg.starts_with("ext::") || arg.starts_with("fd::") {
        return Some("the ext:: and fd:: transports run programs");
    }
    None
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
mod tests {
    use super::*;
    use crate::mock_host::{exec_ok, MockHost};
    use std::sync::Arc;
    use tackle_protocol::ErrorKind;

    fn v(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[tokio::test]
    async fn git_runs_as_argv_in_the_workspace_with_no_pager_or_editor() {
        let host = Arc::new(MockHost::new());
        host.reply_exec(Ok(exec_ok(0, "abc123 first\n", "")));
        let out = Git
            .call(
                json!({"action": "log", "args": ["--oneline", "-1"]}),
                &host.context(),
            )
            .await;
        assert!(out.is_ok_and(|o| o.content.contains("abc123 first")));
        let req = &host.exec_requests()[0];
        assert_eq!(
            req.command,
            ExecCommand::Argv {
                program: "git".into(),
                args: v(&["log", "--no-ext-diff", "--oneline", "-1"])
            }
        );
        assert!(req.env.contains(&("GIT_EDITOR".into(), "true".into())));
        assert_eq!(req.cwd.as_deref(), Some(std::path::Path::new("/ws")));
    }

    #[test]
    fn config_injection_and_program_running_options_are_refused() {
        let bad: &[(&str, &[&str])] = &[
            ("log", &["-c", "core.pager=sh -c id"]),
            ("fetch", &["--upload-pack=touch /tmp/x", "origin"]),
            ("fetch", &["--upload-pa=evil"]),
            ("push", &["--receive-pack", "evil"]),
            ("diff", &["--output=/etc/passwd"]),
            ("status", &["--exec-path=/tmp"]),
            ("log", &["--git-dir=/other/.git"]),
            ("rebase", &["-x", "rm -rf /", "main"]),
            ("rebase", &["--exec=make"]),
            ("fetch", &["ext::sh -c touch% /tmp/pwned"]),
            ("diff", &["--ext-diff"]),
        ];
        for (action, args) in bad {
            let err = validate(action, &v(args)).err().map(|e| e.kind);
            assert_eq!(err, Some(ErrorKind::InvalidArguments), "{action} {args:?}");
        }
    }

    #[test]
    fn ordinary_arguments_that_look_similar_are_allowed() {
        let good: &[(&str, &[&str])] = &[
            ("switch", &["-c", "feature/x"]),
            ("log", &["--oneline", "--exclude=refs/tmp", "-c"]),
            ("diff", &["--exit-code", "--stat"]),
            ("cherry-pick", &["-x", "abc123"]),
            ("commit", &["-m", "a=b in message"]),
        ];
        for (action, args) in good {
            assert!(validate(action, &v(args)).is_ok(), "{action} {args:?}");
        }
    }

    #[test]
    fn unknown_actions_are_refused_with_the_list() {
        let err = validate("config", &v(&["core.pager", "evil"]))
            .err()
            .map(|e| e.message)
            .unwrap_or_default();
        assert!(
            err.contains("unknown git action `config`") && err.contains("status"),
            "{err}"
        );
    }

    #[test]
    fn destructive_actions_always_need_approval() {
        let always: &[(&str, &[&str])] = &[
            ("push", &[]),
            ("reset", &["--hard", "HEAD~1"]),
            ("clean", &["-fd"]),
            ("checkout", &["--", "src/main.rs"]),
            ("checkout", &["main.rs"]),
            ("checkout", &["HEAD", "src"]),
            ("restore", &["src/lib.rs"]),
            ("restore", &["--staged", "--worktree", "x"]),
            ("branch", &["-D", "old"]),
            ("branch", &["--delete", "--force", "old"]),
            ("rebase", &["main"]),
            ("stash", &["drop"]),
            ("tag", &["-d", "v1"]),
            ("switch", &["--discard-changes", "main"]),
        ];
        for (action, args) in always {
            let a = json!({"action": action, "args": args});
            assert_eq!(
                Git.approval_for(&a),
                Some(ApprovalMode::Always),
                "{action} {args:?}"
            );
        }
    }

    #[test]
    fn everyday_actions_follow_the_normal_policy() {
        let normal: &[(&str, &[&str])] = &[
            ("status", &[]),
            ("checkout", &["main"]),
            ("checkout", &["-b", "feature"]),
            ("restore", &["--staged", "x"]),
            ("branch", &["-d", "merged"]),
            ("commit", &["-m", "x"]),
            ("reset", &["HEAD", "file"]),
            ("stash", &["pop"]),
        ];
        for (action, args) in normal {
            let a = json!({"action": action, "args": args});
            assert_eq!(Git.approval_for(&a), None, "{action} {args:?}");
        }
    }
}
