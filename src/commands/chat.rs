//! `tackle chat`: a line-based REPL with streamed answers and inline `y/n/a` approvals. All of
//! its output goes through `term`, the one writer of the terminal.

use crate::app::Selection;
use crate::approval::approver_for_cli;
use crate::cli::{ChatArgs, Global};
use crate::exit;
use crate::runtime::Runtime;
use crate::term;
use crate::turn::run_rendered;
use anyhow::Result;
use rustyline::error::ReadlineError;
use rustyline::DefaultEditor;
use tackle_agent::Session;

const HELP: &str = "Commands: /help  /tools  /session  /compact  /quit   (Ctrl-C stops the current turn, and at an approval prompt also denies the call; Ctrl-D quits)";

pub async fn run(global: &Global, args: ChatArgs) -> Result<i32> {
    let selection = Selection {
        agent: args.agent.clone(),
        template: args.template.clone(),
        watch_plugins: true,
        ..Selection::default()
    };
    let rt = Runtime::build(global, &selection).await?;
    let mut session = rt.session(args.session.as_deref()).await?;
    let approver = approver_for_cli(false);
    let mut editor = DefaultEditor::new()?;
    let history = rt.app.state_dir.join("chat_history.txt");
    let _ = editor.load_history(&history);
    term::err_line(&format!(
        "tackle chat — agent `{}`, session {}. {HELP}",
        rt.agent_name,
        session.id()
    ));
    loop {
        let line = tokio::task::block_in_place(|| editor.readline("you> "));
        let line = match line {
            Ok(line) => line,
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(e.into()),
        };
        let input = line.trim();
        if input.is_empty() {
            continue;
        }
        let _ = editor.add_history_entry(input);
        match input {
            "/quit" | "/exit" => break,
            "/help" => term::err_line(HELP),
            "/tools" => list_tools(&rt),
            "/session" => term::err_line(&format!(
                "session {} ({} messages in context)",
                session.id(),
                session.messages().len()
            )),
            "/compact" => compact(&rt, &mut session).await,
            _ if input.starts_with('/') => {
                term::err_line(&format!("unknown command `{input}`. {HELP}"))
            }
            _ => turn(&rt, &mut session, input, approver.clone()).await,
        }
    }
    // Like `tackle run`: background tasks started in this chat finish (or, on Ctrl-C, are
    // cancelled) and post their results into the session before the process ends.
    crate::background::finish(&rt, false, global.quiet).await;
    rt.app.shutdown().await;
    let _ = std::fs::create_dir_all(&rt.app.state_dir);
    let _ = editor.save_history(&history);
    term::err_line(&format!(
        "session: {} (resume with tackle chat --session {})",
        session.id(),
        session.id()
    ));
    Ok(exit::OK)
}

async fn turn(
    rt: &Runtime,
    session: &mut Session,
    input: &str,
    approver: std::sync::Arc<dyn tackle_protocol::Approver>,
) {
    // A cancelled turn is reported by the renderer (`(cancelled)`); the chat goes on.
    if let Err(e) = run_rendered(rt, session, input, approver, false, false).await {
        term::err_line(&format!("error: {e}"));
    }
}

fn list_tools(rt: &Runtime) {
    for s in rt.app.dispatcher.registry().specs() {
        term::err_line(&format!(
            "  {:<24} {:<8} {:<6} {}",
            s.name,
            s.owner,
            s.risk.to_string(),
            s.approval
        ));
    }
}

async fn compact(rt: &Runtime, session: &mut Session) {
    match rt.compactor.compact_session(session).await {
        Ok(summary) => term::err_line(&format!("compacted. summary:\n{summary}")),
        Err(e) => term::err_line(&format!("cannot compact: {}", e.message)),
    }
}
