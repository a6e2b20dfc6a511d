//! Slack: `POST {api_base}/chat.postMessage`, `Authorization: Bearer {token}`, with `{channel,
//! text, thread_ts?, blocks?}`; answers `{ok: true, ts}` or `{ok: false, error}`, with HTTP
//! 200 either way.

use super::{ids, refused, token, Action, Outgoing, Sent};
use crate::services::client::{json_of, Api, Body};
use serde_json::{json, Value};
use tackle_protocol::{ToolContext, ToolError};

/// Slack's cap on blocks in one message.
const MAX_BLOCKS: usize = 50;

pub(super) async fn send(
    api: &Api,
    bot_token: &str,
    configured_channel: Option<&str>,
    out: &Outgoing<'_>,
    cx: &ToolContext,
) -> Result<Sent, ToolError> {
    if !matches!(out.action, Action::Send | Action::RichMessage) {
        return Err(out.action.wrong_channel(out.name, "slack"));
    }
    let bot_token = token(out.name, "bot_token", bot_token)?;
    let channel = ids::slack_channel(out.chat(configured_channel, "channel")?)?;
    let mut body = json!({"channel": channel, "text": out.content});
    if let Some(r) = out.reply_to()? {
        body["thread_ts"] = json!(ids::slack_ts(r)?);
    }
    if out.action == Action::RichMessage {
        body["blocks"] = blocks(out.payload.get("blocks"))?;
    }
    let headers = vec![("Authorization".to_string(), format!("Bearer {bot_token}"))];
    let resp = api
        .send(
            cx,
            "POST",
            "/chat.postMessage",
            headers,
            Some(Body::Json(body)),
        )
        .await?;
    let reply = json_of(&resp);
    if !(200..300).contains(&resp.status) || reply.get("ok") != Some(&Value::Bool(true)) {
        return Err(refused("Slack", &resp, &api.secrets));
    }
    Ok(Sent {
        chat_id: channel.to_string(),
        message_id: reply.get("ts").and_then(Value::as_str).map(str::to_string),
    })
}

/// `payload.blocks`: Block Kit blocks, each an object with a `type`, passed on as given.
fn blocks(blocks: Option<&Value>) -> Result<Value, ToolError> {
    let list = blocks.and_then(Value::as_array).filter(|b| !b.is_empty());
    let Some(list) = list else {
        return Err(ToolError::invalid_arguments(
            "action `rich_message` needs `payload.blocks`: a non-empty list of Block Kit blocks",
        ));
    };
    if list.len() > MAX_BLOCKS {
        return Err(ToolError::invalid_arguments(format!(
            "`payload.blocks` holds more than {MAX_BLOCKS} blocks"
        )));
    }
    if !list
        .iter()
        .all(|b| b.get("type").is_some_and(Value::is_string))
    {
        return Err(ToolError::invalid_arguments(
            "every block in `payload.blocks` must be an object with a `type`",
        ));
    }
    Ok(Value::Array(list.clone()))
}
