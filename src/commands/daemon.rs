//! `tackle daemon`: fires schedules until SIGINT or SIGTERM, one stderr line per fire, and
//! with `daemon.mcp_http` also serves MCP over HTTP as `tackle mcp serve --http` does.
//! On a signal it takes no new fires, lets running ones finish for
//! `schedules.shutdown_grace_secs`, records any still going as failed, and exits 0.

use crate::app::{load_config, open_store, App};
use crate::cli::Global;
use crate::exit;
use crate::schedules::{self, TurnRunner};
use anyhow::Result;
use std::sync::Arc;
use std::time::Duration;
use tackle_agent::routine::FireLog;
use tackle_agent::{EngineConfig, FireEvent, FireRunner, RoutineEngine};
use tokio_util::sync::CancellationToken;

pub async fn run(global: &Global) -> Result<i32> {
    let config = load_config(global)?.config;
    let store = open_store(&App::state_dir_for(&config))?;
    let zone = schedules::zone(&config)?;
    let runner = Arc::new(TurnRunner::new(global.clone()));
    let mut engine_config = EngineConfig::new(owner_id());
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
    .with_log(fire_log());
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
    if !global.quiet {
        eprintln!(
            "daemon: firing schedules ({}); stop with Ctrl-C or SIGTERM",
            zone.name()
        );
    }
    let ran = engine.run(stop).await;
    signals.abort();
    runner.shutdown().await;
    if let Some(mcp) = mcp {
        mcp.await
            .map_err(|e| anyhow::anyhow!("MCP server task: {e}"))??;
    }
    ran.map_err(|e| anyhow::anyhow!("schedule engine: {e}"))?;
    if !global.quiet {
        eprintln!("daemon: stopped");
    }
    Ok(exit::OK)
}

/// Unique per process, so leases tell two daemons (or a restarted one) apart.
fn owner_id() -> String {
    let ms = time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000;
    format!("daemon-{}-{ms}", std::process::id())
}

/// `fire default/report due 2026-01-02T09:00:00Z ok late 3 ms took 1.20 s — detail`.
fn fire_log() -> FireLog {
    Arc::new(|e: &FireEvent| {
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
