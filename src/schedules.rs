//! Schedules in the binary: the `schedule` extension's settings from config, the runner that
//! turns one fire into one agent turn, and the watch that wakes the engine on changes made by
//! other processes.

use crate::cli::Global;
use crate::exit::usage;
use crate::runtime::Runtime;
use anyhow::Result;
use async_trait::async_trait;
use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tackle_agent::approvers::NonInteractiveApprover;
use tackle_agent::{DoneReason, FireRunner, Session};
use tackle_protocol::config::Config;
use tackle_store::{Schedule, Store, Target};
use tackle_tools::schedule::{ScheduleSettings, Zone};
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
    })
}

/// Runs a fire as one turn of its agent, through the same [`Runtime`] and loop as `tackle
/// run`. Approvals have no one to ask, so a call that needs one ends `needs_approval`.
pub struct TurnRunner {
    global: Global,
    /// One runtime per agent, built at its first fire (MCP servers start once).
    runtimes: tokio::sync::Mutex<HashMap<String, Arc<Runtime>>>,
}

impl TurnRunner {
    pub fn new(global: Global) -> Self {
        Self {
            global,
            runtimes: tokio::sync::Mutex::new(HashMap::new()),
        }
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

#[async_trait]
impl FireRunner for TurnRunner {
    async fn run(&self, s: &Schedule, cancel: CancellationToken) -> Result<String, String> {
        let rt = self.runtime(&s.agent).await.map_err(|e| format!("{e:#}"))?;
        let mut session = match (s.target, s.session_id.as_deref()) {
            (Target::Pinned, Some(id)) => Session::resume(rt.store.clone(), id, &s.agent).await,
            _ => Session::create(rt.store.clone(), &s.agent).await,
        }
        .map_err(|e| format!("session: {e}"))?;
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let drain = tokio::spawn(async move { while rx.recv().await.is_some() {} });
        let outcome = rt
            .agent_loop
            .run_turn(
                &mut session,
                &s.message,
                Arc::new(NonInteractiveApprover),
                &tx,
                &cancel,
            )
            .await;
        drop(tx);
        let _ = drain.await;
        let id = session.id().to_string();
        let o = outcome.map_err(|e| format!("{e} (session {id})"))?;
        match o.reason {
            DoneReason::Cancelled => Err(format!("cancelled (session {id})")),
            DoneReason::LoopGuard => Err(format!("stopped by the loop guard (session {id})")),
            _ if o.needs_approval > 0 => Err(format!(
                "needs_approval: {} call(s) had no approver (session {id})",
                o.needs_approval
            )),
            _ if o.denied > 0 => Err(format!("denied: {} call(s) (session {id})", o.denied)),
            _ => Ok(format!("session {id}")),
        }
    }
}

/// Watches the store's schedules marker and wakes the engine when another process (or a
/// tool in this one) changes schedules. `None` when there is no file to watch; the engine
/// still fires what it already knows of.
pub struct MarkerWatch {
    _watcher: RecommendedWatcher,
}

pub fn watch_marker(store: &Store, wake: Arc<Notify>) -> Option<MarkerWatch> {
    let marker = store.schedules_marker()?;
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
            wake.notify_one();
        }
    };
    let mut watcher = match notify::recommended_watcher(handler) {
        Ok(w) => w,
        Err(e) => {
            tracing::warn!(
                "schedule changes by other processes are seen only at the next fire: {e}"
            );
            return None;
        }
    };
    // The directory, not the file: the file may not exist yet, and a rename replaces it.
    if let Err(e) = watcher.watch(&dir, RecursiveMode::NonRecursive) {
        tracing::warn!("schedule changes by other processes are seen only at the next fire: {e}");
        return None;
    }
    Some(MarkerWatch { _watcher: watcher })
}
