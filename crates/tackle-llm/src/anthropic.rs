//! Anthropic Messages API: top-level system prompt, `tool_use`/`tool_result` blocks, and the
//! typed SSE events (`message_start` … `message_stop`).

use crate::error::LlmError;
use crate::http::{Transport, WireDecoder};
use crate::kinds::ANTHROPIC;
use crate::retry::RetryPolicy;
use crate::timeouts::Timeouts;
use crate::types::{ChatRequest, EventStream, StopReason, StreamEvent, Usage};
use crate::Provider;
use async_trait::async_trait;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use tackle_protocol::message::{Message, Role};

/// The Messages API requires `max_tokens`; used when the request sets none.
pub const DEFAULT_MAX_TOKENS: u32 = 8_192;

/// A client for the Anthropic Messages API.
#[derive(Debug, Clone)]
pub struct AnthropicProvider {
    transport: Transport,
    api_key: String,
}

impl AnthropicProvider {
    /// `api_base` is the URL that `/messages` is appended to; a bare host means its `/v1`
    /// ([`crate::config::normalize_api_base`]).
    pub fn new(name: &str, api_base: &str, api_key: String) -> Result<Self, LlmError> {
        Ok(Self {
            transport: Transport::new(name, api_base, ANTHROPIC.key_var)?,
            api_key,
        })
    }

    /// Replaces the retry policy (default [`RetryPolicy::default`]: 4 tries, 0.5 s base delay,
    /// 60 s cap); [`RetryPolicy::none`] disables retries.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.transport.retry = retry;
        self
    }

    /// Connect, first-byte and idle timeouts (default [`Timeouts::default`]); each is
    /// clamped to a day.
    pub fn with_timeouts(mut self, timeouts: Timeouts) -> Self {
        self.transport.timeouts = timeouts.clamped();
        self
    }
}

#[async_trait]
impl Provider for AnthropicProvider {
    fn name(&self) -> &str {
        &self.transport.backend
    }

    async fn stream(&self, req: ChatRequest) -> Result<EventStream, LlmError> {
        let url = self.transport.url(ANTHROPIC.chat_path);
        let body = request_body(&req);
        let backend = self.transport.backend.clone();
        let make = |client: &reqwest::Client| {
            ANTHROPIC
                .headers(Some(&self.api_key))
                .into_iter()
                .fold(client.post(&url).json(&body), |rb, (name, value)| {
                    rb.header(name, value)
                })
        };
        self.transport
            .open(
                make,
                &req.model,
                || AnthropicDecoder::new(&backend),
                req.progress.as_ref(),
            )
            .await
    }
}

/// The JSON body of a Messages request.
pub(crate) fn request_body(req: &ChatRequest) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(req.model));
    body.insert(
        "max_tokens".into(),
        json!(req.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)),
    );
    let system: Vec<&str> = req
        .messages
        .iter()
        .filter(|m| m.role == Role::System)
        .map(|m| m.content.as_str())
        .collect();
    if !system.is_empty() {
        body.insert("system".into(), json!(system.join("\n\n")));
    }
    body.insert(
        "messages".into(),
        Value::Array(wire_messages(&req.messages)),
    );
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(t) = req.temperature {
        body.insert("temperature".into(), crate::openai::temperature(t));
    }
    if req.stream {
        body.insert("stream".into(), json!(true));
    }
    Value::Object(body)
}

/// Messages as content blocks. The API wants user and assistant turns to alternate, so
/// consecutive messages of one side (several tool results, then a user note) merge into one.
fn wire_messages(messages: &[Message]) -> Vec<Value> {
    let mut out: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for m in messages {
        let (role, blocks) = match m.role {
            Role::System => continue,
            Role::User => ("user", text_block(&m.content)),
            Role::Tool => ("user", vec![tool_result_block(m)]),
            Role::Assistant => ("assistant", assistant_blocks(m)),
        };
        if blocks.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some((last, acc)) if *last == role => acc.extend(blocks),
            _ => out.push((role, blocks)),
        }
    }
    out.into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect()
}

fn text_block(text: &str) -> Vec<Value> {
    if text.is_empty() {
        Vec::new()
    } else {
        vec![json!({"type": "text", "text": text})]
    }
}

fn tool_result_block(m: &Message) -> Value {
    let mut block = json!({
        "type": "tool_result",
        "tool_use_id": m.tool_call_id.clone().unwrap_or_default(),
        "content": m.content,
    });
    if m.is_error {
        block["is_error"] = json!(true);
    }
    block
}

fn assistant_blocks(m: &Message) -> Vec<Value> {
    let mut blocks = text_block(&m.content);
    for call in &m.tool_calls {
        blocks.push(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": tool_input(&call.arguments)}));
    }
    blocks
}

/// `input` must be an object. Arguments the loop kept as a raw string (malformed JSON) are
/// parsed if they can be, and otherwise sent as an empty object: the tool result that follows
/// already tells the model what was wrong with them.
fn tool_input(args: &Value) -> Value {
    match args {
        Value::Object(_) => args.clone(),
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(v @ Value::Object(_)) => v,
            _ => json!({}),
        },
        _ => json!({}),
    }
}

pub(crate) fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "end_turn" | "stop_sequence" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" => StopReason::MaxTokens,
        "refusal" => StopReason::ContentFilter,
        other => StopReason::Other(other.to_string()),
    }
}

/// Decodes the Messages event stream. Content blocks are numbered across text and tool
/// blocks; tool calls get their own 0-based index in the order they start.
pub(crate) struct AnthropicDecoder {
    backend: String,
    /// Content block index → tool call index.
    tool_blocks: HashMap<u64, usize>,
    usage: Usage,
    stop: Option<StopReason>,
    done: bool,
}

impl AnthropicDecoder {
    pub fn new(backend: &str) -> Self {
        Self {
            backend: backend.to_string(),
            tool_blocks: HashMap::new(),
            usage: Usage::default(),
            stop: None,
            done: false,
        }
    }

    fn block_start(&mut self, v: &Value, out: &mut Vec<StreamEvent>) {
        let block = v.get("content_block").unwrap_or(&Value::Null);
        match block.get("type").and_then(Value::as_str) {
            Some("text") => push_text(block.get("text"), out),
            Some("tool_use") => {
                let index = self.tool_blocks.len();
                self.tool_blocks.insert(block_index(v), index);
                let id = str_field(block, "id");
                let name = str_field(block, "name");
                out.push(StreamEvent::ToolCallStart { index, id, name });
                // Streaming sends `input: {}` and then the JSON in deltas; anything else is the
                // whole input already.
                if let Some(input) = block.get("input").filter(|i| !is_empty_object(i)) {
                    out.push(StreamEvent::ToolCallArgsDelta {
                        index,
                        delta: input.to_string(),
                    });
                }
            }
            _ => {}
        }
    }

    fn block_delta(&mut self, v: &Value, out: &mut Vec<StreamEvent>) {
        let delta = v.get("delta").unwrap_or(&Value::Null);
        match delta.get("type").and_then(Value::as_str) {
            Some("text_delta") => push_text(delta.get("text"), out),
            Some("input_json_delta") => {
                if let Some(&index) = self.tool_blocks.get(&block_index(v)) {
                    let partial = str_field(delta, "partial_json");
                    if !partial.is_empty() {
                        out.push(StreamEvent::ToolCallArgsDelta {
                            index,
                            delta: partial,
                        });
                    }
                }
            }
            _ => {}
        }
    }

    fn message_delta(&mut self, v: &Value, out: &mut Vec<StreamEvent>) {
        if let Some(reason) = v.pointer("/delta/stop_reason").and_then(Value::as_str) {
            self.stop = Some(stop_reason(reason));
        }
        if let Some(u) = v.get("usage") {
            self.absorb_usage(u);
            out.push(StreamEvent::Usage(self.usage));
        }
    }

    fn absorb_usage(&mut self, u: &Value) {
        let get = |k: &str| u.get(k).and_then(Value::as_u64);
        // Cached prompt tokens are still input the turn consumed.
        let input = [
            "input_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
        ]
        .iter()
        .filter_map(|k| get(k))
        .sum::<u64>();
        if input > 0 {
            self.usage.input_tokens = input;
        }
        if let Some(o) = get("output_tokens") {
            self.usage.output_tokens = o;
        }
    }

    fn error(&self, v: &Value) -> LlmError {
        let err = v.get("error").unwrap_or(v);
        let kind = err
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("an error")
            .to_string();
        let message = err
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default();
        LlmError::Api {
            backend: self.backend.clone(),
            retryable: matches!(
                kind.as_str(),
                "overloaded_error" | "api_error" | "rate_limit_error"
            ),
            kind,
            message: tackle_protocol::text::truncate_at_char_boundary(message, 2_000).to_string(),
        }
    }
}

impl WireDecoder for AnthropicDecoder {
    fn on_event(&mut self, event: &str, data: &str) -> Result<Vec<StreamEvent>, LlmError> {
        if data.trim().is_empty() {
            return Ok(Vec::new());
        }
        let v: Value = serde_json::from_str(data).map_err(|e| {
            LlmError::protocol(&self.backend, format!("event `{event}` is not JSON ({e})"))
        })?;
        // The `type` inside the data is authoritative; the SSE event name is a copy of it.
        let kind = v.get("type").and_then(Value::as_str).unwrap_or(event);
        let mut out = Vec::new();
        match kind {
            "message_start" => {
                if let Some(u) = v.pointer("/message/usage") {
                    self.absorb_usage(u);
                }
            }
            "content_block_start" => self.block_start(&v, &mut out),
            "content_block_delta" => self.block_delta(&v, &mut out),
            "content_block_stop" => {
                if let Some(&index) = self.tool_blocks.get(&block_index(&v)) {
                    out.push(StreamEvent::ToolCallEnd { index });
                }
            }
            "message_delta" => self.message_delta(&v, &mut out),
            "message_stop" => {
                self.done = true;
                out.push(StreamEvent::Stop(
                    self.stop.take().unwrap_or(StopReason::EndTurn),
                ));
            }
            "error" => return Err(self.error(&v)),
            _ => {} // `ping` and event types added later
        }
        Ok(out)
    }

    fn on_eof(&mut self) -> Result<Vec<StreamEvent>, LlmError> {
        if self.done {
            return Ok(Vec::new());
        }
        Err(LlmError::protocol(
            &self.backend,
            "the stream ended before `message_stop`; the model's turn is incomplete",
        ))
    }

    fn on_json(&mut self, body: Value) -> Result<Vec<StreamEvent>, LlmError> {
        if body.get("type").and_then(Value::as_str) == Some("error") {
            return Err(self.error(&body));
        }
        let mut out = Vec::new();
        let mut next_tool = 0;
        let blocks = body.get("content").and_then(Value::as_array);
        for block in blocks.into_iter().flatten() {
            match block.get("type").and_then(Value::as_str) {
                Some("text") => push_text(block.get("text"), &mut out),
                Some("tool_use") => {
                    let index = next_tool;
                    next_tool += 1;
                    out.push(StreamEvent::ToolCallStart {
                        index,
                        id: str_field(block, "id"),
                        name: str_field(block, "name"),
                    });
                    let input = block.get("input").cloned().unwrap_or_else(|| json!({}));
                    out.push(StreamEvent::ToolCallArgsDelta {
                        index,
                        delta: input.to_string(),
                    });
                    out.push(StreamEvent::ToolCallEnd { index });
                }
                _ => {}
            }
        }
        if let Some(u) = body.get("usage") {
            self.absorb_usage(u);
            out.push(StreamEvent::Usage(self.usage));
        }
        let reason = body
            .get("stop_reason")
            .and_then(Value::as_str)
            .unwrap_or("end_turn");
        self.done = true;
        out.push(StreamEvent::Stop(stop_reason(reason)));
        Ok(out)
    }

    fn is_done(&self) -> bool {
        self.done
    }
}

fn block_index(v: &Value) -> u64 {
    v.get("index").and_then(Value::as_u64).unwrap_or(0)
}

fn str_field(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn push_text(text: Option<&Value>, out: &mut Vec<StreamEvent>) {
    if let Some(t) = text.and_then(Value::as_str).filter(|t| !t.is_empty()) {
        out.push(StreamEvent::TextDelta(t.to_string()));
    }
}

fn is_empty_object(v: &Value) -> bool {
    v.as_object().is_some_and(Map::is_empty)
}
