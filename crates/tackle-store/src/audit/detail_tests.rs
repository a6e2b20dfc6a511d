//! The record's evidence (layer, digests, kept arguments) in the hash chain.

use super::*;
use crate::audit::chain::{link_hash, GENESIS};
use crate::audit::detail::{detail_from_row, DETAIL_COLUMNS};
use serde_json::json;

fn entry(tool: &str, verdict: Verdict, outcome: &str) -> AuditEntry {
    AuditEntry {
        record: AuditRecord {
            ts: String::new(),
            session_id: Some("s1".into()),
            agent: "default".into(),
            tool: tool.into(),
            args_summary: "{\"command\":\"ls\"}".into(),
            verdict,
            rule: "security.tool_policies.shell.approval = never".into(),
            why: String::new(),
            approver: Some("policy".into()),
            outcome: outcome.into(),
            duration_ms: Some(3),
        },
        caller: "cli".into(),
    }
}

fn detail(layer: &str, args: &serde_json::Value) -> AuditDetail {
    let mut d = AuditDetail {
        layer: layer.into(),
        args_digest: Some(json_digest(args)),
        ..AuditDetail::default()
    };
    d.keep_arguments(&args.to_string());
    d
}

/// Records 1, 3, 5 refused by policy; 2, 4, 6 ran (intent, then outcome with a result digest).
async fn store_with_details() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    for i in 0..6 {
        let args = json!({"command": format!("echo {i}")});
        if i % 2 == 0 {
            store
                .append_audit_with(
                    entry("shell", Verdict::Deny, "denied"),
                    detail("policy", &args),
                )
                .await
                .unwrap();
        } else {
            let id = store
                .begin_audit_with(
                    entry("shell", Verdict::Allow, RUNNING),
                    detail("approval", &args),
                )
                .await
                .unwrap();
            store
                .finish_audit(
                    id,
                    AuditOutcome {
                        outcome: "ok".into(),
                        rule: "security.tool_policies.shell.approval = never".into(),
                        duration_ms: Some(1),
                        result_digest: Some(text_digest(&format!("{i}\n"))),
                        ..AuditOutcome::default()
                    },
                )
                .await
                .unwrap();
        }
    }
    (dir, store)
}

fn sql(dir: &tempfile::TempDir, statements: &str) {
    rusqlite::Connection::open(dir.path().join(crate::DB_FILE))
        .unwrap()
        .execute_batch(statements)
        .unwrap();
}

async fn problem(store: &Store) -> Option<ChainProblem> {
    store.verify_audit(None).await.unwrap().problem
}

#[tokio::test]
async fn the_layer_digests_and_arguments_are_kept_and_exported() {
    let (_dir, store) = store_with_details().await;
    let all = store.audit_export(AuditQuery::default()).await.unwrap();
    assert_eq!(all.len(), 6);
    let refused = &all[0].detail;
    assert_eq!(refused.layer, "policy");
    assert_eq!(
        refused.args_digest.as_deref(),
        Some(json_digest(&json!({"command": "echo 0"})).as_str())
    );
    assert_eq!(
        refused.arguments.as_deref(),
        Some(r#"{"command":"echo 0"}"#)
    );
    assert!(!refused.arguments_cut);
    assert_eq!(refused.result_digest, None);
    let ran = &all[1].detail;
    // The intent's layer stays when the outcome names none; the result digest comes with it.
    assert_eq!(ran.layer, "approval");
    assert_eq!(
        ran.result_digest.as_deref(),
        Some(text_digest("1\n").as_str())
    );
    let line = serde_json::to_value(&all[1]).unwrap();
    assert_eq!(line["layer"], "approval");
    assert_eq!(line["args_digest"].as_str().map(str::len), Some(64));
    assert_eq!(problem(&store).await, None);
}

#[tokio::test]
async fn an_edited_digest_layer_or_argument_is_named() {
    for (column, value, id) in [
        ("args_digest", "'00'", 3),
        ("result_digest", "'00'", 4),
        ("layer", "'lookup'", 5),
        ("arguments", "'{\"command\":\"ls\"}'", 1),
        ("arguments_cut", "1", 2),
    ] {
        let (dir, store) = store_with_details().await;
        assert_eq!(problem(&store).await, None);
        sql(
            &dir,
            &format!("UPDATE audit SET {column} = {value} WHERE id = {id}"),
        );
        let found = problem(&store).await;
        assert_eq!(
            found,
            Some(ChainProblem::Altered { id, seq: id }),
            "{column} edited in #{id}"
        );
        let message = found.unwrap().to_string();
        assert!(message.contains(&format!("record #{id}")), "{message}");
    }
}

#[tokio::test]
async fn records_chained_before_the_digests_verify_and_cannot_be_downgraded_into_them() {
    let (dir, store) = store_with_details().await;
    // Records 1–3 as version 1 wrote them: no detail, hashed without it, relinked; none signed.
    let conn = rusqlite::Connection::open(dir.path().join(crate::DB_FILE)).unwrap();
    conn.execute_batch(
        "DELETE FROM audit_checkpoints;
         UPDATE audit SET chain_version = NULL, layer = '', args_digest = NULL, result_digest = NULL,
                          arguments = NULL, arguments_cut = 0 WHERE id <= 3;",
    )
    .unwrap();
    let mut prev = GENESIS.to_vec();
    for seq in 1..=6i64 {
        let (id, version, e, d) = conn
            .query_row(
                &format!(
                    "SELECT id, COALESCE(chain_version, 1), {ENTRY_COLUMNS}, {DETAIL_COLUMNS} FROM audit WHERE chain_seq = ?1"
                ),
                [seq],
                |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, i64>(1)?,
                        entry_from_row(r, 2)?,
                        detail_from_row(r, 2 + ENTRY_COLUMN_COUNT)?,
                    ))
                },
            )
            .unwrap();
        let hash = link_hash(&prev, seq, id, version, &checked(e).unwrap(), &d).unwrap();
        conn.execute(
            "UPDATE audit SET prev_hash = ?1, hash = ?2 WHERE id = ?3",
            rusqlite::params![prev, hash.as_slice(), id],
        )
        .unwrap();
        prev = hash.to_vec();
    }
    assert_eq!(problem(&store).await, None, "a mixed v1/v2 chain verifies");
    // Marking a version-2 record as version 1 (to edit its digests unseen) breaks its hash.
    sql(&dir, "UPDATE audit SET chain_version = NULL WHERE id = 5");
    assert_eq!(
        problem(&store).await,
        Some(ChainProblem::Altered { id: 5, seq: 5 })
    );
    sql(&dir, "UPDATE audit SET chain_version = 9 WHERE id = 5");
    assert_eq!(
        problem(&store).await,
        Some(ChainProblem::Altered { id: 5, seq: 5 })
    );
}

#[tokio::test]
async fn sealing_signs_the_tail_and_nothing_when_there_is_none() {
    let (_dir, store) = store_with_details().await;
    assert_eq!(store.verify_audit(None).await.unwrap().unsigned_tail, 6);
    store.seal_audit().await.unwrap();
    let v = store.verify_audit(None).await.unwrap();
    assert_eq!((v.problem, v.checkpoints, v.unsigned_tail), (None, 1, 0));
    store.seal_audit().await.unwrap();
    assert_eq!(store.verify_audit(None).await.unwrap().checkpoints, 1);
}

#[tokio::test]
async fn two_connections_taking_turns_keep_one_chain() {
    // Each connection remembers the head it wrote; the other's commits must be seen.
    let dir = tempfile::tempdir().unwrap();
    let a = Store::open(dir.path()).unwrap();
    let b = Store::open(dir.path()).unwrap();
    let args = json!({"command": "ls"});
    let done = || AuditOutcome {
        outcome: "ok".into(),
        ..AuditOutcome::default()
    };
    for _ in 0..3 {
        a.append_audit_with(
            entry("shell", Verdict::Deny, "denied"),
            detail("policy", &args),
        )
        .await
        .unwrap();
        let running = b
            .begin_audit_with(
                entry("shell", Verdict::Allow, RUNNING),
                detail("approval", &args),
            )
            .await
            .unwrap();
        let other = a
            .begin_audit_with(
                entry("shell", Verdict::Allow, RUNNING),
                detail("approval", &args),
            )
            .await
            .unwrap();
        b.append_audit_with(
            entry("shell", Verdict::Deny, "denied"),
            detail("policy", &args),
        )
        .await
        .unwrap();
        a.finish_audit(other, done()).await.unwrap();
        b.finish_audit(running, done()).await.unwrap();
        a.append_audit_with(
            entry("shell", Verdict::Deny, "denied"),
            detail("policy", &args),
        )
        .await
        .unwrap();
    }
    let v = a.verify_audit(None).await.unwrap();
    assert_eq!((v.problem, v.chained, v.running), (None, 15, 0));
}
