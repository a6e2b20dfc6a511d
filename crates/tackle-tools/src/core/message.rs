//! `message`: a proactive message to the session's own front end (`session`: an event and a
//! session-log entry) or to a channel the operator configured (`channels:`). A webhook is a
//! JSON POST through the host to the operator's URL, pinned and timed out.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tackle_protocol::config::ChannelConfig;
use tackle_protocol::{
    ApprovalMode, HttpRequest, Risk, Tool, ToolContext, ToolError, ToolOutput, ToolSpec,
};

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

pub struct SendMessage {
    pub(super) channels: Arc<BTreeMap<String, ChannelConfig>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    content: String,
    #[serde(default)]
    channel: Option<String>,
    #[serde(default)]
    chat_id: Option<String>,
    #[serde(default)]
    reply_to: Option<String>,
    #[serde(default)]
    action: Option<String>,
    #[serde(default)]
    #[allow(dead_code)]
    payload: Option<Value>,
}

impl SendMessage {
    fn configured(&self) -> String {
        std::iter::once("`session`".to_string())
            .chain(self.channels.keys().map(|k| format!("`{k}`")))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// `NAME`, `webhook:NAME`, or `webhook` when exactly one webhook is configured.
    fn find(&self, channel: &str) -> Option<(&str, &ChannelConfig)> {
        let name = channel.strip_prefix("webhook:").unwrap_or(channel);
        if let Some((k, c)) = self.channels.get_key_value(name) {
            return Some((k.as_str(), c));
        }
        if channel == "webhook" {
            let mut hooks = self.channels.iter();
            if let (Some((k, c)), None) = (hooks.next(), hooks.next()) {
                return Some((k.as_str(), c));
            }
        }
        None
    }
}

#[async_trait]
impl Tool for SendMessage {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "message",
            "Send a proactive message: to this session's front end (`channel: session`, the default) or to a channel the operator configured. Returns where it went.",
            "core",
        )
        .parameters(json!({"type": "object", "properties": {
            "content": {"type": "string", "description": "The message."},
            "channel": {"type": "string", "description": "`session` (default) or a configured channel."},
            "chat_id": {"type": "string"},
            "reply_to": {"type": "string"},
            "action": {"type": "string", "enum": ["send", "react", "rich_message", "inline_keyboard"]},
            "payload": {"type": "object"}
        }, "required": ["content"]}))
        .risk(Risk::Medium)
        .approval(ApprovalMode::UnlessAutoApproved)
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let a: Args = serde_json::from_value(args).map_err(|e| {
            ToolError::invalid_arguments(format!("invalid arguments for `message`: {e}"))
        })?;
        let action = a.action.as_deref().unwrap_or("send");
        if action != "send" {
            return Err(ToolError::invalid_arguments(format!(
                "action `{action}` needs a telegram, slack or discord channel, and none is configured; use `send`"
            )));
        }
        let channel = a.channel.as_deref().unwrap_or("session");
        if channel == "session" {
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
        let chat_id = a.chat_id.clone().unwrap_or_else(|| cx.chat_id.clone());
        match config {
            ChannelConfig::Webhook {
                url,
                headers,
                timeout_secs,
            } => {
                let body = json!({
                    "content": a.content,
                    "chat_id": chat_id,
                    "reply_to": a.reply_to,
                    "agent": cx.agent,
                    "session": cx.session_id,
                });
                let mut hdrs: Vec<(String, String)> =
                    vec![("content-type".into(), "application/json".into())];
                hdrs.extend(headers.iter().map(|(k, v)| (k.clone(), v.clone())));
                let resp = cx
                    .host()
                    .http(HttpRequest {
                        method: "POST".into(),
                        url: url.clone(),
                        headers: hdrs,
                        body: Some(body.to_string().into_bytes()),
                        max_bytes: 16 * 1024,
                        timeout: timeout_secs.map_or(DEFAULT_TIMEOUT, Duration::from_secs),
                        follow_redirects: false,
                        operator_configured: true,
                    })
                    .await
                    .map_err(ToolError::from)?;
                if resp.status >= 400 {
                    return Err(ToolError::failed(format!(
                        "channel `{name}` answered HTTP {}",
                        resp.status
                    )));
                }
                Ok(ToolOutput::text(format!("Sent to {name}:{chat_id}.")))
            }
        }
    }
}
