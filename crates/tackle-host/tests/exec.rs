//! Processes through the host: shell checks, scrubbed env, caps, timeouts, cancel, sandbox.

mod common;

use common::{exists, is_denied, sh, Fixture};
use std::time::{Duration, Instant};
use tackle_host::sandbox_status;
use tackle_protocol::{ExecCommand, ExecRequest, Grants, HostError, ShellGrant};

fn deny(words: &[&str]) -> Grants {
    Grants {
        shell: Some(ShellGrant {
            allow: Vec::new(),
            deny: words.iter().map(|w| w.to_string()).collect(),
            ..Default::default()
        }),
        ..Grants::default()
    }
}

#[tokio::test]
async fn shell_runs_in_the_workspace_and_reports_exit_code() {
    let f = Fixture::new();
    let out = f
        .host(Grants::default())
        .exec(sh("pwd; echo oops >&2; exit 3"))
        .await
        .unwrap();
    assert_eq!(out.stdout.trim(), f.ws().display().to_string());
    assert_eq!(out.stderr.trim(), "oops");
    assert_eq!(out.exit_code, Some(3));
    assert!(!out.timed_out && !out.truncated);
}

#[tokio::test]
async fn a_denied_line_never_runs_any_part() {
    let f = Fixture::new();
    let r = f
        .host(deny(&["rm"]))
        .exec(sh("touch ran.txt; rm -f nothing"))
        .await;
    assert!(is_denied(&r), "{r:?}");
    assert!(!exists(&f.ws().join("ran.txt")));
}

#[tokio::test]
async fn argv_is_passed_without_shell_interpretation() {
    let f = Fixture::new();
    let req = ExecRequest {
        command: ExecCommand::Argv {
            program: "echo".into(),
            args: vec!["$(touch pwned)".into(), ";".into()],
        },
        ..sh("")
    };
    let out = f.host(Grants::default()).exec(req).await.unwrap();
    assert_eq!(out.stdout, "$(touch pwned) ;\n");
    assert!(!exists(&f.ws().join("pwned")));
}

#[tokio::test]
async fn environment_is_scrubbed_to_the_allowlist_plus_passthrough() {
    // SAFETY (edition 2021: safe fn): nextest runs each test in its own process.
    std::env::set_var("TACKLE_TEST_API_KEY", "sk-secret");
    std::env::set_var("TACKLE_PASS_ME", "visible");
    let f = Fixture::new();
    let mut config = f.config();
    config.env_passthrough = vec!["TACKLE_PASS_*".into()];
    let mut req = sh("env");
    req.env = vec![("EXTRA".into(), "1".into())];
    let out = f
        .host_with(config, Grants::default())
        .exec(req)
        .await
        .unwrap();
    assert!(!out.stdout.contains("sk-secret"), "{}", out.stdout);
    assert!(out.stdout.contains("TACKLE_PASS_ME=visible"));
    assert!(out.stdout.contains("EXTRA=1"));
    assert!(out.stdout.lines().any(|l| l.starts_with("PATH=")));
    let tmp = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("TMPDIR="))
        .unwrap();
    let state = std::fs::canonicalize(f.state.path()).unwrap();
    assert!(
        std::fs::canonicalize(tmp).unwrap().starts_with(state),
        "{tmp}"
    );
}

#[tokio::test]
async fn loader_variables_from_a_tool_are_refused() {
    let f = Fixture::new();
    let mut req = sh("true");
    req.env = vec![("LD_PRELOAD".into(), "/tmp/evil.so".into())];
    assert!(matches!(
        f.host(Grants::default()).exec(req).await,
        Err(HostError::Invalid(_))
    ));
}

#[tokio::test]
async fn output_is_capped_while_streaming_and_the_rest_is_drained() {
    let f = Fixture::new();
    let mut req = sh("head -c 3000000 /dev/zero | tr '\\0' 'a'; echo done >&2");
    req.max_output_bytes = 1000;
    let out = f.host(Grants::default()).exec(req).await.unwrap();
    assert_eq!(out.stdout.len(), 1000);
    assert!(out.truncated);
    assert_eq!(out.stderr.trim(), "done");
    assert_eq!(out.exit_code, Some(0));
}

#[tokio::test]
async fn stdin_reaches_the_command() {
    let f = Fixture::new();
    let mut req = sh("tr a-z A-Z");
    req.stdin = Some(b"hello".to_vec());
    assert_eq!(
        f.host(Grants::default()).exec(req).await.unwrap().stdout,
        "HELLO"
    );
}

/// A sleep only this test starts: its argument marks the process on the host, whatever PID
/// namespace it runs in.
fn unique_sleep() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("30.{}{}", std::process::id(), nanos % 1_000_000)
}

/// Whether a running (not zombie) process on the host has `marker` in its command line.
fn marked_process_runs(marker: &str) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    dir.flatten().any(|e| {
        let p = e.path();
        let cmdline = std::fs::read(p.join("cmdline")).unwrap_or_default();
        let runs = std::fs::read_to_string(p.join("stat"))
            .ok()
            .and_then(|st| {
                st.rsplit(')')
                    .next()
                    .map(|r| !r.trim_start().starts_with('Z'))
            })
            .unwrap_or(false);
        runs && String::from_utf8_lossy(&cmdline).contains(marker)
    })
}

async fn wait_gone(marker: &str) -> bool {
    for _ in 0..50 {
        if !marked_process_runs(marker) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test]
async fn timeout_kills_the_whole_process_group() {
    let f = Fixture::new();
    let bg = unique_sleep();
    let mut req = sh(&format!("sleep {bg} & sleep 30"));
    req.timeout = Duration::from_millis(700);
    let started = Instant::now();
    let out = f.host(Grants::default()).exec(req).await.unwrap();
    assert!(out.timed_out);
    assert_eq!(out.exit_code, None);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(
        wait_gone(&bg).await,
        "background child `sleep {bg}` survived the timeout"
    );
}

#[tokio::test]
async fn cancel_token_stops_the_command() {
    let f = Fixture::new();
    let host = f.host(Grants::default());
    let cancel = f.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let fg = unique_sleep();
    let r = host.exec(sh(&format!("sleep {fg}; true"))).await;
    assert!(matches!(r, Err(HostError::Cancelled)), "{r:?}");
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(wait_gone(&fg).await, "`sleep {fg}` survived the cancel");
}

#[tokio::test]
async fn cwd_must_be_inside_the_grant() {
    let f = Fixture::new();
    let mut req = sh("pwd");
    req.cwd = Some(f.outside());
    assert!(is_denied(&f.host(Grants::default()).exec(req).await));
    std::fs::create_dir(f.ws().join("sub")).unwrap();
    let mut req = sh("pwd");
    req.cwd = Some("sub".into());
    let out = f.host(Grants::default()).exec(req).await.unwrap();
    assert_eq!(out.stdout.trim(), f.ws().join("sub").display().to_string());
}

#[tokio::test]
async fn sandbox_confines_writes_to_the_workspace_and_session_tmpdir() {
    let status = sandbox_status();
    if !status.is_enforced() {
        eprintln!("skipping: Landlock is unavailable here ({status})");
        return;
    }
    let f = Fixture::new();
    let host = f.host(Grants::default());
    let outside = f.outside().join("outside-file");
    let line = format!("echo x > '{}'", outside.display());
    let out = host.exec(sh(&line)).await.unwrap();
    assert_ne!(out.exit_code, Some(0), "write outside succeeded: {out:?}");
    assert!(!exists(&outside));
    let out = host
        .exec(sh(
            "echo x > inside.txt && echo y > \"$TMPDIR/t\" && cat /etc/passwd >/dev/null",
        ))
        .await
        .unwrap();
    assert_eq!(out.exit_code, Some(0), "{out:?}");
    assert!(exists(&f.ws().join("inside.txt")));
}

#[tokio::test]
async fn unknown_program_is_not_found() {
    let f = Fixture::new();
    let req = ExecRequest {
        command: ExecCommand::Argv {
            program: "definitely-not-a-program-tackle".into(),
            args: vec![],
        },
        ..sh("")
    };
    assert!(matches!(
        f.host(Grants::default()).exec(req).await,
        Err(HostError::NotFound { .. })
    ));
}

#[tokio::test]
async fn dropping_the_call_kills_the_whole_process_group() {
    let f = Fixture::new();
    let host = f.host(Grants::default());
    let bg = unique_sleep();
    let line = format!("sleep {bg} & sleep 30");
    let r = tokio::time::timeout(Duration::from_millis(500), host.exec(sh(&line))).await;
    assert!(r.is_err(), "the command should still have been running");
    assert!(
        wait_gone(&bg).await,
        "background child `sleep {bg}` survived the dropped call"
    );
}

#[tokio::test]
async fn end_session_removes_the_session_tmpdir() {
    let f = Fixture::new();
    let provider = tackle_host::NativeHostProvider::new(f.config());
    let scope = tackle_protocol::CallScope {
        tool: "shell".into(),
        session_id: "s9".into(),
        agent: "a".into(),
        workspace: f.ws(),
        grants: Grants::default(),
        cancel: Default::default(),
        approved: false,
    };
    let host = provider.host(&scope);
    let out = tackle_protocol::ToolHost::exec(&host, sh("touch \"$TMPDIR/x\"; echo $TMPDIR"))
        .await
        .unwrap();
    let tmp = std::path::PathBuf::from(out.stdout.trim());
    assert!(tmp.join("x").exists());
    provider.end_session("s9").unwrap();
    assert!(!tmp.exists());
    provider.end_session("s9").unwrap();
}
