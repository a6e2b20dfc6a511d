//! The approval queue end to end: `tackle daemon` fires a schedule whose call needs approval,
//! the call waits in the queue, and `tackle approvals` in another process answers it. Nothing
//! runs before the answer, the first answer wins, a no runs nothing, no answer ends
//! `needs_approval`, and the audit log names who answered.

mod common;

use common::{run, FakeLlm, Sandbox};
use serde_json::Value;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

const AGENT: &str = "agents:\n  - name: default\n    backend: fake\n    model: fake-model\n";

/// Each task asks for one shell command; once its result (made, refused, unanswered) is in,
/// the model stops.
const RULES: &str = concat!(
    "rules:\n",
    "  - name: made\n    when: {tool_result_contains: \"made-file\"}\n    respond: {content: \"finished\"}\n",
    "  - name: refused\n    when: {tool_result_contains: \"not approved\"}\n    respond: {content: \"refused\"}\n",
    "  - name: unanswered\n    when: {tool_result_contains: \"no one answered\"}\n    respond: {content: \"unanswered\"}\n",
    "  - name: allow\n    when: {messages_contain: \"make the allow file\"}\n    respond:\n      tool_calls:\n        - {name: shell, arguments: {command: \"touch allowed.txt && echo made-file\"}}\n",
    "  - name: deny\n    when: {messages_contain: \"make the deny file\"}\n    respond:\n      tool_calls:\n        - {name: shell, arguments: {command: \"touch denied.txt && echo made-file\"}}\n",
    "  - name: lapse\n    when: {messages_contain: \"make the lapsed file\"}\n    respond:\n      tool_calls:\n        - {name: shell, arguments: {command: \"touch lapsed.txt && echo made-file\"}}\n",
);

fn config(sb: &Sandbox, llm: &FakeLlm, timeout_secs: u64) -> std::path::PathBuf {
    sb.config(&format!(
        "{}{AGENT}schedules:\n  min_interval_secs: 1\n  approval_timeout_secs: {timeout_secs}\n",
        llm.backend_yaml("openai", true)
    ))
}

fn add(sb: &Sandbox, config: &Path, name: &str, task: &str) {
    let r = run(sb.tackle(
        config,
        &[
            "schedule",
            "add",
            name,
            "--cron",
            "*/2 * * * * *",
            "--task",
            task,
            "--max-fires",
            "1",
        ],
    ));
    assert_eq!(r.code, 0, "{r}");
}

fn daemon(sb: &Sandbox, config: &Path) -> Child {
    sb.tackle(config, &["daemon"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn tackle daemon")
}

/// SIGTERM, then the exit code and stderr.
fn stop(child: Child) -> (Option<i32>, String) {
    let pid = child.id().to_string();
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status();
    let out = child.wait_with_output().expect("wait daemon");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json_of(sb: &Sandbox, config: &Path, args: &[&str]) -> Vec<Value> {
    let r = run(sb.tackle(config, args));
    assert_eq!(r.code, 0, "{r}");
    serde_json::from_str::<Value>(&r.stdout)
        .unwrap_or_else(|e| panic!("{e}\n{r}"))
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Polls `args` (a `--json` listing) until `done` holds or `limit` passes.
fn wait_for(
    sb: &Sandbox,
    config: &Path,
    args: &[&str],
    limit: Duration,
    done: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let deadline = Instant::now() + limit;
    loop {
        let list = json_of(sb, config, args);
        if done(&list) || Instant::now() > deadline {
            return list;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn with_preview<'a>(list: &'a [Value], needle: &str) -> Option<&'a Value> {
    list.iter()
        .find(|a| a["preview"].as_str().is_some_and(|p| p.contains(needle)))
}

/// The fire records of schedule `name` with `status`.
fn fires(sb: &Sandbox, config: &Path, name: &str, status: &str) -> Vec<Value> {
    json_of(sb, config, &["schedule", "list", "--json"])
        .iter()
        .filter(|s| s["name"] == name)
        .flat_map(|s| s["fires"].as_array().cloned().unwrap_or_default())
        .filter(|f| f["status"] == status)
        .collect()
}

fn wait_fire(sb: &Sandbox, config: &Path, name: &str, status: &str) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let found = fires(sb, config, name, status);
        if !found.is_empty() || Instant::now() > deadline {
            return found;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_fired_call_waits_for_an_answer_from_another_process_and_the_first_answer_wins() {
    let Some(llm) = FakeLlm::start(RULES) else {
        return;
    };
    let sb = Sandbox::new();
    let config = config(&sb, &llm, 120);
    add(&sb, &config, "allowit", "make the allow file");
    add(&sb, &config, "denyit", "make the deny file");
    let child = daemon(&sb, &config);
    let list = &["approvals", "list", "--json"];
    let pending = wait_for(&sb, &config, list, Duration::from_secs(40), |l| {
        with_preview(l, "allowed.txt").is_some() && with_preview(l, "denied.txt").is_some()
    });
    let (Some(allow), Some(deny)) = (
        with_preview(&pending, "allowed.txt").cloned(),
        with_preview(&pending, "denied.txt").cloned(),
    ) else {
        let (_, stderr) = stop(child);
        panic!("both calls queued: {pending:?}\n{stderr}");
    };
    for a in [&allow, &deny] {
        assert_eq!(a["status"], "pending", "{a}");
        assert_eq!(a["tool"], "shell", "{a}");
        assert_eq!(a["agent"], "default", "{a}");
        assert_eq!(a["approvers"], serde_json::json!(["approve"]), "{a}");
        // The preview is the prompt's: the command and the grants it would run with.
        assert!(
            a["preview"]
                .as_str()
                .is_some_and(|p| p.contains("if allowed, it runs with:")),
            "{a}"
        );
    }
    // Waiting is not running: nothing is written while the approval is pending.
    std::thread::sleep(Duration::from_secs(1));
    assert!(!sb.workspace().join("allowed.txt").exists());
    assert!(!sb.workspace().join("denied.txt").exists());

    let allow_id = allow["id"].as_str().unwrap_or_default();
    let r = run(sb.tackle(&config, &["approvals", "allow", allow_id]));
    assert_eq!(r.code, 0, "{r}");
    let ok = wait_fire(&sb, &config, "allowit", "ok");
    assert_eq!(ok.len(), 1, "the allowed fire completes");
    assert!(sb.workspace().join("allowed.txt").exists());

    // A second answer loses, and is told what won.
    let late = run(sb.tackle(&config, &["approvals", "deny", allow_id]));
    assert_eq!(late.code, 1, "{late}");
    assert!(
        late.stderr.contains("already answered: allowed by cli:"),
        "{late}"
    );

    let deny_id = deny["id"].as_str().unwrap_or_default();
    let r = run(sb.tackle(&config, &["approvals", "deny", deny_id]));
    assert_eq!(r.code, 0, "{r}");
    let failed = wait_fire(&sb, &config, "denyit", "failed");
    assert_eq!(
        failed.len(),
        1,
        "{:?}",
        json_of(&sb, &config, &["schedule", "list", "--json"])
    );
    assert!(
        failed[0]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("declined")),
        "{failed:?}"
    );
    assert!(!sb.workspace().join("denied.txt").exists());

    let unknown = run(sb.tackle(&config, &["approvals", "allow", "000000000000000000000000"]));
    assert_eq!(unknown.code, 6, "{unknown}");
    assert!(
        json_of(&sb, &config, list).is_empty(),
        "nothing left pending"
    );

    let (code, stderr) = stop(child);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!("tackle approvals allow {allow_id}")),
        "the daemon says what waits and how to answer: {stderr}"
    );

    // The audit log names who answered, yes and no.
    let audit = json_of(&sb, &config, &["audit", "--tool", "shell", "--json"]);
    let by = |outcome: &str| {
        audit
            .iter()
            .find(|r| r["outcome"] == outcome)
            .and_then(|r| r["approver"].as_str())
            .unwrap_or_default()
            .to_string()
    };
    assert!(by("ok").starts_with("queue:cli:"), "{audit:?}");
    assert!(by("denied").starts_with("queue:cli:"), "{audit:?}");
}

#[test]
fn an_unanswered_approval_expires_and_the_fire_ends_needs_approval() {
    let Some(llm) = FakeLlm::start(RULES) else {
        return;
    };
    let sb = Sandbox::new();
    let config = config(&sb, &llm, 2);
    add(&sb, &config, "lapse", "make the lapsed file");
    let child = daemon(&sb, &config);
    let failed = wait_fire(&sb, &config, "lapse", "failed");
    let (code, stderr) = stop(child);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(failed.len(), 1, "{stderr}");
    assert!(
        failed[0]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("needs_approval")),
        "{failed:?}"
    );
    assert!(!sb.workspace().join("lapsed.txt").exists());
    let all = json_of(&sb, &config, &["approvals", "list", "--all", "--json"]);
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(all[0]["status"], "expired", "{all:?}");
    let id = all[0]["id"].as_str().unwrap_or_default();
    let late = run(sb.tackle(&config, &["approvals", "allow", id]));
    assert_eq!(late.code, 1, "{late}");
    assert!(late.stderr.contains("already answered: expired"), "{late}");
    assert!(!sb.workspace().join("lapsed.txt").exists());
}

#[test]
fn sigterm_during_the_wait_leaves_the_approval_cancelled_not_pending() {
    let Some(llm) = FakeLlm::start(RULES) else {
        return;
    };
    let sb = Sandbox::new();
    let config = sb.config(&format!(
        "{}{AGENT}schedules:\n  min_interval_secs: 1\n  approval_timeout_secs: 120\n  shutdown_grace_secs: 1\n",
        llm.backend_yaml("openai", true)
    ));
    add(&sb, &config, "lapse", "make the lapsed file");
    let child = daemon(&sb, &config);
    let list = &["approvals", "list", "--json"];
    let pending = wait_for(&sb, &config, list, Duration::from_secs(40), |l| {
        !l.is_empty()
    });
    let (code, stderr) = stop(child);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(pending.len(), 1, "{stderr}");
    assert!(
        json_of(&sb, &config, list).is_empty(),
        "nothing left pending"
    );
    let all = json_of(&sb, &config, &["approvals", "list", "--all", "--json"]);
    assert_eq!(all[0]["id"], pending[0]["id"]);
    assert_eq!(all[0]["status"], "cancelled", "{all:?}");
    assert!(!sb.workspace().join("lapsed.txt").exists());
}
