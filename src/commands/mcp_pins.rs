//! `tackle mcp trust NAME [--tool T] [--yes]` and `tackle mcp pins [NAME] [--json]`: the
//! operator's side of MCP tool pinning (docs/decisions/0031-mcp-tool-pinning.md).

use crate::app::{App, Selection};
use crate::cli::Global;
use crate::errors::plain;
use crate::exit::{self, not_found, usage};
use anyhow::Result;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::io::IsTerminal;
use tackle_mcp::pinning::{clean::reveal, digest::diff, PinState};
use tackle_mcp::{ServerState, ToolPinStatus};
use tackle_store::ToolPin;
use time::format_description::well_known::Rfc3339;

pub async fn trust(global: &Global, name: &str, tool: Option<&str>, yes: bool) -> Result<i32> {
    let app = App::build(global, &Selection::default())?;
    let result = trust_in(&app, name, tool, yes).await;
    app.shutdown().await;
    result
}

pub async fn pins(global: &Global, name: Option<&str>, as_json: bool) -> Result<i32> {
    let app = App::build(global, &Selection::default())?;
    let result = pins_in(&app, name, as_json).await;
    app.shutdown().await;
    result
}

fn configured(app: &App, name: &str) -> Result<()> {
    if app.mcp_configured.iter().any(|n| n == name) {
        return Ok(());
    }
    Err(not_found(format!(
        "no MCP server `{name}` under `mcp_servers` (`tackle mcp list` shows them)"
    )))
}

async fn trust_in(app: &App, name: &str, tool: Option<&str>, yes: bool) -> Result<i32> {
    configured(app, name)?;
    let Some(mcp) = &app.mcp else {
        return Err(not_found(format!("no MCP server `{name}` is started")));
    };
    app.settle_mcp().await;
    let state = mcp
        .status()
        .await
        .into_iter()
        .find(|s| s.name == name)
        .map(|s| s.state);
    match state {
        Some(ServerState::Ready) => {}
        Some(ServerState::Failed(why)) => {
            return Err(anyhow::anyhow!(
            "MCP server `{name}` is not running ({}): its tools can be trusted once it lists them",
            plain(&why)
        ))
        }
        _ => {
            return Err(anyhow::anyhow!(
                "MCP server `{name}` did not list its tools in time: nothing to trust yet"
            ))
        }
    }
    let offered = mcp.pin_status(Some(name)).await;
    let chosen: Vec<&ToolPinStatus> = match tool {
        Some(t) => {
            let found: Vec<&ToolPinStatus> = offered
                .iter()
                .filter(|s| s.tool == t || s.registry_name == t)
                .collect();
            if found.is_empty() {
                let names: Vec<&str> = offered.iter().map(|s| s.tool.as_str()).collect();
                return Err(not_found(format!(
                    "MCP server `{name}` offers no tool `{t}` (it offers: {})",
                    names.join(", ")
                )));
            }
            found
        }
        None => offered
            .iter()
            .filter(|s| !matches!(s.state, PinState::Pinned | PinState::Off))
            .collect(),
    };
    if chosen.is_empty() {
        outln!("every tool of `{name}` is pinned as it is offered")?;
        return Ok(exit::OK);
    }
    let can_ask = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    if !yes && !can_ask {
        return Err(usage(format!(
            "accepting tools of `{name}` asks a person at a terminal; pass --yes to accept them without being asked"
        )));
    }
    let mut declined = false;
    for status in chosen {
        if status.state == PinState::Pinned {
            outln!(
                "`{}` of `{name}` is already pinned as offered ({})",
                status.tool,
                status.digest
            )?;
            continue;
        }
        outln!("{}", reveal(&shown(name, status)))?;
        if !yes && !confirm(&format!("Pin `{}` as shown? [y/N] ", status.tool)).await {
            eprintln!("not pinned: `{}` stays as it was", status.tool);
            declined = true;
            continue;
        }
        match mcp.trust(name, &status.tool).await? {
            Some(digest) => outln!("pinned `{}` of `{name}` ({digest})", status.tool)?,
            None => eprintln!(
                "`{name}` no longer offers `{}`; nothing was pinned",
                status.tool
            ),
        }
    }
    Ok(if declined { exit::DECLINED } else { exit::OK })
}

/// The tool's heading and its offered definition against the pinned one, as a diff.
fn shown(server: &str, status: &ToolPinStatus) -> String {
    let why = match &status.state {
        PinState::Changed { .. } => "changed since it was pinned".to_string(),
        PinState::Renamed { pinned } => format!(
            "offered under a new name with the description of the pinned tool `{}`",
            pinned.tool
        ),
        PinState::Unchecked(why) => format!("its pins could not be read ({why})"),
        _ => "not pinned yet".to_string(),
    };
    let old = status
        .state
        .pinned()
        .map(|p| p.definition.as_str())
        .unwrap_or_default();
    let mut out = format!(
        "MCP server `{server}`, tool `{}`: {why}\n--- pinned\n+++ offered\n{}",
        status.tool,
        diff(old, &status.definition)
    );
    if !status.removed.is_empty() {
        out.push_str(&format!(
            "(removed from what the model is shown: {})\n",
            status.removed
        ));
    }
    out
}

/// `y` or `yes` (any case) accepts; anything else, or the end of input, does not.
async fn confirm(question: &str) -> bool {
    eprint!("{question}");
    let line = tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).map(|_| line)
    })
    .await;
    matches!(line, Ok(Ok(l)) if matches!(l.trim().to_ascii_lowercase().as_str(), "y" | "yes"))
}

async fn pins_in(app: &App, name: Option<&str>, as_json: bool) -> Result<i32> {
    if let Some(name) = name {
        configured(app, name)?;
    }
    app.settle_mcp().await;
    let offered = match &app.mcp {
        Some(mcp) => mcp.pin_status(name).await,
        None => Vec::new(),
    };
    let stored = app
        .store
        .mcp_pins(name)
        .await
        .map_err(|e| anyhow::anyhow!("cannot read the MCP tool pins: {e}"))?;
    let rows = rows(&offered, &stored);
    if as_json {
        outln!("{}", serde_json::to_string_pretty(&rows)?)?;
        return Ok(exit::OK);
    }
    if rows.is_empty() {
        outln!("no MCP tools listed or pinned")?;
    }
    let mut server = "";
    for row in &rows {
        let s = row["server"].as_str().unwrap_or_default();
        if s != server {
            outln!("{s}")?;
            server = s;
        }
        let text = |k: &str| row[k].as_str().unwrap_or_default().to_string();
        let pinned = match (row["pinned_by"].as_str(), row["pinned_at"].as_str()) {
            (Some(by), Some(at)) => format!("  (pinned by {by}, {at})"),
            _ => String::new(),
        };
        outln!(
            "  {}  {}  {}{pinned}",
            text("tool"),
            text("state"),
            short(&text("digest"))
        )?;
        if let Some(message) = row["message"].as_str() {
            outln!("      {}", reveal(message))?;
        }
        if let Some(removed) = row["removed"].as_str().filter(|r| !r.is_empty()) {
            outln!("      removed from its description: {removed}")?;
        }
    }
    Ok(exit::OK)
}

/// `sha256:` and the first 12 hex digits.
fn short(digest: &str) -> String {
    digest.chars().take(19).collect()
}

/// One row per offered tool, then one per pin whose tool is not offered now.
fn rows(offered: &[ToolPinStatus], stored: &[ToolPin]) -> Vec<Value> {
    let pin_of =
        |server: &str, tool: &str| stored.iter().find(|p| p.server == server && p.tool == tool);
    let when = |p: &ToolPin| p.pinned_at.format(&Rfc3339).unwrap_or_default();
    let mut seen = BTreeSet::new();
    let mut rows = Vec::new();
    for s in offered {
        let pin = pin_of(&s.server, &s.tool);
        seen.insert((s.server.clone(), s.tool.clone()));
        rows.push(json!({
            "server": s.server,
            "tool": s.tool,
            "registry_name": s.registry_name,
            "state": s.state.word(),
            "digest": s.digest,
            "pinned_digest": pin.map(|p| p.digest.clone()),
            "pinned_by": pin.map(|p| p.pinned_by.clone()),
            "pinned_at": pin.map(when),
            "removed": s.removed,
            "message": s.message,
        }));
    }
    for p in stored {
        if seen.contains(&(p.server.clone(), p.tool.clone())) {
            continue;
        }
        rows.push(json!({
            "server": p.server,
            "tool": p.tool,
            "registry_name": tackle_mcp::naming::registry_name(&p.server, &p.tool),
            "state": "not_offered",
            "digest": Value::Null,
            "pinned_digest": p.digest,
            "pinned_by": p.pinned_by,
            "pinned_at": when(p),
            "removed": "",
            "message": Value::Null,
        }));
    }
    rows.sort_by(|a, b| a["server"].as_str().cmp(&b["server"].as_str()));
    rows
}
