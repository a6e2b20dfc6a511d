mod common;

use common::*;
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use tackle_llm::{
    complete, AssembledToolCall, ChatRequest, LlmError, OpenAiProvider, Provider, StopReason,
    StreamEvent, ToolDef, Usage,
};
use tackle_protocol::message::Message;
use tackle_protocol::ToolCall;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn provider(server: &MockServer) -> OpenAiProvider {
    OpenAiProvider::new(
        "test-openai",
        &format!("{}/v1", server.uri()),
        Some("sk-test".into()),
    )
    .unwrap()
    .with_retry(fast_retry())
}

fn request() -> ChatRequest {
    ChatRequest::new(
        "gpt-4o-mini",
        vec![Message::system("Be brief."), Message::user("hi")],
    )
}

async fn mount(server: &MockServer, response: ResponseTemplate) {
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(response)
        .mount(server)
        .await;
}

#[tokio::test]
async fn streamed_text_arrives_as_deltas_then_usage_then_stop() {
    let server = MockServer::start().await;
    mount(&server, sse("openai_text.sse")).await;
    let events: Vec<StreamEvent> = collect(provider(&server).stream(request()).await.unwrap())
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        events,
        vec![
            StreamEvent::TextDelta("Hello".into()),
            StreamEvent::TextDelta(", wörld 👋".into()),
            StreamEvent::Usage(Usage {
                input_tokens: 12,
                output_tokens: 4
            }),
            StreamEvent::Stop(StopReason::EndTurn),
        ]
    );
}

#[tokio::test]
async fn parallel_tool_calls_with_interleaved_argument_deltas_assemble_per_index() {
    let server = MockServer::start().await;
    mount(&server, sse("openai_parallel_tools.sse")).await;
    let turn = complete(&provider(&server), request()).await.unwrap();
    assert_eq!(turn.stop, StopReason::ToolUse);
    assert_eq!(turn.text, "");
    assert_eq!(
        turn.tool_calls,
        vec![
            AssembledToolCall {
                id: "call_time".into(),
                name: "get_time".into(),
                arguments_raw: "{\"tz\": \"UTC\"}".into(),
            },
            AssembledToolCall {
                id: "call_read".into(),
                name: "read_file".into(),
                arguments_raw: "{\"path\": \"notes/todo.md\"}".into(),
            },
        ]
    );
    assert_eq!(
        turn.usage,
        Usage {
            input_tokens: 80,
            output_tokens: 31
        }
    );
}

#[tokio::test]
async fn tool_call_events_start_before_their_deltas_and_end_before_stop() {
    let server = MockServer::start().await;
    mount(&server, sse("openai_parallel_tools.sse")).await;
    let events: Vec<StreamEvent> = collect(provider(&server).stream(request()).await.unwrap())
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let pos = |want: &dyn Fn(&StreamEvent) -> bool| events.iter().position(want).unwrap();
    let start1 = pos(&|e| matches!(e, StreamEvent::ToolCallStart { index: 1, .. }));
    let delta1 = pos(&|e| matches!(e, StreamEvent::ToolCallArgsDelta { index: 1, .. }));
    let end1 = pos(&|e| matches!(e, StreamEvent::ToolCallEnd { index: 1 }));
    let stop = pos(&|e| matches!(e, StreamEvent::Stop(_)));
    assert!(
        start1 < delta1 && delta1 < end1 && end1 < stop,
        "{events:?}"
    );
    assert_eq!(stop, events.len() - 1);
}

#[tokio::test]
async fn a_non_streamed_answer_is_decoded_into_the_same_events() {
    let server = MockServer::start().await;
    mount(&server, json_body("openai_nonstream.json")).await;
    let mut req = request();
    req.stream = false;
    let turn = complete(&provider(&server), req).await.unwrap();
    assert_eq!(turn.stop, StopReason::ToolUse);
    assert_eq!(turn.tool_calls.len(), 2);
    assert_eq!(turn.tool_calls[0].name, "calculate");
    assert_eq!(turn.tool_calls[0].arguments_raw, "{\"expression\":\"2+2\"}");
    assert_eq!(turn.tool_calls[1].id, "call_y");
    assert_eq!(turn.usage.output_tokens, 20);
    let sent: Value = server.received_requests().await.unwrap()[0]
        .body_json()
        .unwrap();
    assert!(sent.get("stream").is_none(), "{sent}");
}

#[tokio::test]
async fn a_server_that_ignores_stream_and_answers_json_still_works() {
    let server = MockServer::start().await;
    mount(&server, json_body("openai_nonstream.json")).await;
    let turn = complete(&provider(&server), request()).await.unwrap();
    assert_eq!(turn.tool_calls.len(), 2);
}

#[tokio::test]
async fn the_request_carries_tools_tool_results_and_usage_option_in_wire_format() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", "Bearer sk-test"))
        .respond_with(sse("openai_text.sse"))
        .expect(1)
        .mount(&server)
        .await;
    let call = ToolCall {
        id: "call_1".into(),
        name: "get_time".into(),
        arguments: json!({"tz": "UTC"}),
    };
    let mut req = request();
    req.messages.push(Message::assistant("", vec![call]));
    req.messages
        .push(Message::tool_result("call_1", "12:00", false));
    req.tools.push(ToolDef {
        name: "get_time".into(),
        description: "Current time".into(),
        parameters: json!({"type": "object"}),
    });
    req.max_tokens = Some(100);
    complete(&provider(&server), req).await.unwrap();
    let sent: Value = server.received_requests().await.unwrap()[0]
        .body_json()
        .unwrap();
    assert_eq!(sent["stream"], json!(true));
    assert_eq!(sent["stream_options"], json!({"include_usage": true}));
    assert_eq!(sent["max_tokens"], json!(100));
    assert_eq!(sent["tools"][0]["type"], "function");
    assert_eq!(sent["tools"][0]["function"]["name"], "get_time");
    assert_eq!(
        sent["messages"][0],
        json!({"role": "system", "content": "Be brief."})
    );
    let assistant = &sent["messages"][2];
    assert_eq!(assistant["content"], Value::Null);
    assert_eq!(
        assistant["tool_calls"][0]["function"]["arguments"],
        "{\"tz\":\"UTC\"}"
    );
    assert_eq!(
        sent["messages"][3],
        json!({"role": "tool", "tool_call_id": "call_1", "content": "12:00"})
    );
}

#[tokio::test]
async fn malformed_arguments_kept_as_a_string_are_echoed_back_unchanged() {
    let server = MockServer::start().await;
    mount(&server, sse("openai_text.sse")).await;
    let call = ToolCall {
        id: "c".into(),
        name: "x".into(),
        arguments: json!("{\"a\": tru"),
    };
    let mut req = request();
    req.messages.push(Message::assistant("", vec![call]));
    complete(&provider(&server), req).await.unwrap();
    let sent: Value = server.received_requests().await.unwrap()[0]
        .body_json()
        .unwrap();
    assert_eq!(
        sent["messages"][2]["tool_calls"][0]["function"]["arguments"],
        "{\"a\": tru"
    );
}

#[tokio::test]
async fn a_rejected_key_says_which_backend_and_what_to_set() {
    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(401)
            .set_body_string("{\"error\":{\"message\":\"Incorrect API key provided\"}}"),
    )
    .await;
    let err = complete(&provider(&server), request()).await.unwrap_err();
    assert!(matches!(err, LlmError::Auth { status: 401, .. }), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains("backend `test-openai` rejected the API key"),
        "{msg}"
    );
    assert!(
        msg.contains("OPENAI_API_KEY") && msg.contains("Incorrect API key"),
        "{msg}"
    );
    assert_eq!(
        server.received_requests().await.unwrap().len(),
        1,
        "auth errors are not retried"
    );
}

#[tokio::test]
async fn a_404_names_the_unknown_model() {
    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(404).set_body_string("The model `gpt-9` does not exist"),
    )
    .await;
    let mut req = request();
    req.model = "gpt-9".into();
    let err = complete(&provider(&server), req).await.unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(err, LlmError::UnknownModel { ref model, .. } if model == "gpt-9"),
        "{msg}"
    );
    assert!(msg.contains("model `gpt-9`"), "{msg}");
}

#[tokio::test]
async fn other_statuses_include_a_truncated_char_safe_body() {
    let server = MockServer::start().await;
    let body = format!("bad request: {}", "é".repeat(5_000));
    mount(&server, ResponseTemplate::new(400).set_body_string(body)).await;
    let err = complete(&provider(&server), request()).await.unwrap_err();
    match &err {
        LlmError::Status {
            status: 400, body, ..
        } => {
            assert!(body.starts_with("bad request: é"));
            assert!(body.len() <= 2_000);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        server.received_requests().await.unwrap().len(),
        1,
        "400 is not retried"
    );
}

#[tokio::test]
async fn a_429_with_retry_after_is_waited_out_then_succeeds() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "1")
                .set_body_string("slow down"),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    mount(&server, sse("openai_text.sse")).await;
    let started = Instant::now();
    let turn = complete(&provider(&server), request()).await.unwrap();
    assert_eq!(turn.text, "Hello, wörld 👋");
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "Retry-After was not honoured"
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_500_is_retried_then_succeeds() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500).set_body_string("oops"))
        .up_to_n_times(2)
        .with_priority(1)
        .mount(&server)
        .await;
    mount(&server, sse("openai_text.sse")).await;
    let turn = complete(&provider(&server), request()).await.unwrap();
    assert_eq!(turn.stop, StopReason::EndTurn);
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
}

#[tokio::test]
async fn retries_stop_after_max_attempts_with_the_last_error() {
    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(503).set_body_string("unavailable"),
    )
    .await;
    let err = complete(&provider(&server), request()).await.unwrap_err();
    assert!(
        err.to_string().contains("HTTP 503") && err.to_string().contains("unavailable"),
        "{err}"
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 4);
}

#[tokio::test]
async fn a_stream_cut_off_after_content_is_an_error_and_never_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(sse("openai_cut_off.sse"))
        .expect(1)
        .mount(&server)
        .await;
    let events = collect(provider(&server).stream(request()).await.unwrap()).await;
    assert_eq!(
        events[0].as_ref().unwrap(),
        &StreamEvent::TextDelta("Partial ans".into())
    );
    let err = events.last().unwrap().as_ref().unwrap_err();
    assert!(
        err.to_string().contains("ended before the model finished"),
        "{err}"
    );
    server.verify().await;
}

#[tokio::test]
async fn an_unreachable_server_is_named_in_the_error() {
    let base = closed_port_url();
    let p = OpenAiProvider::new("local", &format!("{base}/v1"), None)
        .unwrap()
        .with_retry(tackle_llm::RetryPolicy::none());
    let err = complete(&p, request()).await.unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, LlmError::Connect { .. }), "{msg}");
    assert!(msg.contains(&base) && msg.contains("local"), "{msg}");
}

#[tokio::test]
async fn connection_failures_are_retried_up_to_the_limit() {
    let base = closed_port_url();
    let p = OpenAiProvider::new("local", &format!("{base}/v1"), None)
        .unwrap()
        .with_retry(fast_retry());
    let started = Instant::now();
    let err = complete(&p, request()).await.unwrap_err();
    assert!(matches!(err, LlmError::Connect { .. }));
    // Three waits of at least 5, 10 and 20 ms (half of each backoff step).
    assert!(started.elapsed() >= Duration::from_millis(35));
}

#[tokio::test]
async fn an_error_object_inside_the_stream_is_reported() {
    let server = MockServer::start().await;
    let body = "data: {\"error\":{\"message\":\"context too long\",\"type\":\"invalid_request_error\"}}\n\n";
    mount(
        &server,
        ResponseTemplate::new(200).set_body_raw(body, "text/event-stream"),
    )
    .await;
    let err = complete(&provider(&server), request()).await.unwrap_err();
    assert!(err.to_string().contains("context too long"), "{err}");
}

#[tokio::test]
async fn garbage_in_the_stream_is_a_protocol_error_not_a_panic() {
    let server = MockServer::start().await;
    let body = "data: {not json\n\ndata: \u{0}\u{1}\n\n";
    mount(
        &server,
        ResponseTemplate::new(200).set_body_raw(body, "text/event-stream"),
    )
    .await;
    let err = complete(&provider(&server), request()).await.unwrap_err();
    assert!(matches!(err, LlmError::Protocol { .. }), "{err:?}");
}

#[tokio::test]
async fn events_split_across_tiny_network_reads_decode_the_same() {
    let base = trickle_server(fixture("openai_parallel_tools.sse"), 7).await;
    let p = OpenAiProvider::new("trickle", &format!("{base}/v1"), None).unwrap();
    let turn = complete(&p, request()).await.unwrap();
    assert_eq!(turn.tool_calls.len(), 2);
    assert_eq!(
        turn.tool_calls[1].arguments_raw,
        "{\"path\": \"notes/todo.md\"}"
    );
    let base = trickle_server(fixture("openai_text.sse"), 3).await;
    let p = OpenAiProvider::new("trickle", &format!("{base}/v1"), None).unwrap();
    assert_eq!(
        complete(&p, request()).await.unwrap().text,
        "Hello, wörld 👋"
    );
}

#[tokio::test]
async fn a_localhost_api_base_is_resolved_and_reached() {
    let server = MockServer::start().await;
    mount(&server, sse("openai_text.sse")).await;
    let port = server.address().port();
    let p = OpenAiProvider::new("lh", &format!("http://localhost:{port}/v1"), None).unwrap();
    assert_eq!(
        complete(&p, request()).await.unwrap().stop,
        StopReason::EndTurn
    );
}

#[tokio::test]
async fn a_redirect_is_not_followed() {
    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(307)
            .insert_header("location", "http://169.254.169.254/latest/meta-data"),
    )
    .await;
    let err = complete(&provider(&server), request()).await.unwrap_err();
    assert!(
        matches!(err, LlmError::Status { status: 307, .. }),
        "{err:?}"
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn retry_after_ms_is_honoured() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after-ms", "300"))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    mount(&server, sse("openai_text.sse")).await;
    let started = Instant::now();
    complete(&provider(&server), request()).await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(300));
}
