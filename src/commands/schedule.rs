//! `tackle schedule list|add|rm|enable|disable`: the operator's view of the same schedules the
//! `schedule` tools plant, checked by the same rules (cron fields, minimum interval). The
//! operator needs no approval, sees and changes every agent's schedules whoever planted them,
//! and a running daemon sees each change at once.

use crate::app::{load_config, open_store};
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
    /// Add a schedule that runs TASK as a fresh session at each fire of --cron, or once --at a
    /// time or --in a while.
    Add(AddArgs),
    /// Remove a schedule (its fire records stay).
    Rm(IdArgs),
    /// Enable a schedule; one past its bound retires again at its next fire.
    Enable(IdArgs),
    /// Disable a schedule; it stays listed.
    Disable(IdArgs),
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("when").required(true).args(["cron", "at", "in_"])))]
pub struct AddArgs {
    /// The schedule's id, unique per agent.
    pub id: String,
    /// Recurring: 6 fields `sec min hour dom month dow` (names allowed), or 5 without seconds.
    #[arg(long)]
    pub cron: Option<String>,
    /// Once, at this RFC 3339 time (e.g. 2026-01-02T09:00:00Z).
    #[arg(long, value_name = "TIME")]
    pub at: Option<String>,
    /// Once, after this long: 90s, 30m, 2h, 1d, 1w, or several (1h30m).
    #[arg(long = "in", value_name = "DURATION")]
    pub in_: Option<String>,
    /// What the agent is told at each fire.
    #[arg(long)]
    pub task: String,
    /// The owning agent (default: the first in the config).
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// Retire after N fires (recurring schedules).
    #[arg(long, value_name = "N", conflicts_with_all = ["at", "in_"])]
    pub max_fires: Option<u32>,
    /// Retire at this RFC 3339 time (recurring schedules).
    #[arg(long, value_name = "TIME", conflicts_with_all = ["at", "in_"])]
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
    let store = open_store(&config)?;
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
        out.push(json_view(&s, Some(&fires))?);
    }
    outln!("{}", serde_json::to_string_pretty(&out)?)?;
    Ok(0)
}

async fn add(config: &Config, settings: &ScheduleSettings, args: AddArgs) -> Result<i32> {
    let owner = owner(config, args.agent.as_deref())?;
    let s = match (args.cron, args.at, args.in_) {
        (Some(cron), _, _) => sched::add_recurring(
            settings,
            AddRequest {
                owner,
                planted_by: None,
                id: args.id,
                cron,
                task: args.task,
                target: Target::Fresh,
                session_id: None,
                max_fires: args.max_fires,
                expires_at: args.expires_at,
            },
        )
        .await
        .map_err(tool_error)?,
        (None, at, after) => {
            let at = once_at(at.as_deref(), after.as_deref())?;
            sched::add_named_once(settings, &owner, &args.id, &args.task, at)
                .await
                .map_err(tool_error)?
        }
    };
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&json_view(&s, None)?)?)?;
    } else {
        outln!(
            "added {}",
            sched::schedule_line(&s, None).trim_start_matches("- ")
        )?;
    }
    Ok(0)
}

/// When a one-shot fires: `--at` as given, or now plus `--in`.
fn once_at(at: Option<&str>, after: Option<&str>) -> Result<time::OffsetDateTime> {
    if let Some(at) = at {
        return sched::parse_time("--at", at).map_err(tool_error);
    }
    let text = after.unwrap_or_default();
    let secs = crate::commands::audit::parse_duration(text.trim())
        .and_then(|d| i64::try_from(d.as_secs()).ok())
        .ok_or_else(|| {
            usage(format!(
                "--in `{text}` is not a duration; give one such as 90s, 30m, 2h or 1d"
            ))
        })?;
    time::OffsetDateTime::now_utc()
        .checked_add(time::Duration::seconds(secs))
        .ok_or_else(|| usage(format!("--in `{text}` is too far ahead")))
}

/// A schedule as `--json` shows it, with its newest fires when given. Every time is RFC 3339
/// in UTC (`…Z`), as in the JSON of `sessions` and `audit`; the store's own serialisation
/// counts milliseconds.
fn json_view(
    s: &tackle_store::Schedule,
    fires: Option<&[tackle_store::FireRecord]>,
) -> Result<serde_json::Value> {
    let mut v = serde_json::to_value(s)?;
    rfc3339_fields(
        &mut v,
        &["next_fire", "last_fired", "expires_at", "lease_until"],
    );
    if let Some(fires) = fires {
        let mut all = Vec::with_capacity(fires.len());
        for f in fires {
            let mut fv = serde_json::to_value(f)?;
            rfc3339_fields(&mut fv, &["due", "started", "finished"]);
            all.push(fv);
        }
        v["fires"] = serde_json::Value::Array(all);
    }
    Ok(v)
}

/// Rewrites the epoch-millisecond numbers under `keys` as RFC 3339 UTC text; `null` stays.
fn rfc3339_fields(v: &mut serde_json::Value, keys: &[&str]) {
    for key in keys {
        let Some(field) = v.get_mut(*key) else {
            continue;
        };
        let Some(ms) = field.as_i64() else {
            continue;
        };
        let text = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
            .ok()
            .and_then(|at| {
                at.format(&time::format_description::well_known::Rfc3339)
                    .ok()
            });
        if let Some(text) = text {
            *field = serde_json::Value::String(text);
        }
    }
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
