//! The read side the `audit` and `sessions` commands use, and the modes of the store's files.

use serde_json::json;
use std::time::Duration;
use tackle_protocol::message::Message;
use tackle_protocol::Verdict;
use tackle_store::{AuditQuery, AuditRecord, AuditSince, Entry, SessionId, Store, StoreError};

fn record(ts: &str, session: &str, tool: &str) -> AuditRecord {
    AuditRecord {
        ts: ts.into(),
        session_id: Some(session.into()),
        agent: "default".into(),
        tool: tool.into(),
        args_summary: format!("{tool} args"),
        verdict: Verdict::Allow,
        rule: "default".into(),
        why: "allowed".into(),
        approver: None,
        outcome: "ok".into(),
        duration_ms: Some(1),
    }
}

async fn seeded() -> Store {
    let store = Store::open_in_memory().unwrap();
    for (ts, session, tool) in [
        ("2026-01-01T10:00:00.000000Z", "a", "shell"),
        ("2026-01-02T10:00:00.000000Z", "a", "calculate"),
        ("2026-01-03T10:00:00.000000Z", "b", "shell"),
        ("2026-01-04T10:00:00.000000Z", "b", "read_file"),
    ] {
        store.append_audit(record(ts, session, tool)).await.unwrap();
    }
    store
}

fn tools(records: &[AuditRecord]) -> Vec<&str> {
    records.iter().map(|r| r.tool.as_str()).collect()
}

#[tokio::test]
async fn audit_queries_filter_by_session_tool_and_time_oldest_first() {
    let store = seeded().await;
    let all = store.audit_query(AuditQuery::default()).await.unwrap();
    assert_eq!(tools(&all), ["shell", "calculate", "shell", "read_file"]);

    let a = AuditQuery {
        session: Some("a".into()),
        ..AuditQuery::default()
    };
    assert_eq!(
        tools(&store.audit_query(a).await.unwrap()),
        ["shell", "calculate"]
    );

    let shell = AuditQuery {
        tool: Some("shell".into()),
        ..AuditQuery::default()
    };
    let got = store.audit_query(shell).await.unwrap();
    assert_eq!(tools(&got), ["shell", "shell"]);
    assert_eq!(got[1].session_id.as_deref(), Some("b"));

    let since = AuditQuery {
        since: Some(AuditSince::At("2026-01-02T11:00:00+01:00".into())),
        ..AuditQuery::default()
    };
    // 11:00 at +01:00 is 10:00 UTC: the bound is inclusive.
    assert_eq!(
        tools(&store.audit_query(since).await.unwrap()),
        ["calculate", "shell", "read_file"]
    );

    let date = AuditQuery {
        since: Some(AuditSince::At("2026-01-03".into())),
        tool: Some("shell".into()),
        ..AuditQuery::default()
    };
    assert_eq!(tools(&store.audit_query(date).await.unwrap()), ["shell"]);
}

#[tokio::test]
async fn an_audit_limit_keeps_the_newest_matches() {
    let store = seeded().await;
    let q = AuditQuery {
        limit: Some(2),
        ..AuditQuery::default()
    };
    assert_eq!(
        tools(&store.audit_query(q).await.unwrap()),
        ["shell", "read_file"]
    );
    let none = AuditQuery {
        limit: Some(0),
        ..AuditQuery::default()
    };
    assert!(store.audit_query(none).await.unwrap().is_empty());
}

#[tokio::test]
async fn since_a_duration_counts_back_from_now() {
    let store = seeded().await;
    store.append_audit(record("", "c", "now")).await.unwrap();
    let hour = AuditQuery {
        since: Some(AuditSince::Ago(Duration::from_secs(3600))),
        ..AuditQuery::default()
    };
    assert_eq!(tools(&store.audit_query(hour).await.unwrap()), ["now"]);
    // Further back than any time can be written: everything.
    let forever = AuditQuery {
        since: Some(AuditSince::Ago(Duration::MAX)),
        ..AuditQuery::default()
    };
    assert_eq!(store.audit_query(forever).await.unwrap().len(), 5);
}

#[tokio::test]
async fn a_since_that_is_not_a_time_is_an_error_naming_it() {
    let store = seeded().await;
    for bad in ["yesterday", "2026-13-01", "", "2026-01-01T25:00:00Z"] {
        let q = AuditQuery {
            since: Some(AuditSince::At(bad.into())),
            ..AuditQuery::default()
        };
        let err = store.audit_query(q).await.unwrap_err();
        assert!(matches!(err, StoreError::BadTime { .. }), "{bad}: {err}");
        assert!(err.to_string().contains("RFC 3339"), "{err}");
    }
}

#[tokio::test]
async fn session_summaries_count_messages_and_preview_the_first_user_message() {
    let store = Store::open_in_memory().unwrap();
    let s = store.create_session("default").await.unwrap();
    let long = "é".repeat(300);
    for m in [
        Message::system("be brief"),
        Message::user(long.clone()),
        Message::assistant("ok", vec![]),
        Message::tool_result("c1", "42", false),
        Message::user("second"),
    ] {
        store.append(&s, Entry::message(&m)).await.unwrap();
    }
    let empty = store.create_session("other").await.unwrap();

    let all = store.session_summaries().await.unwrap();
    assert_eq!(all.len(), 2);
    let one = store.session_summary(&s).await.unwrap();
    assert_eq!(one.entries, 5);
    assert_eq!(one.messages, 4);
    assert_eq!(one.agent, "default");
    let preview = one.first_user_message.unwrap();
    assert_eq!(preview.chars().count(), 200);
    assert!(long.starts_with(&preview));

    let none = store.session_summary(&empty).await.unwrap();
    assert_eq!((none.entries, none.messages), (0, 0));
    assert_eq!(none.first_user_message, None);
}

#[tokio::test]
async fn a_preview_comes_from_plain_text_entries_and_skips_odd_content() {
    let store = Store::open_in_memory().unwrap();
    let s = store.create_session("default").await.unwrap();
    let user = |content| Entry::new(tackle_store::EntryKind::User, content);
    store
        .append(&s, user(json!(["not", "an object"])))
        .await
        .unwrap();
    store.append(&s, user(json!({"content": 7}))).await.unwrap();
    let one = store.session_summary(&s).await.unwrap();
    assert_eq!(one.first_user_message, None);
    store.append(&s, user(json!({"text": "hi"}))).await.unwrap();
    store
        .append(&s, user(json!({"text": "later"})))
        .await
        .unwrap();
    let one = store.session_summary(&s).await.unwrap();
    assert_eq!(one.first_user_message.as_deref(), Some("hi"));
}

#[tokio::test]
async fn deleting_a_session_removes_it_and_its_entries_only() {
    let store = Store::open_in_memory().unwrap();
    let gone = store.create_session("default").await.unwrap();
    let kept = store.create_session("default").await.unwrap();
    for s in [&gone, &kept] {
        store
            .append(s, Entry::message(&Message::user("hi")))
            .await
            .unwrap();
    }
    assert_eq!(store.delete_session(&gone).await.unwrap(), 1);
    assert!(!store.session_exists(&gone).await.unwrap());
    assert!(matches!(
        store.entries(&gone).await,
        Err(StoreError::UnknownSession(_))
    ));
    assert_eq!(store.entries(&kept).await.unwrap().len(), 1);
    // The id can be used again from scratch.
    assert!(store.ensure_session(&gone, "default").await.unwrap());
    assert!(store.entries(&gone).await.unwrap().is_empty());
}

#[tokio::test]
async fn unknown_sessions_are_errors_naming_them() {
    let store = Store::open_in_memory().unwrap();
    let nope = SessionId::from("nope");
    let err = store.delete_session(&nope).await.unwrap_err();
    assert!(matches!(err, StoreError::UnknownSession(ref id) if id == "nope"));
    let err = store.session_summary(&nope).await.unwrap_err();
    assert!(err.to_string().contains("nope"), "{err}");
}

#[cfg(unix)]
mod modes {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[tokio::test]
    async fn a_new_state_dir_is_0700_and_every_database_file_0600() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("a/state");
        let store = Store::open(&state).unwrap();
        store.create_session("default").await.unwrap();
        assert_eq!(mode(&state), 0o700);
        let files = store.files();
        let names: Vec<String> = files
            .iter()
            .filter_map(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .collect();
        // WAL mode with the connection open: all three exist.
        assert_eq!(names, ["tackle.db", "tackle.db-wal", "tackle.db-shm"]);
        for file in &files {
            assert_eq!(mode(file), 0o600, "{}", file.display());
        }
    }

    #[tokio::test]
    async fn existing_database_files_are_narrowed_and_an_existing_dir_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        std::fs::create_dir(&state).unwrap();
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o750)).unwrap();
        {
            let store = Store::open(&state).unwrap();
            store.create_session("default").await.unwrap();
        }
        for file in ["tackle.db", "tackle.db-wal", "tackle.db-shm"] {
            let path = state.join(file);
            if path.exists() {
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
            }
        }
        let store = Store::open(&state).unwrap();
        store.create_session("default").await.unwrap();
        assert_eq!(mode(&state), 0o750);
        assert!(!store.files().is_empty());
        for file in store.files() {
            assert_eq!(mode(&file), 0o600, "{}", file.display());
        }
    }

    #[test]
    fn an_in_memory_store_has_no_files() {
        assert!(Store::open_in_memory().unwrap().files().is_empty());
    }
}
