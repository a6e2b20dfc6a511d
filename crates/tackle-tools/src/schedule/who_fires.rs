//! What the model is told, right after planting work, about what will fire it: a wake-up
//! pinned to a session that a chat has open fires into that chat; anything else needs a
//! running `tackle daemon`. Saying so at creation keeps the model from promising the person a
//! follow-up that nothing will run.

use tackle_store::{Schedule, Store, Target};

/// A sentence to append to the tool's result (with its leading space), or empty when a daemon
/// runs and no chat is involved, or when who runs cannot be known (a shared database).
pub(crate) fn note(store: &Store, s: &Schedule) -> String {
    let pinned_to = match (s.target, s.session_id.as_deref()) {
        (Target::Pinned, Some(id)) => Some(id),
        _ => None,
    };
    let chat = pinned_to.is_some_and(|id| store.session_open_in_chat(id));
    let text = match (store.daemon_running(), chat) {
        (Some(false), false) => {
            "Note: no `tackle daemon` is running, so nothing will fire it until one starts."
        }
        (Some(false), true) => {
            "Note: no `tackle daemon` is running: it fires into this chat only while the chat \
             stays open; if the chat closes first, it fires once `tackle daemon` runs."
        }
        (_, true) => "It fires into this chat if the chat is still open then.",
        (_, false) => "",
    };
    if text.is_empty() {
        String::new()
    } else {
        format!(" {text}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock_host::MockHost;
    use crate::schedule::{extension, ScheduleSettings, Zone};
    use serde_json::json;
    use std::sync::Arc;

    const SESSION: &str = "20260102-030405-0a1b2c3d";

    /// `schedule_once` and `schedule_add` from a session, over a store in a state directory.
    async fn plant(store: &Store, tool: &str) -> String {
        let settings = ScheduleSettings {
            store: store.clone(),
            zone: Zone::default(),
            min_interval: std::time::Duration::from_secs(60),
            agents: vec![],
            schedule_for: Default::default(),
        };
        let tools = extension(settings).tools();
        let t = tools.iter().find(|t| t.spec().name == tool).unwrap();
        let mut cx = Arc::new(MockHost::new()).context();
        cx.session_id = SESSION.to_string();
        let args = match tool {
            "schedule_once" => json!({"after_seconds": 60, "task": "look again"}),
            _ => json!({"id": format!("s{}", rand_suffix()), "cron": "0 0 9 * * *", "task": "t"}),
        };
        t.call(args, &cx).await.unwrap().content
    }

    fn rand_suffix() -> u128 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos()
    }

    #[tokio::test]
    async fn the_model_is_told_when_nothing_will_fire_what_it_planted() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        for tool in ["schedule_once", "schedule_add"] {
            let alone = plant(&store, tool).await;
            assert!(
                alone.contains("no `tackle daemon` is running, so nothing will fire it"),
                "{tool}: {alone}"
            );
            let chat = store.hold_session_presence(SESSION).unwrap();
            let in_chat = plant(&store, tool).await;
            assert!(
                in_chat.contains("fires into this chat only while the chat stays open"),
                "{tool}: {in_chat}"
            );
            let daemon = store.hold_daemon_presence().unwrap();
            let both = plant(&store, tool).await;
            assert!(both.contains("fires into this chat if"), "{tool}: {both}");
            assert!(!both.contains("Note:"), "{tool}: {both}");
            drop(chat);
            let served = plant(&store, tool).await;
            assert!(
                !served.contains("Note:") && !served.contains("chat"),
                "{tool}: {served}"
            );
            drop(daemon);
        }
    }
}
