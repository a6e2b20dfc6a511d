use super::*;

fn entry(tool: &str, caller: &str) -> AuditEntry {
    AuditEntry {
        record: AuditRecord {
            ts: String::new(),
            session_id: Some("s1".into()),
            agent: "default".into(),
            tool: tool.into(),
            args_summary: "{}".into(),
            verdict: Verdict::Allow,
            rule: String::new(),
            why: String::new(),
            approver: Some("policy".into()),
            outcome: "ok".into(),
            duration_ms: Some(7),
        },
        caller: caller.into(),
    }
}

async fn outcomes(store: &Store) -> Vec<(String, String, String)> {
    store
        .audit_entries(AuditQuery::default())
        .await
        .unwrap()
        .into_iter()
        .map(|e| (e.record.tool, e.record.outcome, e.caller))
        .collect()
}

fn owners(path: &std::path::Path) -> Vec<Option<String>> {
    let conn = rusqlite::Connection::open(path).unwrap();
    let mut stmt = conn.prepare("SELECT owner FROM audit ORDER BY id").unwrap();
    let rows = stmt.query_map([], |r| r.get(0)).unwrap();
    rows.map(Result::unwrap).collect()
}

#[tokio::test]
async fn an_intent_is_running_until_its_outcome_replaces_it_in_the_same_row() {
    let store = Store::open_in_memory().unwrap();
    let id = store.begin_audit(entry("shell", "mcp")).await.unwrap();
    let running = store.audit_entries(AuditQuery::default()).await.unwrap();
    assert_eq!(running.len(), 1);
    assert_eq!(running[0].record.outcome, RUNNING);
    assert_eq!(running[0].record.duration_ms, None);
    assert_eq!(running[0].caller, "mcp");
    store
        .finish_audit(
            id,
            AuditOutcome {
                outcome: "failed".into(),
                rule: String::new(),
                why: "exit 1".into(),
                duration_ms: Some(42),
                ..AuditOutcome::default()
            },
        )
        .await
        .unwrap();
    let done = store.audit_entries(AuditQuery::default()).await.unwrap();
    assert_eq!(done.len(), 1, "one row per call");
    assert_eq!(done[0].record.outcome, "failed");
    assert_eq!(done[0].record.why, "exit 1");
    assert_eq!(done[0].record.duration_ms, Some(42));
    assert_eq!(done[0].record.approver.as_deref(), Some("policy"));
}

#[tokio::test]
async fn opening_the_store_closes_only_the_intents_whose_process_is_gone() {
    let me = owner::this_process();
    let Some((rest, _boot)) = me.rsplit_once(' ') else {
        eprintln!("SKIPPED: this process's identity cannot be read (no /proc)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store.begin_audit(entry("killed", "cli")).await.unwrap();
    store.begin_audit(entry("alive", "model")).await.unwrap();
    store
        .append_audit_entry(entry("done", "cli"))
        .await
        .unwrap();
    let path = dir.path().join(crate::DB_FILE);
    // The first intent's process ran in an earlier boot: it is gone, whatever its pid.
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute(
            "UPDATE audit SET owner = ?1 WHERE tool = 'killed'",
            [format!("{rest} an-earlier-boot")],
        )
        .unwrap();
    drop(store);

    let reopened = Store::open(dir.path()).unwrap();
    assert_eq!(
        outcomes(&reopened).await,
        [
            ("killed".into(), INTERRUPTED.into(), "cli".into()),
            ("alive".into(), RUNNING.into(), "model".into()),
            ("done".into(), "ok".into(), "cli".into()),
        ]
    );
    let killed = &reopened.audit_tail(3).await.unwrap()[0];
    assert!(
        killed.why.contains("ended before the call did"),
        "{killed:?}"
    );
    assert_eq!(owners(&path), [None, Some(me.to_string()), None]);
}
