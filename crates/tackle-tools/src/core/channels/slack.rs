//! Slack: `POST {api_base}/chat.postMessage`, `Authorization: Bearer {token}`, with `{channel,
//! text, thread_ts?, blocks?}`; answers `{ok: true, ts}` or `{ok: false, error}`, with HTTP
//! 200 either way.
//!
//! A file takes three calls (Slack's external upload): `files.getUploadURLExternal` (form:
//! `filename`, `length`) answers `{upload_url, file_id}`; the bytes are POSTed to that URL;
//! `files.completeUploadExternal` (`{files: [{id, title}], channel_id, initial_comment?,
//! thread_ts?}`) shares the file in the channel, `content` as its comment.

use super::{ids, refused, token, Action, Attachment, Outgoing, Sent};
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
    if let Some(file) = out.file {
        return send_file(api, bot_token, channel, file, out, cx).await;
    }
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

/// Where Slack's own API hands out upload URLs, besides the channel's `api_base`.
const SLACK_FILES_ORIGIN: &str = "https://files.slack.com";

async fn send_file(
    api: &Api,
    bot_token: &str,
    channel: &str,
    file: &Attachment,
    out: &Outgoing<'_>,
    cx: &ToolContext,
) -> Result<Sent, ToolError> {
    if channel.starts_with('#') {
        return Err(ToolError::invalid_arguments(format!(
            "a Slack file goes to a channel id (C0123ABCD), not a name: `{channel}`"
        )));
    }
    // Checked before anything is uploaded.
    let thread_ts = out.reply_to()?.map(ids::slack_ts).transpose()?;
    let auth = vec![("Authorization".to_string(), format!("Bearer {bot_token}"))];
    let form = vec![
        ("filename".to_string(), file.name.clone()),
        ("length".to_string(), file.data.len().to_string()),
    ];
    let resp = api
        .send(
            cx,
            "POST",
            "/files.getUploadURLExternal",
            auth.clone(),
            Some(Body::Form(form)),
        )
        .await?;
    let reply = json_of(&resp);
    let field = |k: &str| reply.get(k).and_then(Value::as_str).map(str::to_string);
    let (Some(upload_url), Some(file_id)) = (field("upload_url"), field("file_id")) else {
        return Err(refused("Slack", &resp, &api.secrets));
    };
    if !(200..300).contains(&resp.status) || reply.get("ok") != Some(&Value::Bool(true)) {
        return Err(refused("Slack", &resp, &api.secrets));
    }
    let (uploads, path) = upload_target(api, &upload_url)?;
    let resp = uploads
        .send(
            cx,
            "POST",
            &path,
            Vec::new(),
            Some(Body::Raw {
                content_type: file.mime.to_string(),
                data: file.data.clone(),
            }),
        )
        .await?;
    if !(200..300).contains(&resp.status) {
        return Err(refused("Slack", &resp, &api.secrets));
    }
    let mut body = json!({"files": [{"id": file_id, "title": file.name}], "channel_id": channel});
    if !out.content.trim().is_empty() {
        body["initial_comment"] = json!(out.content);
    }
    if let Some(ts) = thread_ts {
        body["thread_ts"] = json!(ts);
    }
    let resp = api
        .send(
            cx,
            "POST",
            "/files.completeUploadExternal",
            auth,
            Some(Body::Json(body)),
        )
        .await?;
    let reply = json_of(&resp);
    if !(200..300).contains(&resp.status) || reply.get("ok") != Some(&Value::Bool(true)) {
        return Err(refused("Slack", &resp, &api.secrets));
    }
    Ok(Sent {
        chat_id: channel.to_string(),
        message_id: Some(file_id),
    })
}

/// The client for the upload URL Slack handed out, and the URL's path: only on the channel's
/// own API origin or Slack's file host, so an answer cannot send the file anywhere else. The
/// URL is signed: no token goes with it.
fn upload_target(api: &Api, upload_url: &str) -> Result<(Api, String), ToolError> {
    let bad = || {
        ToolError::failed(format!(
            "Slack handed out an upload URL on neither its API nor {SLACK_FILES_ORIGIN}: {}",
            tackle_protocol::text::preview(upload_url, 120)
        ))
    };
    let url = url::Url::parse(upload_url).map_err(|_| bad())?;
    let origin = url.origin();
    let own = url::Url::parse(&api.url("/")).map(|u| u.origin());
    let slack = url::Url::parse(SLACK_FILES_ORIGIN).map(|u| u.origin());
    if !(own.as_ref() == Ok(&origin) || slack.as_ref() == Ok(&origin)) {
        return Err(bad());
    }
    let path = url[url::Position::BeforePath..].to_string();
    let base = origin.ascii_serialization();
    Ok((Api::operator(&base, api.timeout, api.secrets.clone()), path))
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
