//! The tamper-evident audit log through the real binary: an untouched log of thousands of
//! calls verifies; a record edited, deleted or moved with the sqlite3 CLI is named by
//! `tackle audit verify` (exit 1); `tackle audit key` prints the public half of a private key
//! file; `tackle audit export` writes one JSON object a line, stored or as OCSF.

mod common;

use common::{run, Sandbox};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use tackle_protocol::Verdict;
use tackle_store::{AuditEntry, AuditRecord, Store};

/// Records written through the store, as the dispatcher writes them, on top of the real calls.
const STORE_RECORDS: usize = 2_000;
const CLI_CALLS: usize = 3;

/// A sandbox whose log holds `CLI_CALLS` calls made by `tackle tools call` and
/// `STORE_RECORDS` more.
fn recorded() -> (Sandbox, PathBuf) {
    let sb = Sandbox::new();
    let cfg = sb.config("");
    for i in 0..CLI_CALLS {
        let args = format!(r#"{{"expression": "{i} + 1"}}"#);
        let r = run(sb.tackle(&cfg, &["tools", "call", "calculate", &args]));
        assert_eq!(r.code, 0, "{r}");
    }
    let store = Store::open(&sb.state()).unwrap();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            for i in 0..STORE_RECORDS {
                store.append_audit_entry(entry(i)).await.unwrap();
            }
        });
    (sb, cfg)
}

fn entry(i: usize) -> AuditEntry {
    AuditEntry {
        record: AuditRecord {
            ts: String::new(),
            session_id: Some("s-e2e".into()),
            agent: "default".into(),
            tool: "calculate".into(),
            args_summary: format!("{{\"expression\":\"{i} * 2\"}}"),
            verdict: if i.is_multiple_of(7) {
                Verdict::Deny
            } else {
                Verdict::Allow
            },
            rule: "tools.allow".into(),
            why: String::new(),
            approver: Some("policy".into()),
            outcome: "ok".into(),
            duration_ms: Some(1),
        },
        caller: "mcp".into(),
    }
}

/// Runs `sql` on the sandbox's database with the sqlite3 CLI; `false` when there is none.
fn sqlite3(sb: &Sandbox, sql: &str) -> bool {
    let db = sb.state().join(tackle_store::DB_FILE);
    match Command::new("sqlite3").arg(&db).arg(sql).output() {
        Ok(out) => {
            assert!(out.status.success(), "sqlite3: {out:?}");
            true
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => panic!("sqlite3: {e}"),
    }
}

fn verify(sb: &Sandbox, cfg: &Path) -> common::Run {
    run(sb.tackle(cfg, &["audit", "verify"]))
}

#[test]
fn an_untouched_log_of_thousands_of_calls_verifies() {
    let (sb, cfg) = recorded();
    let r = verify(&sb, &cfg);
    assert_eq!(r.code, 0, "{r}");
    let total = STORE_RECORDS + CLI_CALLS;
    assert!(
        r.stdout
            .contains(&format!("audit log verifies: {total} records in the chain")),
        "{r}"
    );
    let json = run(sb.tackle(&cfg, &["audit", "verify", "--json"]));
    let v: Value = serde_json::from_str(&json.stdout).unwrap_or_else(|e| panic!("{e}\n{json}"));
    assert_eq!(v["ok"], true);
    assert_eq!(v["chained"], total);
    // Two checkpoints every thousand, and the ones each CLI process signed for the last.
    assert!(v["checkpoints"].as_u64().unwrap_or(0) >= 2, "{v}");
}

#[test]
fn a_record_edited_with_sqlite3_is_named_and_verify_fails() {
    let (sb, cfg) = recorded();
    if !sqlite3(&sb, "UPDATE audit SET args_summary = '{}' WHERE id = 1500") {
        eprintln!("SKIPPED: no sqlite3 CLI on this machine");
        return;
    }
    let r = verify(&sb, &cfg);
    assert_eq!(r.code, 1, "{r}");
    assert!(
        r.stderr.contains("record #1500") && r.stderr.contains("altered"),
        "{r}"
    );
}

#[test]
fn a_record_deleted_or_moved_with_sqlite3_is_named() {
    let (sb, cfg) = recorded();
    if !sqlite3(&sb, "DELETE FROM audit WHERE id = 700") {
        eprintln!("SKIPPED: no sqlite3 CLI on this machine");
        return;
    }
    let r = verify(&sb, &cfg);
    assert_eq!(r.code, 1, "{r}");
    assert!(
        r.stderr.contains("between #699 and #701 was removed"),
        "{r}"
    );

    let (sb, cfg) = recorded();
    // Two records trade places in the chain, each with its own hashes.
    sqlite3(
        &sb,
        "UPDATE audit SET chain_seq = -1 WHERE id = 10;
         UPDATE audit SET chain_seq = 10 WHERE id = 11;
         UPDATE audit SET chain_seq = 11 WHERE id = -1 OR chain_seq = -1;",
    );
    let r = verify(&sb, &cfg);
    assert_eq!(r.code, 1, "{r}");
    assert!(r.stderr.contains("record #11"), "{r}");
}

#[test]
fn the_key_is_private_and_its_public_half_printed() {
    let sb = Sandbox::new();
    let cfg = sb.config("");
    let r = run(sb.tackle(&cfg, &["audit", "key"]));
    assert_eq!(r.code, 0, "{r}");
    let public = r.stdout.trim();
    assert_eq!(public.len(), 64, "{r}");
    assert!(public.bytes().all(|b| b.is_ascii_hexdigit()), "{r}");
    let file = sb.state().join(tackle_store::KEY_FILE);
    let secret = std::fs::read_to_string(&file).unwrap();
    assert!(
        !r.stdout.contains(secret.trim()),
        "the secret half is never printed"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let again = run(sb.tackle(&cfg, &["audit", "key"]));
    assert_eq!(again.stdout, r.stdout, "the same key every time");

    // A log whose checkpoints are checked against another key does not verify.
    for i in 0..2 {
        let args = format!(r#"{{"expression": "{i}"}}"#);
        assert_eq!(
            run(sb.tackle(&cfg, &["tools", "call", "calculate", &args])).code,
            0
        );
    }
    let other = "11".repeat(32);
    let r = run(sb.tackle(&cfg, &["audit", "verify", "--key", &other]));
    assert_eq!(r.code, 1, "{r}");
    assert!(r.stderr.contains("signed by another key"), "{r}");
    let r = run(sb.tackle(&cfg, &["audit", "verify", "--key", public]));
    assert_eq!(r.code, 0, "{r}");
}

#[test]
fn export_writes_one_json_object_a_line_stored_or_as_ocsf() {
    let (sb, cfg) = recorded();
    let total = STORE_RECORDS + CLI_CALLS;
    let r = run(sb.tackle(&cfg, &["audit", "export", "--format", "jsonl"]));
    assert_eq!(r.code, 0, "{r}");
    let lines: Vec<Value> = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(lines.len(), total);
    assert_eq!(lines[0]["tool"], "calculate");
    assert_eq!(lines[0]["caller"], "cli");
    assert_eq!(lines[0]["chain_seq"], 1);
    assert_eq!(lines[0]["hash"].as_str().map(str::len), Some(64));

    let r = run(sb.tackle(
        &cfg,
        &["audit", "export", "--format", "ocsf", "--limit", "10"],
    ));
    assert_eq!(r.code, 0, "{r}");
    let events: Vec<Value> = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(events.len(), 10);
    for e in &events {
        assert_eq!(e["class_uid"], 6003);
        assert_eq!(e["type_uid"], 600399);
        assert!(e["time"].as_i64().unwrap_or(0) > 1_700_000_000_000, "{e}");
        assert_eq!(e["api"]["operation"], "calculate");
    }
}
