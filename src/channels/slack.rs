//! Slack, over Socket Mode (https://api.slack.com/apis/socket-mode): no public URL is needed.
//! `apps.connections.open` (with the app-level `xapp-` token) hands out a WebSocket URL; the
//! socket brings envelopes: `hello`, `events_api` (a `message` event), `interactive` (a
//! `block_actions` press of an approval button) and `disconnect` (open a new one). Every
//! envelope with an `envelope_id` is acknowledged at once, or Slack sends it again.
//!
//! Answers are Web API calls with the bot token (`chat.postMessage`, `chat.update`,
//! `chat.postEphemeral`), JSON `POST {api_base}/METHOD`; an approval is a Block Kit message
//! with Allow / Allow for session / Deny buttons. Both tokens go in the `Authorization` header
//! only, and any text that leaves this file is scrubbed of them.

use super::retry::{once, retried, Attempt};
use super::{Channel, ChannelError, Sent, Update};
use anyhow::Result;
use async_trait::async_trait;
use async_tungstenite::tungstenite::Message;
use futures::StreamExt;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tackle_store::Approval;
use tokio_util::sync::CancellationToken;

/// The longest answer one message carries. Slack truncates a message's `text` past 40,000
/// characters and asks for at most 4,000 for it to read well; 4,000 also stays under 40,000
/// once `&`, `<` and `>` are escaped (at most five characters each).
const MAX_LEN: usize = 4_000;
/// The `text` of a message, escaped: Slack's hard limit.
const MAX_TEXT: usize = 40_000;
/// A Block Kit section's text.
const MAX_SECTION: usize = 3_000;
/// Envelope event ids remembered to drop Slack's redeliveries.
const SEEN: usize = 256;

type Socket = async_tungstenite::WebSocketStream<async_tungstenite::tokio::ConnectStream>;

pub struct Slack {
    http: reqwest::Client,
    /// `{api_base}` without a trailing slash.
    base: String,
    bot_token: String,
    app_token: String,
    poll: Duration,
    timeout: Duration,
    /// A `ws://` socket URL is taken only from an `http://` API base (a local server or a
    /// proxy the operator wrote); Slack's own is `wss://`.
    plain_ws: bool,
    state: tokio::sync::Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The bot's own user id (`auth.test`): its own messages come back as events.
    me: Option<String>,
    socket: Option<Socket>,
    /// When the socket last brought anything (a ping, a pong, an envelope).
    heard: Option<Instant>,
    seen: VecDeque<String>,
}

/// Which token a call carries.
#[derive(Clone, Copy)]
enum Token {
    Bot,
    App,
}

/// Slack's answers that mean the token is refused: nothing works until it is fixed.
const REFUSED: &[&str] = &[
    "invalid_auth",
    "not_authed",
    "account_inactive",
    "token_revoked",
    "token_expired",
    "not_allowed_token_type",
];

impl Slack {
    pub fn new(
        api_base: &str,
        bot_token: &str,
        app_token: &str,
        poll: Duration,
        timeout: Option<Duration>,
    ) -> Result<Self> {
        if bot_token.trim().is_empty() {
            anyhow::bail!("the bot token is empty");
        }
        if app_token.trim().is_empty() {
            anyhow::bail!("the app token is empty");
        }
        // reqwest is built without a TLS provider (one backend in the binary): ring's.
        tackle_host::install_tls_provider();
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| anyhow::anyhow!("cannot build the HTTP client: {}", e.without_url()))?;
        let base = api_base.trim_end_matches('/').to_string();
        Ok(Self {
            http,
            plain_ws: base.starts_with("http://"),
            base,
            bot_token: bot_token.to_string(),
            app_token: app_token.to_string(),
            poll,
            timeout: timeout.unwrap_or(Duration::from_secs(15)),
            state: tokio::sync::Mutex::default(),
        })
    }

    fn scrub(&self, text: &str) -> String {
        text.replace(&self.bot_token, "[token]")
            .replace(&self.app_token, "[token]")
    }

    /// One Web API method, retried (`retry.rs`). A refused token is
    /// [`ChannelError::Unauthorized`].
    async fn call(&self, method: &str, token: Token, body: &Value) -> Result<Value, ChannelError> {
        retried("slack", method, || self.try_call(method, token, body)).await
    }

    async fn try_call(&self, method: &str, token: Token, body: &Value) -> Result<Value, Attempt> {
        let token = match token {
            Token::Bot => &self.bot_token,
            Token::App => &self.app_token,
        };
        let scrub = |e: reqwest::Error| Attempt::Again(self.scrub(&e.without_url().to_string()));
        let response = self
            .http
            .post(format!("{}/{method}", self.base))
            .bearer_auth(token)
            .json(body)
            .timeout(self.timeout)
            .send()
            .await
            .map_err(scrub)?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map_or(Duration::from_secs(1), Duration::from_secs);
        let text = response.text().await.map_err(scrub)?;
        let reply: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        let error = reply["error"].as_str().unwrap_or_default();
        let said = || {
            let said = if error.is_empty() {
                format!("HTTP {status}")
            } else {
                format!("HTTP {status} {error}")
            };
            self.scrub(&tackle_protocol::text::preview(&said, 200))
        };
        // Slack answers most failures `200 {"ok": false, "error": CODE}`.
        match status {
            429 => Err(Attempt::RateLimited(retry_after)),
            _ if error == "ratelimited" => Err(Attempt::RateLimited(retry_after)),
            _ if REFUSED.contains(&error) || status == 401 => Err(Attempt::Final(
                ChannelError::Unauthorized(format!("{method} answered {}", said())),
            )),
            200..=299 if reply["ok"] == true => Ok(reply),
            500..=599 => Err(Attempt::Again(said())),
            _ if matches!(
                error,
                "internal_error" | "fatal_error" | "service_unavailable" | "request_timeout"
            ) =>
            {
                Err(Attempt::Again(said()))
            }
            _ => Err(Attempt::Final(ChannelError::Failed(format!(
                "{method} answered {}",
                said()
            )))),
        }
    }

    /// Learns who the bot is (once) and opens a new socket.
    async fn connect(&self, state: &mut State) -> Result<(), ChannelError> {
        if state.me.is_none() {
            let who = self.call("auth.test", Token::Bot, &json!({})).await?;
            state.me = Some(who["user_id"].as_str().unwrap_or_default().to_string());
        }
        let opened = self
            .call("apps.connections.open", Token::App, &json!({}))
            .await?;
        let Some(url) = opened["url"].as_str() else {
            return Err(ChannelError::Failed(
                "apps.connections.open answered no url".into(),
            ));
        };
        let tls = if url.starts_with("wss://") {
            Some(tls_connector()?)
        } else if self.plain_ws && url.starts_with("ws://") {
            None
        } else {
            return Err(ChannelError::Failed(
                "apps.connections.open answered a socket URL that is not wss://".into(),
            ));
        };
        let connecting = async_tungstenite::tokio::connect_async_with_tls_connector(url, tls);
        // The URL carries a connection ticket: it is never printed.
        let failed = |why: String| {
            ChannelError::Failed(format!(
                "cannot open the Socket Mode connection: {}",
                self.scrub(&why).replace(url, "[socket url]")
            ))
        };
        let (socket, _) = tokio::time::timeout(self.timeout, connecting)
            .await
            .map_err(|_| failed("timed out".into()))?
            .map_err(|e| failed(e.to_string()))?;
        state.socket = Some(socket);
        state.heard = Some(Instant::now());
        tracing::info!("slack: Socket Mode connected");
        Ok(())
    }

    /// The next frame of the open socket, acknowledged; `None` when the poll ended without
    /// one. A socket that failed, closed or fell silent is dropped (the next call reconnects).
    async fn next_envelope(
        &self,
        state: &mut State,
        stop: &CancellationToken,
    ) -> Result<Option<Value>, ChannelError> {
        let Some(socket) = state.socket.as_mut() else {
            return Ok(None);
        };
        let frame = tokio::select! {
            () = stop.cancelled() => return Ok(None),
            f = tokio::time::timeout(self.poll, socket.next()) => f,
        };
        let gone = |state: &mut State, why: String| {
            state.socket = None;
            Err(ChannelError::Failed(self.scrub(&why)))
        };
        let message = match frame {
            Err(_) => {
                // Quiet for a whole poll: a ping keeps the socket honest; one that has heard
                // nothing (not even a pong) for three polls, and a minute at least, is dead.
                let silent = state.heard.map_or(Duration::ZERO, |h| h.elapsed());
                if silent > (self.poll * 3).max(Duration::from_secs(60)) {
                    return gone(state, "the Socket Mode connection fell silent".into());
                }
                if let Err(e) = socket.send(Message::Ping(Vec::new().into())).await {
                    return gone(state, format!("the Socket Mode connection failed: {e}"));
                }
                return Ok(None);
            }
            Ok(None) => return gone(state, "the Socket Mode connection closed".into()),
            Ok(Some(Err(e))) => {
                return gone(state, format!("the Socket Mode connection failed: {e}"))
            }
            Ok(Some(Ok(m))) => m,
        };
        state.heard = Some(Instant::now());
        let text = match message {
            Message::Text(t) => t,
            Message::Close(_) => {
                return gone(state, "Slack closed the Socket Mode connection".into())
            }
            // Pings are answered by the socket itself.
            _ => return Ok(None),
        };
        let Ok(envelope) = serde_json::from_str::<Value>(text.as_str()) else {
            tracing::warn!("slack: a frame that is not JSON was skipped");
            return Ok(None);
        };
        if let Some(id) = envelope["envelope_id"].as_str() {
            let ack = json!({"envelope_id": id}).to_string();
            if let Err(e) = socket.send(Message::text(ack)).await {
                return gone(state, format!("cannot acknowledge an envelope: {e}"));
            }
        }
        Ok(Some(envelope))
    }

    fn sent(result: &Value, chat: &str) -> Result<Sent, ChannelError> {
        match result["ts"].as_str() {
            Some(ts) => Ok(Sent {
                // Posting to a user id opens a DM: edits go where the message went.
                chat: result["channel"].as_str().unwrap_or(chat).to_string(),
                id: ts.to_string(),
            }),
            None => Err(ChannelError::Failed(
                "chat.postMessage answered without a ts".into(),
            )),
        }
    }
}

/// TLS for the socket: the rustls (ring) and platform verifier reqwest uses.
fn tls_connector() -> Result<tokio_rustls::TlsConnector, ChannelError> {
    use rustls_platform_verifier::BuilderVerifierExt;
    tackle_host::install_tls_provider();
    let config = tokio_rustls::rustls::ClientConfig::builder()
        .with_platform_verifier()
        .map_err(|e| ChannelError::Failed(format!("cannot set up TLS: {e}")))?
        .with_no_client_auth();
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

/// What one envelope means for the runner: a message from someone (not a bot, not this app,
/// not an edit or a join notice), or a press of an approval button.
fn read_envelope(envelope: &Value, me: &str) -> Option<Update> {
    match envelope["type"].as_str()? {
        "events_api" => {
            let event = &envelope["payload"]["event"];
            let subtype = event["subtype"].as_str();
            // A file with a caption, or a thread reply also sent to the channel, is someone
            // speaking; other subtypes (edits, joins, bot posts) are not.
            let spoken = matches!(subtype, None | Some("file_share" | "thread_broadcast"));
            let from_bot = !event["bot_id"].is_null();
            let sender = event["user"].as_str()?;
            if event["type"] != "message" || !spoken || from_bot || sender == me {
                return None;
            }
            Some(Update::Message {
                chat: event["channel"].as_str()?.to_string(),
                sender: sender.to_string(),
                text: unescape(event["text"].as_str().unwrap_or_default()),
            })
        }
        "interactive" => {
            let payload = &envelope["payload"];
            if payload["type"] != "block_actions" {
                return None;
            }
            let sender = payload["user"]["id"].as_str()?;
            let chat = payload["channel"]["id"]
                .as_str()
                .or(payload["container"]["channel_id"].as_str())
                .unwrap_or_default();
            Some(Update::Press {
                chat: chat.to_string(),
                sender: sender.to_string(),
                // Where the presser is told the outcome (`chat.postEphemeral`).
                press: format!("{chat} {sender}"),
                data: payload["actions"][0]["value"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            })
        }
        _ => None,
    }
}

/// `text` as Slack's `mrkdwn` needs it (`&`, `<`, `>` escaped, or they would be read as
/// links and mentions), at most `max` characters, never cutting an escape in half.
fn escaped(text: &str, max: usize) -> String {
    let piece = |c: char| match c {
        '&' => Some("&amp;"),
        '<' => Some("&lt;"),
        '>' => Some("&gt;"),
        _ => None,
    };
    let len = |c: char| piece(c).map_or(1, str::len);
    let whole = text.chars().map(len).sum::<usize>() <= max;
    let room = if whole { max } else { max.saturating_sub(1) };
    let mut out = String::new();
    let mut count = 0;
    for c in text.chars() {
        count += len(c);
        if count > room {
            break;
        }
        match piece(c) {
            Some(p) => out.push_str(p),
            None => out.push(c),
        }
    }
    if !whole {
        out.push('…');
    }
    out
}

/// A message's text as it was typed (Slack escapes `&`, `<`, `>`).
fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

#[async_trait]
impl Channel for Slack {
    fn kind(&self) -> &'static str {
        "slack"
    }

    fn max_len(&self) -> usize {
        MAX_LEN
    }

    async fn whoami(&self) -> Result<String, ChannelError> {
        let me = once(self.try_call("auth.test", Token::Bot, &json!({}))).await?;
        // Reading takes the app token too: a socket URL is asked for (and left unused).
        once(self.try_call("apps.connections.open", Token::App, &json!({}))).await?;
        Ok(me["user"]
            .as_str()
            .map(|u| format!("@{u}"))
            .or_else(|| me["user_id"].as_str().map(str::to_string))
            .unwrap_or_else(|| "a bot with no name".into()))
    }

    async fn receive(&self, stop: &CancellationToken) -> Result<Vec<Update>, ChannelError> {
        let mut state = self.state.lock().await;
        if state.socket.is_none() {
            tokio::select! {
                () = stop.cancelled() => return Ok(Vec::new()),
                r = self.connect(&mut state) => r?,
            }
        }
        let Some(envelope) = self.next_envelope(&mut state, stop).await? else {
            return Ok(Vec::new());
        };
        match envelope["type"].as_str() {
            Some("disconnect") => {
                // Slack is about to close this socket: a new one is opened at once.
                tracing::info!(
                    "slack: Slack asked to reconnect ({})",
                    envelope["reason"].as_str().unwrap_or("no reason")
                );
                if let Some(mut old) = state.socket.take() {
                    let _ = tokio::time::timeout(Duration::from_secs(1), old.close(None)).await;
                }
                return Ok(Vec::new());
            }
            Some("hello") => return Ok(Vec::new()),
            _ => {}
        }
        // A redelivery (its acknowledgement was lost) is not answered twice.
        if let Some(id) = envelope["payload"]["event_id"].as_str() {
            if state.seen.iter().any(|s| s == id) {
                return Ok(Vec::new());
            }
            if state.seen.len() >= SEEN {
                state.seen.pop_front();
            }
            state.seen.push_back(id.to_string());
        }
        let me = state.me.clone().unwrap_or_default();
        Ok(read_envelope(&envelope, &me).into_iter().collect())
    }

    async fn send(&self, chat: &str, text: &str) -> Result<Sent, ChannelError> {
        let body = json!({"channel": chat, "text": escaped(text, MAX_TEXT)});
        let result = self.call("chat.postMessage", Token::Bot, &body).await?;
        Self::sent(&result, chat)
    }

    async fn edit(&self, sent: &Sent, text: &str) -> Result<(), ChannelError> {
        // An empty `blocks` removes an approval's buttons once it is settled (without it
        // Slack keeps a message's blocks).
        let body = json!({
            "channel": sent.chat, "ts": sent.id,
            "text": escaped(text, MAX_TEXT), "blocks": [],
        });
        self.call("chat.update", Token::Bot, &body).await.map(drop)
    }

    async fn ask_approval(&self, chat: &str, approval: &Approval) -> Result<Sent, ChannelError> {
        let text = super::runner::approval_text(approval, MAX_LEN);
        let id = &approval.id;
        let button = |label: &str, action: &str, code: &str| {
            json!({
                "type": "button", "action_id": action,
                "text": {"type": "plain_text", "text": label},
                "value": format!("{code}:{id}"),
            })
        };
        let mut allow = button("Allow", "tackle_allow", "a");
        allow["style"] = json!("primary");
        let mut deny = button("Deny", "tackle_deny", "d");
        deny["style"] = json!("danger");
        let body = json!({
            "channel": chat,
            // What notifications show.
            "text": escaped(&text, MAX_TEXT),
            "blocks": [
                {"type": "section", "text": {"type": "mrkdwn", "text": escaped(&text, MAX_SECTION)}},
                {"type": "actions", "elements": [
                    allow,
                    button("Allow for session", "tackle_allow_session", "s"),
                    deny,
                ]},
            ],
        });
        let result = self.call("chat.postMessage", Token::Bot, &body).await?;
        Self::sent(&result, chat)
    }

    async fn answer_press(&self, press: &str, text: &str) -> Result<(), ChannelError> {
        // The envelope's acknowledgement is all Slack needs; the presser alone is told.
        let Some((chat, user)) = press.split_once(' ') else {
            return Ok(());
        };
        if chat.is_empty() || user.is_empty() {
            return Ok(());
        }
        let body = json!({"channel": chat, "user": user, "text": escaped(text, MAX_TEXT)});
        self.call("chat.postEphemeral", Token::Bot, &body)
            .await
            .map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn people_s_messages_and_presses_are_read_and_bots_edits_and_self_are_not() {
        let message = |event: Value| {
            json!({"envelope_id": "e", "type": "events_api",
            "payload": {"type": "event_callback", "event": event}})
        };
        let said = message(json!({"type": "message", "channel": "D1", "user": "U1",
            "text": "a &lt; b &amp;&amp; c", "ts": "1.0"}));
        assert_eq!(
            read_envelope(&said, "UBOT"),
            Some(Update::Message {
                chat: "D1".into(),
                sender: "U1".into(),
                text: "a < b && c".into()
            })
        );
        for ignored in [
            json!({"type": "message", "channel": "D1", "user": "UBOT", "text": "mine"}),
            json!({"type": "message", "channel": "D1", "user": "U2", "bot_id": "B2", "text": "a bot"}),
            json!({"type": "message", "subtype": "message_changed", "channel": "D1", "user": "U1"}),
            json!({"type": "reaction_added", "user": "U1", "item": {}}),
        ] {
            assert_eq!(read_envelope(&message(ignored), "UBOT"), None);
        }
        let press = json!({"envelope_id": "e", "type": "interactive", "payload": {
            "type": "block_actions", "user": {"id": "U1"}, "channel": {"id": "C1"},
            "actions": [{"action_id": "tackle_allow", "value": "a:ap1"}]}});
        assert_eq!(
            read_envelope(&press, "UBOT"),
            Some(Update::Press {
                chat: "C1".into(),
                sender: "U1".into(),
                press: "C1 U1".into(),
                data: "a:ap1".into()
            })
        );
    }

    #[test]
    fn text_is_escaped_within_the_limit_without_cutting_an_escape() {
        assert_eq!(escaped("a<b & c>", 100), "a&lt;b &amp; c&gt;");
        assert_eq!(escaped("ab&cd", 4), "ab…");
        assert_eq!(escaped("abc", 3), "abc");
        assert!(escaped(&"&".repeat(1000), MAX_SECTION).chars().count() <= MAX_SECTION);
        assert_eq!(unescape(&escaped("x <&> y", 100)), "x <&> y");
    }

    #[test]
    fn the_socket_s_tls_is_the_one_backend_with_the_platform_verifier() {
        // The installed provider (ring, as reqwest's) and the verifier reqwest uses.
        assert!(tls_connector().is_ok());
    }

    #[test]
    fn both_tokens_are_scrubbed_from_any_text() {
        let s = Slack::new(
            "http://127.0.0.1:1",
            "xoxb-SECRET",
            "xapp-OTHER",
            Duration::from_secs(1),
            None,
        )
        .unwrap();
        assert_eq!(
            s.scrub("Bearer xoxb-SECRET then xapp-OTHER"),
            "Bearer [token] then [token]"
        );
    }
}
