//! Repository config must not turn the `git` tool into code execution: a hook or an fsmonitor
//! command written into `.git/` by an earlier call does not run.

use std::sync::Arc;
use tackle_host::{HostConfig, NativeHostProvider};
use tackle_protocol::{
    CallScope, ExecCommand, ExecRequest, Grants, HostProvider, Tool, ToolContext, ToolHost,
};
use tackle_tools::dev::Git;

async fn sh(host: &dyn ToolHost, line: &str) {
    let out = host
        .exec(ExecRequest {
            command: ExecCommand::Shell(line.to_string()),
            cwd: None,
            timeout: std::time::Duration::from_secs(30),
            env: vec![
                ("GIT_AUTHOR_NAME".into(), "T".into()),
                ("GIT_AUTHOR_EMAIL".into(), "t@example.com".into()),
                ("GIT_COMMITTER_NAME".into(), "T".into()),
                ("GIT_COMMITTER_EMAIL".into(), "t@example.com".into()),
            ],
            stdin: None,
            max_output_bytes: 65_536,
        })
        .await
        .expect("exec");
    assert_eq!(out.exit_code, Some(0), "{line}: {}", out.stderr);
}

#[tokio::test]
async fn hooks_and_fsmonitor_from_the_repository_do_not_run() {
    if std::process::Command::new("git")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("SKIP: git is not installed");
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let provider = NativeHostProvider::new(HostConfig::new(state.path()));
    let scope = CallScope {
        tool: "git".into(),
        session_id: "s".into(),
        agent: "a".into(),
        workspace: ws.path().to_path_buf(),
        grants: Grants::default(),
        cancel: Default::default(),
        approved: false,
    };
    let host: Arc<dyn ToolHost> = provider.scoped(&scope);
    let root = host.workspace().to_path_buf();
    sh(
        host.as_ref(),
        "git init -q . && echo a > f && git add f && git commit -qm init",
    )
    .await;
    sh(
        host.as_ref(),
        "printf '#!/bin/sh\\ntouch hook-ran\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && git config core.fsmonitor 'touch fsmonitor-ran; false' && git config diff.external ./ext.sh && printf '#!/bin/sh\\ntouch extdiff-ran\\n' > ext.sh && chmod +x ext.sh && echo b > f",
    )
    .await;
    let cx = ToolContext::new(&scope, "test", host.clone());
    let env_author = [("user.name", "T"), ("user.email", "t@example.com")];
    for (k, v) in env_author {
        sh(host.as_ref(), &format!("git config {k} {v}")).await;
    }
    let status = Git
        .call(serde_json::json!({"action": "status"}), &cx)
        .await
        .expect("status");
    assert!(!status.is_error, "{}", status.content);
    let commit = Git
        .call(
            serde_json::json!({"action": "commit", "args": ["-am", "change"]}),
            &cx,
        )
        .await
        .expect("commit");
    assert!(!commit.is_error, "{}", commit.content);
    assert!(!root.join("hook-ran").exists(), "the pre-commit hook ran");
    assert!(
        !root.join("fsmonitor-ran").exists(),
        "the fsmonitor command ran"
    );
}
