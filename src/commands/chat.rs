//! `tackle chat`: a line-based REPL with streamed answers and inline `y/n/a` approvals. All of
//! its output goes through `term`, the one writer of the terminal.

mod extensions;
mod input;
mod wakeups;

use crate::app::Selection;
use crate::approval::approver_for_session;
use crate::approval_queue::ApprovalQueue;
use crate::cli::{ChatArgs, Global};
use crate::exit;
use crate::queued_prompt::{FrontEnd, QueuedPrompt};
use crate::runtime::Runtime;
use crate::term::{self, Paint};
use crate::turn::run_rendered;
use anyhow::Result;
use rustyline::error::ReadlineError;
use rustyline::DefaultEditor;
use tackle_agent::profiles::mode_name;
use tackle_agent::{DoneReason, Session};
use tackle_protocol::message::Role;
use tackle_protocol::text::preview;

/// The commands, one per line, for `/help`.
const COMMANDS: [(&str, &str); 11] = [
    ("/help", "this list"),
    ("/tools", "the tools the agent has"),
    (
        "/extensions",
        "the extensions the tools come from, on or disabled in this session",
    ),
    (
        "/disable EXT",
        "hide an extension's tools from the model and refuse calls to them, in this session",
    ),
    ("/enable EXT", "undo /disable EXT"),
    (
        "/permissions",
        "which tools run without asking, ask first, or are allowed for this session",
    ),
    ("/model", "the backend and model in use"),
    ("/session", "this session's id and size"),
    (
        "/compact",
        "summarise the conversation so far to free context",
    ),
    (
        "/clear",
        "start a new, empty session (this one stays stored)",
    ),
    ("/quit", "end the chat (also /exit, Ctrl-D)"),
];

const KEYS: &str =
    "Ctrl-C stops the current turn (at an approval prompt it also denies the call); Ctrl-D quits.";

/// How many of the last messages a resumed session shows.
const RECAP_MESSAGES: usize = 4;

pub async fn run(global: &Global, args: ChatArgs) -> Result<i32> {
    let selection = Selection {
        agent: args.agent.clone(),
        template: args.template.clone(),
        watch_plugins: true,
        llm: args.llm.choice(),
        ..Selection::default()
    };
    let rt = Runtime::build(global, &selection).await?;
    if let Some(id) = args.session.as_deref() {
        if !args.new && !rt.session_exists(id).await? {
            let message = unknown_session(&rt, id).await;
            rt.app.shutdown().await;
            return Err(exit::not_found(message));
        }
    }
    let mut session = rt.session(args.session.as_deref()).await?;
    // The prompt is also an entry in the approval queue, answerable from anywhere; one
    // queue (and one watch of its marker) for the whole chat.
    let queue = ApprovalQueue::new(rt.store.clone());
    let approver_for = |session: &Session| {
        approver_for_session(false, |prompt| {
            std::sync::Arc::new(QueuedPrompt::new(
                prompt,
                std::sync::Arc::clone(&queue),
                &rt.agent_name,
                session.id(),
                FrontEnd::TERMINAL,
            ))
        })
    };
    let mut approver = approver_for(&session);
    let mut editor = DefaultEditor::new()?;
    let history = rt.app.state_dir.join("chat_history.txt");
    let _ = editor.load_history(&history);
    // Uncoloured: the line editor measures the prompt's width from its characters.
    let mut prompt = input::Input::new(editor, "you> ");
    let config = crate::app::load_config(global)?.config;
    let mut wakeups = wakeups::Wakeups::new(&rt, &config, &session);
    term::err_line(&format!(
        "{} — agent `{}`, model `{}`, session {}. /help lists the commands.",
        Paint::Bold.on_stderr("tackle chat"),
        rt.agent_name,
        rt.agent_loop.config().model,
        session.id()
    ));
    recap(&session);
    loop {
        // A wake-up that falls due while the person is at the prompt is answered there; one
        // that falls due during a turn waits for it to end.
        let line = match prompt.next(wakeups.due()).await {
            input::Next::Line(line) => line,
            input::Next::Other(due) => {
                prompt
                    .beside(wakeups.fire(&rt, &mut session, &queue, due))
                    .await;
                continue;
            }
        };
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
        if let Some(editor) = prompt.editor() {
            let _ = editor.add_history_entry(input);
        }
        let switch = [("/disable", false), ("/enable", true)]
            .into_iter()
            .find_map(|(command, on)| command_arg(input, command).map(|arg| (arg, on)));
        if let Some((arg, on)) = switch {
            extensions::switch(&rt, &session, arg, on).await;
            continue;
        }
        match input {
            "/quit" | "/exit" => break,
            "/help" => help(),
            "/tools" => list_tools(&rt),
            "/permissions" => permissions(&rt, &session),
            "/model" => term::err_line(&format!(
                "backend `{}`, model `{}` (another: restart with --backend NAME / --model NAME)",
                rt.agent_loop.provider().name(),
                rt.agent_loop.config().model
            )),
            "/session" => term::err_line(&format!(
                "session {} ({} messages in context)",
                session.id(),
                session.messages().len()
            )),
            "/compact" => compact(&rt, &mut session).await,
            "/extensions" => extensions::list(&rt, &session),
            "/clear" => match rt.session(None).await {
                Ok(fresh) => {
                    term::err_line(&format!(
                        "new session {} (the previous one, {}, stays stored)",
                        fresh.id(),
                        session.id()
                    ));
                    session = fresh;
                    approver = approver_for(&session);
                    wakeups.follow(&session);
                }
                Err(e) => term::err_line(&format!("cannot start a new session: {e}")),
            },
            _ if input.starts_with('/') => term::err_line(&format!(
                "unknown command `{}`; /help lists the commands",
                preview(input, 40)
            )),
            _ => turn(&rt, &mut session, input, approver.clone()).await,
        }
    }
    // Like `tackle run`: background tasks started in this chat finish (or, on Ctrl-C, are
    // cancelled) and post their results into the session before the process ends.
    crate::background::finish(&rt, false, false, global.quiet).await;
    rt.app.shutdown().await;
    let _ = std::fs::create_dir_all(&rt.app.state_dir);
    if let Some(mut editor) = prompt.finish().await {
        let _ = editor.save_history(&history);
    }
    term::err_line(&format!(
        "session: {} (resume with tackle chat --session {})",
        session.id(),
        session.id()
    ));
    Ok(exit::OK)
}

/// What follows `command` in `input` (`/disable web` → `web`); none for another command.
fn command_arg<'a>(input: &'a str, command: &str) -> Option<&'a str> {
    match input.strip_prefix(command)? {
        "" => Some(""),
        rest if rest.starts_with(char::is_whitespace) => Some(rest.trim()),
        _ => None,
    }
}

/// The error for `--session ID` naming no stored session: the closest ids, and `--new`.
async fn unknown_session(rt: &Runtime, id: &str) -> String {
    let ids: Vec<String> = rt
        .store
        .list_sessions()
        .await
        .map(|list| list.into_iter().map(|s| s.id.0).collect())
        .unwrap_or_default();
    let near = tackle_protocol::suggest::nearest(id, ids.iter().map(String::as_str), 0.75);
    let hint = match tackle_protocol::suggest::hint(&near) {
        h if h.is_empty() => "; `tackle sessions list` shows the stored ones".to_string(),
        h => h,
    };
    format!(
        "no session `{}`{hint} (add --new to start a session with that id)",
        preview(id, 80)
    )
}

/// A resumed session's last exchanges, so the person sees where it left off.
fn recap(session: &Session) {
    let shown: Vec<_> = session
        .messages()
        .iter()
        .filter(|m| matches!(m.role, Role::User | Role::Assistant) && !m.content.trim().is_empty())
        .collect();
    if shown.is_empty() {
        return;
    }
    term::err_line(&format!(
        "resumed: {} messages; the last ones:",
        session.messages().len()
    ));
    for m in &shown[shown.len().saturating_sub(RECAP_MESSAGES)..] {
        let who = if m.role == Role::User { "you" } else { "agent" };
        let first = m.content.trim().lines().next().unwrap_or("");
        term::err_line(&format!(
            "  {} {}",
            Paint::Dim.on_stderr(&format!("{who}>")),
            preview(first, 120)
        ));
    }
}

fn help() {
    term::err_line("Commands:");
    for (name, what) in COMMANDS {
        term::err_line(&format!("  {name:<13} {what}"));
    }
    term::err_line(KEYS);
}

async fn turn(
    rt: &Runtime,
    session: &mut Session,
    input: &str,
    approver: std::sync::Arc<dyn tackle_protocol::Approver>,
) {
    // A cancelled turn is reported by the renderer (`(cancelled)`); the chat goes on.
    match run_rendered(rt, session, input, approver, false, false).await {
        // Said as `tackle run` says it, or the turn looks as if it never ended.
        Ok(o) if o.reason == DoneReason::Answer && o.text.trim().is_empty() => {
            term::err_line("(the model's answer was empty)");
        }
        Ok(_) => {}
        Err(e) => term::err_line(&format!(
            "{} {}",
            Paint::Error.on_stderr("error:"),
            crate::errors::render_error(&e)
        )),
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

/// Each tool's approval rule, and the "always for this session" answers given so far.
fn permissions(rt: &Runtime, session: &Session) {
    let specs = rt.app.dispatcher.registry().specs();
    let width = specs.iter().map(|s| s.name.len()).max().unwrap_or(4).max(4);
    term::err_line(&format!(
        "  {:<width$}  {:<20}  PROFILE",
        "TOOL", "APPROVAL"
    ));
    for s in &specs {
        let approval = if session.approvals().allows(&s.name) {
            "allowed for this session".to_string()
        } else {
            s.approval.to_string()
        };
        term::err_line(&format!(
            "  {:<width$}  {:<20}  {}",
            s.name,
            approval,
            mode_name(rt.app.tool_profile.mode_for(&s.name))
        ));
    }
}

async fn compact(rt: &Runtime, session: &mut Session) {
    match rt.compactor.compact_session(session).await {
        Ok(summary) => term::err_line(&format!("compacted. summary:\n{summary}")),
        Err(e) => term::err_line(&format!("cannot compact: {}", e.message)),
    }
}
