//! The `message` tool's provider channels (`channels.NAME` with `type: telegram | slack |
//! discord | whatsapp`): one request per call through the host to the channel's API base, an
//! operator destination (pinned, timed out, never redirected). The bot token is a secret of
//! the call: scrubbed from every answer and error, Telegram's URL included (it carries the
//! token in its path). What the model names (chat, message, emoji) is checked before it goes
//! into a URL path, so it cannot reach another endpoint. A `file` goes as an attachment to
//! telegram, matrix and slack channels (`attachment.rs`).

mod attachment;
mod discord;
mod ids;
mod matrix;
mod slack;
mod telegram;
mod whatsapp;

use crate::secrets::Secrets;
use crate::services::client::{api_error, Api};
use serde_json::{Map, Value};
use std::time::Duration;
use tackle_protocol::config::ChannelConfig;
use tackle_protocol::{HttpResponse, ToolContext, ToolError};

pub(super) use attachment::{not_here, read as read_file, takes_files, Attachment, TAKES_FILES};

/// One request's time limit when the channel sets no `timeout_secs`.
pub(super) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// What a call asks for beyond plain text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Action {
    Send,
    React,
    RichMessage,
    InlineKeyboard,
}

impl Action {
    pub(super) fn parse(s: &str) -> Result<Self, ToolError> {
        Ok(match s {
            "send" => Self::Send,
            "react" => Self::React,
            "rich_message" => Self::RichMessage,
            "inline_keyboard" => Self::InlineKeyboard,
            other => {
                return Err(ToolError::invalid_arguments(format!(
                    "`action` must be send, react, rich_message or inline_keyboard, got `{}`",
                    tackle_protocol::text::preview(other, 40)
                )))
            }
        })
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            Self::Send => "send",
            Self::React => "react",
            Self::RichMessage => "rich_message",
            Self::InlineKeyboard => "inline_keyboard",
        }
    }

    /// The one channel type that supports this action (`None`: every channel does).
    pub(super) fn channel_type(self) -> Option<&'static str> {
        match self {
            Self::Send => None,
            Self::React => Some("discord"),
            Self::RichMessage => Some("slack"),
            Self::InlineKeyboard => Some("telegram"),
        }
    }

    /// The `payload` keys this action reads (`*` = required, checked by the channel).
    fn payload_keys(self) -> &'static [&'static str] {
        match self {
            Self::Send => &[],
            Self::React => &["emoji", "message_id"],
            Self::RichMessage => &["blocks"],
            Self::InlineKeyboard => &["buttons"],
        }
    }

    /// `invalid_arguments` for this action on a channel of another type.
    pub(super) fn wrong_channel(self, channel: &str, kind: &str) -> ToolError {
        let supported = self.channel_type().unwrap_or("any");
        ToolError::invalid_arguments(format!(
            "action `{}` works on {supported} channels only; `{channel}` is a {kind} channel",
            self.name()
        ))
    }
}

/// One call to a provider channel.
pub(super) struct Outgoing<'a> {
    /// The channel's key under `channels:`.
    pub(super) name: &'a str,
    pub(super) content: &'a str,
    /// The model's `chat_id`; the channel's configured default otherwise.
    pub(super) chat_id: Option<&'a str>,
    pub(super) reply_to: Option<&'a str>,
    pub(super) action: Action,
    pub(super) payload: Map<String, Value>,
    /// A file to send with `content` as its caption (action `send` only).
    pub(super) file: Option<&'a Attachment>,
}

/// Where a message went: the chat, and the provider's id for it when the API gave one.
pub(super) struct Sent {
    pub(super) chat_id: String,
    pub(super) message_id: Option<String>,
}

impl Outgoing<'_> {
    /// A required string field of `payload`.
    fn payload_str(&self, key: &str) -> Result<Option<&str>, ToolError> {
        match self.payload.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.as_str())),
            Some(_) => Err(ToolError::invalid_arguments(format!(
                "`payload.{key}` must be a string"
            ))),
        }
    }

    /// The chat: the model's, else the operator's default, else an error naming both.
    fn chat<'b>(&'b self, configured: Option<&'b str>, key: &str) -> Result<&'b str, ToolError> {
        self.chat_id
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .or_else(|| configured.map(str::trim).filter(|c| !c.is_empty()))
            .ok_or_else(|| {
                ToolError::invalid_arguments(format!(
                    "channel `{}` has no default chat: give `chat_id` (or set channels.{}.{key})",
                    self.name, self.name
                ))
            })
    }

    /// `reply_to` is for `send`; react names its message through `payload.message_id` or
    /// `reply_to`.
    fn reply_to(&self) -> Result<Option<&str>, ToolError> {
        match (self.action, self.reply_to.map(str::trim)) {
            (_, None) | (_, Some("")) => Ok(None),
            (Action::Send, Some(r)) => Ok(Some(r)),
            (Action::React, Some(r)) => Ok(Some(r)),
            (other, Some(_)) => Err(ToolError::invalid_arguments(format!(
                "`reply_to` goes with action `send` (and names the message for `react`), not `{}`",
                other.name()
            ))),
        }
    }
}

/// The API client of one channel: its base (an operator destination), time limit and secrets.
fn api(config: &ChannelConfig) -> Api {
    let timeout = config
        .timeout_secs()
        .map_or(DEFAULT_TIMEOUT, Duration::from_secs);
    Api::operator(
        &config.operator_url(),
        timeout,
        Secrets::new(config.secrets()),
    )
}

/// The token, trimmed; `failed` naming the key when it is empty (an unset variable).
fn token<'a>(name: &str, key: &str, value: &'a str) -> Result<&'a str, ToolError> {
    let value = value.trim();
    if value.is_empty() {
        return Err(ToolError::failed(format!(
            "channels.{name}.{key} is empty (is its variable set?)"
        )));
    }
    Ok(value)
}

/// `failed` with the provider's own description, secrets scrubbed.
fn refused(provider: &str, resp: &HttpResponse, secrets: &Secrets) -> ToolError {
    api_error(provider, resp, secrets)
}

/// Send `out` to the provider channel `config`. Webhooks are not handled here.
pub(super) async fn send(
    config: &ChannelConfig,
    out: &Outgoing<'_>,
    cx: &ToolContext,
) -> Result<Sent, ToolError> {
    let unknown: Vec<&str> = out
        .payload
        .keys()
        .map(String::as_str)
        .filter(|k| !out.action.payload_keys().contains(k))
        .collect();
    if !unknown.is_empty() {
        let takes = out.action.payload_keys();
        return Err(ToolError::invalid_arguments(format!(
            "action `{}` takes {} in `payload`, not {}",
            out.action.name(),
            if takes.is_empty() {
                "nothing".to_string()
            } else {
                takes.join(", ")
            },
            unknown
                .iter()
                .map(|k| format!("`{}`", tackle_protocol::text::preview(k, 40)))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    if out.file.is_some() && !takes_files(config) {
        return Err(not_here(out.name, config.kind()));
    }
    let api = api(config);
    let sent = match config {
        ChannelConfig::Telegram {
            bot_token, chat_id, ..
        } => telegram::send(&api, bot_token, chat_id.as_deref(), out, cx).await,
        ChannelConfig::Slack {
            bot_token, channel, ..
        } => slack::send(&api, bot_token, channel.as_deref(), out, cx).await,
        ChannelConfig::Discord {
            bot_token,
            channel_id,
            ..
        } => discord::send(&api, bot_token, channel_id.as_deref(), out, cx).await,
        ChannelConfig::Whatsapp {
            access_token,
            phone_number_id,
            to,
            ..
        } => {
            let target = whatsapp::Target {
                access_token,
                phone_number_id,
                to: to.as_deref(),
            };
            whatsapp::send(&api, &target, out, cx).await
        }
        ChannelConfig::Webhook { .. } => Err(ToolError::failed(
            "a webhook channel is sent by the message tool itself",
        )),
        ChannelConfig::Matrix { access_token, .. } => {
            matrix::send(&api, access_token, out, cx).await
        }
    };
    sent.map_err(|e| api.secrets.scrub_error(e)).map(|s| Sent {
        chat_id: api.secrets.scrub(&s.chat_id),
        message_id: s.message_id.map(|m| api.secrets.scrub(&m)),
    })
}
