//! `tackle schedule list|add|rm|enable|disable`: the operator's view of the same schedules the
//! `schedule` tools plant, checked by the same rules (cron fields, minimum interval). The
//! operator needs no approval, sees and changes every agent's schedules whoever planted them,
//! and a running daemon sees each change at once.

use crate::app::{load_config, open_store, App};
use crate::cli::Global;
use crate::exit::usage;
use anyhow::{anyhow, Result};
use clap::{Args, Subcommand};
use tackle_protocol::config::Config;
use tackle_store::Target;
use tackle_tools::schedule::{self as sched, AddRequest, ModifyRequest, ScheduleSettings};

/// Fire records shown per schedule by `list --json`.
const FIRES_SHOWN: usize = 50;

#[derive(Debug, Subcommand)]
pub enum ScheduleCommand {
    /// Every schedule (or one agent's): expression, state, bounds, fires, last outcome.
    List {
        /// Only this agent's schedules.
        #[arg(long, value_name = "NAME")]
        agent: Option<String>,
        /// Print a JSON array of schedules, each with its newest fire records under `fires`.
        #[arg(long)]
        json: bool,
    },
    /// Add a recurring schedule that runs TASK as a fresh session at each fire of --cron.
    Add(AddArgs),
    /// Remove a schedule (its fire records stay).
    Rm(IdArgs),
    /// Enable a schedule; one past its bound retires again at its next fire.
    Enable(IdArgs),
    /// Disable a schedule; it stays listed.
    Disable(IdArgs),
}

#[derive(Debug, Args)]
pub struct AddArgs {
    /// The schedule's id, unique per agent.
    pub id: String,
    /// 6 fields `sec min hour dom month dow` (names allowed), or 5 without seconds.
    #[arg(long)]
    pub cron: String,
    /// What the agent is told at each fire.
    #[arg(long)]
    pub task: String,
    /// The owning agent (default: the first in the config).
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// Retire after N fires.
    #[arg(long, value_name = "N")]
    pub max_fires: Option<u32>,
    /// Retire at this RFC 3339 time.
    #[arg(long, value_name = "TIME")]
    pub expires_at: Option<String>,
    /// Print the stored schedule as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct IdArgs {
    /// The schedule's id.
    pub id: String,
    /// The owning agent (default: the first in the config).
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
}

pub async fn run(global: &Global, cmd: ScheduleCommand) -> Result<i32> {
    let config = load_config(global)?.config;
    let store = open_store(&App::state_dir_for(&config))?;
    let settings = crate::schedules::settings(&config, &store)?;
    match cmd {
        ScheduleCommand::List { agent, json } => list(&settings, agent.as_deref(), json).await,
        ScheduleCommand::Add(args) => add(&config, &settings, args).await,
        ScheduleCommand::Rm(args) => {
            let owner = owner(&config, args.agent.as_deref())?;
            sched::remove(&settings, None, &owner, &args.id)
                .await
                .map_err(tool_error)?;
            outln!("removed {owner}/{}", args.id)?;
            Ok(0)
        }
        ScheduleCommand::Enable(args) => set_enabled(&config, &settings, args, true).await,
        ScheduleCommand::Disable(args) => set_enabled(&config, &settings, args, false).await,
    }
}

async fn list(settings: &ScheduleSettings, agent: Option<&str>, json: bool) -> Result<i32> {
    if !json {
        let lines = sched::list_lines(settings, None, agent)
            .await
            .map_err(tool_error)?;
        if lines.is_empty() {
            outln!("no schedules")?;
        }
        for line in lines {
            let line = line.strip_prefix("- ").unwrap_or(&line).to_string();
            outln!("{line}")?;
        }
        return Ok(0);
    }
    let mut out = Vec::new();
    for s in settings.store.list_schedules(agent).await? {
        let fires = settings.store.fires(&s.agent, &s.name, FIRES_SHOWN).await?;
        let mut v = serde_json::to_value(&s)?;
        v["fires"] = serde_json::to_value(&fires)?;
        out.push(v);
    }
    outln!("{}", serde_json::to_string_pretty(&out)?)?;
    Ok(0)
}

async fn add(config: &Config, settings: &ScheduleSettings, args: AddArgs) -> Result<i32> {
    let owner = owner(config, args.agent.as_deref())?;
    let s = sched::add_recurring(
        settings,
        AddRequest {
            owner,
            planted_by: None,
            id: args.id,
            cron: args.cron,
            task: args.task,
            target: Target::Fresh,
            session_id: None,
            max_fires: args.max_fires,
            expires_at: args.expires_at,
        },
    )
    .await
    .map_err(tool_error)?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&s)?)?;
    } else {
        outln!(
            "added {}",
            sched::schedule_line(&s, None).trim_start_matches("- ")
        )?;
    }
    Ok(0)
}

async fn set_enabled(
    config: &Config,
    settings: &ScheduleSettings,
    args: IdArgs,
    enabled: bool,
) -> Result<i32> {
    let owner = owner(config, args.agent.as_deref())?;
    let req = ModifyRequest {
        enabled: Some(enabled),
        ..ModifyRequest::default()
    };
    let s = sched::modify(settings, None, &owner, &args.id, req)
        .await
        .map_err(tool_error)?;
    let state = if s.enabled { "enabled" } else { "disabled" };
    outln!("{state} {owner}/{}", args.id)?;
    Ok(0)
}

/// `--agent`, else the config's first agent, else `default`; an unknown name is not found.
fn owner(config: &Config, agent: Option<&str>) -> Result<String> {
    match agent {
        Some(name) if config.agent(Some(name)).is_some() => Ok(name.to_string()),
        Some(name) if name == "default" && config.agents.is_empty() => Ok(name.to_string()),
        Some(name) => Err(crate::exit::unknown_agent(config, name)),
        None => Ok(config
            .agent(None)
            .map(|a| a.name.clone())
            .unwrap_or_else(|| "default".into())),
    }
}

/// A refused argument is a usage error (exit 2), an unknown schedule not found (6), anything
/// else a failure.
fn tool_error(mut e: tackle_protocol::ToolError) -> anyhow::Error {
    e.message = crate::cli_words::for_cli(&e.message);
    match e.kind {
        tackle_protocol::ErrorKind::InvalidArguments => usage(e.message),
        tackle_protocol::ErrorKind::NotFound => crate::exit::not_found(e.message),
        _ => anyhow!(e.message),
    }
}
