//! `tackle tools list | describe | call`.

use crate::app::{App, Selection};
use crate::approval::approver_for_cli;
use crate::cli::{Global, ToolsCommand};
use crate::exit::{self, usage};
use anyhow::Result;
use serde_json::{json, Value};
use std::io::Write;
use tackle_agent::CallRequest;
use tackle_protocol::{ToolCall, ToolError, ToolOutput};

pub async fn run(global: &Global, cmd: ToolsCommand) -> Result<i32> {
    match cmd {
        ToolsCommand::List {
            json,
            agent,
            template,
        } => list(global, &Selection { agent, template }, json).await,
        ToolsCommand::Describe {
            name,
            agent,
            template,
        } => describe(global, &Selection { agent, template }, &name).await,
        ToolsCommand::Call {
            name,
            arguments,
            yes,
            json,
            explain,
            agent,
            template,
        } => {
            let args = parse_arguments(&arguments)?;
            let app = App::build(global, &Selection { agent, template })?;
            app.settle_mcp_for(&name).await;
            let code = if explain {
                explain_call(&app, &name, &args, json).await
            } else {
                call(&app, &name, args, yes, json).await
            };
            app.shutdown().await;
            code
        }
    }
}

async fn list(global: &Global, selection: &Selection, as_json: bool) -> Result<i32> {
    let app = App::build(global, selection)?;
    app.settle_mcp().await;
    let specs = app.dispatcher.registry().specs();
    let mut out = std::io::stdout().lock();
    if as_json {
        let rows: Vec<Value> = specs
            .iter()
            .map(|s| json!({"name": s.name, "owner": s.owner, "risk": s.risk, "approval": s.approval, "description": s.description}))
            .collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&rows)?)?;
        drop(out);
        app.shutdown().await;
        return Ok(exit::OK);
    }
    let width = specs.iter().map(|s| s.name.len()).max().unwrap_or(4).max(4);
    writeln!(
        out,
        "{:<width$}  {:<10}  {:<6}  APPROVAL",
        "NAME", "OWNER", "RISK"
    )?;
    for s in &specs {
        writeln!(
            out,
            "{:<width$}  {:<10}  {:<6}  {}",
            s.name,
            s.owner,
            s.risk.to_string(),
            s.approval
        )?;
    }
    Ok(exit::OK)
}

async fn describe(global: &Global, selection: &Selection, name: &str) -> Result<i32> {
    let app = App::build(global, selection)?;
    app.settle_mcp().await;
    let registry = app.dispatcher.registry();
    let Some(entry) = registry.get(name) else {
        let suggestions = registry.suggestions(name);
        let hint = if suggestions.is_empty() {
            String::new()
        } else {
            format!("; did you mean {}?", suggestions.join(", "))
        };
        eprintln!("error: unknown tool `{name}`{hint}");
        return Ok(exit::for_kind(tackle_protocol::ErrorKind::NotFound));
    };
    let s = &entry.spec;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{}\n  owner: {}\n  risk: {}\n  approval: {}\n\n{}\n",
        s.name, s.owner, s.risk, s.approval, s.description
    )?;
    writeln!(
        out,
        "Parameters (JSON Schema):\n{}",
        serde_json::to_string_pretty(&s.parameters)?
    )?;
    drop(out);
    app.shutdown().await;
    Ok(exit::OK)
}

/// The arguments must be a JSON value; anything else is a usage error (exit 2).
fn parse_arguments(raw: &str) -> Result<Value> {
    serde_json::from_str(raw).map_err(|e| {
        usage(format!(
            "the arguments are not valid JSON ({e}); pass one JSON object, e.g. '{{\"expression\": \"1+1\"}}'"
        ))
    })
}

async fn call(app: &App, name: &str, args: Value, yes: bool, as_json: bool) -> Result<i32> {
    let call = ToolCall {
        id: "cli-1".into(),
        name: name.to_string(),
        arguments: args,
    };
    // One session per invocation: its TMPDIR goes when the command ends, so two commands
    // running at once never share (or remove) each other's.
    let request = CallRequest::new(call, approver_for_cli(yes))
        .session(format!("cli-{}", std::process::id()))
        .channel("cli");
    let outcome = app.dispatcher.dispatch(request).await;
    print_outcome(&outcome, as_json)?;
    Ok(match &outcome {
        Ok(out) if out.is_error => exit::FAILED,
        Ok(_) => exit::OK,
        Err(e) => exit::for_kind(e.kind),
    })
}

fn print_outcome(outcome: &Result<ToolOutput, ToolError>, as_json: bool) -> Result<()> {
    if as_json {
        let v = match outcome {
            Ok(out) => {
                let mut v =
                    json!({"ok": !out.is_error, "content": out.content, "error": Value::Null});
                if let Some(s) = &out.structured {
                    v["structured"] = s.clone();
                }
                v
            }
            Err(e) => {
                let mut error = json!({"kind": e.kind, "message": e.message});
                if let Some(d) = &e.decision {
                    error["rule"] = json!(d.rule);
                }
                json!({"ok": false, "content": "", "error": error})
            }
        };
        println!("{}", serde_json::to_string(&v)?);
        return Ok(());
    }
    match outcome {
        Ok(out) => {
            let mut stdout = std::io::stdout().lock();
            write!(stdout, "{}", out.content)?;
            if !out.content.ends_with('\n') {
                writeln!(stdout)?;
            }
        }
        Err(e) => eprintln!("error ({}): {}", e.kind, e.message),
    }
    Ok(())
}

async fn explain_call(app: &App, name: &str, args: &Value, as_json: bool) -> Result<i32> {
    let explanation = match app.dispatcher.explain(name, args).await {
        Ok(x) => x,
        Err(e) => {
            print_outcome(&Err(e.clone()), as_json)?;
            return Ok(exit::for_kind(e.kind));
        }
    };
    if as_json {
        println!("{}", serde_json::to_string_pretty(&explanation)?);
        return Ok(exit::OK);
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "tool: {}", explanation.tool)?;
    writeln!(out, "approval: {}", explanation.approval)?;
    writeln!(out, "policy from: {}", explanation.sources.join(" → "))?;
    writeln!(
        out,
        "grants: {}",
        serde_json::to_string(&explanation.grants)?
    )?;
    for (cap, d) in &explanation.capabilities {
        writeln!(
            out,
            "capability: {} → {:?} ({}): {}",
            cap.summary(),
            d.verdict,
            d.rule,
            d.why
        )?;
    }
    writeln!(
        out,
        "approval decision: {:?}: {}",
        explanation.approval_decision.verdict, explanation.approval_decision.why
    )?;
    writeln!(
        out,
        "decision: {:?}: {}",
        explanation.decision.verdict, explanation.decision.why
    )?;
    Ok(exit::OK)
}
