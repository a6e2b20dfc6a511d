//! What an audit record proves about its call, through the real binary: the layer and rule
//! that decided, the digests of the arguments and of the result (`tackle audit --json`);
//! `tackle policy replay` re-plans the arguments whole, so a call whose deciding word lies
//! past the 200-character summary flips; a daemon stopped with SIGTERM signs the end of the
//! log itself (docs/decisions/0032-tamper-evident-audit.md).

mod common;

use common::{free_port, run, FakeLlm, Sandbox};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SHELL: &str = "security:
  tool_policies:
    shell:
      approval: never
      grants:
        shell:
          allow: [\"echo\", \"cat\"]
          deny: [\"rm\"]
";

/// The same, with `cat` now refused.
const NO_CAT: &str = "security:
  tool_policies:
    shell:
      approval: never
      grants:
        shell:
          allow: [\"echo\"]
          deny: [\"rm\", \"cat\"]
";

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The digest the record must carry: SHA-256 of the canonical JSON (keys sorted, compact).
fn canonical_digest(args: &str) -> String {
    let mut v: Value = serde_json::from_str(args).unwrap();
    v.sort_all_objects();
    sha256_hex(v.to_string().as_bytes())
}

fn audit(sb: &Sandbox, cfg: &Path) -> Vec<Value> {
    let r = run(sb.tackle(cfg, &["audit", "--json"]));
    assert_eq!(r.code, 0, "{r}");
    serde_json::from_str::<Value>(&r.stdout)
        .unwrap_or_else(|e| panic!("{e}\n{r}"))
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn is_hex64(v: &Value) -> bool {
    v.as_str()
        .is_some_and(|s| s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[test]
fn an_allowed_and_a_refused_call_name_their_layer_rule_and_digests() {
    let sb = Sandbox::new();
    let cfg = sb.config(SHELL);
    let allowed = r#"{"command": "echo evidence", "timeout_secs": 20}"#;
    let refused = r#"{"command": "rm -rf nothing-here"}"#;
    let r = run(sb.tackle(&cfg, &["tools", "call", "shell", allowed]));
    assert_eq!(r.code, 0, "{r}");
    let r = run(sb.tackle(&cfg, &["tools", "call", "shell", refused]));
    assert_ne!(r.code, 0, "{r}");

    let records = audit(&sb, &cfg);
    assert_eq!(records.len(), 2, "{records:#?}");
    let (ran, denied) = (&records[0], &records[1]);

    assert_eq!(ran["verdict"], "allow", "{ran:#}");
    assert_eq!(ran["outcome"], "ok", "{ran:#}");
    assert_eq!(ran["layer"], "approval", "{ran:#}");
    assert_eq!(
        ran["rule"], "security.tool_policies.shell.approval = never",
        "an allowed call names the rule that let it run: {ran:#}"
    );
    assert_eq!(ran["args_digest"], canonical_digest(allowed), "{ran:#}");
    assert!(is_hex64(&ran["result_digest"]), "{ran:#}");
    assert_eq!(
        ran["arguments"],
        r#"{"command":"echo evidence","timeout_secs":20}"#
    );
    assert_eq!(ran["arguments_cut"], false);

    assert_eq!(denied["verdict"], "deny", "{denied:#}");
    assert_eq!(denied["outcome"], "denied", "{denied:#}");
    assert_eq!(denied["layer"], "policy", "{denied:#}");
    assert!(
        denied["rule"].as_str().is_some_and(|r| r.contains("rm")),
        "the refusing rule is named: {denied:#}"
    );
    assert_eq!(
        denied["args_digest"],
        canonical_digest(refused),
        "{denied:#}"
    );
    assert!(is_hex64(&denied["result_digest"]), "{denied:#}");

    // Both are in the chain with their evidence, and the export carries it.
    let v = run(sb.tackle(&cfg, &["audit", "verify"]));
    assert_eq!(v.code, 0, "{v}");
    let ocsf = run(sb.tackle(&cfg, &["audit", "export", "--format", "ocsf"]));
    assert_eq!(ocsf.code, 0, "{ocsf}");
    let last: Value = serde_json::from_str(ocsf.stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}\n{ocsf}"));
    assert_eq!(last["unmapped"]["layer"], "policy", "{last:#}");
    assert_eq!(last["unmapped"]["args_digest"], canonical_digest(refused));
}

#[test]
fn a_call_refused_before_policy_names_the_lookup_or_the_schema() {
    let sb = Sandbox::new();
    let cfg = sb.config(SHELL);
    let r = run(sb.tackle(&cfg, &["tools", "call", "no_such_tool", "{}"]));
    assert_ne!(r.code, 0, "{r}");
    let r = run(sb.tackle(&cfg, &["tools", "call", "shell", r#"{"cmd": 1}"#]));
    assert_ne!(r.code, 0, "{r}");
    let records = audit(&sb, &cfg);
    let layers: Vec<(&str, &str)> = records
        .iter()
        .map(|r| {
            (
                r["outcome"].as_str().unwrap_or_default(),
                r["layer"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        layers,
        [("not_found", "lookup"), ("invalid_arguments", "schema")],
        "{records:#?}"
    );
}

#[test]
fn replay_re_plans_the_whole_arguments_past_the_summary() {
    let sb = Sandbox::new();
    let cfg = sb.config(SHELL);
    // The word a stricter policy refuses comes after 200 characters of `echo`.
    let long = format!(
        r#"{{"command": "echo {} && cat missing-file"}}"#,
        "word ".repeat(45)
    );
    let short = r#"{"command": "cat missing-file"}"#;
    for args in [long.as_str(), short] {
        let r = run(sb.tackle(&cfg, &["tools", "call", "shell", args]));
        assert!(!r.stderr.contains("denied"), "{r}");
    }
    let records = audit(&sb, &cfg);
    assert_eq!(records.len(), 2, "{records:#?}");
    let summary = records[0]["args_summary"].as_str().unwrap_or_default();
    assert!(
        !summary.contains("cat"),
        "the summary is cut before the deciding word: {summary}"
    );

    let candidate = sb.config(NO_CAT);
    let r = run(sb.tackle(&candidate, &["policy", "replay", "--json"]));
    assert_eq!(r.code, 0, "{r}");
    let v: Value = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}\n{r}"));
    let changed = v["changed"].as_array().cloned().unwrap_or_default();
    let ids: Vec<u64> = changed.iter().filter_map(|c| c["id"].as_u64()).collect();
    assert_eq!(ids, [1, 2], "both calls flip, the long one too: {v:#}");
    for c in &changed {
        assert_eq!(
            (c["recorded"].as_str(), c["candidate"].as_str()),
            (Some("allow"), Some("deny"))
        );
    }
    assert_eq!(v["replayed"], 2, "{v:#}");
    assert_eq!(v["from_summary"], 0, "{v:#}");
}

#[test]
fn records_from_before_the_whole_arguments_replay_from_their_summary_and_say_so() {
    let sb = Sandbox::new();
    let cfg = sb.config(SHELL);
    let r = run(sb.tackle(&cfg, &["tools", "call", "shell", r#"{"command": "cat x"}"#]));
    assert!(!r.stderr.contains("denied"), "{r}");
    // As a record written before version 16 holds it: no kept arguments.
    let db = sb.state().join(tackle_store::DB_FILE);
    let Ok(out) = Command::new("sqlite3")
        .arg(&db)
        .arg("UPDATE audit SET arguments = NULL")
        .output()
    else {
        eprintln!("SKIPPED: no sqlite3 CLI on this machine");
        return;
    };
    assert!(out.status.success(), "{out:?}");
    let candidate = sb.config(NO_CAT);
    let r = run(sb.tackle(&candidate, &["policy", "replay"]));
    assert_eq!(r.code, 0, "{r}");
    assert!(
        r.stdout
            .contains("1 recorded calls re-decided, 1 would change"),
        "{r}"
    );
    assert!(
        r.stdout
            .contains("1 of them re-decided from the argument summary"),
        "{r}"
    );
}

/// `sql` on the sandbox's database with the sqlite3 CLI (never through `tackle`, whose
/// opening the store would sign the tail itself); `None` when there is no sqlite3.
fn sqlite3(sb: &Sandbox, sql: &str) -> Option<String> {
    let db = sb.state().join(tackle_store::DB_FILE);
    let out = Command::new("sqlite3").arg(&db).arg(sql).output().ok()?;
    assert!(out.status.success(), "sqlite3: {out:?}");
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn http_get(port: u16, path: &str) -> u16 {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return 0;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
    if s.write_all(request.as_bytes()).is_err() {
        return 0;
    }
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    String::from_utf8_lossy(&buf)
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

#[test]
fn a_daemon_stopped_with_sigterm_signs_its_last_record() {
    let Some(llm) = FakeLlm::start("rules: []\n") else {
        return;
    };
    let sb = Sandbox::new();
    if sqlite3(&sb, "SELECT 1").is_none() {
        eprintln!("SKIPPED: no sqlite3 CLI on this machine");
        return;
    }
    let port = free_port();
    let cfg = sb.config(&format!(
        "{}agents:\n  - name: default\n    backend: fake\n    model: fake-model\ngateway:\n  bind: 127.0.0.1:{port}\n",
        llm.backend_yaml("openai", false)
    ));
    let mut child = sb
        .tackle(&cfg, &["daemon"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn tackle daemon");
    let stderr = common::drain(child.stderr.take());
    // Each API request is one audit record, written by the daemon.
    let deadline = Instant::now() + Duration::from_secs(60);
    while http_get(port, "/openapi.json") != 200 {
        assert!(Instant::now() < deadline, "the API did not come up");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(http_get(port, "/v1/models"), 401);
    let chained = "SELECT COALESCE(MAX(chain_seq), 0) FROM audit";
    let signed = "SELECT COALESCE(MAX(seq), 0) FROM audit_checkpoints";
    let deadline = Instant::now() + Duration::from_secs(20);
    let last = loop {
        let last: i64 = sqlite3(&sb, chained)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        if last >= 2 || Instant::now() > deadline {
            break last;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(last >= 2, "the requests were audited");
    let before: i64 = sqlite3(&sb, signed)
        .and_then(|s| s.parse().ok())
        .unwrap_or(-1);
    assert!(
        before < last,
        "the tail is not signed while the daemon runs"
    );

    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let status = child.wait().expect("wait daemon");
    let log = stderr.join().unwrap_or_default();
    assert_eq!(status.code(), Some(0), "{log}");
    let last: i64 = sqlite3(&sb, chained)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let after: i64 = sqlite3(&sb, signed)
        .and_then(|s| s.parse().ok())
        .unwrap_or(-1);
    assert_eq!(
        after, last,
        "the daemon signed up to its last record before exiting\n{log}"
    );

    let r = run(sb.tackle(&cfg, &["audit", "verify", "--json"]));
    assert_eq!(r.code, 0, "{r}");
    let v: Value = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}\n{r}"));
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["unsigned_tail"], 0, "{v}");
    assert_eq!(v["chained"], last, "{v}");
}

#[test]
fn a_credential_in_the_arguments_is_kept_only_redacted() {
    let key = "zq-audit-kwpxmtrvylnsgh";
    let sb = Sandbox::new();
    let cfg = sb.config(&format!(
        "{SHELL}backends:\n  - name: local\n    type: openai\n    api_base: http://127.0.0.1:9/v1\n    api_key: \"${{E2E_AUDIT_KEY}}\"\n    models:\n      - name: m\n"
    ));
    let args = format!(r#"{{"command": "echo {key}"}}"#);
    let mut call = sb.tackle(&cfg, &["tools", "call", "shell", &args]);
    call.env("E2E_AUDIT_KEY", key);
    let r = run(call);
    assert_eq!(r.code, 0, "{r}");
    let mut list = sb.tackle(&cfg, &["audit", "--json"]);
    list.env("E2E_AUDIT_KEY", key);
    let listed = run(list);
    assert_eq!(listed.code, 0, "{listed}");
    let records: Vec<Value> = serde_json::from_str(&listed.stdout).unwrap_or_default();
    assert_eq!(records.len(), 1, "{listed}");
    let kept = records[0]["arguments"].as_str().unwrap_or_default();
    assert!(kept.starts_with(r#"{"command":"echo "#), "{kept}");
    assert!(!kept.contains(key) && kept.contains("[redacted"), "{kept}");
    // The digest is of the arguments as the tool got them, credential included.
    assert_eq!(records[0]["args_digest"], canonical_digest(&args));
    // Nowhere in the database or its log.
    for entry in std::fs::read_dir(sb.state()).unwrap().flatten() {
        let bytes = std::fs::read(entry.path()).unwrap_or_default();
        let found = bytes.windows(key.len()).any(|w| w == key.as_bytes());
        assert!(!found, "{} holds the credential", entry.path().display());
    }
}
