//! `message`: a proactive message to the session's own front end (`session`: an event and a
//! session-log entry) or to a channel the operator configured (`channels:`). A webhook is a
//! JSON POST through the host to the operator's URL, pinned and timed out; telegram, slack,
//! discord and whatsapp channels are in `channels/`. The actions beyond `send` each belong to
//! one channel type: react (discord), rich_message (slack), inline_keyboard (telegram). A
//! `file` (read through the host, so the fs grant decides) goes as an attachment to telegram,
//! matrix and slack channels, `content` as its caption.

use super::channels::{self, Action, Outgoing, DEFAULT_TIMEOUT};
use crate::secrets::Secrets;
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tackle_protocol::config::ChannelConfig;
use tackle_protocol::{
    ApprovalMode, Capability, HttpRequest, Risk, Tool, ToolContext, ToolError, ToolOutput, ToolSpec,
};

/// The `message` tool: a proactive message to the session's front end or a channel.
pub struct SendMessage {
    pub(super) channels: Arc<BTreeMap<String, ChannelConfig>>,
}

// Arguments of `message`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The message.
    content: String,
    /// `session` (default) or a configured channel.
    channel: Option<String>,
    chat_id: Option<String>,
    reply_to: Option<String>,
    // Read by `Action::parse`, whose refusal names the four.
    #[schemars(with = "Option<ActionName>")]
    action: Option<String>,
    #[schemars(with = "Option<Map<String, Value>>")]
    payload: Option<Value>,
    #[schemars(
        description = "A file to attach (path relative to the workspace, or absolute): telegram, matrix and slack channels only, at most 20 MiB; `content` is its caption. Action `send` only."
    )]
    file: Option<String>,
}

// The names `action` takes, as [`Action::parse`] reads them.
#[derive(JsonSchema)]
#[schemars(inline)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)] // only its schema is used
enum ActionName {
    Send,
    React,
    RichMessage,
    InlineKeyboard,
}

impl SendMessage {
    fn configured(&self) -> String {
        std::iter::once("`session`".to_string())
            .chain(
                self.channels
                    .iter()
                    .map(|(k, c)| format!("`{k}` ({})", c.kind())),
            )
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// `NAME`, `TYPE:NAME` (`webhook:ops`), or a bare `TYPE` (`telegram`) when exactly one
    /// channel of that type is configured.
    fn find(&self, channel: &str) -> Option<(&str, &ChannelConfig)> {
        if let Some((k, c)) = self.channels.get_key_value(channel) {
            return Some((k.as_str(), c));
        }
        if let Some((kind, name)) = channel.split_once(':') {
            return self
                .channels
                .get_key_value(name)
                .filter(|(_, c)| c.kind() == kind)
                .map(|(k, c)| (k.as_str(), c));
        }
        let mut of_kind = self.channels.iter().filter(|(_, c)| c.kind() == channel);
        match (of_kind.next(), of_kind.next()) {
            (Some((k, c)), None) => Some((k.as_str(), c)),
            _ => None,
        }
    }
}

#[async_trait]
impl Tool for SendMessage {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "message",
            "Send a proactive message: to this session's front end (`channel: session`, the default) or to a channel the operator configured. With `file`, a file is sent as an attachment (telegram, matrix and slack channels; at most 20 MiB), `content` as its caption. Returns where it went.",
            "core",
        )
        .parameters(crate::args::schema::<Args>())
        .risk(Risk::Medium)
        .approval(ApprovalMode::UnlessAutoApproved)
        .conversation_only()
    }

    fn planned_capabilities(&self, args: &Value, cx: &ToolContext) -> Vec<Capability> {
        // The file is read through the host: its grant decides, as for read_file.
        match args.get("file").and_then(Value::as_str) {
            Some(file) => vec![Capability::FileRead {
                path: crate::fs::resolve(cx, file),
            }],
            None => Vec::new(),
        }
    }

    /// Always a sink; the words name the file it carries out. Arguments that do not read
    /// may carry one too, which the words say.
    fn sink(&self, args: &Value) -> Option<String> {
        let unread = "sends a message, perhaps with a file, out of the session".to_string();
        crate::args::decide(args, Some(unread), |a: Args| {
            Some(match a.file {
                Some(file) => format!(
                    "sends a message and the file {} out of the session",
                    tackle_protocol::text::preview(&file, 200)
                ),
                None => "sends a message out of the session".into(),
            })
        })
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let a: Args = crate::args::parse_for("message", args)?;
        let action = Action::parse(a.action.as_deref().unwrap_or("send"))?;
        let payload = match a.payload {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(m)) => m,
            Some(_) => return Err(ToolError::invalid_arguments("`payload` must be an object")),
        };
        let channel = a.channel.as_deref().unwrap_or("session");
        if a.file.is_some() && action != Action::Send {
            return Err(ToolError::invalid_arguments(format!(
                "`file` goes with action `send`, not `{}`",
                action.name()
            )));
        }
        if a.file.is_some() && channel == "session" {
            return Err(ToolError::invalid_arguments(format!(
                "`file` cannot go to `session`: files go to {} only (configured: {})",
                channels::TAKES_FILES,
                self.configured()
            )));
        }
        if channel == "session" {
            if action != Action::Send {
                return Err(action.wrong_channel("session", "session"));
            }
            cx.agents()?.message_session(cx, &a.content).await?;
            return Ok(ToolOutput::text("Sent to session."));
        }
        let Some((name, config)) = self.find(channel) else {
            return Err(ToolError::invalid_arguments(format!(
                "channel `{}` is not configured; configured: {}",
                tackle_protocol::text::preview(channel, 60),
                self.configured()
            )));
        };
        // Checked before the file is read: nothing is read for a channel that cannot take it.
        let file = match &a.file {
            Some(_) if !channels::takes_files(config) => {
                return Err(channels::not_here(name, config.kind()))
            }
            Some(path) => Some(channels::read_file(cx, path).await?),
            None => None,
        };
        if let ChannelConfig::Webhook {
            url,
            headers,
            timeout_secs,
        } = config
        {
            if action != Action::Send {
                return Err(action.wrong_channel(name, "webhook"));
            }
            let chat_id = a.chat_id.clone().unwrap_or_else(|| cx.chat_id.clone());
            let body = json!({
                "content": a.content,
                "chat_id": chat_id,
                "reply_to": a.reply_to,
                "agent": cx.agent,
                "session": cx.session_id,
            });
            let mut hdrs: Vec<(String, String)> =
                vec![("content-type".into(), "application/json".into())];
            hdrs.extend(headers.iter().map(|(k, v)| (k.clone(), v.to_string())));
            // The URL may carry a token in its path, the headers one in a value.
            let secrets = Secrets::new(config.secrets());
            let resp = cx
                .host()
                .http(HttpRequest {
                    method: "POST".into(),
                    url: url.to_string(),
                    headers: hdrs,
                    body: Some(body.to_string().into_bytes()),
                    max_bytes: 16 * 1024,
                    timeout: timeout_secs.map_or(DEFAULT_TIMEOUT, Duration::from_secs),
                    follow_redirects: false,
                    operator_configured: true,
                })
                .await
                .map_err(|e| secrets.scrub_error(ToolError::from(e)))?;
            if resp.status >= 400 {
                return Err(ToolError::failed(format!(
                    "channel `{name}` answered HTTP {}",
                    resp.status
                )));
            }
            let chat_id = secrets.scrub(&chat_id);
            return Ok(ToolOutput::text(format!("Sent to {name}:{chat_id}."))
                .with_structured(json!({"channel": name, "chat_id": chat_id})));
        }
        if let Some(kind) = action.channel_type() {
            if config.kind() != kind {
                return Err(action.wrong_channel(name, config.kind()));
            }
        }
        let out = Outgoing {
            name,
            content: &a.content,
            // Without one, a message to the channel this turn came from answers in its chat.
            chat_id: a.chat_id.as_deref().or_else(|| {
                (name == cx.channel && !cx.chat_id.is_empty()).then_some(cx.chat_id.as_str())
            }),
            reply_to: a.reply_to.as_deref(),
            action,
            payload,
            file: file.as_ref(),
        };
        let sent = channels::send(config, &out, cx).await?;
        let chat_id = &sent.chat_id;
        let verb = match (action, &file) {
            (Action::React, _) => "Reacted in",
            (_, Some(_)) => "Sent the file to",
            _ => "Sent to",
        };
        let text = match &sent.message_id {
            Some(id) => format!("{verb} {name}:{chat_id} (message id {id})."),
            None => format!("{verb} {name}:{chat_id}."),
        };
        Ok(ToolOutput::text(text).with_structured(json!({
            "channel": name,
            "chat_id": chat_id,
            "message_id": sent.message_id,
        })))
    }
}

#[cfg(test)]
mod sink_tests {
    use super::*;

    fn tool() -> SendMessage {
        SendMessage {
            channels: Arc::new(BTreeMap::new()),
        }
    }

    /// Every call is a sink; the words name the typed `file`, and arguments that do not read
    /// are still a sink, in words that allow for a file.
    #[test]
    fn every_message_is_a_sink_naming_its_file_and_unread_arguments_too() {
        let t = tool();
        let schema = t.spec().parameters;
        let plain = "sends a message out of the session";
        let with_file = "sends a message and the file report.pdf out of the session";
        for (args, said) in [
            (json!({"content": "hi"}), plain),
            (
                json!({"content": "hi", "channel": "ops", "action": "react"}),
                plain,
            ),
            (
                json!({"content": "see", "channel": "ops", "file": "report.pdf"}),
                with_file,
            ),
        ] {
            assert!(crate::args::contract::accepts(&schema, &args), "{args}");
            assert_eq!(t.sink(&args).as_deref(), Some(said), "{args}");
        }
        for unread in [
            json!({"content": "see", "file": "report.pdf", "later": 1}),
            json!({"file": "report.pdf"}),
        ] {
            assert_eq!(
                t.sink(&unread).as_deref(),
                Some("sends a message, perhaps with a file, out of the session"),
                "{unread}"
            );
        }
    }
}
