//! OpenAI-compatible Chat Completions: OpenAI, OpenRouter, Groq, Ollama, vLLM, llama.cpp,
//! LM Studio. Streams SSE `data:` chunks ending in `[DONE]`; also accepts plain JSON.

use crate::error::LlmError;
use crate::http::{Transport, WireDecoder};
use crate::kinds::OPENAI;
use crate::retry::RetryPolicy;
use crate::timeouts::Timeouts;
use crate::types::{ChatRequest, EventStream, StopReason, StreamEvent, Usage};
use crate::Provider;
use async_trait::async_trait;
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;
use tackle_protocol::message::{Message, Role};

/// A client for one OpenAI-compatible backend.
#[derive(Debug, Clone)]
pub struct OpenAiProvider {
    transport: Transport,
    api_key: Option<String>,
}

impl OpenAiProvider {
    /// `api_base` is the URL that `/chat/completions` is appended to (a bare host means its
    /// `/v1`, [`crate::config::normalize_api_base`]); `api_key` may be absent
    /// for local servers.
    pub fn new(name: &str, api_base: &str, api_key: Option<String>) -> Result<Self, LlmError> {
        Ok(Self {
            transport: Transport::new(name, api_base, OPENAI.key_var)?,
            api_key: api_key.filter(|k| !k.is_empty()),
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
impl Provider for OpenAiProvider {
    fn name(&self) -> &str {
        &self.transport.backend
    }

    async fn stream(&self, req: ChatRequest) -> Result<EventStream, LlmError> {
        let url = self.transport.url(OPENAI.chat_path);
        let body = request_body(&req);
        let backend = self.transport.backend.clone();
        let make = |client: &reqwest::Client| {
            OPENAI
                .headers(self.api_key.as_deref())
                .into_iter()
                .fold(client.post(&url).json(&body), |rb, (name, value)| {
                    rb.header(name, value)
                })
        };
        self.transport
            .open(
                make,
                &req.model,
                || OpenAiDecoder::new(&backend),
                req.progress.as_ref(),
            )
            .await
    }
}

/// The JSON body of a Chat Completions request.
pub(crate) fn request_body(req: &ChatRequest) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(req.model));
    body.insert(
        "messages".into(),
        Value::Array(req.messages.iter().map(wire_message).collect()),
    );
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.parameters}})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(max) = req.max_tokens {
        body.insert("max_tokens".into(), json!(max));
    }
    if let Some(t) = req.temperature {
        body.insert("temperature".into(), temperature(t));
    }
    if req.stream {
        body.insert("stream".into(), json!(true));
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    Value::Object(body)
}

/// `0.7f32` as `0.7`, not `0.699999988079071`: go through the shortest decimal form.
pub(crate) fn temperature(t: f32) -> Value {
    t.to_string()
        .parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(Value::Null, Value::Number)
}

fn wire_message(m: &Message) -> Value {
    match m.role {
        Role::System => json!({"role": "system", "content": m.content}),
        Role::User => json!({"role": "user", "content": m.content}),
        Role::Tool => json!({
            "role": "tool",
            "tool_call_id": m.tool_call_id.clone().unwrap_or_default(),
            "content": m.content,
        }),
        Role::Assistant => {
            let mut out = json!({"role": "assistant", "content": m.content});
            if !m.tool_calls.is_empty() {
                let calls: Vec<Value> = m
                    .tool_calls
                    .iter()
                    .map(|c| {
                        json!({"id": c.id, "type": "function", "function": {
                            "name": c.name, "arguments": raw_arguments(&c.arguments)}})
                    })
                    .collect();
                out["tool_calls"] = Value::Array(calls);
                if m.content.is_empty() {
                    out["content"] = Value::Null;
                }
            }
            out
        }
    }
}

/// Arguments the loop could not parse are kept as the raw string; echo them back unchanged.
fn raw_arguments(args: &Value) -> String {
    match args {
        Value::String(s) => s.clone(),
        Value::Null => "{}".to_string(),
        other => other.to_string(),
    }
}

pub(crate) fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "stop" => StopReason::EndTurn,
        "tool_calls" | "function_call" => StopReason::ToolUse,
        "length" => StopReason::MaxTokens,
        "content_filter" => StopReason::ContentFilter,
        other => StopReason::Other(other.to_string()),
    }
}

fn usage(v: &Value) -> Option<Usage> {
    let u = v.get("usage").filter(|u| u.is_object())?;
    Some(Usage {
        input_tokens: u.get("prompt_tokens").and_then(Value::as_u64).unwrap_or(0),
        output_tokens: u
            .get("completion_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0),
    })
}

/// Assembles Chat Completions chunks. Tool calls are keyed by the server's `index`; since
/// the format has no per-call end, every open call ends when `finish_reason` arrives.
pub(crate) struct OpenAiDecoder {
    backend: String,
    open_calls: BTreeSet<usize>,
    last_index: Option<usize>,
    last_id: Option<String>,
    stop: Option<StopReason>,
    done: bool,
}

impl OpenAiDecoder {
    pub fn new(backend: &str) -> Self {
        Self {
            backend: backend.to_string(),
            open_calls: BTreeSet::new(),
            last_index: None,
            last_id: None,
            stop: None,
            done: false,
        }
    }

    fn chunk(&mut self, v: &Value) -> Result<Vec<StreamEvent>, LlmError> {
        if let Some(err) = v.get("error") {
            return Err(api_error(&self.backend, err));
        }
        let mut out = Vec::new();
        let choice = v.get("choices").and_then(|c| c.get(0));
        if let Some(delta) = choice.and_then(|c| c.get("delta")) {
            if let Some(text) = delta.get("content").and_then(Value::as_str) {
                if !text.is_empty() {
                    out.push(StreamEvent::TextDelta(text.to_string()));
                }
            }
            for call in delta
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                self.tool_call_delta(call, &mut out);
            }
        }
        if let Some(reason) = choice
            .and_then(|c| c.get("finish_reason"))
            .and_then(Value::as_str)
        {
            self.finish(reason, &mut out);
        }
        if let Some(u) = usage(v) {
            out.push(StreamEvent::Usage(u));
        }
        Ok(out)
    }

    fn tool_call_delta(&mut self, call: &Value, out: &mut Vec<StreamEvent>) {
        let index = self.call_index(call);
        self.last_index = Some(index);
        if let Some(id) = call
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        {
            self.last_id = Some(id.to_string());
        }
        let function = call.get("function");
        if self.open_calls.insert(index) {
            let id = call
                .get("id")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .unwrap_or_else(|| format!("call_{index}"));
            let name = function
                .and_then(|f| f.get("name"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            out.push(StreamEvent::ToolCallStart { index, id, name });
        }
        if let Some(args) = function
            .and_then(|f| f.get("arguments"))
            .and_then(Value::as_str)
        {
            if !args.is_empty() {
                out.push(StreamEvent::ToolCallArgsDelta {
                    index,
                    delta: args.to_string(),
                });
            }
        }
    }

    /// The call a delta belongs to. Servers that omit `index` are handled too: a new id
    /// starts a new call; no id, or the same id again, continues the latest one.
    fn call_index(&mut self, call: &Value) -> usize {
        if let Some(i) = call
            .get("index")
            .and_then(Value::as_u64)
            .and_then(|i| usize::try_from(i).ok())
        {
            return i;
        }
        let id = call
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        match (self.last_index, id) {
            (Some(last), None) => last,
            (Some(last), Some(id)) if self.last_id.as_deref() == Some(id) => last,
            (Some(last), Some(_)) => last + 1,
            (None, _) => 0,
        }
    }

    fn finish(&mut self, reason: &str, out: &mut Vec<StreamEvent>) {
        let had_calls = !self.open_calls.is_empty();
        for index in std::mem::take(&mut self.open_calls) {
            out.push(StreamEvent::ToolCallEnd { index });
        }
        // Some servers (older Ollama) say `stop` even when the turn ends in tool calls.
        self.stop = Some(match stop_reason(reason) {
            StopReason::EndTurn if had_calls => StopReason::ToolUse,
            other => other,
        });
    }
}

impl WireDecoder for OpenAiDecoder {
    fn on_event(&mut self, _event: &str, data: &str) -> Result<Vec<StreamEvent>, LlmError> {
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            let stop = self.stop.take().unwrap_or(StopReason::EndTurn);
            return Ok(vec![StreamEvent::Stop(stop)]);
        }
        if data.is_empty() {
            return Ok(Vec::new());
        }
        let v: Value = serde_json::from_str(data).map_err(|e| {
            LlmError::protocol(&self.backend, format!("a stream chunk is not JSON ({e})"))
        })?;
        self.chunk(&v)
    }

    fn on_eof(&mut self) -> Result<Vec<StreamEvent>, LlmError> {
        // Some servers close without `[DONE]`; a turn that reported its finish is complete.
        match self.stop.take() {
            Some(stop) if !self.done => {
                self.done = true;
                Ok(vec![StreamEvent::Stop(stop)])
            }
            _ if self.done => Ok(Vec::new()),
            _ => Err(LlmError::protocol(
                &self.backend,
                "the stream ended before the model finished its turn",
            )),
        }
    }

    fn on_json(&mut self, body: Value) -> Result<Vec<StreamEvent>, LlmError> {
        if let Some(err) = body.get("error") {
            return Err(api_error(&self.backend, err));
        }
        let choice = body
            .get("choices")
            .and_then(|c| c.get(0))
            .ok_or_else(|| LlmError::protocol(&self.backend, "the answer has no `choices[0]`"))?;
        let message = choice.get("message").cloned().unwrap_or(Value::Null);
        let mut out = Vec::new();
        if let Some(text) = message.get("content").and_then(Value::as_str) {
            if !text.is_empty() {
                out.push(StreamEvent::TextDelta(text.to_string()));
            }
        }
        let calls = message.get("tool_calls").and_then(Value::as_array);
        for (index, call) in calls.into_iter().flatten().enumerate() {
            let mut call = call.clone();
            call["index"] = json!(index);
            self.tool_call_delta(&call, &mut out);
        }
        let reason = choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .unwrap_or("stop");
        self.finish(reason, &mut out);
        if let Some(u) = usage(&body) {
            out.push(StreamEvent::Usage(u));
        }
        self.done = true;
        out.push(StreamEvent::Stop(
            self.stop.take().unwrap_or(StopReason::EndTurn),
        ));
        Ok(out)
    }

    fn is_done(&self) -> bool {
        self.done
    }
}

fn api_error(backend: &str, err: &Value) -> LlmError {
    let message = err
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| err.to_string());
    let kind = err
        .get("type")
        .or_else(|| err.get("code"))
        .and_then(Value::as_str)
        .unwrap_or("an error")
        .to_string();
    LlmError::Api {
        backend: backend.to_string(),
        retryable: kind.contains("overloaded") || kind.contains("server_error"),
        kind,
        message: tackle_protocol::text::truncate_at_char_boundary(&message, 2_000).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(dec: &mut OpenAiDecoder, chunks: &[Value]) -> Vec<StreamEvent> {
        chunks
            .iter()
            .flat_map(|c| dec.on_event("message", &c.to_string()).unwrap())
            .collect()
    }

    fn delta(call: Value) -> Value {
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
    }

    #[test]
    fn calls_without_index_are_told_apart_by_their_ids() {
        let mut dec = OpenAiDecoder::new("b");
        let events = feed(
            &mut dec,
            &[
                delta(json!({"id": "a", "function": {"name": "x", "arguments": "{"}})),
                delta(json!({"function": {"arguments": "}"}})),
                delta(json!({"id": "b", "function": {"name": "y", "arguments": "{}"}})),
                delta(json!({"id": "b", "function": {"arguments": ""}})),
            ],
        );
        let starts: Vec<(usize, &str)> = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::ToolCallStart { index, id, .. } => Some((*index, id.as_str())),
                _ => None,
            })
            .collect();
        assert_eq!(starts, [(0, "a"), (1, "b")]);
        assert!(events.contains(&StreamEvent::ToolCallArgsDelta {
            index: 0,
            delta: "}".into()
        }));
    }

    #[test]
    fn a_stream_closed_after_finish_reason_without_done_still_completes() {
        let mut dec = OpenAiDecoder::new("b");
        feed(
            &mut dec,
            &[json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]})],
        );
        assert_eq!(
            dec.on_eof().unwrap(),
            vec![StreamEvent::Stop(StopReason::MaxTokens)]
        );
    }

    #[test]
    fn a_stop_reason_of_stop_after_tool_calls_means_tool_use() {
        let mut dec = OpenAiDecoder::new("b");
        let events = feed(
            &mut dec,
            &[
                delta(json!({"index": 0, "id": "a", "function": {"name": "x", "arguments": "{}"}})),
                json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
            ],
        );
        assert!(events.contains(&StreamEvent::ToolCallEnd { index: 0 }));
        assert_eq!(
            dec.on_event("message", "[DONE]").unwrap(),
            vec![StreamEvent::Stop(StopReason::ToolUse)]
        );
    }

    #[test]
    fn temperature_is_sent_as_its_short_decimal() {
        assert_eq!(temperature(0.7).to_string(), "0.7");
        assert_eq!(temperature(f32::NAN), Value::Null);
    }

    #[test]
    fn a_missing_call_id_gets_a_stable_placeholder() {
        let mut dec = OpenAiDecoder::new("b");
        let events = feed(
            &mut dec,
            &[delta(
                json!({"index": 3, "function": {"name": "x", "arguments": "{}"}}),
            )],
        );
        assert!(matches!(&events[0], StreamEvent::ToolCallStart { id, .. } if id == "call_3"));
    }
}
