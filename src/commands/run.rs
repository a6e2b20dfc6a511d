//! `tackle run -m TEXT`: one task, the answer streamed on stdout, tool calls on stderr.

use crate::app::Selection;
use crate::approval::approver_for_cli;
use crate::cli::{Global, RunArgs};
use crate::exit;
use crate::runtime::Runtime;
use crate::turn::run_rendered;
use anyhow::Result;
use tackle_agent::DoneReason;

pub async fn run(global: &Global, args: RunArgs) -> Result<i32> {
    let selection = Selection {
        agent: args.agent.clone(),
        template: args.template.clone(),
        ..Selection::default()
    };
    let rt = Runtime::build(global, &selection).await?;
    let mut session = rt.session(args.session.as_deref()).await?;
    let outcome = run_rendered(
        &rt,
        &mut session,
        &args.message,
        approver_for_cli(args.yes),
        args.json,
        global.quiet,
    )
    .await;
    crate::background::finish(&rt, args.no_wait, global.quiet).await;
    // `-q`: only errors on stderr.
    if !args.json && !global.quiet {
        eprintln!(
            "session: {} (resume with --session {})",
            session.id(),
            session.id()
        );
    }
    rt.app.shutdown().await;
    let outcome = outcome?;
    Ok(match outcome.reason {
        DoneReason::Cancelled => 130,
        DoneReason::LoopGuard => exit::FAILED,
        _ if outcome.needs_approval > 0 => {
            exit::for_kind(tackle_protocol::ErrorKind::NeedsApproval)
        }
        _ if outcome.denied > 0 => exit::for_kind(tackle_protocol::ErrorKind::Denied),
        _ => exit::OK,
    })
}
