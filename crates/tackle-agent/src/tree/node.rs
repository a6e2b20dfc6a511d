//! One agent of a tree, as the agent tools see it ([`AgentServices`]): it starts children
//! one level below itself, under its own limits, ceilings and tools.

use super::approver::Labelled;
use super::scope::{child_tools, without_spawning};
use super::{Budget, OpenTask, Tree, TreePlace};
use crate::agent_loop::{BudgetMode, BUDGET_EXHAUSTED};
use crate::events::AgentEvent;
use crate::{AgentLoop, DispatcherConfig, DoneReason, LoopConfig, Session};
use async_trait::async_trait;
use std::collections::BTreeSet;
use std::sync::Arc;
use tackle_llm::Provider;
use tackle_protocol::config::{AgentConfig, PresetConfig, WorkerConfig};
use tackle_protocol::message::Message;
use tackle_protocol::{
    AgentServices, ChildKind, Decision, Grants, SpawnRequest, SpawnResult, ToolContext, ToolError,
};
use tackle_store::{Entry, EntryKind, SessionId};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// One agent of a tree as the agent tools reach it: starts children one level below itself,
/// under its limits, grant ceilings and tools.
pub struct TreeNode {
    tree: Arc<Tree>,
    /// The config this node runs as: a peer's own, or (for a worker or background task)
    /// its parent's, whose `workers:` it resolves.
    agent: Option<AgentConfig>,
    /// The agent identity its calls run as (memory, audit): a worker's is its parent's.
    identity: String,
    overlay: Option<Grants>,
    place: TreePlace,
    depth: u32,
    budget: Arc<Budget>,
    /// Its children running now (`max_concurrent_children`).
    running: Arc<Semaphore>,
    /// A background task or a `delegate` child: starts nothing.
    leaf: bool,
    model: String,
    /// The backend `provider` was made from, when a config entry named it.
    backend: Option<String>,
    provider: Arc<dyn Provider>,
    stream: bool,
    /// What this node's model is shown of each tool; its children inherit it unless their
    /// template, agent or preset names another.
    tool_profile: crate::ToolProfile,
}

/// The model a child talks to.
struct Chosen {
    provider: Arc<dyn Provider>,
    backend: Option<String>,
    model: String,
    /// The backend's `stream` setting.
    stream: bool,
}

/// What one child will be, before anything is created.
struct ChildPlan {
    label: String,
    agent: Option<AgentConfig>,
    identity: String,
    overlay: Option<Grants>,
    tools: BTreeSet<String>,
    prompt: Option<String>,
    /// Presets' `system_prompt`s, appended to `prompt` (or to the default prompt).
    prompt_addition: Option<String>,
    model: String,
    backend: Option<String>,
    provider: Arc<dyn Provider>,
    stream: bool,
    tool_profile: crate::ToolProfile,
    leaf: bool,
}

const GENERIC_ROLE_PROMPT: &str = "You are a {role}. Complete the task you are given with the tools you have, then report the result plainly.";

impl TreeNode {
    pub(super) fn root(tree: Arc<Tree>, budget: Arc<Budget>) -> Arc<Self> {
        let agent = tree.settings.agent.clone();
        let identity = agent
            .as_ref()
            .map(|a| a.name.clone())
            .unwrap_or_else(|| "default".into());
        Arc::new(Self {
            overlay: agent.as_ref().map(|a| a.grants.clone()),
            running: Arc::new(Semaphore::new(tree.max_children)),
            model: tree.settings.model.clone(),
            backend: tree.settings.backend.clone(),
            provider: Arc::clone(&tree.settings.provider),
            stream: tree.settings.stream,
            tool_profile: tree.settings.tool_profile.clone(),
            tree,
            agent,
            identity,
            place: TreePlace::default(),
            depth: 0,
            budget,
            leaf: false,
        })
    }

    /// The iteration pool this node draws from (the whole tree's).
    pub fn budget(&self) -> &Arc<Budget> {
        &self.budget
    }

    fn label(&self) -> String {
        self.place.label(&self.identity)
    }

    fn path(&self) -> Vec<String> {
        if self.place.path.is_empty() {
            vec![self.identity.clone()]
        } else {
            self.place.path.clone()
        }
    }

    /// The tools this node may call.
    fn scope(&self) -> Result<BTreeSet<String>, ToolError> {
        if let Some(t) = &self.place.tools {
            return Ok(t.clone());
        }
        let root = self.root_dispatcher()?;
        Ok(root.registry().names().into_iter().collect())
    }

    fn root_dispatcher(&self) -> Result<Arc<crate::Dispatcher>, ToolError> {
        self.tree
            .root
            .get()
            .and_then(|w| w.upgrade())
            .ok_or_else(|| ToolError::failed("the agent tree is not running"))
    }

    fn check_limits(&self) -> Result<(), ToolError> {
        if self.leaf {
            return Err(ToolError::denied(Decision::deny(
                "agents.spawn",
                format!(
                    "`{}` is a background task or delegated role and cannot start agents of its own",
                    self.label()
                ),
            )));
        }
        let depth = self.depth + 1;
        if depth > self.tree.max_depth {
            return Err(ToolError::denied(Decision::deny(
                "agents.max_depth",
                format!(
                    "a child of `{}` would be {depth} levels deep, beyond `max_depth` ({})",
                    self.label(),
                    self.tree.max_depth
                ),
            )));
        }
        Ok(())
    }

    fn plan(&self, req: &SpawnRequest) -> Result<ChildPlan, ToolError> {
        let parent_scope = self.scope()?;
        let root = self.root_dispatcher()?;
        let requested = req.tools.as_deref();
        // Refused before anything is created, like an unknown worker or tool.
        let preset = self.preset(req.preset.as_deref())?;
        let mut plan = match &req.kind {
            ChildKind::Worker(name) => {
                let template = self.worker(name).ok_or_else(|| self.unknown_worker(name))?;
                let tools = child_tools(name, &parent_scope, Some(&template.tools), requested)?;
                self.worker_plan(name, Some(template), tools)?
            }
            ChildKind::Role(role) => match self.worker(role) {
                Some(template) => {
                    let tools = child_tools(role, &parent_scope, Some(&template.tools), requested)?;
                    let mut p = self.worker_plan(
                        role,
                        Some(template),
                        without_spawning(tools, root.registry()),
                    )?;
                    p.leaf = true;
                    p
                }
                None => {
                    let tools = child_tools(role, &parent_scope, None, requested)?;
                    let mut p =
                        self.worker_plan(role, None, without_spawning(tools, root.registry()))?;
                    p.prompt = Some(GENERIC_ROLE_PROMPT.replace("{role}", role));
                    p.leaf = true;
                    p
                }
            },
            ChildKind::Agent(name) => self.peer_plan(name, &parent_scope, requested)?,
            ChildKind::Background => {
                let label = req.label.clone().unwrap_or_else(|| cut(&req.task, 30));
                let tools = without_spawning(parent_scope, root.registry());
                let mut p = self.worker_plan(&label, None, tools)?;
                p.prompt = self.agent.as_ref().and_then(|a| a.system_prompt.clone());
                p.leaf = true;
                p
            }
        };
        if let Some((name, preset)) = preset {
            self.apply_preset(&mut plan, name, preset, req.model.as_deref())?;
        }
        if let Some(model) = &req.model {
            plan.model = model.clone();
        }
        // A role or label may come from the model: it is shown in approval prompts and the
        // audit log, so no control characters (terminal escapes) and a bounded length.
        plan.label = cut(&plan.label, 60);
        Ok(plan)
    }

    fn worker(&self, name: &str) -> Option<&WorkerConfig> {
        self.agent.as_ref()?.workers.iter().find(|w| w.name == name)
    }

    fn unknown_worker(&self, name: &str) -> ToolError {
        let known: Vec<String> = self
            .agent
            .iter()
            .flat_map(|a| a.workers.iter().map(|w| format!("`{}`", w.name)))
            .collect();
        ToolError::not_found(format!(
            "`{}` has no worker `{name}` under `workers:`; {}",
            self.label(),
            if known.is_empty() {
                "it has none".to_string()
            } else {
                format!("it has {}", known.join(", "))
            }
        ))
    }

    /// A worker runs as its parent (no identity of its own), with the template's prompt,
    /// backend, model and tool profile where set (its own preset's already folded in at
    /// load), and its preset's prompt addition.
    fn worker_plan(
        &self,
        label: &str,
        template: Option<&WorkerConfig>,
        tools: BTreeSet<String>,
    ) -> Result<ChildPlan, ToolError> {
        let llm = self.provider_for(
            label,
            template.and_then(|t| t.backend.as_deref()),
            template.and_then(|t| t.model.as_deref()),
        )?;
        Ok(ChildPlan {
            label: label.to_string(),
            agent: self.agent.clone(),
            identity: self.identity.clone(),
            overlay: self.overlay.clone(),
            tools,
            prompt: template
                .and_then(|t| t.system_prompt.clone())
                .or_else(|| self.agent.as_ref().and_then(|a| a.system_prompt.clone())),
            prompt_addition: template.and_then(|t| self.preset_prompt(t.preset.as_deref())),
            model: llm.model,
            backend: llm.backend,
            provider: llm.provider,
            stream: llm.stream,
            tool_profile: self.profile(template.and_then(|t| t.tool_profile.as_deref()))?,
            leaf: false,
        })
    }

    /// The preset the `preset` argument names; an unknown name is `invalid_arguments`
    /// listing the configured ones.
    fn preset<'a>(
        &'a self,
        name: Option<&'a str>,
    ) -> Result<Option<(&'a str, &'a PresetConfig)>, ToolError> {
        let Some(name) = name else {
            return Ok(None);
        };
        let presets = &self.tree.settings.config.presets;
        match presets.get(name) {
            Some(p) => Ok(Some((name, p))),
            None => {
                let known: Vec<String> = presets.keys().map(|k| format!("`{k}`")).collect();
                Err(ToolError::invalid_arguments(format!(
                    "unknown preset `{}`; {}",
                    cut(name, 60),
                    if known.is_empty() {
                        "no presets are configured (available: none); add one under `presets:` or leave `preset` out".to_string()
                    } else {
                        format!("available: {}", known.join(", "))
                    }
                )))
            }
        }
    }

    /// The `system_prompt` of the preset an entry names (checked at load).
    fn preset_prompt(&self, name: Option<&str>) -> Option<String> {
        let presets = &self.tree.settings.config.presets;
        name.and_then(|n| presets.get(n))
            .and_then(|p| p.system_prompt.clone())
    }

    /// The compiled profile `name` names, or this node's own.
    fn profile(&self, name: Option<&str>) -> Result<crate::ToolProfile, ToolError> {
        let Some(name) = name else {
            return Ok(self.tool_profile.clone());
        };
        let config = self
            .tree
            .settings
            .config
            .tool_profiles
            .get(name)
            .ok_or_else(|| {
                ToolError::failed(format!("no profile named `{name}` under `tool_profiles:`"))
            })?;
        crate::ToolProfile::compile(name, config)
            .map_err(|e| ToolError::failed(format!("tool profile `{name}`: {e}")))
    }

    /// The `preset` argument over a planned child: its backend, model and tool profile
    /// replace the entry's, its prompt is appended; the call's own `model` still wins.
    /// Nothing here touches grants or tools, so the child stays as narrow as planned.
    fn apply_preset(
        &self,
        plan: &mut ChildPlan,
        name: &str,
        preset: &PresetConfig,
        call_model: Option<&str>,
    ) -> Result<(), ToolError> {
        if preset.backend.is_some() || preset.model.is_some() {
            let backend = preset.backend.as_deref().or(plan.backend.as_deref());
            // A backend the preset switches to gets its own model list's first entry, not a
            // model meant for another backend.
            let model = call_model
                .or(preset.model.as_deref())
                .or_else(|| preset.backend.is_none().then_some(plan.model.as_str()));
            let current = Chosen {
                provider: Arc::clone(&plan.provider),
                backend: plan.backend.clone(),
                model: plan.model.clone(),
                stream: plan.stream,
            };
            let llm =
                self.resolve_provider(&format!("preset `{name}`"), backend, model, current)?;
            plan.provider = llm.provider;
            plan.backend = llm.backend;
            plan.model = llm.model;
            plan.stream = llm.stream;
        }
        if let Some(profile) = preset.tool_profile.as_deref() {
            plan.tool_profile = self.profile(Some(profile))?;
        }
        if let Some(addition) = &preset.system_prompt {
            plan.prompt_addition = Some(match plan.prompt_addition.take() {
                Some(before) => format!("{before}\n\n{addition}"),
                None => addition.clone(),
            });
        }
        Ok(())
    }

    /// A peer runs as itself: its prompt, model, grants (narrowed by the ceilings) and only
    /// the parent's tools its own extensions enable.
    fn peer_plan(
        &self,
        name: &str,
        parent_scope: &BTreeSet<String>,
        requested: Option<&[String]>,
    ) -> Result<ChildPlan, ToolError> {
        let config = &self.tree.settings.config;
        let Some(peer) = config.agents.iter().find(|a| a.name == name) else {
            let known: Vec<String> = config
                .agents
                .iter()
                .map(|a| format!("`{}`", a.name))
                .collect();
            return Err(ToolError::not_found(format!(
                "no agent `{name}` under `agents:`; configured: {}",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            )));
        };
        let root = self.root_dispatcher()?;
        let enabled: BTreeSet<String> = root
            .registry()
            .specs()
            .into_iter()
            .filter(|s| parent_scope.contains(&s.name) && peer.extensions.is_enabled(&s.owner))
            .map(|s| s.name)
            .collect();
        let tools = child_tools(name, &enabled, None, requested)?;
        let llm = self.provider_for(name, peer.backend.as_deref(), peer.model.as_deref())?;
        Ok(ChildPlan {
            label: name.to_string(),
            agent: Some(peer.clone()),
            identity: peer.name.clone(),
            overlay: Some(peer.grants.clone()),
            tools,
            prompt: peer.system_prompt.clone(),
            prompt_addition: self.preset_prompt(peer.preset.as_deref()),
            model: llm.model,
            backend: llm.backend,
            provider: llm.provider,
            stream: llm.stream,
            tool_profile: self.profile(peer.tool_profile.as_deref())?,
            leaf: false,
        })
    }

    /// A child's provider, backend and model: this node's provider when `backend` is unset
    /// or the same as this node's, else one made from `backends:` (whose first model is the
    /// default there); `model` unset keeps this node's model on its own backend.
    fn provider_for(
        &self,
        who: &str,
        backend: Option<&str>,
        model: Option<&str>,
    ) -> Result<Chosen, ToolError> {
        let current = Chosen {
            provider: Arc::clone(&self.provider),
            backend: self.backend.clone(),
            model: self.model.clone(),
            stream: self.stream,
        };
        self.resolve_provider(&format!("`{who}`"), backend, model, current)
    }

    /// [`TreeNode::provider_for`] against a given current provider, backend and model.
    fn resolve_provider(
        &self,
        who: &str,
        backend: Option<&str>,
        model: Option<&str>,
        current: Chosen,
    ) -> Result<Chosen, ToolError> {
        match backend {
            Some(b) if Some(b) != current.backend.as_deref() => {
                let config = &self.tree.settings.config;
                let backend = config
                    .backends
                    .iter()
                    .find(|c| c.name == b)
                    .ok_or_else(|| {
                        ToolError::failed(format!(
                            "{who} names backend `{b}`, which is not configured"
                        ))
                    })?;
                let provider = tackle_llm::provider_from_config(backend)
                    .map_err(|e| ToolError::failed(format!("{who}: {e}")))?;
                let model = model
                    .map(str::to_string)
                    .or_else(|| backend.models.first().map(|m| m.name.clone()))
                    .ok_or_else(|| {
                        ToolError::failed(format!(
                            "{who}: backend `{b}` lists no models and no `model` is set"
                        ))
                    })?;
                Ok(Chosen {
                    provider,
                    backend: Some(b.to_string()),
                    model,
                    stream: backend.stream.unwrap_or(true),
                })
            }
            _ => Ok(Chosen {
                model: model.map_or(current.model.clone(), str::to_string),
                ..current
            }),
        }
    }

    /// The child node and the loop it runs in.
    fn child(&self, plan: ChildPlan) -> Result<(Arc<TreeNode>, AgentLoop), ToolError> {
        let root = self.root_dispatcher()?;
        let mut path = self.path();
        path.push(plan.label.clone());
        let mut ceilings = self.place.ceilings.clone();
        ceilings.push((self.identity.clone(), self.overlay.clone()));
        let place = TreePlace {
            path,
            ceilings,
            tools: Some(plan.tools),
        };
        // This turn's pool: a later root turn starts a new one and gives this child nothing.
        let budget = self.budget.pinned();
        let node = Arc::new(TreeNode {
            tree: Arc::clone(&self.tree),
            agent: plan.agent,
            identity: plan.identity.clone(),
            overlay: plan.overlay.clone(),
            place: place.clone(),
            depth: self.depth + 1,
            budget: Arc::clone(&budget),
            running: Arc::new(Semaphore::new(self.tree.max_children)),
            leaf: plan.leaf,
            model: plan.model.clone(),
            backend: plan.backend.clone(),
            provider: Arc::clone(&plan.provider),
            stream: plan.stream,
            tool_profile: plan.tool_profile.clone(),
        });
        let config = DispatcherConfig {
            agent: plan.identity,
            agent_grants: plan.overlay,
            ..root.config().clone()
        };
        let dispatcher =
            Arc::new(root.child(config, place, Arc::clone(&node) as Arc<dyn AgentServices>));
        let s = &self.tree.settings;
        let mut lc = LoopConfig::new(plan.model);
        lc.system_prompt = plan.prompt;
        lc.prompt_addition = plan.prompt_addition;
        lc.stream = plan.stream;
        lc.tool_profile = plan.tool_profile;
        lc.context_tokens = s.context_tokens;
        lc.budget = BudgetMode::Shared(budget);
        let mut agent_loop =
            AgentLoop::new(plan.provider, dispatcher, lc).with_inbox(Arc::clone(self.tree.inbox()));
        if let Some(c) = &s.compactor {
            agent_loop = agent_loop.with_compactor(Arc::clone(c));
        }
        Ok((node, agent_loop))
    }
}

/// The first `n` characters of `s`, on one line.
fn cut(s: &str, n: usize) -> String {
    let line: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    line.trim().chars().take(n).collect()
}

fn task_text(req: &SpawnRequest) -> String {
    match &req.context {
        Some(c) if !c.trim().is_empty() => format!("{}\n\nContext:\n{c}", req.task),
        _ => req.task.clone(),
    }
}

/// The error of a node that could not claim a model request: `what` stopped, and why.
fn exhausted(what: &str) -> ToolError {
    ToolError::failed(format!("{what}: {BUDGET_EXHAUSTED}"))
}

/// A finished child's outcome as the caller's tool result.
fn outcome_text(
    label: &str,
    out: Result<crate::TurnOutcome, crate::LoopError>,
) -> Result<String, ToolError> {
    let out = out.map_err(|e| ToolError::failed(format!("`{label}` failed: {e}")))?;
    if out.needs_approval > 0 {
        return Err(ToolError::needs_approval(format!(
            "`{label}`: {} call(s) needed approval that no one could give; its answer: {}",
            out.needs_approval, out.text
        )));
    }
    match out.reason {
        DoneReason::Answer => Ok(out.text),
        // Not an answer: the parent's model must not read the child's work as done.
        DoneReason::MaxIterations => Err(exhausted(&format!("`{label}` stopped"))),
        DoneReason::Cancelled => Err(ToolError::failed(format!("`{label}` was cancelled"))),
        DoneReason::LoopGuard | DoneReason::Error => {
            Err(ToolError::failed(format!("`{label}` failed: {}", out.text)))
        }
    }
}

#[async_trait]
impl AgentServices for TreeNode {
    async fn compact(&self, cx: &ToolContext) -> Result<String, ToolError> {
        let Some(c) = &self.tree.settings.compactor else {
            return Err(ToolError::failed("this agent cannot compact its session"));
        };
        // The summary is a model request the agent chose to make (one tool turn may ask for
        // many in parallel), so it is claimed from the tree's pool like a tool turn.
        if !self.budget.claim_step() {
            return Err(exhausted("cannot compact"));
        }
        c.compact(cx).await
    }

    fn can_spawn(&self, _cx: &ToolContext) -> Result<(), ToolError> {
        self.check_limits()
    }

    fn max_concurrent_children(&self) -> usize {
        self.tree.max_children
    }

    async fn spawn(&self, cx: &ToolContext, req: SpawnRequest) -> Result<SpawnResult, ToolError> {
        self.check_limits()?;
        // A child could not claim even its first request: refuse before creating its session.
        if !self.budget.has_steps() {
            return Err(exhausted(&format!(
                "`{}` cannot start a child",
                self.label()
            )));
        }
        let plan = self.plan(&req)?;
        let permit = Arc::clone(&self.running).try_acquire_owned().map_err(|_| {
            ToolError::denied(Decision::deny(
                "agents.max_concurrent_children",
                format!(
                    "`{}` already runs {} children, the `max_concurrent_children` limit",
                    self.label(),
                    self.tree.max_children
                ),
            ))
        })?;
        let label = plan.label.clone();
        let identity = plan.identity.clone();
        let (node, agent_loop) = self.child(plan)?;
        let path = node.label();
        let task = task_text(&req);
        let mut session = Session::create_child(
            self.tree.settings.store.clone(),
            &identity,
            &cx.session_id,
            &path,
            &task,
        )
        .await
        .map_err(|e| ToolError::failed(format!("cannot create the child session: {e}")))?;
        // Given work by a session that read untrusted content, the child may carry it.
        session.approvals().taint().inherit(&cx.tainted_by);
        let approver = Arc::new(Labelled::new(cx.approver().cloned(), path.clone()));
        // The child's result is the tool's; its tool calls are shown under the spawn's line.
        let depth = node.path().len().saturating_sub(1);
        let (events, relay) = super::relay::child_events(&self.tree, &path, depth);
        if !matches!(req.kind, ChildKind::Background) && !req.background {
            let cancel = cx.cancel.child_token();
            let out = agent_loop
                .run_started_turn(&mut session, approver, &events, &cancel)
                .await;
            drop(permit);
            drop(events);
            let _ = relay.await;
            let text = outcome_text(&path, out)?;
            return Ok(SpawnResult {
                session_id: session.id().to_string(),
                text,
                task: None,
            });
        }
        let id = session
            .id()
            .rsplit('-')
            .next()
            .unwrap_or_default()
            .to_string();
        let child_id = session.id().to_string();
        let cancel: CancellationToken = cx.cancel.child_token();
        let tree = Arc::clone(&self.tree);
        let parent = cx.session_id.clone();
        let (task_id, task_label) = (id.clone(), label.clone());
        let token = cancel.clone();
        let work = async move {
            let out = agent_loop
                .run_started_turn(&mut session, approver, &events, &token)
                .await;
            drop(permit);
            drop(events);
            let _ = relay.await;
            let (ok, body) = match outcome_text(&path, out) {
                Ok(t) => (true, t),
                Err(e) => (false, format!("error ({}): {}", e.kind, e.message)),
            };
            let note = format!(
                "[Background task '{task_label}' {}]\n{body}",
                if ok { "completed" } else { "failed" }
            );
            post(&tree, &parent, &note).await;
            tree.notify(AgentEvent::BackgroundTask {
                id: task_id,
                label: task_label,
                ok,
                text: body,
            });
            drop(node);
        };
        self.tree.tasks.spawn(
            OpenTask {
                id: id.clone(),
                label: label.clone(),
            },
            cancel,
            work,
        );
        Ok(SpawnResult {
            session_id: child_id,
            text: String::new(),
            task: Some((id, label)),
        })
    }

    async fn message_session(&self, cx: &ToolContext, content: &str) -> Result<(), ToolError> {
        let from = self.label();
        self.tree
            .settings
            .store
            .append(
                &SessionId(cx.session_id.clone()),
                Entry::new(
                    EntryKind::System,
                    serde_json::json!({"message": content, "from": from, "channel": "session"}),
                ),
            )
            .await
            .map_err(|e| {
                ToolError::failed(format!("cannot write the message to the session: {e}"))
            })?;
        self.tree.notify(AgentEvent::Message {
            from,
            content: content.to_string(),
        });
        Ok(())
    }
}

/// Write a background result into the parent's session: now when the parent is idle, else
/// at its loop's next safe point.
async fn post(tree: &Tree, parent: &str, note: &str) {
    if tree.inbox().hold_if_active(parent, note) {
        return;
    }
    let entry = Entry::new(
        EntryKind::User,
        serde_json::to_value(Message::user(note)).unwrap_or_default(),
    );
    if let Err(e) = tree
        .settings
        .store
        .append(&SessionId(parent.to_string()), entry)
        .await
    {
        tracing::error!("could not post a background result into session {parent}: {e}");
    }
}
