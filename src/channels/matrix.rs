//! Matrix, over the client-server API (https://spec.matrix.org/latest/client-server-api/):
//! `/sync` long polling from the last `next_batch`, text messages sent with
//! `PUT /rooms/ROOM/send/m.room.message/TXN`, edits as `m.replace` events. Matrix has no
//! buttons a bot can read back, so an approval is asked as a message and answered by the
//! reply `y`, `a` or `n` (read by the runner, from an approver only).
//!
//! The sync position is kept in the store with what each sync brought ([`Channel::position`]),
//! so a restarted daemon reads on from where it stopped: what was said while it was down is
//! answered, and what it had already read is not answered twice. On the very first start
//! the room history is skipped: a new bot does not answer the past. (Earlier versions kept
//! the position in `channels/NAME.matrix-since` of the state directory; it is read once
//! when the store has none.)
//!
//! The access token goes in a header only, never in a URL or a message.

use super::retry::{once, retried, Attempt};
use super::{Channel, ChannelError, Sent, Update};
use anyhow::Result;
use async_trait::async_trait;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tackle_store::Approval;
use tokio_util::sync::CancellationToken;

/// Events may be up to 64 KiB; answers longer than this are split.
const MAX_LEN: usize = 16_000;

pub struct Matrix {
    http: reqwest::Client,
    base: String,
    token: String,
    poll: Duration,
    timeout: Duration,
    /// Whose invites are accepted: the allowed senders (anyone may invite a bot, and a bot
    /// that joined every room would be pulled into any).
    invite_from: Vec<String>,
    state: tokio::sync::Mutex<SyncState>,
    /// Transaction ids: unique per process and start, so a retried send is not doubled.
    txn: AtomicU64,
    started_ms: i128,
}

#[derive(Default)]
struct SyncState {
    me: Option<String>,
    since: Option<String>,
}

impl Matrix {
    pub fn new(
        homeserver: &str,
        token: &str,
        poll: Duration,
        timeout: Option<Duration>,
        legacy_since: PathBuf,
        invite_from: Vec<String>,
    ) -> Result<Self> {
        if token.trim().is_empty() {
            anyhow::bail!("the access token is empty");
        }
        tackle_host::install_tls_provider();
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| anyhow::anyhow!("cannot build the HTTP client: {}", e.without_url()))?;
        let since = std::fs::read_to_string(&legacy_since)
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty());
        Ok(Self {
            http,
            base: format!("{}/_matrix/client/v3", homeserver.trim_end_matches('/')),
            token: token.to_string(),
            poll,
            timeout: timeout.unwrap_or(Duration::from_secs(15)),
            invite_from,
            state: tokio::sync::Mutex::new(SyncState { me: None, since }),
            txn: AtomicU64::new(0),
            started_ms: time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000,
        })
    }

    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
        timeout: Duration,
    ) -> Result<Value, ChannelError> {
        let what = path.split('?').next().unwrap_or(path).to_string();
        retried("matrix", &what, || {
            self.try_call(method.clone(), path, body, timeout)
        })
        .await
    }

    async fn try_call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
        timeout: Duration,
    ) -> Result<Value, Attempt> {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .timeout(timeout);
        if let Some(body) = body {
            request = request.json(body);
        }
        let scrub = |e: reqwest::Error| e.without_url().to_string().replace(&self.token, "[token]");
        let response = request.send().await.map_err(|e| Attempt::Again(scrub(e)))?;
        let status = response.status().as_u16();
        let retry_header = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        let text = response
            .text()
            .await
            .map_err(|e| Attempt::Again(scrub(e)))?;
        let reply: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        let said = || {
            let code = reply["errcode"].as_str().unwrap_or("");
            let error = reply["error"].as_str().unwrap_or("");
            let said = format!("HTTP {status} {code} {error}");
            tackle_protocol::text::preview(said.trim(), 200).replace(&self.token, "[token]")
        };
        match status {
            200..=299 => Ok(reply),
            401 => Err(Attempt::Final(ChannelError::Unauthorized(said()))),
            429 => {
                let ms = reply["retry_after_ms"]
                    .as_u64()
                    .or_else(|| retry_header.map(|s| s * 1000))
                    .unwrap_or(1000);
                Err(Attempt::RateLimited(Duration::from_millis(ms)))
            }
            500..=599 => Err(Attempt::Again(said())),
            _ => Err(Attempt::Final(ChannelError::Failed(said()))),
        }
    }

    async fn send_content(&self, room: &str, content: &Value) -> Result<Sent, ChannelError> {
        let n = self.txn.fetch_add(1, Ordering::Relaxed);
        let path = format!(
            "/rooms/{}/send/m.room.message/tackle{}-{n}",
            enc(room),
            self.started_ms
        );
        let result = self
            .call(reqwest::Method::PUT, &path, Some(content), self.timeout)
            .await?;
        match result["event_id"].as_str() {
            Some(id) => Ok(Sent {
                chat: room.to_string(),
                id: id.to_string(),
            }),
            None => Err(ChannelError::Failed(
                "the homeserver answered a send without an event_id".into(),
            )),
        }
    }
}

/// An id as one path segment (room ids hold `!` and `:`).
fn enc(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// The text messages of one sync, and the rooms it was invited to, by whom.
fn read_sync(sync: &Value, me: &str) -> (Vec<Update>, Vec<(String, String)>) {
    let mut updates = Vec::new();
    if let Some(rooms) = sync["rooms"]["join"].as_object() {
        for (room, joined) in rooms {
            let events = joined["timeline"]["events"].as_array();
            for event in events.into_iter().flatten() {
                let content = &event["content"];
                let sender = event["sender"].as_str().unwrap_or_default();
                let is_text = event["type"] == "m.room.message" && content["msgtype"] == "m.text";
                // An edit of an earlier message is not a new one.
                let is_edit = content["m.relates_to"]["rel_type"] == "m.replace";
                if let (true, false, false, Some(text)) =
                    (is_text, is_edit, sender == me, content["body"].as_str())
                {
                    updates.push(Update::Message {
                        chat: room.clone(),
                        sender: sender.to_string(),
                        text: text.to_string(),
                    });
                }
            }
        }
    }
    let mut invites = Vec::new();
    if let Some(rooms) = sync["rooms"]["invite"].as_object() {
        for (room, invited) in rooms {
            let events = invited["invite_state"]["events"].as_array();
            let by = events.into_iter().flatten().find(|e| {
                e["type"] == "m.room.member"
                    && e["state_key"] == me
                    && e["content"]["membership"] == "invite"
            });
            if let Some(by) = by.and_then(|e| e["sender"].as_str()) {
                invites.push((room.clone(), by.to_string()));
            }
        }
    }
    (updates, invites)
}

#[async_trait]
impl Channel for Matrix {
    fn kind(&self) -> &'static str {
        "matrix"
    }

    fn max_len(&self) -> usize {
        MAX_LEN
    }

    async fn whoami(&self) -> Result<String, ChannelError> {
        let who = once(self.try_call(reqwest::Method::GET, "/account/whoami", None, self.timeout))
            .await?;
        Ok(who["user_id"]
            .as_str()
            .unwrap_or("an unnamed user")
            .to_string())
    }

    async fn position(&self) -> Option<String> {
        self.state.lock().await.since.clone()
    }

    async fn resume_from(&self, position: &str) {
        self.state.lock().await.since = Some(position.to_string());
    }

    async fn receive(&self, stop: &CancellationToken) -> Result<Vec<Update>, ChannelError> {
        let mut state = self.state.lock().await;
        let me = match &state.me {
            Some(me) => me.clone(),
            None => {
                let who = self
                    .call(reqwest::Method::GET, "/account/whoami", None, self.timeout)
                    .await?;
                let me = who["user_id"].as_str().unwrap_or_default().to_string();
                state.me = Some(me.clone());
                me
            }
        };
        let first = state.since.is_none();
        let wait = if first { Duration::ZERO } else { self.poll };
        let mut path = format!("/sync?timeout={}", wait.as_millis());
        if let Some(since) = &state.since {
            path.push_str(&format!("&since={}", enc(since)));
        }
        let sync = tokio::select! {
            () = stop.cancelled() => return Ok(Vec::new()),
            r = self.call(reqwest::Method::GET, &path, None, wait + Duration::from_secs(10)) => r?,
        };
        let Some(next) = sync["next_batch"].as_str() else {
            return Err(ChannelError::Failed("/sync answered no next_batch".into()));
        };
        state.since = Some(next.to_string());
        let (updates, invites) = read_sync(&sync, &me);
        for (room, by) in invites {
            if self.invite_from.contains(&by) {
                join(self, &room, &by).await;
            } else {
                tracing::info!(
                    "matrix: an invite to {room} from {by} (not an allowed sender) was left alone"
                );
            }
        }
        // The first sync is the rooms' history: read past, not answered.
        Ok(if first { Vec::new() } else { updates })
    }

    async fn send(&self, chat: &str, text: &str) -> Result<Sent, ChannelError> {
        self.send_content(chat, &json!({"msgtype": "m.text", "body": text}))
            .await
    }

    async fn edit(&self, sent: &Sent, text: &str) -> Result<(), ChannelError> {
        let content = json!({
            "msgtype": "m.text",
            "body": format!("* {text}"),
            "m.new_content": {"msgtype": "m.text", "body": text},
            "m.relates_to": {"rel_type": "m.replace", "event_id": sent.id},
        });
        self.send_content(&sent.chat, &content).await.map(drop)
    }

    async fn ask_approval(&self, chat: &str, approval: &Approval) -> Result<Sent, ChannelError> {
        let text = format!(
            "{}\n\nReply y (allow), a (allow for the session) or n (deny).",
            super::runner::approval_text(approval, MAX_LEN - 100)
        );
        self.send(chat, &text).await
    }

    async fn answer_press(&self, _press: &str, _text: &str) -> Result<(), ChannelError> {
        // Answers come as replies; the runner answers those with a message.
        Ok(())
    }
}

/// Joins a room an allowed sender invited the account to.
async fn join(m: &Matrix, room: &str, by: &str) {
    let path = format!("/join/{}", enc(room));
    match m
        .call(reqwest::Method::POST, &path, Some(&json!({})), m.timeout)
        .await
    {
        Ok(_) => tracing::info!("matrix: joined {room} (invited by {by})"),
        Err(e) => tracing::warn!("matrix: cannot join {room} (invited by {by}): {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sync_yields_others_text_messages_but_not_own_edits_or_notices() {
        let sync = json!({"next_batch": "s2", "rooms": {"join": {"!r:hs": {"timeline": {"events": [
            {"type": "m.room.message", "sender": "@alice:hs", "content": {"msgtype": "m.text", "body": "hi"}},
            {"type": "m.room.message", "sender": "@bot:hs", "content": {"msgtype": "m.text", "body": "mine"}},
            {"type": "m.room.message", "sender": "@alice:hs", "content": {"msgtype": "m.text", "body": "* hi!",
                "m.relates_to": {"rel_type": "m.replace", "event_id": "$1"}}},
            {"type": "m.room.message", "sender": "@alice:hs", "content": {"msgtype": "m.notice", "body": "n"}},
            {"type": "m.reaction", "sender": "@alice:hs", "content": {}},
        ]}}}, "invite": {"!new:hs": {"invite_state": {"events": [
            {"type": "m.room.member", "sender": "@alice:hs", "state_key": "@bot:hs", "content": {"membership": "invite"}},
        ]}}}}});
        let (updates, invites) = read_sync(&sync, "@bot:hs");
        assert_eq!(
            updates,
            vec![Update::Message {
                chat: "!r:hs".into(),
                sender: "@alice:hs".into(),
                text: "hi".into()
            }]
        );
        assert_eq!(
            invites,
            vec![("!new:hs".to_string(), "@alice:hs".to_string())]
        );
        assert_eq!(enc("!r:hs"), "%21r%3Ahs");
    }
}
