//! The ReAct loop: ask the model, run every tool call it makes concurrently through the one
//! dispatcher, feed the results back in the order the model asked, repeat until it answers.

use crate::compaction::Compactor;
use crate::context::{trim_to_window, DEFAULT_CONTEXT_TOKENS};
use crate::dispatcher::{CallRequest, Dispatcher};
use crate::events::{emit, AgentEvent, DoneReason, EventSink};
use crate::session::Session;
use crate::tree::Budget;
use futures::StreamExt;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tackle_llm::{
    AssembledToolCall, Assembler, ChatRequest, Completion, LlmError, Provider, StreamEvent,
};
use tackle_protocol::message::Message;
use tackle_protocol::text::preview;
use tackle_protocol::{Approver, ToolCall, ToolError, ToolOutput};
use tokio_util::sync::CancellationToken;

/// The system prompt of an agent that configures none: where it works, that its tools are
/// guarded, and the date (models otherwise guess both). An agent's own prompt replaces it.
pub fn default_prompt(workspace: &std::path::Path) -> String {
    let today = time::OffsetDateTime::now_utc().date();
    format!(
        "You are an assistant working on the user's machine, in the workspace {}. \
         Every tool call passes a policy: a call may be denied, or wait for the user's approval. \
         When a call is denied, do not look for another way around the rule; say what you needed and why. \
         Today's date is {today} (UTC).",
        workspace.display()
    )
}

/// How one agent runs.
#[derive(Debug, Clone)]
pub struct LoopConfig {
    /// The model to ask, as the backend names it.
    pub model: String,
    /// The agent's own system prompt (`None`: the built-in default).
    pub system_prompt: Option<String>,
    /// A preset's `system_prompt`: appended to the prompt above, or to the built-in default
    /// when the agent has none of its own (`presets.NAME.system_prompt`).
    pub prompt_addition: Option<String>,
    /// Remembered data shown after the system prompt (the agent's pinned long-term memory,
    /// when its config asks for it), already wrapped in a block that labels it as data.
    pub memory_block: Option<String>,
    /// Model requests one user turn of a root may send, its whole tree's included (the last
    /// one is kept for the closing summary; see [`Budget`]).
    pub max_iterations: u32,
    /// The model's context window in tokens; older history is trimmed to fit.
    pub context_tokens: usize,
    /// Stream the answer (text deltas as they come).
    pub stream: bool,
    /// How much of each tool definition the model is shown (`agents[].tool_profile`).
    pub tool_profile: crate::ToolProfile,
    /// The iteration pool this loop draws from, shared with every agent it starts.
    pub budget: BudgetMode,
}

/// Whose iteration pool a loop draws from.
#[derive(Debug, Clone)]
pub enum BudgetMode {
    /// Its own: refilled to `max_iterations` at the start of each user turn (a root agent).
    PerTurn(Arc<Budget>),
    /// Its parent's: never refilled (a child in a tree).
    Shared(Arc<Budget>),
}

impl BudgetMode {
    /// The pool, whichever owns it.
    pub fn pool(&self) -> &Arc<Budget> {
        match self {
            Self::PerTurn(b) | Self::Shared(b) => b,
        }
    }
}

impl LoopConfig {
    /// Defaults: the built-in prompt, 25 iterations, the default context window, streaming, full
    /// tool definitions, a pool of its own.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            system_prompt: None,
            prompt_addition: None,
            memory_block: None,
            max_iterations: 25,
            context_tokens: DEFAULT_CONTEXT_TOKENS,
            stream: true,
            tool_profile: crate::ToolProfile::full(),
            budget: BudgetMode::PerTurn(Arc::new(Budget::new(25))),
        }
    }
}

/// Why a turn stopped before it could end normally.
#[derive(Debug, thiserror::Error)]
pub enum LoopError {
    /// The model provider failed (after the retries it makes itself).
    #[error(transparent)]
    Llm(#[from] LlmError),
    /// The session could not be read or written.
    #[error("session store: {0}")]
    Store(#[from] tackle_store::StoreError),
}

/// The final state of one user turn.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnOutcome {
    /// Why the turn ended.
    pub reason: DoneReason,
    /// The answer (at `max_iterations`, the closing summary); empty when there is none.
    pub text: String,
    /// Model requests the turn made.
    pub iterations: u32,
    /// Calls that ended denied by policy or needing approval, for the front end's exit code.
    pub denied: usize,
    /// Calls that ended needing an approval nobody gave.
    pub needs_approval: usize,
    /// Calls the person asked answered no to (not counted in `denied`).
    pub declined: usize,
}

/// A sequence of identical calls longer than this is stopped.
const LOOP_GUARD_REPEATS: usize = 3;

const COMPACTED_NOTE: &str = "(The conversation was compacted: the summary above replaces the earlier messages. Continue with the task.)";

const MAX_ITERATIONS_NOTE: &str = "You have used every tool iteration allowed for this task. Do not call tools. Summarise what you found and did, and say what remains undone.";

/// How a node that could not claim another model request ends: the text of its outcome (a
/// child's result for its parent) and what front ends report for the root.
pub const BUDGET_EXHAUSTED: &str =
    "iteration budget exhausted: the tree's shared `max_iterations` pool is used up";

/// One agent's ReAct loop over a session: model turn, tool calls through the dispatcher,
/// repeat until an answer or a limit.
pub struct AgentLoop {
    provider: Arc<dyn Provider>,
    dispatcher: Arc<Dispatcher>,
    config: LoopConfig,
    compactor: Option<Arc<Compactor>>,
    inbox: Option<Arc<crate::tree::Inbox>>,
}

/// Per-turn counters.
#[derive(Default)]
struct Tally {
    denied: usize,
    needs_approval: usize,
    declined: usize,
    last_signature: Option<String>,
    repeats: usize,
}

impl AgentLoop {
    /// A loop with no compactor or inbox until `with_*` adds them.
    pub fn new(
        provider: Arc<dyn Provider>,
        dispatcher: Arc<Dispatcher>,
        config: LoopConfig,
    ) -> Self {
        Self {
            provider,
            dispatcher,
            config,
            compactor: None,
            inbox: None,
        }
    }

    /// Take in background results for the session at safe points (between model turns).
    pub fn with_inbox(mut self, inbox: Arc<crate::tree::Inbox>) -> Self {
        self.inbox = Some(inbox);
        self
    }

    /// Adopt summaries the `compact` tool writes mid-turn.
    pub fn with_compactor(mut self, compactor: Arc<Compactor>) -> Self {
        self.compactor = Some(compactor);
        self
    }

    /// The dispatcher every tool call goes through.
    pub fn dispatcher(&self) -> &Arc<Dispatcher> {
        &self.dispatcher
    }

    /// The model provider it asks.
    pub fn provider(&self) -> &Arc<dyn Provider> {
        &self.provider
    }

    /// The settings it runs with.
    pub fn config(&self) -> &LoopConfig {
        &self.config
    }

    /// Run one user message to its end. Tool calls go through the dispatcher with `approver`;
    /// `cancel` (Ctrl-C) stops the model stream and every in-flight tool.
    pub async fn run_turn(
        &self,
        session: &mut Session,
        input: &str,
        approver: Arc<dyn Approver>,
        events: &EventSink,
        cancel: &CancellationToken,
    ) -> Result<TurnOutcome, LoopError> {
        self.turn(session, Some(input), approver, events, cancel)
            .await
    }

    /// Run a turn whose user message is already the session's last, stored with the
    /// session itself (a child's task, [`Session::create_child`]).
    pub async fn run_started_turn(
        &self,
        session: &mut Session,
        approver: Arc<dyn Approver>,
        events: &EventSink,
        cancel: &CancellationToken,
    ) -> Result<TurnOutcome, LoopError> {
        self.turn(session, None, approver, events, cancel).await
    }

    async fn turn(
        &self,
        session: &mut Session,
        input: Option<&str>,
        approver: Arc<dyn Approver>,
        events: &EventSink,
        cancel: &CancellationToken,
    ) -> Result<TurnOutcome, LoopError> {
        let mut tally = Tally::default();
        let mut iteration = 0;
        if let Some(inbox) = &self.inbox {
            // Already in the store (written while this session was idle): context only.
            for note in inbox.enter(session.id()) {
                session.remember(Message::user(note));
            }
        }
        let outcome = self
            .turn_steps(
                session,
                input,
                &approver,
                events,
                cancel,
                &mut tally,
                &mut iteration,
            )
            .await;
        if let Some(inbox) = &self.inbox {
            // Results that came in during the last model turn, written after its answer.
            for note in inbox.leave(session.id()) {
                session.push(Message::user(note)).await?;
            }
        }
        if let Err(e) = &outcome {
            // Readers of the event stream (`run --json`) always get a final event, with why.
            emit(
                events,
                AgentEvent::Done {
                    reason: DoneReason::Error,
                    text: String::new(),
                    iterations: iteration,
                    error: Some(e.to_string()),
                },
            );
        }
        outcome
    }

    #[allow(clippy::too_many_arguments)]
    async fn turn_steps(
        &self,
        session: &mut Session,
        input: Option<&str>,
        approver: &Arc<dyn Approver>,
        events: &EventSink,
        cancel: &CancellationToken,
        tally: &mut Tally,
        iteration: &mut u32,
    ) -> Result<TurnOutcome, LoopError> {
        if let Some(input) = input {
            session.push(Message::user(input)).await?;
        }
        if let BudgetMode::PerTurn(pool) = &self.config.budget {
            pool.reset(self.config.max_iterations);
        }
        // Every model request of this loop is claimed from the tree's pool before it is sent
        // (a claim is atomic: parallel siblings cannot both take the last unit).
        let pool = self.config.budget.pool();
        while pool.claim_step() {
            *iteration += 1;
            emit(events, AgentEvent::Iteration { n: *iteration });
            let Some(turn) = self.model_turn(session, true, events, cancel).await? else {
                return Ok(self.finish(
                    DoneReason::Cancelled,
                    String::new(),
                    *iteration,
                    tally,
                    events,
                ));
            };
            let calls = parse_calls(&turn.tool_calls);
            session
                .push(Message::assistant(
                    turn.text.clone(),
                    calls.iter().map(|c| c.call.clone()).collect(),
                ))
                .await?;
            if calls.is_empty() {
                return Ok(self.finish(DoneReason::Answer, turn.text, *iteration, tally, events));
            }
            if tally.repeated(&calls) {
                let note = format!(
                    "Stopped: the same tool call was made {LOOP_GUARD_REPEATS} times in a row with the same arguments."
                );
                for c in &calls {
                    session
                        .push(Message::tool_result(&c.call.id, note.clone(), true))
                        .await?;
                }
                return Ok(self.finish(DoneReason::LoopGuard, note, *iteration, tally, events));
            }
            let results = self
                .run_calls(&calls, session, approver, events, cancel, tally)
                .await;
            for (c, (content, is_error)) in calls.iter().zip(results) {
                session
                    .push(Message::tool_result(&c.call.id, content, is_error))
                    .await?;
            }
            if let Some(inbox) = &self.inbox {
                for note in inbox.drain(session.id()) {
                    session.push(Message::user(note)).await?;
                }
            }
            if let Some(summary) = self
                .compactor
                .as_ref()
                .and_then(|c| c.take_pending(session.id()))
            {
                session.adopt_summary(summary);
                session.push(Message::user(COMPACTED_NOTE)).await?;
            }
            if cancel.is_cancelled() {
                return Ok(self.finish(
                    DoneReason::Cancelled,
                    String::new(),
                    *iteration,
                    tally,
                    events,
                ));
            }
        }
        // Only the root asks for a closing summary, with the unit the pool keeps for it; a
        // child (or a root whose pool is somehow empty) sends nothing more and says why.
        let closing = matches!(self.config.budget, BudgetMode::PerTurn(_)) && pool.claim_closing();
        if !closing {
            return Ok(self.finish(
                DoneReason::MaxIterations,
                BUDGET_EXHAUSTED.to_string(),
                *iteration,
                tally,
                events,
            ));
        }
        session.push(Message::user(MAX_ITERATIONS_NOTE)).await?;
        let text = match self.model_turn(session, false, events, cancel).await? {
            Some(turn) => {
                session
                    .push(Message::assistant(turn.text.clone(), Vec::new()))
                    .await?;
                turn.text
            }
            None => String::new(),
        };
        Ok(self.finish(DoneReason::MaxIterations, text, *iteration, tally, events))
    }

    fn finish(
        &self,
        reason: DoneReason,
        text: String,
        iterations: u32,
        tally: &Tally,
        events: &EventSink,
    ) -> TurnOutcome {
        let error = match reason {
            DoneReason::Answer => None,
            DoneReason::MaxIterations => Some(BUDGET_EXHAUSTED.to_string()),
            DoneReason::LoopGuard => Some(text.clone()),
            DoneReason::Cancelled => Some("cancelled".to_string()),
            DoneReason::Error => Some(text.clone()),
        };
        emit(
            events,
            AgentEvent::Done {
                reason,
                text: text.clone(),
                iterations,
                error,
            },
        );
        TurnOutcome {
            reason,
            text,
            iterations,
            denied: tally.denied,
            needs_approval: tally.needs_approval,
            declined: tally.declined,
        }
    }

    /// One model call, streamed to `events`. `None` when cancelled.
    async fn model_turn(
        &self,
        session: &Session,
        with_tools: bool,
        events: &EventSink,
        cancel: &CancellationToken,
    ) -> Result<Option<Completion>, LoopError> {
        // The provider's waiting and retrying notices reach the front end as events.
        let sink = events.clone();
        let request =
            self.request(session, with_tools)
                .with_progress(tackle_llm::ProgressHook::new(move |p| {
                    if let Some(event) = AgentEvent::from_progress(p) {
                        emit(&sink, event)
                    }
                }));
        let stream = tokio::select! {
            () = cancel.cancelled() => return Ok(None),
            s = self.provider.stream(request) => s?,
        };
        let mut stream = stream;
        let mut assembler = Assembler::default();
        loop {
            let next = tokio::select! {
                () = cancel.cancelled() => return Ok(None),
                n = stream.next() => n,
            };
            let Some(event) = next else {
                return Err(LlmError::Protocol {
                    backend: self.provider.name().to_string(),
                    message: "the stream ended without a stop event".to_string(),
                }
                .into());
            };
            let event = event?;
            match &event {
                StreamEvent::TextDelta(t) => {
                    emit(events, AgentEvent::TextDelta { text: t.clone() })
                }
                StreamEvent::Usage(u) => emit(
                    events,
                    AgentEvent::Usage {
                        input_tokens: u.input_tokens,
                        output_tokens: u.output_tokens,
                    },
                ),
                _ => {}
            }
            if let Some(done) = assembler.push(event) {
                return Ok(Some(done));
            }
        }
    }

    fn request(&self, session: &Session, with_tools: bool) -> ChatRequest {
        let mut messages = Vec::new();
        let mut prompt = match &self.config.system_prompt {
            Some(own) => own.clone(),
            None => default_prompt(&self.dispatcher.config().workspace),
        };
        if let Some(addition) = self.config.prompt_addition.as_deref() {
            prompt.push_str("\n\n");
            prompt.push_str(addition);
        }
        if let Some(block) = &self.config.memory_block {
            prompt.push_str("\n\n");
            prompt.push_str(block);
        }
        messages.push(Message::system(prompt));
        messages.extend(session.context());
        let mut req = ChatRequest::new(
            self.config.model.clone(),
            trim_to_window(messages, self.config.context_tokens),
        );
        req.stream = self.config.stream;
        if with_tools {
            self.dispatcher.registry().refresh();
            // A child is shown only the tools it may call.
            let specs: Vec<_> = self
                .dispatcher
                .registry()
                .entries()
                .into_iter()
                .filter(|e| self.dispatcher.allows_tool(&e.spec.name))
                // Nor the tools of an extension disabled for this session.
                .filter(|e| !session.approvals().extensions().is_disabled(&e.spec.owner))
                .map(|e| e.spec.clone())
                .collect();
            req.tools = crate::profiles::render(&specs, &self.config.tool_profile);
        }
        req
    }

    /// Run every call concurrently; results come back in the order the model asked.
    async fn run_calls(
        &self,
        calls: &[ParsedCall],
        session: &Session,
        approver: &Arc<dyn Approver>,
        events: &EventSink,
        cancel: &CancellationToken,
        tally: &mut Tally,
    ) -> Vec<(String, bool)> {
        let futures = calls
            .iter()
            .map(|c| self.run_one(c, session, approver, events, cancel));
        let outcomes = futures::future::join_all(futures).await;
        outcomes
            .into_iter()
            .map(|outcome| match outcome {
                Ok(out) => (out.content, out.is_error),
                Err(e) => {
                    match e.kind {
                        tackle_protocol::ErrorKind::Denied if e.is_declined() => {
                            tally.declined += 1
                        }
                        tackle_protocol::ErrorKind::Denied => tally.denied += 1,
                        tackle_protocol::ErrorKind::NeedsApproval => tally.needs_approval += 1,
                        _ => {}
                    }
                    (format!("error ({}): {}", e.kind, e.message), true)
                }
            })
            .collect()
    }

    async fn run_one(
        &self,
        c: &ParsedCall,
        session: &Session,
        approver: &Arc<dyn Approver>,
        events: &EventSink,
        cancel: &CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        emit(
            events,
            AgentEvent::ToolCallStarted {
                id: c.call.id.clone(),
                name: c.call.name.clone(),
                arguments: c.call.arguments.clone(),
            },
        );
        let (channel, chat_id) = session.origin().unwrap_or(("agent", ""));
        let req = CallRequest::new(c.call.clone(), Arc::clone(approver))
            .session(session.id())
            .approvals(Arc::clone(session.approvals()))
            .channel(channel)
            .chat_id(chat_id)
            .cancel(cancel.child_token());
        let (outcome, ran_for) = match &c.parse_error {
            // Arguments that are not JSON never reach the pipeline, but the refusal is a
            // decision like any other and goes to the audit log.
            Some(e) => (
                Err(self.dispatcher.refuse(&req, e.clone()).await),
                Duration::ZERO,
            ),
            // The tool's own run time: waiting for a person's answer is not the tool's.
            None => self.dispatcher.dispatch_timed(req).await,
        };
        let (ok, error_kind, text) = match &outcome {
            Ok(out) => (!out.is_error, None, out.content.as_str()),
            Err(e) => (false, Some(e.kind), e.message.as_str()),
        };
        emit(
            events,
            AgentEvent::ToolCallFinished {
                id: c.call.id.clone(),
                name: c.call.name.clone(),
                ok,
                error_kind,
                preview: preview(text, 300),
                duration_ms: u64::try_from(ran_for.as_millis()).unwrap_or(u64::MAX),
            },
        );
        outcome
    }
}

impl Tally {
    /// True when this batch repeats the previous one exactly for the `LOOP_GUARD_REPEATS`th time.
    fn repeated(&mut self, calls: &[ParsedCall]) -> bool {
        let signature = calls
            .iter()
            .map(|c| format!("{}:{}", c.call.name, c.call.arguments))
            .collect::<Vec<_>>()
            .join("\n");
        if self.last_signature.as_deref() == Some(signature.as_str()) {
            self.repeats += 1;
        } else {
            self.last_signature = Some(signature);
            self.repeats = 1;
        }
        self.repeats >= LOOP_GUARD_REPEATS
    }
}

/// A model tool call with its arguments parsed, or the error the model gets back instead.
struct ParsedCall {
    call: ToolCall,
    parse_error: Option<ToolError>,
}

/// Malformed argument JSON becomes an `invalid_arguments` result the model can fix, never
/// `null` arguments. Empty arguments mean `{}`.
fn parse_calls(raw: &[AssembledToolCall]) -> Vec<ParsedCall> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    raw.iter()
        .enumerate()
        .map(|(i, c)| {
            // Some servers reuse or omit ids; results must map back one-to-one.
            let mut id = if c.id.is_empty() { format!("call_{i}") } else { c.id.clone() };
            let n = seen.entry(id.clone()).or_insert(0);
            *n += 1;
            if *n > 1 {
                id = format!("{id}_{n}");
            }
            let trimmed = c.arguments_raw.trim();
            let parsed: Result<Value, _> = if trimmed.is_empty() { Ok(Value::Object(Default::default())) } else { serde_json::from_str(trimmed) };
            match parsed {
                Ok(arguments) => ParsedCall { call: ToolCall { id, name: c.name.clone(), arguments }, parse_error: None },
                Err(e) => ParsedCall {
                    call: ToolCall { id, name: c.name.clone(), arguments: Value::String(preview(trimmed, 200)) },
                    parse_error: Some(ToolError::invalid_arguments(format!(
                        "the arguments for `{}` are not valid JSON ({e}); send one JSON object matching the tool's schema",
                        c.name
                    ))),
                },
            }
        })
        .collect()
}
