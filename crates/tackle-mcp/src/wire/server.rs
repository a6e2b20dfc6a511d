//! The server side: Tackle's tools out over MCP, approvals asked back through elicitation.

use crate::server::ToolService;
use async_trait::async_trait;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ElicitRequestParams,
    ElicitationAction, ErrorData, Implementation, InitializeResult, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig,
};
use rmcp::service::{ElicitationMode, Peer, RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ServerHandler, ServiceExt};
use serde_json::{json, Value};
use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;
use tackle_protocol::{
    ApprovalAnswer, ApprovalRequest, ApprovalUnavailable, Approver, ToolCall, ToolError,
    ToolOutput, ToolSpec,
};
use tokio_util::sync::CancellationToken;

/// How long a person has to answer an approval prompt before the call ends as unapproved.
const APPROVAL_TIMEOUT: Duration = Duration::from_secs(300);

#[derive(Clone)]
pub(crate) struct Handler {
    pub service: Arc<dyn ToolService>,
    /// The MCP session this handler serves (one handler per Streamable HTTP session).
    pub session: String,
}

impl Handler {
    pub(crate) fn new(service: Arc<dyn ToolService>, session: &str) -> Self {
        Self {
            service,
            session: session.to_string(),
        }
    }

    /// A handler for a new session: same service, a session name of its own.
    fn for_new_session(&self) -> Self {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Self::new(Arc::clone(&self.service), &format!("{}-{n}", self.session))
    }
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        let caps: ServerCapabilities =
            serde_json::from_value(json!({"tools": {"listChanged": false}})).unwrap_or_default();
        InitializeResult::new(caps)
            .with_server_info(Implementation::new("tackle", env!("CARGO_PKG_VERSION")))
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools: Vec<Value> = self.service.tools().iter().map(spec_to_json).collect();
        serde_json::from_value(json!({ "tools": tools }))
            .map_err(|e| ErrorData::internal_error(format!("tool list: {e}"), None))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let call = ToolCall {
            id: format!(
                "mcp-{}",
                serde_json::to_value(&cx.id).unwrap_or(Value::Null)
            ),
            name: request.name.to_string(),
            arguments: request
                .arguments
                .map(Value::Object)
                .unwrap_or_else(|| json!({})),
        };
        // `cx.ct` fires on the client's `notifications/cancelled` for this request, and when
        // the session or connection ends: the call (its processes included) stops then.
        let approver = Arc::new(ElicitApprover {
            peer: cx.peer.clone(),
            cancel: cx.ct.clone(),
        });
        let outcome = self
            .service
            .call_cancellable(call, approver, &self.session, cx.ct.clone())
            .await;
        let result: CallToolResult = serde_json::from_value(result_json(outcome))
            .map_err(|e| ErrorData::internal_error(format!("tool result: {e}"), None))?;
        Ok(CallToolResponse::Complete(result))
    }
}

fn spec_to_json(spec: &ToolSpec) -> Value {
    json!({
        "name": spec.name,
        "description": spec.description,
        "inputSchema": spec.parameters,
    })
}

/// A result the client shows: failures are `isError` results carrying the why, so the
/// calling model can read it (protocol errors are rendered opaquely by most clients).
pub(crate) fn result_json(outcome: Result<ToolOutput, ToolError>) -> Value {
    match outcome {
        Ok(out) => {
            let mut v = json!({
                "content": [{"type": "text", "text": out.content}],
                "isError": out.is_error,
            });
            if let Some(s @ Value::Object(_)) = out.structured {
                v["structuredContent"] = s;
            }
            v
        }
        Err(e) => json!({
            "content": [{"type": "text", "text": format!("{}: {}", e.kind, e.message)}],
            "isError": true,
        }),
    }
}

/// Asks the MCP client's user through elicitation; says no one can be asked when the client
/// did not declare the capability, or cancelled the call while the question was open.
struct ElicitApprover {
    peer: Peer<RoleServer>,
    /// The call's cancellation: a cancelled call stops waiting for its answer.
    cancel: CancellationToken,
}

#[async_trait]
impl Approver for ElicitApprover {
    fn name(&self) -> &str {
        "mcp-elicitation"
    }

    async fn ask(&self, req: &ApprovalRequest) -> Result<ApprovalAnswer, ApprovalUnavailable> {
        if !self
            .peer
            .supported_elicitation_modes()
            .contains(&ElicitationMode::Form)
        {
            let remedy = if req.remedy.is_empty() {
                String::new()
            } else {
                format!(", or {}", req.remedy)
            };
            return Err(ApprovalUnavailable(format!(
                "`{}` needs approval, and this MCP client cannot be asked (it did not declare \
                 the elicitation capability): use a client that supports elicitation{remedy}",
                req.tool
            )));
        }
        let params: ElicitRequestParams = serde_json::from_value(crate::server::approval_form(req))
            .map_err(|e| ApprovalUnavailable(format!("could not build the approval form: {e}")))?;
        let asked = self
            .peer
            .create_elicitation_with_timeout(params, Some(APPROVAL_TIMEOUT));
        let result = tokio::select! {
            biased;
            () = self.cancel.cancelled() => {
                return Err(ApprovalUnavailable(format!(
                    "the MCP client cancelled the call to `{}` before answering",
                    req.tool
                )));
            }
            result = asked => result,
        }
        .map_err(|e| {
            ApprovalUnavailable(format!("asking the MCP client for approval failed: {e}"))
        })?;
        Ok(match result.action {
            ElicitationAction::Accept => crate::server::answer_from(result.content.as_ref()),
            _ => ApprovalAnswer::Deny,
        })
    }
}

/// Serve over stdin/stdout until the client disconnects.
pub(crate) async fn serve_stdio(handler: Handler) -> Result<(), String> {
    let running = handler
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| e.to_string())?;
    running.waiting().await.map_err(|e| e.to_string())?;
    Ok(())
}

/// The Streamable HTTP endpoint as a tower service, mounted at `/mcp` by the caller.
pub(crate) fn http_service(
    handler: Handler,
    allowed_hosts: Vec<String>,
    cancel: CancellationToken,
) -> StreamableHttpService<Handler, LocalSessionManager> {
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(allowed_hosts)
        .with_cancellation_token(cancel);
    StreamableHttpService::new(
        move || Ok(handler.for_new_session()),
        Arc::new(LocalSessionManager::default()),
        config,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    use tokio::sync::Notify;

    /// `wait` runs until its call is cancelled (and says so); `ask` asks for approval and
    /// keeps the answer; `echo` answers at once.
    struct Waits {
        started: Notify,
        stopped: Notify,
        asked: std::sync::Mutex<Option<Result<ApprovalAnswer, ApprovalUnavailable>>>,
    }

    impl Waits {
        fn new() -> Arc<Self> {
            Arc::new(Self {
                started: Notify::new(),
                stopped: Notify::new(),
                asked: std::sync::Mutex::new(None),
            })
        }
    }

    #[async_trait]
    impl ToolService for Waits {
        fn tools(&self) -> Vec<ToolSpec> {
            vec![
                ToolSpec::new("wait", "Waits to be cancelled", "test"),
                ToolSpec::new("echo", "Answers at once", "test"),
            ]
        }

        async fn call(
            &self,
            call: ToolCall,
            _approver: Arc<dyn Approver>,
            _session: &str,
        ) -> Result<ToolOutput, ToolError> {
            Ok(ToolOutput::text(call.name))
        }

        async fn call_cancellable(
            &self,
            call: ToolCall,
            approver: Arc<dyn Approver>,
            session: &str,
            cancel: CancellationToken,
        ) -> Result<ToolOutput, ToolError> {
            if call.name == "ask" {
                let req = ApprovalRequest {
                    tool: "ask".into(),
                    arguments: json!({}),
                    summary: "ask".into(),
                    grants: Default::default(),
                    why: "`ask` always asks".into(),
                    remedy: String::new(),
                };
                let answer = approver.ask(&req).await;
                *self.asked.lock().unwrap() = Some(answer);
                self.stopped.notify_one();
                return Err(ToolError::failed("asked"));
            }
            if call.name != "wait" {
                return self.call(call, approver, session).await;
            }
            self.started.notify_one();
            cancel.cancelled().await;
            self.stopped.notify_one();
            Err(ToolError::failed("stopped"))
        }
    }

    async fn send(w: &mut Writer, msg: Value) {
        let mut line = msg.to_string();
        line.push('\n');
        w.write_all(line.as_bytes()).await.unwrap();
    }

    async fn next_message(lines: &mut Lines) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
            .await
            .expect("the server answers")
            .unwrap()
            .expect("the server keeps the stream open");
        serde_json::from_str(&line).unwrap()
    }

    type Lines = tokio::io::Lines<BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>;
    type Writer = tokio::io::WriteHalf<tokio::io::DuplexStream>;

    /// A handler for `service` on an in-memory stream, initialised with `capabilities`.
    async fn connect(service: &Arc<Waits>, capabilities: Value) -> (Lines, Writer) {
        let (client, server) = tokio::io::duplex(64 * 1024);
        let handler = Handler::new(Arc::clone(service) as Arc<dyn ToolService>, "test");
        tokio::spawn(async move {
            if let Ok(running) = handler.serve(server).await {
                let _ = running.waiting().await;
            }
        });
        let (r, mut w) = tokio::io::split(client);
        let mut lines = BufReader::new(r).lines();
        send(
            &mut w,
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": capabilities,
                "clientInfo": {"name": "test", "version": "0"}}}),
        )
        .await;
        assert_eq!(next_message(&mut lines).await["id"], 1);
        send(
            &mut w,
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        )
        .await;
        (lines, w)
    }

    #[tokio::test]
    async fn a_client_cancellation_reaches_the_call_and_the_server_keeps_answering() {
        let service = Waits::new();
        let (mut lines, mut w) = connect(&service, json!({})).await;
        send(
            &mut w,
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "wait", "arguments": {}}}),
        )
        .await;
        tokio::time::timeout(Duration::from_secs(10), service.started.notified())
            .await
            .expect("the call started");
        send(
            &mut w,
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"requestId": 2, "reason": "the user pressed stop"}}),
        )
        .await;
        tokio::time::timeout(Duration::from_secs(5), service.stopped.notified())
            .await
            .expect("the call saw the cancellation");
        send(
            &mut w,
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                   "params": {"name": "echo", "arguments": {}}}),
        )
        .await;
        let reply = next_message(&mut lines).await;
        assert_eq!(
            reply["id"], 3,
            "the cancelled request gets no response: {reply}"
        );
        assert_eq!(reply["result"]["content"][0]["text"], "echo", "{reply}");
    }

    #[tokio::test]
    async fn a_call_cancelled_while_its_approval_is_asked_stops_waiting_for_the_answer() {
        let service = Waits::new();
        let (mut lines, mut w) = connect(&service, json!({"elicitation": {"form": {}}})).await;
        send(
            &mut w,
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "ask", "arguments": {}}}),
        )
        .await;
        let question = next_message(&mut lines).await;
        assert_eq!(question["method"], "elicitation/create", "{question}");
        // No answer; the client cancels the call instead.
        send(
            &mut w,
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"requestId": 2}}),
        )
        .await;
        tokio::time::timeout(Duration::from_secs(5), service.stopped.notified())
            .await
            .expect("the approval stopped waiting");
        let asked = service.asked.lock().unwrap().take();
        let Some(Err(ApprovalUnavailable(why))) = asked else {
            panic!("a cancelled question is not an answer: {asked:?}");
        };
        assert!(why.contains("cancelled"), "{why}");
    }

    /// A service that does not take the token itself still stops being waited for.
    #[tokio::test]
    async fn the_default_cancellable_call_stops_waiting_when_cancelled() {
        struct Never;
        #[async_trait]
        impl ToolService for Never {
            fn tools(&self) -> Vec<ToolSpec> {
                Vec::new()
            }
            async fn call(
                &self,
                _call: ToolCall,
                _approver: Arc<dyn Approver>,
                _session: &str,
            ) -> Result<ToolOutput, ToolError> {
                std::future::pending().await
            }
        }
        struct NoOne;
        #[async_trait]
        impl Approver for NoOne {
            fn name(&self) -> &str {
                "no-one"
            }
            async fn ask(
                &self,
                _req: &ApprovalRequest,
            ) -> Result<ApprovalAnswer, ApprovalUnavailable> {
                Err(ApprovalUnavailable("no one".into()))
            }
        }
        let cancel = CancellationToken::new();
        let call = ToolCall {
            id: "1".into(),
            name: "slow".into(),
            arguments: json!({}),
        };
        let pending = Never.call_cancellable(call, Arc::new(NoOne), "s", cancel.clone());
        cancel.cancel();
        let err = tokio::time::timeout(Duration::from_secs(5), pending)
            .await
            .expect("it stops waiting")
            .unwrap_err();
        assert!(err.message.contains("cancelled"), "{}", err.message);
    }
}
