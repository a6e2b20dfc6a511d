//! `tackle tools list | describe | call`.

use crate::app::{load_config, App, AppBuilder, Selection};
use crate::approval::approver_for_cli;
use crate::cli::{Global, ToolsCommand};
use crate::errors::plain;
use crate::exit::{self, usage};
use anyhow::Result;
use serde_json::{json, Value};
use tackle_agent::profiles::mode_name;
use tackle_agent::CallRequest;
use tackle_protocol::text::preview;
use tackle_protocol::{suggest, ErrorKind, ToolCall, ToolError, ToolOutput, Verdict};
use tackle_store::Store;

pub async fn run(global: &Global, cmd: ToolsCommand) -> Result<i32> {
    match cmd {
        ToolsCommand::List {
            json,
            mcp,
            agent,
            template,
        } => {
            let selection = Selection {
                agent,
                template,
                without_mcp: !mcp,
                lists_only: true,
                ..Selection::default()
            };
            list(global, &selection, json).await
        }
        ToolsCommand::Describe {
            name,
            agent,
            template,
        } => {
            let selection = Selection {
                agent,
                template,
                lists_only: true,
                ..Selection::default()
            };
            describe(global, &selection, &name).await
        }
        ToolsCommand::Call {
            name,
            arguments,
            yes,
            json,
            explain,
            agent,
            template,
        } => {
            let args = match parse_arguments(&arguments) {
                Ok(args) => args,
                // `--json` promises `ok` and `error` on stdout whatever happened.
                Err(e) if json => {
                    let refused = Err(ToolError::invalid_arguments(e.to_string()));
                    exit::unless_closed(print_outcome(&name, &refused, true))?;
                    return Ok(exit::USAGE);
                }
                Err(e) => return Err(e),
            };
            let selection = Selection {
                agent,
                template,
                ..Selection::default()
            };
            let app = App::build(global, &selection)?;
            app.settle_mcp_for(&name).await;
            let code = if explain {
                explain_call(&app, &name, &args, json).await
            } else {
                call(&app, &name, args, yes, json).await
            };
            app.shutdown().await;
            code
        }
        ToolsCommand::Reference => super::tools_reference::run(global).await,
    }
}

async fn list(global: &Global, selection: &Selection, as_json: bool) -> Result<i32> {
    // A listing reads no state: the database is opened only if something asks for it.
    let loaded = load_config(global)?;
    let store = Store::open_deferred(&App::state_dir_for(&loaded.config));
    let app = AppBuilder::with_loaded(global, selection, loaded, store)?.app()?;
    app.settle_mcp().await;
    let printed = print_list(&app, as_json);
    if app.mcp.is_none() && !app.mcp_configured.is_empty() {
        eprintln!(
            "(not started here: MCP servers {}; `tackle tools list --mcp` or `tackle mcp list` lists their tools)",
            app.mcp_configured.join(", ")
        );
    }
    app.shutdown().await;
    printed.map(|()| exit::OK)
}

/// What the listing says of a tool only an agent's conversation can run.
const CONVERSATION_ONLY: &str = "conversation only";

fn print_list(app: &App, as_json: bool) -> Result<()> {
    let specs = app.dispatcher.registry().specs();
    let profile = |s: &tackle_protocol::ToolSpec| {
        let mode = mode_name(app.tool_profile.mode_for(&s.name));
        if s.conversation_only {
            format!("{mode}, {CONVERSATION_ONLY}")
        } else {
            mode.to_string()
        }
    };
    let mut out = exit::stdout();
    if as_json {
        let rows: Vec<Value> = specs
            .iter()
            .map(|s| json!({"name": s.name, "owner": s.owner, "risk": s.risk, "approval": s.approval, "profile": mode_name(app.tool_profile.mode_for(&s.name)), "conversation_only": s.conversation_only, "description": s.description}))
            .collect();
        return writeln!(out, "{}", serde_json::to_string_pretty(&rows)?);
    }
    let width = specs.iter().map(|s| s.name.len()).max().unwrap_or(4).max(4);
    writeln!(
        out,
        "{:<width$}  {:<10}  {:<6}  {:<20}  PROFILE",
        "NAME", "OWNER", "RISK", "APPROVAL"
    )?;
    for s in &specs {
        writeln!(
            out,
            "{:<width$}  {:<10}  {:<6}  {:<20}  {}",
            s.name,
            s.owner,
            s.risk.to_string(),
            s.approval.to_string(),
            profile(s)
        )?;
    }
    Ok(())
}

async fn describe(global: &Global, selection: &Selection, name: &str) -> Result<i32> {
    let app = App::build(global, selection)?;
    app.settle_mcp().await;
    let registry = app.dispatcher.registry();
    let Some(entry) = registry.get(name) else {
        app.shutdown().await;
        if let Some(why) = registry.unavailable(name) {
            return Err(anyhow::anyhow!(why));
        }
        let hint = suggest::hint(&registry.suggestions(name));
        return Err(exit::not_found(format!(
            "unknown tool `{name}`{hint} (`tackle tools list` shows every tool)"
        )));
    };
    let printed = print_spec(&entry.spec);
    app.shutdown().await;
    printed.map(|()| exit::OK)
}

fn print_spec(s: &tackle_protocol::ToolSpec) -> Result<()> {
    let mut out = exit::stdout();
    writeln!(
        out,
        "{}\n  owner: {}\n  risk: {}\n  approval: {}",
        s.name, s.owner, s.risk, s.approval
    )?;
    if s.conversation_only {
        writeln!(
            out,
            "  {CONVERSATION_ONLY}: the model is offered it in `tackle run` and `tackle chat`; `tackle tools call` cannot run it"
        )?;
    }
    writeln!(out, "\n{}\n", s.description)?;
    writeln!(
        out,
        "Parameters (JSON Schema):\n{}",
        serde_json::to_string_pretty(&s.parameters)?
    )
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
    // The call happened whether or not anyone still reads stdout: its exit code stands.
    exit::unless_closed(print_outcome(name, &outcome, as_json))?;
    Ok(match &outcome {
        Ok(out) if out.is_error => exit::FAILED,
        Ok(_) => exit::OK,
        Err(e) => exit::for_tool_error(e),
    })
}

/// `--json`: `{"ok", "content", "error"}`. `ok` is false exactly when `tackle` exits non-zero,
/// and then `error` is `{kind, message}`: a tool that ran and reported failure (a command's
/// non-zero exit) is `failed`, with the first line of what it reported.
fn print_outcome(name: &str, outcome: &Result<ToolOutput, ToolError>, as_json: bool) -> Result<()> {
    if as_json {
        let v = match outcome {
            Ok(out) => {
                let error = if out.is_error {
                    json!({"kind": ErrorKind::Failed, "message": reported_error(name, &out.content)})
                } else {
                    Value::Null
                };
                let mut v = json!({"ok": !out.is_error, "content": out.content, "error": error});
                if let Some(s) = &out.structured {
                    v["structured"] = s.clone();
                }
                v
            }
            Err(e) => {
                let mut error = json!({"kind": e.kind, "message": plain(&e.message)});
                if let Some(d) = &e.decision {
                    error["rule"] = json!(d.rule);
                }
                json!({"ok": false, "content": "", "error": error})
            }
        };
        return writeln!(exit::stdout(), "{}", serde_json::to_string(&v)?);
    }
    match outcome {
        Ok(out) => {
            let mut stdout = exit::stdout();
            write!(stdout, "{}", out.content)?;
            if !out.content.ends_with('\n') {
                writeln!(stdout)?;
            }
        }
        // The kind is for scripts (`--json`); a person reads the message.
        Err(e) => eprintln!("error: {}", plain(&e.message)),
    }
    Ok(())
}

/// The message of a tool-reported failure: its first non-empty line, bounded.
fn reported_error(name: &str, content: &str) -> String {
    match content.lines().map(str::trim).find(|l| !l.is_empty()) {
        Some(line) => format!("`{name}` reported an error: {}", preview(line, 200)),
        None => format!("`{name}` reported an error"),
    }
}

/// `--explain` exits as the real call would be decided: 3 when policy denies it, else 0 (an
/// `ask` runs nothing here, so there is no one to fail to ask).
async fn explain_call(app: &App, name: &str, args: &Value, as_json: bool) -> Result<i32> {
    let explanation = match app.dispatcher.explain(name, args).await {
        Ok(x) => x,
        Err(e) => {
            exit::unless_closed(print_outcome(name, &Err(e.clone()), as_json))?;
            return Ok(exit::for_tool_error(&e));
        }
    };
    let code = match explanation.decision.verdict {
        Verdict::Deny => exit::for_kind(ErrorKind::Denied),
        Verdict::Allow | Verdict::Ask => exit::OK,
    };
    exit::unless_closed(print_explanation(&explanation, as_json))?;
    Ok(code)
}

fn print_explanation(explanation: &tackle_agent::Explanation, as_json: bool) -> Result<()> {
    let mut out = exit::stdout();
    if as_json {
        return writeln!(out, "{}", serde_json::to_string_pretty(explanation)?);
    }
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
    if let Some(t) = &explanation.taint {
        writeln!(
            out,
            "taint: this call {}; once the session has read untrusted content: {}",
            t.sink, t.rule
        )?;
    }
    if let Some(view) = &explanation.sandbox {
        print_sandbox(&mut out, view)?;
    }
    Ok(())
}

/// What the sandbox holds for this call whatever the rules allow, in plain words: a call the
/// rules allow (`rm -rf ~`) still writes only where the view has writable mounts.
fn print_sandbox_summary(out: &mut exit::Stdout, view: &Value) -> Result<()> {
    let mounts = view["mounts"].as_array().cloned().unwrap_or_default();
    let at = |m: &Value| m["at"].as_str().unwrap_or_default().to_string();
    let mut writable: Vec<String> = Vec::new();
    for m in mounts.iter().filter(|m| m["kind"] == "read_write") {
        let path = at(m);
        if !writable.contains(&path) {
            writable.push(path);
        }
    }
    let mut masked: Vec<String> = Vec::new();
    for m in view["masked_programs"].as_array().into_iter().flatten() {
        let name = m["program"].as_str().unwrap_or_default().to_string();
        if !masked.contains(&name) {
            masked.push(name);
        }
    }
    writeln!(out, "the sandbox holds, whatever the rules allow:")?;
    writeln!(
        out,
        "  writes land only in: {} (the rest is read-only, or empty and thrown away after the command)",
        if writable.is_empty() {
            "nowhere".to_string()
        } else {
            writable.join(", ")
        }
    )?;
    // `~` inside is the operator's home only if the view shows it; an empty directory there
    // means a command that names `~` reaches none of the operator's files.
    if let Some(home) = std::env::var_os("HOME").map(std::path::PathBuf::from) {
        let home = home.to_string_lossy().into_owned();
        if mounts.iter().any(|m| m["kind"] == "tmpfs" && at(m) == home) {
            writeln!(
                out,
                "  ~ ({home}): an empty directory; of your home only the paths above and toolchains (read-only) show through"
            )?;
        }
    }
    match view["visible_programs"].as_array() {
        Some(_) => writeln!(out, "  programs: only the allowed ones exist")?,
        None if masked.is_empty() => writeln!(out, "  masked programs: none")?,
        None => writeln!(out, "  masked programs: {}", masked.join(", "))?,
    }
    writeln!(
        out,
        "  network: {}",
        view["network"].as_str().unwrap_or_default()
    )?;
    Ok(())
}

/// The sandbox part of `--explain`: each shell rule with the layer enforcing it, then what the
/// command's sandbox view holds (the same value `exec` spawns from).
fn print_sandbox(out: &mut exit::Stdout, view: &Value) -> Result<()> {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let list = |v: &Value| v.as_array().cloned().unwrap_or_default();
    for r in list(&view["rules"]) {
        let layer = text(&r["layer"]);
        let how = match layer.as_str() {
            "kernel" if view["namespaces"] == Value::Bool(false) => {
                "kernel, in part: no namespace sandbox here (see the losses below)"
            }
            "kernel" if text(&r["list"]) == "deny" => {
                "kernel: the program is masked in the command's sandbox"
            }
            "kernel" => "kernel: only allowed programs exist in the command's sandbox",
            _ => "analyser: refused before anything runs; what it cannot see fails closed",
        };
        writeln!(
            out,
            "shell rule: {} `{}` → {how}",
            text(&r["list"]),
            text(&r["rule"])
        )?;
    }
    if view["namespaces"] == Value::Bool(false) {
        writeln!(out, "sandbox: no namespaces: {}", text(&view["why"]))?;
        for lost in list(&view["lost"]) {
            writeln!(out, "  lost: {}", text(&lost))?;
        }
        return Ok(());
    }
    print_sandbox_summary(out, view)?;
    writeln!(
        out,
        "sandbox: bubblewrap, {} mounts, cwd {}",
        list(&view["mounts"]).len(),
        text(&view["cwd"])
    )?;
    for m in list(&view["masked_programs"]) {
        writeln!(
            out,
            "  masked: {} ({}, found by {})",
            text(&m["path"]),
            text(&m["program"]),
            text(&m["found"]).replace('_', " ")
        )?;
    }
    if let Some(shown) = view["visible_programs"].as_array() {
        let names: Vec<String> = shown.iter().map(text).collect();
        writeln!(out, "  only programs: {}", names.join(" "))?;
    }
    match text(&view["executable"]["kind"]).as_str() {
        "only" => {
            let keep = list(&view["executable"]["keep"]).len();
            let dirs: Vec<String> = list(&view["executable"]["helper_dirs"])
                .iter()
                .map(text)
                .collect();
            writeln!(
                out,
                "  executable: {keep} files (the allowed programs, their libraries, the loader){}; every other mount noexec",
                if dirs.is_empty() {
                    String::new()
                } else {
                    format!(" and {}", dirs.join(" "))
                }
            )?;
        }
        _ => writeln!(out, "  executable: what the view shows")?,
    }
    let hidden = view["root_only_hidden"].as_u64().unwrap_or(0);
    if hidden > 0 {
        writeln!(out, "  hidden: {hidden} files only root may read")?;
    }
    writeln!(out, "  network: {}", text(&view["network"]))?;
    writeln!(out, "  user: {}", text(&view["user"]))?;
    writeln!(
        out,
        "  seccomp: {} rules (see `tackle doctor`)",
        list(&view["seccomp"]).len()
    )?;
    Ok(())
}
