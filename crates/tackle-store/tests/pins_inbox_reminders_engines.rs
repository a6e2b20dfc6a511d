//! MCP tool pins, the chat channels' inbox and reminders behave alike on every engine this
//! build has (SQLite, and PostgreSQL where a server is reachable: `.ci/postgres-peers.sh`),
//! and over a shared engine two daemons see one set of pins, one inbox, one list of reminders.

mod engines;

use engines::engines;
use serde_json::json;
use tackle_store::{Entry, EntryKind, NewReminder, ReminderStatus, SessionId, ToolPin};
use time::OffsetDateTime;

fn pin(server: &str, tool: &str, digest: &str, by: &str) -> ToolPin {
    ToolPin {
        server: server.into(),
        tool: tool.into(),
        digest: digest.into(),
        definition: format!("{{\"name\":\"{tool}\",\"d\":\"{digest}\"}}"),
        pinned_at: OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap(),
        pinned_by: by.into(),
    }
}

#[tokio::test]
async fn the_first_pin_wins_the_operator_replaces_it_and_pins_read_back_whole() {
    for engine in engines() {
        let store = engine.open();
        let kept = store
            .pin_mcp_tool_if_absent(pin("calc", "add", "sha256:a", "first use"))
            .await
            .unwrap();
        assert_eq!(
            kept,
            pin("calc", "add", "sha256:a", "first use"),
            "{}",
            engine.name
        );
        let kept = store
            .pin_mcp_tool_if_absent(pin("calc", "add", "sha256:b", "first use"))
            .await
            .unwrap();
        assert_eq!(
            kept.digest, "sha256:a",
            "{}: a second first use overwrote",
            engine.name
        );
        store
            .set_mcp_pin(pin("calc", "add", "sha256:b", "operator"))
            .await
            .unwrap();
        store
            .pin_mcp_tool_if_absent(pin("other", "mul", "sha256:c", "first use"))
            .await
            .unwrap();
        let calc = store.mcp_pins(Some("calc")).await.unwrap();
        assert_eq!(
            calc,
            [pin("calc", "add", "sha256:b", "operator")],
            "{}",
            engine.name
        );
        let all: Vec<(String, String)> = store
            .mcp_pins(None)
            .await
            .unwrap()
            .into_iter()
            .map(|p| (p.server, p.tool))
            .collect();
        assert_eq!(
            all,
            [
                ("calc".into(), "add".into()),
                ("other".into(), "mul".into())
            ],
            "{}",
            engine.name
        );
    }
}

#[tokio::test]
async fn an_inbox_batch_its_position_and_failures_are_kept_alike() {
    for engine in engines() {
        let store = engine.open();
        let never = store.channel_state("tg").await.unwrap();
        assert_eq!(
            (never.position, never.polled, never.unanswered),
            (None, None, 0)
        );
        store
            .channel_failed("tg", "the platform answered 502")
            .await
            .unwrap();
        let ids = store
            .channel_received(
                "tg",
                Some("41".into()),
                vec![
                    ("c1".into(), "u1".into(), "first".into()),
                    ("c2".into(), "u2".into(), "second".into()),
                ],
            )
            .await
            .unwrap();
        assert_eq!(ids.len(), 2, "{}", engine.name);
        assert!(ids[0] < ids[1], "{}: ids in order", engine.name);
        let state = store.channel_state("tg").await.unwrap();
        assert_eq!(state.position.as_deref(), Some("41"), "{}", engine.name);
        assert_eq!(state.unanswered, 2, "{}", engine.name);
        assert_eq!(state.error.as_deref(), Some("the platform answered 502"));
        assert!(state.polled >= state.error_at, "{}: {state:?}", engine.name);
        // A receive without a position keeps the old one.
        store
            .channel_received("tg", None, Vec::new())
            .await
            .unwrap();
        assert_eq!(
            store.channel_state("tg").await.unwrap().position.as_deref(),
            Some("41"),
            "{}",
            engine.name
        );
        store.channel_answered(ids[0]).await.unwrap();
        let left = store.channel_unanswered("tg").await.unwrap();
        assert_eq!(left.len(), 1, "{}", engine.name);
        assert_eq!(
            (left[0].chat.as_str(), left[0].text.as_str()),
            ("c2", "second")
        );
        assert_eq!(left[0].started_mark, None, "{}", engine.name);
    }
}

#[tokio::test]
async fn a_turn_that_ended_is_told_from_one_cut_off() {
    for engine in engines() {
        let store = engine.open();
        let session = SessionId::from("chat-1");
        store.ensure_session(&session, "helper").await.unwrap();
        store
            .append(
                &session,
                Entry::new(
                    EntryKind::User,
                    json!({"role": "user", "content": "earlier"}),
                ),
            )
            .await
            .unwrap();
        let ids = store
            .channel_received("tg", None, vec![("c".into(), "u".into(), "hi".into())])
            .await
            .unwrap();
        store.channel_started(ids[0]).await.unwrap();
        let mark = store.channel_unanswered("tg").await.unwrap()[0]
            .started_mark
            .expect("the start is noted");
        assert!(mark > 0, "{}: the mark is the newest entry", engine.name);
        let calling = json!({"role": "assistant", "content": "",
            "tool_calls": [{"id": "1", "name": "shell", "arguments": {}}]});
        store
            .append(&session, Entry::new(EntryKind::Assistant, calling))
            .await
            .unwrap();
        assert!(
            !store.session_answered_since("chat-1", mark).await.unwrap(),
            "{}",
            engine.name
        );
        let answer = json!({"role": "assistant", "content": "Done."});
        store
            .append(&session, Entry::new(EntryKind::Assistant, answer))
            .await
            .unwrap();
        assert!(
            store.session_answered_since("chat-1", mark).await.unwrap(),
            "{}",
            engine.name
        );
    }
}

/// Two daemons over one PostgreSQL database: a tool the operator accepted on one is accepted
/// on the other, and what one daemon took from a channel and left unanswered (it died) is
/// there for the daemon that reads the channel next.
#[cfg(feature = "postgres")]
#[tokio::test]
async fn two_daemons_share_one_set_of_pins_and_one_inbox() {
    let Some(engine) = engines::shared() else {
        return;
    };
    let (a, b) = (engine.daemon(0), engine.daemon(1));
    a.set_mcp_pin(pin("calc", "add", "sha256:x", "operator"))
        .await
        .unwrap();
    let seen = b
        .pin_mcp_tool_if_absent(pin("calc", "add", "sha256:y", "first use"))
        .await
        .unwrap();
    assert_eq!(
        seen.digest, "sha256:x",
        "the other daemon's pin is in force"
    );

    let ids = a
        .channel_received(
            "slack",
            Some("p1".into()),
            vec![("c".into(), "u".into(), "left behind".into())],
        )
        .await
        .unwrap();
    drop(a);
    let left = b.channel_unanswered("slack").await.unwrap();
    assert_eq!(left.iter().map(|m| m.id).collect::<Vec<_>>(), ids);
    assert_eq!(
        b.channel_state("slack").await.unwrap().position.as_deref(),
        Some("p1")
    );
}

fn reminder(title: &str, category: &str) -> NewReminder {
    NewReminder {
        title: title.into(),
        description: format!("about {title}"),
        category: category.into(),
        due_at: Some(OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap()),
        recurrence: None,
    }
}

#[tokio::test]
async fn reminders_are_numbered_per_agent_filtered_updated_and_removed_alike() {
    for engine in engines() {
        let store = engine.open();
        let first = store
            .add_reminder("default", reminder("milk", "shopping"))
            .await
            .unwrap();
        let second = store
            .add_reminder("default", reminder("call", "general"))
            .await
            .unwrap();
        let other = store
            .add_reminder("skim", reminder("read", "general"))
            .await
            .unwrap();
        assert_eq!(
            (first.id.as_str(), second.id.as_str()),
            ("r1", "r2"),
            "{}",
            engine.name
        );
        assert_eq!(other.id, "r1", "{}: numbered per agent", engine.name);
        assert_eq!(first.title, "milk");
        assert_eq!(first.description, "about milk");
        assert_eq!(
            first.due_at,
            reminder("milk", "x").due_at,
            "{}",
            engine.name
        );
        assert_eq!(first.status, ReminderStatus::Pending);

        let later = OffsetDateTime::from_unix_timestamp(1_900_000_000).unwrap();
        assert!(store
            .update_reminder("default", "r1", ReminderStatus::Snoozed, Some(later))
            .await
            .unwrap());
        assert!(!store
            .update_reminder("default", "r9", ReminderStatus::Done, None)
            .await
            .unwrap());
        let snoozed = store.get_reminder("default", "r1").await.unwrap().unwrap();
        assert_eq!(
            (snoozed.status, snoozed.due_at),
            (ReminderStatus::Snoozed, Some(later))
        );

        let shopping = store
            .list_reminders("default", None, Some("shopping"))
            .await
            .unwrap();
        assert_eq!(shopping.len(), 1, "{}", engine.name);
        let pending = store
            .list_reminders("default", Some(ReminderStatus::Pending), None)
            .await
            .unwrap();
        assert_eq!(
            pending.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
            ["r2"],
            "{}",
            engine.name
        );
        assert_eq!(
            store
                .list_reminders("default", None, None)
                .await
                .unwrap()
                .len(),
            2
        );
        assert!(store.remove_reminder("default", "r2").await.unwrap());
        assert!(!store.remove_reminder("default", "r2").await.unwrap());
        assert_eq!(
            store.get_reminder("default", "nonsense").await.unwrap(),
            None
        );
        assert_eq!(
            store
                .list_reminders("default", None, None)
                .await
                .unwrap()
                .len(),
            1
        );
    }
}

/// Two daemons adding reminders for one agent at once over one database: every reminder is
/// kept under its own number.
#[cfg(feature = "postgres")]
#[tokio::test]
async fn two_daemons_adding_reminders_at_once_keep_each_under_its_own_number() {
    let Some(engine) = engines::shared() else {
        return;
    };
    let (a, b) = (engine.daemon(0), engine.daemon(1));
    let mut adds = Vec::new();
    for i in 0..6 {
        let store = if i % 2 == 0 { a.clone() } else { b.clone() };
        adds.push(tokio::spawn(async move {
            store
                .add_reminder("default", reminder(&format!("t{i}"), "general"))
                .await
        }));
    }
    let mut ok = 0;
    for add in adds {
        if add.await.unwrap().is_ok() {
            ok += 1;
        }
    }
    let kept = a.list_reminders("default", None, None).await.unwrap();
    assert_eq!(kept.len(), ok, "every reminder reported added is kept");
    let mut ids: Vec<&str> = kept.iter().map(|r| r.id.as_str()).collect();
    ids.dedup();
    assert_eq!(ids.len(), kept.len(), "numbers are unique");
    assert!(
        ok >= 5,
        "at most one add may lose both of its tries: {ok} of 6"
    );
}
