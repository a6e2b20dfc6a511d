//! Matrix (client-server API): `PUT {homeserver}/_matrix/client/v3/rooms/{room}/send/
//! m.room.message/{txn}` with `Authorization: Bearer {token}` and an `m.text` event (a reply
//! carries `m.relates_to.m.in_reply_to`); answers `{event_id}` or `{errcode, error}`. A file is
//! first `POST /_matrix/media/v3/upload?filename=…` (its bytes, its media type), which answers
//! `{content_uri: "mxc://…"}`, then sent as an `m.file` event naming that URI, with `content`
//! as its caption. Matrix has no default room in the config: the room is the model's
//! `chat_id`, or the chat the turn came from.

use super::{ids, refused, token, Action, Attachment, Outgoing, Sent};
use crate::services::client::{json_of, Api, Body};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use tackle_protocol::{ToolContext, ToolError};

/// Transaction ids: unique per process (the clock) and call (the counter), so a message is
/// not taken for a retry of another.
static TXN: AtomicU64 = AtomicU64::new(0);

pub(super) async fn send(
    api: &Api,
    access_token: &str,
    out: &Outgoing<'_>,
    cx: &ToolContext,
) -> Result<Sent, ToolError> {
    if out.action != Action::Send {
        return Err(out.action.wrong_channel(out.name, "matrix"));
    }
    let access_token = token(out.name, "access_token", access_token)?;
    let room = out
        .chat_id
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .ok_or_else(|| {
            ToolError::invalid_arguments(format!(
                "channel `{}` (matrix) has no default room: give `chat_id` (a room id, !room:server)",
                out.name
            ))
        })?;
    let room = ids::matrix_room(room)?;
    let auth = vec![(
        "Authorization".to_string(),
        format!("Bearer {access_token}"),
    )];
    // Checked before anything is uploaded.
    let reply_to = out.reply_to()?.map(ids::matrix_event).transpose()?;
    let mut content = match out.file {
        None => json!({"msgtype": "m.text", "body": out.content}),
        Some(file) => {
            let uri = upload(api, &auth, file, cx).await?;
            file_event(file, &uri, out.content)
        }
    };
    if let Some(r) = reply_to {
        content["m.relates_to"] = json!({"m.in_reply_to": {"event_id": r}});
    }
    let n = TXN.fetch_add(1, Ordering::Relaxed);
    let path = format!(
        "/_matrix/client/v3/rooms/{}/send/m.room.message/tackle-tool-{}-{n}",
        ids::path_segment(room),
        crate::services::client::unix_now()
    );
    let resp = api
        .send(cx, "PUT", &path, auth, Some(Body::Json(content)))
        .await?;
    let reply = json_of(&resp);
    let event = reply.get("event_id").and_then(Value::as_str);
    match event {
        Some(id) if (200..300).contains(&resp.status) => Ok(Sent {
            chat_id: room.to_string(),
            message_id: Some(id.to_string()),
        }),
        _ => Err(refused("Matrix", &resp, &api.secrets)),
    }
}

/// Uploads `file` to the homeserver's media repository; its `mxc://` URI.
async fn upload(
    api: &Api,
    auth: &[(String, String)],
    file: &Attachment,
    cx: &ToolContext,
) -> Result<String, ToolError> {
    let name: String = url::form_urlencoded::byte_serialize(file.name.as_bytes()).collect();
    let resp = api
        .send(
            cx,
            "POST",
            &format!("/_matrix/media/v3/upload?filename={name}"),
            auth.to_vec(),
            Some(Body::Raw {
                content_type: file.mime.to_string(),
                data: file.data.clone(),
            }),
        )
        .await?;
    let reply = json_of(&resp);
    let uri = reply.get("content_uri").and_then(Value::as_str);
    match uri {
        Some(uri) if (200..300).contains(&resp.status) && uri.starts_with("mxc://") => {
            Ok(uri.to_string())
        }
        _ => Err(refused("Matrix", &resp, &api.secrets)),
    }
}

/// An `m.file` event: with `filename` set, `body` is the caption (spec v1.10, "media
/// captions"); without a caption it is the file's name.
fn file_event(file: &Attachment, uri: &str, caption: &str) -> Value {
    let caption = caption.trim();
    json!({
        "msgtype": "m.file",
        "body": if caption.is_empty() { file.name.as_str() } else { caption },
        "filename": file.name,
        "url": uri,
        "info": {"size": file.data.len(), "mimetype": file.mime},
    })
}
