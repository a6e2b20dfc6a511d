//! Differential tests against real bash: each line is run by `bash --noprofile --norc -c`, the
//! way the shell tool runs it, in a scratch directory whose `PATH` holds only stub programs that
//! record their own name. What the stubs record is what bash really started, and the analyser
//! must have reported every one of those programs, or refused the line.
//!
//! Bash builtins (`echo`, `printf`, `eval`, …) never reach a stub, so they are not traced; the
//! stubs cover the programs a rule would name. A name bash looked for and could not find (a
//! here-document line misread as a command, say) shows up as `command not found` on stderr and
//! counts as run too.
//!
//! `TACKLE_FUZZ_CASES=5000 cargo test -p tackle-policy --test bash_differential` runs a longer
//! pass of the property test (the default is 64 cases).

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use std::collections::BTreeSet;
use std::fs;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use tackle_host::{bash_read_back, check_shell_line};
use tackle_policy::shell::commands;
use tackle_protocol::Decision;
use tackle_protocol::ShellGrant;

const BASH: &str = "/usr/bin/bash";

/// Long enough for a slow, loaded machine; a line that takes longer is reported as hanging.
// Generous: CI runs this beside other test binaries on two cores.
const TIMEOUT: Duration = Duration::from_secs(10);

/// Programs the stub directory provides. Builtins are left out on purpose: bash runs its own
/// builtin and would never start a stub of that name.
const STUBS: &[&str] = &[
    "rm", "ls", "cat", "touch", "wc", "grep", "head", "tail", "sort", "uniq", "git", "cargo",
    "python3", "id", "date", "sed", "awk", "tr", "cut", "xargs", "env", "find", "make", "curl",
    "tee", "mv", "cp", "chmod", "mkdir", "sleep", "nice", "timeout", "sudo",
];

/// What bash did with one line.
#[derive(Debug)]
struct Trace {
    /// Stub programs bash started, and names it searched `PATH` for without finding them.
    ran: BTreeSet<String>,
    victim_exists: bool,
    timed_out: bool,
    stderr: String,
}

fn bash_available() -> bool {
    quiet_parser_panics();
    if Path::new(BASH).exists() {
        return true;
    }
    eprintln!("skipping: {BASH} does not exist, so there is no bash to compare the analyser with");
    false
}

/// The analyser catches brush-parser's panics and refuses those lines; their messages would
/// only bury the report, so they are not printed. Every other panic still is.
fn quiet_parser_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !info
                .location()
                .is_some_and(|l| l.file().contains("brush-parser"))
            {
                default(info);
            }
        }));
    });
}

/// A scratch directory holding `victim`, and `bin/` with one recording stub per name in
/// [`STUBS`]. Built afresh for each line so no run can affect another.
fn sandbox() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("create a scratch directory");
    let bin = dir.path().join("bin");
    fs::create_dir(&bin).expect("create the stub directory");
    for name in STUBS {
        let stub = bin.join(name);
        fs::write(
            &stub,
            "#!/bin/sh\nprintf '%s\\n' \"${0##*/}\" >> \"$TRACE_LOG\"\nexit 0\n",
        )
        .expect("write a stub program");
        fs::set_permissions(&stub, fs::Permissions::from_mode(0o755))
            .expect("make a stub program executable");
    }
    fs::write(dir.path().join("victim"), "precious\n").expect("write the victim file");
    (dir, bin)
}

/// Runs `line` in bash inside a fresh sandbox, killing bash and everything it started once
/// `timeout` has passed.
fn run_bash(line: &str, timeout: Duration) -> Trace {
    let (dir, bin) = sandbox();
    let log = dir.path().join("trace");
    let mut child = Command::new(BASH)
        .args(["--noprofile", "--norc", "-c", line])
        .env_clear()
        .env("PATH", &bin)
        .env("TRACE_LOG", &log)
        .env("HOME", dir.path())
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group, so a timeout can end background jobs along with bash.
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot start bash for {line:?} in {:?} (directory exists: {}): {e}",
                dir.path(),
                dir.path().exists()
            )
        });
    let pid = child.id();

    // Pipes are drained on threads: a line that writes a lot must not stall on a full pipe.
    let (tx, rx) = mpsc::channel::<(bool, Vec<u8>)>();
    let readers: Vec<(bool, Box<dyn Read + Send>)> = [
        child
            .stdout
            .take()
            .map(|p| (false, Box::new(p) as Box<dyn Read + Send>)),
        child
            .stderr
            .take()
            .map(|p| (true, Box::new(p) as Box<dyn Read + Send>)),
    ]
    .into_iter()
    .flatten()
    .collect();
    let pending = readers.len();
    for (is_stderr, mut pipe) in readers {
        let tx = tx.clone();
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            // A read error only loses output, which the trace file does not depend on.
            let _ = pipe.read_to_end(&mut buf);
            let _ = tx.send((is_stderr, buf));
        });
    }
    drop(tx);

    let deadline = Instant::now() + timeout;
    let mut timed_out = false;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() >= deadline => {
                timed_out = true;
                kill_group(pid);
                let _ = child.kill();
                let _ = child.wait();
                break;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            Err(e) => panic!("waiting for bash failed: {e}"),
        }
    }

    let mut stderr = Vec::new();
    let mut received = 0;
    let mut killed = false;
    while received < pending {
        match rx.recv_timeout(Duration::from_secs(1)) {
            Ok((is_stderr, buf)) => {
                received += 1;
                if is_stderr {
                    stderr = buf;
                }
            }
            // A background job outlived bash and holds the pipes open: end it, then collect.
            Err(mpsc::RecvTimeoutError::Timeout) if !killed => {
                killed = true;
                timed_out = true;
                kill_group(pid);
            }
            Err(_) => break,
        }
    }

    let stderr = String::from_utf8_lossy(&stderr).into_owned();
    let mut ran: BTreeSet<String> = fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    ran.extend(not_found(&stderr));
    Trace {
        ran,
        victim_exists: dir.path().join("victim").exists(),
        timed_out,
        stderr,
    }
}

/// Ends bash's process group (bash leads it, so its id is the group's). Bash's own `kill`
/// builtin does the signalling, since the standard library cannot signal a group.
fn kill_group(pid: u32) {
    let _ = Command::new(BASH)
        .args(["--noprofile", "--norc", "-c"])
        .arg(format!("kill -KILL -- -{pid}"))
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Names from bash's `/usr/bin/bash: line N: NAME: command not found` messages.
fn not_found(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix(BASH)?.strip_prefix(": line ")?;
            let rest = rest.trim_start_matches(|c: char| c.is_ascii_digit());
            let name = rest
                .strip_prefix(": ")?
                .strip_suffix(": command not found")?;
            Some(unquote_ansi_c(name))
        })
        .collect()
}

/// Bash prints a name holding control characters as `$'…'`; undo the escapes it uses there.
fn unquote_ansi_c(name: &str) -> String {
    let Some(inner) = name.strip_prefix("$'").and_then(|n| n.strip_suffix('\'')) else {
        return name.to_string();
    };
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('r') => out.push('\r'),
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('E') | Some('e') => out.push('\u{1b}'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// The program names (basename of the first word) of the commands the analyser reported.
fn reported_programs(cmds: &[Vec<String>]) -> BTreeSet<String> {
    cmds.iter()
        .filter_map(|c| c.first())
        .map(|w| w.rsplit('/').next().unwrap_or(w).to_string())
        .collect()
}

/// The decision the host takes before it runs a line (the analyser on the line as written and
/// as bash reads it back): the contract these tests hold.
fn check_shell(line: &str, grant: &ShellGrant) -> Decision {
    runtime().block_on(check_shell_line(line, grant))
}

/// The commands the analyser reports for the line as written and as bash reads it back.
fn reported_commands(line: &str) -> Result<Vec<Vec<String>>, String> {
    let mut cmds = commands(line).map_err(|e| e.to_string())?;
    match runtime().block_on(bash_read_back(line)) {
        Ok(read) => cmds.extend(commands(&read).map_err(|e| e.to_string())?),
        Err(e) => return Err(e.to_string()),
    }
    Ok(cmds)
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime for the host's checks")
    })
}

fn grant(allow: &[&str], deny: &[&str]) -> ShellGrant {
    ShellGrant {
        allow: allow.iter().map(|s| s.to_string()).collect(),
        deny: deny.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

/// Whether the analyser refuses the line as one it cannot see through (a computed command
/// name, code hidden in arithmetic on variables, …). A deny rule naming no real program puts
/// rules in force without denying anything the line names, so only unreadability can deny.
fn refused_as_unreadable(line: &str) -> bool {
    check_shell(line, &grant(&[], &["tackle-no-such-program"])).is_denied()
}

/// How the analyser's view of one line compares with what bash did.
#[derive(Debug)]
enum Verdict {
    /// `commands` returned an error: the line is refused outright.
    Refused,
    /// The analyser missed programs bash ran, but denies the line under any rule.
    Unreadable,
    /// Every program bash ran was reported.
    Agreed,
    /// Bash ran programs the analyser neither reported nor refused.
    Missed {
        missing: BTreeSet<String>,
        saw: Vec<Vec<String>>,
    },
}

fn compare(line: &str, trace: &Trace) -> Verdict {
    let Ok(cmds) = reported_commands(line) else {
        return Verdict::Refused;
    };
    let reported = reported_programs(&cmds);
    let missing: BTreeSet<String> = trace.ran.difference(&reported).cloned().collect();
    if missing.is_empty() {
        Verdict::Agreed
    } else if refused_as_unreadable(line) {
        Verdict::Unreadable
    } else {
        Verdict::Missed { missing, saw: cmds }
    }
}

/// Lines chosen to sit where a shell parser is most likely to read bash differently:
/// here-documents above all, then the grammar corners around them. Most of them run `rm` in
/// bash only if the construct is read one particular way.
const TRICKY: &[&str] = &[
    // Here-document delimiters, quoted in every way bash allows. Quoting keeps the body literal.
    "cat <<EOF\nrm victim\nEOF\nls",
    "cat <<'EOF'\n$(rm victim)\nEOF\nls",
    "cat <<\"EOF\"\n$(rm victim)\nEOF\nls",
    "cat <<E\"O\"F\n$(rm victim)\nEOF\nls",
    "cat <<\\EOF\n$(rm victim)\nEOF\nls",
    "cat <<E\\OF\n`rm victim`\nEOF\nls",
    "cat << 'EOF'\n$(rm victim)\nEOF\nls",
    // Bash removes `$'…'` quoting from a delimiter: `EOF` ends it, `$'EOF'` does not.
    "cat <<$'EOF'\n$(rm victim)\nEOF\nls",
    "cat <<$'EOF'\nEOF\nrm victim\n$'EOF'",
    "cat <<$'E\\x4fF'\nEOF\nrm victim\nE\\x4fF\nls",
    // A delimiter is never expanded: `$X` and `$(echo EOF)` end it as written.
    "cat <<\"$X\"\n$X\nrm victim\nEOF",
    "cat <<$X\n$X\nrm victim\nEOF",
    "cat <<$(echo EOF)\nEOF\n$(echo EOF)\nrm victim",
    "cat <<\"$(echo EOF)\"\nEOF\n$(echo EOF)\nrm victim",
    "cat <<`echo EOF`\nEOF\n`echo EOF`\nrm victim",
    // An empty delimiter is ended by the first empty line.
    "cat <<\"\"\nls\n\nrm victim",
    "cat <<''\n$(rm victim)\n\nls",
    // Here-documents inside command substitution, and delimiters followed by `)`.
    "echo $(cat <<EOF\nhi\nEOF\n)\nrm victim",
    "echo $(cat <<EOF\nhi\nEOF)\nrm victim\nEOF",
    "echo $(cat <<EOF)\nrm victim\nEOF",
    "echo \"$(cat <<EOF\n$(rm victim)\nEOF\n)\"",
    "x=$(cat <<'EOF'\n$(rm victim)\nEOF\n); ls",
    "echo $(cat <<'EOF'\n)\nrm victim\nEOF\n)",
    "echo $(cat <<'EOF'\nEOF)\nEOF\n); rm victim",
    "echo $(cat <<'EOF'\nEOF)\nrm victim\nEOF\n)",
    "echo $(cat <<EOF\nhi\nEOF)\nrm victim\nEOF\n)",
    "echo `cat <<EOF\nhi\nEOF\n`; rm victim",
    "for x in $(cat <<EOF\na\nEOF\n); do rm victim; done",
    // Trailing blanks after the closing delimiter: that line does not end the document.
    "cat <<EOF\nhi\nEOF \nrm victim\nEOF\nls",
    "cat <<EOF\nhi\nEOF\t\nrm victim\nEOF\nls",
    "cat <<EOF\nhi\n EOF\nrm victim\nEOF\nls",
    // `<<-` strips leading tabs only, from the body and the closing line.
    "cat <<-EOF\n\trm x\n\tEOF\nrm victim",
    "cat <<-EOF\n  EOF\nrm victim\nEOF\nls",
    "cat <<EOF\n\tEOF\nrm victim\nEOF\nls",
    "cat <<-'EOF'\n\t$(rm victim)\n\t\tEOF\nls",
    "cat <<-EOF\n\t$(rm victim)\n\tEOF",
    // Several here-documents on one line are read in order, after that line.
    "cat <<A <<B\nrm x\nA\nrm y\nB\nrm victim",
    "cat <<A; cat <<B\nA\nB\nrm victim",
    "cat <<A | cat <<'B'\n$(rm victim)\nA\n$(ls)\nB",
    "cat <<A && cat <<A\nA\nrm victim\nA\nls",
    // Commands after the here-document operator, on the same line.
    "cat <<EOF; rm victim\nhi\nEOF",
    "cat <<EOF && rm victim\nhi\nEOF",
    "cat <<EOF | rm victim\nhi\nEOF",
    "cat <<EOF # a comment ) ' \"\nrm x\nEOF\nrm victim",
    "cat <<EOF; echo $(rm victim)\nhi\nEOF",
    "cat <<EOF; echo \"$(rm victim)\"\nhi\nEOF",
    "cat <<EOF && cat <<< \"$(rm victim)\"\nhi\nEOF",
    "( cat <<'EOF' ); echo $(rm victim)\nEOF",
    "cat <<'EOF' | echo `rm victim`\nhi\nEOF",
    // Unquoted bodies run substitutions; quoted ones do not.
    "cat <<EOF\n$(rm victim)\nEOF",
    "cat <<EOF\n`rm victim`\nEOF",
    "cat <<'EOF'\n`rm victim`\nEOF\nls",
    "cat <<EOF\n${X:-$(rm victim)}\nEOF",
    "cat <<EOF\n$((1 + $(rm victim)))\nEOF",
    "cat <<EOF\n\\$(rm victim)\nEOF\nls",
    "cat <<EOF\n'$(rm victim)'\nEOF",
    // The delimiter is matched line by line, even where a substitution seems to continue.
    "cat <<EOF\n$(ls\nEOF\nrm victim\n)\nEOF",
    "cat <<EOF\n`ls\nEOF\nrm victim\n`\nEOF",
    "echo $(rm victim <<'EOF'\n$(\nEOF\n)",
    "echo $(cat <<'EOF'\n'\nEOF\nrm victim # '\n)",
    // Inside `$(…)`, an empty delimiter does not keep bash from expanding the body.
    "echo $(cat <<''\n$(rm victim)\n\n)",
    "echo \"$(cat <<\"\"\nx\n$(rm victim)\n\n)\"",
    // Here-documents in functions, case arms, conditions and loops.
    "f() { cat <<EOF\n$(rm victim)\nEOF\n}; f",
    "f() {\ncat <<'EOF'\nrm x\nEOF\nrm victim\n}\nf",
    "case x in x) cat <<EOF\n$(rm victim)\nEOF\n;; esac",
    "case x in (x) cat <<EOF ;;\nhi\nEOF\nesac; rm victim",
    "if cat <<EOF; then rm victim; fi\nhi\nEOF",
    "while cat <<EOF; false; do ls; done\nhi\nEOF\nrm victim",
    "{ cat <<EOF; }\nhi\nEOF\nrm victim",
    "(cat <<EOF)\nhi\nEOF\nrm victim",
    // Backslash-newline: inside the delimiter word, at the end of a body line, inside a name.
    "cat <<E\\\nOF\nrm x\nEOF\nrm victim",
    "cat <<EOF\nhi\nEOF\\\nrm victim\nEOF\nls",
    "cat <<'EOF'\nhi\nEOF\\\nrm victim\nEOF\nls",
    "cat <<EOF\nE\\\nOF\nrm victim\nEOF",
    "cat <<EOF\nhi\nEOF\\\n\nrm victim\nEOF",
    "echo `cat <<\\EOF\nEOF\\\n\nrm victim\nEOF\n`",
    // Inside `$(…)` bash ends the document at `EOF\` and runs what the next line expands to.
    "echo \"$(cat <<EOF\nEOF\\\n$(echo rm victim)\nEOF\n)\"",
    "r\\\nm victim",
    "ls \\\n; rm victim",
    "echo a\\\nrm victim",
    // CRLF line endings: the `\r` is part of every word and of the delimiter.
    "cat <<EOF\r\nrm x\r\nEOF\r\nrm victim\r\n",
    "cat <<EOF\r\nrm x\nEOF\nrm victim\n",
    "cat <<EOF\nhi\nEOF\r\nrm victim\nEOF\nls",
    "ls\r\nrm victim",
    // Here-strings and process substitution.
    "cat <<<\"$(rm victim)\"",
    "cat <<< 'rm victim'; ls",
    "cat <<<$(rm victim)",
    "cat <(rm victim)",
    "cat > >(rm victim)",
    "wc -l < <(rm victim)",
    // `[[ … ]]`: `<`, `>` and parentheses are not redirections or subshells there.
    "[[ a < b ]] && rm victim",
    "[[ a > b ]] || rm victim",
    "[[ ab =~ ^a(b)$ ]] && rm victim",
    "[[ x =~ ^(a|b)\\)$ ]] || rm victim",
    "[[ $(rm victim) == x ]]",
    "[[ -n x && ( a < b ) ]] && rm victim",
    "[[ x == ')' ]] || rm victim",
    // `(( … ))` and friends, including the `((` that is really two subshells.
    "(( 1 < 2 )) && rm victim",
    "(( x = $(rm victim) + 1 ))",
    "((ls); rm victim)",
    "( (ls) ); rm victim",
    "echo $(( $(rm victim) ))",
    "echo $((1+2)) $(rm victim)",
    "echo $[ $(rm victim) ]",
    "for ((i = 0; i < 1; i++)); do rm victim; done",
    "for ((i = 0; i < $(rm victim); i++)); do ls; done",
    // `case` with `(` patterns, `;&` and `;;&`, and words that look like its keywords.
    "case a in (a) rm victim ;; esac",
    "case a in a) ls ;& b) rm victim ;; esac",
    "case a in a) ls ;;& *) rm victim ;; esac",
    "case ')' in ')') rm victim ;; esac",
    "case x in x|esac) rm victim;; esac",
    "case esac in esac) rm victim;; esac",
    "echo $(case x in x) rm victim;; esac)",
    "echo $(case x in (x) ls;; esac; rm victim)",
    // Comments holding `)` or quotes, and `#` that is not a comment.
    "ls # comment ) ' \"\nrm victim",
    "ls #'\nrm victim #'",
    "echo a#b; rm victim",
    "echo $(ls # )\nrm victim\n)",
    "echo \"$(echo ')' ; rm victim)\"",
    // `{`, `}` and `!` as words, and brace expansion making a command name.
    "{ ls; rm victim; }",
    "echo } {; rm victim",
    "echo {} !; rm victim",
    "{rm,victim}",
    "r{m,} victim",
    "! rm victim",
    "ls !rm; rm victim",
    // Quoting corners.
    "echo $'\\''; rm victim",
    "echo $'a\\'b' ; rm victim",
    "echo 'a\\'; rm victim",
    "echo \"a\\\"; rm victim; \\\"\"",
    "echo `rm victim`",
    "echo \"`rm victim`\"",
    "echo '`rm victim`'; ls",
    "echo $(echo $(rm victim))",
    "\\rm victim",
    "\"r\"m victim",
    "$'\\x72m' victim",
    // Substitutions in assignments, redirections, expansions and subscripts.
    "x=$(rm victim) ls",
    "ls > $(rm victim)",
    "echo ${X:-$(rm victim)}",
    "echo ${X/$(rm victim)/y}",
    "a[$(rm victim)]=1",
    "echo \"${a[$(rm victim)]}\"",
    "[[ -v a[$(rm victim)] ]]",
    "X='a[$(rm victim)]'; echo $(( X ))",
    "printf -v 'a[$(rm victim)]' x",
    // Other compound commands and keywords.
    "time rm victim",
    "coproc rm victim",
    "function f { rm victim; }; f",
    "f() ( rm victim ); f",
    "while false; do ls; done; until true; do ls; done; rm victim",
    "if [[ -n x ]]; then rm victim; fi",
    // Builtins that run a command.
    "eval 'rm victim'",
    "command rm victim",
    "exec rm victim",
    "builtin eval rm victim",
    // Aliases are off in `bash -c` until a line turns them on, then apply to later lines.
    "shopt -s expand_aliases\nalias ls=rm\nls victim",
];

#[test]
fn bash_runs_no_program_the_analyser_did_not_report_in_the_tricky_lines() {
    if !bash_available() {
        return;
    }
    let started = Instant::now();
    let (mut refused, mut unreadable, mut ran_rm) = (0, 0, 0);
    let mut failures = Vec::new();
    for line in TRICKY {
        let trace = run_bash(line, TIMEOUT);
        if trace.timed_out {
            failures.push(format!(
                "line {line:?}\n  bash did not finish within {TIMEOUT:?}\n  stderr: {:?}",
                trace.stderr
            ));
            continue;
        }
        if trace.ran.contains("rm") {
            ran_rm += 1;
        }
        match compare(line, &trace) {
            Verdict::Refused => refused += 1,
            Verdict::Unreadable => unreadable += 1,
            Verdict::Agreed => {}
            Verdict::Missed { missing, saw } => failures.push(format!(
                "line {line:?}\n  bash ran:          {:?} (missed: {missing:?})\n  analyser reported: {saw:?}\n  check_shell(deny=[rm]): {}\n  bash stderr: {:?}",
                trace.ran,
                if check_shell(line, &grant(&[], &["rm"])).is_allowed() { "ALLOWED" } else { "denied" },
                trace.stderr,
            )),
        }
    }
    eprintln!(
        "{} tricky lines in {:?}: bash ran `rm` for {ran_rm}; the analyser refused {refused} \
         outright and {unreadable} as unreadable",
        TRICKY.len(),
        started.elapsed()
    );
    assert!(
        failures.is_empty(),
        "{} of {} lines disagree with bash:\n\n{}",
        failures.len(),
        TRICKY.len(),
        failures.join("\n\n")
    );
}

#[test]
fn the_harness_traces_programs_bash_starts_and_names_it_cannot_find() {
    if !bash_available() {
        return;
    }
    let trace = run_bash("ls; echo hi; rm victim | cat; no-such-thing", TIMEOUT);
    let want: BTreeSet<String> = ["cat", "ls", "no-such-thing", "rm"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(trace.ran, want, "stderr: {}", trace.stderr);
    assert!(trace.victim_exists, "a stub must not delete anything");
    assert!(!trace.timed_out);
    let trace = run_bash("ls\r", TIMEOUT);
    assert!(trace.ran.contains("ls\r"), "{:?}", trace.ran);
}

#[test]
fn the_harness_ends_a_line_that_hangs_and_its_background_jobs() {
    if !bash_available() {
        return;
    }
    let started = Instant::now();
    let trace = run_bash(
        "while :; do :; done & while :; do :; done",
        Duration::from_millis(300),
    );
    assert!(trace.timed_out);
    // The line loops for ever, its background job too: ending at all is what is checked (how
    // fast is not a test's business, and a loaded machine can take seconds to reap).
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
}

// ---------------------------------------------------------------------------------------------
// The property test: lines from a small grammar of the same constructs.

/// Builtins and function names the generated lines use, which the allow list must cover.
const BUILTINS: &[&str] = &["echo", "true", "false", ":", "printf", "f", "g"];

/// A piece of a generated line: its text so far, and the here-document bodies (each ending in
/// its closing line) that bash will read after the next newline.
#[derive(Debug, Clone)]
struct Frag {
    text: String,
    docs: String,
}

impl Frag {
    fn new(text: impl Into<String>) -> Self {
        Frag {
            text: text.into(),
            docs: String::new(),
        }
    }

    fn with(text: String, docs: String) -> Self {
        Frag { text, docs }
    }

    /// The text with its pending here-document bodies written out, for a context (`$(…)`,
    /// `(…)`) that must end before the outer line continues.
    fn closed(&self) -> String {
        if self.docs.is_empty() {
            self.text.clone()
        } else {
            format!("{}\n{}", self.text, self.docs)
        }
    }
}

fn simple() -> impl Strategy<Value = Frag> {
    prop_oneof![
        4 => Just("rm victim"),
        1 => Just("\\rm victim"),
        1 => Just("'r'm victim"),
        2 => Just("ls"),
        1 => Just("cat victim"),
        1 => Just("wc -l victim"),
        1 => Just("grep -q x victim"),
        1 => Just("git status"),
        1 => Just("date"),
        1 => Just("id"),
        1 => Just("sort victim"),
        1 => Just("touch new"),
        1 => Just("echo hi"),
        1 => Just("echo ')' \"(\" '#'"),
        1 => Just("true"),
        1 => Just("false"),
        1 => Just(":"),
        1 => Just("printf '%s\\n' a"),
    ]
    .prop_map(Frag::new)
}

/// How a delimiter may be written after `<<`, and the line that ends the document in bash
/// (quote removal applies, expansion never does).
const DELIMITERS: &[(&str, &str)] = &[
    ("EOF", "EOF"),
    (" EOF", "EOF"),
    ("'EOF'", "EOF"),
    ("\"EOF\"", "EOF"),
    ("E\"O\"F", "EOF"),
    ("\\EOF", "EOF"),
    ("E\\OF", "EOF"),
    ("$'EOF'", "EOF"),
    ("\"$X\"", "$X"),
    ("$X", "$X"),
    ("$(echo EOF)", "$(echo EOF)"),
    ("''", ""),
    ("\"\"", ""),
    ("END", "END"),
    ("'a b'", "a b"),
];

/// Body lines; `{D}` stands for the closing word, so near-misses of it are likely.
const BODY: &[&str] = &[
    "rm victim",
    "$(rm victim)",
    "`rm victim`",
    "${X:-$(rm victim)}",
    "$((1 + $(rm victim)))",
    "{D} ",
    " {D}",
    "\t{D}",
    "{D}\r",
    "{D}x",
    "{D})",
    "{D};",
    "'{D}'",
    "\"{D}\"",
    "\\{D}",
    "{D}\\",
    "$(",
    "`",
    ")",
    "'",
    "\"",
    "# {D}",
    "",
    "hello world",
];

fn heredoc() -> impl Strategy<Value = Frag> {
    (
        prop_oneof![Just("cat"), Just("wc -l"), Just("grep x"), Just("sort")],
        prop_oneof![3 => Just("<<"), 1 => Just("<<-")],
        0..DELIMITERS.len(),
        prop::collection::vec((0..BODY.len(), prop::bool::ANY), 0..4),
    )
        .prop_map(|(cmd, op, d, body)| {
            let (written, close) = DELIMITERS[d];
            let mut docs = String::new();
            for (b, tab) in body {
                // Under `<<-` a leading tab is stripped, so tab-indented lines are worth trying.
                if tab && op == "<<-" {
                    docs.push('\t');
                }
                docs.push_str(&BODY[b].replace("{D}", close));
                docs.push('\n');
            }
            docs.push_str(close);
            docs.push('\n');
            Frag::with(format!("{cmd} {op}{written}"), docs)
        })
}

fn leaf() -> impl Strategy<Value = Frag> {
    prop_oneof![
        4 => simple(),
        3 => heredoc(),
        1 => prop_oneof![
            Just("cat <<< \"$(rm victim)\""),
            Just("cat <<< '$(rm victim)'"),
            Just("cat <(rm victim)"),
            Just("cat <(ls)"),
            Just("[[ a < b ]]"),
            Just("[[ x =~ ^(a|b)$ ]]"),
            Just("(( 1 < 2 ))"),
            Just("echo $((1 + 2))"),
            Just("{rm,victim}"),
            Just("echo {} }"),
        ]
        .prop_map(Frag::new),
    ]
}

fn line() -> impl Strategy<Value = String> {
    let frag = leaf().prop_recursive(3, 24, 2, |inner| {
        let two = (inner.clone(), inner.clone());
        prop_oneof![
            // Lists and pipelines; a newline lets bash read the pending here-documents.
            (
                two.clone(),
                prop_oneof![
                    Just("; "),
                    Just(" && "),
                    Just(" || "),
                    Just(" | "),
                    Just(" & "),
                    Just("\n")
                ]
            )
                .prop_map(|((a, b), sep)| if sep == "\n" {
                    Frag::with(format!("{}\n{}{}", a.text, a.docs, b.text), b.docs)
                } else {
                    Frag::with(format!("{}{sep}{}", a.text, b.text), a.docs + &b.docs)
                }),
            // A comment that hides quotes and brackets, ended by the newline.
            two.clone().prop_map(|(a, b)| Frag::with(
                format!("{} # ) ' \" ` $(\n{}{}", a.text, a.docs, b.text),
                b.docs
            )),
            inner
                .clone()
                .prop_map(|a| Frag::new(format!("({})", a.closed()))),
            inner
                .clone()
                .prop_map(|a| Frag::with(format!("( {} )", a.text), a.docs)),
            inner
                .clone()
                .prop_map(|a| Frag::with(format!("{{ {}; }}", a.text), a.docs)),
            inner
                .clone()
                .prop_map(|a| Frag::new(format!("echo $({})", a.closed()))),
            inner
                .clone()
                .prop_map(|a| Frag::new(format!("echo \"$({})\"", a.closed()))),
            inner
                .clone()
                .prop_map(|a| Frag::new(format!("echo `{}`", a.closed()))),
            inner
                .clone()
                .prop_map(|a| Frag::new(format!("[[ $({}) =~ ^x ]]", a.closed()))),
            inner
                .clone()
                .prop_map(|a| Frag::new(format!("(( $({}) + 1 ))", a.closed()))),
            inner
                .clone()
                .prop_map(|a| Frag::with(format!("! {}", a.text), a.docs)),
            two.clone().prop_map(|(a, b)| Frag::with(
                format!("if {}; then {}; fi", a.text, b.text),
                a.docs + &b.docs
            )),
            two.clone().prop_map(|(a, b)| Frag::with(
                format!("if false; then {}; else {}; fi", a.text, b.text),
                a.docs + &b.docs
            )),
            inner
                .clone()
                .prop_map(|a| Frag::with(format!("for i in 1 2; do {}; done", a.text), a.docs)),
            (
                two.clone(),
                prop_oneof![Just("x"), Just("y")],
                prop_oneof![Just(";;"), Just(";&"), Just(";;&")]
            )
                .prop_map(|((a, b), word, end)| Frag::with(
                    format!("case {word} in (x) {} {end} *) {} ;; esac", a.text, b.text),
                    a.docs + &b.docs
                )),
            (
                inner.clone(),
                prop_oneof![Just("f"), Just("g")],
                prop::bool::ANY
            )
                .prop_map(|(a, name, call)| Frag::with(
                    format!(
                        "{name}() {{ {}; }}{}",
                        a.text,
                        if call {
                            format!("; {name}")
                        } else {
                            String::new()
                        }
                    ),
                    a.docs
                )),
        ]
    });
    frag.prop_map(|f| f.closed())
}

fn fuzz_cases() -> u32 {
    std::env::var("TACKLE_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64)
}

#[test]
fn a_line_the_analyser_allows_never_makes_bash_run_a_denied_or_unlisted_program() {
    if !bash_available() {
        return;
    }
    let allow: Vec<&str> = STUBS
        .iter()
        .copied()
        .filter(|s| *s != "rm")
        .chain(BUILTINS.iter().copied())
        .collect();
    let shell_grant = grant(&allow, &["rm"]);
    let mut runner = TestRunner::new(Config {
        cases: fuzz_cases(),
        failure_persistence: None,
        // Each case runs bash; keep shrinking a failure from taking minutes.
        max_shrink_iters: 200,
        ..Config::default()
    });
    // Counts over every case run, shrinking included: (runs, allowed, refused, bash ran `rm`).
    let stats = std::cell::Cell::new((0u32, 0u32, 0u32, 0u32));
    let result = runner.run(&line(), |line| {
        let trace = run_bash(&line, TIMEOUT);
        let decision = check_shell(&line, &shell_grant);
        let verdict = compare(&line, &trace);
        let (runs, allowed, refused, ran_rm) = stats.get();
        stats.set((
            runs + 1,
            allowed + u32::from(decision.is_allowed()),
            refused + u32::from(matches!(verdict, Verdict::Refused)),
            ran_rm + u32::from(trace.ran.contains("rm")),
        ));
        prop_assert!(
            !trace.timed_out,
            "bash did not finish within {TIMEOUT:?}; stderr: {:?}",
            trace.stderr
        );
        if decision.is_allowed() {
            prop_assert!(
                !trace.ran.contains("rm") && trace.victim_exists,
                "the line is allowed under deny=[rm] but bash ran `rm`\n  bash ran: {:?}\n  analyser: {:?}",
                trace.ran,
                commands(&line)
            );
            let unlisted: Vec<&String> = trace
                .ran
                .iter()
                .filter(|n| !allow.contains(&n.as_str()))
                .collect();
            prop_assert!(
                unlisted.is_empty(),
                "the line is allowed but bash ran {unlisted:?}, which the allow list lacks\n  analyser: {:?}\n  stderr: {:?}",
                commands(&line),
                trace.stderr
            );
        }
        if let Verdict::Missed { missing, saw } = verdict {
            return Err(TestCaseError::fail(format!(
                "bash ran {:?} (missed: {missing:?}) but the analyser reported {saw:?}; stderr: {:?}",
                trace.ran, trace.stderr
            )));
        }
        Ok(())
    });
    let (runs, allowed, refused, ran_rm) = stats.get();
    eprintln!(
        "{runs} generated lines run (shrinking included): {allowed} allowed under deny=[rm], \
         {refused} refused by `commands`, bash ran `rm` for {ran_rm}"
    );
    if let Err(e) = result {
        panic!("{e}");
    }
}
