//! An instant model server for the load test: OpenAI Chat Completions, whole JSON answers,
//! computed from the conversation it is sent so that each answer can be checked.
//!
//! A client's message is `nonce=N turn=T` and optionally `calc=EXPR` (call `calculate`) or
//! `shell=CMD` (call `shell`, which asks for approval). The answer is
//! `nonce=N turn=T seen=S foreign=F`, where S counts the user messages of the conversation
//! that carry this nonce (T when the session holds exactly this client's turns) and F those
//! that carry another (0 unless sessions were mixed); after a tool call, ` result=` and the
//! tool's result follow.

use axum::http::StatusCode;
use axum::routing::post;
use axum::Json;
use serde_json::{json, Value};
use std::thread::JoinHandle;
use tokio::sync::oneshot;

pub struct InstantModel {
    pub port: u16,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl InstantModel {
    pub fn start() -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind the model");
        let port = listener.local_addr().expect("model address").port();
        listener.set_nonblocking(true).expect("nonblocking");
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .expect("model runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("model listener");
                let app = axum::Router::new().route("/v1/chat/completions", post(complete));
                let _ = axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = stopped.await;
                    })
                    .await;
            });
        });
        Self {
            port,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// The `backends:` entry for this server, as `instant` with model `instant-model`.
    pub fn backend_yaml(&self) -> String {
        format!(
            "backends:\n  - name: instant\n    type: openai\n    api_base: http://127.0.0.1:{}/v1\n    api_key: test-key-not-secret\n    stream: false\n    models:\n      - name: instant-model\n",
            self.port
        )
    }
}

impl Drop for InstantModel {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn complete(Json(req): Json<Value>) -> (StatusCode, Json<Value>) {
    match unanswered_call(&req) {
        // As OpenAI answers a conversation whose tool call has no result.
        Some(id) => (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": {
                "message": format!("an assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'; missing: {id}"),
                "type": "invalid_request_error"}})),
        ),
        None => (StatusCode::OK, Json(reply(&req))),
    }
}

/// The id of a tool call in the conversation that no `tool` message right after it answers.
fn unanswered_call(req: &Value) -> Option<String> {
    let messages = req["messages"].as_array()?;
    for (i, m) in messages.iter().enumerate() {
        for call in m["tool_calls"].as_array().into_iter().flatten() {
            let id = call["id"].as_str().unwrap_or_default();
            let answered = messages[i + 1..]
                .iter()
                .take_while(|n| n["role"] == "tool")
                .any(|n| n["tool_call_id"] == id);
            if !answered {
                return Some(id.to_string());
            }
        }
    }
    None
}

/// `key=value` from a message (values hold no spaces).
pub fn field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.split_whitespace()
        .find_map(|w| w.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
}

fn content(m: &Value) -> &str {
    m["content"].as_str().unwrap_or_default()
}

/// The answer to one Chat Completions request.
pub fn reply(req: &Value) -> Value {
    let messages = req["messages"].as_array().cloned().unwrap_or_default();
    let users: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] == "user")
        .map(content)
        .collect();
    let Some(last_user) = users.last() else {
        return text("no user message");
    };
    let (Some(nonce), Some(turn)) = (field(last_user, "nonce"), field(last_user, "turn")) else {
        return text("no nonce=… turn=… in the last user message");
    };
    let seen = users
        .iter()
        .filter(|u| field(u, "nonce") == Some(nonce))
        .count();
    let foreign = users
        .iter()
        .filter(|u| field(u, "nonce").is_some_and(|n| n != nonce))
        .count();
    let head = format!("nonce={nonce} turn={turn} seen={seen} foreign={foreign}");
    let last = messages.last().cloned().unwrap_or_default();
    if last["role"] == "tool" {
        return text(&format!("{head} result={}", content(&last)));
    }
    let id = format!("call-{nonce}-{turn}");
    if let Some(expr) = field(last_user, "calc") {
        return call(&id, "calculate", json!({ "expression": expr }));
    }
    if let Some(cmd) = field(last_user, "shell") {
        return call(&id, "shell", json!({ "command": cmd }));
    }
    text(&head)
}

fn text(answer: &str) -> Value {
    completion(json!({"role": "assistant", "content": answer}), "stop")
}

fn call(id: &str, name: &str, arguments: Value) -> Value {
    completion(
        json!({"role": "assistant", "content": null, "tool_calls": [{
            "id": id, "type": "function",
            "function": {"name": name, "arguments": arguments.to_string()}}]}),
        "tool_calls",
    )
}

fn completion(message: Value, finish: &str) -> Value {
    json!({
        "id": "instant", "object": "chat.completion", "created": 0, "model": "instant-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    })
}
