//! `tackle memory list|show|set|rm|banks|grant|revoke`: an agent's memory and its shared
//! banks, through the same grants the tools use (docs/decisions/0010-memory-banks.md).

use crate::app::{load_config, open_store};
use crate::cli::Global;
use crate::exit::{self, usage};
use anyhow::{anyhow, Result};
use clap::{Args, Subcommand};
use serde_json::json;
use tackle_protocol::config::Config;
use tackle_protocol::text::preview;
use tackle_store::{BankPerm, MemoryAccess, RecallQuery, Store, StoreError, SELF_BANK};

#[derive(Debug, Subcommand)]
pub enum MemoryCommand {
    /// Memories in the agent's own memory or a bank, newest first (or best match for QUERY).
    List {
        /// Words to search for (BM25 over key, value and tags), else newest first.
        query: Option<String>,
        #[command(flatten)]
        target: Target,
        /// Only memories with every one of these tags.
        #[arg(long = "tag", value_name = "TAG")]
        tags: Vec<String>,
        /// At most N memories.
        #[arg(long, value_name = "N", default_value_t = 50)]
        limit: usize,
        /// Print a JSON array of {bank, key, value, tags, updated_at, score}; `score` is the
        /// match's relevance next to the best one's (1), 0 without a query.
        #[arg(long)]
        json: bool,
    },
    /// One memory by its exact key.
    Show {
        /// The memory's key, exactly as stored.
        key: String,
        #[command(flatten)]
        target: Target,
        /// Print it as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Store VALUE under KEY, as the agent would with `remember` (needs Write on the bank).
    Set {
        /// The key; a memory already under it is replaced.
        key: String,
        /// The value to store.
        value: String,
        #[command(flatten)]
        target: Target,
        /// A tag for the memory (repeatable).
        #[arg(long = "tag", value_name = "TAG")]
        tags: Vec<String>,
    },
    /// Remove one memory by its key (needs Write on the bank).
    Rm {
        /// The memory's key, exactly as stored.
        key: String,
        #[command(flatten)]
        target: Target,
    },
    /// The banks an agent may use: `self`, then each granted bank with its permission and
    /// where the grant comes from (config or stored).
    Banks {
        /// The agent (default: the first agent in the config).
        #[arg(long, value_name = "NAME")]
        agent: Option<String>,
        /// Print a JSON array of {name, permission, id, source}.
        #[arg(long)]
        json: bool,
    },
    /// Store a grant of BANK to an agent (read, or write with --write); it lasts until
    /// `tackle memory revoke`. Grants in the config's `memory_banks:` apply as well.
    Grant {
        #[command(flatten)]
        grant: GrantArgs,
        /// Write access (implies read); default read only.
        #[arg(long)]
        write: bool,
    },
    /// Remove a stored grant. A grant written in the config's `memory_banks:` stays until
    /// it is removed there.
    Revoke {
        #[command(flatten)]
        grant: GrantArgs,
    },
}

#[derive(Debug, Args)]
pub struct Target {
    /// Act as this agent, with its grants (default: the first agent in the config).
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// A shared bank the agent was granted (default: its own memory, `self`).
    #[arg(long, value_name = "NAME")]
    pub bank: Option<String>,
}

#[derive(Debug, Args)]
pub struct GrantArgs {
    /// The shared bank (a-z, 0-9, `-`, `_`).
    pub bank: String,
    /// The agent to grant it to.
    #[arg(long, value_name = "NAME")]
    pub agent: String,
}

pub async fn run(global: &Global, cmd: MemoryCommand) -> Result<i32> {
    check_ids(&cmd)?;
    let loaded = load_config(global)?;
    let config = loaded.config;
    let store = open_store(&config)?;
    match cmd {
        MemoryCommand::List {
            query,
            target,
            tags,
            limit,
            json,
        } => {
            let access = access(&store, &config, target.agent.as_deref()).await?;
            let q = RecallQuery {
                query: query.unwrap_or_default(),
                tags,
                limit: limit.max(1),
            };
            let hits = store
                .recall(&access, target.bank.as_deref(), &q)
                .await
                .map_err(cli_error)?;
            if json {
                outln!("{}", serde_json::to_string_pretty(&relative_scores(&hits))?)?;
            } else if hits.is_empty() && !global.quiet {
                eprintln!("no memories in {}", shown_bank(target.bank.as_deref()));
            }
            if !json {
                for h in &hits {
                    let tags = if h.tags.is_empty() {
                        String::new()
                    } else {
                        format!("  [{}]", h.tags.join(", "))
                    };
                    outln!(
                        "{}  {} = {}{tags}",
                        h.updated_at,
                        preview(&h.key, 60),
                        preview(&h.value, 100)
                    )?;
                }
            }
            Ok(exit::OK)
        }
        MemoryCommand::Show { key, target, json } => {
            let access = access(&store, &config, target.agent.as_deref()).await?;
            let hit = store
                .memory_get(&access, target.bank.as_deref(), &key)
                .await
                .map_err(cli_error)?
                .ok_or_else(|| {
                    exit::not_found(format!(
                        "no memory `{}` in {}",
                        preview(&key, 100),
                        shown_bank(target.bank.as_deref())
                    ))
                })?;
            if json {
                outln!("{}", serde_json::to_string_pretty(&hit)?)?;
            } else {
                outln!(
                    "bank: {}\nkey: {}\ntags: {}\nupdated: {}\n\n{}",
                    hit.bank,
                    hit.key,
                    hit.tags.join(", "),
                    hit.updated_at,
                    hit.value
                )?;
            }
            Ok(exit::OK)
        }
        MemoryCommand::Set {
            key,
            value,
            target,
            tags,
        } => {
            let access = access(&store, &config, target.agent.as_deref()).await?;
            let hit = store
                .remember(&access, target.bank.as_deref(), &key, &value, &tags)
                .await
                .map_err(cli_error)?;
            if !global.quiet {
                eprintln!("remembered in {}: {}", hit.bank, preview(&hit.key, 100));
            }
            Ok(exit::OK)
        }
        MemoryCommand::Rm { key, target } => {
            let access = access(&store, &config, target.agent.as_deref()).await?;
            let bank = shown_bank(target.bank.as_deref());
            if store
                .forget(&access, target.bank.as_deref(), &key)
                .await
                .map_err(cli_error)?
            {
                if !global.quiet {
                    eprintln!("removed from {bank}: {}", preview(&key, 100));
                }
                Ok(exit::OK)
            } else {
                Err(exit::not_found(format!(
                    "no memory `{}` in {bank}",
                    preview(&key, 100)
                )))
            }
        }
        MemoryCommand::Banks { agent, json } => {
            banks(&store, &config, agent.as_deref(), json).await
        }
        MemoryCommand::Grant { grant, write } => {
            let agent = agent_name(&config, Some(&grant.agent))?;
            let perm = if write {
                BankPerm::Write
            } else {
                BankPerm::Read
            };
            store
                .grant_memory_bank(&grant.bank, &agent, perm)
                .await
                .map_err(cli_error)?;
            if !global.quiet {
                eprintln!(
                    "granted {} on memory bank {} to {agent} (stored; `tackle memory revoke {} --agent {agent}` ends it)",
                    perm.label(),
                    grant.bank,
                    grant.bank
                );
            }
            Ok(exit::OK)
        }
        MemoryCommand::Revoke { grant } => {
            let removed = store
                .revoke_memory_bank(&grant.bank, &grant.agent)
                .await
                .map_err(cli_error)?;
            let in_config = config
                .memory_banks
                .get(&grant.bank)
                .is_some_and(|b| b.read.contains(&grant.agent) || b.write.contains(&grant.agent));
            if in_config {
                eprintln!(
                    "{} still has memory bank {} through the config (`memory_banks.{}`); remove it there",
                    grant.agent, grant.bank, grant.bank
                );
            }
            match (removed, in_config) {
                (true, _) => Ok(exit::OK),
                (false, true) => Ok(exit::FAILED),
                (false, false) => Err(exit::not_found(format!(
                    "no stored grant of memory bank {} to {}",
                    preview(&grant.bank, 64),
                    preview(&grant.agent, 64)
                ))),
            }
        }
    }
}

/// The names given, by the one id rule, before anything is looked up: every agent name, and
/// the bank a grant creates. A bank only looked up is left to the store, whose answer names
/// the banks the agent has (a misspelt one is "not found" with the list).
fn check_ids(cmd: &MemoryCommand) -> Result<()> {
    use tackle_protocol::ids::{check, IdKind};
    let (bank, agent) = match cmd {
        MemoryCommand::List { target, .. }
        | MemoryCommand::Show { target, .. }
        | MemoryCommand::Set { target, .. }
        | MemoryCommand::Rm { target, .. } => (None, target.agent.as_deref()),
        MemoryCommand::Banks { agent, .. } => (None, agent.as_deref()),
        MemoryCommand::Grant { grant, .. } => {
            (Some(grant.bank.as_str()), Some(grant.agent.as_str()))
        }
        MemoryCommand::Revoke { grant } => (None, Some(grant.agent.as_str())),
    };
    if let Some(bank) = bank.filter(|b| *b != SELF_BANK) {
        check(IdKind::Bank, bank)?;
    }
    if let Some(agent) = agent {
        check(IdKind::Agent, agent)?;
    }
    Ok(())
}

/// The agent's name: one under `agents:` (or `default` when there are none).
fn agent_name(config: &Config, name: Option<&str>) -> Result<String> {
    match (name, config.agent(name)) {
        (_, Some(a)) => Ok(a.name.clone()),
        (None | Some("default"), None) if config.agents.is_empty() => Ok("default".into()),
        (Some(n), None) => Err(exit::unknown_agent(config, n)),
        (None, None) => Ok("default".into()),
    }
}

async fn access(store: &Store, config: &Config, agent: Option<&str>) -> Result<MemoryAccess> {
    let agent = agent_name(config, agent)?;
    store
        .memory_access(&agent, &config.memory_banks)
        .await
        .map_err(cli_error)
}

fn shown_bank(bank: Option<&str>) -> String {
    preview(bank.unwrap_or(SELF_BANK), 64)
}

/// Store errors for a person: bad names and values are usage errors (exit 2); a bank the
/// agent lacks is "not found" with the store's message (it names the agent's banks).
fn cli_error(e: StoreError) -> anyhow::Error {
    match e {
        StoreError::InvalidBankName { .. }
        | StoreError::InvalidId(_)
        | StoreError::InvalidMemory(_) => usage(e.to_string()),
        StoreError::UnknownBank { .. } => exit::not_found(e.to_string()),
        other => anyhow!("memory: {other}"),
    }
}

/// `list --json`'s scores as a share of the best match's (the best is 1, two decimals): the
/// store's BM25 numbers depend on how many memories there are, so an exact match among a
/// few can score 0.000001. Without a query every score is 0.
fn relative_scores(hits: &[tackle_store::MemoryHit]) -> Vec<tackle_store::MemoryHit> {
    let best = hits.iter().map(|h| h.score).fold(0.0_f64, f64::max);
    hits.iter()
        .cloned()
        .map(|mut h| {
            h.score = if best > 0.0 {
                (h.score / best * 100.0).round() / 100.0
            } else {
                0.0
            };
            h
        })
        .collect()
}

async fn banks(store: &Store, config: &Config, agent: Option<&str>, json: bool) -> Result<i32> {
    let agent = agent_name(config, agent)?;
    let access = store
        .memory_access(&agent, &config.memory_banks)
        .await
        .map_err(cli_error)?;
    let stored = store.memory_grants().await.map_err(cli_error)?;
    let rows: Vec<_> = access
        .banks()
        .into_iter()
        .map(|b| {
            let mut sources = Vec::new();
            if b.name == SELF_BANK {
                sources.push("own");
            }
            if config
                .memory_banks
                .get(&b.name)
                .is_some_and(|g| g.read.contains(&agent) || g.write.contains(&agent))
            {
                sources.push("config");
            }
            if stored.iter().any(|g| g.bank == b.name && g.agent == agent) {
                sources.push("stored");
            }
            (b, sources.join("+"))
        })
        .collect();
    if json {
        let v: Vec<_> = rows
            .iter()
            .map(|(b, source)| json!({"name": b.name, "permission": b.perm.label(), "id": b.id, "source": source}))
            .collect();
        outln!("{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(exit::OK);
    }
    for (b, source) in &rows {
        outln!("{}  {}  {}  ({source})", b.name, b.perm.label(), b.id)?;
    }
    Ok(exit::OK)
}
