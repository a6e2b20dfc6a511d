//! `whatsapp {to, message | template, template_params?, language?}`: one text or template
//! message through the WhatsApp Cloud API (`POST /v18.0/{phone_number_id}/messages`).

use super::client::{api_error, is_success, json_of, Api, Body};
use super::secrets::Secrets;
use super::{not_configured, ServicesSettings, NAME};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use std::time::Duration;
use tackle_protocol::text::preview;
use tackle_protocol::{
    ApprovalMode, Capability, Risk, Tool, ToolContext, ToolError, ToolOutput, ToolSpec,
};

const DEFAULT_API: &str = "https://graph.facebook.com";
const API_VERSION: &str = "v18.0";

pub(crate) struct Whatsapp {
    /// `None` when `services.whatsapp` is missing.
    target: Option<Target>,
}

struct Target {
    api: Api,
    phone_number_id: String,
    token: String,
}

// Arguments of `whatsapp`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Recipient phone number in digits with country code, e.g. 14155550123.
    to: String,
    /// The text to send (required without template).
    message: Option<String>,
    /// An approved template's name.
    template: Option<String>,
    /// Values for the template body's placeholders, in order.
    #[serde(default)]
    template_params: Vec<String>,
    /// The template's language code. Default en_US.
    language: Option<String>,
}

impl Whatsapp {
    pub(crate) fn new(settings: &ServicesSettings) -> Self {
        let target = settings.whatsapp.as_ref().map(|c| {
            let secrets = Secrets::new([c.access_token.to_string()]);
            Target {
                api: Api::new(
                    c.api_base.as_deref(),
                    DEFAULT_API,
                    settings.timeout,
                    secrets,
                ),
                phone_number_id: c.phone_number_id.trim().to_string(),
                token: c.access_token.trim().to_string(),
            }
        });
        Self { target }
    }
}

pub(crate) fn path(phone_number_id: &str) -> String {
    format!("/{API_VERSION}/{phone_number_id}/messages")
}

/// The recipient as the API wants it: digits with the country code, no `+` or spaces.
pub(crate) fn recipient(to: &str) -> Result<String, ToolError> {
    let digits: String = to
        .trim()
        .trim_start_matches('+')
        .chars()
        .filter(|c| !matches!(c, ' ' | '-'))
        .collect();
    if (7..=15).contains(&digits.len()) && digits.chars().all(|c| c.is_ascii_digit()) {
        Ok(digits)
    } else {
        Err(ToolError::invalid_arguments(format!(
            "`to` must be a phone number in digits with its country code (e.g. 14155550123), got `{}`",
            preview(to, 40)
        )))
    }
}

/// The message body of §E: a text message, or a template with its body parameters.
fn body(a: &Args, to: String) -> Result<Value, ToolError> {
    let mut body = json!({
        "messaging_product": "whatsapp",
        "recipient_type": "individual",
        "to": to,
    });
    match (&a.template, &a.message) {
        (Some(_), Some(_)) => Err(ToolError::invalid_arguments(
            "give either `message` (a text) or `template`, not both",
        )),
        (None, None) => Err(ToolError::invalid_arguments(
            "`message` is required unless `template` is given",
        )),
        (None, Some(text)) if text.trim().is_empty() => {
            Err(ToolError::invalid_arguments("`message` must not be empty"))
        }
        (None, Some(text)) => {
            if !a.template_params.is_empty() || a.language.is_some() {
                return Err(ToolError::invalid_arguments(
                    "`template_params` and `language` go with `template`",
                ));
            }
            Ok(text_body(&to, text))
        }
        (Some(name), None) => {
            let name_ok = !name.is_empty()
                && name.len() <= 512
                && name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
            if !name_ok {
                return Err(ToolError::invalid_arguments(format!(
                    "`template` must be a template name (lower-case letters, digits, `_`), got `{}`",
                    preview(name, 60)
                )));
            }
            let language = a.language.as_deref().unwrap_or("en_US");
            let lang_ok = (2..=10).contains(&language.len())
                && language
                    .chars()
                    .all(|c| c.is_ascii_alphabetic() || c == '_' || c == '-');
            if !lang_ok {
                return Err(ToolError::invalid_arguments(format!(
                    "`language` must be a language code such as en_US, got `{}`",
                    preview(language, 20)
                )));
            }
            let mut template = json!({"name": name, "language": {"code": language}});
            if !a.template_params.is_empty() {
                let parameters: Vec<Value> = a
                    .template_params
                    .iter()
                    .map(|p| json!({"type": "text", "text": p}))
                    .collect();
                template["components"] = json!([{"type": "body", "parameters": parameters}]);
            }
            body["type"] = json!("template");
            body["template"] = template;
            Ok(body)
        }
    }
}

#[async_trait]
impl Tool for Whatsapp {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "whatsapp",
            "Send a WhatsApp message through the WhatsApp Cloud API: a text (`message`), or an \
             approved template (`template`, with `template_params` for its body placeholders). \
             Returns the message id.",
            NAME,
        )
        .parameters(crate::args::schema::<Args>())
        .risk(Risk::Medium)
        .approval(ApprovalMode::UnlessAutoApproved)
    }

    fn planned_capabilities(&self, _args: &Value, _cx: &ToolContext) -> Vec<Capability> {
        match &self.target {
            Some(t) => t.api.planned("POST", &path(&t.phone_number_id)),
            None => Vec::new(),
        }
    }

    fn timeout(&self) -> Option<Duration> {
        self.target
            .as_ref()
            .map(|t| t.api.timeout + Duration::from_secs(5))
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let a: Args = crate::args::parse_for("whatsapp", args)?;
        let Some(Target {
            api,
            phone_number_id,
            token,
        }) = &self.target
        else {
            return Err(not_configured("whatsapp"));
        };
        let to = recipient(&a.to)?;
        let body = body(&a, to.clone())?;
        let sender = Sender {
            api,
            phone_number_id,
            token,
            section: "services.whatsapp",
        };
        let id = sender.send(cx, body).await?;
        Ok(
            ToolOutput::text(format!("Sent WhatsApp message to {to}: message id {id}"))
                .with_structured(json!({"to": to, "message_id": id})),
        )
    }
}

/// One configured sending number: what the `whatsapp` tool and the `message` tool's whatsapp
/// channels both send through.
pub(crate) struct Sender<'a> {
    pub(crate) api: &'a Api,
    pub(crate) phone_number_id: &'a str,
    pub(crate) token: &'a str,
    /// Where the operator wrote it (`services.whatsapp`, `channels.NAME`), for errors.
    pub(crate) section: &'a str,
}

impl Sender<'_> {
    /// POST one message `body`; its message id (scrubbed), or `failed` with the API's message.
    pub(crate) async fn send(&self, cx: &ToolContext, body: Value) -> Result<String, ToolError> {
        let section = self.section;
        let token = self.token.trim();
        if token.is_empty() {
            return Err(ToolError::failed(format!(
                "{section}.access_token is empty (is its variable set?)"
            )));
        }
        let id = self.phone_number_id.trim();
        if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit()) {
            return Err(ToolError::failed(format!(
                "{section}.phone_number_id must be the number's id in digits"
            )));
        }
        let headers = vec![("Authorization".to_string(), format!("Bearer {token}"))];
        let api = self.api;
        let resp = api
            .send(cx, "POST", &path(id), headers, Some(Body::Json(body)))
            .await?;
        if !is_success(&resp) {
            return Err(api_error("WhatsApp", &resp, &api.secrets));
        }
        let reply = json_of(&resp);
        let id = reply
            .pointer("/messages/0/id")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                ToolError::failed("WhatsApp answered without a message id (messages[0].id)")
            })?;
        Ok(api.secrets.scrub(id))
    }
}

/// A plain text message to `to` (already checked by [`recipient`]).
pub(crate) fn text_body(to: &str, text: &str) -> Value {
    json!({
        "messaging_product": "whatsapp",
        "recipient_type": "individual",
        "to": to,
        "type": "text",
        "text": {"preview_url": false, "body": text},
    })
}
