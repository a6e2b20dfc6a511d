//! `tackle daemon`: fires schedules until SIGINT or SIGTERM, one stderr line per fire (and a
//! line saying what fires next), and with `daemon.mcp_http` also serves MCP over HTTP as
//! `tackle mcp serve --http` does, with `gateway:` the HTTP API (src/gateway), and the chat
//! channels that have an `inbound:` section (src/channels). It refuses
//! to start without a model backend: every fire would fail.
//! On a signal it takes no new fires or requests, lets running ones finish for
//! `schedules.shutdown_grace_secs`, records any still going as failed (a fire) or cancelled
//! (an API turn), and exits 0.

use crate::app::{load_config, open_store};
use crate::cli::{DaemonArgs, Global};
use crate::exit::{self, usage};
use crate::schedules::{self, TurnRunner};
use anyhow::Result;
use std::sync::Arc;
use std::time::Duration;
use tackle_agent::routine::FireLog;
use tackle_agent::{EngineConfig, FireEvent, FireRunner, RoutineEngine};
use tackle_protocol::config::Config;
use tackle_store::Store;
use tokio_util::sync::CancellationToken;

pub async fn run(global: &Global, args: DaemonArgs) -> Result<i32> {
    let mut config = load_config(global)?.config;
    if let Some(addr) = args.http {
        config.gateway.get_or_insert_with(Default::default).bind = addr;
    }
    let store = open_store(&config)?;
    // Held while the daemon runs, so a schedule tool can tell the model something will fire
    // what it plants (tackle-store's presence).
    let _running = store.hold_daemon_presence();
    // Approvals left pending by a waiter that died (a daemon killed outright) end now, with
    // why, rather than look answerable until their deadline.
    if let Err(e) = crate::waiter::close_abandoned(&store).await {
        tracing::warn!("cannot close the approvals of processes that ended: {e}");
    }
    let zone = schedules::zone(&config)?;
    check_backends(&config).await?;
    // Bound and checked before anything runs, so a taken port, a refused address or a bad
    // token hash stops the start.
    let api_listener = match &config.gateway {
        Some(g) => {
            let listener = crate::gateway::bind(g).await?;
            let addr = listener.local_addr()?;
            let gw = crate::gateway::gateway(global, &config, g, addr, store.clone())?;
            Some((listener, addr, gw))
        }
        None => None,
    };
    let runner = Arc::new(TurnRunner::new(global.clone()));
    let owner = crate::waiter::lease_owner("daemon");
    let mut engine_config = EngineConfig::new(owner.clone());
    engine_config.zone = zone;
    engine_config.catch_up = config.schedules.catch_up;
    engine_config.max_concurrent_per_agent = config.schedules.max_concurrent_per_agent;
    engine_config.grace = Duration::from_secs(config.schedules.shutdown_grace_secs);
    engine_config.lease = Duration::from_secs(config.schedules.lease_secs.max(1));
    let engine = RoutineEngine::new(
        store.clone(),
        Arc::clone(&runner) as Arc<dyn FireRunner>,
        engine_config,
    )
    .with_log(fire_log(store.clone(), global.quiet));
    let _watch = schedules::watch_marker(&store, engine.waker());
    let stop = CancellationToken::new();
    let signals = tokio::spawn(stop_on_signal(stop.clone()));
    let mcp = config.daemon.mcp_http.clone().map(|addr| {
        let (global, stop) = (global.clone(), stop.clone());
        tokio::spawn(async move {
            let served = super::mcp::serve_for_daemon(&global, &addr, stop.clone()).await;
            // A server that cannot start stops the daemon rather than leaving half of it.
            stop.cancel();
            served
        })
    });
    let grace = Duration::from_secs(config.schedules.shutdown_grace_secs);
    // Chat channels with an `inbound:` section (src/channels): read until the stop.
    let channels = crate::channels::start(global, &config, &store, &stop)?;
    // Drained beside the schedule engine, within the same grace.
    let channels = {
        let stop = stop.clone();
        tokio::spawn(async move {
            stop.cancelled().await;
            channels.finish(grace).await;
        })
    };
    let api = match (api_listener, &config.gateway) {
        (Some((listener, addr, gw)), Some(g)) => {
            if !global.quiet {
                eprintln!(
                    "daemon: HTTP API on http://{addr} (GET /openapi.json lists it), the console at http://{addr}/"
                );
            }
            let (stop, max_body) = (stop.clone(), g.max_body_bytes);
            Some(tokio::spawn(async move {
                let served =
                    crate::gateway::serve(gw, listener, max_body, stop.clone(), grace).await;
                // A server that stops stops the daemon rather than leaving half of it.
                stop.cancel();
                served
            }))
        }
        _ => None,
    };
    if !global.quiet {
        if store.shared_poll().is_some() {
            eprintln!(
                "daemon: state shared in {} as {owner}; each fire runs on one daemon, each session on one at a time",
                store.state_engine()
            );
        }
        eprintln!(
            "daemon: firing schedules ({}); {}; stop with Ctrl-C or SIGTERM",
            zone.name(),
            outlook(&store).await
        );
    }
    let stopped = stop.clone();
    let ran = engine.run(stop).await;
    signals.abort();
    // An engine that failed stops the channels too.
    stopped.cancel();
    let _ = channels.await;
    runner.shutdown().await;
    if let Some(api) = api {
        api.await
            .map_err(|e| anyhow::anyhow!("HTTP API task: {e}"))??;
    }
    if let Some(mcp) = mcp {
        mcp.await
            .map_err(|e| anyhow::anyhow!("MCP server task: {e}"))??;
    }
    if let Err(e) = store.seal_audit().await {
        tracing::warn!("could not sign the end of the audit log: {e}");
    }
    ran.map_err(|e| anyhow::anyhow!("schedule engine: {e}"))?;
    if !global.quiet {
        eprintln!("daemon: stopped");
    }
    Ok(exit::OK)
}

/// Every agent a fire may run as has a backend (configured or found in the environment):
/// without one the daemon would only record failures, so it does not start.
async fn check_backends(config: &Config) -> Result<()> {
    let agents: Vec<Option<&tackle_protocol::config::AgentConfig>> = if config.agents.is_empty() {
        vec![None]
    } else {
        config.agents.iter().map(Some).collect()
    };
    for agent in agents {
        if let Err(e) = crate::runtime::select_provider(config, agent).await {
            let who = agent.map_or("the default agent".to_string(), |a| {
                format!("agent `{}`", a.name)
            });
            return Err(usage(format!(
                "tackle daemon: no model backend for {who}, so no schedule could run: {e}"
            )));
        }
    }
    Ok(())
}

/// `3 schedules (2 enabled); next fire 2026-01-02T09:00:00Z (default/report)`.
async fn outlook(store: &Store) -> String {
    let Ok(all) = store.list_schedules(None).await else {
        return "cannot read the schedules".to_string();
    };
    let enabled = all.iter().filter(|s| s.enabled).count();
    let next = all
        .iter()
        .filter(|s| s.enabled)
        .filter_map(|s| s.next_fire.map(|at| (at, s)))
        .min_by_key(|(at, _)| *at);
    let plural = if all.len() == 1 { "" } else { "s" };
    let head = format!("{} schedule{plural} ({enabled} enabled)", all.len());
    match next {
        Some((at, s)) => format!("{head}; next fire {} ({}/{})", rfc3339(at), s.agent, s.name),
        None => format!("{head}; nothing to fire (`tackle schedule add` adds one)"),
    }
}

/// The session's last assistant text, on one line and shortened.
async fn last_answer(store: &Store, id: &tackle_store::SessionId) -> Option<String> {
    let entries = store.entries(id).await.ok()?;
    let text = entries
        .iter()
        .rev()
        .filter(|e| e.kind == tackle_store::EntryKind::Assistant)
        .filter_map(|e| e.message())
        .map(|m| m.content)
        .find(|c| !c.trim().is_empty())?;
    Some(tackle_protocol::text::preview(
        &text.split_whitespace().collect::<Vec<_>>().join(" "),
        400,
    ))
}

fn rfc3339(at: time::OffsetDateTime) -> String {
    at.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// `fire default/report due 2026-01-02T09:00:00Z ok late 3 ms took 1.20 s — detail`, then
/// what fires next.
fn fire_log(store: Store, quiet: bool) -> FireLog {
    Arc::new(move |e: &FireEvent| {
        let due = e
            .due
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default();
        let detail = if e.detail.is_empty() {
            String::new()
        } else {
            format!(" — {}", tackle_protocol::text::preview(&e.detail, 200))
        };
        eprintln!(
            "fire {}/{} due {due} {} late {} ms took {:.2} s{detail}",
            e.agent,
            e.name,
            e.status.as_str(),
            e.late.as_millis(),
            e.took.as_secs_f64()
        );
        // The fire was claimed before it ran, so its next time is already stored.
        if !quiet {
            if let Ok(handle) = tokio::runtime::Handle::try_current() {
                let store = store.clone();
                // A run that ended well names its session: its answer goes in the log too.
                let session = e
                    .detail
                    .strip_prefix("session ")
                    .filter(|_| e.status == tackle_store::FireStatus::Ok)
                    .map(|id| tackle_store::SessionId(id.trim().to_string()));
                handle.spawn(async move {
                    if let Some(answer) = match session {
                        Some(id) => last_answer(&store, &id).await,
                        None => None,
                    } {
                        eprintln!("  answer: {answer}");
                    }
                    eprintln!("daemon: {}", outlook(&store).await);
                });
            }
        }
    })
}

async fn stop_on_signal(stop: CancellationToken) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
    stop.cancel();
}
