mod common;

use common::*;
use serde_json::{json, Value};
use tackle_llm::{
    complete, AnthropicProvider, AssembledToolCall, ChatRequest, LlmError, Provider, StopReason,
    StreamEvent, ToolDef, Usage,
};
use tackle_protocol::message::Message;
use tackle_protocol::ToolCall;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn provider(server: &MockServer) -> AnthropicProvider {
    AnthropicProvider::new("test-claude", &server.uri(), "sk-ant-test".into())
        .unwrap()
        .with_retry(fast_retry())
}

fn request() -> ChatRequest {
    ChatRequest::new(
        "claude-sonnet-4-5",
        vec![Message::system("Be brief."), Message::user("hi")],
    )
}

async fn mount(server: &MockServer, response: ResponseTemplate) {
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(response)
        .mount(server)
        .await;
}

fn ok_events(events: Vec<Result<StreamEvent, LlmError>>) -> Vec<StreamEvent> {
    events.into_iter().map(Result::unwrap).collect()
}

#[tokio::test]
async fn streamed_text_arrives_as_deltas_with_usage_and_stop() {
    let server = MockServer::start().await;
    mount(&server, sse("anthropic_text.sse")).await;
    let events = ok_events(collect(provider(&server).stream(request()).await.unwrap()).await);
    assert_eq!(
        events,
        vec![
            StreamEvent::TextDelta("Hello".into()),
            StreamEvent::TextDelta(", wörld 👋".into()),
            StreamEvent::Usage(Usage {
                input_tokens: 25,
                output_tokens: 15
            }),
            StreamEvent::Stop(StopReason::EndTurn),
        ]
    );
}

#[tokio::test]
async fn parallel_tool_use_blocks_assemble_into_indexed_calls() {
    let server = MockServer::start().await;
    mount(&server, sse("anthropic_parallel_tools.sse")).await;
    let turn = complete(&provider(&server), request()).await.unwrap();
    assert_eq!(turn.text, "Checking both.");
    assert_eq!(turn.stop, StopReason::ToolUse);
    assert_eq!(
        turn.tool_calls,
        vec![
            AssembledToolCall {
                id: "toolu_time".into(),
                name: "get_time".into(),
                arguments_raw: "{\"tz\": \"UTC\"}".into(),
            },
            AssembledToolCall {
                id: "toolu_read".into(),
                name: "read_file".into(),
                arguments_raw: "{\"path\": \"notes/todo.md\"}".into(),
            },
        ]
    );
    assert_eq!(
        turn.usage,
        Usage {
            input_tokens: 472,
            output_tokens: 89
        }
    );
}

#[tokio::test]
async fn tool_calls_are_numbered_from_zero_across_text_blocks() {
    let server = MockServer::start().await;
    mount(&server, sse("anthropic_parallel_tools.sse")).await;
    let events = ok_events(collect(provider(&server).stream(request()).await.unwrap()).await);
    let starts: Vec<usize> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCallStart { index, .. } => Some(*index),
            _ => None,
        })
        .collect();
    let ends: Vec<usize> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCallEnd { index } => Some(*index),
            _ => None,
        })
        .collect();
    assert_eq!(starts, [0, 1]);
    assert_eq!(ends, [0, 1]);
}

#[tokio::test]
async fn a_non_streamed_message_is_decoded_into_the_same_events() {
    let server = MockServer::start().await;
    mount(&server, json_body("anthropic_nonstream.json")).await;
    let mut req = request();
    req.stream = false;
    let turn = complete(&provider(&server), req).await.unwrap();
    assert_eq!(turn.text, "I'll calculate.");
    assert_eq!(turn.stop, StopReason::ToolUse);
    assert_eq!(turn.tool_calls[0].id, "toolu_calc");
    let args: Value = serde_json::from_str(&turn.tool_calls[0].arguments_raw).unwrap();
    assert_eq!(args, json!({"expression": "2+2"}));
    assert_eq!(
        turn.usage,
        Usage {
            input_tokens: 30,
            output_tokens: 12
        }
    );
}

#[tokio::test]
async fn the_request_has_a_top_level_system_prompt_and_grouped_tool_results() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(header("x-api-key", "sk-ant-test"))
        .and(header("anthropic-version", "2023-06-01"))
        .respond_with(sse("anthropic_text.sse"))
        .expect(1)
        .mount(&server)
        .await;
    let calls = vec![
        ToolCall {
            id: "t1".into(),
            name: "get_time".into(),
            arguments: json!({}),
        },
        ToolCall {
            id: "t2".into(),
            name: "read_file".into(),
            arguments: json!({"path": "a"}),
        },
    ];
    let mut req = request();
    req.messages.push(Message::assistant("Looking.", calls));
    req.messages
        .push(Message::tool_result("t1", "12:00", false));
    req.messages
        .push(Message::tool_result("t2", "no such file", true));
    req.tools.push(ToolDef {
        name: "get_time".into(),
        description: "Current time".into(),
        parameters: json!({"type": "object"}),
    });
    complete(&provider(&server), req).await.unwrap();
    let sent: Value = server.received_requests().await.unwrap()[0]
        .body_json()
        .unwrap();
    assert_eq!(sent["system"], "Be brief.");
    assert_eq!(sent["stream"], json!(true));
    assert!(sent["max_tokens"].as_u64().unwrap() > 0);
    assert_eq!(sent["tools"][0]["input_schema"], json!({"type": "object"}));
    let messages = sent["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3, "{sent}");
    assert_eq!(
        messages[0],
        json!({"role": "user", "content": [{"type": "text", "text": "hi"}]})
    );
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(
        messages[1]["content"][0],
        json!({"type": "text", "text": "Looking."})
    );
    assert_eq!(
        messages[1]["content"][2],
        json!({"type": "tool_use", "id": "t2", "name": "read_file", "input": {"path": "a"}})
    );
    assert_eq!(
        messages[2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "12:00"},
            {"type": "tool_result", "tool_use_id": "t2", "content": "no such file", "is_error": true}
        ]})
    );
}

#[tokio::test]
async fn an_overloaded_error_before_any_content_is_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(sse("anthropic_overloaded.sse"))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    mount(&server, sse("anthropic_text.sse")).await;
    let turn = complete(&provider(&server), request()).await.unwrap();
    assert_eq!(turn.text, "Hello, wörld 👋");
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_529_overloaded_status_is_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(529)
                .set_body_string("{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}"),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    mount(&server, sse("anthropic_text.sse")).await;
    assert!(complete(&provider(&server), request()).await.is_ok());
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_stream_cut_off_after_content_is_an_error_and_never_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(sse("anthropic_cut_off.sse"))
        .expect(1)
        .mount(&server)
        .await;
    let events = collect(provider(&server).stream(request()).await.unwrap()).await;
    assert_eq!(
        events[0].as_ref().unwrap(),
        &StreamEvent::TextDelta("Partial ans".into())
    );
    let err = events.last().unwrap().as_ref().unwrap_err();
    assert!(err.to_string().contains("message_stop"), "{err}");
    server.verify().await;
}

#[tokio::test]
async fn an_error_event_after_content_ends_the_stream_without_retry() {
    let server = MockServer::start().await;
    let mut body = fixture("anthropic_cut_off.sse");
    body.push_str("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n");
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(body, "text/event-stream"))
        .expect(1)
        .mount(&server)
        .await;
    let err = complete(&provider(&server), request()).await.unwrap_err();
    assert!(
        matches!(err, LlmError::Api { ref kind, .. } if kind == "overloaded_error"),
        "{err:?}"
    );
    server.verify().await;
}

#[tokio::test]
async fn a_rejected_key_says_which_backend_and_what_to_set() {
    let server = MockServer::start().await;
    mount(&server, ResponseTemplate::new(401).set_body_string("{\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key\"}}")).await;
    let err = complete(&provider(&server), request()).await.unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("backend `test-claude` rejected the API key"),
        "{msg}"
    );
    assert!(msg.contains("ANTHROPIC_API_KEY"), "{msg}");
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_404_names_the_unknown_model() {
    let server = MockServer::start().await;
    mount(&server, ResponseTemplate::new(404).set_body_string("{\"type\":\"error\",\"error\":{\"type\":\"not_found_error\",\"message\":\"model: claude-9\"}}")).await;
    let mut req = request();
    req.model = "claude-9".into();
    let err = complete(&provider(&server), req).await.unwrap_err();
    assert!(err.to_string().contains("model `claude-9`"), "{err}");
}

#[tokio::test]
async fn events_split_across_tiny_network_reads_decode_the_same() {
    let base = trickle_server(fixture("anthropic_parallel_tools.sse"), 5).await;
    let p = AnthropicProvider::new("trickle", &base, "k".into()).unwrap();
    let turn = complete(&p, request()).await.unwrap();
    assert_eq!(turn.text, "Checking both.");
    assert_eq!(turn.tool_calls[0].arguments_raw, "{\"tz\": \"UTC\"}");
    assert_eq!(
        turn.tool_calls[1].arguments_raw,
        "{\"path\": \"notes/todo.md\"}"
    );
}
