//! The dispatcher's steps, end to end with fake tools and a scripted host.

use async_trait::async_trait;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tackle_agent::approvers::{AutoApprover, NonInteractiveApprover};
use tackle_agent::{
    AuditEvent, AuditSink, CallRequest, Dispatcher, DispatcherConfig, Registry, Sanitizer,
    SessionApprovals,
};
use tackle_protocol::config::{SecurityConfig, ToolPolicyConfig};
use tackle_protocol::*;

/// A host that denies any capability whose summary contains "forbidden" and does nothing else.
struct ScriptedHost {
    grants: Grants,
    workspace: PathBuf,
}

#[async_trait]
impl ToolHost for ScriptedHost {
    fn workspace(&self) -> &Path {
        &self.workspace
    }
    fn grants(&self) -> &Grants {
        &self.grants
    }
    async fn check(&self, cap: &Capability) -> Decision {
        if cap.summary().contains("forbidden") {
            Decision::deny(
                "test rule",
                format!("`{}` is forbidden by the test rule", cap.summary()),
            )
        } else {
            Decision::allow("test", "allowed")
        }
    }
    async fn read(&self, _: ReadRequest) -> Result<FileContent, HostError> {
        Err(HostError::Unsupported("read"))
    }
    async fn write(&self, _: WriteRequest) -> Result<WriteReport, HostError> {
        Err(HostError::Unsupported("write"))
    }
    async fn list(&self, _: ListRequest) -> Result<Vec<DirEntry>, HostError> {
        Err(HostError::Unsupported("list"))
    }
    async fn search(&self, _: SearchRequest) -> Result<Vec<SearchHit>, HostError> {
        Err(HostError::Unsupported("search"))
    }
    async fn exec(&self, _: ExecRequest) -> Result<ExecOutput, HostError> {
        Err(HostError::Unsupported("exec"))
    }
    async fn http(&self, _: HttpRequest) -> Result<HttpResponse, HostError> {
        Err(HostError::Unsupported("http"))
    }
}

struct ScriptedProvider;

impl HostProvider for ScriptedProvider {
    fn scoped(&self, scope: &CallScope) -> Arc<dyn ToolHost> {
        Arc::new(ScriptedHost {
            grants: scope.grants.clone(),
            workspace: scope.workspace.clone(),
        })
    }
}

/// A tool with a chosen approval, that plans to use `target` and counts its runs.
struct Probe {
    name: &'static str,
    approval: ApprovalMode,
    runs: Arc<AtomicUsize>,
    sleep: Duration,
    output: String,
}

#[async_trait]
impl Tool for Probe {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(self.name, "probe", "test")
            .approval(self.approval)
            .parameters(json!({
                "type": "object",
                "properties": {"target": {"type": "string"}, "count": {"type": "integer", "minimum": 0}},
                "required": ["target"],
                "additionalProperties": false
            }))
    }
    fn planned_capabilities(&self, args: &Value, _: &ToolContext) -> Vec<Capability> {
        let target = args
            .get("target")
            .and_then(Value::as_str)
            .unwrap_or_default();
        vec![Capability::Shell {
            command: target.to_string(),
        }]
    }
    fn approval_for(&self, args: &Value) -> Option<ApprovalMode> {
        match args.get("target").and_then(Value::as_str) {
            Some("push") => Some(ApprovalMode::Always),
            Some("plant") => Some(ApprovalMode::UnlessAutoApproved),
            _ => None,
        }
    }
    async fn call(&self, _: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        if self.sleep > Duration::ZERO {
            tokio::select! {
                () = tokio::time::sleep(self.sleep) => {},
                () = cx.cancel.cancelled() => return Err(ToolError::failed("cancelled")),
            }
        }
        if self.output == "panic" {
            panic!("probe panicked");
        }
        if let Some(blob) = self.output.strip_prefix("structured:") {
            let mut out = ToolOutput::text("see structured");
            out.structured = Some(json!({"value": blob, "list": [blob], blob: {"deep": blob}}));
            return Ok(out);
        }
        Ok(ToolOutput::text(self.output.clone()))
    }
}

struct Ext(Vec<Arc<dyn Tool>>);

impl Extension for Ext {
    fn name(&self) -> &str {
        "test"
    }
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.0.clone()
    }
}

#[derive(Default)]
struct Audit(Mutex<Vec<AuditEvent>>);

#[async_trait]
impl AuditSink for Audit {
    async fn record(&self, event: AuditEvent) {
        self.0.lock().unwrap().push(event);
    }
}

struct Fixture {
    dispatcher: Dispatcher,
    runs: Arc<AtomicUsize>,
    audit: Arc<Audit>,
    /// One session's approvals, shared by every `run`.
    approvals: Arc<SessionApprovals>,
}

fn fixture(
    approval: ApprovalMode,
    security: SecurityConfig,
    sleep: Duration,
    output: &str,
    timeout: Duration,
) -> Fixture {
    fixture_limited(approval, security, sleep, output, timeout, 100)
}

fn fixture_limited(
    approval: ApprovalMode,
    security: SecurityConfig,
    sleep: Duration,
    output: &str,
    timeout: Duration,
    output_limit: usize,
) -> Fixture {
    let runs = Arc::new(AtomicUsize::new(0));
    let probe = Probe {
        name: "probe",
        approval,
        runs: runs.clone(),
        sleep,
        output: output.to_string(),
    };
    let registry = Registry::new(vec![
        tackle_tools::system::extension(),
        Arc::new(Ext(vec![Arc::new(probe)])),
    ])
    .unwrap();
    let audit = Arc::new(Audit::default());
    let dispatcher = Dispatcher::new(
        Arc::new(registry),
        Arc::new(ScriptedProvider),
        DispatcherConfig {
            workspace: PathBuf::from("/ws"),
            security,
            agent: "default".into(),
            agent_grants: None,
            default_timeout: timeout,
            sanitizer: Sanitizer::new(output_limit),
        },
    )
    .with_audit(audit.clone());
    Fixture {
        dispatcher,
        runs,
        audit,
        approvals: Arc::default(),
    }
}

impl Fixture {
    async fn run(
        &self,
        call: ToolCall,
        approver: Arc<dyn Approver>,
    ) -> Result<ToolOutput, ToolError> {
        self.dispatcher
            .dispatch(CallRequest::new(call, approver).approvals(Arc::clone(&self.approvals)))
            .await
    }
}

fn simple(approval: ApprovalMode) -> Fixture {
    fixture(
        approval,
        SecurityConfig::default(),
        Duration::ZERO,
        "done",
        Duration::from_secs(5),
    )
}

fn call(name: &str, args: Value) -> ToolCall {
    ToolCall {
        id: "1".into(),
        name: name.into(),
        arguments: args,
    }
}

struct Answer(ApprovalAnswer, AtomicUsize);

#[async_trait]
impl Approver for Answer {
    fn name(&self) -> &str {
        "scripted"
    }
    async fn ask(&self, _: &ApprovalRequest) -> Result<ApprovalAnswer, ApprovalUnavailable> {
        self.1.fetch_add(1, Ordering::SeqCst);
        Ok(self.0)
    }
}

#[tokio::test]
async fn calculate_runs_through_the_whole_path() {
    let f = simple(ApprovalMode::Never);
    let out = f
        .run(
            call("calculate", json!({"expression": "7/2"})),
            Arc::new(NonInteractiveApprover),
        )
        .await
        .unwrap();
    assert_eq!(out.content, "3.5");
}

#[tokio::test]
async fn unknown_tools_are_not_found_with_suggestions() {
    let f = simple(ApprovalMode::Never);
    let err = f
        .run(call("calculat", json!({})), Arc::new(AutoApprover))
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::NotFound);
    // The one "did you mean" wording (tackle_protocol::suggest).
    assert!(
        err.message.contains("; did you mean calculate?"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn missing_required_field_is_invalid_arguments_naming_it() {
    let f = simple(ApprovalMode::Never);
    let err = f
        .run(call("calculate", json!({})), Arc::new(AutoApprover))
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArguments);
    assert!(err.message.contains("expression"), "{}", err.message);
}

#[tokio::test]
async fn wrong_type_names_the_nested_field() {
    let f = simple(ApprovalMode::Never);
    let err = f
        .run(
            call("probe", json!({"target": "x", "count": -1})),
            Arc::new(AutoApprover),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArguments);
    assert!(err.message.contains("`count`"), "{}", err.message);
    assert_eq!(f.runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_denied_capability_is_denied_before_anyone_is_asked() {
    let f = simple(ApprovalMode::Always);
    let approver = Arc::new(Answer(ApprovalAnswer::Once, AtomicUsize::new(0)));
    let err = f
        .run(
            call("probe", json!({"target": "forbidden thing"})),
            approver.clone(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Denied);
    assert!(err.message.contains("forbidden"), "{}", err.message);
    assert_eq!(
        approver.1.load(Ordering::SeqCst),
        0,
        "no approval prompt for a denied call"
    );
    assert_eq!(f.runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn needing_approval_without_an_approver_ends_at_once() {
    let f = simple(ApprovalMode::Always);
    let started = std::time::Instant::now();
    let err = f
        .run(
            call("probe", json!({"target": "ok"})),
            Arc::new(NonInteractiveApprover),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::NeedsApproval);
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(f.runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_user_no_is_a_denial_and_the_tool_does_not_run() {
    let f = simple(ApprovalMode::Always);
    let deny = Arc::new(Answer(ApprovalAnswer::Deny, AtomicUsize::new(0)));
    let err = f
        .run(call("probe", json!({"target": "ok"})), deny)
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Denied);
    assert_eq!(f.runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn always_for_session_stops_further_prompts_for_that_tool() {
    let f = simple(ApprovalMode::Always);
    let approver = Arc::new(Answer(ApprovalAnswer::ForSession, AtomicUsize::new(0)));
    for _ in 0..3 {
        f.run(call("probe", json!({"target": "ok"})), approver.clone())
            .await
            .unwrap();
    }
    assert_eq!(approver.1.load(Ordering::SeqCst), 1);
    assert_eq!(f.runs.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn allow_for_the_session_holds_in_that_session_only() {
    let f = simple(ApprovalMode::Always);
    let approver = Arc::new(Answer(ApprovalAnswer::ForSession, AtomicUsize::new(0)));
    let (a, b) = (
        Arc::new(SessionApprovals::default()),
        Arc::new(SessionApprovals::default()),
    );
    let in_session = |session: &str, approver: Arc<dyn Approver>| {
        let approvals = if session == "mcp-a" { &a } else { &b };
        CallRequest::new(call("probe", json!({"target": "ok"})), approver)
            .session(session)
            .approvals(Arc::clone(approvals))
    };
    f.dispatcher
        .dispatch(in_session("mcp-a", approver.clone()))
        .await
        .expect("approved in session a");
    f.dispatcher
        .dispatch(in_session("mcp-a", approver.clone()))
        .await
        .expect("still allowed in session a");
    assert_eq!(
        approver.1.load(Ordering::SeqCst),
        1,
        "asked once in session a"
    );
    // Another client, which cannot be asked, gets no free pass from session a's answer.
    let other = f
        .dispatcher
        .dispatch(in_session(
            "mcp-b",
            Arc::new(tackle_agent::approvers::NonInteractiveApprover),
        ))
        .await;
    assert_eq!(other.map_err(|e| e.kind), Err(ErrorKind::NeedsApproval));
    assert_eq!(f.runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn escalated_arguments_ask_even_when_auto_approved() {
    let security = SecurityConfig {
        auto_approved_tools: vec!["probe".into()],
        ..Default::default()
    };
    let f = fixture(
        ApprovalMode::UnlessAutoApproved,
        security,
        Duration::ZERO,
        "done",
        Duration::from_secs(5),
    );
    let plain = f
        .run(
            call("probe", json!({"target": "ok"})),
            Arc::new(NonInteractiveApprover),
        )
        .await;
    assert!(plain.is_ok(), "auto-approved: {plain:?}");
    let push = f
        .run(
            call("probe", json!({"target": "push"})),
            Arc::new(NonInteractiveApprover),
        )
        .await
        .unwrap_err();
    assert_eq!(push.kind, ErrorKind::NeedsApproval);
}

#[tokio::test]
async fn arguments_raised_to_unless_auto_approved_ask_unless_the_tool_is_auto_approved() {
    let ask = fixture(
        ApprovalMode::Never,
        SecurityConfig::default(),
        Duration::ZERO,
        "done",
        Duration::from_secs(5),
    );
    let plain = ask
        .run(
            call("probe", json!({"target": "ok"})),
            Arc::new(NonInteractiveApprover),
        )
        .await;
    assert!(plain.is_ok(), "base mode never: {plain:?}");
    let planted = ask
        .run(
            call("probe", json!({"target": "plant"})),
            Arc::new(NonInteractiveApprover),
        )
        .await
        .unwrap_err();
    assert_eq!(planted.kind, ErrorKind::NeedsApproval);
    let auto = fixture(
        ApprovalMode::Never,
        SecurityConfig {
            auto_approved_tools: vec!["probe".into()],
            ..Default::default()
        },
        Duration::ZERO,
        "done",
        Duration::from_secs(5),
    );
    let planted = auto
        .run(
            call("probe", json!({"target": "plant"})),
            Arc::new(NonInteractiveApprover),
        )
        .await;
    assert!(planted.is_ok(), "auto-approved: {planted:?}");
}

#[tokio::test]
async fn config_can_lower_approval_only_explicitly() {
    let mut security = SecurityConfig::default();
    security.tool_policies.insert(
        "probe".into(),
        ToolPolicyConfig {
            approval: Some(ApprovalMode::Never),
            grants: None,
            taint: None,
        },
    );
    let f = fixture(
        ApprovalMode::Always,
        security,
        Duration::ZERO,
        "done",
        Duration::from_secs(5),
    );
    let out = f
        .run(
            call("probe", json!({"target": "ok"})),
            Arc::new(NonInteractiveApprover),
        )
        .await;
    assert!(out.is_ok(), "{out:?}");
}

#[tokio::test]
async fn slow_tools_time_out_and_are_cancelled() {
    let f = fixture(
        ApprovalMode::Never,
        SecurityConfig::default(),
        Duration::from_secs(30),
        "done",
        Duration::from_millis(200),
    );
    let started = std::time::Instant::now();
    let err = f
        .run(
            call("probe", json!({"target": "ok"})),
            Arc::new(AutoApprover),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Timeout);
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn a_panicking_tool_becomes_a_failed_result() {
    let f = fixture(
        ApprovalMode::Never,
        SecurityConfig::default(),
        Duration::ZERO,
        "panic",
        Duration::from_secs(5),
    );
    let err = f
        .run(
            call("probe", json!({"target": "ok"})),
            Arc::new(AutoApprover),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Failed);
}

#[tokio::test]
async fn results_are_sanitized_to_the_limit() {
    let f = fixture(
        ApprovalMode::Never,
        SecurityConfig::default(),
        Duration::ZERO,
        &"x".repeat(500),
        Duration::from_secs(5),
    );
    let out = f
        .run(
            call("probe", json!({"target": "ok"})),
            Arc::new(AutoApprover),
        )
        .await
        .unwrap();
    assert!(out.content.starts_with(&"x".repeat(100)));
    assert!(
        out.content.contains("400 of 500 bytes cut"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn every_decision_is_audited() {
    let f = simple(ApprovalMode::Always);
    let _ = f
        .run(
            call("probe", json!({"target": "forbidden"})),
            Arc::new(AutoApprover),
        )
        .await;
    let _ = f
        .run(
            call("probe", json!({"target": "ok"})),
            Arc::new(AutoApprover),
        )
        .await;
    let events = f.audit.0.lock().unwrap().clone();
    assert_eq!(events.len(), 2);
    assert_eq!(events[0].verdict, "denied");
    assert_eq!(events[0].rule, "test rule");
    assert_eq!(events[1].verdict, "ok");
    assert_eq!(events[1].approver, "--yes");
}

#[tokio::test]
async fn each_record_names_the_layer_and_rule_that_decided_and_digests_what_ran() {
    let f = simple(ApprovalMode::Never);
    let runs = [
        json!({"target": "ok"}),
        json!({"target": "forbidden"}),
        json!({"target": "push"}),
    ];
    for args in &runs {
        let _ = f
            .run(
                call("probe", args.clone()),
                Arc::new(NonInteractiveApprover),
            )
            .await;
    }
    let _ = f
        .run(call("prob", json!({})), Arc::new(NonInteractiveApprover))
        .await;
    let _ = f
        .run(
            call("probe", json!({"count": 1})),
            Arc::new(NonInteractiveApprover),
        )
        .await;
    let events = f.audit.0.lock().unwrap().clone();
    let decided: Vec<(&str, &str, &str)> = events
        .iter()
        .map(|e| (e.verdict.as_str(), e.detail.layer.as_str(), e.rule.as_str()))
        .collect();
    assert_eq!(
        decided,
        [
            // Allowed: the rule that let it run, not an empty one.
            (
                "ok",
                "approval",
                "security.tool_policies.probe.approval = never"
            ),
            ("denied", "policy", "test rule"),
            // The tool's own rule for these arguments asked; no one could answer.
            (
                "needs_approval",
                "tool",
                "probe: approval always for these arguments"
            ),
            ("not_found", "lookup", ""),
            ("invalid_arguments", "schema", ""),
        ]
    );
    let ran = &events[0].detail;
    assert_eq!(
        ran.args_digest.as_deref(),
        Some(tackle_store::json_digest(&runs[0]).as_str())
    );
    assert_eq!(
        ran.result_digest.as_deref(),
        Some(tackle_store::text_digest("done").as_str())
    );
    assert_eq!(ran.arguments.as_deref(), Some(r#"{"target":"ok"}"#));
}

#[tokio::test]
async fn explain_reports_the_decision_without_running() {
    let f = simple(ApprovalMode::Always);
    let x = f
        .dispatcher
        .explain("probe", &json!({"target": "forbidden"}))
        .await
        .unwrap();
    assert_eq!(x.decision.verdict, Verdict::Deny);
    let y = f
        .dispatcher
        .explain("probe", &json!({"target": "fine"}))
        .await
        .unwrap();
    assert_eq!(y.decision.verdict, Verdict::Ask);
    assert_eq!(f.runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn concurrent_calls_run_in_parallel() {
    let f = fixture(
        ApprovalMode::Never,
        SecurityConfig::default(),
        Duration::from_millis(300),
        "done",
        Duration::from_secs(5),
    );
    let started = std::time::Instant::now();
    let calls = (0..3).map(|_| {
        f.run(
            call("probe", json!({"target": "ok"})),
            Arc::new(AutoApprover),
        )
    });
    let results = futures::future::join_all(calls).await;
    assert!(results.iter().all(Result::is_ok));
    assert!(
        started.elapsed() < Duration::from_millis(800),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn structured_output_is_sanitized_like_content() {
    let hex = "ab".repeat(80);
    let blob = format!("data:image/png;base64,{} and {hex}", "QUJD".repeat(50));
    let f = fixture(
        ApprovalMode::Never,
        SecurityConfig::default(),
        Duration::ZERO,
        &format!("structured:{blob}"),
        Duration::from_secs(5),
    );
    let out = f
        .run(
            call("probe", json!({"target": "x"})),
            Arc::new(tackle_agent::approvers::NonInteractiveApprover),
        )
        .await
        .expect("the probe runs");
    let text = serde_json::to_string(&out.structured).unwrap_or_default();
    assert!(!text.contains("QUJDQUJD") && !text.contains(&hex), "{text}");
    // Values and keys alike: four places each for the data URI and the hex run.
    assert_eq!(text.matches("[base64 data removed]").count(), 4, "{text}");
    assert_eq!(text.matches("[hex data removed]").count(), 4, "{text}");
}

/// Answers yes after a person's thinking time.
struct SlowYes(Duration);

#[async_trait]
impl Approver for SlowYes {
    fn name(&self) -> &str {
        "slow"
    }
    async fn ask(&self, _: &ApprovalRequest) -> Result<ApprovalAnswer, ApprovalUnavailable> {
        tokio::time::sleep(self.0).await;
        Ok(ApprovalAnswer::Once)
    }
}

#[tokio::test]
async fn the_reported_run_time_is_the_tools_own_not_the_wait_for_an_answer() {
    let f = fixture(
        ApprovalMode::Always,
        SecurityConfig::default(),
        Duration::from_millis(50),
        "done",
        Duration::from_secs(5),
    );
    let started = std::time::Instant::now();
    let (out, ran) = f
        .dispatcher
        .dispatch_timed(CallRequest::new(
            call("probe", json!({"target": "ok"})),
            Arc::new(SlowYes(Duration::from_millis(600))),
        ))
        .await;
    assert!(out.is_ok(), "{out:?}");
    assert!(started.elapsed() >= Duration::from_millis(600));
    assert!(ran >= Duration::from_millis(50), "{ran:?}");
    assert!(
        ran < Duration::from_millis(500),
        "the answer's wait was counted: {ran:?}"
    );
}

#[tokio::test]
async fn a_call_that_never_ran_reports_no_run_time() {
    let f = simple(ApprovalMode::Always);
    let (out, ran) = f
        .dispatcher
        .dispatch_timed(CallRequest::new(
            call("probe", json!({"target": "forbidden"})),
            Arc::new(AutoApprover),
        ))
        .await;
    assert_eq!(out.map_err(|e| e.kind), Err(ErrorKind::Denied));
    assert_eq!(ran, Duration::ZERO);
}

#[tokio::test]
async fn a_huge_invalid_value_is_quoted_in_part_with_its_length() {
    // A sanitizer limit well above the quoted part, so only the quoting can keep it short.
    let f = fixture_limited(
        ApprovalMode::Never,
        SecurityConfig::default(),
        Duration::ZERO,
        "done",
        Duration::from_secs(5),
        1_000_000,
    );
    let huge = "é".repeat(120_000);
    let err = f
        .run(
            call("probe", json!({"target": "ok", "count": huge})),
            Arc::new(AutoApprover),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArguments);
    assert!(err.message.len() < 2_000, "{} bytes", err.message.len());
    assert!(err.message.contains("120002 characters"), "{}", err.message);
    assert!(
        err.message.contains("`count`"),
        "names the field: {}",
        err.message
    );
}
