//! `tackle mcp trust NAME [--tool T] [--yes]` and `tackle mcp pins [NAME] [--json]`: the
//! operator's side of MCP tool pinning (docs/decisions/0031-mcp-tool-pinning.md).

use crate::app::{App, Selection};
use crate::cli::Global;
use crate::errors::plain;
use crate::exit::{self, not_found, usage};
use crate::mcp_pins::report::{rows, shown};
use anyhow::Result;
use std::io::IsTerminal;
use tackle_mcp::pinning::{clean::reveal, PinState, PinnedBy, Trusted};
use tackle_mcp::{ServerState, ToolPinStatus};

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
        outln!("{}", shown(status))?;
        if !yes && !confirm(&format!("Pin `{}` as shown? [y/N] ", status.tool)).await {
            eprintln!("not pinned: `{}` stays as it was", status.tool);
            declined = true;
            continue;
        }
        // What is pinned is what was shown: a server that changed the tool meanwhile gets
        // nothing pinned.
        let by = PinnedBy::Operator;
        match mcp.trust(name, &status.tool, Some(&status.digest), by).await? {
            Trusted::Pinned(digest) => outln!("pinned `{}` of `{name}` ({digest})", status.tool)?,
            Trusted::NotOffered => eprintln!(
                "`{name}` no longer offers `{}`; nothing was pinned",
                status.tool
            ),
            Trusted::Differs(now) => {
                return Err(anyhow::anyhow!(
                    "`{name}` changed `{}` again since it was shown (it now offers {now}); nothing was pinned: run the command again to review it",
                    status.tool
                ))
            }
        }
    }
    Ok(if declined { exit::DECLINED } else { exit::OK })
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
        if row.server != server {
            outln!("{}", row.server)?;
            server = &row.server;
        }
        let pinned = match (&row.pinned_by, &row.pinned_at) {
            (Some(by), Some(at)) => format!("  (pinned by {by}, {at})"),
            _ => String::new(),
        };
        outln!(
            "  {}  {}  {}{pinned}",
            row.tool,
            row.state,
            short(row.digest.as_deref().unwrap_or_default())
        )?;
        if let Some(message) = &row.message {
            outln!("      {}", reveal(message))?;
        }
        if !row.removed.is_empty() {
            outln!("      removed from its description: {}", row.removed)?;
        }
    }
    Ok(exit::OK)
}

/// `sha256:` and the first 12 hex digits.
fn short(digest: &str) -> String {
    digest.chars().take(19).collect()
}
