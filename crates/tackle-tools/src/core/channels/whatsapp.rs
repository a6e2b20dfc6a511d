//! WhatsApp: a text message through the one WhatsApp Cloud path the `whatsapp` service tool
//! uses (`services/whatsapp.rs`), to the model's recipient or the channel's `to`.

use super::{Action, Outgoing, Sent};
use crate::services::client::Api;
use crate::services::whatsapp::{recipient, text_body, Sender};
use serde_json::json;
use tackle_protocol::{ToolContext, ToolError};

pub(super) struct Target<'a> {
    pub(super) access_token: &'a str,
    pub(super) phone_number_id: &'a str,
    pub(super) to: Option<&'a str>,
}

pub(super) async fn send(
    api: &Api,
    target: &Target<'_>,
    out: &Outgoing<'_>,
    cx: &ToolContext,
) -> Result<Sent, ToolError> {
    if out.action != Action::Send {
        return Err(out.action.wrong_channel(out.name, "whatsapp"));
    }
    let to = recipient(out.chat(target.to, "to")?)
        .map_err(|e| ToolError::invalid_arguments(e.message.replacen("`to`", "`chat_id`", 1)))?;
    let mut body = text_body(&to, out.content);
    if let Some(r) = out.reply_to()? {
        // The Cloud API's reply: the quoted message's wamid travels in the body, not a path.
        body["context"] = json!({"message_id": r});
    }
    let section = format!("channels.{}", out.name);
    let sender = Sender {
        api,
        phone_number_id: target.phone_number_id,
        token: target.access_token,
        section: &section,
    };
    let id = sender.send(cx, body).await?;
    Ok(Sent {
        chat_id: to,
        message_id: Some(id),
    })
}
