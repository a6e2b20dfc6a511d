//! The one shell that runs shell lines: bash, located once, started without any start-up file,
//! and asked (through `--pretty-print`) how it reads a line before the line runs.
//!
//! The analyser reads bash grammar, so lines must run in bash, never in whatever `/bin/sh` is
//! (dash on Debian reads `[[ … ]]`, `(( … ))` and some here-documents differently). Bash's
//! own reading of the line is analysed as well, so a construct where the analyser's parser and
//! bash disagree (where a here-document ends, say) is checked in both readings.

mod cache;

use cache::{BashIdentity, ReadBackCache};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

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
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadBackError {
    /// No bash was found, so no shell line can be checked or run.
    #[error("bash is not installed (looked in {} and PATH); shell lines run only in bash, the grammar the policy checks", BASH_CANDIDATES.join(", "))]
    Missing,
    /// bash refused the line; holds the first line of its error output.
    #[error("bash cannot read the line: {0}")]
    Syntax(String),
    /// bash did not answer (it could not be started, was stopped, timed out or printed
    /// something that is not UTF-8); holds what went wrong.
    #[error("bash could not be asked how it reads the line: {0}")]
    Failed(String),
}

/// The line as bash itself reads it, printed back in bash's canonical form. The line goes in on
/// standard input: with `-c`, `--pretty-print` would run it.
pub(crate) async fn read_back(line: &str) -> Result<String, ReadBackError> {
    static RECENT: OnceLock<Mutex<ReadBackCache<Answer>>> = OnceLock::new();
    let bash = bash_path().ok_or(ReadBackError::Missing)?;
    let recent = RECENT.get_or_init(|| Mutex::new(ReadBackCache::new()));
    read_back_with(bash, recent, line, READ_BACK_TIMEOUT).await
}

type Answer = Result<String, ReadBackError>;

/// [`read_back`] with the bash, the cache and the time limit given. A call is checked before
/// approval and again when it runs, and agents repeat lines: a line bash has answered for is
/// answered from the cache, by exact bytes, the same bash binary and the same locale (see
/// [`cache`]).
async fn read_back_with(
    bash: &Path,
    recent: &Mutex<ReadBackCache<Answer>>,
    line: &str,
    timeout: Duration,
) -> Answer {
    let locale = locale();
    let before = BashIdentity::of(bash, &locale);
    if let Some(id) = &before {
        if let Some(known) = recent.lock().ok().and_then(|mut c| c.lookup(id, line)) {
            return known;
        }
    }
    let result = ask_bash(bash, &locale, line, timeout).await;
    // Only bash's own answer about the line is kept, and only when the binary that gave it is
    // still the one at its path; a failure to ask is asked again next time (and fails closed).
    let answered = match &result {
        Ok(read) => Some(read.len()),
        Err(ReadBackError::Syntax(why)) => Some(why.len()),
        Err(ReadBackError::Missing | ReadBackError::Failed(_)) => None,
    };
    if let (Some(size), Some(id)) = (answered, before) {
        if BashIdentity::of(bash, &locale).as_ref() == Some(&id) {
            if let Ok(mut c) = recent.lock() {
                c.remember(&id, line, result.clone(), size);
            }
        }
    }
    result
}

/// Starts one bash to read the line back. The child has its own process group, so a Ctrl-C at
/// the terminal (sent to the foreground group) does not reach it; if it dies anyway, is killed or
/// outlives `timeout`, the answer is a failure, which the check turns into a refusal.
///
/// The line is given in a memory file rather than a pipe: bash reads a pipe one byte per system
/// call (so as not to read past a command it runs), a file in blocks; it prints the same.
async fn ask_bash(
    bash: &Path,
    locale: &[(OsString, OsString)],
    line: &str,
    timeout: Duration,
) -> Answer {
    let input = crate::seccomp::memfd_with(line.as_bytes())
        .map_err(|e| ReadBackError::Failed(e.to_string()))?;
    let child = tokio::process::Command::new(bash)
        .args(BASH_ARGS)
        .arg("--pretty-print")
        .env_clear()
        .envs(locale.iter().cloned())
        .stdin(Stdio::from(input))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| ReadBackError::Failed(e.to_string()))?;
    let out = tokio::time::timeout(timeout, child.wait_with_output())
        .await
        .map_err(|_| ReadBackError::Failed("it took too long".into()))?
        .map_err(|e| ReadBackError::Failed(e.to_string()))?;
    answer(out)
}

/// The only variables the read-back bash gets: the locale, which decides how it reads bytes
/// outside ASCII (kept as they are, whatever their encoding).
fn locale() -> Vec<(OsString, OsString)> {
    std::env::vars_os()
        .filter(|(k, _)| k == "LANG" || k.as_encoded_bytes().starts_with(b"LC_"))
        .collect()
}

/// What bash's exit, error output and printed reading say about the line.
fn answer(out: std::process::Output) -> Answer {
    // Killed by a signal: bash gave no answer about the line (and none is remembered).
    if out.status.code().is_none() {
        return Err(ReadBackError::Failed(format!(
            "bash was stopped ({})",
            out.status
        )));
    }
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
pub async fn bash_read_back(line: &str) -> Result<String, ReadBackError> {
    read_back(line).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// Lines whose reading is easy to get wrong: quoting, here-documents, expansions that run
    /// programs, alias and function tricks, bytes outside ASCII, syntax errors, long lines.
    fn tricky_lines() -> Vec<String> {
        let mut lines: Vec<String> = [
            "git status && ls -la | grep foo",
            "echo 'it'\"'\"'s' ; rm -rf /tmp/x",
            "echo $'\\x72m' -rf /",
            "$'\\x72\\x6d' -rf /tmp/x",
            "$'\\162\\155' x; ls",
            "cat <<EOF\nrm -rf /\nEOF\nls",
            "cat <<'EOF'\n$(rm -rf /)\nEOF\n",
            "cat <<-EOF\n\t$(rm x)\n\tEOF\n",
            "cat <<EOF\nnever closed",
            "echo \"unterminated",
            "echo 'unterminated",
            "ls )",
            "diff <(ls a) <(rm -rf b)",
            "cat >(rm x) < /dev/null",
            "alias ls='rm -rf /'; ls",
            "shopt -s expand_aliases\nalias g=rm\ng -rf /",
            "f() { rm -rf /; }; f",
            "eval 'rm -rf /'",
            "echo \"${x:-$(rm -rf /)}\"",
            "echo `rm -rf /`",
            "ls #comment\nrm x",
            "ls \\\nrm x",
            "ls & rm x",
            "ls\r\nrm x",
            "case x in x) rm y;; esac",
            "[[ -f x ]] && echo $((1 + 2))",
            "echo héllo wörld 日本語 🎉 \u{202e}mr",
            "r\u{0301}m -rf /",
            "echo a\u{0}b; rm x",
            "IFS=x; ls",
            "x=rm; $x -rf /",
            "{ ls; rm x; }",
            "(cd / && rm -rf x)",
            "ls; ",
            "",
        ]
        .map(String::from)
        .to_vec();
        lines.push(format!("echo {}; rm -rf /", "a ".repeat(5000)));
        lines.push(format!(
            "echo {}; ls",
            "b".repeat(cache::MAX_ENTRY_BYTES + 10)
        ));
        lines
    }

    fn grant() -> tackle_protocol::ShellGrant {
        tackle_protocol::ShellGrant {
            allow: ["git", "ls", "grep", "echo", "cat", "diff"]
                .map(String::from)
                .to_vec(),
            deny: vec!["rm".into()],
            ..Default::default()
        }
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
    }

    #[test]
    fn a_remembered_reading_is_the_reading_bash_gives_and_decides_the_same() {
        let Some(bash) = bash_path() else { return };
        runtime().block_on(async {
            let recent = Mutex::new(ReadBackCache::new());
            for line in tricky_lines() {
                let fresh = ask_bash(bash, &locale(), &line, READ_BACK_TIMEOUT).await;
                let first = read_back_with(bash, &recent, &line, READ_BACK_TIMEOUT).await;
                let again = read_back_with(bash, &recent, &line, READ_BACK_TIMEOUT).await;
                assert_eq!(first, fresh, "{line:?}");
                assert_eq!(again, fresh, "{line:?}");
                // The second reading came from the cache, unless the line is too long to keep.
                let id = BashIdentity::of(bash, &locale()).expect("bash is there");
                let kept = recent.lock().expect("cache").lookup(&id, &line);
                let short =
                    line.len() + fresh.as_ref().map_or(0, String::len) <= cache::MAX_ENTRY_BYTES;
                assert_eq!(kept.is_some(), short, "{line:?}");
                // The host's decision (which reads through the process-wide cache) is the same
                // the first time and when answered from the cache.
                let g = grant();
                let decided = crate::exec::check_shell_line(&line, &g).await;
                let decided_again = crate::exec::check_shell_line(&line, &g).await;
                assert_eq!(decided.verdict, decided_again.verdict, "{line:?}");
                assert_eq!(decided.why, decided_again.why, "{line:?}");
            }
        });
    }

    #[test]
    fn lines_that_run_rm_are_denied_whether_or_not_bash_was_asked_before() {
        if bash_path().is_none() {
            return;
        }
        runtime().block_on(async {
            let g = grant();
            // Each of these runs `rm` (or a program outside the allow list) as bash reads it.
            let runs_rm = [
                "echo 'it'\"'\"'s' ; rm -rf /tmp/x",
                "$'\\x72\\x6d' -rf /tmp/x",
                "diff <(ls a) <(rm -rf b)",
                "cat >(rm x) < /dev/null",
                "alias ls='rm -rf /'; ls",
                "f() { rm -rf /; }; f",
                "echo \"${x:-$(rm -rf /)}\"",
                "echo `rm -rf /`",
                "ls #comment\nrm x",
                "ls & rm x",
                "ls\r\nrm x",
                "echo a\u{0}b; rm x",
                "x=rm; $x -rf /",
                "{ ls; rm x; }",
            ];
            for line in runs_rm {
                assert!(tricky_lines().iter().any(|l| l == line), "{line:?}");
                for _ in 0..2 {
                    let line = line.to_string();
                    let d = crate::exec::check_shell_line(&line, &g).await;
                    assert_ne!(
                        d.verdict,
                        tackle_protocol::Verdict::Allow,
                        "{line:?}: {}",
                        d.why
                    );
                }
            }
        });
    }

    #[test]
    fn bash_reads_a_line_from_a_memory_file_as_it_reads_it_from_a_pipe() {
        use std::io::Write;
        let Some(bash) = bash_path() else { return };
        let rt = runtime();
        for line in tricky_lines() {
            let mut child = std::process::Command::new(bash)
                .args(BASH_ARGS)
                .arg("--pretty-print")
                .env_clear()
                .envs(locale())
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("bash starts");
            let mut stdin = child.stdin.take().expect("a pipe");
            let text = line.clone();
            let writer = std::thread::spawn(move || {
                let _ = stdin.write_all(text.as_bytes());
            });
            let piped = answer(child.wait_with_output().expect("bash answers"));
            let _ = writer.join();
            let from_file = rt.block_on(ask_bash(bash, &locale(), &line, READ_BACK_TIMEOUT));
            assert_eq!(from_file, piped, "{line:?}");
        }
    }

    /// A stand-in for bash: a script, made runnable before it is returned.
    fn fake_bash(dir: &Path, name: &str, body: &str) -> PathBuf {
        let path = dir.join(name);
        let staged = dir.join(format!("{name}.new"));
        std::fs::write(&staged, format!("#!/bin/sh\n{body}\n")).expect("write the script");
        std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(0o755))
            .expect("make it runnable");
        std::fs::rename(&staged, &path).expect("put it in place");
        // Another test's fork may briefly hold the written file open ("text file busy").
        for _ in 0..50 {
            match std::process::Command::new("/bin/sh")
                .arg("-n")
                .arg(&path)
                .status()
            {
                Ok(_) if std::fs::File::open(&path).is_ok() => break,
                _ => std::thread::sleep(Duration::from_millis(20)),
            }
        }
        path
    }

    #[test]
    fn a_read_back_that_hangs_fails_is_stopped_and_is_not_remembered() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let pid_file = dir.path().join("pid");
        let bash = fake_bash(
            dir.path(),
            "hangs",
            &format!("echo $$ > '{}'; exec sleep 30", pid_file.display()),
        );
        runtime().block_on(async {
            let recent = Mutex::new(ReadBackCache::new());
            let started = std::time::Instant::now();
            let got = read_back_with(&bash, &recent, "ls", Duration::from_millis(300)).await;
            assert!(matches!(got, Err(ReadBackError::Failed(_))), "{got:?}");
            assert!(started.elapsed() < Duration::from_secs(10));
            assert_eq!(recent.lock().expect("cache").size(), (0, 0));
        });
        // The stalled reader does not outlive the check.
        let pid = std::fs::read_to_string(&pid_file).expect("the reader started");
        let proc_dir = PathBuf::from(format!("/proc/{}", pid.trim()));
        let mut gone = false;
        for _ in 0..100 {
            let state = std::fs::read_to_string(proc_dir.join("stat")).unwrap_or_default();
            if state.is_empty() || state.contains(") Z ") {
                gone = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(
            gone,
            "the read-back process {} is still running",
            pid.trim()
        );
    }

    #[test]
    fn a_killed_read_back_fails_and_is_asked_again() {
        let dir = tempfile::tempdir().expect("a temp dir");
        runtime().block_on(async {
            for signal in ["INT", "KILL", "TERM"] {
                let bash = fake_bash(dir.path(), signal, &format!("kill -{signal} $$"));
                let recent = Mutex::new(ReadBackCache::new());
                for _ in 0..2 {
                    let got = read_back_with(&bash, &recent, "ls", READ_BACK_TIMEOUT).await;
                    assert!(
                        matches!(got, Err(ReadBackError::Failed(_))),
                        "{signal}: {got:?}"
                    );
                    assert_eq!(recent.lock().expect("cache").size(), (0, 0), "{signal}");
                }
            }
        });
    }

    #[test]
    fn the_reader_is_not_in_the_terminal_s_process_group() {
        let dir = tempfile::tempdir().expect("a temp dir");
        // Field 5 of /proc/PID/stat is the process group.
        let bash = fake_bash(
            dir.path(),
            "group",
            "cat > /dev/null; cut -d' ' -f5 /proc/$$/stat",
        );
        let got =
            runtime().block_on(async { ask_bash(&bash, &locale(), "ls", READ_BACK_TIMEOUT).await });
        let group: i32 = got
            .expect("the stand-in answers")
            .trim()
            .parse()
            .expect("a process group");
        // SAFETY: getpgrp has no preconditions.
        let ours = unsafe { libc::getpgrp() };
        assert_ne!(
            group, ours,
            "a Ctrl-C for this process would reach the reader"
        );
    }

    #[test]
    fn a_new_bash_at_the_same_path_is_asked_again() {
        let dir = tempfile::tempdir().expect("a temp dir");
        runtime().block_on(async {
            let recent = Mutex::new(ReadBackCache::new());
            let bash = fake_bash(dir.path(), "bash", "cat > /dev/null; echo old");
            let got = read_back_with(&bash, &recent, "ls", READ_BACK_TIMEOUT).await;
            assert_eq!(got, Ok("old\n".to_string()));
            let bash = fake_bash(dir.path(), "bash", "cat > /dev/null; echo new");
            let got = read_back_with(&bash, &recent, "ls", READ_BACK_TIMEOUT).await;
            assert_eq!(got, Ok("new\n".to_string()));
        });
    }
}
