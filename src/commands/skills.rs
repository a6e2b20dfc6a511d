//! `tackle skills list | search | show | install`: the skills tools, called through the
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
    // Installing from the command line is the person's own request: it is the approval.
    let (tool, args, as_json, agent, approved) = match cmd {
        SkillsCommand::List { json, agent } => ("skill_list", json!({}), json, agent, false),
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
    let code = call(&app, tool, args, approved, as_json).await;
    app.shutdown().await;
    code
}

async fn call(app: &App, tool: &str, args: Value, approved: bool, as_json: bool) -> Result<i32> {
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
            if as_json {
                let v = out.structured.unwrap_or(Value::Null);
                exit::unless_closed(writeln!(stdout, "{}", serde_json::to_string_pretty(&v)?))?;
            } else {
                let content = crate::cli_words::for_cli(&out.content);
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
