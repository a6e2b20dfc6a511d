use super::*;
use crate::mock_host::{exec_ok, MockHost};
use serde_json::json;
use std::process::Command;
use std::sync::Arc;
use tackle_protocol::ErrorKind;

#[tokio::test]
async fn git_schema_keeps_its_names_and_refuses_unknown_or_missing_arguments() {
    let schema = Git.spec().parameters;
    crate::args::contract::assert_names(&schema, &["action", "args"], &["action"]);
    let valid = json!({"action": "log", "args": ["-1"]});
    crate::args::contract::assert_refusals(&Git, valid, &["action"]).await;
    assert_eq!(schema["properties"]["action"]["enum"], json!(ACTIONS));
    let accepts = crate::args::contract::accepts;
    assert!(!accepts(&schema, &json!({"action": "config"})));
    assert!(!accepts(&schema, &json!({"action": "log", "args": [1]})));
}

fn v(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// Replies for the probe and the config listing of a plain repository at `/ws`.
fn plain_repo(host: &MockHost) {
    host.reply_exec(Ok(exec_ok(0, "/ws/.git\n/ws/.git\n", "")));
    host.reply_exec(Ok(exec_ok(
        0,
        "local\0core.bare\nfalse\0global\0user.name\nMe\0",
        "",
    )));
}

fn env_value<'a>(env: &'a [(String, String)], key: &str) -> Option<&'a str> {
    env.iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// The command-line config in an environment, as (key, value) pairs.
fn settings(env: &[(String, String)]) -> Vec<(String, String)> {
    let n: usize = env_value(env, "GIT_CONFIG_COUNT")
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    (0..n)
        .filter_map(|i| {
            let k = env_value(env, &format!("GIT_CONFIG_KEY_{i}"))?;
            let v = env_value(env, &format!("GIT_CONFIG_VALUE_{i}"))?;
            Some((k.to_string(), v.to_string()))
        })
        .collect()
}

#[tokio::test]
async fn git_runs_as_argv_in_the_workspace_with_no_pager_editor_or_outside_config() {
    let host = Arc::new(MockHost::new());
    plain_repo(&host);
    host.reply_exec(Ok(exec_ok(0, "abc123 first\n", "")));
    let out = Git
        .call(
            json!({"action": "log", "args": ["--oneline", "-1"]}),
            &host.context(),
        )
        .await;
    assert!(out.is_ok_and(|o| o.content.contains("abc123 first")));
    let reqs = host.exec_requests();
    assert_eq!(reqs.len(), 3);
    assert_eq!(
        reqs[0].command,
        ExecCommand::Argv {
            program: "git".into(),
            args: v(repo::PROBE)
        }
    );
    assert_eq!(
        reqs[1].command,
        ExecCommand::Argv {
            program: "git".into(),
            args: v(repo::LISTING)
        }
    );
    let req = &reqs[2];
    assert_eq!(
        req.command,
        ExecCommand::Argv {
            program: "git".into(),
            args: v(&["log", "--no-ext-diff", "--no-textconv", "--oneline", "-1"])
        }
    );
    assert_eq!(req.cwd.as_deref(), Some(std::path::Path::new("/ws")));
    for (key, value) in [
        ("GIT_EDITOR", "true"),
        ("GIT_PAGER", "cat"),
        ("GIT_CONFIG_NOSYSTEM", "1"),
        ("GIT_CONFIG_GLOBAL", "/dev/null"),
        ("HOME", "/dev/null"),
        ("XDG_CONFIG_HOME", "/dev/null"),
        ("GIT_ATTR_NOSYSTEM", "1"),
        ("GIT_ATTR_SOURCE", config::EMPTY_TREE_SHA1),
        ("GIT_ALLOW_PROTOCOL", "file:https:http:ssh"),
        ("GIT_CEILING_DIRECTORIES", "/"),
    ] {
        assert_eq!(env_value(&req.env, key), Some(value), "{key}");
    }
    let set = settings(&req.env);
    assert!(set.contains(&("core.hooksPath".into(), "/dev/null".into())));
    assert!(set.contains(&("pager.log".into(), "false".into())));
    // The identity comes from the user's global config; nothing else of it does.
    assert!(set.contains(&("user.name".into(), "Me".into())));
    // The listing reads global config (for the identity); the probe does not.
    assert_eq!(
        env_value(&reqs[0].env, "GIT_CONFIG_GLOBAL"),
        Some("/dev/null")
    );
    assert_eq!(env_value(&reqs[1].env, "GIT_CONFIG_GLOBAL"), None);
}

#[tokio::test]
async fn refused_arguments_never_reach_git() {
    let host = Arc::new(MockHost::new());
    let err = Git
        .call(
            json!({"action": "diff", "args": ["--no-index", "/etc/passwd", "x"]}),
            &host.context(),
        )
        .await
        .err();
    assert_eq!(err.map(|e| e.kind), Some(ErrorKind::InvalidArguments));
    assert!(host.exec_requests().is_empty());
}

#[tokio::test]
async fn a_refused_key_in_the_repository_config_stops_the_call_naming_it() {
    let host = Arc::new(MockHost::new());
    host.reply_exec(Ok(exec_ok(0, "/ws/.git\n/ws/.git\n", "")));
    host.reply_exec(Ok(exec_ok(
        0,
        "local\0core.bare\nfalse\0local\0include.path\n/etc/evil\0",
        "",
    )));
    let err = Git
        .call(json!({"action": "status"}), &host.context())
        .await
        .err()
        .map(|e| e.message)
        .unwrap_or_default();
    assert!(
        err.contains("`include.path`") && err.contains(".git/config"),
        "{err}"
    );
    assert_eq!(host.exec_requests().len(), 2);
}

#[tokio::test]
async fn an_unreadable_global_config_only_costs_the_identity() {
    let host = Arc::new(MockHost::new());
    host.reply_exec(Ok(exec_ok(0, "/ws/.git\n/ws/.git\n", "")));
    host.reply_exec(Ok(exec_ok(
        128,
        "",
        "fatal: bad config line 1 in file ~/.gitconfig",
    )));
    host.reply_exec(Ok(exec_ok(0, "local\0core.bare\nfalse\0", "")));
    host.reply_exec(Ok(exec_ok(0, "clean\n", "")));
    let out = Git.call(json!({"action": "status"}), &host.context()).await;
    assert!(out.is_ok_and(|o| o.content.contains("clean")));
    let reqs = host.exec_requests();
    assert_eq!(reqs.len(), 4);
    assert_eq!(env_value(&reqs[1].env, "GIT_CONFIG_GLOBAL"), None);
    assert_eq!(
        env_value(&reqs[2].env, "GIT_CONFIG_GLOBAL"),
        Some("/dev/null")
    );
}

#[tokio::test]
async fn files_named_in_arguments_are_checked_before_git_runs() {
    let host = Arc::new(MockHost::new());
    host.deny_matching("/etc/passwd");
    let err = Git
        .call(
            json!({"action": "commit", "args": ["-F", "/etc/passwd"]}),
            &host.context(),
        )
        .await
        .err();
    assert_eq!(err.as_ref().map(|e| e.kind), Some(ErrorKind::Denied));
    assert!(err.is_some_and(|e| e.message.contains("/etc/passwd")));
    assert!(host.exec_requests().is_empty());
}

#[test]
fn planned_capabilities_name_files_and_local_repositories_for_the_dispatcher() {
    let host = Arc::new(MockHost::new());
    let cx = host.context();
    let caps = Git.planned_capabilities(
        &json!({"action": "commit", "args": ["-F", "/etc/passwd"]}),
        &cx,
    );
    assert!(caps.contains(&Capability::FileRead {
        path: "/etc/passwd".into()
    }));
    let caps = Git.planned_capabilities(
        &json!({"action": "push", "args": ["/srv/repo", "main"]}),
        &cx,
    );
    assert!(caps.contains(&Capability::FileWrite {
        path: "/srv/repo".into()
    }));
    assert!(caps.contains(&Capability::FileWrite {
        path: "/srv/repo.git".into()
    }));
    // A bare word may be a remote's name: checked in the call, not planned as a path.
    assert!(!caps.contains(&Capability::FileWrite {
        path: "/ws/main".into()
    }));
    let caps = Git.planned_capabilities(
        &json!({"action": "diff", "args": ["/etc/passwd", "x"]}),
        &cx,
    );
    assert!(caps.contains(&Capability::FileRead {
        path: "/etc/passwd".into()
    }));
}

#[test]
fn unknown_actions_are_refused_with_the_list() {
    let err = check_action("config")
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

/// Real git, run with the environment the tool gives it, in a repository whose own config
/// sets program-valued keys: what git resolves them to is the neutral value. These are the
/// keys git only uses with a terminal or a server asking for credentials, which a test
/// cannot provide; the others run for real in tests/git_hardening.rs.
mod effective {
    use super::*;

    fn git_available() -> bool {
        Command::new("git").arg("--version").output().is_ok()
    }

    fn repo_with(config: &[(&str, &str)]) -> Option<tempfile::TempDir> {
        let dir = tempfile::tempdir().ok()?;
        let ok = Command::new("git")
            .args(["init", "-q"])
            .current_dir(dir.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .status()
            .is_ok_and(|s| s.success());
        for (k, v) in config {
            Command::new("git")
                .args(["config", k, v])
                .current_dir(dir.path())
                .status()
                .ok()?;
        }
        ok.then_some(dir)
    }

    /// Run git as the tool would: its environment and forced settings, nothing inherited.
    fn tool_git(dir: &Path, args: &[&str], stdin: &str) -> (String, String) {
        let mut env = base_env(dir, false);
        env.extend(config_env(&forced()));
        let mut cmd = Command::new("git");
        cmd.args(args)
            .current_dir(dir)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .envs(env)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let Ok(mut child) = cmd.spawn() else {
            return (String::new(), String::new());
        };
        if let Some(mut input) = child.stdin.take() {
            use std::io::Write;
            let _ = input.write_all(stdin.as_bytes());
        }
        match child.wait_with_output() {
            Ok(o) => (
                String::from_utf8_lossy(&o.stdout).into_owned(),
                String::from_utf8_lossy(&o.stderr).into_owned(),
            ),
            Err(_) => (String::new(), String::new()),
        }
    }

    #[test]
    fn pager_editor_and_askpass_keys_resolve_to_harmless_programs() {
        if !git_available() {
            eprintln!("SKIP: git is not installed");
            return;
        }
        let evil = "touch pwned";
        let Some(dir) = repo_with(&[
            ("core.pager", evil),
            ("pager.log", evil),
            ("core.editor", evil),
            ("sequence.editor", evil),
            ("core.askPass", evil),
            ("core.sshCommand", evil),
            ("ssh.variant", "plink"),
            ("gpg.program", evil),
            ("gpg.ssh.program", evil),
            ("gpg.x509.program", evil),
            ("gpg.format", "ssh"),
            ("commit.gpgSign", "true"),
            ("tag.gpgSign", "true"),
            ("push.gpgSign", "true"),
            ("core.hooksPath", "hooks"),
            ("core.fsmonitor", evil),
        ]) else {
            return;
        };
        let d = dir.path();
        let var = |name: &str| tool_git(d, &["var", name], "").0.trim().to_string();
        assert_eq!(var("GIT_PAGER"), "cat");
        assert_eq!(var("GIT_EDITOR"), "true");
        assert_eq!(var("GIT_SEQUENCE_EDITOR"), "true");
        let get = |key: &str| {
            tool_git(d, &["config", "--get", key], "")
                .0
                .trim()
                .to_string()
        };
        for (key, want) in [
            ("core.askPass", "true"),
            ("core.sshCommand", "ssh"),
            ("ssh.variant", "ssh"),
            ("gpg.program", "gpg"),
            ("gpg.ssh.program", "ssh-keygen"),
            ("gpg.x509.program", "gpgsm"),
            ("gpg.format", "openpgp"),
            ("commit.gpgSign", "false"),
            ("tag.gpgSign", "false"),
            ("push.gpgSign", "false"),
            ("core.hooksPath", "/dev/null"),
            ("core.fsmonitor", "false"),
        ] {
            assert_eq!(get(key), want, "{key}");
        }
        assert!(!d.join("pwned").exists());
    }

    #[test]
    fn credential_helpers_from_the_repository_never_run() {
        if !git_available() {
            eprintln!("SKIP: git is not installed");
            return;
        }
        let Some(dir) = repo_with(&[]) else { return };
        let d = dir.path();
        let marker = |n: &str| format!("!touch {}", d.join(n).display());
        for (k, v) in [
            ("credential.helper", marker("helper-ran")),
            (
                "credential.https://example.com.helper",
                marker("url-helper-ran"),
            ),
        ] {
            let _ = Command::new("git")
                .args(["config", k, &v])
                .current_dir(d)
                .status();
        }
        // Without the tool's settings the helpers do run (the test can fail).
        let plain = Command::new("git")
            .args(["credential", "fill"])
            .current_dir(d)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_ASKPASS", "true")
            .stdin(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                if let Some(mut i) = c.stdin.take() {
                    i.write_all(b"protocol=https\nhost=example.com\n\n")?;
                }
                c.wait()
            });
        assert!(plain.is_ok());
        assert!(d.join("helper-ran").exists() && d.join("url-helper-ran").exists());
        for n in ["helper-ran", "url-helper-ran"] {
            let _ = std::fs::remove_file(d.join(n));
        }
        let _ = tool_git(
            d,
            &["credential", "fill"],
            "protocol=https\nhost=example.com\n\n",
        );
        assert!(!d.join("helper-ran").exists(), "credential.helper ran");
        assert!(
            !d.join("url-helper-ran").exists(),
            "credential.<url>.helper ran"
        );
    }

    #[test]
    fn home_pointing_at_dev_null_makes_git_say_nothing() {
        if !git_available() {
            eprintln!("SKIP: git is not installed");
            return;
        }
        let Some(dir) = repo_with(&[]) else { return };
        let (_, stderr) = tool_git(dir.path(), &["status"], "");
        assert_eq!(stderr, "");
    }
}
