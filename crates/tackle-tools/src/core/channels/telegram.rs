//! Telegram: `POST {api_base}/bot{token}/sendMessage` with `{chat_id, text,
//! reply_to_message_id?, reply_markup?}`; answers `{ok, result: {message_id}}` or
//! `{ok: false, description}`. The token sits in the URL path, so the URL is never shown.
//! A file goes as `sendDocument` (multipart/form-data: `chat_id`, `document`, `caption`,
//! `reply_to_message_id`), answered the same way.

use super::{ids, refused, token, Action, Attachment, Outgoing, Sent};
use crate::media::multipart::{self, Field};
use crate::services::client::{json_of, Api, Body};
use serde_json::{json, Value};
use tackle_protocol::{ToolContext, ToolError};

/// Telegram's cap on one keyboard.
const MAX_BUTTONS: usize = 100;
/// Telegram's cap on a caption, in characters.
const MAX_CAPTION: usize = 1024;

pub(super) async fn send(
    api: &Api,
    bot_token: &str,
    configured_chat: Option<&str>,
    out: &Outgoing<'_>,
    cx: &ToolContext,
) -> Result<Sent, ToolError> {
    if !matches!(out.action, Action::Send | Action::InlineKeyboard) {
        return Err(out.action.wrong_channel(out.name, "telegram"));
    }
    let bot_token = token(out.name, "bot_token", bot_token)?;
    ids::telegram_token(out.name, bot_token)?;
    let chat = out.chat(configured_chat, "chat_id")?;
    if let Some(file) = out.file {
        return send_document(api, bot_token, chat, file, out, cx).await;
    }
    let mut body = json!({"chat_id": ids::telegram_chat(chat)?, "text": out.content});
    if let Some(r) = out.reply_to()? {
        body["reply_to_message_id"] = json!(ids::telegram_message("reply_to", r)?);
    }
    if out.action == Action::InlineKeyboard {
        let buttons = out.payload.get("buttons").ok_or_else(|| {
            ToolError::invalid_arguments(
                "action `inline_keyboard` needs `payload.buttons`: rows of {text, callback_data | url}",
            )
        })?;
        body["reply_markup"] = json!({"inline_keyboard": keyboard(buttons)?});
    }
    let path = format!("/bot{bot_token}/sendMessage");
    let resp = api
        .send(cx, "POST", &path, Vec::new(), Some(Body::Json(body)))
        .await?;
    let reply = json_of(&resp);
    if !(200..300).contains(&resp.status) || reply.get("ok") != Some(&Value::Bool(true)) {
        return Err(refused("Telegram", &resp, &api.secrets));
    }
    let message_id = reply
        .pointer("/result/message_id")
        .and_then(Value::as_u64)
        .map(|id| id.to_string());
    Ok(Sent {
        chat_id: chat.to_string(),
        message_id,
    })
}

/// `file` as a document, `content` its caption.
async fn send_document(
    api: &Api,
    bot_token: &str,
    chat: &str,
    file: &Attachment,
    out: &Outgoing<'_>,
    cx: &ToolContext,
) -> Result<Sent, ToolError> {
    let caption = out.content.trim();
    if caption.chars().count() > MAX_CAPTION {
        return Err(ToolError::invalid_arguments(format!(
            "a Telegram file's caption (`content`) holds at most {MAX_CAPTION} characters; send the text as a message of its own"
        )));
    }
    let chat_id = match ids::telegram_chat(chat)? {
        Value::String(s) => s,
        other => other.to_string(),
    };
    let mut fields = vec![Field::Text {
        name: "chat_id",
        value: chat_id,
    }];
    if !caption.is_empty() {
        fields.push(Field::Text {
            name: "caption",
            value: caption.to_string(),
        });
    }
    if let Some(r) = out.reply_to()? {
        fields.push(Field::Text {
            name: "reply_to_message_id",
            value: ids::telegram_message("reply_to", r)?.to_string(),
        });
    }
    fields.push(Field::File {
        name: "document",
        file_name: file.name.clone(),
        mime: file.mime,
        data: file.data.clone(),
    });
    let form = multipart::encode(fields)
        .await
        .map_err(|e| ToolError::failed(e.to_string()))?;
    let body = Body::Raw {
        content_type: form.content_type,
        data: form.body,
    };
    let path = format!("/bot{bot_token}/sendDocument");
    let resp = api.send(cx, "POST", &path, Vec::new(), Some(body)).await?;
    let reply = json_of(&resp);
    if !(200..300).contains(&resp.status) || reply.get("ok") != Some(&Value::Bool(true)) {
        return Err(refused("Telegram", &resp, &api.secrets));
    }
    Ok(Sent {
        chat_id: chat.to_string(),
        message_id: reply
            .pointer("/result/message_id")
            .and_then(Value::as_u64)
            .map(|id| id.to_string()),
    })
}

/// `payload.buttons` as Telegram's `inline_keyboard`: rows of buttons (a flat list is one
/// row), each `{text, callback_data}` or `{text, url}`, rebuilt so nothing else is forwarded.
fn keyboard(buttons: &Value) -> Result<Value, ToolError> {
    let shape = || {
        ToolError::invalid_arguments(
            "`payload.buttons` must be a non-empty list of rows, each a list of {text, callback_data | url}",
        )
    };
    let rows = buttons
        .as_array()
        .filter(|r| !r.is_empty())
        .ok_or_else(shape)?;
    let rows: Vec<Vec<&Value>> = if rows.iter().all(Value::is_object) {
        vec![rows.iter().collect()]
    } else {
        rows.iter()
            .map(|r| {
                r.as_array()
                    .filter(|r| !r.is_empty())
                    .map(|r| r.iter().collect())
                    .ok_or_else(shape)
            })
            .collect::<Result<_, _>>()?
    };
    if rows.iter().map(Vec::len).sum::<usize>() > MAX_BUTTONS {
        return Err(ToolError::invalid_arguments(format!(
            "`payload.buttons` holds more than {MAX_BUTTONS} buttons"
        )));
    }
    let rows = rows
        .into_iter()
        .map(|row| row.into_iter().map(button).collect::<Result<Vec<_>, _>>())
        .collect::<Result<Vec<_>, _>>()?;
    Ok(json!(rows))
}

fn button(b: &Value) -> Result<Value, ToolError> {
    let field = |k: &str| b.get(k).and_then(Value::as_str);
    let text = field("text").map(str::trim).filter(|t| !t.is_empty());
    let Some(text) = text else {
        return Err(ToolError::invalid_arguments(
            "every button in `payload.buttons` needs a non-empty `text`",
        ));
    };
    match (field("callback_data"), field("url")) {
        // Telegram's limit: 1–64 bytes of callback data.
        (Some(data), None) if (1..=64).contains(&data.len()) => {
            Ok(json!({"text": text, "callback_data": data}))
        }
        (None, Some(url))
            if ["https://", "http://", "tg://"]
                .iter()
                .any(|p| url.starts_with(p)) =>
        {
            Ok(json!({"text": text, "url": url}))
        }
        _ => Err(ToolError::invalid_arguments(format!(
            "button `{}` needs exactly one of `callback_data` (1–64 bytes) or `url` (http, https or tg)",
            tackle_protocol::text::preview(text, 40)
        ))),
    }
}
