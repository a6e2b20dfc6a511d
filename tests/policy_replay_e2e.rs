//! `tackle policy replay` and `tackle policy test` through the real binary: a recorded log
//! re-decided under a stricter and a looser configuration lists exactly the calls whose
//! decision flips, and nothing else; a cases file passes or fails as the policy decides.

mod common;

use common::{run, Sandbox};
use serde_json::Value;
use std::collections::BTreeSet;
use tackle_protocol::Verdict;
use tackle_store::{AuditEntry, AuditRecord, Store};

const CURRENT: &str = "security:
  tool_policies:
    shell:
      approval: never
      grants:
        shell:
          allow: [\"ls\", \"echo\"]
          deny: [\"rm\"]
";

/// `ls` and `echo` now denied, `calculate` asks.
const STRICTER: &str = "security:
  tool_policies:
    calculate:
      approval: always
    shell:
      approval: never
      grants:
        shell:
          allow: [\"echo\"]
          deny: [\"rm\", \"ls\"]
";

/// `rm` and `cat` now allowed, `write_file` without asking.
const LOOSER: &str = "security:
  auto_approved_tools: [write_file]
  tool_policies:
    shell:
      approval: never
      grants:
        shell:
          allow: [\"ls\", \"echo\", \"cat\", \"rm\"]
";

fn record(tool: &str, args: &str, verdict: Verdict, approver: &str, outcome: &str) -> AuditEntry {
    AuditEntry {
        record: AuditRecord {
            ts: String::new(),
            session_id: Some("s".into()),
            agent: "default".into(),
            tool: tool.into(),
            args_summary: args.into(),
            verdict,
            rule: String::new(),
            why: String::new(),
            approver: (!approver.is_empty()).then(|| approver.to_string()),
            outcome: outcome.into(),
            duration_ms: Some(1),
        },
        caller: "cli".into(),
    }
}

/// The log, as the dispatcher records under CURRENT (ids 1…8).
fn recorded(sb: &Sandbox) {
    let calls = [
        record(
            "calculate",
            r#"{"expression":"1+1"}"#,
            Verdict::Allow,
            "policy",
            "ok",
        ),
        record(
            "shell",
            r#"{"command":"ls"}"#,
            Verdict::Allow,
            "policy",
            "ok",
        ),
        record(
            "shell",
            r#"{"command":"rm x"}"#,
            Verdict::Deny,
            "",
            "denied",
        ),
        record(
            "shell",
            r#"{"command":"echo hi"}"#,
            Verdict::Allow,
            "policy",
            "ok",
        ),
        record(
            "shell",
            r#"{"command":"cat x"}"#,
            Verdict::Deny,
            "",
            "denied",
        ),
        // Not decided by policy: skipped, whatever the candidate.
        record("no_such_tool", "{}", Verdict::Deny, "", "not_found"),
        // Arguments cut to a summary: skipped.
        record(
            "shell",
            r#"{"command":"ls aaaaaaa…"#,
            Verdict::Allow,
            "policy",
            "ok",
        ),
        // A person allowed it: policy asked.
        record(
            "write_file",
            r#"{"path":"a.txt","content":"x"}"#,
            Verdict::Allow,
            "tty",
            "ok",
        ),
    ];
    let store = Store::open(&sb.state()).unwrap();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            for c in calls {
                store.append_audit_entry(c).await.unwrap();
            }
        });
}

/// `(id, recorded, candidate)` of every change `policy replay --json` lists under `yaml`.
fn flips(sb: &Sandbox, yaml: &str) -> (BTreeSet<(u64, String, String)>, Value) {
    let cfg = sb.config(yaml);
    let r = run(sb.tackle(&cfg, &["policy", "replay", "--json"]));
    assert_eq!(r.code, 0, "{r}");
    let v: Value = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}\n{r}"));
    let set = v["changed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["id"].as_u64().unwrap(),
                c["recorded"].as_str().unwrap().to_string(),
                c["candidate"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    (set, v)
}

fn flip(id: u64, from: &str, to: &str) -> (u64, String, String) {
    (id, from.to_string(), to.to_string())
}

#[test]
fn replay_lists_exactly_the_decisions_a_stricter_or_looser_config_flips() {
    let sb = Sandbox::new();
    recorded(&sb);

    let (same, v) = flips(&sb, CURRENT);
    assert_eq!(
        same,
        BTreeSet::new(),
        "the configuration that recorded it changes nothing"
    );
    assert_eq!(v["replayed"], 6);
    assert_eq!(v["skipped"]["not_a_policy_decision"], 1);
    assert_eq!(v["skipped"]["arguments_summarised"], 1);

    let (stricter, v) = flips(&sb, STRICTER);
    assert_eq!(
        stricter,
        BTreeSet::from([flip(1, "allow", "ask"), flip(2, "allow", "deny")]),
        "{v}"
    );
    let rules: BTreeSet<&str> = v["changed"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["rule"].as_str())
        .collect();
    assert_eq!(
        rules,
        BTreeSet::from([
            "grants.shell.deny \"ls\"",
            "security.tool_policies.calculate.approval = always"
        ])
    );

    let (looser, v) = flips(&sb, LOOSER);
    assert_eq!(
        looser,
        BTreeSet::from([
            flip(3, "deny", "allow"),
            flip(5, "deny", "allow"),
            flip(8, "ask", "allow")
        ]),
        "{v}"
    );
}

#[test]
fn replay_groups_the_changes_by_rule_in_text() {
    let sb = Sandbox::new();
    recorded(&sb);
    let cfg = sb.config(STRICTER);
    let r = run(sb.tackle(&cfg, &["policy", "replay"]));
    assert_eq!(r.code, 0, "{r}");
    assert!(
        r.stdout
            .contains("grants.shell.deny \"ls\": 1 call(s)\n  #2 "),
        "{r}"
    );
    assert!(r.stdout.contains("allow → deny"), "{r}");
    assert!(
        r.stdout
            .contains("6 recorded calls re-decided, 2 would change"),
        "{r}"
    );
}

#[test]
fn policy_test_passes_when_every_case_is_decided_as_expected_and_fails_otherwise() {
    let sb = Sandbox::new();
    let cfg = sb.config(CURRENT);
    let cases = sb.dir.path().join("cases.yaml");
    std::fs::write(
        &cases,
        "- {tool: shell, arguments: {command: ls}, expect: allow}
- {tool: shell, arguments: {command: rm -rf /}, expect: deny}
- {tool: calculate, arguments: {expression: '1'}, agent: default, expect: allow}
",
    )
    .unwrap();
    let r = run(sb.tackle(&cfg, &["policy", "test", cases.to_str().unwrap()]));
    assert_eq!(r.code, 0, "{r}");

    std::fs::write(
        &cases,
        r#"[{"tool": "shell", "arguments": {"command": "ls"}, "expect": "allow"},
            {"tool": "shell", "arguments": {"command": "rm x"}, "expect": "allow"}]"#,
    )
    .unwrap();
    let r = run(sb.tackle(&cfg, &["policy", "test", cases.to_str().unwrap()]));
    assert_eq!(r.code, 1, "{r}");
    assert!(
        r.stdout.contains("FAIL  2 shell: expected allow, got deny"),
        "{r}"
    );
    assert!(r.stdout.contains("ok    1 shell: allow"), "{r}");

    std::fs::write(&cases, "- {tool: shell, expect: maybe}\n").unwrap();
    let r = run(sb.tackle(&cfg, &["policy", "test", cases.to_str().unwrap()]));
    assert_eq!(r.code, 2, "a malformed file is a usage error: {r}");
}
