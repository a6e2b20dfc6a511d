//! What a chat channel received and has not finished answering, so that a daemon killed
//! mid-turn answers it once it is back: a message is answered or its failure recorded,
//! never lost (docs/decisions/0035-channel-inbox.md). Its tests run on both engines:
//! `tests/pins_inbox_engines.rs`.
//!
//! A received batch and the platform's read position (Telegram's `getUpdates` offset,
//! Matrix's `next_batch`) are written in one transaction: on restart the channel reads on
//! from that position and the batch's unanswered messages are queued again, so a message is
//! neither lost nor taken twice whenever the process dies. The same row says when the
//! channel last read and what its last failure was, for `tackle doctor` and the console.

use crate::error::StoreError;
use crate::schedules::{from_ms, to_ms};
use crate::sql::{in_tx, vals};
use crate::Store;
use serde::Serialize;
use time::OffsetDateTime;

/// A message a channel took and has not finished answering.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboxMessage {
    /// Row id; the handle for marking it started or answered.
    pub id: i64,
    /// The platform's chat it came from.
    pub chat: String,
    /// Who sent it, as the platform names them.
    pub sender: String,
    /// The message text.
    pub text: String,
    /// Set once its turn started ([`Store::channel_started`]).
    pub started_mark: Option<i64>,
}

/// A message to keep: (chat, sender, text).
pub type NewInboxMessage = (String, String, String);

/// How a channel's reading stands, as the daemon last wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct ChannelState {
    /// The channel's name.
    pub channel: String,
    /// Where it reads on (an offset, a sync token).
    #[serde(skip)]
    pub position: Option<String>,
    /// The end of its last successful receive.
    #[serde(with = "time::serde::rfc3339::option")]
    pub polled: Option<OffsetDateTime>,
    /// Its last failure to receive, already free of credentials.
    pub error: Option<String>,
    /// When the last failure happened (`None`: no failure recorded).
    #[serde(with = "time::serde::rfc3339::option")]
    pub error_at: Option<OffsetDateTime>,
    /// Messages taken and not yet answered.
    pub unanswered: u64,
}

impl Store {
    /// How `channel` stands; a default (never read) state when it never ran.
    pub async fn channel_state(&self, channel: &str) -> Result<ChannelState, StoreError> {
        let channel = channel.to_string();
        self.with_db(move |db| {
            let row = db.query_opt(
                "SELECT position, polled_ms, error, error_ms FROM channel_state
                 WHERE channel = ?1",
                vals![&channel],
            )?;
            let (position, polled, error, error_at) = match row {
                Some(r) => (r.opt_text(0)?, r.opt_int(1)?, r.opt_text(2)?, r.opt_int(3)?),
                None => Default::default(),
            };
            let unanswered = db
                .query_opt(
                    "SELECT COUNT(*) FROM channel_inbox WHERE channel = ?1",
                    vals![&channel],
                )?
                .map(|r| r.int(0))
                .transpose()?
                .unwrap_or(0);
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
        self.with_db(move |db| {
            in_tx(db, |db| {
                let now = to_ms(OffsetDateTime::now_utc());
                let mut ids = Vec::with_capacity(messages.len());
                for (chat, sender, text) in messages {
                    ids.push(db.insert(
                        "INSERT INTO channel_inbox (channel, chat, sender, text, received_ms)
                         VALUES (?1, ?2, ?3, ?4, ?5)",
                        vals![&channel, chat, sender, text, now],
                    )?);
                }
                db.execute(
                    "INSERT INTO channel_state (channel, position, polled_ms) VALUES (?1, ?2, ?3)
                     ON CONFLICT (channel) DO UPDATE SET
                         position = COALESCE(excluded.position, channel_state.position),
                         polled_ms = excluded.polled_ms",
                    vals![&channel, position, now],
                )?;
                Ok(ids)
            })
        })
        .await
    }

    /// Notes that `channel` failed to receive, with why.
    pub async fn channel_failed(&self, channel: &str, error: &str) -> Result<(), StoreError> {
        let (channel, error) = (channel.to_string(), error.to_string());
        self.with_db(move |db| {
            db.execute(
                "INSERT INTO channel_state (channel, error, error_ms) VALUES (?1, ?2, ?3)
                 ON CONFLICT (channel) DO UPDATE SET
                     error = excluded.error, error_ms = excluded.error_ms",
                vals![channel, error, to_ms(OffsetDateTime::now_utc())],
            )?;
            Ok(())
        })
        .await
    }

    /// The messages `channel` took and never finished, oldest first.
    pub async fn channel_unanswered(&self, channel: &str) -> Result<Vec<InboxMessage>, StoreError> {
        let channel = channel.to_string();
        self.with_db(move |db| {
            db.query(
                "SELECT id, chat, sender, text, started_mark FROM channel_inbox
                 WHERE channel = ?1 ORDER BY id",
                vals![channel],
            )?
            .iter()
            .map(|r| {
                Ok(InboxMessage {
                    id: r.int(0)?,
                    chat: r.text(1)?,
                    sender: r.text(2)?,
                    text: r.text(3)?,
                    started_mark: r.opt_int(4)?,
                })
            })
            .collect()
        })
        .await
    }

    /// Notes that the turn of message `id` starts now. The mark is the newest session entry
    /// id, read from the engine that holds the sessions, which is the inbox's own.
    pub async fn channel_started(&self, id: i64) -> Result<(), StoreError> {
        self.with_db(move |db| {
            db.execute(
                "UPDATE channel_inbox SET started_mark = (SELECT COALESCE(MAX(id), 0) FROM entries)
                 WHERE id = ?1",
                vals![id],
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
        self.with_db(move |db| {
            let last = db.query_opt(
                "SELECT kind, content FROM entries WHERE session_id = ?1 AND id > ?2
                 ORDER BY id DESC LIMIT 1",
                vals![session, mark],
            )?;
            let Some(last) = last else {
                return Ok(false);
            };
            if last.text(0)? != "assistant" {
                return Ok(false);
            }
            let message: serde_json::Value =
                serde_json::from_str(&last.text(1)?).unwrap_or_default();
            Ok(message["tool_calls"]
                .as_array()
                .is_none_or(|calls| calls.is_empty()))
        })
        .await
    }

    /// Forgets a message once it was answered or its failure recorded.
    pub async fn channel_answered(&self, id: i64) -> Result<(), StoreError> {
        self.with_db(move |db| {
            db.execute("DELETE FROM channel_inbox WHERE id = ?1", vals![id])?;
            Ok(())
        })
        .await
    }
}
