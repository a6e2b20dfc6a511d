//! THE one path a tool call takes (docs/architecture.md, "The call pipeline"): lookup → validate → resolve policy →
//! capability pre-check → approval → execute (timeout, cancellation, panic isolation) →
//! sanitize → audit. Every front end calls [`Dispatcher::dispatch`].

use crate::audit::{AuditEvent, AuditSink, IntentId, RUNNING};
use crate::path_locks::lock_paths;
use crate::plan::{Layer, Plan};
use crate::registry::{Entry, Registry};
use crate::sanitizer::Sanitizer;
use crate::session_approvals::SessionApprovals;
use crate::tree::TreePlace;
use futures::FutureExt;
use serde::Serialize;
use serde_json::Value;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tackle_policy::resolve::{approval_decision, resolve, ResolvedPolicy};
use tackle_protocol::config::{SecurityConfig, TaintRule};
use tackle_protocol::text::preview;
use tackle_protocol::{
    AgentServices, ApprovalAnswer, ApprovalMode, ApprovalRequest, Approver, CallScope, Capability,
    Decision, ErrorKind, Grants, HostProvider, ProgressSink, ToolCall, ToolContext, ToolError,
    ToolHost, ToolOutput, Verdict,
};
use tokio_util::sync::CancellationToken;

/// What the dispatcher needs besides the registry and the host.
#[derive(Clone)]
pub struct DispatcherConfig {
    /// The directory calls run in and their relative paths resolve against.
    pub workspace: PathBuf,
    /// The operator's `security` settings: tool policies, shell lists, endpoints, sandbox.
    pub security: SecurityConfig,
    /// The calling agent's name and its grants overlay.
    pub agent: String,
    /// The agent's own grants, intersected with the tool policy (`None`: no overlay).
    pub agent_grants: Option<Grants>,
    /// Per-call limit for tools that set none.
    pub default_timeout: Duration,
    /// What cleans and redacts every result before the model sees it.
    pub sanitizer: Sanitizer,
}

/// One call to dispatch, with who is calling and who can approve.
pub struct CallRequest {
    /// The call as the model (or caller) made it.
    pub call: ToolCall,
    /// Who answers when the policy asks.
    pub approver: Arc<dyn Approver>,
    /// The calling session, for the audit log and session approvals (empty: none).
    pub session_id: String,
    /// The session's "allow for the session" answers (a fresh, empty set by default: a
    /// one-off call remembers nothing).
    pub approvals: Arc<SessionApprovals>,
    /// Where the call came from: `cli` (the default), `agent` (a model; audited as `model`),
    /// `mcp` or a chat channel's name.
    pub channel: String,
    /// The chat the call came from on `channel` (empty: none).
    pub chat_id: String,
    /// Cancelling it stops the call: the tool's future is dropped and the call ends `failed`.
    /// The host kills the processes of a cancelled call.
    pub cancel: CancellationToken,
    /// Where the tool's progress lines go (cleaned and redacted first), for a front end that
    /// shows them; `None` = nobody is watching.
    pub progress: Option<Arc<dyn ProgressSink>>,
}

impl CallRequest {
    /// A call from the CLI outside any session, with nothing remembered and nobody watching.
    pub fn new(call: ToolCall, approver: Arc<dyn Approver>) -> Self {
        Self {
            call,
            approver,
            session_id: String::new(),
            approvals: Arc::default(),
            channel: "cli".to_string(),
            chat_id: String::new(),
            cancel: CancellationToken::new(),
            progress: None,
        }
    }

    /// Names the calling session.
    pub fn session(mut self, session_id: impl Into<String>) -> Self {
        self.session_id = session_id.into();
        self
    }

    /// The calling session's approvals, shared by all its calls.
    pub fn approvals(mut self, approvals: Arc<SessionApprovals>) -> Self {
        self.approvals = approvals;
        self
    }

    /// Names the front end the call came from.
    pub fn channel(mut self, channel: impl Into<String>) -> Self {
        self.channel = channel.into();
        self
    }

    /// Names the chat on `channel` the call came from.
    pub fn chat_id(mut self, chat_id: impl Into<String>) -> Self {
        self.chat_id = chat_id.into();
        self
    }

    /// Cancels the call when this token is.
    pub fn cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }

    /// Where the tool's progress lines go (cleaned and redacted first).
    pub fn progress(mut self, progress: Option<Arc<dyn ProgressSink>>) -> Self {
        self.progress = progress;
        self
    }
}

/// A front end's progress sink behind the sanitizer: what it shows is cleaned and redacted
/// like the result (a command that prints a secret does not leak it through progress).
struct SanitizedProgress {
    inner: Arc<dyn ProgressSink>,
    sanitizer: Sanitizer,
}

impl ProgressSink for SanitizedProgress {
    fn line(&self, text: &str) {
        self.inner.line(&self.sanitizer.sanitize(text));
    }
}

/// `--explain`: the resolved policy and the decision with its why, nothing run.
#[derive(Debug, Clone, Serialize)]
pub struct Explanation {
    /// The tool explained.
    pub tool: String,
    /// When the resolved policy asks for approval.
    pub approval: ApprovalMode,
    /// The grants the call would run under, after every overlay and ceiling.
    pub grants: Grants,
    /// Which layers contributed to the policy (tool default, tool_policies, agent overlay).
    pub sources: Vec<String>,
    /// In JSON, `[{"capability", "decision"}]`: named fields, not pairs.
    #[serde(serialize_with = "capability_objects")]
    pub capabilities: Vec<(Capability, Decision)>,
    /// What the approval step alone decides (before capability denials).
    pub approval_decision: Decision,
    /// The overall outcome: deny if any capability is denied, else the approval decision.
    pub decision: Decision,
    /// The layer whose rule gives `decision`.
    pub layer: Layer,
    /// For a call that runs a command: the sandbox it would run in, with the layer that
    /// enforces each shell rule (see `ToolHost::sandbox_view`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<serde_json::Value>,
    /// When the call is a sink (crate::taint): what it would carry out, and what a session
    /// that has read untrusted content does with it (`security.tool_policies.TOOL.taint`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub taint: Option<TaintView>,
}

/// `--explain`'s view of the taint gate for one call.
#[derive(Debug, Clone, Serialize)]
pub struct TaintView {
    /// What the call would carry out of the session, in words.
    pub sink: String,
    /// `ask`, `deny` or `ignore`, once the session is tainted; a clean session decides as
    /// above.
    pub rule: &'static str,
}

fn capability_objects<S: serde::Serializer>(
    caps: &[(Capability, Decision)],
    s: S,
) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Planned<'a> {
        capability: &'a Capability,
        decision: &'a Decision,
    }
    s.collect_seq(caps.iter().map(|(capability, decision)| Planned {
        capability,
        decision,
    }))
}

/// Runs every tool call through one pipeline: lookup, validation, policy, approval, execution,
/// sanitizing and audit. Cheap to share behind an `Arc`.
pub struct Dispatcher {
    registry: Arc<Registry>,
    host: Arc<dyn HostProvider>,
    config: DispatcherConfig,
    audit: Option<Arc<dyn AuditSink>>,
    agents: Option<Arc<dyn AgentServices>>,
    /// Where this dispatcher's agent sits in a tree of agents (the root's is empty).
    place: TreePlace,
    /// `security.honeytokens`: the decoys no call may carry (crate::honeytoken).
    honeytokens: Option<Arc<crate::honeytoken::Honeytokens>>,
}

impl Dispatcher {
    /// The root agent's dispatcher, with no audit sink, agent services or honeytokens until the
    /// `with_*` calls add them.
    pub fn new(
        registry: Arc<Registry>,
        host: Arc<dyn HostProvider>,
        config: DispatcherConfig,
    ) -> Self {
        Self {
            registry,
            host,
            config,
            audit: None,
            agents: None,
            place: TreePlace::default(),
            honeytokens: None,
        }
    }

    /// The dispatcher of a child agent: the same registry, host and audit log, its own
    /// config, its place in the tree (grant ceilings, tools, path) and its own agent services.
    pub fn child(
        &self,
        config: DispatcherConfig,
        place: TreePlace,
        agents: Arc<dyn AgentServices>,
    ) -> Self {
        Self {
            registry: Arc::clone(&self.registry),
            host: Arc::clone(&self.host),
            config,
            audit: self.audit.clone(),
            agents: Some(agents),
            place,
            honeytokens: self.honeytokens.clone(),
        }
    }

    /// Where this dispatcher's agent sits in the tree of agents (empty for the root).
    pub fn place(&self) -> &TreePlace {
        &self.place
    }

    /// Whether this dispatcher's agent may call `name` at all (a child's tools are a subset).
    pub fn allows_tool(&self, name: &str) -> bool {
        self.place.tools.as_ref().is_none_or(|t| t.contains(name))
    }

    /// Records every call's intent and outcome through `audit`.
    pub fn with_audit(mut self, audit: Arc<dyn AuditSink>) -> Self {
        self.audit = Some(audit);
        self
    }

    /// Refuses any call that carries one of these decoys (`security.honeytokens`).
    pub fn with_honeytokens(mut self, honeytokens: Arc<crate::honeytoken::Honeytokens>) -> Self {
        self.honeytokens = Some(honeytokens);
        self
    }

    /// Gives tools the agent services (compaction, spawning children, messaging the session).
    pub fn with_agents(mut self, agents: Arc<dyn AgentServices>) -> Self {
        self.agents = Some(agents);
        self
    }

    /// The tools this dispatcher looks calls up in.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The settings it was built with.
    pub fn config(&self) -> &DispatcherConfig {
        &self.config
    }

    /// The process is ending: the host drops what it kept for each session (its TMPDIR).
    pub fn end_sessions(&self) {
        self.host.end_all_sessions();
    }

    /// Run one call through every step. Never panics, never hangs past the timeout.
    pub async fn dispatch(&self, req: CallRequest) -> Result<ToolOutput, ToolError> {
        self.dispatch_timed(req).await.0
    }

    /// [`Self::dispatch`], also returning how long the tool itself ran (zero when it never
    /// started): the time a person took to answer the approval is not in it.
    pub async fn dispatch_timed(
        &self,
        mut req: CallRequest,
    ) -> (Result<ToolOutput, ToolError>, Duration) {
        let started = Instant::now();
        let mut ran_for = Duration::ZERO;
        // Decoy credentials first: a call carrying one is refused with its arguments masked
        // (so the record below never holds the decoy), and so is every call of a frozen session.
        let screened = match &self.honeytokens {
            Some(h) => h.screen(&mut req.call, &req.session_id, req.approvals.freeze()),
            None => Ok(()),
        };
        let cleared = match screened {
            Ok(()) => self.clear(&req).await,
            Err(refusal) => Err(refusal.into()),
        };
        let (outcome, trail) = match cleared {
            Ok((plan, approver)) => {
                // The decision is on record before anything runs (an intent), so a process
                // killed mid-call still leaves it. The arguments move into the tool (a
                // `write_file` of megabytes is not copied), so their summary is taken first.
                let trail = self.intent(&req, &plan, approver).await;
                // Where the result comes from, asked before the arguments move into the tool:
                // an untrusted one taints the session from here on (crate::taint).
                let provenance = crate::taint::provenance(
                    &plan,
                    &req.call.arguments,
                    &self.config.security.untrusted_paths,
                );
                let arguments = std::mem::take(&mut req.call.arguments);
                let (outcome, ran) = self.execute(plan, &req, arguments).await;
                req.approvals.taint().record(&provenance);
                ran_for = ran;
                (outcome, trail)
            }
            Err(refusal) => {
                let decision = match refusal.error.kind {
                    ErrorKind::NeedsApproval => Verdict::Ask,
                    _ => Verdict::Deny,
                };
                let trail = self
                    .event(&req, decision, refusal.approver, *refusal.decided)
                    .map(|e| (e, None));
                (Err(refusal.error), trail)
            }
        };
        let outcome = self.sanitize(outcome);
        if let Some((event, intent)) = trail {
            self.conclude(event, intent, outcome.as_ref(), started.elapsed())
                .await;
        }
        (outcome, ran_for)
    }

    /// A call a front end refused before dispatching it (a tool this MCP server does not
    /// offer): recorded as denied, as the dispatcher's own refusals are; returns the error,
    /// redacted.
    pub async fn refuse(&self, req: &CallRequest, error: ToolError) -> ToolError {
        let error = self.sanitize_error(error);
        let decided = (Layer::Lookup, String::new());
        if let Some(event) = self.event(req, Verdict::Deny, String::new(), decided) {
            self.conclude(event, None, Err(&error), Duration::ZERO)
                .await;
        }
        error
    }

    /// The result as a front end may show it: cleaned and redacted.
    fn sanitize(&self, outcome: Result<ToolOutput, ToolError>) -> Result<ToolOutput, ToolError> {
        let sanitizer = &self.config.sanitizer;
        outcome
            .map(|mut out| {
                out.content = sanitizer.sanitize_owned(std::mem::take(&mut out.content));
                if let Some(structured) = out.structured.as_mut() {
                    sanitizer.clean_value(structured);
                }
                out
            })
            .map_err(|e| self.sanitize_error(e))
    }

    fn sanitize_error(&self, mut e: ToolError) -> ToolError {
        e.message = self
            .config
            .sanitizer
            .sanitize_owned(std::mem::take(&mut e.message));
        e
    }

    /// Lookup, validation, policy resolution and every planned capability checked against
    /// the grant: what the call would do and what stands in its way, nothing run. The one
    /// source for `dispatch`, `--explain` and the approval prompt.
    pub async fn plan(
        &self,
        call: &ToolCall,
        session: &str,
        approvals: &SessionApprovals,
        cancel: &CancellationToken,
    ) -> Result<Plan, ToolError> {
        let entry = self.lookup(&call.name)?;
        let owner = &entry.spec.owner;
        if approvals.extensions().is_disabled(owner) {
            return Err(ToolError::denied(Decision::deny(
                format!("{}: {owner}", crate::session_extensions::RULE),
                format!(
                    "`{}` belongs to the extension `{owner}`, which is disabled for this session \
                     (`/enable {owner}` in chat turns it back on); nothing was run",
                    call.name
                ),
            )));
        }
        validate(&entry, &call.arguments)?;
        let policy = self.resolve(&entry);
        let scope = self.scope(&call.name, session, &policy, cancel);
        let host = self.host.scoped(&scope);
        let cx = self.context(&scope, "plan", Arc::clone(&host));
        let mut capabilities = Vec::new();
        for cap in entry.tool.planned_capabilities(&call.arguments, &cx) {
            let decision = host.check(&cap).await;
            capabilities.push((cap, decision));
        }
        let (approval, escalated) = self.approval_for_call(
            &entry,
            &policy,
            &call.arguments,
            approvals.allows(&call.name),
        );
        Ok(Plan {
            entry,
            policy,
            scope,
            host,
            cx,
            capabilities,
            approval,
            escalated,
            taint_gated: false,
        })
    }

    /// The plan, a denial stopping it, then approval; returns the plan to run (re-scoped
    /// when a person approved what the policy could not check) and who approved.
    async fn clear(&self, req: &CallRequest) -> Result<(Plan, String), Refusal> {
        let mut plan = self
            .plan(&req.call, &req.session_id, &req.approvals, &req.cancel)
            .await
            .map_err(|e| self.planning_refusal(&req.call.name, e))?;
        if let Some(denial) = plan.denial() {
            return Err(ToolError::denied(denial.clone()).into());
        }
        self.gate_sink(&mut plan, req)?;
        let approver = self.approve(&plan, req).await.map_err(|mut refusal| {
            // What made a person's answer necessary is the rule on record.
            *refusal.decided = (plan.layer(), plan.approval_needed().0.rule.clone());
            refusal
        })?;
        if plan.unchecked().is_some() {
            plan.scope.approved = true;
            plan.host = self.host.scoped(&plan.scope);
            plan.cx = self.context(&plan.scope, "plan", Arc::clone(&plan.host));
        }
        Ok((plan, approver))
    }

    /// A call [`Self::plan`] refused: the tool is not there (lookup) or its arguments do not
    /// fit its schema.
    fn planning_refusal(&self, name: &str, error: ToolError) -> Refusal {
        let layer = match error.kind {
            ErrorKind::InvalidArguments => Layer::Schema,
            // A tool that is listed but failed to plan has a schema that does not compile.
            ErrorKind::Failed if self.registry.get(name).is_some() => Layer::Schema,
            _ => Layer::Lookup,
        };
        let mut refusal = Refusal::from(error);
        refusal.decided.0 = layer;
        refusal
    }

    /// In a tainted session, a call that can carry data out (crate::taint::sink) is asked
    /// of a person or refused, as `security.tool_policies.TOOL.taint` says (ask by default),
    /// with a why that names what the session read and where this call sends it.
    fn gate_sink(&self, plan: &mut Plan, req: &CallRequest) -> Result<(), Refusal> {
        let taint = req.approvals.taint();
        if !taint.is_tainted() {
            return Ok(());
        }
        let Some(what) = crate::taint::sink(plan, &req.call.arguments) else {
            return Ok(());
        };
        let name = plan.entry.spec.name.clone();
        let rule = self.taint_rule(&name);
        let why = format!(
            "this session read untrusted content ({}); this call {what}",
            taint.described()
        );
        let rule_text = format!("{name}: taint {}", taint_rule_name(rule));
        match rule {
            TaintRule::Ignore => Ok(()),
            TaintRule::Deny => {
                let mut refusal = Refusal::from(ToolError::denied(Decision::deny(
                    rule_text,
                    format!("{why}, and security.tool_policies.{name}.taint is deny"),
                )));
                refusal.decided.0 = Layer::Taint;
                Err(refusal)
            }
            TaintRule::Ask => {
                // Asked of a person for this very call: neither the auto-approved list nor an
                // earlier "allow for the session" covers it.
                plan.approval = Decision::ask(rule_text, why);
                plan.escalated = true;
                plan.taint_gated = true;
                Ok(())
            }
        }
    }

    fn lookup(&self, name: &str) -> Result<Arc<Entry>, ToolError> {
        if !self.allows_tool(name) {
            return Err(ToolError::not_found(format!(
                "`{name}` is not among the tools of `{}`",
                self.place.label(&self.config.agent)
            )));
        }
        if let Some(entry) = self.registry.get(name) {
            return Ok(entry);
        }
        // A dynamic extension (an MCP server) may have gained the tool since the last look.
        self.registry.refresh();
        if let Some(entry) = self.registry.get(name) {
            return Ok(entry);
        }
        if let Some(why) = self.registry.unavailable(name) {
            return Err(ToolError::failed(why));
        }
        let suggestions = self.registry.suggestions(name);
        let hint = if suggestions.is_empty() {
            " (`tackle tools list` shows every tool)".to_string()
        } else {
            tackle_protocol::suggest::hint(&suggestions)
        };
        Err(ToolError::not_found(format!("unknown tool `{name}`{hint}")))
    }

    /// The tool's policy for this agent, narrowed to what each agent above it in the tree
    /// would get for the same tool: a child never runs under wider grants than its parent.
    fn resolve(&self, entry: &Entry) -> ResolvedPolicy {
        let mut policy = resolve(
            &entry.spec.name,
            &entry.default_policy,
            &self.config.security,
            self.config.agent_grants.as_ref(),
        );
        for (name, ceiling) in &self.place.ceilings {
            let above = resolve(
                &entry.spec.name,
                &entry.default_policy,
                &self.config.security,
                ceiling.as_ref(),
            );
            policy.grants = tackle_policy::grants::intersect(&above.grants, &policy.grants);
            policy.approval = policy.approval.max(above.approval);
            policy
                .sources
                .push(format!("narrowed to the grants of `{name}`"));
        }
        policy
    }

    fn scope(
        &self,
        tool: &str,
        session: &str,
        policy: &ResolvedPolicy,
        cancel: &CancellationToken,
    ) -> CallScope {
        CallScope {
            tool: tool.to_string(),
            session_id: session.to_string(),
            agent: self.config.agent.clone(),
            workspace: self.config.workspace.clone(),
            grants: policy.grants.clone(),
            cancel: cancel.child_token(),
            approved: false,
        }
    }

    fn context(&self, scope: &CallScope, channel: &str, host: Arc<dyn ToolHost>) -> ToolContext {
        let mut cx = ToolContext::new(scope, channel, host)
            .with_catalog(Arc::clone(&self.registry) as Arc<dyn tackle_protocol::ToolCatalog>);
        if let Some(agents) = &self.agents {
            cx = cx.with_agents(Arc::clone(agents));
        }
        cx.with_ancestors(self.place.ceilings.iter().map(|(n, _)| n.clone()).collect())
    }

    /// Returns who approved: `policy` when no one had to, `session` when an earlier "allow
    /// for the session" answer covers the call; on a no, who said it.
    async fn approve(&self, plan: &Plan, req: &CallRequest) -> Result<String, Refusal> {
        let name = plan.entry.spec.name.as_str();
        let (decision, escalated) = plan.approval_needed();
        if decision.verdict == Verdict::Allow {
            let by_session = req.approvals.allows(name)
                && self
                    .approval_for_call(&plan.entry, &plan.policy, &req.call.arguments, false)
                    .0
                    .verdict
                    != Verdict::Allow;
            return Ok(if by_session { "session" } else { "policy" }.to_string());
        }
        let summary = plan
            .summary()
            .unwrap_or_else(|| format!("{name} {}", self.summarize_args(&req.call.arguments)));
        let ask = ApprovalRequest {
            tool: name.to_string(),
            arguments: req.call.arguments.clone(),
            summary,
            grants: plan.policy.grants.clone(),
            why: decision.why.clone(),
            remedy: plan.remedy(),
        };
        match req.approver.ask_who(&ask).await {
            Ok((ApprovalAnswer::Once, who)) => Ok(who),
            Ok((ApprovalAnswer::ForSession, who)) => {
                if !escalated {
                    req.approvals.allow(name);
                }
                Ok(who)
            }
            Ok((ApprovalAnswer::Deny, who)) => Err(Refusal {
                approver: who.clone(),
                ..ToolError::declined(&who, format!("`{name}` was not approved by the user")).into()
            }),
            Err(unavailable) => Err(ToolError::needs_approval(unavailable.0).into()),
        }
    }

    /// The approval decision for these arguments, and whether the tool escalated it. A per-call
    /// escalation (e.g. `git push`) asks whatever the auto list or an earlier `a` says.
    fn approval_for_call(
        &self,
        entry: &Entry,
        policy: &ResolvedPolicy,
        args: &Value,
        allowed_for_session: bool,
    ) -> (Decision, bool) {
        let name = entry.spec.name.as_str();
        match entry.tool.approval_for(args) {
            // Raised only to `unless_auto_approved` (a schedule that plants recurring work):
            // decided as if the policy said so, so the auto list and an earlier `a` count.
            Some(ApprovalMode::UnlessAutoApproved)
                if ApprovalMode::UnlessAutoApproved > policy.approval =>
            {
                (
                    approval_decision(
                        name,
                        ApprovalMode::UnlessAutoApproved,
                        &self.config.security.auto_approved_tools,
                        allowed_for_session,
                    ),
                    false,
                )
            }
            Some(mode) if mode > policy.approval => (
                Decision::ask(
                    format!("{name}: approval {mode} for these arguments"),
                    format!("`{name}` with these arguments always needs approval"),
                ),
                true,
            ),
            _ => (
                approval_decision(
                    name,
                    policy.approval,
                    &self.config.security.auto_approved_tools,
                    allowed_for_session,
                ),
                false,
            ),
        }
    }

    /// The call's outcome and how long the tool ran (from when it could start).
    async fn execute(
        &self,
        plan: Plan,
        req: &CallRequest,
        arguments: Value,
    ) -> (Result<ToolOutput, ToolError>, Duration) {
        let writes: Vec<PathBuf> = plan
            .written_paths()
            .iter()
            .map(|p| plan.host.canonical(p))
            .collect();
        let Plan {
            entry,
            scope,
            mut cx,
            ..
        } = plan;
        let progress = req.progress.clone().map(|inner| {
            Arc::new(SanitizedProgress {
                inner,
                sanitizer: self.config.sanitizer.clone(),
            }) as Arc<dyn ProgressSink>
        });
        cx.channel.clone_from(&req.channel);
        cx.chat_id.clone_from(&req.chat_id);
        cx.tainted_by = req.approvals.taint().sources();
        let cx = cx
            .with_forms(req.approver.forms())
            .with_progress(progress)
            .with_approver(Arc::clone(&req.approver));
        let limit = entry.tool.timeout().unwrap_or(self.config.default_timeout);
        let cancelled = || {
            Err(ToolError::failed(format!(
                "`{}` was cancelled",
                entry.spec.name
            )))
        };
        // Writers of the same file go one at a time (see path_locks); waiting for another
        // call's edit is not this call's run time.
        let _writing = tokio::select! {
            biased;
            () = scope.cancel.cancelled() => return (cancelled(), Duration::ZERO),
            guards = lock_paths(&writes) => guards,
        };
        let running = Instant::now();
        let call = AssertUnwindSafe(entry.tool.call(arguments, &cx)).catch_unwind();
        let outcome = tokio::select! {
            biased;
            () = scope.cancel.cancelled() => cancelled(),
            res = tokio::time::timeout(limit, call) => match res {
                Ok(Ok(result)) => result,
                Ok(Err(_panic)) => Err(ToolError::failed(format!(
                    "`{}` failed unexpectedly (internal error); the call had no effect beyond what the tool did before failing",
                    entry.spec.name
                ))),
                Err(_elapsed) => {
                    scope.cancel.cancel();
                    Err(ToolError::timeout(format!(
                        "`{}` did not finish within {}s and was stopped",
                        entry.spec.name,
                        limit.as_secs_f64()
                    )))
                }
            },
        };
        (outcome, running.elapsed())
    }

    /// `--explain`: the plan a call would have in a fresh session, nothing run.
    pub async fn explain(&self, name: &str, arguments: &Value) -> Result<Explanation, ToolError> {
        let call = ToolCall {
            id: "explain".to_string(),
            name: name.to_string(),
            arguments: arguments.clone(),
        };
        let fresh = SessionApprovals::default();
        let plan = self
            .plan(&call, "", &fresh, &CancellationToken::new())
            .await?;
        let decision = plan.decision();
        let layer = plan.layer();
        let runs_a_command = plan
            .capabilities
            .iter()
            .any(|(c, _)| matches!(c, Capability::Shell { .. } | Capability::Exec { .. }));
        let sandbox = if runs_a_command {
            plan.host.sandbox_view()
        } else {
            None
        };
        let taint = crate::taint::sink(&plan, arguments).map(|sink| TaintView {
            sink,
            rule: taint_rule_name(self.taint_rule(name)),
        });
        Ok(Explanation {
            tool: name.to_string(),
            approval: plan.policy.approval,
            grants: plan.policy.grants,
            sources: plan.policy.sources,
            capabilities: plan.capabilities,
            approval_decision: plan.approval,
            decision,
            layer,
            sandbox,
            taint,
        })
    }

    /// `security.tool_policies.TOOL.taint`, `ask` when unset.
    fn taint_rule(&self, name: &str) -> TaintRule {
        self.config
            .security
            .tool_policies
            .get(name)
            .and_then(|p| p.taint)
            .unwrap_or_default()
    }

    fn summarize_args(&self, args: &Value) -> String {
        let text = self.config.sanitizer.clean(&args.to_string()).into_owned();
        preview(&text, 200)
    }

    /// The call's record as decided by `rule` of `layer`, its outcome [`RUNNING`]; `None` when
    /// nothing is audited. Taken while the arguments are still in `req`: their digest, and the
    /// redacted text whole (bounded) besides its summary, so replay re-plans the call itself.
    fn event(
        &self,
        req: &CallRequest,
        decision: Verdict,
        approver: String,
        (layer, rule): (Layer, String),
    ) -> Option<AuditEvent> {
        self.audit.as_ref()?;
        let redacted = self
            .config
            .sanitizer
            .clean(&req.call.arguments.to_string())
            .into_owned();
        let mut detail = tackle_store::AuditDetail {
            layer: layer.as_str().to_string(),
            args_digest: Some(tackle_store::json_digest(&req.call.arguments)),
            ..tackle_store::AuditDetail::default()
        };
        detail.keep_arguments(&redacted);
        Some(AuditEvent {
            session_id: req.session_id.clone(),
            // A child's record names its path in the tree (`default › researcher`).
            agent: self.place.label(&self.config.agent),
            caller: caller(&req.channel).to_string(),
            tool: req.call.name.clone(),
            args_summary: preview(&redacted, 200),
            decision,
            verdict: RUNNING.to_string(),
            rule,
            why: String::new(),
            approver,
            duration_ms: 0,
            detail,
        })
    }

    /// Writes the intent of an allowed call before it runs; returns the record to complete.
    async fn intent(
        &self,
        req: &CallRequest,
        plan: &Plan,
        approver: String,
    ) -> Option<(AuditEvent, Option<IntentId>)> {
        let audit = self.audit.as_ref()?;
        let decided = (plan.layer(), plan.decision().rule);
        let event = self.event(req, Verdict::Allow, approver, decided)?;
        let intent = audit.intent(&event).await;
        Some((event, intent))
    }

    /// Completes `event` with the outcome: as the intent's outcome when one was written, else
    /// as a whole record. The rule that decided stays on record, unless the host refused the
    /// call while it ran: then the sandbox's rule is the one that decided its outcome.
    async fn conclude(
        &self,
        mut event: AuditEvent,
        intent: Option<IntentId>,
        outcome: Result<&ToolOutput, &ToolError>,
        elapsed: Duration,
    ) {
        let Some(audit) = &self.audit else { return };
        let (verdict, why) = match outcome {
            Ok(out) if out.is_error => ("ok_error".to_string(), String::new()),
            Ok(_) => ("ok".to_string(), String::new()),
            Err(e) => {
                if let Some(d) = &e.decision {
                    if event.decision == Verdict::Allow {
                        // A person's no to a step of a running call, or the host's refusal.
                        let by = if e.is_declined() {
                            Layer::Approval
                        } else {
                            Layer::Sandbox
                        };
                        event.detail.layer = by.as_str().to_string();
                    }
                    event.rule.clone_from(&d.rule);
                }
                (e.kind.as_str().to_string(), e.message.clone())
            }
        };
        // What the model is handed: the result's text, or the error's message.
        let returned = match outcome {
            Ok(out) => out.content.as_str(),
            Err(e) => e.message.as_str(),
        };
        event.detail.result_digest = Some(tackle_store::text_digest(returned));
        event.verdict = verdict;
        event.why = why;
        event.duration_ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
        match intent {
            Some(id) => audit.finish(id, event).await,
            None => audit.record(event).await,
        }
    }
}

/// A call stopped before it ran, who stopped it when a person did, and the layer and rule
/// that stopped it (or made a person's answer necessary).
struct Refusal {
    error: ToolError,
    approver: String,
    /// Boxed: refusals travel in `Result`s, kept small (clippy::result_large_err).
    decided: Box<(Layer, String)>,
}

impl From<ToolError> for Refusal {
    /// A refusal by a rule of the policy (the error's decision names it); other layers say so.
    fn from(error: ToolError) -> Self {
        let rule = error
            .decision
            .as_ref()
            .map(|d| d.rule.clone())
            .unwrap_or_default();
        Self {
            error,
            approver: String::new(),
            decided: Box::new((Layer::Policy, rule)),
        }
    }
}

/// Who made the call, from the front end it came through: an agent's calls are its model's.
fn caller(channel: &str) -> &str {
    match channel {
        "agent" => "model",
        other => other,
    }
}

/// JSON-Schema validation with errors that name the field and the reason, so the model can fix
/// its call.
fn validate(entry: &Entry, args: &Value) -> Result<(), ToolError> {
    let validator = entry
        .validator()
        .map_err(|e| ToolError::failed(e.to_string()))?;
    // Most calls are valid: checking without collecting errors is the cheap path.
    if validator.is_valid(args) {
        return Ok(());
    }
    let problems: Vec<String> = validator
        .iter_errors(args)
        .take(5)
        .map(|err| {
            let path = err.instance_path().to_string();
            let field = if path.is_empty() {
                "arguments".to_string()
            } else {
                format!("`{}`", path.trim_start_matches('/').replace('/', "."))
            };
            format!("{field}: {}", bounded(&err))
        })
        .collect();
    if problems.is_empty() {
        return Ok(());
    }
    Err(ToolError::invalid_arguments(format!(
        "invalid arguments for `{}`: {}",
        entry.spec.name,
        problems.join("; ")
    )))
}

/// Longest argument value quoted back in a validation error; a 100 KB value would otherwise
/// be sent back to the model whole.
const MAX_QUOTED_CHARS: usize = 200;

/// The error with its value quoted up to [`MAX_QUOTED_CHARS`] and the full length said.
fn bounded(err: &jsonschema::ValidationError<'_>) -> String {
    let shown = err.instance().to_string();
    let n = shown.chars().count();
    if n <= MAX_QUOTED_CHARS {
        return err.to_string();
    }
    let head: String = shown.chars().take(MAX_QUOTED_CHARS).collect();
    err.masked_with(format!("{head}… ({n} characters)"))
        .to_string()
}

fn taint_rule_name(rule: TaintRule) -> &'static str {
    match rule {
        TaintRule::Ignore => "ignore",
        TaintRule::Ask => "ask",
        TaintRule::Deny => "deny",
    }
}
