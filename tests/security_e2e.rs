//! The security contract (README, "Shell grants" and "The sandbox") through the real binary: every denial is kind `denied`
//! with exit 3 and a why; approval that cannot be asked is exit 4 at once; the sandbox holds.

mod common;

use common::{run, Run, Sandbox};
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;

fn call(sb: &Sandbox, config_yaml: &str, tool: &str, args: &str, extra: &[&str]) -> (Run, Value) {
    let cfg = sb.config(config_yaml);
    let mut argv = vec!["tools", "call", tool, args, "--json"];
    argv.extend_from_slice(extra);
    let r = run(sb.tackle(&cfg, &argv));
    let v = serde_json::from_str(r.stdout.trim()).unwrap_or_else(|e| panic!("not JSON ({e})\n{r}"));
    (r, v)
}

const DENY_RM: &str = "security:\n  tool_policies:\n    shell:\n      grants:\n        shell:\n          deny: [rm]\n";

#[test]
fn a_denied_command_anywhere_in_the_line_is_exit_3_naming_the_rule() {
    let sb = Sandbox::new();
    std::fs::write(sb.workspace().join("x"), "keep").unwrap();
    for line in [
        r"ls; \rm x",
        "ls && /bin/rm x",
        "echo $(rm x)",
        "bash -c 'rm x'",
        "env FOO=1 rm x",
        "find . -exec rm {} ;",
    ] {
        let args = serde_json::json!({ "command": line }).to_string();
        let (r, v) = call(&sb, DENY_RM, "shell", &args, &["--yes"]);
        assert_eq!(r.code, 3, "{line}\n{r}");
        assert_eq!(v["error"]["kind"], "denied", "{line}");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .contains("rm"),
            "{line}: {v}"
        );
    }
    assert!(sb.workspace().join("x").exists(), "nothing ran");
}

#[test]
fn a_denied_call_is_denied_before_approval_is_asked() {
    let sb = Sandbox::new();
    // No --yes and no TTY: if approval were asked first this would be exit 4.
    let (r, v) = call(&sb, DENY_RM, "shell", r#"{"command": "rm -rf /"}"#, &[]);
    assert_eq!(r.code, 3, "{r}");
    assert_eq!(v["error"]["kind"], "denied");
}

#[test]
fn numeric_ip_spellings_of_loopback_are_denied_for_web_fetch() {
    let sb = Sandbox::new();
    for url in [
        "http://2130706433/",
        "http://0x7f.1/",
        "http://0177.0.0.1/",
        "http://[::ffff:127.0.0.1]/",
        "http://localhost./",
    ] {
        let args = serde_json::json!({ "url": url }).to_string();
        let (r, v) = call(&sb, "", "web_fetch", &args, &["--yes"]);
        assert_eq!(r.code, 3, "{url}\n{r}");
        assert_eq!(v["error"]["kind"], "denied", "{url}");
    }
}

#[test]
fn reading_a_symlink_that_leaves_the_workspace_is_denied() {
    let sb = Sandbox::new();
    let outside = sb.dir.path().join("secret.txt");
    std::fs::write(&outside, "top secret").unwrap();
    std::os::unix::fs::symlink(&outside, sb.workspace().join("link.txt")).unwrap();
    let (r, v) = call(&sb, "", "read_file", r#"{"path": "link.txt"}"#, &[]);
    assert_eq!(r.code, 3, "{r}");
    assert_eq!(v["error"]["kind"], "denied");
    assert!(!r.stdout.contains("top secret"));
    let (inside, _) = {
        std::fs::write(sb.workspace().join("ok.txt"), "fine").unwrap();
        call(&sb, "", "read_file", r#"{"path": "ok.txt"}"#, &[])
    };
    assert_eq!(inside.code, 0, "{inside}");
}

#[test]
fn approval_that_cannot_be_asked_exits_4_at_once() {
    let sb = Sandbox::new();
    let (r, v) = call(
        &sb,
        "",
        "shell",
        r#"{"command": "echo hi > made.txt"}"#,
        &[],
    );
    assert_eq!(r.code, 4, "{r}");
    assert_eq!(v["error"]["kind"], "needs_approval");
    assert!(r.elapsed.as_secs() < 5);
    assert!(!sb.workspace().join("made.txt").exists());
}

#[test]
fn a_redirect_out_of_the_granted_path_is_refused_at_the_hop() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        // Answer every request with a redirect to /secret; count what was asked for.
        let mut paths = Vec::new();
        listener.set_nonblocking(false).ok();
        for stream in listener.incoming().take(2) {
            let Ok(mut s) = stream else { break };
            let mut line = String::new();
            let _ = BufReader::new(&s).read_line(&mut line);
            paths.push(line.split_whitespace().nth(1).unwrap_or("").to_string());
            let _ = write!(s, "HTTP/1.1 302 Found\r\nLocation: /secret\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        }
        paths
    });
    let sb = Sandbox::new();
    let policy = "security:\n  tool_policies:\n    web_fetch:\n      grants:\n        network:\n          allow_private: true\n          endpoints:\n            - host: 127.0.0.1\n              path_prefix: /ok\n";
    let url = format!("http://127.0.0.1:{port}/ok/start");
    let args = serde_json::json!({ "url": url }).to_string();
    let (r, v) = call(&sb, policy, "web_fetch", &args, &["--yes"]);
    assert_eq!(v["ok"], false, "{r}");
    assert_eq!(v["error"]["kind"], "denied", "{r}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("/secret"),
        "{v}"
    );
    // Unblock the server thread's second accept.
    let _ = std::net::TcpStream::connect(("127.0.0.1", port));
    let paths = server.join().unwrap();
    assert_eq!(paths.first().map(String::as_str), Some("/ok/start"));
    assert!(
        !paths.iter().any(|p| p == "/secret"),
        "the disallowed hop was requested: {paths:?}"
    );
}

#[test]
fn shell_writes_outside_the_workspace_are_stopped_by_the_sandbox() {
    let sb = Sandbox::new();
    let doctor = run(sb.tackle(&sb.config(""), &["doctor"]));
    if !doctor.stdout.contains("sandbox: enforced") {
        eprintln!(
            "SKIP: Landlock is not enforced on this kernel:\n{}",
            doctor.stdout
        );
        return;
    }
    let outside = sb.dir.path().join("outside.txt");
    let args =
        serde_json::json!({ "command": format!("echo x > {}", outside.display()) }).to_string();
    let (r, v) = call(&sb, "", "shell", &args, &["--yes"]);
    assert!(
        !outside.exists(),
        "the sandbox let a write outside the workspace through\n{r}"
    );
    assert_eq!(v["ok"], false, "a failed command is reported\n{r}");
    let inside = serde_json::json!({ "command": "echo x > inside.txt" }).to_string();
    let (r, _) = call(&sb, "", "shell", &inside, &["--yes"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(sb.workspace().join("inside.txt").exists());
}

#[test]
fn explain_prints_the_decision_without_running() {
    let sb = Sandbox::new();
    std::fs::write(sb.workspace().join("x"), "keep").unwrap();
    let cfg = sb.config(DENY_RM);
    let r = run(sb.tackle(
        &cfg,
        &[
            "tools",
            "call",
            "shell",
            r#"{"command": "rm x"}"#,
            "--explain",
        ],
    ));
    // The exit code mirrors the real call's: 3 for a denial.
    assert_eq!(r.code, 3, "{r}");
    assert!(r.stdout.contains("decision: Deny"), "{r}");
    assert!(r.stdout.contains("rm"), "{r}");
    assert!(sb.workspace().join("x").exists());
}

#[test]
fn legacy_denylist_is_honoured_with_a_warning() {
    let sb = Sandbox::new();
    let (r, v) = call(
        &sb,
        "security:\n  shell_denylist: [rm]\n",
        "shell",
        r#"{"command": "rm -f x"}"#,
        &["--yes"],
    );
    assert_eq!(r.code, 3, "{r}");
    assert_eq!(v["error"]["kind"], "denied");
    assert!(r.stderr.contains("deprecated"), "{r}");
}

#[test]
fn every_decision_lands_in_the_audit_log() {
    let sb = Sandbox::new();
    let _ = call(&sb, DENY_RM, "shell", r#"{"command": "rm x"}"#, &["--yes"]);
    let _ = call(&sb, DENY_RM, "calculate", r#"{"expression": "1+1"}"#, &[]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let records = rt.block_on(async {
        tackle_store::Store::open(&sb.state())
            .unwrap()
            .audit_tail(10)
            .await
            .unwrap()
    });
    assert_eq!(records.len(), 2, "{records:?}");
    assert_eq!(records[0].tool, "shell");
    assert_eq!(records[0].outcome, "denied");
    assert!(records[0].why.contains("rm"));
    assert_eq!(records[1].tool, "calculate");
    assert_eq!(records[1].outcome, "ok");
}

#[test]
fn each_workspace_tool_is_denied_outside_its_grant() {
    let sb = Sandbox::new();
    let outside = sb.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("f.txt"), "secret words").unwrap();
    let out = outside.display().to_string();
    let cases = [
        (
            "read_file",
            serde_json::json!({"path": format!("{out}/f.txt")}),
        ),
        (
            "write_file",
            serde_json::json!({"path": format!("{out}/new.txt"), "content": "x"}),
        ),
        (
            "edit_file",
            serde_json::json!({"path": format!("{out}/f.txt"), "old_text": "secret", "new_text": "public"}),
        ),
        ("list_files", serde_json::json!({"path": out})),
        (
            "grep",
            serde_json::json!({"pattern": "secret", "path": out}),
        ),
        ("find", serde_json::json!({"pattern": "*.txt", "path": out})),
        ("read_file", serde_json::json!({"path": "../outside/f.txt"})),
    ];
    for (tool, args) in cases {
        let (r, v) = call(
            &sb,
            "tools:\n  coding_tools: true\n",
            tool,
            &args.to_string(),
            &["--yes"],
        );
        assert_eq!(r.code, 3, "{tool} {args}\n{r}");
        assert_eq!(v["error"]["kind"], "denied", "{tool}");
        assert!(!r.stdout.contains("secret words"), "{tool} leaked the file");
    }
    assert!(!outside.join("new.txt").exists());
    assert_eq!(
        std::fs::read_to_string(outside.join("f.txt")).unwrap(),
        "secret words"
    );
    let deny_git = "security:\n  tool_policies:\n    git:\n      grants:\n        shell:\n          deny: [git push]\n";
    let (r, v) = call(
        &sb,
        deny_git,
        "git",
        r#"{"action": "push", "args": ["origin", "main"]}"#,
        &["--yes"],
    );
    assert_eq!(r.code, 3, "{r}");
    assert_eq!(v["error"]["kind"], "denied");
}
