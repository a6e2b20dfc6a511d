//! `tackle mcp login NAME` and `tackle mcp logout NAME`: OAuth for a Streamable HTTP server.
//! The token is kept in the state directory (one file per server, `0600`) and never printed.

use crate::app::{load_config, App};
use crate::cli::Global;
use crate::exit::{self, usage};
use anyhow::Result;
use std::io::IsTerminal;
use tackle_protocol::config::Config;

/// The server `name`'s URL, or a usage error that says what is wrong.
fn http_url(config: &Config, name: &str) -> Result<String> {
    let server = config.mcp_servers.get(name).ok_or_else(|| {
        let near = tackle_protocol::suggest::nearest(
            name,
            config.mcp_servers.keys().map(String::as_str),
            0.75,
        );
        exit::not_found(format!(
            "no MCP server named `{name}` under `mcp_servers:` in the config{}",
            tackle_protocol::suggest::hint(&near)
        ))
    })?;
    server.url.clone().ok_or_else(|| {
        usage(format!(
            "mcp_servers.{name} is not a Streamable HTTP server (`url`): only those log in with OAuth"
        ))
    })
}

pub async fn login(global: &Global, name: &str, unattended: bool) -> Result<i32> {
    let config = load_config(global)?.config;
    let url = http_url(&config, name)?;
    let token_file = tackle_mcp::auth::token_path(&App::state_dir_for(&config), name);
    let open = !unattended && std::io::stderr().is_terminal();
    let show = |auth_url: &str| {
        eprintln!("To authorize Tackle for MCP server `{name}`, open:");
        let _ = outln!("{auth_url}");
        if open {
            open_browser(auth_url);
        }
        if !unattended {
            eprintln!("waiting for the authorization (Ctrl-C stops)…");
        }
    };
    let logged_in = tackle_mcp::auth::login(
        tackle_mcp::auth::Login {
            server: name,
            url: &url,
            oauth: config.mcp_servers.get(name).and_then(|s| s.oauth.as_ref()),
            token_file: &token_file,
            unattended,
        },
        &show,
    );
    tokio::select! {
        r = logged_in => r.map_err(|e| anyhow::anyhow!("login to `{name}` failed: {e}"))?,
        _ = tokio::signal::ctrl_c() => {
            eprintln!("login to `{name}` stopped");
            return Ok(exit::FAILED);
        }
    }
    eprintln!("logged in to `{name}`; its token is kept in the state directory");
    Ok(exit::OK)
}

pub async fn logout(global: &Global, name: &str) -> Result<i32> {
    let config = load_config(global)?.config;
    http_url(&config, name)?;
    let token_file = tackle_mcp::auth::token_path(&App::state_dir_for(&config), name);
    if tackle_mcp::auth::logout(&token_file)? {
        eprintln!("logged out of `{name}`: its token is deleted");
    } else {
        eprintln!("no token was kept for `{name}`");
    }
    Ok(exit::OK)
}

/// Hand the URL to `xdg-open` when there is one; the URL stays printed either way.
fn open_browser(url: &str) {
    let Some(path) = std::env::var_os("PATH") else {
        return;
    };
    let Some(opener) = std::env::split_paths(&path)
        .map(|d| d.join("xdg-open"))
        .find(|p| p.is_file())
    else {
        return;
    };
    let _ = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
}
