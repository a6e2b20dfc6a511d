//! `tackle audit verify | key | export`: the proof the log keeps of itself, and the log for a
//! SIEM (docs/decisions/0032-tamper-evident-audit.md).

use super::{ocsf, parse_since};
use crate::app::{load_config, open_store};
use crate::cli::Global;
use crate::exit::{self, usage};
use anyhow::Result;
use clap::{Subcommand, ValueEnum};
use tackle_store::{AuditQuery, StoreError};

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Check the whole hash chain and every signed checkpoint; name the first record that
    /// was altered, removed or reordered and exit 1, or exit 0 when the log verifies.
    Verify {
        /// Trust this public key (64 hex digits, from `tackle audit key`) instead of the one
        /// in the state directory.
        #[arg(long, value_name = "HEX")]
        key: Option<String>,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print the public half of the key that signs the checkpoints (hex), made if there is
    /// none yet; keep a copy elsewhere to verify with `--key`.
    Key,
    /// Write the records for a SIEM, one JSON object a line: the stored record (`jsonl`) or
    /// an OCSF API Activity event (`ocsf`).
    Export {
        #[arg(long, value_enum, default_value_t = Format::Jsonl)]
        format: Format,
        /// Only this session's calls.
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        /// Only calls of this tool.
        #[arg(long, value_name = "NAME")]
        tool: Option<String>,
        /// Only calls since this long ago (`30m`, `7d`) or this RFC 3339 time or date.
        #[arg(long, value_name = "DURATION|TIME")]
        since: Option<String>,
        /// At most the newest N calls.
        #[arg(long, value_name = "N")]
        limit: Option<usize>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Jsonl,
    Ocsf,
}

pub async fn run(global: &Global, command: AuditCommand) -> Result<i32> {
    let loaded = load_config(global)?;
    let store = open_store(&loaded.config)?;
    match command {
        AuditCommand::Verify { key, json } => verify(&store, key.as_deref(), json, global).await,
        AuditCommand::Key => {
            let key = store
                .audit_public_key()
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            outln!("{}", tackle_store::hex(&key))?;
            Ok(exit::OK)
        }
        AuditCommand::Export {
            format,
            session,
            tool,
            since,
            limit,
        } => {
            let query = AuditQuery {
                session,
                tool,
                since: since.as_deref().map(parse_since),
                limit,
            };
            let records = match store.audit_export(query).await {
                Ok(records) => records,
                Err(e @ StoreError::BadTime { .. }) => {
                    return Err(usage(format!(
                        "--since {e}, or a duration such as 30m, 2h or 7d"
                    )))
                }
                Err(e) => return Err(anyhow::anyhow!("cannot read the audit log: {e}")),
            };
            for record in &records {
                let line = match format {
                    Format::Jsonl => serde_json::to_string(record)?,
                    Format::Ocsf => serde_json::to_string(&ocsf::event(record))?,
                };
                outln!("{line}")?;
            }
            Ok(exit::OK)
        }
    }
}

async fn verify(
    store: &tackle_store::Store,
    key: Option<&str>,
    json: bool,
    global: &Global,
) -> Result<i32> {
    let trusted = match key {
        None => None,
        Some(text) => {
            let bytes = tackle_store::unhex(text.trim())
                .and_then(|b| <[u8; 32]>::try_from(b).ok())
                .ok_or_else(|| {
                    usage("--key takes a public key of 64 hex digits (`tackle audit key`)")
                })?;
            Some(bytes)
        }
    };
    let v = store
        .verify_audit(trusted)
        .await
        .map_err(|e| anyhow::anyhow!("cannot read the audit log: {e}"))?;
    let code = if v.problem.is_some() {
        exit::FAILED
    } else {
        exit::OK
    };
    if json {
        outln!(
            "{}",
            serde_json::json!({
                "ok": v.problem.is_none(),
                "problem": v.problem.as_ref().map(ToString::to_string),
                "chained": v.chained,
                "checkpoints": v.checkpoints,
                "running": v.running,
                "before_chain": v.before_chain,
                "unsigned_tail": v.unsigned_tail,
            })
        )?;
        return Ok(code);
    }
    if let Some(problem) = &v.problem {
        eprintln!("audit log does not verify: {problem}");
        return Ok(code);
    }
    outln!(
        "audit log verifies: {} records in the chain, {} signed checkpoints",
        v.chained,
        v.checkpoints
    )?;
    if !global.quiet {
        if v.unsigned_tail > 0 {
            eprintln!(
                "note: the last {} records are chained but not yet under a signed checkpoint (the next process to open the store signs them)",
                v.unsigned_tail
            );
        }
        if v.running > 0 {
            eprintln!(
                "note: {} calls are still running; they join the chain when they end",
                v.running
            );
        }
        if v.before_chain > 0 {
            eprintln!(
                "note: {} records were written before the chain existed and are not covered",
                v.before_chain
            );
        }
    }
    Ok(code)
}
