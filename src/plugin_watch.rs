//! Reloading plugins while a front end runs: the plugin directories are watched
//! ([`crate::fs_watch`]), and a quiet moment after a change the manifests are read again.
//! A configured directory that does not exist yet is waited for, and watched from the moment it
//! appears.

use crate::fs_watch::{self, RecursiveMode};
use std::sync::Arc;
use tackle_tools::plugins::{LoadReport, Manifest, Plugins};

/// Watches the plugin directories while it lives; dropping it stops the worker.
pub struct Watch {
    _watch: fs_watch::FsWatch,
}

/// Reload `plugins` whenever something under one of its directories changes.
pub fn watch(plugins: Arc<Plugins>) -> Option<Watch> {
    let dirs: Vec<_> = plugins.dirs().into_iter().map(|d| d.path).collect();
    let points = move || {
        dirs.iter()
            .filter_map(|d| fs_watch::point_for(d, RecursiveMode::Recursive))
            .collect()
    };
    let mut last = summary(&plugins.report());
    let on_change = move || reload(&plugins, &mut last);
    match fs_watch::watch("plugin-watch", points, on_change) {
        Ok(w) => Some(Watch { _watch: w }),
        Err(e) => {
            tracing::warn!("plugins will not reload on change: {e}");
            None
        }
    }
}

fn reload(plugins: &Plugins, last: &mut Summary) {
    let report = plugins.reload();
    let now = summary(&report);
    if *last != now {
        tracing::info!(
            "plugins reloaded: {} plugin(s), {} problem(s)",
            report.plugins.len(),
            report.errors.len()
        );
        crate::plugins::log(&report);
        *last = now;
    }
}

/// What a reload is compared by: the manifests loaded (a changed command counts), the tools
/// they got and the problems found.
type Summary = (Vec<Manifest>, Vec<String>, Vec<String>);

fn summary(report: &LoadReport) -> Summary {
    use tackle_protocol::Tool;
    let manifests = report.plugins.iter().map(|p| p.manifest.clone()).collect();
    let tools = report
        .plugins
        .iter()
        .flat_map(|p| p.tools.iter().map(|t| t.spec().name))
        .collect();
    let problems = report
        .errors
        .iter()
        .map(|e| e.to_string())
        .chain(report.warnings.iter().cloned())
        .collect();
    (manifests, tools, problems)
}
