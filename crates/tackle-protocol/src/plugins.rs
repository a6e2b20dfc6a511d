//! The plugin directories as the `plugins` extension sees them: what it may ask of the disk.
//!
//! Plugin directories are chosen by the operator (`plugins.dirs`), never by the model, so the
//! manifests are not read through a call's [`ToolHost`](crate::ToolHost) and its fs grants (a
//! user-level `~/.config/tackle/plugins` is outside every workspace). They still are not read
//! by the tools crate itself: `tackle-host` implements [`PluginDirs`] and the binary hands it
//! down. Running a plugin's command always goes through the call's host (`Exec`).

use std::path::{Path, PathBuf};

/// The file every plugin directory holds (README, "Plugins").
pub const MANIFEST_FILE: &str = "plugin.json";

/// The largest manifest that is read.
pub const MAX_MANIFEST_BYTES: u64 = 256 * 1024;

/// One `<dir>/<plugin>/plugin.json` found in a plugins directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundManifest {
    /// The plugin's own directory, canonical (`<dir>/<plugin>`).
    pub plugin_dir: PathBuf,
    /// The manifest file that was read.
    pub path: PathBuf,
    /// The manifest's content, at most the `max_bytes` the scan was given.
    pub bytes: Vec<u8>,
}

/// What one directory held: the manifests read, in name order, and why others were skipped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ManifestScan {
    /// The manifests read, in plugin-name order.
    pub found: Vec<FoundManifest>,
    /// One line per entry skipped (too large, a link, unreadable), saying why.
    pub warnings: Vec<String>,
}

/// The largest plugin executable whose digest is checked (`binary.sha256`); the host holds
/// the checked copy in memory while it runs.
pub const MAX_PROGRAM_BYTES: u64 = 512 * 1024 * 1024;

/// Disk access for loading plugins.
pub trait PluginDirs: Send + Sync {
    /// The manifests in `dir` (`<plugin>/plugin.json`), each at most `max_bytes`; a missing
    /// directory holds none. Links are never followed and hidden names are skipped.
    fn scan(&self, dir: &Path, max_bytes: u64) -> ManifestScan;
    /// Is `path` a regular, executable file (no link in any component)?
    fn is_executable_file(&self, path: &Path) -> bool;
}
