//! `tackle sessions list|show ID|rm ID|prune|unfreeze ID|verify ID|rotate-key AGENT`: the
//! stored conversations.

use crate::app::{load_config, open_store, App};
use crate::cli::{Global, SessionsCommand};
use crate::commands::audit::{parse_duration, short_time};
use crate::exit::{self, usage};
use anyhow::{anyhow, Result};
use serde_json::{json, Value};
use std::collections::HashMap;
use tackle_protocol::message::Message;
use tackle_protocol::text::preview;
use tackle_store::{EntryKind, SessionId, SessionSummary, Store, StoreError, StoredEntry};

/// The most of one tool result `show` prints; the rest is counted, not shown.
const RESULT_LINES: usize = 12;
const RESULT_CHARS: usize = 2_000;

pub async fn run(global: &Global, cmd: SessionsCommand) -> Result<i32> {
    let loaded = load_config(global)?;
    let state_dir = App::state_dir_for(&loaded.config);
    let store = open_store(&loaded.config)?;
    match cmd {
        SessionsCommand::List {
            json, tree: true, ..
        } => crate::commands::session_tree::list(&store, json).await,
        SessionsCommand::List { json, limit, .. } => list(&store, json, limit, global.quiet).await,
        SessionsCommand::Prune { older_than } => prune(&store, &older_than, global.quiet).await,
        SessionsCommand::Show { id, json } => show(&store, &SessionId(id), json).await,
        SessionsCommand::Rm { id } => rm(&store, &SessionId(id)).await,
        SessionsCommand::Unfreeze { id } => unfreeze(&state_dir, &id),
        SessionsCommand::Verify { id, json } => {
            crate::commands::session_verify::verify(&store, &SessionId(id), json, global).await
        }
        SessionsCommand::RotateKey { agent, json } => {
            crate::commands::session_verify::rotate(&loaded.config, &store, &agent, json).await
        }
    }
}

/// A session a honeytoken froze may call tools again (docs/decisions/0034-honeytokens.md).
fn unfreeze(state_dir: &std::path::Path, id: &str) -> Result<i32> {
    let shown = preview(id, 200);
    if tackle_agent::honeytoken::unfreeze(state_dir, id).map_err(|e| anyhow!("{e}"))? {
        outln!("session {shown} may call tools again from its next run")?;
        Ok(exit::OK)
    } else {
        Err(exit::not_found(format!(
            "session {shown} is not frozen (`tackle doctor` lists the frozen ones)"
        )))
    }
}

/// An unknown id is "not found" naming it; other store errors as they are.
pub(crate) fn store_error(id: &SessionId, e: StoreError) -> anyhow::Error {
    match e {
        StoreError::UnknownSession(_) => exit::not_found(format!(
            "no session `{}`; `tackle sessions list` shows the stored sessions",
            preview(id.as_str(), 200)
        )),
        other => anyhow!("cannot read the sessions: {other}"),
    }
}

/// How many sessions `list` shows without `--limit`.
const DEFAULT_LIMIT: usize = 20;

async fn list(store: &Store, json: bool, limit: Option<usize>, quiet: bool) -> Result<i32> {
    let mut sessions = store
        .session_summaries()
        .await
        .map_err(|e| anyhow!("cannot read the sessions: {e}"))?;
    // Scripts (`--json`) get every session unless they ask for fewer; people get a screenful.
    let limit = match limit {
        Some(0) => None,
        Some(n) => Some(n),
        None if json => None,
        None => Some(DEFAULT_LIMIT),
    };
    let hidden = match limit {
        Some(n) if sessions.len() > n => {
            let hidden = sessions.len() - n;
            sessions.truncate(n);
            hidden
        }
        _ => 0,
    };
    if json {
        outln!("{}", serde_json::to_string_pretty(&sessions)?)?;
        return Ok(exit::OK);
    }
    if sessions.is_empty() {
        if !quiet {
            eprintln!("no sessions yet (`tackle run` and `tackle chat` make them)");
        }
        return Ok(exit::OK);
    }
    let ids: Vec<String> = sessions
        .iter()
        .map(|s| preview(s.id.as_str(), 60))
        .collect();
    let width = ids
        .iter()
        .map(|i| i.chars().count())
        .max()
        .unwrap_or(0)
        .max(2);
    outln!(
        "{:<width$}  {:<20}  {:<20}  {:>13}  FIRST MESSAGE",
        "ID",
        "CREATED",
        "LAST ACTIVE",
        "MESSAGES"
    )?;
    for (s, id) in sessions.iter().zip(&ids) {
        let pad = " ".repeat(width.saturating_sub(id.chars().count()));
        let first = s
            .first_user_message
            .as_deref()
            .map(|m| format!("  {}", preview(m, 60)))
            .unwrap_or_default();
        outln!(
            "{id}{pad}  {:<20}  {:<20}  {:>13}{first}",
            short_time(&s.created_at),
            short_time(&s.updated_at),
            s.messages,
        )?;
    }
    if hidden > 0 && !quiet {
        eprintln!("({hidden} older not shown; --limit N shows more, --limit 0 all)");
    }
    Ok(exit::OK)
}

/// `sessions prune --older-than D`: delete the sessions last active before now − D.
async fn prune(store: &Store, older_than: &str, quiet: bool) -> Result<i32> {
    let age = parse_duration(older_than.trim()).ok_or_else(|| {
        usage(format!(
            "--older-than `{}` is not a duration; use e.g. 30d, 12h or 2w",
            preview(older_than, 40)
        ))
    })?;
    let cutoff = time::OffsetDateTime::now_utc()
        .checked_sub(time::Duration::try_from(age).unwrap_or(time::Duration::MAX))
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    let sessions = store
        .list_sessions()
        .await
        .map_err(|e| anyhow!("cannot read the sessions: {e}"))?;
    let mut removed = 0usize;
    for s in sessions {
        let rfc3339 = &time::format_description::well_known::Rfc3339;
        // A time the store did not write is left alone rather than guessed at.
        let Ok(active) = time::OffsetDateTime::parse(&s.updated_at, rfc3339) else {
            continue;
        };
        if active < cutoff {
            match store.delete_session(&s.id).await {
                Ok(_) | Err(StoreError::UnknownSession(_)) => removed += 1,
                Err(e) => return Err(anyhow!("cannot remove session {}: {e}", s.id.as_str())),
            }
        }
    }
    if !quiet {
        eprintln!(
            "removed {removed} session{} not active for {}",
            if removed == 1 { "" } else { "s" },
            preview(older_than.trim(), 40)
        );
    }
    Ok(exit::OK)
}

async fn show(store: &Store, id: &SessionId, json: bool) -> Result<i32> {
    let summary = store
        .session_summary(id)
        .await
        .map_err(|e| store_error(id, e))?;
    let entries = store.entries(id).await.map_err(|e| store_error(id, e))?;
    if json {
        let out = json!({"session": summary, "entries": entries});
        outln!("{}", serde_json::to_string_pretty(&out)?)?;
        return Ok(exit::OK);
    }
    outln!("{}", header(&summary))?;
    // A tool result names its call by id; the call (and its tool) came earlier.
    let mut tool_names: HashMap<String, String> = HashMap::new();
    for entry in &entries {
        outln!()?;
        outln!("{}", render_entry(entry, &mut tool_names))?;
    }
    Ok(exit::OK)
}

fn header(s: &SessionSummary) -> String {
    format!(
        "session {} (agent {})\ncreated {}, updated {}, {} message{}",
        preview(s.id.as_str(), 200),
        preview(&s.agent, 60),
        short_time(&s.created_at),
        short_time(&s.updated_at),
        s.messages,
        if s.messages == 1 { "" } else { "s" },
    )
}

/// One entry as a heading line and its indented text.
fn render_entry(entry: &StoredEntry, tool_names: &mut HashMap<String, String>) -> String {
    let time = short_time(&entry.created_at);
    let message: Option<Message> = match entry.kind {
        EntryKind::User | EntryKind::Assistant | EntryKind::ToolResult | EntryKind::System => {
            entry.message()
        }
        EntryKind::Summary | EntryKind::ToolCall => None,
    };
    let text = message
        .as_ref()
        .map(|m| m.content.clone())
        .or_else(|| plain_text(&entry.content))
        .unwrap_or_else(|| entry.content.to_string());
    let mut out = match entry.kind {
        EntryKind::User => format!("[{time}] user:\n{}", indent(&text)),
        EntryKind::System => format!("[{time}] system:\n{}", indent(&text)),
        EntryKind::Summary => format!("[{time}] summary of what came before:\n{}", indent(&text)),
        EntryKind::Assistant => {
            let mut s = format!("[{time}] assistant:");
            if !text.trim().is_empty() {
                s.push('\n');
                s.push_str(&indent(&text));
            }
            for call in message.iter().flat_map(|m| &m.tool_calls) {
                tool_names.insert(call.id.clone(), call.name.clone());
                s.push_str(&format!(
                    "\n  → {} {}",
                    preview(&call.name, 60),
                    crate::render::args_preview(&call.arguments)
                ));
            }
            s
        }
        EntryKind::ToolResult => {
            let tool = message
                .as_ref()
                .and_then(|m| m.tool_call_id.as_ref())
                .and_then(|id| tool_names.get(id))
                .map(|name| format!(" ({})", preview(name, 60)))
                .unwrap_or_default();
            let failed = message.as_ref().is_some_and(|m| m.is_error);
            format!(
                "[{time}] {} result{tool}:\n{}",
                if failed { "✗ tool" } else { "tool" },
                indent(&capped(&text))
            )
        }
        EntryKind::ToolCall => format!("[{time}] tool call:\n{}", indent(&text)),
    };
    if out.ends_with('\n') {
        out.pop();
    }
    out
}

/// The `text` of an entry stored as `{"text": …}` (summaries, plain entries).
fn plain_text(content: &Value) -> Option<String> {
    match content {
        Value::String(s) => Some(s.clone()),
        _ => content
            .get("text")
            .and_then(Value::as_str)
            .map(str::to_string),
    }
}

/// At most [`RESULT_LINES`] lines and [`RESULT_CHARS`] characters, saying what was left out.
fn capped(text: &str) -> String {
    let total = text.lines().count();
    let mut out = String::new();
    let mut shown = 0;
    for line in text.lines().take(RESULT_LINES) {
        if out.chars().count() + line.chars().count() > RESULT_CHARS {
            break;
        }
        out.push_str(line);
        out.push('\n');
        shown += 1;
    }
    if shown == 0 && total > 0 {
        out = preview(text, RESULT_CHARS);
        out.push('\n');
        shown = 1;
    }
    if shown < total {
        out.push_str(&format!("… ({} more lines)", total - shown));
    }
    out
}

/// Each line indented by two spaces, control characters (terminal escapes) made visible-safe.
fn indent(text: &str) -> String {
    text.lines()
        .map(|line| format!("  {}", printable(line)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `line` with every control character but tab replaced by a space: stored text (from a
/// model or a tool) cannot move the cursor or recolour the terminal.
fn printable(line: &str) -> String {
    line.chars()
        .map(|c| if c.is_control() && c != '\t' { ' ' } else { c })
        .collect()
}

async fn rm(store: &Store, id: &SessionId) -> Result<i32> {
    let entries = store
        .delete_session(id)
        .await
        .map_err(|e| store_error(id, e))?;
    outln!(
        "removed session {} ({entries} entr{})",
        preview(id.as_str(), 200),
        if entries == 1 { "y" } else { "ies" }
    )?;
    Ok(exit::OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_results_are_cut_and_counted() {
        let text: String = (1..=30).map(|i| format!("line {i}\n")).collect();
        let out = capped(&text);
        assert!(
            out.contains("line 12\n") && !out.contains("line 13"),
            "{out}"
        );
        assert!(out.ends_with("… (18 more lines)"), "{out}");
        let one = "x".repeat(5_000);
        let out = capped(&one);
        assert!(out.chars().count() <= RESULT_CHARS + 1, "{}", out.len());
        assert_eq!(capped("a\nb"), "a\nb\n");
    }

    #[test]
    fn escapes_in_stored_text_are_neutralised() {
        assert_eq!(indent("a\u{1b}[2Jb\r\nc\td"), "  a [2Jb\n  c\td");
        assert_eq!(indent("a\rb"), "  a b");
    }
}
