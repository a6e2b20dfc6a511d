//! `tackle run TASK` (or `-m TEXT`, `-` for stdin): one task, the answer streamed on stdout,
//! tool calls on stderr.

use crate::app::Selection;
use crate::approval::approver_for_session;
use crate::approval_queue::ApprovalQueue;
use crate::cli::{Global, RunArgs};
use crate::exit::{self, usage};
use crate::queued_prompt::{FrontEnd, QueuedPrompt};
use crate::runtime::Runtime;
use crate::turn::run_rendered;
use anyhow::{Context, Result};
use std::io::Read;
use std::sync::Arc;
use tackle_agent::{DoneReason, Session};
use tackle_protocol::message::Role;

pub async fn run(global: &Global, args: RunArgs) -> Result<i32> {
    let task = task_text(&args)?;
    if let Some(id) = &args.session {
        tackle_protocol::ids::check(tackle_protocol::ids::IdKind::Session, id)?;
    }
    let selection = Selection {
        agent: args.agent.clone(),
        template: args.template.clone(),
        llm: args.llm.choice(),
        ..Selection::default()
    };
    let rt = Runtime::build(global, &selection).await?;
    let existed = match &args.session {
        Some(id) => rt.session_exists(id).await?,
        None => false,
    };
    let mut session = rt.session(args.session.as_deref()).await?;
    // The prompt is also an entry in the approval queue, answerable from anywhere.
    let approver = approver_for_session(args.yes, |prompt| {
        Arc::new(QueuedPrompt::new(
            prompt,
            ApprovalQueue::new(rt.store.clone()),
            &rt.agent_name,
            session.id(),
            FrontEnd::TERMINAL,
        ))
    });
    let outcome = run_rendered(&rt, &mut session, &task, approver, args.json, global.quiet).await;
    crate::background::finish(&rt, args.no_wait, args.json, global.quiet).await;
    // A run that failed before the model answered leaves nothing worth resuming: its session
    // (made by this run) would only hold the task.
    let failed = match &outcome {
        Err(_) => true,
        Ok(o) => o.reason == DoneReason::Error,
    };
    let removed = failed && !existed && remove_if_unanswered(&rt, &session).await;
    // `-q`: only errors on stderr.
    if !args.json && !global.quiet && !removed {
        eprintln!(
            "session: {} (resume with --session {})",
            session.id(),
            session.id()
        );
    }
    rt.app.shutdown().await;
    let outcome = outcome?;
    if outcome.reason == DoneReason::Answer
        && outcome.text.trim().is_empty()
        && !args.json
        && !global.quiet
    {
        eprintln!("(the model's answer was empty)");
    }
    Ok(exit_code(&outcome))
}

/// The exit-code table (`crate::exit`) for how the turn ended.
fn exit_code(outcome: &tackle_agent::TurnOutcome) -> i32 {
    match outcome.reason {
        DoneReason::Cancelled => exit::CANCELLED,
        // The task did not finish (`MaxIterations`: the tree used its whole iteration pool).
        DoneReason::LoopGuard | DoneReason::MaxIterations | DoneReason::Error => exit::FAILED,
        _ if outcome.needs_approval > 0 => exit::NEEDS_APPROVAL,
        _ if outcome.denied > 0 => exit::DENIED,
        _ if outcome.declined > 0 => exit::DECLINED,
        _ => exit::OK,
    }
}

/// The task from `-m TEXT` or the positional TASK; `-` reads all of stdin.
fn task_text(args: &RunArgs) -> Result<String> {
    let given = args.message.as_deref().or(args.task.as_deref()).ok_or_else(|| {
        usage("no task: give it as `tackle run \"TASK\"`, `-m TEXT`, or `-m -` to read it from stdin")
    })?;
    let text = if given == "-" {
        let mut buf = String::new();
        std::io::stdin()
            .read_to_string(&mut buf)
            .context("cannot read the task from stdin")?;
        buf
    } else {
        given.to_string()
    };
    if text.trim().is_empty() {
        return Err(usage(if given == "-" {
            "the task read from stdin is empty"
        } else {
            "the task is empty"
        }));
    }
    Ok(text)
}

/// Deletes `session` when no model answer reached it; whether it did.
async fn remove_if_unanswered(rt: &Runtime, session: &Session) -> bool {
    if session.messages().iter().any(|m| m.role == Role::Assistant) {
        return false;
    }
    let id = tackle_store::SessionId(session.id().to_string());
    match rt.store.delete_session(&id).await {
        Ok(_) => true,
        Err(e) => {
            tracing::warn!("cannot remove the unanswered session {}: {e}", session.id());
            false
        }
    }
}
