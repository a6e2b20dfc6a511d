//! Sampling on the client side: a configured server asks our model for a completion in the
//! middle of a call (`sampling/createMessage`).
//!
//! Off unless the operator sets `mcp_servers.NAME.sampling: ask`; then the capability is
//! declared only when the front end's [`SamplingHandler`] can ask a person, and every request
//! is put to that person before the model sees it (and its answer before the server does).
//! Only the server's own messages are sent: nothing of the agent's conversation
//! (`includeContext` is ignored), no tools, text only.

use async_trait::async_trait;

/// Who wrote a message of the conversation the server sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SampleRole {
    /// The human side of the conversation (as the server casts it).
    User,
    /// The model's side.
    Assistant,
}

/// One message of that conversation (text only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampleMessage {
    /// Which side it is written as.
    pub role: SampleRole,
    /// Its text (the text blocks of the message, one per line); untrusted, from the server.
    pub text: String,
}

/// What a server asks the model.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleRequest {
    /// The server's system prompt, if it sent one.
    pub system: Option<String>,
    /// The conversation to complete, oldest first (never empty).
    pub messages: Vec<SampleMessage>,
    /// The most tokens the server wants back (already capped by the client).
    pub max_tokens: u32,
    /// The sampling temperature the server asks for, if any (passed to the model as is).
    pub temperature: Option<f32>,
}

/// The model's answer, as it goes back to the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampleAnswer {
    /// The completion, as approved for sending.
    pub text: String,
    /// The model that wrote it.
    pub model: String,
    /// It stopped because it reached `max_tokens`.
    pub truncated: bool,
}

/// Why a request was not answered.
#[derive(Debug, thiserror::Error)]
pub enum SampleError {
    /// The person said no (to the request, or to sending the answer).
    #[error("the request was declined")]
    Declined,
    /// Nobody can be asked here.
    #[error("cannot ask: {0}")]
    Unavailable(String),
    /// The model could not be reached or failed.
    #[error("the model failed: {0}")]
    Model(String),
}

/// Why a server's `sampling/createMessage` request cannot be read (answered as invalid params).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum BadSampleRequest {
    #[error("only text messages can be sampled here")]
    NotText,
    #[error("a sampling request needs at least one message")]
    NoMessages,
}

/// The front end's side of sampling.
#[async_trait]
pub trait SamplingHandler: Send + Sync {
    /// Whether a person can be asked to approve; only then is `sampling` declared.
    fn can_ask(&self) -> bool;

    /// Ask on behalf of `server`, then run the model.
    async fn sample(
        &self,
        server: &str,
        request: SampleRequest,
    ) -> Result<SampleAnswer, SampleError>;
}

/// Refuses every request; the default.
pub struct RefuseSampling;

#[async_trait]
impl SamplingHandler for RefuseSampling {
    fn can_ask(&self) -> bool {
        false
    }

    async fn sample(&self, _: &str, _: SampleRequest) -> Result<SampleAnswer, SampleError> {
        Err(SampleError::Unavailable(
            "sampling is not available here".into(),
        ))
    }
}

/// The most tokens a server may ask for in one request, whatever it asks.
pub const MAX_SAMPLE_TOKENS: u32 = 4096;

/// Read a `sampling/createMessage` request: text messages only, the token budget capped.
#[allow(deprecated)]
pub(crate) fn request_from(
    params: rmcp::model::CreateMessageRequestParams,
) -> Result<SampleRequest, BadSampleRequest> {
    use rmcp::model::{Role, SamplingMessageContentBlock};
    let mut messages = Vec::new();
    for message in params.messages {
        let role = match message.role {
            Role::User => SampleRole::User,
            Role::Assistant => SampleRole::Assistant,
        };
        let mut text = String::new();
        for block in message.content.into_vec() {
            match block {
                SamplingMessageContentBlock::Text(t) => {
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(&t.text);
                }
                _ => return Err(BadSampleRequest::NotText),
            }
        }
        messages.push(SampleMessage { role, text });
    }
    if messages.is_empty() {
        return Err(BadSampleRequest::NoMessages);
    }
    Ok(SampleRequest {
        system: params.system_prompt.filter(|s| !s.trim().is_empty()),
        messages,
        max_tokens: params.max_tokens.clamp(1, MAX_SAMPLE_TOKENS),
        temperature: params.temperature,
    })
}

/// The answer as a `CreateMessageResult`.
#[allow(deprecated)]
pub(crate) fn result_from(answer: SampleAnswer) -> rmcp::model::CreateMessageResult {
    use rmcp::model::{CreateMessageResult, Role, SamplingMessage, SamplingMessageContentBlock};
    let stop = if answer.truncated {
        CreateMessageResult::STOP_REASON_END_MAX_TOKEN
    } else {
        CreateMessageResult::STOP_REASON_END_TURN
    };
    CreateMessageResult::new(
        SamplingMessage::new(
            Role::Assistant,
            SamplingMessageContentBlock::text(answer.text),
        ),
        answer.model,
    )
    .with_stop_reason(stop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(deprecated)]
    fn params(value: serde_json::Value) -> rmcp::model::CreateMessageRequestParams {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn text_messages_are_read_and_the_token_budget_is_capped() {
        let r = request_from(params(serde_json::json!({
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "Hello"}},
                {"role": "assistant", "content": [{"type": "text", "text": "Hi"}]}
            ],
            "systemPrompt": "Be brief",
            "maxTokens": 1_000_000,
            "includeContext": "allServers"
        })))
        .unwrap();
        assert_eq!(r.system.as_deref(), Some("Be brief"));
        assert_eq!(r.max_tokens, MAX_SAMPLE_TOKENS);
        assert_eq!(
            r.messages,
            [
                SampleMessage {
                    role: SampleRole::User,
                    text: "Hello".into()
                },
                SampleMessage {
                    role: SampleRole::Assistant,
                    text: "Hi".into()
                },
            ]
        );
    }

    #[test]
    fn images_and_empty_conversations_are_refused() {
        let image = params(serde_json::json!({
            "messages": [{"role": "user", "content": {"type": "image", "data": "AAAA", "mimeType": "image/png"}}],
            "maxTokens": 10
        }));
        assert_eq!(request_from(image), Err(BadSampleRequest::NotText));
        let empty = params(serde_json::json!({"messages": [], "maxTokens": 10}));
        assert_eq!(request_from(empty), Err(BadSampleRequest::NoMessages));
    }
}
