//! The capability boundary. A tool *asks* its [`ToolHost`] for files, processes and sockets;
//! the host checks the grants in force for this call and does the I/O. Tools never do it
//! themselves (docs/architecture.md; a lint test enforces it).

use crate::decision::Decision;
use crate::error::{ErrorKind, ToolError};
use crate::grants::Grants;
use crate::tool::CallScope;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// What a tool wants to do, as the policy engine and the audit log see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Capability {
    FileRead {
        path: PathBuf,
    },
    FileWrite {
        path: PathBuf,
    },
    /// A shell line, run as `sh -c LINE` after the analyser has checked every command in it.
    Shell {
        command: String,
    },
    /// A program run with argv, no shell (e.g. `git`). Checked as the words `program args…`.
    Exec {
        program: String,
        args: Vec<String>,
    },
    Network {
        method: String,
        url: String,
    },
}

impl Capability {
    /// A one-line summary for prompts, logs and `--explain`.
    pub fn summary(&self) -> String {
        match self {
            Capability::FileRead { path } => format!("read {}", path.display()),
            Capability::FileWrite { path } => format!("write {}", path.display()),
            Capability::Shell { command } => format!("shell {command}"),
            Capability::Exec { program, args } => format!("exec {program} {}", args.join(" ")),
            Capability::Network { method, url } => format!("{method} {url}"),
        }
    }
}

/// Read (part of) a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadRequest {
    pub path: PathBuf,
    /// Byte offset to start at.
    pub offset: u64,
    /// At most this many bytes are returned; `None` = the host's own cap.
    pub max_bytes: Option<u64>,
}

impl ReadRequest {
    pub fn whole(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            offset: 0,
            max_bytes: None,
        }
    }
}

/// The bytes read, and what the file looks like as a whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileContent {
    /// The canonical path that was read.
    pub path: PathBuf,
    pub bytes: Vec<u8>,
    pub total_size: u64,
    /// Which file this was, to hand back in [`WriteRequest::expected`] so a write of an
    /// edited copy fails instead of silently losing a change made since the read.
    pub version: Option<FileVersion>,
}

/// One state of one file: its identity and timestamps from the open descriptor, and a digest
/// of the whole content when the read covered all of it (timestamps are too coarse to catch
/// a same-size rewrite within a few milliseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileVersion {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i128,
    pub ctime_ns: i128,
    pub digest: Option<u64>,
}

impl FileVersion {
    /// Same file, same state: the digest is compared only when both sides have one.
    pub fn same_as(&self, other: &FileVersion) -> bool {
        let meta = (self.dev, self.ino, self.size, self.mtime_ns, self.ctime_ns)
            == (
                other.dev,
                other.ino,
                other.size,
                other.mtime_ns,
                other.ctime_ns,
            );
        let content = match (self.digest, other.digest) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        };
        meta && content
    }
}

/// Write a whole file, atomically.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteRequest {
    pub path: PathBuf,
    pub data: Vec<u8>,
    /// Create missing parent directories (inside the grant).
    pub create_dirs: bool,
    /// The file must still be this version when the new content replaces it (an edit of
    /// what was read); otherwise the write fails with [`HostError::Conflict`]. Without it the
    /// host still refuses to replace a file that changed while this write was under way.
    pub expected: Option<FileVersion>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteReport {
    pub path: PathBuf,
    pub bytes_written: u64,
    /// The file did not exist before.
    pub created: bool,
}

/// List a directory tree (respecting .gitignore by default), or find paths by glob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListRequest {
    pub path: PathBuf,
    pub max_depth: Option<usize>,
    pub include_hidden: bool,
    pub respect_gitignore: bool,
    /// Only entries whose workspace-relative path matches this glob (`**/*.rs`).
    pub glob: Option<String>,
    pub max_entries: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirEntry {
    /// Path relative to the listed root when inside it, else absolute.
    pub path: PathBuf,
    pub is_dir: bool,
    pub size: u64,
}

/// Search file contents by regex, in-process (ripgrep's crates).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchRequest {
    pub root: PathBuf,
    pub pattern: String,
    pub case_insensitive: bool,
    pub glob: Option<String>,
    pub include_hidden: bool,
    pub max_results: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchHit {
    pub path: PathBuf,
    pub line_number: u64,
    pub line: String,
}

/// Run a process. `Shell` lines are checked by the shell analyser before they run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecRequest {
    pub command: ExecCommand,
    pub cwd: Option<PathBuf>,
    pub timeout: Duration,
    /// Extra environment on top of the scrubbed base.
    pub env: Vec<(String, String)>,
    pub stdin: Option<Vec<u8>>,
    /// Each of stdout and stderr is capped at this many bytes while streaming.
    pub max_output_bytes: usize,
    /// Where each line of output goes as it comes (the result still carries all of it).
    pub output_lines: Option<OutputLines>,
    /// Text the model supplied that the argv carries (a plugin tool's argument values): the
    /// command is refused if anything it runs would read one as more than data (a shell line or
    /// wrapper the template hands it to).
    pub data_values: Vec<String>,
    /// The program runs only if its SHA-256 (lowercase hex) is this, and then exactly the bytes
    /// that were checked, whatever happens to the file afterwards.
    pub program_sha256: Option<String>,
}

/// A [`ProgressSink`](crate::tool::ProgressSink) for a command's output lines. Two are equal
/// when they are the same sink.
#[derive(Clone)]
pub struct OutputLines(pub std::sync::Arc<dyn crate::tool::ProgressSink>);

impl std::fmt::Debug for OutputLines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OutputLines")
    }
}

impl PartialEq for OutputLines {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for OutputLines {}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecCommand {
    Shell(String),
    Argv { program: String, args: Vec<String> },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecOutput {
    /// `None` when killed by a signal.
    pub exit_code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub duration: Duration,
    /// Output was longer than `max_output_bytes` and was cut.
    pub truncated: bool,
    pub timed_out: bool,
}

/// An HTTP request through the SSRF-guarded, DNS-pinned client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequest {
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
    pub max_bytes: u64,
    pub timeout: Duration,
    pub follow_redirects: bool,
    /// The destination was written by the operator in config (a search backend's `url`), not
    /// supplied by the model: trusted as written, still pinned, capped and timed out, and every
    /// redirect away from it is checked like a model-supplied URL (docs/architecture.md, "Grants").
    pub operator_configured: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The URL that answered, after redirects.
    pub final_url: String,
    /// Each hop followed, in order.
    pub redirects: Vec<String>,
    /// The body was longer than `max_bytes` and was cut.
    pub truncated: bool,
}

impl HttpResponse {
    /// The first header with this name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Why the host did not do what was asked.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HostError {
    #[error("{}", .0.why)]
    Denied(Decision),
    #[error("{path}: no such file or directory")]
    NotFound { path: PathBuf },
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Io(String),
    #[error("{0}")]
    Network(String),
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    #[error("cancelled")]
    Cancelled,
    #[error("{0} is not supported by this host")]
    Unsupported(&'static str),
    /// The file is no longer what the caller read or saw: nothing was written.
    #[error("{} changed since read — re-read and retry (nothing was written)", .path.display())]
    Conflict { path: PathBuf },
}

impl From<HostError> for ToolError {
    fn from(e: HostError) -> Self {
        match e {
            HostError::Denied(d) => ToolError::denied(d),
            HostError::Timeout(_) => ToolError::new(ErrorKind::Timeout, e.to_string()),
            HostError::Invalid(m) => ToolError::invalid_arguments(m),
            other => ToolError::failed(other.to_string()),
        }
    }
}

/// The capability boundary for one tool call, scoped to the grants in force for it.
#[async_trait]
pub trait ToolHost: Send + Sync {
    /// The canonical workspace root.
    fn workspace(&self) -> &Path;
    /// The resolved grants this host enforces.
    fn grants(&self) -> &Grants;
    /// Would this capability be allowed? Used for `--explain` and for denying before asking
    /// for approval. Never performs the action.
    async fn check(&self, capability: &Capability) -> Decision;
    async fn read(&self, req: ReadRequest) -> Result<FileContent, HostError>;
    async fn write(&self, req: WriteRequest) -> Result<WriteReport, HostError>;
    async fn list(&self, req: ListRequest) -> Result<Vec<DirEntry>, HostError>;
    async fn search(&self, req: SearchRequest) -> Result<Vec<SearchHit>, HostError>;
    async fn exec(&self, req: ExecRequest) -> Result<ExecOutput, HostError>;
    async fn http(&self, req: HttpRequest) -> Result<HttpResponse, HostError>;

    /// The one name of the file `path` denotes (links resolved, `..` folded; a missing tail
    /// kept as written), so two spellings of one file compare equal. Never fails: a path
    /// that cannot be resolved is returned as given.
    fn canonical(&self, path: &Path) -> PathBuf {
        path.to_path_buf()
    }

    /// The sandbox a command of this call would run in (mounts, programs taken away or the
    /// only ones left, where files may execute, system-call filter, network, user, and the
    /// layer enforcing each shell rule), for `--explain`. `None` where the host runs no
    /// commands.
    fn sandbox_view(&self) -> Option<serde_json::Value> {
        None
    }
}

/// Makes a [`ToolHost`] for one call: the dispatcher resolves the policy, then asks for a host
/// scoped to it.
pub trait HostProvider: Send + Sync {
    fn scoped(&self, scope: &CallScope) -> Arc<dyn ToolHost>;

    /// The process is ending: remove what the host kept for every session it served (each
    /// session's `TMPDIR`), so nothing a command left there outlives the session.
    fn end_all_sessions(&self) {}
}
