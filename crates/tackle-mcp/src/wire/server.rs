//! The server side: Tackle's tools out over MCP, approvals asked back through elicitation,
//! the server's own events as `notifications/message`, progress as `notifications/progress`.

use crate::events::{self, Level, SessionLevel};
use crate::listing;
use crate::server::ToolService;
use async_trait::async_trait;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelledNotification,
    CancelledNotificationParam, ClientResult, CustomRequest, CustomResult, ElicitRequest,
    ElicitRequestParams, ElicitResult, ElicitationAction, ErrorCode, ErrorData, Implementation,
    InitializeResult, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ProgressToken, ProtocolVersion, RequestId, ServerCapabilities, ServerConfig,
    ServerNotification, ServerRequest,
};
use rmcp::service::{
    ElicitationMode, NotificationContext, Peer, PeerRequestOptions, RequestContext, RoleServer,
};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ServerHandler, ServiceExt};
use serde_json::{json, Value};
use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tackle_protocol::{
    ApprovalAnswer, ApprovalRequest, ApprovalUnavailable, Approver, FormAsker, FormReply,
    FormUnavailable, ToolCall, ToolError, ToolOutput, ToolSpec,
};
use tokio::sync::watch;
use tokio_util::sync::{CancellationToken, DropGuard};

/// How long a person has to answer an approval prompt before the call ends as unapproved.
const APPROVAL_TIMEOUT: Duration = Duration::from_secs(300);

/// How long one notification may take to be handed to the transport. Notifications are
/// best effort: a client that stops reading its stream must not hold up the call.
const NOTIFY_TIMEOUT: Duration = Duration::from_secs(2);

#[derive(Clone)]
pub(crate) struct Handler {
    pub service: Arc<dyn ToolService>,
    /// The MCP session this handler serves (one handler per Streamable HTTP session).
    pub session: String,
    /// The session's `logging/setLevel`.
    level: Arc<SessionLevel>,
    /// Fires when the session ends: stops its `tools/list_changed` announcer.
    ended: Arc<SessionEnd>,
}

/// A token cancelled when the last clone of a session's handler is dropped, which the SDK
/// does when the session ends (the client disconnected, deleted or timed out the session).
struct SessionEnd {
    token: CancellationToken,
    _guard: DropGuard,
}

impl SessionEnd {
    fn new() -> Self {
        let token = CancellationToken::new();
        Self {
            _guard: token.clone().drop_guard(),
            token,
        }
    }
}

impl Handler {
    pub(crate) fn new(service: Arc<dyn ToolService>, session: &str) -> Self {
        Self {
            service,
            session: session.to_string(),
            level: Arc::default(),
            ended: Arc::new(SessionEnd::new()),
        }
    }

    /// A handler for a new session: same service, a session name (and log level) of its own.
    fn for_new_session(&self) -> Self {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Self::new(Arc::clone(&self.service), &format!("{}-{n}", self.session))
    }

    /// A `tools/call` whose parameters are not a call (`name` not a string, `arguments` not an
    /// object): invalid params, and on record as a refused call, as every other refusal is.
    async fn malformed_call(&self, params: Option<Value>) -> ErrorData {
        let params = params.unwrap_or(Value::Null);
        let name = params.get("name").and_then(Value::as_str);
        let arguments = params.get("arguments").cloned().unwrap_or(Value::Null);
        let why = match (name, &arguments) {
            (None, _) => "`tools/call` needs `name`, the tool's name as a string".to_string(),
            (Some(_), Value::Object(_) | Value::Null) => {
                "the parameters of `tools/call` are not valid".to_string()
            }
            (Some(_), _) => "`arguments` must be an object of the tool's arguments".to_string(),
        };
        let call = ToolCall {
            id: "mcp-malformed".to_string(),
            name: name.unwrap_or_default().to_string(),
            arguments,
        };
        let error = self
            .service
            .refused(call, &self.session, ToolError::invalid_arguments(why))
            .await;
        ErrorData::invalid_params(error.message, None)
    }

    /// Sends `data` as a `notifications/message` at `level` when the session's level lets it.
    async fn log(&self, peer: &Peer<RoleServer>, (level, data): (Level, Value)) {
        if self.level.allows(level) {
            send_log(peer, level, data).await;
        }
    }
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        let list_changed = self.service.tool_changes().is_some();
        let caps: ServerCapabilities = serde_json::from_value(json!({
            "tools": {"listChanged": list_changed},
            "logging": {},
        }))
        .unwrap_or_default();
        InitializeResult::new(caps)
            .with_server_info(Implementation::new("tackle", env!("CARGO_PKG_VERSION")))
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25))
    }

    // MCP logging is deprecated from the 2026-07-28 revision on (SEP-2577), and so are the SDK
    // types that carry it; this server speaks 2025-11-25, where it is the logging there is.
    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let name = serde_json::to_value(request.level).unwrap_or(Value::Null);
        let level = name
            .as_str()
            .and_then(Level::parse)
            .ok_or_else(|| ErrorData::invalid_params(format!("unknown level {name}"), None))?;
        self.level.set(level);
        Ok(())
    }

    /// A `logging/setLevel` the SDK could not read (a level that does not exist) arrives here:
    /// it is invalid params, not an unknown method.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _cx: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        if request.method == "logging/setLevel" {
            let level = request
                .params
                .as_ref()
                .and_then(|p| p.get("level"))
                .map(|l| tackle_protocol::text::preview(&l.to_string(), 40))
                .unwrap_or_else(|| "(none)".into());
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown logging level {level}: one of debug, info, notice, warning, error, \
                     critical, alert, emergency"
                ),
                None,
            ));
        }
        if request.method == "tools/call" {
            // The SDK could not read these parameters as a tool call.
            return Err(self.malformed_call(request.params).await);
        }
        Err(ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            request.method,
            None,
        ))
    }

    async fn on_initialized(&self, cx: NotificationContext<RoleServer>) {
        if let Some(changes) = self.service.tool_changes() {
            tokio::spawn(announce_tool_changes(
                changes,
                cx.peer,
                self.ended.token.clone(),
            ));
        }
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let specs = self.service.tools();
        let cursor = request.as_ref().and_then(|r| r.cursor.as_deref());
        let (page, next) = listing::page(&specs, cursor, listing::PAGE_SIZE)
            .map_err(|e| ErrorData::invalid_params(e.to_string(), None))?;
        let tools: Vec<Value> = page
            .iter()
            .map(|s| spec_to_json(s, self.service.passes_through(s)))
            .collect();
        let mut list = json!({ "tools": tools });
        if let Some(next) = next {
            list["nextCursor"] = Value::String(next);
        }
        serde_json::from_value(list)
            .map_err(|e| ErrorData::internal_error(format!("tool list: {e}"), None))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let tool = request.name.to_string();
        let call = ToolCall {
            id: format!(
                "mcp-{}",
                serde_json::to_value(&cx.id).unwrap_or(Value::Null)
            ),
            name: tool.clone(),
            arguments: request
                .arguments
                .map(Value::Object)
                .unwrap_or_else(|| json!({})),
        };
        self.log(&cx.peer, events::call_started(&tool)).await;
        let progress = match cx.meta.get_progress_token() {
            Some(token) => Some(Progress::start(cx.peer.clone(), token, &tool).await),
            None => None,
        };
        // `cx.ct` fires on the client's `notifications/cancelled` for this request, and when
        // the session or connection ends: the call (its processes included) stops then.
        let approver = Arc::new(ElicitApprover {
            peer: cx.peer.clone(),
            cancel: cx.ct.clone(),
            stdio: self.session == "stdio",
        });
        let started = Instant::now();
        let lines = progress.as_ref().map(Progress::lines);
        let outcome = self
            .service
            .call_cancellable(call, approver, &self.session, cx.ct.clone(), lines)
            .await;
        let elapsed = started.elapsed();
        self.log(&cx.peer, events::call_ended(&tool, &outcome, elapsed))
            .await;
        if let Some(progress) = progress {
            // A cancelled request's token is the client's no more: nothing more is said on it.
            let ok = matches!(&outcome, Ok(out) if !out.is_error);
            progress.finish(!cx.ct.is_cancelled(), ok, elapsed).await;
        }
        let result: CallToolResult = serde_json::from_value(result_json(outcome))
            .map_err(|e| ErrorData::internal_error(format!("tool result: {e}"), None))?;
        Ok(CallToolResponse::Complete(result))
    }
}

/// `notifications/tools/list_changed` to one session's client each time `changes` moves,
/// until the session ends or the service stops announcing.
async fn announce_tool_changes(
    mut changes: watch::Receiver<u64>,
    peer: Peer<RoleServer>,
    ended: CancellationToken,
) {
    // Only changes from now on: the client has just been able to list what there is.
    changes.borrow_and_update();
    loop {
        tokio::select! {
            biased;
            () = ended.cancelled() => return,
            changed = changes.changed() => {
                if changed.is_err() {
                    return;
                }
            }
        }
        let sent = tokio::time::timeout(NOTIFY_TIMEOUT, peer.notify_tool_list_changed()).await;
        if let Ok(Err(_)) = sent {
            return; // the transport is closed
        }
    }
}

/// A `notifications/message` from the server itself.
fn log_notification(level: Level, data: Value) -> Option<ServerNotification> {
    serde_json::from_value(json!({
        "method": "notifications/message",
        "params": {"level": level.as_str(), "logger": events::LOGGER, "data": data},
    }))
    .ok()
}

async fn send_log(peer: &Peer<RoleServer>, level: Level, data: Value) {
    if let Some(note) = log_notification(level, data) {
        let _ = tokio::time::timeout(NOTIFY_TIMEOUT, peer.send_notification(note)).await;
    }
}

async fn send_progress(peer: &Peer<RoleServer>, param: ProgressNotificationParam) {
    let _ = tokio::time::timeout(NOTIFY_TIMEOUT, peer.notify_progress(param)).await;
}

/// The progress notifications of one call that carries a progress token: a start, a
/// heartbeat every [`events::HEARTBEAT`] while it runs, an end.
struct Progress {
    peer: Peer<RoleServer>,
    token: ProgressToken,
    tool: String,
    stop: CancellationToken,
    heartbeats: tokio::task::JoinHandle<u32>,
    lines: Arc<LineFeed>,
}

/// The call's output lines, coalesced: the heartbeat task sends the latest one at most every
/// [`events::LINE_EVERY`], so a chatty command cannot flood the client.
struct LineFeed {
    latest: watch::Sender<Option<String>>,
}

impl tackle_protocol::ProgressSink for LineFeed {
    fn line(&self, text: &str) {
        let line = tackle_protocol::text::preview(text.trim_end(), events::LINE_CHARS);
        if !line.is_empty() {
            self.latest.send_replace(Some(line));
        }
    }
}

impl Progress {
    async fn start(peer: Peer<RoleServer>, token: ProgressToken, tool: &str) -> Self {
        let (progress, message) = events::progress_started(tool);
        send_progress(
            &peer,
            ProgressNotificationParam::new(token.clone(), progress).with_message(message),
        )
        .await;
        let stop = CancellationToken::new();
        let (latest, lines) = watch::channel(None);
        let heartbeats = tokio::spawn(heartbeats(
            peer.clone(),
            token.clone(),
            tool.to_string(),
            stop.clone(),
            lines,
        ));
        Self {
            peer,
            token,
            tool: tool.to_string(),
            stop,
            heartbeats,
            lines: Arc::new(LineFeed { latest }),
        }
    }

    /// Where the tool's output lines go.
    fn lines(&self) -> Arc<dyn tackle_protocol::ProgressSink> {
        self.lines.clone()
    }

    /// Stops the heartbeats and, when `say` (the request was not cancelled), sends the end.
    async fn finish(self, say: bool, ok: bool, elapsed: Duration) {
        self.stop.cancel();
        // The last heartbeat is sent (or given up on) before the end goes out, so the end is
        // the highest value the client sees.
        let Ok(beats) = self.heartbeats.await else {
            return;
        };
        if say {
            let (progress, total, message) =
                events::progress_finished(&self.tool, beats, ok, elapsed);
            send_progress(
                &self.peer,
                ProgressNotificationParam::new(self.token, progress)
                    .with_total(total)
                    .with_message(message),
            )
            .await;
        }
    }
}

/// Heartbeats until `stop`, and the latest output line whenever one came (at most one per
/// [`events::LINE_EVERY`]); returns how many notifications were sent.
async fn heartbeats(
    peer: Peer<RoleServer>,
    token: ProgressToken,
    tool: String,
    stop: CancellationToken,
    mut lines: watch::Receiver<Option<String>>,
) -> u32 {
    let started = Instant::now();
    let mut ticks = tokio::time::interval_at(
        tokio::time::Instant::now() + events::HEARTBEAT,
        events::HEARTBEAT,
    );
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut beats: u32 = 0;
    let mut lines_open = true;
    let mut last_line: Option<Instant> = None;
    loop {
        let line = tokio::select! {
            biased;
            () = stop.cancelled() => return beats,
            _ = ticks.tick() => None,
            changed = lines.changed(), if lines_open => {
                if changed.is_err() {
                    lines_open = false;
                    continue;
                }
                let wait = last_line
                    .map(|t| events::LINE_EVERY.saturating_sub(t.elapsed()))
                    .unwrap_or_default();
                if !wait.is_zero() {
                    tokio::select! {
                        biased;
                        () = stop.cancelled() => return beats,
                        () = tokio::time::sleep(wait) => {}
                    }
                }
                match lines.borrow_and_update().clone() {
                    Some(line) => Some(line),
                    None => continue,
                }
            }
        };
        beats = beats.saturating_add(1);
        let (progress, message) = match line {
            Some(line) => {
                last_line = Some(Instant::now());
                // A line says the call is alive: the next heartbeat can wait.
                ticks.reset();
                events::progress_line(&tool, beats, &line)
            }
            None => events::progress_running(&tool, beats, started.elapsed()),
        };
        send_progress(
            &peer,
            ProgressNotificationParam::new(token.clone(), progress).with_message(message),
        )
        .await;
    }
}

/// The MCP tool object: name, title, description, schema and annotations.
fn spec_to_json(spec: &ToolSpec, passes_through: bool) -> Value {
    json!({
        "name": spec.name,
        "title": listing::title(spec, passes_through),
        "description": spec.description,
        "inputSchema": spec.parameters,
        "annotations": listing::annotations(spec, passes_through),
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
/// did not declare the capability, or cancelled the call while the question was open. It also
/// passes on the forms of the servers Tackle itself is a client of, during this call.
#[derive(Clone)]
struct ElicitApprover {
    peer: Peer<RoleServer>,
    /// The call's cancellation: a cancelled call stops waiting for its answer.
    cancel: CancellationToken,
    /// Served over stdio: one session, as long as the server runs (over HTTP, one per client
    /// session), which is how long a `session` answer lasts.
    stdio: bool,
}

#[async_trait]
impl Approver for ElicitApprover {
    fn name(&self) -> &str {
        "mcp-elicitation"
    }

    fn forms(&self) -> Option<Arc<dyn FormAsker>> {
        self.can_elicit()
            .then(|| Arc::new(self.clone()) as Arc<dyn FormAsker>)
    }

    async fn ask(&self, req: &ApprovalRequest) -> Result<ApprovalAnswer, ApprovalUnavailable> {
        if !self.can_elicit() {
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
        let params: ElicitRequestParams =
            serde_json::from_value(crate::server::approval_form(req, self.stdio)).map_err(|e| {
                ApprovalUnavailable(format!("could not build the approval form: {e}"))
            })?;
        let result = self.elicit(params).await.map_err(|e| match e {
            Unanswered::Cancelled => ApprovalUnavailable(format!(
                "the MCP client cancelled the call to `{}` before answering",
                req.tool
            )),
            Unanswered::Failed(e) => {
                ApprovalUnavailable(format!("asking the MCP client for approval failed: {e}"))
            }
        })?;
        Ok(match result.action {
            ElicitationAction::Accept => crate::server::answer_from(result.content.as_ref()),
            _ => ApprovalAnswer::Deny,
        })
    }
}

/// Why an elicitation came back without an answer.
enum Unanswered {
    /// The call was cancelled while the question was open.
    Cancelled,
    Failed(String),
}

impl ElicitApprover {
    fn can_elicit(&self) -> bool {
        self.peer
            .supported_elicitation_modes()
            .contains(&ElicitationMode::Form)
    }

    /// Ask the client, giving up when the call is cancelled. Given up on (the call cancelled,
    /// or this ask dropped because the question was answered elsewhere), the request is
    /// cancelled at the client too, so its form does not stay open for nothing.
    async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, Unanswered> {
        let failed = |e: rmcp::ServiceError| Unanswered::Failed(e.to_string());
        let request = ServerRequest::ElicitRequest(ElicitRequest::new(params));
        let handle = self
            .peer
            .send_request_with_option(request, PeerRequestOptions::with_timeout(APPROVAL_TIMEOUT))
            .await
            .map_err(failed)?;
        let mut open = OpenRequest {
            peer: self.peer.clone(),
            id: Some(handle.id.clone()),
        };
        let result = tokio::select! {
            biased;
            () = self.cancel.cancelled() => return Err(Unanswered::Cancelled),
            result = handle.await_response() => result,
        };
        // Answered, failed or timed out (the SDK cancels a timed-out request itself).
        open.id = None;
        match result.map_err(failed)? {
            ClientResult::ElicitResult(result) => Ok(result),
            _ => Err(Unanswered::Failed(
                "the client's answer is not an elicitation result".into(),
            )),
        }
    }
}

/// A request to the client still waiting for its answer; dropped so, it is cancelled.
struct OpenRequest {
    peer: Peer<RoleServer>,
    id: Option<RequestId>,
}

impl Drop for OpenRequest {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let peer = self.peer.clone();
        runtime.spawn(async move {
            let params = CancelledNotificationParam::new(
                Some(id),
                Some("the question was answered elsewhere or is no longer needed".into()),
            );
            let note =
                ServerNotification::CancelledNotification(CancelledNotification::new(params));
            let _ = tokio::time::timeout(NOTIFY_TIMEOUT, peer.send_notification(note)).await;
        });
    }
}

#[async_trait]
impl FormAsker for ElicitApprover {
    /// The form goes to this call's client as it came, its message saying who asks: a server
    /// Tackle uses, not Tackle.
    async fn ask_form(
        &self,
        from: &str,
        message: &str,
        schema: &Value,
    ) -> Result<FormReply, FormUnavailable> {
        let params = json!({
            "mode": "form",
            "message": format!("MCP server `{from}` (used by Tackle) asks: {message}"),
            "requestedSchema": schema,
        });
        let params: ElicitRequestParams = serde_json::from_value(params)
            .map_err(|e| FormUnavailable(format!("the form cannot be passed on: {e}")))?;
        let result = self.elicit(params).await.map_err(|e| match e {
            Unanswered::Cancelled => FormUnavailable("the MCP client cancelled the call".into()),
            Unanswered::Failed(e) => FormUnavailable(format!("asking the MCP client failed: {e}")),
        })?;
        Ok(match result.action {
            ElicitationAction::Accept => match result.content {
                Some(Value::Object(map)) => FormReply::Accept(map),
                Some(_) => {
                    return Err(FormUnavailable(
                        "the client's answer is not an object".into(),
                    ))
                }
                None => FormReply::Accept(serde_json::Map::new()),
            },
            ElicitationAction::Decline => FormReply::Decline,
            _ => FormReply::Cancel,
        })
    }
}

/// Why serving over stdin/stdout stopped with an error.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StdioError {
    /// The client's `initialize` exchange failed (or stdin closed before it).
    #[error(transparent)]
    Initialize(Box<rmcp::service::ServerInitializeError>),
    /// The task serving the session panicked or was cancelled.
    #[error(transparent)]
    Session(#[from] tokio::task::JoinError),
}

/// Serve over stdin/stdout until the client disconnects. When both are pipes (as MCP clients
/// launch servers) they are driven by the IO reactor instead of tokio's blocking pool, which
/// saves a thread hand-off per message each way; anything else falls back to blocking stdio.
/// Input that is no JSON-RPC message is answered with an error rather than dropped.
pub(crate) async fn serve_stdio(handler: Handler) -> Result<(), StdioError> {
    let (read, write) = rmcp::transport::stdio_pipes();
    let running = handler
        .serve(super::stdio::CheckedStdio::new(read, write))
        .await
        .map_err(|e| StdioError::Initialize(Box::new(e)))?;
    running.waiting().await?;
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
            _progress: Option<Arc<dyn tackle_protocol::ProgressSink>>,
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
        let (lines, w, _) =
            connect_to(Arc::clone(service) as Arc<dyn ToolService>, capabilities).await;
        (lines, w)
    }

    /// [`connect`] for any service; also returns the `initialize` reply.
    async fn connect_to(
        service: Arc<dyn ToolService>,
        capabilities: Value,
    ) -> (Lines, Writer, Value) {
        let (client, server) = tokio::io::duplex(64 * 1024);
        let handler = Handler::new(service, "test");
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
        let init = next_message(&mut lines).await;
        assert_eq!(init["id"], 1);
        send(
            &mut w,
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        )
        .await;
        (lines, w, init)
    }

    /// The notifications that come before the reply to `id`, and the reply.
    async fn until_reply(lines: &mut Lines, id: u64) -> (Vec<Value>, Value) {
        let mut notes = Vec::new();
        loop {
            let msg = next_message(lines).await;
            if msg["id"] == id {
                return (notes, msg);
            }
            notes.push(msg);
        }
    }

    /// `count` tools (`t000`, `t001`, …); a call takes `delay`; `refuse` needs approval no
    /// one gives; `changes` announces list changes.
    struct Fake {
        count: usize,
        delay: Duration,
        changes: Option<watch::Sender<u64>>,
    }

    impl Fake {
        fn new(count: usize, delay: Duration) -> Self {
            Self {
                count,
                delay,
                changes: None,
            }
        }
    }

    #[async_trait]
    impl ToolService for Fake {
        fn tools(&self) -> Vec<ToolSpec> {
            (0..self.count)
                .map(|i| ToolSpec::new(&format!("t{i:03}"), "a test tool", "test"))
                .collect()
        }

        async fn call(
            &self,
            call: ToolCall,
            _approver: Arc<dyn Approver>,
            _session: &str,
        ) -> Result<ToolOutput, ToolError> {
            tokio::time::sleep(self.delay).await;
            if call.name == "refuse" {
                return Err(ToolError::needs_approval("`refuse` needs approval"));
            }
            Ok(ToolOutput::text(call.name))
        }

        fn tool_changes(&self) -> Option<watch::Receiver<u64>> {
            self.changes.as_ref().map(watch::Sender::subscribe)
        }
    }

    fn call_msg(id: u64, name: &str, meta: Value) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": name, "arguments": {}, "_meta": meta}})
    }

    fn methods(notes: &[Value]) -> Vec<&str> {
        notes.iter().filter_map(|n| n["method"].as_str()).collect()
    }

    #[tokio::test]
    async fn set_level_filters_the_servers_own_log_messages() {
        let (mut lines, mut w, init) =
            connect_to(Arc::new(Fake::new(1, Duration::ZERO)), json!({})).await;
        assert!(
            init["result"]["capabilities"]["logging"].is_object(),
            "{init}"
        );

        // Before any setLevel: warnings only, so a call that needed approval is told of…
        send(&mut w, call_msg(2, "refuse", json!({}))).await;
        let (notes, reply) = until_reply(&mut lines, 2).await;
        assert_eq!(reply["result"]["isError"], true, "{reply}");
        assert_eq!(methods(&notes), ["notifications/message"], "{notes:?}");
        let params = &notes[0]["params"];
        assert_eq!(params["level"], "warning");
        assert_eq!(params["logger"], "tackle");
        assert_eq!(params["data"]["event"], "call_not_approved");
        assert_eq!(params["data"]["tool"], "refuse");
        // … and one that ran is not.
        send(&mut w, call_msg(3, "t000", json!({}))).await;
        let (notes, _) = until_reply(&mut lines, 3).await;
        assert!(notes.is_empty(), "{notes:?}");

        send(
            &mut w,
            json!({"jsonrpc": "2.0", "id": 4, "method": "logging/setLevel",
                   "params": {"level": "debug"}}),
        )
        .await;
        let (_, reply) = until_reply(&mut lines, 4).await;
        assert_eq!(reply["result"], json!({}), "{reply}");
        send(&mut w, call_msg(5, "t000", json!({}))).await;
        let (notes, _) = until_reply(&mut lines, 5).await;
        let events: Vec<&Value> = notes
            .iter()
            .map(|n| &n["params"]["data"]["event"])
            .collect();
        assert_eq!(events, ["call_started", "call_finished"], "{notes:?}");
        assert!(notes.iter().all(|n| n["params"]["level"] == "debug"));

        send(
            &mut w,
            json!({"jsonrpc": "2.0", "id": 6, "method": "logging/setLevel",
                   "params": {"level": "error"}}),
        )
        .await;
        until_reply(&mut lines, 6).await;
        send(&mut w, call_msg(7, "refuse", json!({}))).await;
        let (notes, _) = until_reply(&mut lines, 7).await;
        assert!(notes.is_empty(), "a warning is below error: {notes:?}");

        send(
            &mut w,
            json!({"jsonrpc": "2.0", "id": 8, "method": "logging/setLevel",
                   "params": {"level": "loud"}}),
        )
        .await;
        let (_, reply) = until_reply(&mut lines, 8).await;
        assert_eq!(reply["error"]["code"], -32602, "{reply}");
    }

    #[tokio::test]
    async fn a_call_with_a_progress_token_reports_start_heartbeats_and_end() {
        let service = Arc::new(Fake::new(1, Duration::from_millis(2500)));
        let (mut lines, mut w, _) = connect_to(service, json!({})).await;
        send(&mut w, call_msg(2, "t000", json!({"progressToken": "p-1"}))).await;
        let (notes, reply) = until_reply(&mut lines, 2).await;
        assert_eq!(reply["result"]["isError"], false, "{reply}");
        assert!(
            methods(&notes)
                .iter()
                .all(|m| *m == "notifications/progress"),
            "{notes:?}"
        );
        let progress: Vec<f64> = notes
            .iter()
            .filter_map(|n| n["params"]["progress"].as_f64())
            .collect();
        assert!(notes.iter().all(|n| n["params"]["progressToken"] == "p-1"));
        // 0 at the start, a heartbeat each second (2 in 2.5 s), then the end at its total.
        assert_eq!(progress, [0.0, 1.0, 2.0, 3.0], "{notes:?}");
        let last = &notes[notes.len() - 1]["params"];
        assert_eq!(last["total"], 3.0);
        assert!(
            last["message"].as_str().unwrap().contains("finished"),
            "{last}"
        );

        // Without a token: no progress.
        let service = Arc::new(Fake::new(1, Duration::ZERO));
        let (mut lines, mut w, _) = connect_to(service, json!({})).await;
        send(&mut w, call_msg(2, "t000", json!({}))).await;
        let (notes, _) = until_reply(&mut lines, 2).await;
        assert!(notes.is_empty(), "{notes:?}");
    }

    #[tokio::test]
    async fn tools_list_comes_in_pages_with_annotations() {
        let (mut lines, mut w, _) =
            connect_to(Arc::new(Fake::new(250, Duration::ZERO)), json!({})).await;
        let list = |id: u64, cursor: Option<&str>| {
            let params = match cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params})
        };
        let mut names = Vec::new();
        let mut cursor: Option<String> = None;
        for id in 2..10 {
            send(&mut w, list(id, cursor.as_deref())).await;
            let (_, reply) = until_reply(&mut lines, id).await;
            let tools = reply["result"]["tools"].as_array().unwrap().clone();
            assert!(tools.len() <= listing::PAGE_SIZE, "{}", tools.len());
            for t in &tools {
                assert_eq!(t["annotations"]["readOnlyHint"], true, "{t}");
                assert_eq!(t["title"], t["annotations"]["title"], "{t}");
                names.push(t["name"].as_str().unwrap().to_string());
            }
            cursor = reply["result"]["nextCursor"].as_str().map(String::from);
            if cursor.is_none() {
                break;
            }
        }
        let expected: Vec<String> = (0..250).map(|i| format!("t{i:03}")).collect();
        assert_eq!(names, expected, "every tool once, in order");

        send(&mut w, list(20, Some("not-a-cursor"))).await;
        let (_, reply) = until_reply(&mut lines, 20).await;
        assert_eq!(reply["error"]["code"], -32602, "{reply}");
    }

    #[tokio::test]
    async fn a_changed_tool_list_is_announced_to_the_session() {
        let (changes, _) = watch::channel(0);
        let service = Arc::new(Fake {
            changes: Some(changes.clone()),
            ..Fake::new(1, Duration::ZERO)
        });
        let (mut lines, mut w, init) = connect_to(service, json!({})).await;
        assert_eq!(
            init["result"]["capabilities"]["tools"]["listChanged"], true,
            "{init}"
        );
        // The announcer starts with `notifications/initialized`; a ping round trip makes sure
        // the server has handled that before the change.
        send(&mut w, json!({"jsonrpc": "2.0", "id": 2, "method": "ping"})).await;
        until_reply(&mut lines, 2).await;
        changes.send_modify(|g| *g += 1);
        let note = next_message(&mut lines).await;
        assert_eq!(note["method"], "notifications/tools/list_changed", "{note}");

        // A service whose list never changes says so.
        let (_, _, init) = connect_to(Arc::new(Fake::new(1, Duration::ZERO)), json!({})).await;
        assert_eq!(
            init["result"]["capabilities"]["tools"]["listChanged"], false,
            "{init}"
        );
    }

    #[test]
    fn log_notifications_are_notifications_message() {
        let note = log_notification(Level::Warning, json!({"message": "m"})).unwrap();
        let v = serde_json::to_value(note).unwrap();
        assert_eq!(v["method"], "notifications/message", "{v}");
        assert_eq!(v["params"]["level"], "warning");
        assert_eq!(v["params"]["data"]["message"], "m");
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
        let pending = Never.call_cancellable(call, Arc::new(NoOne), "s", cancel.clone(), None);
        cancel.cancel();
        let err = tokio::time::timeout(Duration::from_secs(5), pending)
            .await
            .expect("it stops waiting")
            .unwrap_err();
        assert!(err.message.contains("cancelled"), "{}", err.message);
    }
}
