//! What a chat channel received and has not finished answering, so that a daemon killed
//! mid-turn answers it once it is back: a message is answered or its failure recorded,
//! never lost (docs/decisions/0035-channel-inbox.md).
//!
//! A received batch and the platform's read position (Telegram's `getUpdates` offset,
//! Matrix's `next_batch`) are written in one transaction: on restart the channel reads on
//! from that position and the batch's unanswered messages are queued again, so a message is
//! neither lost nor taken twice whenever the process dies. The same row says when the
//! channel last read and what its last failure was, for `tackle doctor` and the console.

use crate::error::StoreError;
use crate::schedules::{from_ms, to_ms};
use crate::Store;
use rusqlite::{params, OptionalExtension, TransactionBehavior};
use serde::Serialize;
use time::OffsetDateTime;

/// A message a channel took and has not finished answering.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboxMessage {
    pub id: i64,
    pub chat: String,
    pub sender: String,
    pub text: String,
    /// Set once its turn started ([`Store::channel_started`]).
    pub started_mark: Option<i64>,
}

/// A message to keep: (chat, sender, text).
pub type NewInboxMessage = (String, String, String);

/// How a channel's reading stands, as the daemon last wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct ChannelState {
    pub channel: String,
    /// Where it reads on (an offset, a sync token).
    #[serde(skip)]
    pub position: Option<String>,
    /// The end of its last successful receive.
    #[serde(with = "time::serde::rfc3339::option")]
    pub polled: Option<OffsetDateTime>,
    /// Its last failure to receive, already free of credentials.
    pub error: Option<String>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub error_at: Option<OffsetDateTime>,
    /// Messages taken and not yet answered.
    pub unanswered: u64,
}

impl Store {
    /// How `channel` stands; a default (never read) state when it never ran.
    pub async fn channel_state(&self, channel: &str) -> Result<ChannelState, StoreError> {
        let channel = channel.to_string();
        self.with_conn(move |conn| {
            let row = conn
                .query_row(
                    "SELECT position, polled_ms, error, error_ms FROM channel_state
                     WHERE channel = ?1",
                    [&channel],
                    |r| {
                        Ok((
                            r.get::<_, Option<String>>(0)?,
                            r.get::<_, Option<i64>>(1)?,
                            r.get::<_, Option<String>>(2)?,
                            r.get::<_, Option<i64>>(3)?,
                        ))
                    },
                )
                .optional()?;
            let unanswered: i64 = conn.query_row(
                "SELECT COUNT(*) FROM channel_inbox WHERE channel = ?1",
                [&channel],
                |r| r.get(0),
            )?;
            let (position, polled, error, error_at) = row.unwrap_or_default();
            Ok(ChannelState {
                channel,
                position,
                polled: polled.and_then(from_ms),
                error,
                error_at: error_at.and_then(from_ms),
                unanswered: u64::try_from(unanswered).unwrap_or(0),
            })
        })
        .await
    }

    /// Keeps `messages` as unanswered and `position` (when the platform has one) as where
    /// `channel` reads on, in one transaction, and notes the receive as successful; returns
    /// the messages' ids in order.
    pub async fn channel_received(
        &self,
        channel: &str,
        position: Option<String>,
        messages: Vec<NewInboxMessage>,
    ) -> Result<Vec<i64>, StoreError> {
        let channel = channel.to_string();
        self.with_conn(move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let now = to_ms(OffsetDateTime::now_utc());
            let mut ids = Vec::with_capacity(messages.len());
            for (chat, sender, text) in messages {
                tx.execute(
                    "INSERT INTO channel_inbox (channel, chat, sender, text, received_ms)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![channel, chat, sender, text, now],
                )?;
                ids.push(tx.last_insert_rowid());
            }
            tx.execute(
                "INSERT INTO channel_state (channel, position, polled_ms) VALUES (?1, ?2, ?3)
                 ON CONFLICT (channel) DO UPDATE SET
                     position = COALESCE(excluded.position, position),
                     polled_ms = excluded.polled_ms",
                params![channel, position, now],
            )?;
            tx.commit()?;
            Ok(ids)
        })
        .await
    }

    /// Notes that `channel` failed to receive, with why.
    pub async fn channel_failed(&self, channel: &str, error: &str) -> Result<(), StoreError> {
        let (channel, error) = (channel.to_string(), error.to_string());
        self.with_conn(move |conn| {
            conn.execute(
                "INSERT INTO channel_state (channel, error, error_ms) VALUES (?1, ?2, ?3)
                 ON CONFLICT (channel) DO UPDATE SET
                     error = excluded.error, error_ms = excluded.error_ms",
                params![channel, error, to_ms(OffsetDateTime::now_utc())],
            )?;
            Ok(())
        })
        .await
    }

    /// The messages `channel` took and never finished, oldest first.
    pub async fn channel_unanswered(&self, channel: &str) -> Result<Vec<InboxMessage>, StoreError> {
        let channel = channel.to_string();
        self.with_conn(move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT id, chat, sender, text, started_mark FROM channel_inbox
                 WHERE channel = ?1 ORDER BY id",
            )?;
            let rows = stmt.query_map([channel], |r| {
                Ok(InboxMessage {
                    id: r.get(0)?,
                    chat: r.get(1)?,
                    sender: r.get(2)?,
                    text: r.get(3)?,
                    started_mark: r.get(4)?,
                })
            })?;
            rows.map(|r| Ok(r?)).collect()
        })
        .await
    }

    /// Notes that the turn of message `id` starts now.
    pub async fn channel_started(&self, id: i64) -> Result<(), StoreError> {
        self.with_conn(move |conn| {
            conn.execute(
                "UPDATE channel_inbox SET started_mark = (SELECT COALESCE(MAX(id), 0) FROM entries)
                 WHERE id = ?1",
                [id],
            )?;
            Ok(())
        })
        .await
    }

    /// Whether a turn of `session` that started at `mark` ([`InboxMessage::started_mark`])
    /// ended with an answer: the session's last entry since then is the model's reply with
    /// no calls left to make. A turn cut off mid-way ends on a call or its result.
    pub async fn session_answered_since(
        &self,
        session: &str,
        mark: i64,
    ) -> Result<bool, StoreError> {
        let session = session.to_string();
        self.with_conn(move |conn| {
            let last: Option<(String, String)> = conn
                .query_row(
                    "SELECT kind, content FROM entries WHERE session_id = ?1 AND id > ?2
                     ORDER BY id DESC LIMIT 1",
                    params![session, mark],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()?;
            Ok(match last {
                Some((kind, content)) if kind == "assistant" => {
                    let message: serde_json::Value =
                        serde_json::from_str(&content).unwrap_or_default();
                    message["tool_calls"]
                        .as_array()
                        .is_none_or(|calls| calls.is_empty())
                }
                _ => false,
            })
        })
        .await
    }

    /// Forgets a message once it was answered or its failure recorded.
    pub async fn channel_answered(&self, id: i64) -> Result<(), StoreError> {
        self.with_conn(move |conn| {
            conn.execute("DELETE FROM channel_inbox WHERE id = ?1", [id])?;
            Ok(())
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use crate::Store;

    #[tokio::test]
    async fn a_batch_and_its_position_are_kept_together_and_answered_ones_are_forgotten() {
        let store = Store::open_in_memory().unwrap();
        let never = store.channel_state("tg").await.unwrap();
        assert_eq!(
            (never.position, never.polled, never.unanswered),
            (None, None, 0)
        );
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
        assert_eq!(ids.len(), 2);
        let state = store.channel_state("tg").await.unwrap();
        assert_eq!(state.position.as_deref(), Some("41"));
        assert!(state.polled.is_some());
        assert_eq!(state.unanswered, 2);
        // Another channel's position and messages are its own.
        store
            .channel_received(
                "mx",
                Some("s9".into()),
                vec![("r".into(), "u".into(), "x".into())],
            )
            .await
            .unwrap();
        store.channel_answered(ids[0]).await.unwrap();
        let left = store.channel_unanswered("tg").await.unwrap();
        assert_eq!(left.len(), 1);
        assert_eq!(
            (left[0].chat.as_str(), left[0].text.as_str()),
            ("c2", "second")
        );
        // A receive with no position (a platform without one) keeps the old position.
        store
            .channel_received("tg", None, Vec::new())
            .await
            .unwrap();
        assert_eq!(
            store.channel_state("tg").await.unwrap().position.as_deref(),
            Some("41")
        );
    }

    #[tokio::test]
    async fn a_turn_that_ended_is_told_from_one_cut_off() {
        use crate::{Entry, EntryKind, SessionId};
        use serde_json::json;
        let store = Store::open_in_memory().unwrap();
        let session = SessionId::from("chat-1");
        store.ensure_session(&session, "helper").await.unwrap();
        let ids = store
            .channel_received("tg", None, vec![("c".into(), "u".into(), "hi".into())])
            .await
            .unwrap();
        store.channel_started(ids[0]).await.unwrap();
        let mark = store.channel_unanswered("tg").await.unwrap()[0]
            .started_mark
            .expect("the start is noted");
        let user = json!({"role": "user", "content": "hi"});
        store
            .append(&session, Entry::new(EntryKind::User, user))
            .await
            .unwrap();
        let calling = json!({"role": "assistant", "content": "",
            "tool_calls": [{"id": "1", "name": "shell", "arguments": {}}]});
        store
            .append(&session, Entry::new(EntryKind::Assistant, calling))
            .await
            .unwrap();
        assert!(!store.session_answered_since("chat-1", mark).await.unwrap());
        let result = json!({"role": "tool", "content": "done", "tool_call_id": "1"});
        store
            .append(&session, Entry::new(EntryKind::ToolResult, result))
            .await
            .unwrap();
        assert!(!store.session_answered_since("chat-1", mark).await.unwrap());
        let answer = json!({"role": "assistant", "content": "Done."});
        store
            .append(&session, Entry::new(EntryKind::Assistant, answer))
            .await
            .unwrap();
        assert!(store.session_answered_since("chat-1", mark).await.unwrap());
        // An answer from before the mark is an earlier turn's.
        let later = store
            .channel_received("tg", None, vec![("c".into(), "u".into(), "again".into())])
            .await
            .unwrap();
        store.channel_started(later[0]).await.unwrap();
        let mark = store.channel_unanswered("tg").await.unwrap()[1]
            .started_mark
            .unwrap_or_default();
        assert!(!store.session_answered_since("chat-1", mark).await.unwrap());
    }

    #[tokio::test]
    async fn a_failure_is_kept_beside_the_last_good_receive() {
        let store = Store::open_in_memory().unwrap();
        store
            .channel_failed("tg", "the platform answered 502")
            .await
            .unwrap();
        let state = store.channel_state("tg").await.unwrap();
        assert_eq!(state.error.as_deref(), Some("the platform answered 502"));
        assert!(state.error_at.is_some() && state.polled.is_none());
        store
            .channel_received("tg", Some("7".into()), Vec::new())
            .await
            .unwrap();
        let state = store.channel_state("tg").await.unwrap();
        assert!(state.polled >= state.error_at, "{state:?}");
        assert_eq!(state.position.as_deref(), Some("7"));
    }
}
