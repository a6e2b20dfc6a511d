//! Schedules in the binary: the `schedule` extension's settings from config, the runner that
//! turns one fire into one agent turn, and the watch that wakes the engine on changes made by
//! other processes.

use crate::approval_queue::{ApprovalQueue, QueueApprover, APPROVE_SCOPE};
use crate::cli::Global;
use crate::exit::usage;
use crate::runtime::Runtime;
use anyhow::Result;
use async_trait::async_trait;
use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tackle_agent::tree::scope;
use tackle_agent::{AgentLoop, DoneReason, FireError, FireRunner, Session, TreePlace};
use tackle_protocol::config::Config;
use tackle_store::{Schedule, Store, Target};
use tackle_tools::schedule::{owner_agents, ScheduleSettings, Zone};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// The zone of `schedules.timezone`; a bad name is a usage error (exit 2).
pub fn zone(config: &Config) -> Result<Zone> {
    Zone::parse(&config.schedules.timezone).map_err(|e| usage(format!("schedules.timezone: {e}")))
}

pub fn settings(config: &Config, store: &Store) -> Result<ScheduleSettings> {
    Ok(ScheduleSettings {
        store: store.clone(),
        zone: zone(config)?,
        min_interval: Duration::from_secs(config.schedules.min_interval_secs),
        agents: config.agents.iter().map(|a| a.name.clone()).collect(),
        schedule_for: config
            .agents
            .iter()
            .filter(|a| !a.schedule_for.is_empty())
            .map(|a| (a.name.clone(), a.schedule_for.clone()))
            .collect(),
    })
}

/// Runs a fire as one turn of its agent, through the same [`Runtime`] and loop as `tackle
/// run`. A call that needs approval waits in the approval queue for
/// `schedules.approval_timeout_secs` (`tackle approvals`), then ends `needs_approval`; with
/// 0 it ends so at once.
pub struct TurnRunner {
    global: Global,
    /// One runtime per agent, built at its first fire (MCP servers start once).
    runtimes: tokio::sync::Mutex<HashMap<String, Arc<Runtime>>>,
    /// The process's one wait on the approval queue, made at the first fire that uses it.
    queue: tokio::sync::OnceCell<Arc<ApprovalQueue>>,
}

impl TurnRunner {
    pub fn new(global: Global) -> Self {
        Self {
            global,
            runtimes: tokio::sync::Mutex::new(HashMap::new()),
            queue: tokio::sync::OnceCell::new(),
        }
    }

    /// Who answers the approvals of a fire of `agent` in `session`.
    async fn approver(
        &self,
        rt: &Runtime,
        agent: &str,
        session: &str,
        cancel: &CancellationToken,
    ) -> Result<Arc<dyn tackle_protocol::Approver>, String> {
        // Read at each fire, as the planters' grants are: a changed timeout applies to the next.
        let secs = crate::app::load_config(&self.global)
            .map_err(|e| format!("{e:#}"))?
            .config
            .schedules
            .approval_timeout_secs;
        if secs == 0 {
            return Ok(Arc::new(crate::approval::NoOneToAsk::SCHEDULED));
        }
        let queue = self
            .queue
            .get_or_init(|| async { ApprovalQueue::new(rt.store.clone()) })
            .await;
        Ok(Arc::new(
            QueueApprover::new(
                Arc::clone(queue),
                agent,
                session,
                vec![APPROVE_SCOPE.to_string()],
                Duration::from_secs(secs),
                cancel.clone(),
            )
            .announcing(!self.global.quiet),
        ))
    }

    async fn runtime(&self, agent: &str) -> Result<Arc<Runtime>> {
        let mut runtimes = self.runtimes.lock().await;
        if let Some(rt) = runtimes.get(agent) {
            return Ok(Arc::clone(rt));
        }
        let config = crate::app::load_config(&self.global)?.config;
        // `default` with no agents configured is the built-in default agent.
        let named = config.agent(Some(agent)).is_some();
        let builtin = agent == "default" && config.agents.is_empty();
        if !(named || builtin) {
            anyhow::bail!("no agent named `{agent}` under `agents:` in the config");
        }
        let selection = crate::app::Selection {
            agent: named.then(|| agent.to_string()),
            // Plugins added or changed while the daemon runs are picked up by the next fire.
            watch_plugins: true,
            ..crate::app::Selection::default()
        };
        let rt = Arc::new(Runtime::build(&self.global, &selection).await?);
        runtimes.insert(agent.to_string(), Arc::clone(&rt));
        Ok(rt)
    }

    pub async fn shutdown(&self) {
        for rt in self.runtimes.lock().await.values() {
            rt.app.shutdown().await;
        }
    }
}

/// The agents other than the one it fires as that planted `s` (its owner path), each with
/// the grants overlay every call of the fire is narrowed to, as a child's calls are narrowed
/// to its parent's. Empty: the agent planted it itself (or the operator did).
fn planters(
    config: &Config,
    s: &Schedule,
) -> Result<Vec<(String, Option<tackle_protocol::Grants>)>, String> {
    let mut out: Vec<(String, Option<tackle_protocol::Grants>)> = Vec::new();
    for name in owner_agents(&s.owner) {
        if name == s.agent || out.iter().any(|(n, _)| n == name) {
            continue;
        }
        let grants = match config.agent(Some(name)) {
            Some(a) if a.name == name => Some(a.grants.clone()),
            _ if name == "default" && config.agents.is_empty() => None,
            // Fail closed: whose grants would bound it is unknown.
            _ => {
                return Err(format!(
                    "planted by `{name}`, which is no longer an agent in the config; not run"
                ))
            }
        };
        out.push((name.to_string(), grants));
    }
    Ok(out)
}

impl TurnRunner {
    /// The loop a fire planted by other agents runs in: the agent's own runtime, with a
    /// dispatcher whose every call is narrowed to each planter's grants (tree ceilings) and
    /// whose tools are those every planter's extensions enable too, without spawning tools
    /// (a child it started would not carry the ceilings).
    fn narrowed(
        &self,
        rt: &Runtime,
        config: &Config,
        s: &Schedule,
        ceilings: Vec<(String, Option<tackle_protocol::Grants>)>,
    ) -> AgentLoop {
        let root = &rt.app.dispatcher;
        let enabled = |ext: &str| {
            ceilings.iter().all(|(name, _)| {
                config
                    .agent(Some(name))
                    .is_none_or(|a| a.extensions.is_enabled(ext))
            })
        };
        let tools = root
            .registry()
            .specs()
            .into_iter()
            .filter(|spec| root.allows_tool(&spec.name) && enabled(&spec.owner))
            .map(|spec| spec.name)
            .collect();
        let mut path: Vec<String> = ceilings.iter().map(|(n, _)| n.clone()).collect();
        path.push(s.agent.clone());
        let place = TreePlace {
            path,
            ceilings,
            tools: Some(scope::without_spawning(tools, root.registry())),
        };
        let lc = rt.agent_loop.config().clone();
        // The tree node claims from the loop's own pool, so compactions and the loop's
        // requests share one max_iterations budget.
        let services = rt.tree.root_node(Arc::clone(lc.budget.pool()));
        let dispatcher = Arc::new(root.child(
            root.config().clone(),
            place,
            services as Arc<dyn tackle_protocol::AgentServices>,
        ));
        AgentLoop::new(Arc::clone(rt.agent_loop.provider()), dispatcher, lc)
            .with_compactor(Arc::clone(&rt.compactor))
            .with_inbox(Arc::clone(rt.tree.inbox()))
    }
}

#[async_trait]
impl FireRunner for TurnRunner {
    async fn run(&self, s: &Schedule, cancel: CancellationToken) -> Result<String, FireError> {
        let rt = self.runtime(&s.agent).await.map_err(|e| format!("{e:#}"))?;
        // Only work planted by another agent needs the config again (its planters' grants).
        let mut narrowed = None;
        if owner_agents(&s.owner).iter().any(|a| *a != s.agent) {
            let config = crate::app::load_config(&self.global)
                .map_err(|e| format!("{e:#}"))?
                .config;
            let ceilings = planters(&config, s)?;
            if !ceilings.is_empty() {
                narrowed = Some(self.narrowed(&rt, &config, s, ceilings));
            }
        }
        let agent_loop = narrowed.as_ref().unwrap_or(&rt.agent_loop);
        let mut session = match (s.target, s.session_id.as_deref()) {
            (Target::Pinned, Some(id)) => Session::resume(rt.store.clone(), id, &s.agent).await,
            _ => Session::create(rt.store.clone(), &s.agent).await,
        }
        .map_err(|e| format!("session: {e}"))?;
        let approver = self.approver(&rt, &s.agent, session.id(), &cancel).await?;
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let drain = tokio::spawn(async move { while rx.recv().await.is_some() {} });
        let outcome = agent_loop
            .run_turn(&mut session, &s.message, approver, &tx, &cancel)
            .await;
        drop(tx);
        let _ = drain.await;
        let id = session.id().to_string();
        let o = outcome.map_err(|e| format!("{e} (session {id})"))?;
        Ok(fire_result(&o, &id)?)
    }
}

/// How the turn of a fire is recorded: `Ok(detail)` as `ok`, `Err(why)` as `failed`. The same
/// for a fire the daemon runs and one an open chat runs (src/commands/chat/wakeups.rs).
pub fn fire_result(o: &tackle_agent::TurnOutcome, id: &str) -> Result<String, String> {
    match o.reason {
        DoneReason::Cancelled => Err(format!("cancelled (session {id})")),
        DoneReason::LoopGuard => Err(format!("stopped by the loop guard (session {id})")),
        DoneReason::MaxIterations => Err(format!(
            "iteration budget exhausted: max_iterations reached (session {id})"
        )),
        _ if o.needs_approval > 0 => Err(format!(
            "needs_approval: {} call(s) had no approver (session {id})",
            o.needs_approval
        )),
        _ if o.denied > 0 => Err(format!("denied: {} call(s) (session {id})", o.denied)),
        // A person answered no in the approval queue.
        _ if o.declined > 0 => Err(format!(
            "declined: {} call(s) not approved (session {id})",
            o.declined
        )),
        _ => Ok(format!("session {id}")),
    }
}

/// Watches the store's schedules marker and wakes the engine when another process (or a
/// tool in this one) changes schedules. `None` when there is no file to watch; the engine
/// still fires what it already knows of.
pub struct MarkerWatch {
    _watcher: RecommendedWatcher,
}

pub fn watch_marker(store: &Store, wake: Arc<Notify>) -> Option<MarkerWatch> {
    watch_file(
        &store.schedules_marker()?,
        "schedule changes by other processes are seen only at the next fire",
        move || wake.notify_one(),
    )
}

/// Calls `changed` whenever the file `marker` is written, created or replaced (a store's
/// change marker). `None` when it cannot be watched, after a warning that says what is lost
/// (`lost`).
pub fn watch_file(
    marker: &std::path::Path,
    lost: &'static str,
    changed: impl Fn() + Send + 'static,
) -> Option<MarkerWatch> {
    let dir = marker.parent()?.to_path_buf();
    let name = marker.file_name()?.to_os_string();
    let handler = move |event: notify::Result<notify::Event>| {
        let Ok(event) = event else { return };
        if event.kind.is_access() {
            return;
        }
        if event
            .paths
            .iter()
            .any(|p| p.file_name() == Some(name.as_os_str()))
        {
            changed();
        }
    };
    let mut watcher = match notify::recommended_watcher(handler) {
        Ok(w) => w,
        Err(e) => {
            tracing::warn!("{lost}: {e}");
            return None;
        }
    };
    // The directory, not the file: the file may not exist yet, and a rename replaces it.
    if let Err(e) = watcher.watch(&dir, RecursiveMode::NonRecursive) {
        tracing::warn!("{lost}: {e}");
        return None;
    }
    Some(MarkerWatch { _watcher: watcher })
}
