//! `tackle approvals list|allow ID|deny ID`: the approval queue from a terminal. Calls that
//! wait for a person (a schedule's fire in `tackle daemon`) are listed with what they will do;
//! the first answer from any front end wins, and a later one is told what it was
//! (docs/decisions/0030-one-approval-queue.md). The answer is recorded as `cli:USER`, and the
//! audit log names it as the call's approver (`queue:cli:USER`).

use crate::app::{load_config, open_store};
use crate::cli::Global;
use crate::exit::{self};
use anyhow::{anyhow, Result};
use clap::Subcommand;
use tackle_protocol::text::preview;
use tackle_store::{Approval, ApprovalReply, Store, StoreError};
use time::OffsetDateTime;

/// How many answered approvals `list --all` shows.
const RECENT: usize = 50;

#[derive(Debug, Subcommand)]
pub enum ApprovalsCommand {
    /// Calls waiting for an answer, oldest first: id, agent, tool, time left, and what the
    /// call will do (the terminal prompt's text).
    List {
        /// Also those answered, expired or cancelled (the newest 50), newest first.
        #[arg(long)]
        all: bool,
        /// One JSON array of approvals.
        #[arg(long)]
        json: bool,
    },
    /// Allow the call waiting as ID.
    Allow {
        /// The approval's id (`tackle approvals list` shows it).
        id: String,
        /// Also allow its tool for the rest of the calling session.
        #[arg(long)]
        session: bool,
    },
    /// Deny the call waiting as ID.
    Deny {
        /// The approval's id (`tackle approvals list` shows it).
        id: String,
    },
}

pub async fn run(global: &Global, cmd: ApprovalsCommand) -> Result<i32> {
    let loaded = load_config(global)?;
    let store = open_store(&loaded.config)?;
    match cmd {
        ApprovalsCommand::List { all, json } => list(&store, all, json, global.quiet).await,
        ApprovalsCommand::Allow { id, session } => {
            let reply = if session {
                ApprovalReply::AllowForSession
            } else {
                ApprovalReply::Allow
            };
            answer(&store, &id, reply).await
        }
        ApprovalsCommand::Deny { id } => answer(&store, &id, ApprovalReply::Deny).await,
    }
}

async fn list(store: &Store, all: bool, json: bool, quiet: bool) -> Result<i32> {
    let failed = |e: StoreError| anyhow!("cannot read the approval queue: {e}");
    crate::waiter::close_abandoned(store)
        .await
        .map_err(failed)?;
    let approvals = if all {
        // Listing pending ones first records those past their deadline as expired.
        store
            .list_pending_approvals(OffsetDateTime::now_utc())
            .await
            .map_err(failed)?;
        store.list_recent_approvals(RECENT).await.map_err(failed)?
    } else {
        store
            .list_pending_approvals(OffsetDateTime::now_utc())
            .await
            .map_err(failed)?
    };
    if json {
        outln!("{}", serde_json::to_string_pretty(&approvals)?)?;
        return Ok(exit::OK);
    }
    if approvals.is_empty() {
        if !quiet {
            eprintln!("no approvals waiting");
        }
        return Ok(exit::OK);
    }
    let now = OffsetDateTime::now_utc();
    for a in &approvals {
        outln!("{}", head(a, now))?;
        for line in a.preview.lines() {
            outln!("    {}", preview(line, 200))?;
        }
    }
    Ok(exit::OK)
}

/// `ID  agent › tool  pending, 4m 59s left  session S` (or how it was answered, by whom).
fn head(a: &Approval, now: OffsetDateTime) -> String {
    let state = match (&a.status, &a.answered_by) {
        (tackle_store::ApprovalStatus::Pending, _) => {
            let left = (a.deadline - now).whole_seconds().max(0);
            format!("pending, {}m {:02}s left", left / 60, left % 60)
        }
        (status, Some(by)) => format!("{} by {}", status.as_str(), preview(by, 80)),
        (status, None) => status.as_str().to_string(),
    };
    let session = if a.session_id.is_empty() {
        String::new()
    } else {
        format!("  session {}", preview(&a.session_id, 80))
    };
    format!(
        "{}  {} › {}  {state}{session}",
        a.id,
        preview(&a.agent, 80),
        preview(&a.tool, 80)
    )
}

async fn answer(store: &Store, id: &str, reply: ApprovalReply) -> Result<i32> {
    let by = format!("cli:{}", operator());
    // An entry whose waiter has ended is closed first: answering it would release nothing.
    crate::waiter::close_abandoned(store)
        .await
        .map_err(|e| anyhow!("cannot read the approval queue: {e}"))?;
    match store.answer_approval(id, reply, &by).await {
        Ok(a) => {
            outln!(
                "approval {} {}: `{}` of {}",
                a.id,
                a.status.as_str(),
                preview(&a.tool, 80),
                preview(&a.agent, 80)
            )?;
            Ok(exit::OK)
        }
        Err(StoreError::UnknownApproval(_)) => Err(exit::not_found(format!(
            "no approval `{}`; `tackle approvals list --all` shows the queue",
            preview(id, 80)
        ))),
        Err(e @ StoreError::AlreadyAnswered { .. }) => Err(anyhow!("{e}")),
        Err(e) => Err(anyhow!("cannot answer approval: {e}")),
    }
}

/// The person at this terminal as the record names them: the login name, else the uid.
fn operator() -> String {
    use std::os::unix::fs::MetadataExt;
    std::env::var("USER")
        .or_else(|_| std::env::var("LOGNAME"))
        .ok()
        .filter(|u| !u.is_empty() && u.len() <= 64 && !u.chars().any(char::is_control))
        .or_else(|| {
            std::fs::metadata("/proc/self")
                .ok()
                .map(|m| format!("uid{}", m.uid()))
        })
        .unwrap_or_else(|| "unknown".to_string())
}
