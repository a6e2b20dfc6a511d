//! Telegram, over the Bot API (https://core.telegram.org/bots/api): `getUpdates` long polling
//! (no public URL needed), `sendMessage`, `editMessageText`, approvals as an inline keyboard
//! whose presses come back as `callback_query` updates, answered with `answerCallbackQuery`.
//!
//! Every method is a JSON `POST {api_base}/bot{token}/METHOD`. The token is in the path, so
//! no error that could carry the URL leaves this file with it: reqwest's errors are stripped
//! of their URL and any text is scrubbed of the token.

use super::retry::{once, retried, Attempt};
use super::{Channel, ChannelError, Sent, Update};
use anyhow::Result;
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Value};
use std::time::Duration;
use tackle_store::Approval;
use tokio_util::sync::CancellationToken;

/// A message's text is at most 4096 characters.
const MAX_LEN: usize = 4096;

pub struct Telegram {
    http: reqwest::Client,
    /// `{api_base}/bot{token}/`: a secret, never printed.
    base: String,
    token: String,
    poll: Duration,
    timeout: Duration,
    /// The next `getUpdates` offset: one past the last update seen, which confirms it.
    offset: tokio::sync::Mutex<Option<i64>>,
}

/// The Bot API's envelope.
#[derive(Deserialize)]
struct Reply {
    ok: bool,
    #[serde(default)]
    result: Value,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    parameters: Option<ReplyParameters>,
}

#[derive(Deserialize)]
struct ReplyParameters {
    #[serde(default)]
    retry_after: Option<u64>,
}

#[derive(Deserialize)]
struct RawUpdate {
    update_id: i64,
    #[serde(default)]
    message: Option<RawMessage>,
    #[serde(default)]
    callback_query: Option<RawCallback>,
}

#[derive(Deserialize)]
struct RawMessage {
    chat: RawChat,
    #[serde(default)]
    from: Option<RawUser>,
    #[serde(default)]
    text: Option<String>,
}

#[derive(Deserialize)]
struct RawChat {
    id: i64,
}

#[derive(Deserialize)]
struct RawUser {
    id: i64,
}

#[derive(Deserialize)]
struct RawCallback {
    id: String,
    from: RawUser,
    #[serde(default)]
    message: Option<RawMessage>,
    #[serde(default)]
    data: Option<String>,
}

impl Telegram {
    pub fn new(
        api_base: &str,
        token: &str,
        poll: Duration,
        timeout: Option<Duration>,
    ) -> Result<Self> {
        if token.trim().is_empty() {
            anyhow::bail!("the bot token is empty");
        }
        // reqwest is built without a TLS provider (one backend in the binary): ring's.
        tackle_host::install_tls_provider();
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| anyhow::anyhow!("cannot build the HTTP client: {}", e.without_url()))?;
        Ok(Self {
            http,
            base: format!("{}/bot{token}/", api_base.trim_end_matches('/')),
            token: token.to_string(),
            poll,
            timeout: timeout.unwrap_or(Duration::from_secs(15)),
            offset: tokio::sync::Mutex::new(None),
        })
    }

    fn scrub(&self, text: &str) -> String {
        text.replace(&self.token, "[token]")
    }

    /// One method call, retried (`retry.rs`). A refused token (401, or 404: no such bot)
    /// is [`ChannelError::Unauthorized`].
    async fn call(
        &self,
        method: &str,
        body: &Value,
        timeout: Duration,
    ) -> Result<Value, ChannelError> {
        retried("telegram", method, || self.try_call(method, body, timeout)).await
    }

    async fn try_call(
        &self,
        method: &str,
        body: &Value,
        timeout: Duration,
    ) -> Result<Value, Attempt> {
        let sent = self
            .http
            .post(format!("{}{method}", self.base))
            .json(body)
            .timeout(timeout)
            .send()
            .await;
        let response = match sent {
            Ok(r) => r,
            Err(e) => return Err(Attempt::Again(self.scrub(&e.without_url().to_string()))),
        };
        let status = response.status().as_u16();
        let retry_header = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        let text = match response.text().await {
            Ok(t) => t,
            Err(e) => return Err(Attempt::Again(self.scrub(&e.without_url().to_string()))),
        };
        let reply: Option<Reply> = serde_json::from_str(&text).ok();
        let said = reply
            .as_ref()
            .and_then(|r| r.description.clone())
            .map(|d| self.scrub(&tackle_protocol::text::preview(&d, 200)))
            .unwrap_or_else(|| format!("HTTP {status}"));
        match status {
            200..=299 => match reply {
                Some(r) if r.ok => Ok(r.result),
                _ => Err(Attempt::Final(ChannelError::Failed(format!(
                    "{method}: {said}"
                )))),
            },
            401 | 404 => Err(Attempt::Final(ChannelError::Unauthorized(format!(
                "{method} answered HTTP {status} ({said})"
            )))),
            429 => {
                let after = reply
                    .and_then(|r| r.parameters)
                    .and_then(|p| p.retry_after)
                    .or(retry_header)
                    .unwrap_or(1);
                Err(Attempt::RateLimited(Duration::from_secs(after)))
            }
            500..=599 => Err(Attempt::Again(format!("HTTP {status} ({said})"))),
            _ => Err(Attempt::Final(ChannelError::Failed(format!(
                "{method} answered HTTP {status} ({said})"
            )))),
        }
    }

    fn message_id(result: &Value, chat: &str) -> Result<Sent, ChannelError> {
        match result.get("message_id").and_then(Value::as_i64) {
            Some(id) => Ok(Sent {
                chat: chat.to_string(),
                id: id.to_string(),
            }),
            None => Err(ChannelError::Failed(
                "sendMessage answered without a message_id".into(),
            )),
        }
    }
}

/// A chat id as the Bot API takes it: the number when it is one.
fn chat_value(chat: &str) -> Value {
    chat.parse::<i64>()
        .map_or_else(|_| json!(chat), |n| json!(n))
}

#[async_trait]
impl Channel for Telegram {
    fn kind(&self) -> &'static str {
        "telegram"
    }

    fn max_len(&self) -> usize {
        MAX_LEN
    }

    async fn whoami(&self) -> Result<String, ChannelError> {
        let me = once(self.try_call("getMe", &json!({}), self.timeout)).await?;
        Ok(me["username"]
            .as_str()
            .map(|u| format!("@{u}"))
            .unwrap_or_else(|| "a bot with no username".into()))
    }

    async fn position(&self) -> Option<String> {
        self.offset.lock().await.map(|o| o.to_string())
    }

    async fn resume_from(&self, position: &str) {
        if let Ok(o) = position.parse::<i64>() {
            *self.offset.lock().await = Some(o);
        }
    }

    async fn receive(&self, stop: &CancellationToken) -> Result<Vec<Update>, ChannelError> {
        let mut offset = self.offset.lock().await;
        let mut body = json!({
            "timeout": self.poll.as_secs(),
            "allowed_updates": ["message", "callback_query"],
        });
        if let Some(o) = *offset {
            body["offset"] = json!(o);
        }
        let result = tokio::select! {
            () = stop.cancelled() => return Ok(Vec::new()),
            r = self.call("getUpdates", &body, self.poll + Duration::from_secs(10)) => r?,
        };
        let raw: Vec<Value> = match result {
            Value::Array(items) => items,
            _ => return Err(ChannelError::Failed("getUpdates answered no list".into())),
        };
        let mut updates = Vec::new();
        for item in raw {
            let Ok(u) = serde_json::from_value::<RawUpdate>(item) else {
                tracing::warn!("telegram: an update that could not be read was skipped");
                continue;
            };
            // Confirmed by the next poll, whatever it held.
            *offset = Some(offset.map_or(u.update_id + 1, |o| o.max(u.update_id + 1)));
            if let Some(m) = u.message {
                // A message with no text (a photo, a sticker) comes through empty: the
                // runner tells its sender only text is read.
                if let Some(from) = m.from {
                    updates.push(Update::Message {
                        chat: m.chat.id.to_string(),
                        sender: from.id.to_string(),
                        text: m.text.unwrap_or_default(),
                    });
                }
            } else if let Some(c) = u.callback_query {
                updates.push(Update::Press {
                    chat: c.message.map(|m| m.chat.id.to_string()).unwrap_or_default(),
                    sender: c.from.id.to_string(),
                    press: c.id,
                    data: c.data.unwrap_or_default(),
                });
            }
        }
        Ok(updates)
    }

    async fn send(&self, chat: &str, text: &str) -> Result<Sent, ChannelError> {
        let body = json!({"chat_id": chat_value(chat), "text": text});
        let result = self.call("sendMessage", &body, self.timeout).await?;
        Self::message_id(&result, chat)
    }

    async fn edit(&self, sent: &Sent, text: &str) -> Result<(), ChannelError> {
        let id = sent.id.parse::<i64>().unwrap_or_default();
        let body = json!({"chat_id": chat_value(&sent.chat), "message_id": id, "text": text});
        match self.call("editMessageText", &body, self.timeout).await {
            // The same text again is refused; what the chat shows is already right.
            Err(ChannelError::Failed(e)) if e.contains("message is not modified") => Ok(()),
            other => other.map(drop),
        }
    }

    async fn ask_approval(&self, chat: &str, approval: &Approval) -> Result<Sent, ChannelError> {
        let text = super::runner::approval_text(approval, MAX_LEN);
        let id = &approval.id;
        let body = json!({
            "chat_id": chat_value(chat),
            "text": text,
            "reply_markup": {"inline_keyboard": [[
                {"text": "Allow", "callback_data": format!("a:{id}")},
                {"text": "Allow for session", "callback_data": format!("s:{id}")},
                {"text": "Deny", "callback_data": format!("d:{id}")},
            ]]},
        });
        let result = self.call("sendMessage", &body, self.timeout).await?;
        Self::message_id(&result, chat)
    }

    async fn answer_press(&self, press: &str, text: &str) -> Result<(), ChannelError> {
        let body = json!({"callback_query_id": press, "text": text});
        self.call("answerCallbackQuery", &body, self.timeout)
            .await
            .map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_numeric_chat_is_sent_as_a_number_and_a_name_as_text() {
        assert_eq!(chat_value("-100123"), json!(-100123));
        assert_eq!(chat_value("@news"), json!("@news"));
    }

    #[test]
    fn the_token_is_scrubbed_from_any_text() {
        let t = Telegram::new(
            "http://127.0.0.1:1",
            "123:SECRET",
            Duration::from_secs(1),
            None,
        )
        .unwrap();
        assert_eq!(
            t.scrub("error for http://127.0.0.1:1/bot123:SECRET/getUpdates"),
            "error for http://127.0.0.1:1/bot[token]/getUpdates"
        );
    }
}
