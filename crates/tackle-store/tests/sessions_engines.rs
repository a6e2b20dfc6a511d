//! Sessions behave alike on every engine this build has (SQLite, and PostgreSQL where a
//! server is reachable: `.ci/postgres-peers.sh`): their entry logs, summaries, agent trees,
//! taint and extensions; signed entries verify on every daemon that shares them; and one
//! daemon at a time serves a session.

mod engines;

use engines::{engines, Engine};
use serde_json::json;
use tackle_store::{Entry, EntryKind, EntryProblem, KeyAnchor, SessionId, StoreError, TaintRecord};
use time::{Duration, OffsetDateTime};

fn user(text: &str) -> Entry {
    Entry::new(EntryKind::User, json!({ "role": "user", "content": text }))
}

fn assistant(text: &str) -> Entry {
    Entry::new(
        EntryKind::Assistant,
        json!({ "role": "assistant", "content": text }),
    )
}

fn texts(entries: &[tackle_store::StoredEntry]) -> Vec<String> {
    entries
        .iter()
        .map(|e| {
            e.content["content"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

#[tokio::test]
async fn entries_are_numbered_in_order_and_read_back_as_written() {
    for engine in engines() {
        let store = engine.open();
        let s = store.create_session("default").await.unwrap();
        assert!(store.session_exists(&s).await.unwrap(), "{}", engine.name);
        let first = store.append(&s, user("hello")).await.unwrap();
        assert_eq!(first.seq, 1);
        store.append(&s, assistant("hi there")).await.unwrap();
        store
            .append(
                &s,
                Entry::new(EntryKind::Summary, json!({ "content": "so far" })),
            )
            .await
            .unwrap();
        store.append(&s, user("next")).await.unwrap();
        let all = store.entries(&s).await.unwrap();
        assert_eq!(
            all.iter().map(|e| e.seq).collect::<Vec<_>>(),
            [1, 2, 3, 4],
            "{}",
            engine.name
        );
        assert_eq!(texts(&all), ["hello", "hi there", "so far", "next"]);
        assert_eq!(all[0], first);
        // Resuming replays from the latest summary on.
        let resumed = store.entries_since_last_summary(&s).await.unwrap();
        assert_eq!(texts(&resumed), ["so far", "next"], "{}", engine.name);

        // A chosen id is created once; an unknown one is an error, not an empty log.
        let named = SessionId::from("support-42");
        assert!(store.ensure_session(&named, "default").await.unwrap());
        assert!(!store.ensure_session(&named, "default").await.unwrap());
        let err = store.entries(&SessionId::from("nope")).await.unwrap_err();
        assert!(matches!(err, StoreError::UnknownSession(_)), "{err}");
        let err = store
            .append(&SessionId::from("nope"), user("x"))
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::UnknownSession(_)), "{err}");
    }
}

#[tokio::test]
async fn listings_and_summaries_show_the_most_recent_first_with_the_first_user_message() {
    for engine in engines() {
        let store = engine.open();
        let older = store.create_session("default").await.unwrap();
        // A first user entry without text (parts only): the preview is the next one's.
        store
            .append(
                &older,
                Entry::new(EntryKind::User, json!({ "role": "user", "content": [] })),
            )
            .await
            .unwrap();
        store.append(&older, user(&"é".repeat(300))).await.unwrap();
        store
            .append(
                &older,
                Entry::new(EntryKind::ToolCall, json!({ "name": "calc" })),
            )
            .await
            .unwrap();
        let newer = store.create_session("skim").await.unwrap();
        store
            .append(
                &newer,
                Entry::new(EntryKind::User, json!({ "text": "plain entry" })),
            )
            .await
            .unwrap();
        let empty = SessionId::from("empty-one");
        store.ensure_session(&empty, "default").await.unwrap();

        let listed = store.list_sessions().await.unwrap();
        let ids: Vec<_> = listed.iter().map(|s| s.id.clone()).collect();
        assert_eq!(
            ids,
            [empty.clone(), newer.clone(), older.clone()],
            "{}",
            engine.name
        );
        assert_eq!(listed[2].entries, 3);
        assert_eq!(listed[1].agent, "skim");

        let summaries = store.session_summaries().await.unwrap();
        assert_eq!(summaries.len(), 3, "{}", engine.name);
        let old = store.session_summary(&older).await.unwrap();
        assert_eq!(old.entries, 3);
        assert_eq!(old.messages, 2, "tool calls are not messages");
        // Cut by characters, not bytes.
        assert_eq!(
            old.first_user_message,
            Some("é".repeat(200)),
            "{}",
            engine.name
        );
        let new = store.session_summary(&newer).await.unwrap();
        assert_eq!(new.first_user_message.as_deref(), Some("plain entry"));
        assert_eq!(
            store
                .session_summary(&empty)
                .await
                .unwrap()
                .first_user_message,
            None
        );
        let err = store
            .session_summary(&SessionId::from("nope"))
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::UnknownSession(_)), "{err}");

        // Deleting takes the session and its entries, and nothing else.
        assert_eq!(store.delete_session(&older).await.unwrap(), 3);
        assert!(!store.session_exists(&older).await.unwrap());
        assert_eq!(
            store.list_sessions().await.unwrap().len(),
            2,
            "{}",
            engine.name
        );
        assert_eq!(store.entries(&newer).await.unwrap().len(), 1);
    }
}

#[tokio::test]
async fn a_child_session_is_linked_to_its_parent_and_starts_with_its_task() {
    for engine in engines() {
        let store = engine.open();
        let parent = store.create_session("default").await.unwrap();
        store.append(&parent, user("research this")).await.unwrap();
        let child = store
            .create_child_session("researcher", &parent, "default › researcher", user("task"))
            .await
            .unwrap();
        assert_eq!(child.seq, 1);
        let grandchild = store
            .create_child_session(
                "reader",
                &child.session_id,
                "default › researcher › reader",
                user("read"),
            )
            .await
            .unwrap();
        let links = store.session_links().await.unwrap();
        assert_eq!(links.len(), 2, "{}", engine.name);
        assert_eq!(links[0].id, child.session_id);
        assert_eq!(links[0].parent, parent);
        assert_eq!(links[0].path, "default › researcher");
        assert_eq!(links[1].id, grandchild.session_id);
        assert_eq!(links[1].parent, child.session_id);
        assert_eq!(
            texts(&store.entries(&child.session_id).await.unwrap()),
            ["task"]
        );
        let info = store.list_sessions().await.unwrap();
        let child_info = info.iter().find(|s| s.id == child.session_id).unwrap();
        assert_eq!(child_info.agent, "researcher");
        // The child's entry is signed by its agent and verifies.
        let v = store.verify_session(&child.session_id).await.unwrap();
        assert!(v.ok(), "{}: {:?}", engine.name, v.failures);
        assert_eq!(v.signed, 1);
        // Deleting a child takes its link.
        store.delete_session(&grandchild.session_id).await.unwrap();
        assert_eq!(
            store.session_links().await.unwrap().len(),
            1,
            "{}",
            engine.name
        );
    }
}

#[tokio::test]
async fn taint_only_grows_and_disabled_extensions_are_replaced_whole() {
    for engine in engines() {
        let store = engine.open();
        let other = engine.daemon(1);
        let s = store.create_session("default").await.unwrap();
        assert_eq!(store.session_taint(s.as_str()).await.unwrap(), None);
        let two = TaintRecord {
            sources: vec!["https://a.example/".into()],
            count: 2,
        };
        store
            .set_session_taint(s.as_str(), two.clone())
            .await
            .unwrap();
        // Another daemon sees it, and cannot make it smaller.
        assert_eq!(
            other.session_taint(s.as_str()).await.unwrap(),
            Some(two.clone()),
            "{}",
            engine.name
        );
        other
            .set_session_taint(
                s.as_str(),
                TaintRecord {
                    sources: vec![],
                    count: 1,
                },
            )
            .await
            .unwrap();
        assert_eq!(store.session_taint(s.as_str()).await.unwrap(), Some(two));
        let three = TaintRecord {
            sources: vec!["https://a.example/".into(), "mcp:web".into()],
            count: 3,
        };
        other
            .set_session_taint(s.as_str(), three.clone())
            .await
            .unwrap();
        assert_eq!(store.session_taint(s.as_str()).await.unwrap(), Some(three));
        // An unknown session has none and gets none.
        store
            .set_session_taint("nope", TaintRecord::default())
            .await
            .unwrap();
        assert_eq!(store.session_taint("nope").await.unwrap(), None);

        assert!(store
            .session_disabled_extensions(s.as_str())
            .await
            .unwrap()
            .is_empty());
        store
            .set_session_disabled_extensions(
                s.as_str(),
                vec!["web".into(), "git".into(), "web".into()],
            )
            .await
            .unwrap();
        assert_eq!(
            other.session_disabled_extensions(s.as_str()).await.unwrap(),
            ["git", "web"],
            "{}",
            engine.name
        );
        other
            .set_session_disabled_extensions(s.as_str(), vec![])
            .await
            .unwrap();
        assert!(store
            .session_disabled_extensions(s.as_str())
            .await
            .unwrap()
            .is_empty());
    }
}

#[tokio::test]
async fn a_session_written_by_two_daemons_verifies_on_both() {
    for engine in engines() {
        let a = engine.open();
        let b = engine.daemon(1);
        let s = a.create_session("default").await.unwrap();
        a.append(&s, user("asked on a")).await.unwrap();
        b.append(&s, assistant("answered on b")).await.unwrap();
        a.append(&s, user("again on a")).await.unwrap();
        assert_eq!(
            texts(&b.entries(&s).await.unwrap()),
            ["asked on a", "answered on b", "again on a"],
            "{}",
            engine.name
        );
        for (who, store) in [("a", &a), ("b", &b)] {
            let v = store.verify_session(&s).await.unwrap();
            assert!(v.ok(), "{} on {who}: {:?}", engine.name, v.failures);
            assert_eq!(v.signed, 3, "{} on {who}", engine.name);
            if engine.is_shared() {
                // Each daemon signs with its own key file; both keys are accepted.
                assert_eq!(v.anchor, KeyAnchor::Shared);
                assert_eq!(v.keys.len(), 2, "{} on {who}: {:?}", engine.name, v.keys);
            } else {
                assert_eq!(v.anchor, KeyAnchor::KeyFile);
                assert_eq!(v.keys.len(), 1);
            }
        }

        // An entry changed in the database fails on every daemon.
        engine.raw(&format!(
            "UPDATE entries SET content = '{{\"role\":\"assistant\",\"content\":\"forged\"}}' WHERE session_id = '{}' AND seq = 2",
            s.as_str()
        ));
        for store in [&a, &b] {
            let v = store.verify_session(&s).await.unwrap();
            let problems: Vec<_> = v
                .failures
                .iter()
                .map(|f| (f.entry, f.problem.clone()))
                .collect();
            assert_eq!(problems, [(2, EntryProblem::Altered)], "{}", engine.name);
        }
    }
}

#[tokio::test]
async fn a_rotation_on_one_daemon_keeps_its_entries_verifying_on_the_other() {
    for engine in engines() {
        let a = engine.open();
        let b = engine.daemon(1);
        let s = a.create_session("default").await.unwrap();
        a.append(&s, user("before")).await.unwrap();
        b.append(&s, assistant("from b")).await.unwrap();
        let rotation = a.rotate_agent_key("default").await.unwrap();
        a.append(&s, user("after")).await.unwrap();
        let entries = a.entries(&s).await.unwrap();
        assert_eq!(entries.len(), 3);
        for store in [&a, &b] {
            let v = store.verify_session(&s).await.unwrap();
            assert!(v.ok(), "{}: {:?}", engine.name, v.failures);
            assert_eq!(v.signed, 3);
            assert!(v.keys.contains(&rotation.old_key), "{}", engine.name);
            assert!(v.keys.contains(&rotation.new_key), "{}", engine.name);
            assert_eq!(v.unproven_rotation, None);
        }
    }
}

#[tokio::test]
async fn a_key_no_daemon_recorded_is_not_trusted_by_the_others() {
    for engine in engines().into_iter().filter(Engine::is_shared) {
        let a = engine.open();
        let b = engine.daemon(1);
        let s = a.create_session("default").await.unwrap();
        a.append(&s, user("from a")).await.unwrap();
        b.append(&s, assistant("from b")).await.unwrap();
        let b_key = b.verify_session(&s).await.unwrap().keys[0].clone();
        // B's key taken off the shared record: A no longer accepts what B signed.
        engine.raw(&format!("DELETE FROM agent_keys WHERE key_id = '{b_key}'"));
        let v = a.verify_session(&s).await.unwrap();
        let problems: Vec<_> = v
            .failures
            .iter()
            .map(|f| (f.entry, f.problem.clone()))
            .collect();
        assert_eq!(
            problems,
            [(2, EntryProblem::UnknownKey { key_id: b_key })],
            "{}",
            engine.name
        );
    }
}

#[tokio::test]
async fn appends_from_two_daemons_at_once_number_without_gaps() {
    for engine in engines() {
        let a = engine.open();
        let b = engine.daemon(1);
        let s = a.create_session("default").await.unwrap();
        let mut tasks = Vec::new();
        for i in 0..10 {
            let store = if i % 2 == 0 { a.clone() } else { b.clone() };
            let s = s.clone();
            tasks.push(tokio::spawn(async move {
                store.append(&s, user(&format!("m{i}"))).await.unwrap()
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let seqs: Vec<_> = a.entries(&s).await.unwrap().iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (1..=10).collect::<Vec<_>>(), "{}", engine.name);
        let v = b.verify_session(&s).await.unwrap();
        assert!(v.ok(), "{}: {:?}", engine.name, v.failures);
    }
}

#[tokio::test]
async fn one_daemon_at_a_time_serves_a_session_until_its_lease_lapses() {
    for engine in engines() {
        let a = engine.open();
        let b = engine.daemon(1);
        let s = a.create_session("default").await.unwrap();
        let other = a.create_session("default").await.unwrap();
        let t0 = OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap();
        let ttl = Duration::seconds(30);
        assert!(a.claim_session(&s, "daemon-a", t0, ttl).await.unwrap());
        // The second daemon is refused while the first holds it, on either handle.
        assert!(
            !b.claim_session(&s, "daemon-b", t0 + Duration::seconds(5), ttl)
                .await
                .unwrap(),
            "{}",
            engine.name
        );
        // Another session is free.
        assert!(b
            .claim_session(&other, "daemon-b", t0 + Duration::seconds(5), ttl)
            .await
            .unwrap());
        // The holder renews.
        assert!(a
            .claim_session(&s, "daemon-a", t0 + Duration::seconds(20), ttl)
            .await
            .unwrap());
        assert!(!b
            .claim_session(&s, "daemon-b", t0 + Duration::seconds(40), ttl)
            .await
            .unwrap());
        let (holder, _) = b.session_holder(&s).await.unwrap().unwrap();
        assert_eq!(holder, "daemon-a", "{}", engine.name);
        // The holder died: once its lease lapsed, the other daemon takes the session over.
        assert!(b
            .claim_session(&s, "daemon-b", t0 + Duration::seconds(51), ttl)
            .await
            .unwrap());
        assert_eq!(a.session_holder(&s).await.unwrap().unwrap().0, "daemon-b");
        // A release by the one who lost it changes nothing; by the holder, frees it.
        a.release_session(&s, "daemon-a").await.unwrap();
        assert!(!a
            .claim_session(&s, "daemon-a", t0 + Duration::seconds(52), ttl)
            .await
            .unwrap());
        b.release_session(&s, "daemon-b").await.unwrap();
        assert_eq!(a.session_holder(&s).await.unwrap(), None, "{}", engine.name);
        assert!(a
            .claim_session(&s, "daemon-a", t0 + Duration::seconds(53), ttl)
            .await
            .unwrap());
    }
}
