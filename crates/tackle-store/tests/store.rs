mod engines;

use serde_json::json;
use tackle_protocol::Verdict;
use tackle_store::{
    AuditRecord, Entry, EntryKind, MemoryAccess, RecallQuery, SessionId, Store, StoreError,
    ARGS_SUMMARY_MAX_BYTES,
};

fn user(text: &str) -> Entry {
    Entry::new(EntryKind::User, json!({ "text": text }))
}

fn audit(tool: &str, args_summary: &str) -> AuditRecord {
    AuditRecord {
        ts: String::new(),
        session_id: Some("s1".into()),
        agent: "default".into(),
        tool: tool.into(),
        args_summary: args_summary.into(),
        verdict: Verdict::Deny,
        rule: "tool_policies.shell.grants.shell.deny[0] = \"rm\"".into(),
        why: "rm is denied".into(),
        approver: None,
        outcome: "denied".into(),
        duration_ms: Some(3),
    }
}

#[tokio::test]
async fn reopening_the_state_dir_keeps_sessions_entries_audit_and_memory() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("nested/state");
    let own = MemoryAccess::own_only("default");
    let session = {
        let store = Store::open(&state).unwrap();
        let s = store.create_session("default").await.unwrap();
        store.append(&s, user("hello")).await.unwrap();
        store
            .append_audit(audit("shell", "rm -rf /"))
            .await
            .unwrap();
        store
            .remember(&own, None, "color", "the sky is blue", &[])
            .await
            .unwrap();
        s
    };
    assert!(state.join("tackle.db").exists());
    let store = Store::open(&state).unwrap();
    assert!(store.session_exists(&session).await.unwrap());
    let entries = store.entries(&session).await.unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].content, json!({"text": "hello"}));
    assert_eq!(store.audit_tail(10).await.unwrap().len(), 1);
    let q = RecallQuery {
        query: "sky".into(),
        tags: vec![],
        limit: 5,
    };
    assert_eq!(store.recall(&own, None, &q).await.unwrap().len(), 1);
}

#[tokio::test]
async fn the_database_runs_in_wal_mode() {
    let dir = tempfile::tempdir().unwrap();
    let _store = Store::open(dir.path()).unwrap();
    assert!(dir.path().join("tackle.db-wal").exists());
}

#[tokio::test]
async fn concurrent_appends_get_gapless_unique_seqs_in_commit_order() {
    let store = Store::open_in_memory().unwrap();
    let s = store.create_session("default").await.unwrap();
    let mut tasks = Vec::new();
    for i in 0..50 {
        let (store, s) = (store.clone(), s.clone());
        tasks.push(tokio::spawn(async move {
            store.append(&s, user(&format!("m{i}"))).await.unwrap()
        }));
    }
    let mut seqs: Vec<i64> = Vec::new();
    for t in tasks {
        seqs.push(t.await.unwrap().seq);
    }
    seqs.sort_unstable();
    assert_eq!(seqs, (1..=50).collect::<Vec<_>>());
    let stored = store.entries(&s).await.unwrap();
    let ordered: Vec<i64> = stored.iter().map(|e| e.seq).collect();
    assert_eq!(ordered, (1..=50).collect::<Vec<_>>());
    // ids grow with seq: the order read back is the order written.
    assert!(stored.windows(2).all(|w| w[0].id < w[1].id));
}

#[tokio::test]
async fn two_handles_on_one_file_append_without_losing_or_duplicating_seqs() {
    let dir = tempfile::tempdir().unwrap();
    let a = Store::open(dir.path()).unwrap();
    let b = Store::open(dir.path()).unwrap();
    let s = a.create_session("default").await.unwrap();
    let mut tasks = Vec::new();
    for i in 0..20 {
        let store = if i % 2 == 0 { a.clone() } else { b.clone() };
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            store.append(&s, user("x")).await.map(|e| e.seq)
        }));
    }
    let mut seqs = Vec::new();
    for t in tasks {
        seqs.push(t.await.unwrap().unwrap());
    }
    seqs.sort_unstable();
    assert_eq!(seqs, (1..=20).collect::<Vec<_>>());
}

#[tokio::test]
async fn appending_to_an_unknown_session_is_an_error_naming_it() {
    let store = Store::open_in_memory().unwrap();
    let err = store
        .append(&SessionId::from("nope"), user("x"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::UnknownSession(ref id) if id == "nope"),
        "{err}"
    );
    assert!(err.to_string().contains("nope"));
    assert!(store.entries(&SessionId::from("nope")).await.is_err());
}

#[tokio::test]
async fn entries_since_last_summary_start_at_the_latest_summary() {
    let store = Store::open_in_memory().unwrap();
    let s = store.create_session("default").await.unwrap();
    assert!(store
        .entries_since_last_summary(&s)
        .await
        .unwrap()
        .is_empty());
    store.append(&s, user("one")).await.unwrap();
    store
        .append(&s, Entry::new(EntryKind::Summary, json!("first summary")))
        .await
        .unwrap();
    store.append(&s, user("two")).await.unwrap();
    store
        .append(&s, Entry::new(EntryKind::Summary, json!("second summary")))
        .await
        .unwrap();
    store.append(&s, user("three")).await.unwrap();
    let tail = store.entries_since_last_summary(&s).await.unwrap();
    let kinds: Vec<EntryKind> = tail.iter().map(|e| e.kind).collect();
    assert_eq!(kinds, [EntryKind::Summary, EntryKind::User]);
    assert_eq!(tail[0].content, json!("second summary"));
    assert_eq!(tail[0].seq, 4);
}

#[tokio::test]
async fn without_a_summary_every_entry_is_returned() {
    let store = Store::open_in_memory().unwrap();
    let s = store.create_session("default").await.unwrap();
    store.append(&s, user("one")).await.unwrap();
    store
        .append(
            &s,
            Entry::new(EntryKind::ToolCall, json!({"name": "get_time"})),
        )
        .await
        .unwrap();
    assert_eq!(store.entries_since_last_summary(&s).await.unwrap().len(), 2);
}

#[tokio::test]
async fn sessions_are_listed_most_recently_active_first_with_counts() {
    let store = Store::open_in_memory().unwrap();
    let first = store.create_session("default").await.unwrap();
    let second = store.create_session("skim").await.unwrap();
    assert_ne!(first, second);
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    store.append(&first, user("later")).await.unwrap();
    let list = store.list_sessions().await.unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0].id, first);
    assert_eq!(list[0].entries, 1);
    assert_eq!(list[1].agent, "skim");
}

#[tokio::test]
async fn ensure_session_creates_a_named_session_once() {
    let store = Store::open_in_memory().unwrap();
    let id = SessionId::from("my-task");
    assert!(store.ensure_session(&id, "default").await.unwrap());
    assert!(!store.ensure_session(&id, "default").await.unwrap());
    assert!(store.session_exists(&id).await.unwrap());
}

#[tokio::test]
async fn audit_tail_returns_the_last_n_oldest_first() {
    let store = Store::open_in_memory().unwrap();
    for i in 0..5 {
        store
            .append_audit(audit(&format!("t{i}"), "x"))
            .await
            .unwrap();
    }
    let tail = store.audit_tail(3).await.unwrap();
    let tools: Vec<&str> = tail.iter().map(|r| r.tool.as_str()).collect();
    assert_eq!(tools, ["t2", "t3", "t4"]);
    assert_eq!(tail[0].verdict, Verdict::Deny);
    assert_eq!(tail[0].duration_ms, Some(3));
    assert!(!tail[0].ts.is_empty());
}

/// The audit insert runs in the calling task when the lock is free; behind another process's
/// write it must neither fail nor hold the runtime's only thread while it waits.
#[tokio::test(flavor = "current_thread")]
async fn an_audit_append_behind_another_writer_waits_off_the_runtime_and_lands() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store.append_audit(audit("first", "x")).await.unwrap();
    // A second process (a daemon, say) is in the middle of a write.
    let other = rusqlite::Connection::open(dir.path().join("tackle.db")).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let appending = tokio::spawn({
        let store = store.clone();
        async move { store.append_audit(audit("second", "y")).await }
    });
    // This task runs on the same single thread: it wakes on time only if the append waits
    // elsewhere (the store's busy timeout is 5 s).
    let asleep = std::time::Instant::now();
    tokio::time::sleep(std::time::Duration::from_millis(150)).await;
    let slept = asleep.elapsed();
    assert!(
        slept < std::time::Duration::from_secs(2),
        "the runtime's only thread was held for {slept:?} while the append waited for the lock"
    );
    assert!(
        !appending.is_finished(),
        "the append gave up or did not wait for the lock"
    );
    other.execute_batch("COMMIT").unwrap();
    appending.await.unwrap().unwrap();
    let tail = store.audit_tail(5).await.unwrap();
    let tools: Vec<&str> = tail.iter().map(|r| r.tool.as_str()).collect();
    assert_eq!(tools, ["first", "second"]);
}

/// Inline audit inserts leave checkpointing to the blocking pool; it must still happen, or
/// the log grows without end (each insert adds two pages of 4 KiB).
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn the_log_is_checkpointed_while_only_audit_records_are_appended() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    for i in 0..4_000 {
        store
            .append_audit(audit(&format!("t{i}"), "x"))
            .await
            .unwrap();
    }
    let wal = std::fs::metadata(dir.path().join("tackle.db-wal"))
        .unwrap()
        .len();
    // Unchecked, 8 000 pages would be over 32 MB; checkpoints every 1 000 pages keep it
    // near 4 MB (a little more while a checkpoint runs beside the inserts).
    assert!(wal < 12 * 1024 * 1024, "the log grew to {wal} bytes");
    assert_eq!(store.audit_tail(1).await.unwrap()[0].tool, "t3999");
}

#[tokio::test]
async fn audit_args_summaries_are_cut_at_a_char_boundary() {
    let store = Store::open_in_memory().unwrap();
    // 'é' is two bytes: an odd cap would split one if the cut were by bytes.
    let long = "é".repeat(ARGS_SUMMARY_MAX_BYTES);
    store
        .append_audit(audit("write_file", &long))
        .await
        .unwrap();
    let rec = &store.audit_tail(1).await.unwrap()[0];
    assert!(rec.args_summary.len() <= ARGS_SUMMARY_MAX_BYTES);
    assert!(rec.args_summary.chars().all(|c| c == 'é'));
    assert!(!rec.args_summary.is_empty());
}

#[tokio::test]
async fn an_unwritable_state_dir_is_an_error_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    let err = Store::open(&file.join("sub")).unwrap_err();
    assert!(err.to_string().contains("state_dir"), "{err}");
}

#[tokio::test]
async fn a_database_from_a_newer_tackle_is_refused_with_advice() {
    let dir = tempfile::tempdir().unwrap();
    drop(Store::open(dir.path()).unwrap());
    let conn = rusqlite::Connection::open(dir.path().join("tackle.db")).unwrap();
    conn.execute(
        "INSERT INTO schema_migrations (version, applied_at) VALUES (999, 'later')",
        [],
    )
    .unwrap();
    drop(conn);
    let err = Store::open(dir.path()).unwrap_err();
    assert!(
        matches!(err, StoreError::NewerSchema { found: 999, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("upgrade tackle"));
}

#[tokio::test]
async fn reopening_applies_no_migration_twice() {
    let dir = tempfile::tempdir().unwrap();
    drop(Store::open(dir.path()).unwrap());
    drop(Store::open(dir.path()).unwrap());
    let conn = rusqlite::Connection::open(dir.path().join("tackle.db")).unwrap();
    let (rows, distinct): (i64, i64) = conn
        .query_row(
            "SELECT COUNT(*), COUNT(DISTINCT version) FROM schema_migrations",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(rows, distinct);
    assert!(rows >= 3);
}

#[tokio::test]
async fn messages_round_trip_through_entries_with_kinds_from_roles() {
    use tackle_protocol::message::Message;
    use tackle_protocol::ToolCall;
    let store = Store::open_in_memory().unwrap();
    let s = store.create_session("default").await.unwrap();
    let call = ToolCall {
        id: "c1".into(),
        name: "get_time".into(),
        arguments: json!({}),
    };
    let messages = vec![
        Message::user("what time is it?"),
        Message::assistant("", vec![call]),
        Message::tool_result("c1", "12:00", false),
    ];
    for m in &messages {
        store.append(&s, Entry::message(m)).await.unwrap();
    }
    let stored = store.entries(&s).await.unwrap();
    let kinds: Vec<EntryKind> = stored.iter().map(|e| e.kind).collect();
    assert_eq!(
        kinds,
        [EntryKind::User, EntryKind::Assistant, EntryKind::ToolResult]
    );
    let back: Vec<Message> = stored.iter().filter_map(|e| e.message()).collect();
    assert_eq!(back, messages);
}

/// The schedules suite runs on every engine this build has: SQLite, and PostgreSQL where a
/// server is reachable (`.ci/postgres-peers.sh`).
mod schedules {
    use super::engines::engines;
    use super::*;
    use tackle_store::{NewSchedule, ScheduleKind, ScheduleUpdate};
    use time::{Duration, OffsetDateTime};

    fn new(name: &str, kind: ScheduleKind, next: Option<OffsetDateTime>) -> NewSchedule {
        NewSchedule {
            agent: "default".into(),
            name: name.into(),
            kind,
            spec: "0 9 * * *".into(),
            message: format!("run {name}"),
            next_fire: next,
            target: tackle_store::Target::Fresh,
            session_id: None,
            max_fires: None,
            expires_at: None,
        }
    }

    fn t0() -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap()
    }

    #[tokio::test]
    async fn a_second_schedule_with_the_same_name_is_refused() {
        for engine in engines() {
            let store = engine.open();
            store
                .add_schedule(new("daily", ScheduleKind::Cron, None))
                .await
                .unwrap();
            let err = store
                .add_schedule(new("daily", ScheduleKind::Cron, None))
                .await
                .unwrap_err();
            assert!(matches!(err, StoreError::DuplicateSchedule { .. }), "{err}");
            let mut other_agent = new("daily", ScheduleKind::Cron, None);
            other_agent.agent = "skim".into();
            assert!(store.add_schedule(other_agent).await.is_ok());
        }
    }

    #[tokio::test]
    async fn due_schedules_are_the_enabled_ones_at_or_before_now_earliest_first() {
        for engine in engines() {
            let store = engine.open();
            let now = t0();
            store
                .add_schedule(new(
                    "later",
                    ScheduleKind::Cron,
                    Some(now + Duration::minutes(5)),
                ))
                .await
                .unwrap();
            store
                .add_schedule(new("b", ScheduleKind::Cron, Some(now)))
                .await
                .unwrap();
            store
                .add_schedule(new(
                    "a",
                    ScheduleKind::Cron,
                    Some(now - Duration::minutes(1)),
                ))
                .await
                .unwrap();
            store
                .add_schedule(new(
                    "off",
                    ScheduleKind::Cron,
                    Some(now - Duration::hours(1)),
                ))
                .await
                .unwrap();
            store
                .modify_schedule(
                    "default",
                    "off",
                    ScheduleUpdate {
                        enabled: Some(false),
                        ..Default::default()
                    },
                )
                .await
                .unwrap()
                .unwrap();
            let due: Vec<String> = store
                .due_schedules(now)
                .await
                .unwrap()
                .into_iter()
                .map(|s| s.name)
                .collect();
            assert_eq!(due, ["a", "b"]);
            assert_eq!(
                store.next_fire().await.unwrap(),
                Some(now - Duration::minutes(1))
            );
        }
    }

    #[tokio::test]
    async fn a_once_schedule_that_fired_is_disabled_and_never_due_again() {
        for engine in engines() {
            let store = engine.open();
            let s = store
                .add_schedule(new("once", ScheduleKind::Once, Some(t0())))
                .await
                .unwrap();
            assert_eq!(s.kind, ScheduleKind::Once);
            store.record_fire(s.id, t0(), None).await.unwrap();
            assert!(store
                .due_schedules(t0() + Duration::days(1))
                .await
                .unwrap()
                .is_empty());
            let after = store
                .get_schedule("default", "once")
                .await
                .unwrap()
                .unwrap();
            assert!(!after.enabled);
            assert_eq!(after.last_fired, Some(t0()));
            assert_eq!(store.next_fire().await.unwrap(), None);
        }
    }

    #[tokio::test]
    async fn a_recurring_fire_moves_the_next_time_forward() {
        for engine in engines() {
            let store = engine.open();
            let s = store
                .add_schedule(new("daily", ScheduleKind::Cron, Some(t0())))
                .await
                .unwrap();
            store
                .record_fire(s.id, t0(), Some(t0() + Duration::days(1)))
                .await
                .unwrap();
            assert!(store
                .due_schedules(t0() + Duration::hours(1))
                .await
                .unwrap()
                .is_empty());
            assert_eq!(
                store
                    .due_schedules(t0() + Duration::days(1))
                    .await
                    .unwrap()
                    .len(),
                1
            );
        }
    }

    #[tokio::test]
    async fn schedules_can_be_modified_listed_and_removed() {
        for engine in engines() {
            let store = engine.open();
            store
                .add_schedule(new("daily", ScheduleKind::Cron, None))
                .await
                .unwrap();
            let update = ScheduleUpdate {
                message: Some("new task".into()),
                next_fire: Some(Some(t0())),
                ..Default::default()
            };
            let s = store
                .modify_schedule("default", "daily", update)
                .await
                .unwrap()
                .unwrap();
            assert_eq!((s.message.as_str(), s.next_fire), ("new task", Some(t0())));
            assert_eq!(s.spec, "0 9 * * *");
            assert!(store
                .modify_schedule("default", "nope", ScheduleUpdate::default())
                .await
                .unwrap()
                .is_none());
            assert_eq!(
                store.list_schedules(Some("default")).await.unwrap().len(),
                1
            );
            assert!(store.list_schedules(Some("skim")).await.unwrap().is_empty());
            assert!(store.remove_schedule("default", "daily").await.unwrap());
            assert!(!store.remove_schedule("default", "daily").await.unwrap());
        }
    }

    fn claim(
        id: i64,
        due: OffsetDateTime,
        now: OffsetDateTime,
        owner: &str,
    ) -> tackle_store::FireClaim {
        tackle_store::FireClaim {
            schedule_id: id,
            due,
            now,
            next: Some(due + Duration::days(1)),
            owner: owner.into(),
            lease: Duration::seconds(30),
        }
    }

    #[tokio::test]
    async fn two_claims_on_one_due_fire_run_it_once() {
        for engine in engines() {
            let store = engine.open();
            let s = store
                .add_schedule(new("daily", ScheduleKind::Cron, Some(t0())))
                .await
                .unwrap();
            let first = store
                .claim_fire(claim(s.id, t0(), t0(), "a"))
                .await
                .unwrap();
            let tackle_store::Claimed::Run { schedule, .. } = first else {
                panic!("first claim must run: {first:?}");
            };
            assert_eq!(schedule.fire_count, 1);
            let second = store
                .claim_fire(claim(s.id, t0(), t0(), "b"))
                .await
                .unwrap();
            assert_eq!(second, tackle_store::Claimed::Lost);
            let fires = store.fires("default", "daily", 10).await.unwrap();
            assert_eq!(fires.len(), 1);
            assert_eq!(fires[0].status, tackle_store::FireStatus::Running);
            assert_eq!(fires[0].owner.as_deref(), Some("a"));
        }
    }

    #[tokio::test]
    async fn the_next_fire_while_the_lease_is_held_is_skipped_and_after_it_expires_runs() {
        for engine in engines() {
            let store = engine.open();
            let s = store
                .add_schedule(new("daily", ScheduleKind::Cron, Some(t0())))
                .await
                .unwrap();
            store
                .claim_fire(claim(s.id, t0(), t0(), "a"))
                .await
                .unwrap();
            let next = t0() + Duration::days(1);
            // Still held: the lease runs 30 s from the first claim.
            let mut c = claim(s.id, next, t0() + Duration::seconds(10), "b");
            c.due = next;
            // The schedule was moved to `next` by the first claim.
            let skipped = store.claim_fire(c).await.unwrap();
            assert_eq!(skipped, tackle_store::Claimed::Skipped);
            let after = store
                .get_schedule("default", "daily")
                .await
                .unwrap()
                .unwrap();
            assert_eq!(after.fire_count, 1, "a skip is not a run");
            let later = after.next_fire.unwrap();
            let ran = store
                .claim_fire(claim(s.id, later, later + Duration::seconds(31), "b"))
                .await
                .unwrap();
            assert!(matches!(ran, tackle_store::Claimed::Run { .. }), "{ran:?}");
            let statuses: Vec<_> = store
                .fires("default", "daily", 10)
                .await
                .unwrap()
                .into_iter()
                .map(|f| (f.status, f.detail))
                .collect();
            assert_eq!(statuses[0].0, tackle_store::FireStatus::Running);
            assert_eq!(statuses[1].0, tackle_store::FireStatus::Skipped);
            // The run whose daemon let its lease lapse never reported: it is marked interrupted.
            assert_eq!(statuses[2].0, tackle_store::FireStatus::Failed);
            assert!(statuses[2].1.contains("interrupted"), "{statuses:?}");
        }
    }

    #[tokio::test]
    async fn fire_count_survives_a_reopen_and_the_last_allowed_fire_disables_the_schedule() {
        for engine in engines() {
            let id = {
                let store = engine.open();
                let mut n = new("twice", ScheduleKind::Cron, Some(t0()));
                n.max_fires = Some(1);
                let s = store.add_schedule(n).await.unwrap();
                store
                    .claim_fire(claim(s.id, t0(), t0(), "a"))
                    .await
                    .unwrap();
                s.id
            };
            let store = engine.open();
            let s = store
                .get_schedule("default", "twice")
                .await
                .unwrap()
                .unwrap();
            assert_eq!(
                (s.id, s.fire_count, s.enabled, s.next_fire),
                (id, 1, false, None),
                "{}",
                engine.name
            );
            assert!(s.bound_reached(t0()));
        }
    }

    #[tokio::test]
    async fn daemons_racing_for_the_same_fires_run_each_once() {
        for engine in engines() {
            // Four daemons, each with its own connection, claim the same 20 due fires.
            let daemons: Vec<Store> = (0..4).map(|_| engine.open()).collect();
            let mut ids = Vec::new();
            for i in 0..20 {
                let s = daemons[0]
                    .add_schedule(new(&format!("s{i}"), ScheduleKind::Cron, Some(t0())))
                    .await
                    .unwrap();
                ids.push(s.id);
            }
            let mut claims = tokio::task::JoinSet::new();
            for (d, store) in daemons.iter().enumerate() {
                for &id in &ids {
                    let store = store.clone();
                    claims.spawn(async move {
                        let won = store
                            .claim_fire(claim(id, t0(), t0(), &format!("daemon-{d}")))
                            .await
                            .unwrap();
                        (id, won)
                    });
                }
            }
            let mut runs = std::collections::BTreeMap::<i64, usize>::new();
            while let Some(joined) = claims.join_next().await {
                let (id, won) = joined.unwrap();
                match won {
                    tackle_store::Claimed::Run { .. } => *runs.entry(id).or_default() += 1,
                    tackle_store::Claimed::Lost => {}
                    other => panic!(
                        "{}: a racing claim is run or lost, not {other:?}",
                        engine.name
                    ),
                }
            }
            assert_eq!(runs.len(), ids.len(), "{}: every fire ran", engine.name);
            assert!(
                runs.values().all(|n| *n == 1),
                "{}: no fire ran twice: {runs:?}",
                engine.name
            );
            for i in 0..20 {
                let fires = daemons[3]
                    .fires("default", &format!("s{i}"), 10)
                    .await
                    .unwrap();
                assert_eq!(
                    fires.len(),
                    1,
                    "{}: one record per fire: {fires:?}",
                    engine.name
                );
            }
        }
    }

    #[tokio::test]
    async fn an_approval_raised_on_one_daemon_is_answered_once_through_any_other() {
        use tackle_store::{ApprovalReply, ApprovalStatus, NewApproval};
        for engine in engines() {
            let daemons: Vec<Store> = (0..3).map(|_| engine.open()).collect();
            let shell = |deadline: OffsetDateTime, preview: &str| NewApproval {
                deadline,
                agent: "default".into(),
                session_id: "s1".into(),
                tool: "shell".into(),
                preview: preview.into(),
                approvers: vec![],
                waiter: None,
            };
            let raised = daemons[0]
                .enqueue_approval(shell(
                    OffsetDateTime::now_utc() + Duration::minutes(5),
                    "rm -rf build",
                ))
                .await
                .unwrap();
            let seen = daemons[2]
                .list_pending_approvals(OffsetDateTime::now_utc())
                .await
                .unwrap();
            assert_eq!(seen.len(), 1, "{}: {seen:?}", engine.name);
            assert_eq!(seen[0].id, raised.id);
            // Two people answer at once through two other daemons: one answer wins.
            let (allow, deny) = tokio::join!(
                daemons[1].answer_approval(&raised.id, ApprovalReply::Allow, "alice"),
                daemons[2].answer_approval(&raised.id, ApprovalReply::Deny, "bob"),
            );
            assert!(
                allow.is_ok() != deny.is_ok(),
                "{}: exactly one answer wins",
                engine.name
            );
            let settled = daemons[0].approval(&raised.id).await.unwrap().unwrap();
            let winner = if allow.is_ok() {
                ("alice", ApprovalStatus::Allowed)
            } else {
                ("bob", ApprovalStatus::Denied)
            };
            assert_eq!(
                (settled.answered_by.as_deref(), settled.status),
                (Some(winner.0), winner.1),
                "{}",
                engine.name
            );
            // One past its deadline expires, whoever looks.
            let late = daemons[0]
                .enqueue_approval(shell(
                    OffsetDateTime::now_utc() - Duration::seconds(1),
                    "make",
                ))
                .await
                .unwrap();
            let expired = daemons[1]
                .expire_due_approvals(OffsetDateTime::now_utc())
                .await
                .unwrap();
            assert_eq!(expired, std::slice::from_ref(&late.id), "{}", engine.name);
            assert!(daemons[2]
                .answer_approval(&late.id, ApprovalReply::Allow, "alice")
                .await
                .is_err());
        }
    }

    #[tokio::test]
    async fn a_daemon_that_dies_mid_run_is_taken_over_and_the_record_says_by_whom() {
        for engine in engines() {
            let (a, b) = (engine.open(), engine.open());
            let s = a
                .add_schedule(new("hourly", ScheduleKind::Interval, Some(t0())))
                .await
                .unwrap();
            let mut first = claim(s.id, t0(), t0(), "daemon-a");
            first.next = Some(t0() + Duration::hours(1));
            assert!(matches!(
                a.claim_fire(first).await.unwrap(),
                tackle_store::Claimed::Run { .. }
            ));
            // daemon-a is killed: it never finishes nor renews. Its lease (30 s) lapses long
            // before the next fire, which daemon-b claims.
            drop(a);
            let next = t0() + Duration::hours(1);
            let mut second = claim(s.id, next, next, "daemon-b");
            second.next = Some(next + Duration::hours(1));
            assert!(matches!(
                b.claim_fire(second).await.unwrap(),
                tackle_store::Claimed::Run { .. }
            ));
            let fires = b.fires("default", "hourly", 10).await.unwrap();
            assert_eq!(fires.len(), 2, "{}: {fires:?}", engine.name);
            assert_eq!(fires[0].owner.as_deref(), Some("daemon-b"));
            assert_eq!(fires[1].status, tackle_store::FireStatus::Failed);
            assert!(
                fires[1].detail.contains("taken over by daemon-b"),
                "{}: {fires:?}",
                engine.name
            );
            let held = b.get_schedule("default", "hourly").await.unwrap().unwrap();
            assert_eq!(held.fire_count, 2, "{}", engine.name);
        }
    }

    #[tokio::test]
    async fn a_one_shot_is_deleted_when_its_run_finishes_and_its_record_stays() {
        for engine in engines() {
            let store = engine.open();
            let s = store
                .add_schedule(new("wakeup-1", ScheduleKind::Once, Some(t0())))
                .await
                .unwrap();
            let mut c = claim(s.id, t0(), t0(), "a");
            c.next = None;
            let tackle_store::Claimed::Run { fire_id, .. } = store.claim_fire(c).await.unwrap()
            else {
                panic!("must run");
            };
            assert!(store
                .get_schedule("default", "wakeup-1")
                .await
                .unwrap()
                .is_some());
            store
                .finish_fire(fire_id, tackle_store::FireStatus::Ok, String::new(), t0())
                .await
                .unwrap();
            assert!(store
                .get_schedule("default", "wakeup-1")
                .await
                .unwrap()
                .is_none());
            let fires = store.fires("default", "wakeup-1", 10).await.unwrap();
            assert_eq!(fires.len(), 1);
            assert_eq!(fires[0].status, tackle_store::FireStatus::Ok);
        }
    }
}

#[tokio::test]
async fn a_child_session_is_created_with_its_link_and_first_entry_at_once() {
    let store = Store::open_in_memory().unwrap();
    let parent = store.create_session("default").await.unwrap();
    let first = store
        .create_child_session("default", &parent, "default › w", user("go"))
        .await
        .unwrap();
    assert_eq!(first.seq, 1);
    let child = first.session_id.clone();
    let entries = store.entries(&child).await.unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].content, user("go").content);
    assert_eq!(entries[0].kind, EntryKind::User);
    let links = store.session_links().await.unwrap();
    assert_eq!(links.len(), 1);
    assert_eq!((&links[0].id, &links[0].parent), (&child, &parent));
    assert_eq!(links[0].path, "default › w");
    // The next append continues the numbering the transaction started.
    let next = store.append(&child, user("more")).await.unwrap();
    assert_eq!(next.seq, 2);
}
