//! The audit log on both engines: the file (SQLite) and a database several daemons share
//! (PostgreSQL, `state_url`). The same behaviour is asserted on each: records and queries,
//! intents and outcomes, the hash chain and its checkpoints, tampering named by `verify`,
//! and concurrent writers that leave one chain.

mod engines;

use engines::engines;
use std::collections::HashMap;
use tackle_protocol::Verdict;
use tackle_store::{
    AuditDetail, AuditEntry, AuditOutcome, AuditQuery, AuditRecord, ChainProblem, Store, RUNNING,
};

fn entry(session: &str, tool: &str, summary: &str) -> AuditEntry {
    AuditEntry {
        record: AuditRecord {
            ts: String::new(),
            session_id: Some(session.into()),
            agent: "default".into(),
            tool: tool.into(),
            args_summary: summary.into(),
            verdict: Verdict::Allow,
            rule: "tools.allow".into(),
            why: String::new(),
            approver: Some("policy".into()),
            outcome: "ok".into(),
            duration_ms: Some(3),
        },
        caller: "model".into(),
    }
}

fn detail(summary: &str) -> AuditDetail {
    let mut d = AuditDetail {
        layer: "policy".into(),
        args_digest: Some(tackle_store::text_digest(summary)),
        ..AuditDetail::default()
    };
    d.keep_arguments(summary);
    d
}

fn ok(result: &str) -> AuditOutcome {
    AuditOutcome {
        outcome: "ok".into(),
        rule: "tools.allow".into(),
        why: String::new(),
        duration_ms: Some(7),
        layer: "tool".into(),
        result_digest: Some(tackle_store::text_digest(result)),
    }
}

/// `n` finished records, `i` in their summary: `{"i":0}`, `{"i":1}`, …
async fn records(store: &Store, n: usize) {
    for i in 0..n {
        let s = format!("{{\"i\":{i}}}");
        let tool = if i % 2 == 0 { "read_file" } else { "calculate" };
        let session = if i < n / 2 { "s-1" } else { "s-2" };
        store
            .append_audit_with(entry(session, tool, &s), detail(&s))
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn records_are_queried_and_exported_alike_on_both_engines() {
    for engine in engines() {
        let store = engine.daemon(0);
        records(&store, 6).await;
        let all = store.audit_query(AuditQuery::default()).await.unwrap();
        let summaries: Vec<_> = all.iter().map(|r| r.args_summary.as_str()).collect();
        assert_eq!(
            summaries,
            [
                "{\"i\":0}",
                "{\"i\":1}",
                "{\"i\":2}",
                "{\"i\":3}",
                "{\"i\":4}",
                "{\"i\":5}"
            ],
            "{}",
            engine.name
        );
        let by_session = store
            .audit_query(AuditQuery {
                session: Some("s-2".into()),
                tool: Some("read_file".into()),
                ..AuditQuery::default()
            })
            .await
            .unwrap();
        let summaries: Vec<_> = by_session.iter().map(|r| r.args_summary.as_str()).collect();
        assert_eq!(summaries, ["{\"i\":4}"], "{}", engine.name);
        let newest = store.audit_tail(2).await.unwrap();
        assert_eq!(newest.len(), 2, "{}", engine.name);
        assert_eq!(newest[1].args_summary, "{\"i\":5}", "{}", engine.name);
        assert_eq!(newest[1].duration_ms, Some(3), "{}", engine.name);
        assert_eq!(
            newest[1].approver.as_deref(),
            Some("policy"),
            "{}",
            engine.name
        );

        let exported = store.audit_export(AuditQuery::default()).await.unwrap();
        assert_eq!(exported.len(), 6, "{}", engine.name);
        for (n, e) in exported.iter().enumerate() {
            assert_eq!(e.chain_seq, Some(n as i64 + 1), "{}", engine.name);
            let hash = e.hash.as_deref().unwrap();
            assert_eq!(hash.len(), 64, "{}", engine.name);
            assert_eq!(hash, hash.to_ascii_lowercase(), "{}", engine.name);
            assert_eq!(e.detail.layer, "policy", "{}", engine.name);
            assert_eq!(e.entry.caller, "model", "{}", engine.name);
        }
        let v = store.verify_audit(None).await.unwrap();
        assert_eq!(v.problem, None, "{}", engine.name);
        assert_eq!(v.chained, 6, "{}", engine.name);
    }
}

#[tokio::test]
async fn an_intent_runs_outside_the_chain_until_its_outcome_joins_it() {
    for engine in engines() {
        let store = engine.daemon(0);
        records(&store, 2).await;
        let s = "{\"path\":\"notes.md\"}";
        let id = store
            .begin_audit_with(entry("s-1", "read_file", s), detail(s))
            .await
            .unwrap();
        let tail = store.audit_tail(1).await.unwrap();
        assert_eq!(tail[0].outcome, RUNNING, "{}", engine.name);
        let v = store.verify_audit(None).await.unwrap();
        assert_eq!(
            (v.chained, v.running, v.problem),
            (2, 1, None),
            "{}",
            engine.name
        );

        // A record finished meanwhile takes the next position; the intent joins after it.
        records(&store, 1).await;
        store.finish_audit(id, ok("# notes")).await.unwrap();
        // A second outcome for the same intent changes nothing.
        store.finish_audit(id, ok("other")).await.unwrap();

        let exported = store.audit_export(AuditQuery::default()).await.unwrap();
        let intent = exported
            .iter()
            .find(|e| e.entry.record.args_summary == s)
            .unwrap();
        assert_eq!(intent.entry.record.outcome, "ok", "{}", engine.name);
        assert_eq!(intent.entry.record.duration_ms, Some(7), "{}", engine.name);
        assert_eq!(intent.detail.layer, "tool", "{}", engine.name);
        assert_eq!(
            intent.detail.result_digest.as_deref(),
            Some(tackle_store::text_digest("# notes").as_str()),
            "{}",
            engine.name
        );
        assert_eq!(intent.chain_seq, Some(4), "{}", engine.name);
        let v = store.verify_audit(None).await.unwrap();
        assert_eq!(
            (v.chained, v.running, v.problem),
            (4, 0, None),
            "{}",
            engine.name
        );
    }
}

#[tokio::test]
async fn verify_names_a_record_altered_or_removed_behind_the_stores_back() {
    for engine in engines() {
        let store = engine.daemon(0);
        records(&store, 6).await;
        store.seal_audit().await.unwrap();
        let v = store.verify_audit(None).await.unwrap();
        assert_eq!(
            (v.problem, v.checkpoints, v.unsigned_tail),
            (None, 1, 0),
            "{}",
            engine.name
        );
        let ids: Vec<i64> = store
            .audit_export(AuditQuery::default())
            .await
            .unwrap()
            .iter()
            .map(|e| e.id)
            .collect();

        engine.raw(&format!(
            "UPDATE audit SET why = 'nothing to see' WHERE id = {}",
            ids[2]
        ));
        let v = store.verify_audit(None).await.unwrap();
        assert_eq!(
            v.problem,
            Some(ChainProblem::Altered { id: ids[2], seq: 3 }),
            "{}",
            engine.name
        );
        engine.raw(&format!("UPDATE audit SET why = '' WHERE id = {}", ids[2]));
        assert_eq!(
            store.verify_audit(None).await.unwrap().problem,
            None,
            "{}",
            engine.name
        );

        engine.raw(&format!("DELETE FROM audit WHERE id = {}", ids[3]));
        let v = store.verify_audit(None).await.unwrap();
        assert_eq!(
            v.problem,
            Some(ChainProblem::Removed {
                from: 4,
                to: 4,
                after: Some(ids[2]),
                before: ids[4],
            }),
            "{}",
            engine.name
        );
        let named = v.problem.unwrap().to_string();
        assert!(named.contains(&format!("#{}", ids[4])), "{named}");

        // The end cut off: the signed checkpoint still names position 6.
        engine.raw(&format!("DELETE FROM audit WHERE id >= {}", ids[3]));
        let v = store.verify_audit(None).await.unwrap();
        assert!(
            matches!(
                v.problem,
                Some(ChainProblem::Truncated {
                    checkpoint: 6,
                    last: 3,
                    ..
                })
            ),
            "{}: {:?}",
            engine.name,
            v.problem
        );
    }
}

#[tokio::test]
async fn a_checkpoint_counts_only_when_a_trusted_key_signed_it() {
    for engine in engines() {
        let store = engine.daemon(0);
        records(&store, 3).await;
        store.seal_audit().await.unwrap();
        let own = store.audit_public_key().await.unwrap();
        assert_eq!(store.verify_audit(Some(own)).await.unwrap().problem, None);
        let v = store.verify_audit(Some([7; 32])).await.unwrap();
        assert!(
            matches!(v.problem, Some(ChainProblem::OtherKey { seq: 3, .. })),
            "{}: {:?}",
            engine.name,
            v.problem
        );
        // A signature over another position does not verify.
        engine.raw("UPDATE audit_checkpoints SET seq = 2");
        let v = store.verify_audit_pinned(vec![own]).await.unwrap();
        assert_eq!(
            v.problem,
            Some(ChainProblem::BadSignature { seq: 2 }),
            "{}",
            engine.name
        );
    }
}

/// Every finished record's summary, in chain order.
async fn chain_order(store: &Store) -> Vec<String> {
    let exported = store.audit_export(AuditQuery::default()).await.unwrap();
    let mut chained: Vec<_> = exported
        .into_iter()
        .filter_map(|e| e.chain_seq.map(|s| (s, e.entry.record.args_summary)))
        .collect();
    chained.sort();
    for (n, (seq, _)) in chained.iter().enumerate() {
        assert_eq!(*seq, n as i64 + 1, "positions run 1, 2, … without a gap");
    }
    chained.into_iter().map(|(_, s)| s).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_daemons_appending_at_once_leave_one_chain_with_every_record_once() {
    const TASKS: usize = 4;
    const PER_TASK: usize = 60;
    for engine in engines() {
        let daemons = [engine.daemon(0), engine.daemon(1)];
        let mut tasks = Vec::new();
        for (d, store) in daemons.iter().enumerate() {
            for t in 0..TASKS {
                let store = store.clone();
                tasks.push(tokio::spawn(async move {
                    for i in 0..PER_TASK {
                        let s = format!("{{\"daemon\":{d},\"task\":{t},\"i\":{i}}}");
                        if i % 3 == 0 {
                            store
                                .append_audit_with(entry("s", "deny_me", &s), detail(&s))
                                .await
                                .unwrap();
                        } else {
                            let id = store
                                .begin_audit_with(entry("s", "calculate", &s), detail(&s))
                                .await
                                .unwrap();
                            store.finish_audit(id, ok(&s)).await.unwrap();
                        }
                        if i % 25 == 0 {
                            // Each daemon signs the head it sees, with its own key.
                            store.seal_audit().await.unwrap();
                        }
                    }
                }));
            }
        }
        for t in tasks {
            t.await.unwrap();
        }
        for store in &daemons {
            store.seal_audit().await.unwrap();
        }

        let total = 2 * TASKS * PER_TASK;
        let order = chain_order(&daemons[0]).await;
        assert_eq!(order.len(), total, "{}", engine.name);
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for s in &order {
            *seen.entry(s.as_str()).or_default() += 1;
        }
        assert_eq!(
            seen.len(),
            total,
            "{}: every record exactly once",
            engine.name
        );
        assert!(seen.values().all(|n| *n == 1), "{}", engine.name);
        // Each task's records are in the chain in the order the task wrote them.
        for d in 0..2 {
            for t in 0..TASKS {
                let prefix = format!("{{\"daemon\":{d},\"task\":{t},");
                let mine: Vec<&String> = order.iter().filter(|s| s.starts_with(&prefix)).collect();
                let expected: Vec<String> = (0..PER_TASK)
                    .map(|i| format!("{{\"daemon\":{d},\"task\":{t},\"i\":{i}}}"))
                    .collect();
                assert_eq!(mine, expected.iter().collect::<Vec<_>>(), "{}", engine.name);
            }
        }
        // Both daemons see the one order, and each verifies the whole chain, checkpoints
        // signed by either daemon included.
        assert_eq!(chain_order(&daemons[1]).await, order, "{}", engine.name);
        for store in &daemons {
            let v = store.verify_audit(None).await.unwrap();
            assert_eq!(v.problem, None, "{}", engine.name);
            assert_eq!(v.chained, total as u64, "{}", engine.name);
            assert_eq!((v.running, v.unsigned_tail), (0, 0), "{}", engine.name);
            assert!(v.checkpoints >= 2, "{}", engine.name);
        }
        if engine.url.is_some() {
            let keys = [
                daemons[0].audit_public_key().await.unwrap(),
                daemons[1].audit_public_key().await.unwrap(),
            ];
            assert_ne!(keys[0], keys[1], "each daemon signs with its own key");
            let signers = daemons[0].audit_signers().await.unwrap();
            let mut registered: Vec<String> =
                signers.iter().map(|s| s.public_key.clone()).collect();
            registered.sort();
            let mut expected: Vec<String> = keys.iter().map(|k| tackle_store::hex(k)).collect();
            expected.sort();
            assert_eq!(registered, expected);
            assert!(signers.iter().all(|s| !s.state_dir.is_empty()));
            // Both daemons signed: pinning one key leaves the other's checkpoints untrusted.
            let signed_by = engine.column("SELECT hex(public_key) FROM audit_checkpoints");
            assert!(signed_by
                .iter()
                .any(|k| k.as_deref() == Some(expected[0].as_str())));
            assert!(signed_by
                .iter()
                .any(|k| k.as_deref() == Some(expected[1].as_str())));
            let pinned = daemons[0].verify_audit_pinned(vec![keys[0]]).await.unwrap();
            assert!(
                matches!(pinned.problem, Some(ChainProblem::OtherKey { .. })),
                "{:?}",
                pinned.problem
            );
            let both = daemons[0].verify_audit_pinned(keys.to_vec()).await.unwrap();
            assert_eq!(both.problem, None);
        }
    }
}

/// Threads with a runtime each, over two daemons' handles: what two processes do.
#[test]
fn appends_from_threads_of_two_daemons_form_one_chain() {
    const THREADS: usize = 3;
    const PER_THREAD: usize = 40;
    for engine in engines() {
        let daemons = [engine.daemon(0), engine.daemon(1)];
        std::thread::scope(|scope| {
            for (d, store) in daemons.iter().enumerate() {
                for t in 0..THREADS {
                    scope.spawn(move || {
                        let rt = tokio::runtime::Builder::new_current_thread()
                            .enable_all()
                            .build()
                            .unwrap();
                        rt.block_on(async {
                            for i in 0..PER_THREAD {
                                let s = format!("{d}-{t}-{i}");
                                store
                                    .append_audit_with(entry("s", "calculate", &s), detail(&s))
                                    .await
                                    .unwrap();
                            }
                        });
                    });
                }
            }
        });
        let rt = tokio::runtime::Runtime::new().unwrap();
        let order = rt.block_on(chain_order(&daemons[1]));
        assert_eq!(order.len(), 2 * THREADS * PER_THREAD, "{}", engine.name);
        let mut unique = order.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), order.len(), "{}", engine.name);
        let v = rt.block_on(daemons[0].verify_audit(None)).unwrap();
        assert_eq!(
            (v.problem, v.chained),
            (None, order.len() as u64),
            "{}",
            engine.name
        );
    }
}

/// On a shared engine a daemon that opens closes the intents of this host's processes that
/// ended, and never those of another machine (whose boot id and pids are its own).
#[cfg(feature = "postgres")]
#[tokio::test]
async fn only_this_hosts_ended_intents_are_closed_as_interrupted() {
    let Some(engine) = engines().into_iter().find(|e| e.url.is_some()) else {
        return;
    };
    let store = engine.daemon(0);
    let live = store
        .begin_audit(entry("s", "calculate", "live"))
        .await
        .unwrap();
    let owner = engine.column("SELECT owner FROM audit WHERE owner IS NOT NULL");
    let owner = owner[0].clone().unwrap();
    let parts: Vec<&str> = owner.split(' ').collect();
    assert_eq!(
        parts.len(),
        5,
        "pid, start, pid namespace, boot and host: {owner}"
    );
    let dead_here = format!("4294967295 {}", parts[1..].join(" "));
    let dead_elsewhere = format!("4294967295 {} another-host", parts[1..4].join(" "));
    let rebooted_elsewhere = format!("{} another-boot another-host", parts[..3].join(" "));
    for (summary, owner) in [
        ("dead-here", &dead_here),
        ("dead-elsewhere", &dead_elsewhere),
        ("rebooted-elsewhere", &rebooted_elsewhere),
    ] {
        engine.raw(&format!(
            "INSERT INTO audit (ts, agent, tool, args_summary, verdict, rule, why, outcome, owner)
             VALUES ('2026-01-01T00:00:00.000000Z', 'default', 'calculate', '{summary}', 'allow', '', '', 'running', '{owner}')"
        ));
    }
    // Another daemon on this host starts.
    let other = engine.daemon(1);
    let outcomes: HashMap<String, String> = other
        .audit_query(AuditQuery::default())
        .await
        .unwrap()
        .into_iter()
        .map(|r| (r.args_summary, r.outcome))
        .collect();
    assert_eq!(outcomes["dead-here"], tackle_store::INTERRUPTED);
    assert_eq!(outcomes["dead-elsewhere"], RUNNING);
    assert_eq!(outcomes["rebooted-elsewhere"], RUNNING);
    assert_eq!(outcomes["live"], RUNNING);
    let v = other.verify_audit(None).await.unwrap();
    assert_eq!((v.problem, v.chained, v.running), (None, 1, 3));
    store.finish_audit(live, ok("done")).await.unwrap();
    let v = other.verify_audit(None).await.unwrap();
    assert_eq!((v.problem, v.chained, v.running), (None, 2, 2));
}
