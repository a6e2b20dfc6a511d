use super::*;
use crate::audit::chain::{link_hash, GENESIS, VERSION};
use crate::audit::detail::{detail_from_row, DETAIL_COLUMNS};

fn entry(tool: &str) -> AuditEntry {
    AuditEntry {
        record: AuditRecord {
            ts: String::new(),
            session_id: Some("s1".into()),
            agent: "default".into(),
            tool: tool.into(),
            args_summary: "{\"expression\":\"1+1\"}".into(),
            verdict: Verdict::Allow,
            rule: "tools.allow".into(),
            why: String::new(),
            approver: Some("policy".into()),
            outcome: "ok".into(),
            duration_ms: Some(3),
        },
        caller: "cli".into(),
    }
}

/// A store in a temporary directory with `n` records: refusals and calls that ran, mixed.
async fn store_with(n: usize) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    for i in 0..n {
        if i.is_multiple_of(2) {
            store
                .append_audit_entry(entry(&format!("t{i}")))
                .await
                .unwrap();
        } else {
            let id = store.begin_audit(entry(&format!("t{i}"))).await.unwrap();
            store
                .finish_audit(
                    id,
                    AuditOutcome {
                        outcome: "ok".into(),
                        rule: "tools.allow".into(),
                        why: "done".into(),
                        duration_ms: Some(9),
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

/// A chained row as stored: id, position, previous hash, hash, record, detail.
type Link = (i64, i64, Vec<u8>, Vec<u8>, AuditEntry, AuditDetail);

#[tokio::test]
async fn each_record_links_to_the_one_before_and_an_untouched_log_verifies() {
    let (dir, store) = store_with(6).await;
    let conn = rusqlite::Connection::open(dir.path().join(crate::DB_FILE)).unwrap();
    let mut stmt = conn
        .prepare(&format!(
            "SELECT id, chain_seq, prev_hash, hash, {ENTRY_COLUMNS}, {DETAIL_COLUMNS} FROM audit ORDER BY chain_seq"
        ))
        .unwrap();
    let rows: Vec<Link> = stmt
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                entry_from_row(r, 4)?,
                detail_from_row(r, 4 + ENTRY_COLUMN_COUNT)?,
            ))
        })
        .unwrap()
        .map(|r| {
            let (id, seq, prev, hash, e, d) = r.unwrap();
            (id, seq, prev, hash, checked(e).unwrap(), d)
        })
        .collect();
    assert_eq!(rows.len(), 6);
    let mut prev = GENESIS.to_vec();
    for (n, (id, seq, stored_prev, hash, e, d)) in rows.iter().enumerate() {
        assert_eq!(*seq, n as i64 + 1);
        assert_eq!(stored_prev, &prev, "record #{id} names the hash before it");
        let expected = link_hash(&prev, *seq, *id, VERSION, e, d).unwrap();
        assert_eq!(hash.as_slice(), expected.as_slice());
        prev.clone_from(hash);
    }
    let v = store.verify_audit(None).await.unwrap();
    assert_eq!(v.problem, None);
    assert_eq!(v.chained, 6);
    assert_eq!(v.unsigned_tail, 6);
    drop(store);
    // The next process to open the store signs what the last one left.
    let reopened = Store::open(dir.path()).unwrap();
    let v = reopened.verify_audit(None).await.unwrap();
    assert_eq!((v.problem, v.checkpoints, v.unsigned_tail), (None, 1, 0));
}

#[tokio::test]
async fn an_edited_row_is_named() {
    let (dir, store) = store_with(8).await;
    sql(&dir, "UPDATE audit SET outcome = 'denied' WHERE id = 5");
    assert_eq!(
        problem(&store).await,
        Some(ChainProblem::Altered { id: 5, seq: 5 })
    );
    let message = problem(&store).await.unwrap().to_string();
    assert!(message.contains("record #5"), "{message}");
}

#[tokio::test]
async fn a_deleted_row_is_named_by_its_neighbours() {
    let (dir, store) = store_with(8).await;
    sql(&dir, "DELETE FROM audit WHERE id = 4");
    assert_eq!(
        problem(&store).await,
        Some(ChainProblem::Removed {
            from: 4,
            to: 4,
            after: Some(3),
            before: 5
        })
    );
}

#[tokio::test]
async fn swapped_rows_are_named() {
    // The rows trade places in the chain, each keeping its own hash.
    let (dir, store) = store_with(8).await;
    sql(
        &dir,
        "UPDATE audit SET chain_seq = -1 WHERE id = 3;
         UPDATE audit SET chain_seq = 3 WHERE id = 4;
         UPDATE audit SET chain_seq = 4 WHERE id = 3;",
    );
    assert_eq!(
        problem(&store).await,
        Some(ChainProblem::Altered { id: 4, seq: 3 }),
        "the position is part of the hash"
    );
    // The rows' contents trade places, ids and positions staying.
    let (dir, store) = store_with(8).await;
    sql(
        &dir,
        "UPDATE audit SET tool = (SELECT tool FROM audit WHERE id = 7) WHERE id = 6;",
    );
    assert_eq!(
        problem(&store).await,
        Some(ChainProblem::Altered { id: 6, seq: 6 })
    );
}

#[tokio::test]
async fn a_rewritten_chain_is_caught_by_its_signed_checkpoint() {
    let (dir, store) = store_with(5).await;
    drop(store);
    let store = Store::open(dir.path()).unwrap(); // signs position 5
                                                  // Record 2 edited and every hash from it on recomputed: the chain is consistent again.
    let conn = rusqlite::Connection::open(dir.path().join(crate::DB_FILE)).unwrap();
    conn.execute("UPDATE audit SET why = 'nothing to see' WHERE id = 2", [])
        .unwrap();
    let mut prev = GENESIS.to_vec();
    for seq in 1..=5i64 {
        let (id, e, d) = conn
            .query_row(
                &format!(
                    "SELECT id, {ENTRY_COLUMNS}, {DETAIL_COLUMNS} FROM audit WHERE chain_seq = ?1"
                ),
                [seq],
                |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        entry_from_row(r, 1)?,
                        detail_from_row(r, 1 + ENTRY_COLUMN_COUNT)?,
                    ))
                },
            )
            .unwrap();
        let hash = link_hash(&prev, seq, id, VERSION, &checked(e).unwrap(), &d).unwrap();
        conn.execute(
            "UPDATE audit SET prev_hash = ?1, hash = ?2 WHERE id = ?3",
            rusqlite::params![prev, hash.as_slice(), id],
        )
        .unwrap();
        prev = hash.to_vec();
    }
    assert_eq!(
        problem(&store).await,
        Some(ChainProblem::Rewritten { seq: 5, id: 5 })
    );
}

#[tokio::test]
async fn removing_the_end_of_the_log_is_caught_by_its_checkpoint() {
    let (dir, store) = store_with(5).await;
    drop(store);
    let store = Store::open(dir.path()).unwrap();
    sql(&dir, "DELETE FROM audit WHERE id >= 4");
    assert_eq!(
        problem(&store).await,
        Some(ChainProblem::Truncated {
            checkpoint: 5,
            last: 3,
            last_id: Some(3)
        })
    );
}

#[tokio::test]
async fn a_checkpoint_fails_under_another_key_or_with_a_forged_signature() {
    let (dir, store) = store_with(3).await;
    drop(store);
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(problem(&store).await, None);
    let other = [7u8; 32];
    assert!(matches!(
        store.verify_audit(Some(other)).await.unwrap().problem,
        Some(ChainProblem::OtherKey { seq: 3, .. })
    ));
    sql(
        &dir,
        "UPDATE audit_checkpoints SET signed_at = '2020-01-01T00:00:00.000000Z'",
    );
    assert_eq!(
        problem(&store).await,
        Some(ChainProblem::BadSignature { seq: 3 })
    );
}

#[tokio::test]
async fn a_record_taken_out_of_the_chain_is_named() {
    let (dir, store) = store_with(4).await;
    sql(
        &dir,
        "UPDATE audit SET chain_seq = NULL, prev_hash = NULL, hash = NULL WHERE id = 4",
    );
    // The last one: no gap shows, but it is finished and outside the chain.
    assert_eq!(problem(&store).await, Some(ChainProblem::Outside { id: 4 }));
}

#[tokio::test]
async fn a_checkpoint_is_signed_every_thousand_positions() {
    let store = Store::open_in_memory().unwrap();
    for i in 0..CHECKPOINT_EVERY + 5 {
        store
            .append_audit_entry(entry(&format!("t{i}")))
            .await
            .unwrap();
    }
    let v = store.verify_audit(None).await.unwrap();
    assert_eq!(v.problem, None);
    assert_eq!(v.checkpoints, 1);
    assert_eq!(v.unsigned_tail, 5);
}

#[tokio::test]
async fn an_interrupted_call_joins_the_chain_when_it_is_closed() {
    let Some((rest, _boot)) = owner::this_process().rsplit_once(' ') else {
        eprintln!("SKIPPED: this process's identity cannot be read (no /proc)");
        return;
    };
    let (dir, store) = store_with(2).await;
    store.begin_audit(entry("killed")).await.unwrap();
    sql(
        &dir,
        &format!("UPDATE audit SET owner = '{rest} an-earlier-boot' WHERE tool = 'killed'"),
    );
    assert_eq!(store.verify_audit(None).await.unwrap().running, 1);
    drop(store);
    let reopened = Store::open(dir.path()).unwrap();
    let v = reopened.verify_audit(None).await.unwrap();
    assert_eq!((v.problem, v.chained, v.running), (None, 3, 0));
}
