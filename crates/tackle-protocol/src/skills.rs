//! The skill directories as the `skills` tools see them: what they may ask of the disk.
//!
//! Skill directories are chosen by the operator (`skills.dirs`), never by the model, so they are
//! not reached through a call's [`ToolHost`](crate::ToolHost) and its fs grants (a user-level
//! `~/.config/tackle/skills` is outside every workspace). They still are not touched by the
//! tools themselves: `tackle-host` implements [`SkillDirs`] and the binary hands it down.

use std::path::{Path, PathBuf};

/// The largest skill file that is read (README, "Skills").
pub const MAX_SKILL_FILE_BYTES: u64 = 64 * 1024;

/// One candidate skill file found in a skills directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundSkill {
    /// The name the path gives: the directory of `<name>/SKILL.md` or the stem of `<name>.md`.
    pub entry: String,
    /// The file that was read.
    pub path: PathBuf,
    /// The skill's own directory (`{baseDir}` in its body): `<dir>/<name>` or `<dir>`.
    pub base_dir: PathBuf,
    /// The file's content, at most the `max_bytes` the scan was given.
    pub bytes: Vec<u8>,
}

/// What one directory held: the files read, in name order, and why others were skipped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanReport {
    /// The skill files read, in name order.
    pub found: Vec<FoundSkill>,
    /// One line per entry skipped (too large, a link, unreadable), saying why.
    pub warnings: Vec<String>,
}

/// Place a checked set of files as `<dir>/<name>/`, all at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillInstall {
    /// The skills directory (absolute).
    pub dir: PathBuf,
    /// The skill's directory name inside it (already checked: `[A-Za-z0-9_-]+`).
    pub name: String,
    /// Relative paths (`/`-separated, already checked: no `..`, no absolute paths) and contents.
    pub files: Vec<(String, Vec<u8>)>,
    /// A file only an install writes; an existing `<dir>/<name>/` is replaced only when it has one.
    pub marker: String,
    /// The content written to `marker` (what the install came from).
    pub marker_body: Vec<u8>,
}

/// What [`SkillDirs::install`] placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstallReport {
    /// The skill's directory as installed, `<dir>/<name>`.
    pub path: PathBuf,
    /// A previous install was replaced.
    pub replaced: bool,
}

/// Why a skill could not be read or installed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SkillDirError {
    /// The target exists and was not written by an install, so it is left alone.
    #[error("{} already exists and was not installed from a registry (no {marker}); remove it or install under another name", .path.display())]
    NotOurs {
        /// The directory that is in the way.
        path: PathBuf,
        /// The marker file it lacks.
        marker: String,
    },
    /// The request itself is unusable (a bad name or relative path); the text says which.
    #[error("{0}")]
    Invalid(String),
    /// Reading or writing the disk failed.
    #[error("{}: {message}", .path.display())]
    Io {
        /// The path the operation failed on.
        path: PathBuf,
        /// The operating system's error.
        message: String,
    },
}

/// Disk access for the skill catalogue and `install_skill`.
pub trait SkillDirs: Send + Sync {
    /// The skill files in `dir` (`<name>/SKILL.md` and `<name>.md`), each at most `max_bytes`;
    /// a missing directory holds none. Links are never followed and hidden names are skipped.
    fn scan(&self, dir: &Path, max_bytes: u64) -> ScanReport;
    /// A file `scan` reported, read again (at most `max_bytes`).
    fn read(&self, path: &Path, max_bytes: u64) -> Result<Vec<u8>, SkillDirError>;
    /// Write the files to a temporary directory beside the target and move it into place in
    /// one rename; on any error nothing is left behind.
    fn install(&self, req: &SkillInstall) -> Result<InstallReport, SkillDirError>;
}
