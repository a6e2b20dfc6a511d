//! The OS sandbox through the real binary: an approved `shell` call with no shell rules at all
//! cannot read the user's secrets or Tackle's own config and state, cannot change anything
//! outside the workspace, cannot reach the network, cannot signal a process that is not its
//! own, and leaves no process behind; ordinary work (the workspace, `ls`, `git`, `cargo`)
//! still runs. Each check has a marker to lose and is skipped, with the reason printed, only
//! where this machine cannot create namespaces.

mod common;

use common::{run, Run, Sandbox};
use serde_json::Value;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

const SECRET: &str = "sk-test-TACKLE-CONFIG-SECRET-0123456789";

fn shell(sb: &Sandbox, config_yaml: &str, line: &str) -> (Run, Value) {
    let cfg = sb.config(config_yaml);
    let args = serde_json::json!({ "command": line }).to_string();
    let mut cmd = sb.tackle(&cfg, &["tools", "call", "shell", &args, "--yes", "--json"]);
    // The test's home is empty, so the real toolchain homes are named explicitly (a user's
    // own home has them in place).
    let real_home = std::env::var("HOME").unwrap_or_default();
    for (var, default) in [("RUSTUP_HOME", ".rustup"), ("CARGO_HOME", ".cargo")] {
        let value = std::env::var(var).unwrap_or_else(|_| format!("{real_home}/{default}"));
        cmd.env(var, value);
    }
    let r = run(cmd);
    let v = serde_json::from_str(r.stdout.trim()).unwrap_or_else(|e| panic!("not JSON ({e})\n{r}"));
    (r, v)
}

fn content(v: &Value) -> String {
    v["content"].as_str().unwrap_or_default().to_string()
}

/// Namespaces are available here, or the reason they are not.
fn namespaces(sb: &Sandbox) -> Result<(), String> {
    let doctor = run(sb.tackle(&sb.config(""), &["doctor"]));
    if doctor.stdout.contains("namespaces: enforced") {
        Ok(())
    } else {
        Err(doctor.stdout)
    }
}

macro_rules! require_namespaces {
    ($sb:expr) => {
        if let Err(why) = namespaces(&$sb) {
            eprintln!("SKIP: the namespace sandbox is not available here:\n{why}");
            return;
        }
    };
}

#[test]
fn secrets_in_the_home_directory_are_invisible() {
    let sb = Sandbox::new();
    require_namespaces!(sb);
    let home = sb.home();
    let secrets = [
        ".ssh/id_ed25519",
        ".aws/credentials",
        ".gnupg/private-keys-v1.d/key",
        ".config/tackle/config.yaml",
        ".netrc",
    ];
    for (i, s) in secrets.iter().enumerate() {
        let p = home.join(s);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, format!("MARKER-{i}")).unwrap();
    }
    let line = secrets
        .iter()
        .map(|s| format!("cat ~/{s} {}/{s}", home.display()))
        .collect::<Vec<_>>()
        .join("; ");
    let (r, _) = shell(&sb, "", &line);
    assert!(!r.stdout.contains("MARKER-"), "a secret leaked\n{r}");
    let (r, v) = shell(&sb, "", "ls -a ~ 2>&1");
    assert!(
        !content(&v).contains(".ssh"),
        "the home directory is listed\n{r}"
    );
}

#[test]
fn system_secrets_are_invisible() {
    let sb = Sandbox::new();
    require_namespaces!(sb);
    let (r, v) = shell(
        &sb,
        "",
        "cat /etc/shadow /etc/gshadow /etc/ssh/ssh_host_*_key /etc/ssl/private/* 2>/dev/null | wc -c",
    );
    let out = content(&v);
    assert!(
        out.contains("stdout:\n0\n"),
        "a system secret is readable\n{r}"
    );
}

#[test]
fn tackles_own_config_and_state_are_invisible() {
    let sb = Sandbox::new();
    require_namespaces!(sb);
    let cfg = sb.config(&format!(
        "backends:\n  - name: x\n    type: openai\n    api_base: http://127.0.0.1:9/v1\n    api_key: {SECRET}\n"
    ));
    // Both inside a granted root: the state dir and the config file sit in the workspace.
    let line = format!(
        "cat {cfg} | rev; base64 < {cfg}; ls -la {state}; cat {state}/*",
        cfg = cfg.display(),
        state = sb.state().display()
    );
    let grant = format!(
        "security:\n  tool_policies:\n    shell:\n      grants:\n        fs:\n          allow_read: [\"{}\"]\n",
        sb.dir.path().display()
    );
    let (r, v) = shell(&sb, &grant, &line);
    let reversed: String = SECRET.chars().rev().collect();
    let out = content(&v);
    assert!(
        !out.contains(SECRET) && !out.contains(&reversed),
        "the config leaked\n{r}"
    );
    assert!(!out.contains("tackle.db"), "the state dir is visible\n{r}");
    assert!(
        !out.contains("c2stdGVzdC1UQUNLTEU"),
        "the config leaked as base64\n{r}"
    );
}

#[test]
fn nothing_outside_the_workspace_changes() {
    let sb = Sandbox::new();
    require_namespaces!(sb);
    let outside = sb.dir.path().join("outside.txt");
    std::fs::write(&outside, "keep").unwrap();
    std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o644)).unwrap();
    let before = std::fs::metadata(&outside).unwrap();
    let o = outside.display();
    let line = format!(
        "echo x > {o}; echo y >> {o}; chmod 777 {o}; touch -d 2001-01-01 {o}; ln {o} hard; mv {o} moved; truncate -s0 {o}; rm -f {o}"
    );
    let _ = shell(&sb, "", &line);
    let after = std::fs::metadata(&outside).expect("the file outside survived");
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "keep");
    assert_eq!(after.permissions().mode() & 0o777, 0o644, "mode changed");
    assert_eq!(
        after.modified().unwrap(),
        before.modified().unwrap(),
        "times changed"
    );
    assert!(
        !sb.workspace().join("hard").exists(),
        "a hard link to an outside file was made"
    );
}

#[test]
fn no_network_without_a_network_grant() {
    let sb = Sandbox::new();
    require_namespaces!(sb);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let line = format!(
        "(exec 3<>/dev/tcp/127.0.0.1/{port}) && echo CONNECTED; curl -s -m 2 http://127.0.0.1:{port}/ && echo CURLED; true"
    );
    let (r, v) = shell(&sb, "", &line);
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        listener.accept().is_err(),
        "the command reached 127.0.0.1:{port}\n{r}"
    );
    assert!(!content(&v).contains("CONNECTED"), "{r}");
}

#[test]
fn processes_outside_the_call_cannot_be_signalled() {
    let sb = Sandbox::new();
    require_namespaces!(sb);
    let mut victim = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .expect("start a victim process");
    let _ = shell(
        &sb,
        "",
        &format!("kill -9 {}; kill -STOP {}", victim.id(), victim.id()),
    );
    let alive = victim.try_wait().expect("wait").is_none();
    let _ = victim.kill();
    let _ = victim.wait();
    assert!(alive, "the command killed a process that is not its own");
}

#[test]
fn no_process_outlives_its_call() {
    let sb = Sandbox::new();
    require_namespaces!(sb);
    let late = sb.workspace().join("late");
    let line = "setsid sh -c 'sleep 2; touch late' >/dev/null 2>&1 & nohup sh -c 'sleep 2; touch late' >/dev/null 2>&1 & echo started";
    let (r, v) = shell(&sb, "", line);
    assert!(content(&v).contains("started"), "{r}");
    std::thread::sleep(Duration::from_secs(4));
    assert!(!late.exists(), "a background process outlived the call");
}

#[test]
fn ordinary_work_still_runs_in_the_sandbox() {
    let sb = Sandbox::new();
    require_namespaces!(sb);
    std::fs::write(sb.workspace().join("in.txt"), "hello").unwrap();
    let git_init = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(sb.workspace())
        .status()
        .is_ok_and(|s| s.success());
    let line = "cat in.txt && echo written > out.txt && ls /usr/bin | head -1 && echo TMP=$TMPDIR && touch \"$TMPDIR/t\"";
    let (r, v) = shell(&sb, "", line);
    assert_eq!(r.code, 0, "{r}");
    assert!(content(&v).contains("hello"), "{r}");
    assert_eq!(
        std::fs::read_to_string(sb.workspace().join("out.txt")).unwrap_or_default(),
        "written\n"
    );
    if git_init {
        let (r, v) = shell(&sb, "", "git status --short && echo GIT-OK");
        assert!(content(&v).contains("GIT-OK"), "{r}");
    }
    let cargo = std::process::Command::new("cargo")
        .arg("--version")
        .output();
    if cargo.is_ok_and(|o| o.status.success()) {
        let passthrough = "security:\n  env_passthrough: [RUSTUP_HOME, CARGO_HOME]\n";
        let (r, v) = shell(&sb, passthrough, "cargo --version");
        assert_eq!(
            v["structured"]["exit_code"], 0,
            "cargo does not run in the sandbox\n{r}"
        );
        assert!(content(&v).contains("stdout:\ncargo "), "{r}");
    }
}

#[test]
fn the_seccomp_filter_refuses_each_blocked_system_call() {
    let sb = Sandbox::new();
    require_namespaces!(sb);
    if std::env::consts::ARCH != "x86_64"
        || std::process::Command::new("perl")
            .arg("-v")
            .output()
            .is_err()
    {
        eprintln!("SKIP: the per-call check uses perl's syscall() with x86_64 numbers");
        return;
    }
    let calls: Vec<(i64, &str)> = tackle_host::blocked_syscalls().collect();
    // Every blocked call fails with EPERM (1); clone3 (435) with ENOSYS (38) so libc falls back.
    let script = calls
        .iter()
        .map(|(nr, _)| {
            format!("$! = 0; syscall({nr}, 0, 0, 0, 0, 0); print \"{nr} \", $! + 0, \"\\n\";")
        })
        .collect::<String>()
        + "$! = 0; syscall(435, 0, 0); print \"435 \", $! + 0, \"\\n\";";
    let (r, v) = shell(&sb, "", &format!("perl -e '{script}'"));
    let out = content(&v);
    for (nr, why) in &calls {
        assert!(
            out.contains(&format!("{nr} 1\n")),
            "system call {nr} ({why}) is not refused with EPERM\n{r}"
        );
    }
    assert!(
        out.contains("435 38\n"),
        "clone3 is not refused with ENOSYS\n{r}"
    );
    // Ordinary programs that start threads and processes still work.
    let (r, v) = shell(
        &sb,
        "",
        "sort /etc/hostname | wc -l && ( sleep 0.1 & wait ) && echo OK",
    );
    assert!(content(&v).contains("OK"), "{r}");
}

/// A one-line HTTP server on 127.0.0.1 that counts the connections it gets.
fn tiny_server() -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{Read, Write};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = std::sync::Arc::clone(&hits);
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut buf = [0u8; 2048];
            let _ = conn.read(&mut buf);
            let _ = conn.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nConnection: close\r\n\r\nhello-sandbox",
            );
        }
    });
    (port, hits)
}

#[test]
fn a_network_grant_lets_through_its_endpoint_only_via_the_proxy() {
    let sb = Sandbox::new();
    require_namespaces!(sb);
    if std::process::Command::new("curl")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("SKIP: curl is not installed");
        return;
    }
    let (granted, granted_hits) = tiny_server();
    let (other, other_hits) = tiny_server();
    let grant = format!(
        "security:\n  tool_policies:\n    shell:\n      grants:\n        network:\n          endpoints: [{{host: \"127.0.0.1:{granted}\"}}]\n          allow_private: true\n"
    );
    let line = format!(
        "curl -s -m 5 http://127.0.0.1:{granted}/ ; echo; curl -s -m 5 -o /dev/null -w 'other=%{{http_code}}\\n' http://127.0.0.1:{other}/; (exec 3<>/dev/tcp/127.0.0.1/{other}) 2>/dev/null && echo DIRECT"
    );
    let (r, v) = shell(&sb, &grant, &line);
    let out = content(&v);
    assert!(
        out.contains("hello-sandbo"),
        "the granted endpoint is not reachable\n{r}"
    );
    assert!(
        out.contains("other=403"),
        "the proxy did not refuse the other port\n{r}"
    );
    assert!(!out.contains("DIRECT"), "a direct connection got out\n{r}");
    std::thread::sleep(Duration::from_millis(200));
    assert!(granted_hits.load(std::sync::atomic::Ordering::SeqCst) >= 1);
    assert_eq!(
        other_hits.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "the other port was reached\n{r}"
    );
}
