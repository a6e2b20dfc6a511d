//! `tackle doctor`: validates the config and says what is enforced on this machine.

use crate::app::{App, Selection};
use crate::cli::Global;
use crate::exit;
use anyhow::Result;

pub async fn run(global: &Global) -> Result<i32> {
    let app = match App::build(global, &Selection::default()) {
        Ok(app) => app,
        Err(e) => {
            println!("config: ERROR: {e:#}");
            return Ok(exit::USAGE);
        }
    };
    let source = app
        .config_source
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "built-in defaults (no config file found)".into());
    println!("config: ok ({source})");
    println!("workspace: {}", app.workspace.display());
    println!("state dir: {}", app.state_dir.display());
    match app.store.audit_tail(1).await {
        Ok(_) => println!(
            "audit log: ok ({})",
            app.store
                .path()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        ),
        Err(e) => println!("audit log: ERROR: {e}"),
    }
    println!(
        "tools: {} registered",
        app.dispatcher.registry().specs().len()
    );
    for e in tackle_host::enforcement_report() {
        let state = if e.enforced {
            "enforced"
        } else {
            "NOT ENFORCED"
        };
        println!("{}: {state} — {}", e.protection, e.detail);
    }
    Ok(exit::OK)
}
