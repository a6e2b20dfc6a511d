//! The deprecated `security.shell_allowlist` / `shell_denylist` / `allowed_endpoints` keys:
//! through the real binary, the warning about them is printed once by a process that reads
//! the config many times (`tackle daemon` re-reads it for each fire), and it says what the code
//! does with them: which tools they bind and where they belong instead.

mod common;

use common::{run, FakeLlm, Sandbox};
use serde_json::Value;
use std::process::Stdio;
use std::time::{Duration, Instant};

const LEGACY: &str = "security:\n  shell_denylist: [rm]\n  allowed_endpoints: [api.github.com]\n";

#[test]
fn the_daemon_prints_the_legacy_keys_warning_once_across_its_fires() {
    let Some(llm) =
        FakeLlm::start("rules:\n  - name: any\n    respond: {content: \"tick done\"}\n")
    else {
        return;
    };
    let sb = Sandbox::new();
    let config = sb.config(&format!(
        "{}agents:\n  - name: default\n    backend: fake\n    model: fake-model\n{LEGACY}schedules:\n  min_interval_secs: 1\n",
        llm.backend_yaml("openai", true)
    ));
    let add = run(sb.tackle(
        &config,
        &[
            "tools",
            "call",
            "schedule_add",
            r#"{"id": "tick", "cron": "*/2 * * * * *", "task": "say tick", "max_fires": 2}"#,
            "--yes",
        ],
    ));
    assert_eq!(add.code, 0, "{add}");
    // A process that reads the config once prints it once too.
    assert_eq!(add.stderr.matches("deprecated").count(), 1, "{add}");

    let child = sb
        .tackle(&config, &["daemon"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn tackle daemon");
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        let r = run(sb.tackle(&config, &["schedule", "list", "--json"]));
        let list: Value = serde_json::from_str(&r.stdout).unwrap_or(Value::Null);
        let done = list[0]["fire_count"] == 2
            && list[0]["fires"]
                .as_array()
                .is_some_and(|f| f.iter().all(|f| f["status"] != "running"));
        if done || Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let pid = child.id().to_string();
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status();
    let out = child.wait_with_output().expect("wait daemon");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.matches("fire default/tick").count(),
        2,
        "both fires ran: {stderr}"
    );
    assert_eq!(stderr.matches("deprecated").count(), 1, "{stderr}");
}

#[test]
fn the_warning_names_the_tools_each_key_binds_and_where_it_belongs() {
    let sb = Sandbox::new();
    let config = sb.config(LEGACY);
    let r = run(sb.tackle(
        &config,
        &["tools", "call", "calculate", r#"{"expression": "1+1"}"#],
    ));
    assert_eq!(r.code, 0, "{r}");
    let warning = r
        .stderr
        .lines()
        .find(|l| l.contains("deprecated"))
        .unwrap_or_else(|| panic!("no warning: {r}"));
    for said in [
        "security.shell_denylist",
        "security.tool_policies.shell.grants.shell.deny",
        "security.allowed_endpoints",
        "security.tool_policies.web_fetch.grants.network.endpoints",
        "http_request",
    ] {
        assert!(warning.contains(said), "missing `{said}`: {warning}");
    }
    // Not set, so not named; and they bind only those tools, not every one.
    assert!(!warning.contains("shell_allowlist"), "{warning}");
    assert!(!warning.contains("every tool"), "{warning}");
}
