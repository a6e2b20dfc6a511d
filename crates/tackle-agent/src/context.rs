//! What the model sees: the system prompt, the latest summary, and as much recent history as
//! fits the model's window (a token estimate of ~4 bytes per token).

use tackle_protocol::message::{Message, Role};

/// Used when the config does not say how large the model's window is.
pub const DEFAULT_CONTEXT_TOKENS: usize = 128_000;

/// A rough token count: providers tokenise differently; four bytes a token errs on the safe side
/// for English and code.
pub fn estimate_tokens(messages: &[Message]) -> usize {
    messages
        .iter()
        .map(|m| {
            let calls: usize = m
                .tool_calls
                .iter()
                .map(|c| c.name.len() + c.arguments.to_string().len())
                .sum();
            (m.content.len() + calls) / 4 + 4
        })
        .sum()
}

/// Drop the oldest history until it fits `budget` tokens. The system messages at the front
/// stay; the history never starts with tool results whose call was dropped, nor with an
/// assistant message while a user message remains.
pub fn trim_to_window(messages: Vec<Message>, budget: usize) -> Vec<Message> {
    let split = messages
        .iter()
        .take_while(|m| m.role == Role::System)
        .count();
    let mut head = messages;
    let mut tail = head.split_off(split);
    let head_tokens = estimate_tokens(&head);
    while !tail.is_empty() && head_tokens + estimate_tokens(&tail) > budget && tail.len() > 1 {
        tail.remove(0);
        // Providers want history to open with a user message, and a tool result without its
        // call is rejected outright.
        while tail.first().is_some_and(|m| {
            m.role == Role::Tool
                || (m.role == Role::Assistant && tail.iter().any(|x| x.role == Role::User))
        }) {
            tail.remove(0);
        }
    }
    head.extend(tail);
    head
}

#[cfg(test)]
mod tests {
    use super::*;
    use tackle_protocol::ToolCall;

    #[test]
    fn trimming_keeps_system_and_newest_and_never_orphans_tool_results() {
        let call = ToolCall {
            id: "1".into(),
            name: "t".into(),
            arguments: serde_json::json!({}),
        };
        let msgs = vec![
            Message::system("sys"),
            Message::user("a".repeat(4000)),
            Message::assistant("", vec![call]),
            Message::tool_result("1", "r".repeat(400), false),
            Message::user("latest"),
        ];
        let out = trim_to_window(msgs, 200);
        assert_eq!(out[0].role, Role::System);
        assert_eq!(out.last().map(|m| m.content.as_str()), Some("latest"));
        assert!(out.get(1).is_none_or(|m| m.role != Role::Tool));
    }

    #[test]
    fn history_that_fits_is_untouched() {
        let msgs = vec![Message::system("s"), Message::user("hi")];
        assert_eq!(trim_to_window(msgs.clone(), 1000), msgs);
    }
}
