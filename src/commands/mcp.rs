//! `tackle mcp serve [--http ADDR]` and `tackle mcp list` (`login`/`logout` and `trust`/`pins`
//! live beside it).

use crate::app::{App, Selection};
use crate::approval_queue::ApprovalQueue;
use crate::cli::{Global, McpCommand};
use crate::errors::plain;
use crate::exit::{self, usage};
use crate::mcp_service::DispatcherService;
use anyhow::Result;
use std::net::SocketAddr;
use std::sync::Arc;
use tackle_mcp::ServerState;
use tokio_util::sync::CancellationToken;

pub async fn run(global: &Global, cmd: McpCommand) -> Result<i32> {
    match cmd {
        McpCommand::Serve {
            http,
            agent,
            template,
        } => {
            serve(
                global,
                &Selection {
                    agent,
                    template,
                    serving_mcp: true,
                    watch_plugins: true,
                    ..Selection::default()
                },
                http.as_deref(),
            )
            .await
        }
        McpCommand::List { json } => list(global, json).await,
        McpCommand::Login { name, unattended } => {
            super::mcp_login::login(global, &name, unattended).await
        }
        McpCommand::Logout { name } => super::mcp_login::logout(global, &name).await,
        McpCommand::Trust { name, tool, yes } => {
            super::mcp_pins::trust(global, &name, tool.as_deref(), yes).await
        }
        McpCommand::Pins { name, json } => {
            super::mcp_pins::pins(global, name.as_deref(), json).await
        }
    }
}

async fn serve(global: &Global, selection: &Selection, http: Option<&str>) -> Result<i32> {
    let app = App::build(global, selection)?;
    app.settle_mcp().await;
    // Each client's approval prompts are also entries in the approval queue.
    let agent = selection.agent.as_deref().unwrap_or("default");
    let service = Arc::new(
        DispatcherService::new(Arc::clone(&app.dispatcher), "mcp-serve")
            .with_mcp_servers(app.mcp_configured.iter().cloned())
            .with_changing_tools(!app.plugins.dirs().is_empty())
            .with_serve_tools(app.serve_tools.clone())
            .with_approval_queue(ApprovalQueue::new(app.store.clone()), agent),
    );
    // MCP servers behind this one, and plugins reloaded on change, change the tools; clients
    // hear of it.
    service.watch_tools();
    let served = serve_on(&app, service, http).await;
    // Every MCP session's TMPDIR goes with the server, however serving ended.
    app.shutdown().await;
    served?;
    Ok(exit::OK)
}

async fn serve_on(app: &App, service: Arc<DispatcherService>, http: Option<&str>) -> Result<()> {
    match http {
        None => {
            // Started by hand rather than by an MCP client: say what it is waiting for.
            if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
                eprintln!("tackle mcp serve: waiting for an MCP client's JSON-RPC messages on stdin (an MCP client starts this command; `--http 127.0.0.1:8765` serves over HTTP instead). Ctrl-D or Ctrl-C ends it.");
            }
            tackle_mcp::serve_stdio(service).await?
        }
        Some(addr) => {
            let stop = CancellationToken::new();
            tokio::spawn(cancel_on_signal(stop.clone()));
            serve_http(app, service, addr, "--http", stop).await?;
        }
    }
    Ok(())
}

/// The app's tools over Streamable HTTP at `addr` until `stop`; `what` names the setting in
/// errors (`--http`, `daemon.mcp_http`).
async fn serve_http(
    app: &App,
    service: Arc<DispatcherService>,
    addr: &str,
    what: &str,
    stop: CancellationToken,
) -> Result<()> {
    let addr: SocketAddr = crate::serve_addr::resolve(addr, what).await?;
    let token = app.mcp_bearer_token.clone();
    if !addr.ip().is_loopback() && token.is_none() {
        return Err(usage(format!(
            "{what} {addr} is not a loopback address; set `mcp.bearer_token` in the config to serve beyond this machine"
        )));
    }
    let listener = tackle_mcp::bind_http(addr, token.as_deref()).await?;
    // The bound address, so `--http 127.0.0.1:0` says which port it got.
    let bound = listener.local_addr().unwrap_or(addr);
    eprintln!("serving MCP over Streamable HTTP at http://{bound}/mcp");
    // Also on stdout, for a script that started it on port 0 and reads where it went.
    outln!("http://{bound}/mcp")?;
    tackle_mcp::serve_http_on(service, listener, token, stop).await?;
    Ok(())
}

/// What `tackle daemon` serves beside its schedules when `daemon.mcp_http` is set: the same
/// app, service and HTTP server as `tackle mcp serve --http`, stopped with the daemon.
pub async fn serve_for_daemon(global: &Global, addr: &str, stop: CancellationToken) -> Result<()> {
    let selection = Selection {
        serving_mcp: true,
        watch_plugins: true,
        ..Selection::default()
    };
    let app = App::build(global, &selection)?;
    app.settle_mcp().await;
    let service = Arc::new(
        DispatcherService::new(Arc::clone(&app.dispatcher), "mcp-serve")
            .with_mcp_servers(app.mcp_configured.iter().cloned())
            .with_changing_tools(!app.plugins.dirs().is_empty())
            .with_serve_tools(app.serve_tools.clone()),
    );
    service.watch_tools();
    let served = serve_http(&app, service, addr, "daemon.mcp_http", stop).await;
    app.shutdown().await;
    served
}

/// Ctrl-C or SIGTERM ends the HTTP server gracefully (so the clean-up after it runs).
async fn cancel_on_signal(stop: CancellationToken) {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = term => {}
    }
    stop.cancel();
}

/// Every configured server with its state and tools. Exit 1 when servers are configured and
/// every one failed: nothing they offer can be used.
async fn list(global: &Global, as_json: bool) -> Result<i32> {
    let app = App::build(global, &Selection::default())?;
    let Some(mcp) = &app.mcp else {
        if as_json {
            outln!("[]")?;
        } else {
            outln!("no MCP servers configured (add them under `mcp_servers:`)")?;
        }
        return Ok(exit::OK);
    };
    app.settle_mcp().await;
    let statuses = mcp.status().await;
    let printed = print_status(&statuses, as_json);
    app.shutdown().await;
    printed?;
    let all_failed = !statuses.is_empty()
        && statuses
            .iter()
            .all(|s| matches!(s.state, ServerState::Failed(_)));
    Ok(if all_failed { exit::FAILED } else { exit::OK })
}

fn print_status(statuses: &[tackle_mcp::ServerStatus], as_json: bool) -> Result<()> {
    let mut out = exit::stdout();
    if as_json {
        let rows: Vec<serde_json::Value> = statuses
            .iter()
            .map(|s| {
                let (state, error) = match &s.state {
                    ServerState::Starting => ("starting", None),
                    ServerState::Ready => ("ready", None),
                    ServerState::Failed(why) => ("failed", Some(plain(why))),
                };
                serde_json::json!({"name": s.name, "state": state, "error": error, "tools": s.tools})
            })
            .collect();
        return writeln!(out, "{}", serde_json::to_string_pretty(&rows)?);
    }
    for status in statuses {
        let state = match &status.state {
            ServerState::Starting => "starting".to_string(),
            ServerState::Ready => "ready".to_string(),
            ServerState::Failed(why) => format!("failed: {}", plain(why)),
        };
        writeln!(out, "{}: {state}", status.name)?;
        for tool in &status.tools {
            writeln!(out, "  {tool}")?;
        }
    }
    Ok(())
}
