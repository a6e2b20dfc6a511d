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
        let approver = Arc::new(ElicitApprover {
            peer: cx.peer.clone(),
        });
        let outcome = self.service.call(call, approver, &self.session).await;
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
/// did not declare the capability.
struct ElicitApprover {
    peer: Peer<RoleServer>,
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
            return Err(ApprovalUnavailable(format!(
                "`{}` needs approval, and this MCP client cannot be asked (it did not declare \
                 the elicitation capability); list the tool in security.auto_approved_tools \
                 or use a client that supports elicitation",
                req.tool
            )));
        }
        let params: ElicitRequestParams = serde_json::from_value(crate::server::approval_form(req))
            .map_err(|e| ApprovalUnavailable(format!("could not build the approval form: {e}")))?;
        let result = self
            .peer
            .create_elicitation_with_timeout(params, Some(APPROVAL_TIMEOUT))
            .await
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
