//! `tackle plugins list | check`: the manifests under `plugins.dirs`, what they loaded and
//! every problem with its file and JSON path. Nothing is run.

use crate::app::{App, Selection};
use crate::cli::Global;
use crate::exit;
use anyhow::Result;
use clap::Subcommand;
use serde_json::{json, Value};
use tackle_protocol::Tool;
use tackle_tools::plugins::LoadReport;

#[derive(Debug, Subcommand)]
pub enum PluginsCommand {
    /// The loaded plugins and their tools (name, risk, approval).
    List {
        /// Print `{"plugins", "errors", "warnings", "excluded"}` JSON.
        #[arg(long)]
        json: bool,
    },
    /// Every problem of every manifest, with its file and JSON path; exit 1 when any
    /// manifest was skipped or has a problem, or a plugins directory was refused or unreadable
    /// (0 only when every manifest found loaded; a tool refused for a taken name is a warning,
    /// and plugins kept out by `plugins.allow`/`block` are no problem).
    Check {
        /// Print `{"plugins", "errors", "warnings", "excluded"}` JSON.
        #[arg(long)]
        json: bool,
    },
}

pub async fn run(global: &Global, cmd: PluginsCommand) -> Result<i32> {
    let selection = Selection {
        without_mcp: true,
        plugins_reported: true,
        lists_only: true,
        ..Selection::default()
    };
    let app = App::build(global, &selection)?;
    let report = app.plugins.report();
    app.shutdown().await;
    match cmd {
        PluginsCommand::List { json: true } | PluginsCommand::Check { json: true } => {
            exit::unless_closed(writeln!(
                exit::stdout(),
                "{}",
                serde_json::to_string_pretty(&to_json(&report))?
            ))?;
        }
        PluginsCommand::List { json: false } => list(&report)?,
        PluginsCommand::Check { json: false } => check(&report)?,
    }
    let checking = matches!(cmd, PluginsCommand::Check { .. });
    Ok(if checking && has_problems(&report) {
        exit::FAILED
    } else {
        exit::OK
    })
}

/// Anything `plugins check` fails on: a skipped manifest (its errors), or any warning but a
/// tool refused for a name already taken (its plugin loaded; the tool is reported). Every other
/// warning of a load is something skipped or refused: a manifest without `plugin.json`, a link,
/// a file too large, a duplicate plugin, a non-UTF-8 name, a refused or unreadable directory.
fn has_problems(report: &LoadReport) -> bool {
    !report.errors.is_empty()
        || report
            .warnings
            .iter()
            .any(|w| !w.contains(" is refused: its name is taken by "))
}

fn list(report: &LoadReport) -> Result<()> {
    let mut out = exit::stdout();
    if report.plugins.is_empty() && report.excluded.is_empty() {
        exit::unless_closed(writeln!(out, "no plugins loaded"))?;
    }
    for p in &report.plugins {
        let m = &p.manifest;
        exit::unless_closed(writeln!(
            out,
            "{} {} — {} ({})",
            m.name,
            m.version,
            m.description,
            m.dir.display()
        ))?;
        for t in &p.tools {
            let spec = t.spec();
            exit::unless_closed(writeln!(
                out,
                "  {}  {}·{}  {}",
                spec.name, spec.risk, spec.approval, spec.description
            ))?;
        }
    }
    for (name, why) in &report.excluded {
        exit::unless_closed(writeln!(out, "{name} (not loaded: {why})"))?;
    }
    if !report.errors.is_empty() || !report.warnings.is_empty() {
        eprintln!(
            "{} problem(s) in manifests, {} warning(s); `tackle plugins check` shows them",
            report.errors.len(),
            report.warnings.len()
        );
    }
    Ok(())
}

fn check(report: &LoadReport) -> Result<()> {
    let mut out = exit::stdout();
    for e in &report.errors {
        exit::unless_closed(writeln!(out, "error: {e}"))?;
    }
    for w in &report.warnings {
        exit::unless_closed(writeln!(out, "warning: {w}"))?;
    }
    let tools: usize = report.plugins.iter().map(|p| p.tools.len()).sum();
    exit::unless_closed(writeln!(
        out,
        "{} plugin(s) loaded with {tools} tool(s); {} problem(s), {} warning(s)",
        report.plugins.len(),
        report.errors.len(),
        report.warnings.len()
    ))?;
    Ok(())
}

/// The report as `tackle plugins … --json` prints it.
pub fn to_json(report: &LoadReport) -> Value {
    let plugins: Vec<Value> = report
        .plugins
        .iter()
        .map(|p| {
            let tools: Vec<Value> = p
                .tools
                .iter()
                .map(|t| {
                    let s = t.spec();
                    json!({"name": s.name, "risk": s.risk, "approval": s.approval, "description": s.description})
                })
                .collect();
            json!({
                "name": p.manifest.name,
                "version": p.manifest.version,
                "description": p.manifest.description,
                "dir": p.manifest.dir,
                "file": p.manifest.file,
                "tools": tools,
            })
        })
        .collect();
    let errors: Vec<Value> = report
        .errors
        .iter()
        .map(|e| json!({"file": e.file, "path": e.path, "message": e.message}))
        .collect();
    let excluded: Vec<Value> = report
        .excluded
        .iter()
        .map(|(name, why)| json!({"name": name, "why": why}))
        .collect();
    json!({"plugins": plugins, "errors": errors, "warnings": report.warnings, "excluded": excluded})
}
