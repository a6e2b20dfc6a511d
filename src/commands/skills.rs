//! `tackle skills list | search | show | install | add`: the skills tools, called through the
//! dispatcher like any other call (policy, audit, sanitizer), no model involved.

use crate::app::{App, Selection};
use crate::approval::approver_for_cli;
use crate::cli::{Global, SkillsCommand};
use crate::exit;
use anyhow::Result;
use serde_json::{json, Value};
use tackle_agent::CallRequest;
use tackle_protocol::ToolCall;

pub async fn run(global: &Global, cmd: SkillsCommand) -> Result<i32> {
    // Installing or adding from the command line is the person's own request: it is the approval.
    let listing = matches!(cmd, SkillsCommand::List { json: false, .. });
    let (tool, args, as_json, agent, approved) = match cmd {
        SkillsCommand::List { json, agent } => ("skill_list", json!({}), json, agent, false),
        SkillsCommand::Add {
            file,
            agent,
            bank,
            json,
        } => {
            let mut args = json!({ "content": read_skill_file(&file)? });
            if let Some(bank) = bank {
                args["bank"] = Value::String(bank);
            }
            ("skill_save", args, json, agent, true)
        }
        SkillsCommand::Search { query, json, agent } => (
            "skill_search",
            json!({ "query": query }),
            json,
            agent,
            false,
        ),
        SkillsCommand::Show { name, json, agent } => {
            ("skill_show", json!({ "name": name }), json, agent, false)
        }
        SkillsCommand::Install {
            slug,
            sha256,
            json,
            agent,
        } => {
            let mut args = json!({ "slug": slug });
            if let Some(sha) = sha256 {
                args["sha256"] = Value::String(sha);
            }
            ("install_skill", args, json, agent, true)
        }
    };
    let selection = Selection {
        agent,
        ..Selection::default()
    };
    let app = App::build(global, &selection)?;
    // A skill may require an MCP server's tool: wait for the servers before deciding.
    app.settle_mcp().await;
    let show = if as_json {
        Show::Json
    } else if listing {
        Show::Sources
    } else {
        Show::Text
    };
    let code = call(&app, tool, args, approved, show).await;
    app.shutdown().await;
    code
}

/// How a call's answer is printed.
#[derive(Clone, Copy)]
enum Show {
    /// The structured result as JSON.
    Json,
    /// The tool's text.
    Text,
    /// The listing with each skill's source and what it hides, for people.
    Sources,
}

/// A skill file to add, read whole if it is no larger than a skill may be.
fn read_skill_file(path: &std::path::Path) -> Result<String> {
    use std::io::Read;
    let limit = tackle_protocol::skills::MAX_SKILL_FILE_BYTES;
    let file = std::fs::File::open(path)
        .map_err(|e| exit::not_found(format!("cannot read {}: {e}", path.display())))?;
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
    if bytes.len() as u64 > limit {
        return Err(exit::usage(format!(
            "{} is larger than a skill may be ({limit} bytes)",
            path.display()
        )));
    }
    String::from_utf8(bytes)
        .map_err(|_| exit::usage(format!("{} is not UTF-8 text", path.display())))
}

/// `skill_list`'s rows as people read them: each skill, then where it comes from and the
/// skills of its name it hides (docs/decisions/0037-skill-sources.md).
fn with_sources(rows: &Value) -> Option<String> {
    let rows = rows.as_array()?;
    if rows.is_empty() {
        return None;
    }
    let mut out = String::new();
    for (i, r) in rows.iter().enumerate() {
        let text = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
        out.push_str(&format!("{}. {}", i + 1, text("name")));
        if !text("description").is_empty() {
            out.push_str(&format!(" — {}", text("description")));
        }
        let triggers: Vec<&str> = r
            .get("triggers")
            .and_then(Value::as_array)
            .map(|t| t.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if !triggers.is_empty() {
            out.push_str(&format!(" (triggers: {})", triggers.join(", ")));
        }
        out.push_str(&format!("\n   from {}\n", text("origin")));
        for s in r
            .get("shadows")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let field = |k: &str| s.get(k).and_then(Value::as_str).unwrap_or("");
            out.push_str(&format!(
                "   shadows `{}` from {}\n",
                field("name"),
                field("origin")
            ));
        }
    }
    Some(out)
}

async fn call(app: &App, tool: &str, args: Value, approved: bool, show: Show) -> Result<i32> {
    let call = ToolCall {
        id: "cli-1".into(),
        name: tool.to_string(),
        arguments: args,
    };
    let request = CallRequest::new(call, approver_for_cli(approved))
        .session(format!("cli-{}", std::process::id()))
        .channel("cli");
    match app.dispatcher.dispatch(request).await {
        Ok(out) => {
            let mut stdout = exit::stdout();
            let listed = match show {
                Show::Sources => out.structured.as_ref().and_then(with_sources),
                Show::Json | Show::Text => None,
            };
            if let Show::Json = show {
                let v = out.structured.unwrap_or(Value::Null);
                exit::unless_closed(writeln!(stdout, "{}", serde_json::to_string_pretty(&v)?))?;
            } else {
                let content = crate::cli_words::for_cli(listed.as_deref().unwrap_or(&out.content));
                exit::unless_closed(write!(stdout, "{content}"))?;
                if !content.ends_with('\n') {
                    exit::unless_closed(writeln!(stdout))?;
                }
            }
            Ok(if out.is_error { exit::FAILED } else { exit::OK })
        }
        Err(e) => {
            eprintln!(
                "error: {}",
                crate::cli_words::for_cli(&crate::errors::plain(&e.message))
            );
            Ok(exit::for_tool_error(&e))
        }
    }
}
