//! The shell analyser: which commands would a line run, and does the grant allow each one?
//!
//! Lines are parsed with a real shell parser (`brush-parser`) and every command is found:
//! pipelines and lists, subshells and groups, `if`/`for`/`while`/`case`, function bodies,
//! `$(…)` and backticks (also inside double quotes, here-documents, assignments and redirect
//! targets), process substitution, and what wrappers run (`env`, `sudo`, `xargs`,
//! `find -exec`, `sh -c`, `eval`, …). Code that cannot be seen (a command name computed at run
//! time, `sh` reading its input, arithmetic on variables) is denied whenever any rule exists.
//!
//! Matching, on words after quote removal (`\rm`, `"rm"`, `$'\x72m'` and `/bin/rm` are all
//! `rm`; `.` is `source`):
//! - `deny` wins and errs wide: `git push` also matches `git -C . push`, `rm -rf` matches
//!   `rm -r -f`, `rm -R --force` and `rm --rec --for`, a word computed at run time may be
//!   anything, and the program name (and a wrapper's) compares without case.
//! - `allow` errs narrow: every rule word must literally be there (`git status` covers
//!   `git status -s`), and a path-qualified program only counts from a system directory
//!   (`/usr/bin/git` is `git`, `./git` is not). Empty `allow` allows every command.
//! - A wrapper is a command too: `sudo rm` needs both `sudo` and `rm` allowed.
//! - A line that cannot be parsed, or that holds a NUL byte, is denied even without rules. A
//!   script run by path (`bash build.sh`, `source env.sh`, `python3 x.py`, `awk -f x.awk`) is
//!   checked as that command only; one produced on the fly (`/dev/stdin`, `<(…)`) or written
//!   by the same line (`echo … > s.sh; bash s.sh`) is opaque.
//! - Text that a program *may* run as a command is a candidate: checked against `deny` rules
//!   but not required by `allow` rules. Candidates are assignment values (`PAGER=…`,
//!   `RUSTC_WRAPPER=…`, `make CC=…`), values of command-like `git -c` keys, and later words
//!   of launchers whose options are not modelled (`numactl -N 0 rm` checks `0 rm` and `rm`).
//! - Some programs delete or change files themselves: `find -delete` is `find`, not `rm`
//!   (write `deny=find -delete` to forbid it). `ssh HOST CMD` checks CMD as a shell line.
//! - With rules, a command name holding control or invisible characters (zero-width,
//!   bidirectional overrides) is denied; lookalike letters (`ｒｍ`) name a different program.
//!
//! - Arithmetic evaluates text as an expression, whose subscripts run commands: it may read
//!   variables the line sets to integers (`i=0`, `i=$((i + 1))`) and the output of a command
//!   that only prints a count (`$(wc -l < f)`, `$(grep -c x f)`), nothing else.
//! - Single-quoted text, `$'…'` and the body of a here-document with a quoted delimiter are
//!   literal: `${ …; }` or backquotes in them run nothing.
//! - A rule with arguments (`git push`, `cargo publish`) is the analyser's alone (the sandbox
//!   enforces program names at exec). While one names a program, an invocation of it whose
//!   subcommand configuration the analyser cannot see may rename or re-route is opaque: a
//!   subcommand that is not built in (an alias), `--git-dir`/`--work-tree`/`--attr-source`/
//!   `--template`, `git config --file`/`--rename-section`, a write into `.git/` or
//!   `.cargo/`. Subcommands that push under another name (`git send-pack`, git's exec-path
//!   programs such as `/usr/lib/git-core/git-push`) are checked as `git push`.
//!
//! With any rule in force the analyser fails closed: a line is allowed only if it can name
//! every program the line runs. What it cannot see through (an alias defined in the line,
//! `eval` of an expansion, `source`, a computed command name or glob, a command-option whose
//! value is computed, code it does not screen, commands read from input the line feeds, a
//! script or configuration the line writes and then runs) is *opaque*: denied with "cannot
//! tell what this runs: …", or sent to approval under `opaque: ask`. Programs that run other
//! programs through their options, operands, configuration or input are rows of a table
//! (`runners.rs`), with cases in `tests/corpus/runners.txt`. The line is assumed to get no
//! input of its own (the host runs shell lines with an empty standard input) and to run in
//! bash, which the host also asks how it reads the line.

mod git;
mod launchers;
mod nesting;
mod options;
mod program_rules;
mod programs;
mod rules;
mod runners;
mod tools;
mod values;
mod walk;
mod words;
mod wrappers;

pub(crate) use rules::rule_words;
use rules::{allow_matches, deny_matches, Rule};
use tackle_protocol::{Decision, OpaqueMode, ShellGrant, Verdict};
use walk::{Analysis, Cmd, Walker};
use words::Word;

pub use program_rules::{program_rules, rule_layers, ProgramRules, RuleEnforcement, RuleLayer};
pub use values::{values_stay_data, ValueNotData};

/// Why a shell line could not be analysed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShellError {
    /// The parser rejected the line (or it holds a NUL byte); the text says where.
    #[error("the line cannot be parsed: {0}")]
    Parse(String),
    /// Brackets or command substitutions nest deeper than the limit given.
    #[error("the line nests commands more than {0} deep")]
    TooDeep(usize),
    /// The line is longer than the limit given, in bytes (256 KiB).
    #[error("the line is longer than {0} bytes")]
    TooLong(usize),
}

/// Decides whether every command `line` would run is allowed by `grant`.
pub fn check_shell(line: &str, grant: &ShellGrant) -> Decision {
    let mut walker = Walker::new();
    // `exec <file` makes the rest of the line read from the file.
    walker.fed = redirects_shell_input(line);
    walker.walk_line(line);
    walker.out.settle_arithmetic();
    decide(&shown(line), walker.out, grant)
}

/// Decides whether running `argv` directly (no shell) is allowed, looking through wrappers.
pub fn check_argv(argv: &[String], grant: &ShellGrant) -> Decision {
    let mut walker = Walker::new();
    // A tool that runs a program directly may give it input.
    walker.fed = true;
    if !argv.is_empty() {
        walker.command(Cmd {
            words: argv.iter().map(|a| Word::literal(a.clone())).collect(),
            open_tail: false,
            maybe: false,
        });
    }
    walker.out.settle_arithmetic();
    decide(&shown(&argv.join(" ")), walker.out, grant)
}

/// The words of every command `line` would run, wrappers' inner commands included.
/// Words computed at run time appear as written (e.g. `$X`).
pub fn commands(line: &str) -> Result<Vec<Vec<String>>, ShellError> {
    let mut walker = Walker::new();
    walker.walk_line(line);
    if let Some(e) = walker.out.error {
        return Err(e);
    }
    Ok(walker
        .out
        .cmds
        .into_iter()
        .filter(|c| !c.maybe)
        .map(|c| c.words.into_iter().map(|w| w.text).collect())
        .collect())
}

/// Whether the line may redirect the shell's own input (`exec <file`, `exec 0<&3`).
fn redirects_shell_input(line: &str) -> bool {
    line.match_indices("exec").any(|(at, _)| {
        line.get(at..)
            .unwrap_or("")
            .split(['\n', ';', '&', '|'])
            .next()
            .is_some_and(|stmt| stmt.contains('<'))
    })
}

fn shown(line: &str) -> String {
    tackle_protocol::text::preview(line, 120)
}

fn decide(line: &str, found: Analysis, grant: &ShellGrant) -> Decision {
    if let Some(e) = found.error {
        return Decision::deny("grants.shell", format!("`{line}` is denied: {e}"));
    }
    let deny: Vec<Rule> = grant.deny.iter().filter_map(|r| Rule::parse(r)).collect();
    let allow: Vec<Rule> = grant.allow.iter().filter_map(|r| Rule::parse(r)).collect();
    for cmd in &found.cmds {
        if let Some(rule) = deny.iter().find(|r| deny_matches(r, cmd)) {
            return Decision::deny(
                format!("grants.shell.deny {:?}", rule.raw),
                format!(
                    "`{}` is denied: `{}` matches shell deny rule {:?}",
                    line,
                    cmd_text(cmd),
                    rule.raw
                ),
            );
        }
    }
    let restricted = !grant.allow.is_empty() || !grant.deny.is_empty();
    if restricted {
        let routed = config_routed(&found, &allow, &deny);
        if let Some(d) = unknowable(line, &found, grant.opaque, routed) {
            // An allow list still has the last word: approval cannot admit a program the
            // operator did not allow.
            if d.verdict == Verdict::Ask {
                if let Some(refused) = outside_allow_list(line, &found, grant, &allow) {
                    return refused;
                }
            }
            return d;
        }
    }
    if let Some(refused) = outside_allow_list(line, &found, grant, &allow) {
        return refused;
    }
    let why = if restricted {
        format!("`{line}` is allowed: no command it runs matches a deny rule, and each is allowed")
    } else {
        format!("`{line}` is allowed: the shell grant sets no rules")
    };
    Decision::allow("grants.shell", why)
}

/// Code that runs but cannot be checked, including command names computed at run time.
fn unknowable(
    line: &str,
    found: &Analysis,
    opaque: OpaqueMode,
    routed: Option<String>,
) -> Option<Decision> {
    let names = found
        .cmds
        .iter()
        .filter(|c| !c.maybe)
        .filter_map(|c| c.words.first());
    let mut what = None;
    for w in names {
        if w.dynamic {
            what = Some(format!(
                "the command name `{}` is computed at run time",
                w.text
            ));
            break;
        }
        if w.text.chars().any(invisible) {
            what = Some(format!(
                "the command name {:?} holds invisible or control characters",
                w.text
            ));
            break;
        }
    }
    // A script or configuration written and then run or read by the same line hides its
    // commands from the rules.
    let written_then_run = found
        .run_files
        .iter()
        .find(|f| found.written.iter().any(|w| same_file(w, f)))
        .map(|f| format!("it writes `{f}` and runs it"))
        .or_else(|| written_then_read(found));
    let what = what
        .or(written_then_run)
        .or_else(|| found.opaque.first().map(|o| format!("it contains {o}")))
        .or(routed)?;
    Some(match opaque {
        OpaqueMode::Deny => Decision::deny(
            "grants.shell.opaque",
            format!(
                "`{line}` is denied: cannot tell what this runs: {what}, so it cannot be checked against the shell rules; rewrite it so that every program it runs is named plainly"
            ),
        ),
        OpaqueMode::Ask => Decision::ask(
            "grants.shell.opaque",
            format!(
                "`{line}` needs approval: cannot tell what this runs: {what}, so it cannot be checked against the shell rules (shell grant `opaque: ask`)"
            ),
        ),
    })
}

/// A rule with arguments (`git push`, `cargo publish`) is the analyser's alone: the sandbox
/// enforces only program names at exec. While one names a program, an invocation of it whose
/// subcommand configuration the analyser cannot see may rename or re-route (a `git` alias,
/// `--git-dir`, a hook or config file the line writes) fails closed.
fn config_routed(found: &Analysis, allow: &[Rule], deny: &[Rule]) -> Option<String> {
    let named: Vec<String> = allow
        .iter()
        .chain(deny)
        .filter(|r| r.words.len() > 1)
        .filter_map(|r| r.words.first())
        .map(|p| p.to_ascii_lowercase())
        .collect();
    if named.is_empty() {
        return None;
    }
    let because = |program: &str| {
        format!(
            " (a shell rule names `{program}` with arguments, which only the analyser can enforce)"
        )
    };
    if let Some((program, what)) = found.config_routed.iter().find(|(p, _)| named.contains(p)) {
        return Some(format!("{what}{}", because(program)));
    }
    // A write to a name computed at run time may land in `.git/` before git runs.
    let runs_git = found.cmds.iter().any(|c| {
        c.words
            .first()
            .and_then(wrappers::program_name)
            .is_some_and(|n| n.eq_ignore_ascii_case("git") || n.starts_with("git-"))
    });
    match &found.written_dynamic {
        Some(w) if runs_git && named.iter().any(|p| p == "git") => Some(format!(
            "it writes `{w}`, a name computed at run time that may be git configuration or a hook, and runs git{}",
            because("git")
        )),
        _ => None,
    }
}

/// A file the line writes that a program it runs reads by itself and that can name programs
/// (`echo … > Makefile; make`); a write to a name computed at run time may be any of them.
fn written_then_read(found: &Analysis) -> Option<String> {
    for (program, patterns) in &found.reads {
        if let Some(w) = found
            .written
            .iter()
            .find(|w| patterns.iter().any(|p| path_matches(p, w)))
        {
            return Some(format!(
                "it writes `{w}`, which `{program}` reads and which can name programs"
            ));
        }
        if let Some(w) = &found.written_dynamic {
            return Some(format!(
                "it writes `{w}`, a name computed at run time, and runs `{program}`, which reads files that can name programs"
            ));
        }
    }
    None
}

/// Two spellings of one file, or two files with one name (erring wide: `lib/x.pm` may be the
/// module `x.pm` that `perl -I lib -Mx` loads).
fn same_file(written: &str, run: &str) -> bool {
    let base = |p: &str| p.rsplit('/').next().unwrap_or(p).to_string();
    written == run || base(written) == base(run)
}

/// `*.rs` matches by extension, `.git/` anywhere in the path, a plain name by the last
/// component.
fn path_matches(pattern: &str, path: &str) -> bool {
    let base = path.rsplit('/').next().unwrap_or(path);
    if let Some(ext) = pattern.strip_prefix('*') {
        return base.ends_with(ext);
    }
    if pattern.ends_with('/') {
        let dir = pattern.trim_end_matches('/');
        return path.split('/').any(|c| c == dir);
    }
    base == pattern
}

/// Characters that make a name look like another one to a reader: controls, format characters
/// (zero-width, bidirectional overrides), and spaces other than the plain one.
fn invisible(c: char) -> bool {
    c.is_control()
        || (c.is_whitespace() && c != ' ')
        || matches!(
            c,
            '\u{00ad}' | '\u{180e}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}'
                | '\u{2060}'..='\u{206f}' | '\u{feff}'
        )
}

/// The first command the allow list does not cover, if there is an allow list.
fn outside_allow_list(
    line: &str,
    found: &Analysis,
    grant: &ShellGrant,
    allow: &[Rule],
) -> Option<Decision> {
    // Decided on the configured list, not the parsed one: an allow list whose entries are all
    // blank still restricts (to nothing) rather than allowing everything.
    if grant.allow.is_empty() {
        return None;
    }
    found
        .cmds
        .iter()
        .enumerate()
        .filter(|(_, c)| !c.maybe)
        .find(|(i, cmd)| {
            !calls_line_function(found, *i, cmd) && !allow.iter().any(|r| allow_matches(r, cmd))
        })
        .map(|(_, cmd)| not_allowed(line, cmd, grant))
}

/// A call of a function the line defined earlier: its body's commands are checked instead.
fn calls_line_function(found: &Analysis, index: usize, cmd: &Cmd) -> bool {
    let Some(first) = cmd.words.first().filter(|w| !w.dynamic) else {
        return false;
    };
    found
        .functions
        .iter()
        .any(|(name, defined_at)| *name == first.text && *defined_at < index)
}

fn not_allowed(line: &str, cmd: &Cmd, grant: &ShellGrant) -> Decision {
    let name = cmd.words.first().map(|w| w.text.as_str()).unwrap_or("");
    let why = if name.contains('/') && !name.starts_with('/') {
        format!(
            "`{line}` is denied: `{name}` is a program outside the system directories, and allow rules name system programs"
        )
    } else {
        format!(
            "`{line}` is denied: `{}` does not match the shell allow list ({})",
            cmd_text(cmd),
            grant.allow.join(", ")
        )
    };
    Decision::deny("grants.shell.allow", why)
}

fn cmd_text(cmd: &Cmd) -> String {
    let words: Vec<&str> = cmd.words.iter().map(|w| w.text.as_str()).collect();
    tackle_protocol::text::preview(&words.join(" "), 80)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(allow: &[&str], deny: &[&str]) -> ShellGrant {
        ShellGrant {
            allow: allow.iter().map(|s| s.to_string()).collect(),
            deny: deny.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    fn words(line: &str) -> Vec<Vec<String>> {
        commands(line).unwrap_or_else(|e| panic!("{line}: {e}"))
    }

    #[test]
    fn commands_lists_nested_and_wrapped_commands_in_order() {
        assert_eq!(
            words("sudo -u root bash -c 'ls; rm x' && echo $(date)"),
            vec![
                vec!["sudo", "-u", "root", "bash", "-c", "ls; rm x"],
                vec!["bash", "-c", "ls; rm x"],
                vec!["ls"],
                vec!["rm", "x"],
                vec!["date"],
                vec!["echo", "$(date)"],
            ]
        );
    }

    #[test]
    fn deny_wins_inside_command_substitution() {
        let d = check_shell("git log $(rm -rf x)", &grant(&["git", "rm"], &["rm"]));
        assert!(d.is_denied());
        assert_eq!(d.rule, "grants.shell.deny \"rm\"");
        assert!(
            d.why.contains("`rm -rf x` matches shell deny rule \"rm\""),
            "{}",
            d.why
        );
    }

    #[test]
    fn command_outside_the_allow_list_is_named() {
        let d = check_shell("ls && curl x", &grant(&["ls"], &[]));
        assert_eq!(d.rule, "grants.shell.allow");
        assert!(
            d.why
                .contains("`curl x` does not match the shell allow list (ls)"),
            "{}",
            d.why
        );
    }

    #[test]
    fn an_allow_list_of_blank_rules_allows_nothing() {
        assert!(check_shell("ls", &grant(&[" "], &[])).is_denied());
        assert!(check_shell("ls", &grant(&["\"\""], &[])).is_denied());
    }

    #[test]
    fn rule_words_do_not_match_longer_names() {
        assert!(check_shell("rmdir x", &grant(&[], &["rm"])).is_allowed());
        // `pushx` is not `push`; being no git builtin, it may be an alias from configuration,
        // which a rule with arguments refuses as opaque (not as a match of the rule).
        let d = check_shell("git pushx", &grant(&[], &["git push"]));
        assert_eq!(d.rule, "grants.shell.opaque", "{}", d.why);
        assert!(check_shell("git pushx", &grant(&[], &["git"])).is_denied());
        assert!(check_shell("git pushx", &grant(&["git"], &["rm"])).is_allowed());
        assert!(check_shell("git stash", &grant(&[], &["git st"])).is_allowed());
    }

    #[test]
    fn computed_names_are_allowed_only_when_no_rule_exists() {
        assert!(check_shell("$CMD x", &grant(&[], &[])).is_allowed());
        let d = check_shell("$CMD x", &grant(&[], &["rm"]));
        assert!(d.is_denied());
        assert!(d.why.contains("computed at run time"), "{}", d.why);
    }

    #[test]
    fn parse_errors_deny_with_the_reason() {
        let d = check_shell("echo 'open", &grant(&[], &[]));
        assert!(d.is_denied());
        assert!(d.why.contains("cannot be parsed"), "{}", d.why);
    }

    #[test]
    fn deep_nesting_is_denied_without_exhausting_a_small_stack() {
        let deep = [
            format!("{}ls{}", "if true; then ".repeat(5000), "; fi".repeat(5000)),
            format!(
                "{}ls{}",
                "if true; then case x in a) ;; b) ;; c) ".repeat(3000),
                ";; esac; fi".repeat(3000)
            ),
            format!("{}ls{}", "$(".repeat(5000), ")".repeat(5000)),
            format!("echo {}x{}", "${a:-".repeat(5000), "}".repeat(5000)),
            format!("{}rm x", "env ".repeat(5000)),
            format!("{}rm x", "eval ".repeat(200)),
        ];
        // Quotes that close and reopen at every level: it runs `sh` with no input, but
        // reading it must not exhaust the stack either.
        let flipping = format!("{}'rm x'{}", "sh -c \"".repeat(100), "\"".repeat(100));
        let python = "if x:\n    for y in z:\n        pass\n".repeat(300);
        let heredoc = format!("cat > a.py <<'EOF'\n{python}EOF");
        let run = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || {
                let g = grant(&[], &["rm"]);
                let denied = deep.iter().all(|l| check_shell(l, &g).is_denied());
                let _ = check_shell(&flipping, &g);
                (denied, check_shell(&heredoc, &g).is_allowed())
            });
        let joined = run.map(|h| h.join());
        assert!(matches!(joined, Ok(Ok((true, true)))), "{joined:?}");
    }

    #[test]
    fn hidden_closers_and_unclosed_expansions_neither_exhaust_the_stack_nor_take_long() {
        let lines = [
            // Closers the parsers do not see: quoted, after a `case` pattern.
            format!("echo {}", "$( ')' ".repeat(30000)),
            format!("echo {}", "\"$( ')' ".repeat(30000)),
            format!("echo {}", "$(case x in a) ".repeat(10000)),
            format!("cat <<EOF\n{}\nEOF", "$( ')' ".repeat(30000)),
            // Unclosed expansions: the word parser backtracked exponentially in their depth
            // (`(( $((…` twelve deep took minutes) and recursed once per bracket.
            format!("(( {}", "$((".repeat(12)),
            format!("(( {}", "$((".repeat(50000)),
            // Nested `((` was read once per bracket to the end of the line.
            format!("(( {}", "(".repeat(100000)),
        ];
        // Unclosed inside double quotes or a here-document body, `$(` is text to the word
        // parser (and an error to bash, which then runs nothing): these only have to end.
        let ending = [
            format!("echo \"${{x:-'{}'}}\"", "$(($(".repeat(8)),
            format!("cat <<EOF\n{}\nEOF", "$( ')' ".repeat(24)),
            format!("echo @({})", "$( ')' ".repeat(24)),
        ];
        let run = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || {
                let g = grant(&[], &["rm"]);
                let started = std::time::Instant::now();
                let refused: Vec<bool> = lines
                    .iter()
                    .map(|l| check_shell(l, &g).is_denied())
                    .collect();
                for l in &ending {
                    assert!(!check_shell(l, &g).why.is_empty());
                }
                (refused, started.elapsed())
            });
        let (refused, took) = run.expect("thread").join().expect("no stack overflow");
        assert!(refused.iter().all(|r| *r), "{refused:?}");
        // A bound for a hang, not a benchmark: all of it takes milliseconds.
        assert!(took < std::time::Duration::from_secs(10), "{took:?}");
    }

    #[test]
    fn argv_is_checked_through_wrappers_without_unquoting() {
        let g = grant(&[], &["rm"]);
        let argv = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(check_argv(&argv(&["timeout", "5", "rm", "x"]), &g).is_denied());
        assert!(check_argv(&argv(&["echo", "$(rm x)"]), &g).is_allowed());
        assert!(check_argv(&argv(&["bash", "-c", "rm x"]), &g).is_denied());
    }
}
