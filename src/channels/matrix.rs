//! Matrix, over the client-server API (https://spec.matrix.org/latest/client-server-api/):
//! `/sync` long polling from the last `next_batch`, text messages sent with
//! `PUT /rooms/ROOM/send/m.room.message/TXN`, edits as `m.replace` events. Matrix has no
//! buttons a bot can read back, so an approval is asked as a message and answered by the
//! reply `y`, `a` or `n` (read by the runner, from an approver only), or by a reaction on the
//! approval message (`m.reaction`, `rel_type: m.annotation`): 👍 or ✅ allow, 👎 or ❌ deny
//! (a skin tone or variation selector does not matter). A reaction is a press of the
//! approval's button: from anyone but an approver it changes nothing and is audited.
//!
//! What the bot sends in a room replies to the last message it read there from an allowed
//! sender (`m.in_reply_to`), inside that message's thread when it was in one (`rel_type:
//! m.thread`): a room's messages are answered in order, one at a time. Edits stay `m.replace`.
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
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;
use tackle_store::Approval;
use tokio_util::sync::CancellationToken;

/// Events may be up to 64 KiB; answers longer than this are split.
const MAX_LEN: usize = 16_000;
/// Approval messages remembered for their reactions; the oldest is forgotten past this (its
/// approval long settled or expired, or still answerable by reply).
const MAX_ASKED: usize = 256;

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
    /// Not in `state`: that lock is held through a long poll, and sends happen meanwhile.
    threads: Mutex<Threads>,
    /// Transaction ids: unique per process and start, so a retried send is not doubled.
    txn: AtomicU64,
    started_ms: i128,
}

#[derive(Default)]
struct SyncState {
    me: Option<String>,
    since: Option<String>,
}

/// What the bot's own messages relate to.
#[derive(Default)]
struct Threads {
    /// Per room, the message its answers reply to.
    last: HashMap<String, Target>,
    /// The approval messages asked and not settled: (event id, approval id), oldest first.
    asked: Vec<(String, String)>,
}

/// A message read, that what the bot sends next in its room replies to.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Target {
    event: String,
    /// The thread's root, when the message was in a thread.
    thread: Option<String>,
}

impl Target {
    fn relation(&self) -> Value {
        match &self.thread {
            // `is_falling_back: false`: a real reply inside the thread, not a fallback.
            Some(root) => json!({
                "rel_type": "m.thread",
                "event_id": root,
                "is_falling_back": false,
                "m.in_reply_to": {"event_id": self.event},
            }),
            None => json!({"m.in_reply_to": {"event_id": self.event}}),
        }
    }
}

/// What one sync brought.
#[derive(Debug, Default, PartialEq, Eq)]
struct Read {
    updates: Vec<Update>,
    /// Rooms the account was invited to, and by whom.
    invites: Vec<(String, String)>,
    /// Per room, the last message of an allowed sender that the answers reply to.
    targets: Vec<(String, Target)>,
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
            threads: Mutex::default(),
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

/// The text messages of one sync, the reactions on approval messages (`asked`: event id →
/// approval id) as presses, the rooms it was invited to, and what the answers reply to (the
/// last message of one of `allowed` in each room, but a reply word: that answers an approval).
fn read_sync(sync: &Value, me: &str, asked: &[(String, String)], allowed: &[String]) -> Read {
    let mut read = Read::default();
    if let Some(rooms) = sync["rooms"]["join"].as_object() {
        for (room, joined) in rooms {
            let events = joined["timeline"]["events"].as_array();
            let mut target = None;
            for event in events.into_iter().flatten() {
                let sender = event["sender"].as_str().unwrap_or_default();
                if sender == me {
                    continue;
                }
                if let Some(press) = reaction(room, event, asked, allowed) {
                    read.updates.push(press);
                    continue;
                }
                let content = &event["content"];
                let is_text = event["type"] == "m.room.message" && content["msgtype"] == "m.text";
                // An edit of an earlier message is not a new one.
                let is_edit = content["m.relates_to"]["rel_type"] == "m.replace";
                let (true, false, Some(text)) = (is_text, is_edit, content["body"].as_str()) else {
                    continue;
                };
                read.updates.push(Update::Message {
                    chat: room.clone(),
                    sender: sender.to_string(),
                    text: text.to_string(),
                });
                let answered = allowed.iter().any(|a| a == sender)
                    && super::runner::reply_word(text).is_none();
                if let (true, Some(id)) = (answered, event["event_id"].as_str()) {
                    let relates = &content["m.relates_to"];
                    let thread = (relates["rel_type"] == "m.thread")
                        .then(|| relates["event_id"].as_str().map(str::to_string))
                        .flatten();
                    target = Some(Target {
                        event: id.to_string(),
                        thread,
                    });
                }
            }
            if let Some(target) = target {
                read.targets.push((room.clone(), target));
            }
        }
    }
    if let Some(rooms) = sync["rooms"]["invite"].as_object() {
        for (room, invited) in rooms {
            let events = invited["invite_state"]["events"].as_array();
            let by = events.into_iter().flatten().find(|e| {
                e["type"] == "m.room.member"
                    && e["state_key"] == me
                    && e["content"]["membership"] == "invite"
            });
            if let Some(by) = by.and_then(|e| e["sender"].as_str()) {
                read.invites.push((room.clone(), by.to_string()));
            }
        }
    }
    read
}

/// A reaction on an approval message, as a press of its button: `a:ID` (👍, ✅) or `d:ID`
/// (👎, ❌). The presser is told what came of it (the press names the room) only when they are
/// an allowed sender: a stranger's reaction does not make the bot speak.
fn reaction(
    room: &str,
    event: &Value,
    asked: &[(String, String)],
    allowed: &[String],
) -> Option<Update> {
    let relates = &event["content"]["m.relates_to"];
    if event["type"] != "m.reaction" || relates["rel_type"] != "m.annotation" {
        return None;
    }
    let on = relates["event_id"].as_str()?;
    let (_, approval) = asked.iter().find(|(e, _)| e == on)?;
    // Skin tones and the emoji presentation selector are the same answer.
    let key: String = relates["key"]
        .as_str()?
        .chars()
        .filter(|c| !matches!(c, '\u{FE0F}' | '\u{1F3FB}'..='\u{1F3FF}'))
        .collect();
    let code = match key.as_str() {
        "👍" | "✅" => "a",
        "👎" | "❌" => "d",
        _ => return None,
    };
    let sender = event["sender"].as_str()?;
    Some(Update::Press {
        chat: room.to_string(),
        sender: sender.to_string(),
        press: if allowed.iter().any(|a| a == sender) {
            room.to_string()
        } else {
            String::new()
        },
        data: format!("{code}:{approval}"),
    })
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
        let asked = self
            .threads
            .lock()
            .map(|t| t.asked.clone())
            .unwrap_or_default();
        let read = read_sync(&sync, &me, &asked, &self.invite_from);
        if !first {
            if let Ok(mut threads) = self.threads.lock() {
                threads.last.extend(read.targets);
            }
        }
        for (room, by) in read.invites {
            if self.invite_from.contains(&by) {
                join(self, &room, &by).await;
            } else {
                tracing::info!(
                    "matrix: an invite to {room} from {by} (not an allowed sender) was left alone"
                );
            }
        }
        // The first sync is the rooms' history: read past, not answered.
        Ok(if first { Vec::new() } else { read.updates })
    }

    async fn send(&self, chat: &str, text: &str) -> Result<Sent, ChannelError> {
        let mut content = json!({"msgtype": "m.text", "body": text});
        let target = self
            .threads
            .lock()
            .ok()
            .and_then(|t| t.last.get(chat).cloned());
        if let Some(target) = target {
            content["m.relates_to"] = target.relation();
        }
        self.send_content(chat, &content).await
    }

    async fn edit(&self, sent: &Sent, text: &str) -> Result<(), ChannelError> {
        let content = json!({
            "msgtype": "m.text",
            "body": format!("* {text}"),
            "m.new_content": {"msgtype": "m.text", "body": text},
            "m.relates_to": {"rel_type": "m.replace", "event_id": sent.id},
        });
        // An approval message is edited once, when it is settled: no reaction answers it now.
        if let Ok(mut threads) = self.threads.lock() {
            threads.asked.retain(|(event, _)| *event != sent.id);
        }
        self.send_content(&sent.chat, &content).await.map(drop)
    }

    async fn ask_approval(&self, chat: &str, approval: &Approval) -> Result<Sent, ChannelError> {
        let text = format!(
            "{}\n\nReply y (allow), a (allow for the session) or n (deny), or react 👍 (allow) or 👎 (deny).",
            super::runner::approval_text(approval, MAX_LEN - 100)
        );
        let sent = self.send(chat, &text).await?;
        if let Ok(mut threads) = self.threads.lock() {
            if threads.asked.len() >= MAX_ASKED {
                threads.asked.remove(0);
            }
            threads.asked.push((sent.id.clone(), approval.id.clone()));
        }
        Ok(sent)
    }

    async fn answer_press(&self, press: &str, text: &str) -> Result<(), ChannelError> {
        // A reaction's press names its room when the reactor may be answered (an allowed
        // sender); a reply word is answered by the runner itself.
        if press.is_empty() {
            return Ok(());
        }
        self.send(press, text).await.map(drop)
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
            {"type": "m.room.message", "sender": "@alice:hs", "event_id": "$1", "content": {"msgtype": "m.text", "body": "hi"}},
            {"type": "m.room.message", "sender": "@bot:hs", "content": {"msgtype": "m.text", "body": "mine"}},
            {"type": "m.room.message", "sender": "@alice:hs", "content": {"msgtype": "m.text", "body": "* hi!",
                "m.relates_to": {"rel_type": "m.replace", "event_id": "$1"}}},
            {"type": "m.room.message", "sender": "@alice:hs", "content": {"msgtype": "m.notice", "body": "n"}},
            {"type": "m.reaction", "sender": "@alice:hs", "content": {}},
        ]}}}, "invite": {"!new:hs": {"invite_state": {"events": [
            {"type": "m.room.member", "sender": "@alice:hs", "state_key": "@bot:hs", "content": {"membership": "invite"}},
        ]}}}}});
        let read = read_sync(&sync, "@bot:hs", &[], &["@alice:hs".to_string()]);
        assert_eq!(
            read.updates,
            vec![Update::Message {
                chat: "!r:hs".into(),
                sender: "@alice:hs".into(),
                text: "hi".into()
            }]
        );
        assert_eq!(
            read.invites,
            vec![("!new:hs".to_string(), "@alice:hs".to_string())]
        );
        assert_eq!(enc("!r:hs"), "%21r%3Ahs");
    }

    #[test]
    fn answers_reply_to_the_last_message_of_an_allowed_sender_in_its_thread() {
        let msg = |sender: &str, id: &str, body: &str, relates: Value| {
            json!({"type": "m.room.message", "sender": sender, "event_id": id,
                "content": {"msgtype": "m.text", "body": body, "m.relates_to": relates}})
        };
        let thread = json!({"rel_type": "m.thread", "event_id": "$root"});
        let sync = json!({"rooms": {"join": {
            "!a:hs": {"timeline": {"events": [
                msg("@alice:hs", "$1", "first", Value::Null),
                msg("@alice:hs", "$2", "second", thread),
                msg("@stranger:hs", "$3", "me too", Value::Null),
                msg("@alice:hs", "$4", "y", Value::Null),
            ]}},
            "!b:hs": {"timeline": {"events": [msg("@stranger:hs", "$5", "hello", Value::Null)]}},
        }}});
        let read = read_sync(&sync, "@bot:hs", &[], &["@alice:hs".to_string()]);
        let target = Target {
            event: "$2".into(),
            thread: Some("$root".into()),
        };
        assert_eq!(read.targets, vec![("!a:hs".to_string(), target.clone())]);
        assert_eq!(
            target.relation(),
            json!({"rel_type": "m.thread", "event_id": "$root", "is_falling_back": false,
                "m.in_reply_to": {"event_id": "$2"}})
        );
    }

    #[test]
    fn reactions_on_an_approval_message_are_presses_and_others_are_not() {
        let react = |sender: &str, on: &str, key: &str| {
            json!({"type": "m.reaction", "sender": sender, "event_id": "$r",
                "content": {"m.relates_to": {"rel_type": "m.annotation", "event_id": on, "key": key}}})
        };
        let sync = json!({"rooms": {"join": {"!a:hs": {"timeline": {"events": [
            react("@alice:hs", "$ask", "👍🏽"),
            react("@alice:hs", "$ask", "❌"),
            react("@stranger:hs", "$ask", "✅️"),
            react("@alice:hs", "$other", "👍"),
            react("@alice:hs", "$ask", "🎉"),
            react("@bot:hs", "$ask", "👍"),
        ]}}}}});
        let asked = vec![("$ask".to_string(), "ap1".to_string())];
        let read = read_sync(&sync, "@bot:hs", &asked, &["@alice:hs".to_string()]);
        let press = |sender: &str, press: &str, data: &str| Update::Press {
            chat: "!a:hs".into(),
            sender: sender.into(),
            press: press.into(),
            data: data.into(),
        };
        assert_eq!(
            read.updates,
            vec![
                press("@alice:hs", "!a:hs", "a:ap1"),
                press("@alice:hs", "!a:hs", "d:ap1"),
                press("@stranger:hs", "", "a:ap1"),
            ]
        );
        assert!(read.targets.is_empty());
    }
}
