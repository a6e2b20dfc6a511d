//! Discord: `POST {api_base}/channels/{id}/messages` (`Authorization: Bot {token}`) with
//! `{content, message_reference?}` → `{id}`; a reaction is `PUT
//! /channels/{id}/messages/{message}/reactions/{emoji}/@me` → 204. Every path segment from the
//! model is checked first (ids are digits, the emoji is percent-encoded).

use super::{ids, refused, token, Action, Outgoing, Sent};
use crate::services::client::{is_success, json_of, Api, Body};
use serde_json::{json, Value};
use tackle_protocol::{ToolContext, ToolError};

pub(super) async fn send(
    api: &Api,
    bot_token: &str,
    configured_channel: Option<&str>,
    out: &Outgoing<'_>,
    cx: &ToolContext,
) -> Result<Sent, ToolError> {
    if !matches!(out.action, Action::Send | Action::React) {
        return Err(out.action.wrong_channel(out.name, "discord"));
    }
    let bot_token = token(out.name, "bot_token", bot_token)?;
    let channel = ids::snowflake("chat_id", out.chat(configured_channel, "channel_id")?)?;
    let headers = vec![("Authorization".to_string(), format!("Bot {bot_token}"))];
    if out.action == Action::React {
        return react(api, headers, channel, out, cx).await;
    }
    let mut body = json!({"content": out.content});
    if let Some(r) = out.reply_to()? {
        body["message_reference"] = json!({"message_id": ids::snowflake("reply_to", r)?});
    }
    let path = format!("/channels/{channel}/messages");
    let resp = api
        .send(cx, "POST", &path, headers, Some(Body::Json(body)))
        .await?;
    if !is_success(&resp) {
        return Err(refused("Discord", &resp, &api.secrets));
    }
    Ok(Sent {
        chat_id: channel.to_string(),
        message_id: json_of(&resp)
            .get("id")
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}

/// The message is `payload.message_id`, else `reply_to`; both given must agree.
async fn react(
    api: &Api,
    headers: Vec<(String, String)>,
    channel: &str,
    out: &Outgoing<'_>,
    cx: &ToolContext,
) -> Result<Sent, ToolError> {
    let emoji = out.payload_str("emoji")?.ok_or_else(|| {
        ToolError::invalid_arguments("action `react` needs `payload.emoji` (such as 👍)")
    })?;
    let emoji = ids::discord_emoji(emoji)?;
    let message = match (out.payload_str("message_id")?, out.reply_to()?) {
        (Some(a), Some(b)) if a.trim() != b.trim() => {
            return Err(ToolError::invalid_arguments(
                "`payload.message_id` and `reply_to` name different messages; give one",
            ))
        }
        (Some(m), _) | (None, Some(m)) => ids::snowflake("payload.message_id", m)?,
        (None, None) => {
            return Err(ToolError::invalid_arguments(
                "action `react` needs the message: `payload.message_id` (or `reply_to`)",
            ))
        }
    };
    let path = format!("/channels/{channel}/messages/{message}/reactions/{emoji}/@me");
    let resp = api.send(cx, "PUT", &path, headers, None).await?;
    if !is_success(&resp) {
        return Err(refused("Discord", &resp, &api.secrets));
    }
    Ok(Sent {
        chat_id: channel.to_string(),
        message_id: Some(message.to_string()),
    })
}
