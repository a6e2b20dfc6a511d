//! Putting a streamed turn back together.

use crate::error::LlmError;
use crate::types::{AssembledToolCall, ChatRequest, Completion, StopReason, StreamEvent, Usage};
use crate::Provider;
use futures_util::StreamExt;
use std::collections::BTreeMap;

/// Runs one turn and collects it: the text, the tool calls in index order with their raw
/// argument strings, the usage and the stop reason.
pub async fn complete(provider: &dyn Provider, req: ChatRequest) -> Result<Completion, LlmError> {
    let mut events = provider.stream(req).await?;
    let mut acc = Assembler::default();
    while let Some(event) = events.next().await {
        if let Some(done) = acc.push(event?) {
            return Ok(done);
        }
    }
    Err(LlmError::protocol(
        provider.name(),
        "the stream ended without a stop event",
    ))
}

/// Collects [`StreamEvent`]s into a [`Completion`]; usable by callers that also render the
/// stream as it comes.
#[derive(Debug, Default)]
pub struct Assembler {
    text: String,
    calls: BTreeMap<usize, AssembledToolCall>,
    usage: Usage,
}

impl Assembler {
    /// Takes one event; returns the finished turn on `Stop`.
    pub fn push(&mut self, event: StreamEvent) -> Option<Completion> {
        match event {
            StreamEvent::TextDelta(t) => self.text.push_str(&t),
            StreamEvent::ToolCallStart { index, id, name } => {
                let call = self.call(index);
                call.id = id;
                call.name = name;
            }
            StreamEvent::ToolCallArgsDelta { index, delta } => {
                self.call(index).arguments_raw.push_str(&delta)
            }
            StreamEvent::ToolCallEnd { .. } => {}
            StreamEvent::Usage(u) => self.usage = u,
            StreamEvent::Stop(stop) => return Some(self.finish(stop)),
        }
        None
    }

    fn call(&mut self, index: usize) -> &mut AssembledToolCall {
        self.calls
            .entry(index)
            .or_insert_with(|| AssembledToolCall {
                id: format!("call_{index}"),
                name: String::new(),
                arguments_raw: String::new(),
            })
    }

    fn finish(&mut self, stop: StopReason) -> Completion {
        let tool_calls = std::mem::take(&mut self.calls)
            .into_values()
            .map(|mut c| {
                if c.arguments_raw.trim().is_empty() {
                    c.arguments_raw = "{}".to_string();
                }
                c
            })
            .collect();
        Completion {
            text: std::mem::take(&mut self.text),
            tool_calls,
            usage: self.usage,
            stop,
        }
    }
}
