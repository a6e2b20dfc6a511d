//! `tackle sessions list|show ID|rm ID`: the stored conversations.

use crate::app::{load_config, open_store, App};
use crate::cli::{Global, SessionsCommand};
use crate::commands::audit::short_time;
use crate::exit;
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
    let store = open_store(&App::state_dir_for(&loaded.config))?;
    match cmd {
        SessionsCommand::List { json, tree: true } => {
            crate::commands::session_tree::list(&store, json).await
        }
        SessionsCommand::List { json, .. } => list(&store, json, global.quiet).await,
        SessionsCommand::Show { id, json } => show(&store, &SessionId(id), json).await,
        SessionsCommand::Rm { id } => rm(&store, &SessionId(id)).await,
    }
}

/// An unknown id is exit 1 naming it; other store errors as they are.
fn store_error(id: &SessionId, e: StoreError) -> anyhow::Error {
    match e {
        StoreError::UnknownSession(_) => anyhow!(
            "no session `{}`; `tackle sessions list` shows the stored sessions",
            preview(id.as_str(), 200)
        ),
        other => anyhow!("cannot read the sessions: {other}"),
    }
}

async fn list(store: &Store, json: bool, quiet: bool) -> Result<i32> {
    let sessions = store
        .session_summaries()
        .await
        .map_err(|e| anyhow!("cannot read the sessions: {e}"))?;
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
    let width = ids.iter().map(|i| i.chars().count()).max().unwrap_or(0);
    for (s, id) in sessions.iter().zip(&ids) {
        let pad = " ".repeat(width.saturating_sub(id.chars().count()));
        let first = s
            .first_user_message
            .as_deref()
            .map(|m| format!("  {}", preview(m, 60)))
            .unwrap_or_default();
        outln!(
            "{id}{pad}  {}  {}  {:>4} {}{first}",
            short_time(&s.created_at),
            short_time(&s.updated_at),
            s.messages,
            if s.messages == 1 {
                "message "
            } else {
                "messages"
            },
        )?;
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
