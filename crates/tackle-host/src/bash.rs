//! The one shell that runs shell lines: bash, located once, started without any start-up file,
//! and asked (through `--pretty-print`) how it reads a line before the line runs.
//!
//! The analyser reads bash grammar, so lines must run in bash, never in whatever `/bin/sh` is
//! (dash on Debian reads `[[ … ]]`, `(( … ))` and some here-documents differently). Bash's
//! own reading of the line is analysed as well, so a construct where the analyser's parser and
//! bash disagree (where a here-document ends, say) is checked in both readings.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::Duration;
use tokio::io::AsyncWriteExt;

/// Where bash is looked for, system directories first (a `bash` earlier in the user's `PATH`
/// may be an old one whose grammar the analyser does not model).
const BASH_CANDIDATES: &[&str] = &["/usr/bin/bash", "/bin/bash", "/usr/local/bin/bash"];

/// Options that make bash read no start-up file and inherit no settings.
pub(crate) const BASH_ARGS: &[&str] = &["--noprofile", "--norc"];

pub(crate) use tackle_protocol::env::is_shell_startup_variable;

/// How long bash may take to read a line back.
const READ_BACK_TIMEOUT: Duration = Duration::from_secs(5);

/// The bash that runs shell lines, found once per process.
pub fn bash_path() -> Option<&'static Path> {
    static BASH: OnceLock<Option<PathBuf>> = OnceLock::new();
    BASH.get_or_init(locate).as_deref()
}

fn locate() -> Option<PathBuf> {
    BASH_CANDIDATES
        .iter()
        .map(PathBuf::from)
        .find(|p| crate::exec::is_executable(p))
        .or_else(|| crate::exec::find_program("bash"))
}

/// Why a line could not be read back by bash.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum ReadBackError {
    #[error("bash is not installed (looked in {} and PATH); shell lines run only in bash, the grammar the policy checks", BASH_CANDIDATES.join(", "))]
    Missing,
    #[error("bash cannot read the line: {0}")]
    Syntax(String),
    #[error("bash could not be asked how it reads the line: {0}")]
    Failed(String),
}

/// The line as bash itself reads it, printed back in bash's canonical form. The line goes in on
/// standard input: with `-c`, `--pretty-print` would run it.
pub(crate) async fn read_back(line: &str) -> Result<String, ReadBackError> {
    // A call is checked before approval and again when it runs: the second check of the same
    // line reuses bash's answer instead of starting bash again.
    if let Some(known) = recent().lookup(line) {
        return known;
    }
    let result = ask_bash(line).await;
    if !matches!(result, Err(ReadBackError::Failed(_))) {
        recent().remember(line, &result);
    }
    result
}

/// Bash's readings of the last few lines (only answers bash gave, never a failure to ask).
struct Recent(
    std::sync::Mutex<std::collections::VecDeque<(String, Result<String, ReadBackError>)>>,
);

/// How many readings are kept.
const RECENT: usize = 32;

fn recent() -> &'static Recent {
    static RECENT_LINES: OnceLock<Recent> = OnceLock::new();
    RECENT_LINES.get_or_init(|| Recent(Default::default()))
}

impl Recent {
    fn lookup(&self, line: &str) -> Option<Result<String, ReadBackError>> {
        let lines = self.0.lock().ok()?;
        lines
            .iter()
            .find(|(l, _)| l == line)
            .map(|(_, r)| r.clone())
    }

    fn remember(&self, line: &str, result: &Result<String, ReadBackError>) {
        if let Ok(mut lines) = self.0.lock() {
            if lines.len() >= RECENT {
                lines.pop_front();
            }
            lines.push_back((line.to_string(), result.clone()));
        }
    }
}

async fn ask_bash(line: &str) -> Result<String, ReadBackError> {
    let bash = bash_path().ok_or(ReadBackError::Missing)?;
    let mut child = tokio::process::Command::new(bash)
        .args(BASH_ARGS)
        .arg("--pretty-print")
        .env_clear()
        .envs(std::env::vars().filter(|(k, _)| k == "LANG" || k.starts_with("LC_")))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| ReadBackError::Failed(e.to_string()))?;
    if let Some(mut stdin) = child.stdin.take() {
        let text = line.as_bytes().to_vec();
        tokio::spawn(async move {
            let _ = stdin.write_all(&text).await;
        });
    }
    let out = tokio::time::timeout(READ_BACK_TIMEOUT, child.wait_with_output())
        .await
        .map_err(|_| ReadBackError::Failed("it took too long".into()))?
        .map_err(|e| ReadBackError::Failed(e.to_string()))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        let first = stderr.lines().next().unwrap_or("syntax error").to_string();
        return Err(ReadBackError::Syntax(first));
    }
    // A here-document that bash closes only at the end of input is read differently by
    // parsers; bash warns about it, and the warning is taken as a refusal.
    if stderr.contains("here-document") {
        let first = stderr.lines().next().unwrap_or_default().to_string();
        return Err(ReadBackError::Syntax(first));
    }
    String::from_utf8(out.stdout).map_err(|_| ReadBackError::Failed("not UTF-8".into()))
}

/// [`read_back`] for callers outside the host (tests, `--explain`-style tools): the error says
/// why bash could not read the line.
pub async fn bash_read_back(line: &str) -> Result<String, String> {
    read_back(line).await.map_err(|e| e.to_string())
}
