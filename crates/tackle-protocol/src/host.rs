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
    /// Reading a file, or listing or searching under a directory.
    FileRead {
        /// The path as the tool asked for it (checked after symlinks are resolved).
        path: PathBuf,
    },
    /// Creating or changing a file.
    FileWrite {
        /// The path as the tool asked for it (checked after symlinks are resolved).
        path: PathBuf,
    },
    /// A shell line, run as `sh -c LINE` after the analyser has checked every command in it.
    Shell {
        /// The whole line as the model wrote it.
        command: String,
    },
    /// A program run with argv, no shell (e.g. `git`). Checked as the words `program args…`.
    Exec {
        /// The program as named (a bare name or a path).
        program: String,
        /// Its arguments, no shell expansion.
        args: Vec<String>,
    },
    /// An HTTP request, checked against the network grant.
    Network {
        /// The HTTP method, e.g. `GET`.
        method: String,
        /// The URL as asked for, before any redirect.
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
    /// The file to read, absolute or relative to the workspace.
    pub path: PathBuf,
    /// Byte offset to start at.
    pub offset: u64,
    /// At most this many bytes are returned; `None` = the host's own cap.
    pub max_bytes: Option<u64>,
}

impl ReadRequest {
    /// A request for the whole file from its start, up to the host's cap.
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
    /// The bytes read, at most the request's `max_bytes` (or the host's cap).
    pub bytes: Vec<u8>,
    /// The file's size in bytes, whatever part was read.
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
    /// The device the file lives on.
    pub dev: u64,
    /// The inode number.
    pub ino: u64,
    /// The file's size in bytes in that state.
    pub size: u64,
    /// Last modification time, in nanoseconds since the Unix epoch.
    pub mtime_ns: i128,
    /// Last status change time, in nanoseconds since the Unix epoch.
    pub ctime_ns: i128,
    /// A hash of the whole content (change detection, not integrity); `None` after a partial read.
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
    /// The file to write, absolute or relative to the workspace.
    pub path: PathBuf,
    /// The complete new content.
    pub data: Vec<u8>,
    /// Create missing parent directories (inside the grant).
    pub create_dirs: bool,
    /// The file must still be this version when the new content replaces it (an edit of
    /// what was read); otherwise the write fails with [`HostError::Conflict`]. Without it the
    /// host still refuses to replace a file that changed while this write was under way.
    pub expected: Option<FileVersion>,
}

/// What a successful [`ToolHost::write`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteReport {
    /// The canonical path that was written.
    pub path: PathBuf,
    /// The size of the new content, in bytes.
    pub bytes_written: u64,
    /// The file did not exist before.
    pub created: bool,
}

/// List a directory tree (respecting .gitignore by default), or find paths by glob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListRequest {
    /// The directory to list (or search by glob), absolute or relative to the workspace.
    pub path: PathBuf,
    /// How many levels below `path` to descend; `None`: no limit.
    pub max_depth: Option<usize>,
    /// Include dot files and dot directories.
    pub include_hidden: bool,
    /// Skip what `.gitignore` (and the like) ignores.
    pub respect_gitignore: bool,
    /// Only entries whose workspace-relative path matches this glob (`**/*.rs`).
    pub glob: Option<String>,
    /// Stop after this many entries; the caller reports the cut.
    pub max_entries: usize,
}

/// One entry of a [`ToolHost::list`] answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirEntry {
    /// Path relative to the listed root when inside it, else absolute.
    pub path: PathBuf,
    /// Whether the entry is a directory.
    pub is_dir: bool,
    /// Size in bytes from the entry's metadata.
    pub size: u64,
}

/// Search file contents by regex, in-process (ripgrep's crates).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchRequest {
    /// The directory to search under, absolute or relative to the workspace.
    pub root: PathBuf,
    /// The regular expression (Rust `regex` syntax) each line is matched against.
    pub pattern: String,
    /// Match regardless of case.
    pub case_insensitive: bool,
    /// Only files whose relative path matches this glob (`**/*.rs`).
    pub glob: Option<String>,
    /// Include dot files and dot directories.
    pub include_hidden: bool,
    /// Stop after this many matching lines.
    pub max_results: usize,
}

/// One matching line of a [`ToolHost::search`] answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchHit {
    /// The file the line is in.
    pub path: PathBuf,
    /// The line's number, from 1.
    pub line_number: u64,
    /// The line's text (invalid UTF-8 replaced).
    pub line: String,
}

/// Run a process. `Shell` lines are checked by the shell analyser before they run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecRequest {
    /// What to run: a shell line or an argv.
    pub command: ExecCommand,
    /// Working directory; `None`: the workspace. Must be readable under the grant.
    pub cwd: Option<PathBuf>,
    /// The command is killed after this long and the result says `timed_out`.
    pub timeout: Duration,
    /// Extra environment on top of the scrubbed base.
    pub env: Vec<(String, String)>,
    /// Bytes fed to the command's standard input; `None`: no input.
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

/// What an [`ExecRequest`] runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecCommand {
    /// A shell line, run as `sh -c LINE` after the analyser has checked every command in it.
    Shell(String),
    /// A program run directly with these arguments, no shell.
    Argv {
        /// The program as named (a bare name or a path).
        program: String,
        /// Its arguments, passed as written.
        args: Vec<String>,
    },
}

/// What a finished (or killed) command left.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecOutput {
    /// `None` when killed by a signal.
    pub exit_code: Option<i32>,
    /// Standard output, lossily decoded, capped at `max_output_bytes`.
    pub stdout: String,
    /// Standard error, lossily decoded, capped at `max_output_bytes`.
    pub stderr: String,
    /// Wall-clock time from start to exit.
    pub duration: Duration,
    /// Output was longer than `max_output_bytes` and was cut.
    pub truncated: bool,
    /// The command ran past the request's `timeout` and was killed.
    pub timed_out: bool,
}

/// An HTTP request through the SSRF-guarded, DNS-pinned client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequest {
    /// The HTTP method, e.g. `GET`.
    pub method: String,
    /// The URL; checked against the network grant (every redirect hop too).
    pub url: String,
    /// Request headers, in order.
    pub headers: Vec<(String, String)>,
    /// The request body, if any.
    pub body: Option<Vec<u8>>,
    /// At most this many body bytes are read (the host may cap lower); the rest is cut.
    pub max_bytes: u64,
    /// Time limit for the whole exchange, body included.
    pub timeout: Duration,
    /// Follow redirects (each hop checked, at most 10); off: a redirect is returned as is.
    pub follow_redirects: bool,
    /// The destination was written by the operator in config (a search backend's `url`), not
    /// supplied by the model: trusted as written, still pinned, capped and timed out, and every
    /// redirect away from it is checked like a model-supplied URL (docs/architecture.md, "Grants").
    pub operator_configured: bool,
}

/// The answer to an [`HttpRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpResponse {
    /// The final response's status code.
    pub status: u16,
    /// The final response's headers, in order.
    pub headers: Vec<(String, String)>,
    /// The body, at most the request's `max_bytes`.
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
    /// The policy refused; the decision says which rule and why.
    #[error("{}", .0.why)]
    Denied(Decision),
    #[error("{path}: no such file or directory")]
    /// The path does not exist.
    NotFound {
        /// The path as the caller gave it.
        path: PathBuf,
    },
    /// The request itself cannot be carried out as asked (a bad URL or method, a path naming no
    /// file); the text says what.
    #[error("{0}")]
    Invalid(String),
    /// The file system or a process failed; the text says how.
    #[error("{0}")]
    Io(String),
    /// A network or HTTP failure (DNS, connect, TLS, too many redirects).
    #[error("{0}")]
    Network(String),
    /// The operation ran past its time limit.
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    /// The call was cancelled before it finished.
    #[error("cancelled")]
    Cancelled,
    /// This host does not offer the operation named (e.g. a host for tests).
    #[error("{0} is not supported by this host")]
    Unsupported(&'static str),
    /// The file is no longer what the caller read or saw: nothing was written.
    #[error("{} changed since read — re-read and retry (nothing was written)", .path.display())]
    Conflict {
        /// The file that changed.
        path: PathBuf,
    },
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
    /// Reads (part of) a file inside the read grant.
    async fn read(&self, req: ReadRequest) -> Result<FileContent, HostError>;
    /// Writes a whole file atomically inside the write grant; see [`WriteRequest::expected`].
    async fn write(&self, req: WriteRequest) -> Result<WriteReport, HostError>;
    /// Lists a directory tree inside the read grant.
    async fn list(&self, req: ListRequest) -> Result<Vec<DirEntry>, HostError>;
    /// Searches file contents inside the read grant.
    async fn search(&self, req: SearchRequest) -> Result<Vec<SearchHit>, HostError>;
    /// Runs a command in the sandbox, after the shell or argv checks.
    async fn exec(&self, req: ExecRequest) -> Result<ExecOutput, HostError>;
    /// Sends an HTTP request through the guarded, DNS-pinned client.
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
    /// A host that enforces `scope`'s grants, workspace and session for one call.
    fn scoped(&self, scope: &CallScope) -> Arc<dyn ToolHost>;

    /// The process is ending: remove what the host kept for every session it served (each
    /// session's `TMPDIR`), so nothing a command left there outlives the session.
    fn end_all_sessions(&self) {}
}
