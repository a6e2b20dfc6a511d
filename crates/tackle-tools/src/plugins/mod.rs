//! The `plugins` extension: tools declared by manifests, `<plugins.dirs>/<plugin>/plugin.json`
//! (README, "Plugins"), each running one program with an argv template.
//!
//! A template such as `["git", "log", "-n", "{{count}}"]` is filled in one pass, each
//! placeholder by one declared parameter's value as (part of) exactly one argv element; values
//! are never re-scanned and never pass through a shell. A value is data wherever it lands
//! (issue #38): an element whose first character comes from a value never starts with `-`
//! unless a literal `--` came before, and a manifest that puts a placeholder where a program
//! reads code, names a program, sets an interpreter's environment or passes options to a
//! wrapper is refused at load (`code.rs`), unless the element is code whose language the
//! manifest declares (`"code": {"2": "sh"}`, sh and python only) and the placeholder stands
//! where a quoted string literal is one word; each value is then quoted by that language.
//!
//! The command runs through the call's host (`Exec`, sandboxed, checked by the shell grant on
//! its real words, and by `values_stay_data` on where each value lands), at Medium risk and
//! `unless_auto_approved` or higher: a manifest may raise both, never lower them.
//!
//! With `execution: binary` each call instead starts the plugin's executable (its SHA-256
//! checked first when the manifest gives one) and sends it one JSON-RPC request on stdin.
//!
//! [`Plugins`] holds the current load and can [`reload`](Plugins::reload) it (the binary does
//! when a plugin directory changes). Loading never fails as a whole: a manifest with problems
//! is skipped and every problem is reported with its file and JSON path; a tool whose name is
//! already taken (a built-in, an MCP server's namespace, an earlier plugin) is refused with a
//! warning.
//!
//! ```
//! use std::sync::Arc;
//! use tackle_tools::plugins::{load, PluginsSettings};
//! # struct NoDisk;
//! # impl tackle_protocol::plugins::PluginDirs for NoDisk {
//! #     fn scan(&self, _: &std::path::Path, _: u64) -> tackle_protocol::plugins::ManifestScan { Default::default() }
//! #     fn is_executable_file(&self, _: &std::path::Path) -> bool { false }
//! # }
//! let report = load(&PluginsSettings::new(Arc::new(NoDisk)));
//! assert!(report.plugins.is_empty() && report.errors.is_empty());
//! let ext = tackle_tools::plugins::extension(&report);
//! assert!(ext.tools().is_empty());
//! ```

mod code;
mod jsonrpc;
mod manifest;
mod template;
mod tool;

pub use manifest::{
    Manifest, ManifestError, Mode, ToolDef, APPROVAL_FLOOR, DEFAULT_TIMEOUT_SECS, MAX_TIMEOUT_SECS,
    RISK_FLOOR,
};
pub use template::{
    parse_element, FillError, Language, Segment, Template, TemplateError, MAX_ELEMENT_BYTES,
    MAX_TOTAL_BYTES,
};
pub use tool::{PluginInfo, PluginTool};

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use tackle_protocol::plugins::{PluginDirs, MAX_MANIFEST_BYTES};
use tackle_protocol::{Extension, Tool};

/// The extension's name, for `agents[].extensions`.
pub const NAME: &str = "plugins";

/// One configured plugins directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginDir {
    /// As the config wrote it, for people.
    pub label: String,
    /// Absolute.
    pub path: PathBuf,
}

/// A lookup of Tackle's own environment (the binary's), for each tool's `env` allow-list.
pub type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Everything loading needs from configuration.
#[derive(Clone)]
pub struct PluginsSettings {
    /// `plugins.dirs`, in order; each subdirectory with a manifest is one plugin.
    pub dirs: Vec<PluginDir>,
    /// Reads the plugin directories; a fake in tests.
    pub disk: Arc<dyn PluginDirs>,
    /// Names already taken (the built-in tools): a plugin tool with one is refused.
    pub reserved: Vec<String>,
    /// Namespaces already taken (`server__` of each configured MCP server).
    pub reserved_prefixes: Vec<String>,
    /// Reads Tackle's environment for the variables a tool's `env` lets through.
    pub env: EnvLookup,
    /// `plugins.allow`: the plugin names that may load (empty: all not blocked).
    pub allow: Vec<String>,
    /// `plugins.block`: plugin names that never load; wins over `allow`.
    pub block: Vec<String>,
}

impl PluginsSettings {
    /// No directories, nothing reserved, an empty environment.
    pub fn new(disk: Arc<dyn PluginDirs>) -> Self {
        Self {
            dirs: Vec::new(),
            disk,
            reserved: Vec::new(),
            reserved_prefixes: Vec::new(),
            env: Arc::new(|_| None),
            allow: Vec::new(),
            block: Vec::new(),
        }
    }

    /// Why the operator keeps the plugin named `name` out, if they do.
    fn excluded(&self, name: &str) -> Option<&'static str> {
        if self.block.iter().any(|b| b == name) {
            Some("is in plugins.block")
        } else if !self.allow.is_empty() && !self.allow.iter().any(|a| a == name) {
            Some("is not in plugins.allow")
        } else {
            None
        }
    }
}

/// A loaded plugin and the tools it got (clashing ones are left out).
#[derive(Clone)]
pub struct LoadedPlugin {
    /// The plugin's checked manifest.
    pub manifest: Manifest,
    /// The tools it registers; those whose names clash are left out.
    pub tools: Vec<Arc<PluginTool>>,
}

/// The result of loading every directory.
#[derive(Clone, Default)]
pub struct LoadReport {
    /// The plugins that loaded, in directory order.
    pub plugins: Vec<LoadedPlugin>,
    /// Problems of skipped manifests, with file and JSON path.
    pub errors: Vec<ManifestError>,
    /// Refused tools and unreadable entries.
    pub warnings: Vec<String>,
    /// Plugins the operator keeps out (`plugins.allow` / `plugins.block`): name and why. Not a
    /// problem, so never warned about.
    pub excluded: Vec<(String, String)>,
}

/// Read and check every manifest in `settings.dirs`, in order.
pub fn load(settings: &PluginsSettings) -> LoadReport {
    let mut report = LoadReport::default();
    let mut taken: Vec<(String, String)> = settings
        .reserved
        .iter()
        .map(|n| (n.clone(), "a built-in tool".to_string()))
        .collect();
    let mut names: Vec<String> = Vec::new();
    for dir in &settings.dirs {
        let scan = settings.disk.scan(&dir.path, MAX_MANIFEST_BYTES);
        report.warnings.extend(scan.warnings);
        for found in scan.found {
            // A blocked plugin is not even parsed: its directory name is enough to refuse it.
            let dir_name = found
                .plugin_dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if settings.block.contains(&dir_name) {
                report
                    .excluded
                    .push((dir_name, "is in plugins.block".to_string()));
                continue;
            }
            let is_exec = |p: &std::path::Path| settings.disk.is_executable_file(p);
            let manifest =
                match manifest::load(&found.path, &found.plugin_dir, &found.bytes, &is_exec) {
                    Ok(m) => m,
                    Err(errors) => {
                        report.errors.extend(errors);
                        continue;
                    }
                };
            if let Some(why) = settings.excluded(&manifest.name) {
                report
                    .excluded
                    .push((manifest.name.clone(), why.to_string()));
                continue;
            }
            if names.contains(&manifest.name) {
                report.warnings.push(format!(
                    "{}: plugin `{}` is already loaded from an earlier directory; skipped",
                    found.path.display(),
                    manifest.name
                ));
                continue;
            }
            names.push(manifest.name.clone());
            let info = Arc::new(PluginInfo {
                name: manifest.name.clone(),
                version: manifest.version.clone(),
                dir: manifest.dir.clone(),
            });
            let mut tools = Vec::new();
            for def in &manifest.tools {
                if let Some(why) = clash(&def.name, &taken, &settings.reserved_prefixes) {
                    report.warnings.push(format!(
                        "{}: tool `{}` of plugin `{}` is refused: its name is taken by {why}",
                        found.path.display(),
                        def.name,
                        manifest.name
                    ));
                    continue;
                }
                taken.push((def.name.clone(), format!("plugin `{}`", manifest.name)));
                let env = def
                    .env
                    .iter()
                    .filter_map(|k| (settings.env)(k).map(|v| (k.clone(), v)))
                    .collect();
                tools.push(Arc::new(PluginTool {
                    plugin: info.clone(),
                    def: def.clone(),
                    env,
                }));
            }
            report.plugins.push(LoadedPlugin { manifest, tools });
        }
    }
    report
}

fn clash(name: &str, taken: &[(String, String)], prefixes: &[String]) -> Option<String> {
    if let Some((_, by)) = taken.iter().find(|(n, _)| n == name) {
        return Some(by.clone());
    }
    prefixes
        .iter()
        .find(|p| name.starts_with(p.as_str()))
        .map(|p| format!("the MCP namespace `{p}`"))
}

/// The `plugins` extension holding every loaded plugin's tools, as of the last load.
pub fn extension(report: &LoadReport) -> Arc<dyn Extension> {
    Arc::new(Plugins {
        settings: None,
        current: RwLock::new(Arc::new(report.clone())),
    })
}

/// The plugins, loaded now and loaded again on [`Plugins::reload`] (when a plugin directory
/// changes while a long-running front end runs). The registry reads [`Extension::tools`]
/// again at each refresh, so a reloaded tool set is seen from the next model turn on.
pub struct Plugins {
    settings: Option<PluginsSettings>,
    current: RwLock<Arc<LoadReport>>,
}

impl Plugins {
    /// Load every directory now.
    pub fn new(settings: PluginsSettings) -> Arc<Self> {
        let report = load(&settings);
        Arc::new(Self {
            settings: Some(settings),
            current: RwLock::new(Arc::new(report)),
        })
    }

    /// What the last load found.
    pub fn report(&self) -> Arc<LoadReport> {
        match self.current.read() {
            Ok(guard) => Arc::clone(&guard),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// The configured directories.
    pub fn dirs(&self) -> Vec<PluginDir> {
        self.settings
            .as_ref()
            .map(|s| s.dirs.clone())
            .unwrap_or_default()
    }

    /// Read every manifest again; the new report replaces the old one whole.
    pub fn reload(&self) -> Arc<LoadReport> {
        let Some(settings) = &self.settings else {
            return self.report();
        };
        let report = Arc::new(load(settings));
        if let Ok(mut guard) = self.current.write() {
            *guard = Arc::clone(&report);
        }
        report
    }
}

impl Extension for Plugins {
    fn name(&self) -> &str {
        NAME
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.report()
            .plugins
            .iter()
            .flat_map(|p| p.tools.iter().map(|t| t.clone() as Arc<dyn Tool>))
            .collect()
    }
}

#[cfg(test)]
mod tests;
