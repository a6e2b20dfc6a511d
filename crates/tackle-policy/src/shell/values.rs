//! Values that must stay data: text a model supplied (a plugin tool's argument values) placed
//! into an argv by a template. Run directly, an argv element is data whatever it holds; but a
//! template can hand it to a program that reads it as a command line or code (`sh -c "echo
//! {{x}}"`, `find -exec {{x}}`, `env {{x}}`), and then the value could run anything.
//!
//! The check looks at what the argv runs, through every wrapper the analyser knows, twice: as
//! filled, and with each value replaced by an inert word. The value passes only if both run the
//! same programs with the same number of words each, and each value appears whole inside one
//! word of what runs (a value a shell would split, quote-break or redirect does not).
//!
//! Then a third walk asks the analyser whether a program reads the value as code (issue #38):
//! each argv element holding a value that could be syntax in some language (anything but
//! letters, digits and `_./:@%+=,-`) is walked as computed at run time. Every code screen the
//! analyser has (`python -c`, `perl -e`, `awk` programs, `sed` scripts, `pwsh -Command`,
//! `sh -c` lines, option values that are commands, through every wrapper) finds such an
//! element opaque; if the walk finds more it cannot see through than the literal one, the
//! value would land in code and is refused. The plugin's manifest is checked for the same when
//! it loads; this check holds whatever that check missed.

use super::walk::{Cmd, Walker};
use super::words::Word;
use super::ShellError;

/// The word that stands for value number N in the second walk (`tackle0value0`, …).
fn inert(n: usize) -> String {
    format!("tackle0value{n}")
}

/// Characters a shell expands in a word: a value holding one is not passed into a command line.
const EXPANDS: &[char] = &['$', '`', '\\', '*', '?', '[', '~'];

/// The commands `argv` runs (each as its words) and how many parts the analyser could not
/// see through.
fn walk(argv: &[String]) -> Result<(Vec<Vec<String>>, usize), ShellError> {
    walk_marked(argv, |_| false).map(|(cmds, opaque)| (cmds, opaque.len()))
}

/// [`walk`], with the elements `computed` picks walked as computed at run time.
/// Returns what each part the analyser could not see through is.
fn walk_marked(
    argv: &[String],
    computed: impl Fn(&str) -> bool,
) -> Result<(Vec<Vec<String>>, Vec<String>), ShellError> {
    let mut walker = Walker::new();
    walker.fed = true;
    if !argv.is_empty() {
        walker.command(Cmd {
            words: argv
                .iter()
                .map(|a| {
                    if computed(a) {
                        Word::unknown(a.clone())
                    } else {
                        Word::literal(a.clone())
                    }
                })
                .collect(),
            open_tail: false,
            maybe: false,
        });
    }
    if let Some(e) = walker.out.error {
        return Err(e);
    }
    let opaque = walker.out.opaque.clone();
    let cmds = walker
        .out
        .cmds
        .into_iter()
        .map(|c| c.words.into_iter().map(|w| w.text).collect())
        .collect();
    Ok((cmds, opaque))
}

/// A value that would not reach the program as data: the program, and why not.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("an argument value would not reach `{program}` as plain data: {why}")]
pub struct ValueNotData {
    /// The program the value was meant for (`argv[0]`).
    pub program: String,
    /// Why the value would not stay data; a clause that ends the error message.
    pub why: String,
}

/// `Ok` when every one of `values` reaches what `argv` runs as data; otherwise why not.
pub fn values_stay_data(argv: &[String], values: &[String]) -> Result<(), ValueNotData> {
    let mut values: Vec<&str> = values
        .iter()
        .map(String::as_str)
        .filter(|v| !v.is_empty())
        .collect();
    if values.is_empty() {
        return Ok(());
    }
    // Longer values first, so a value inside another is not replaced within it.
    values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    values.dedup();
    let program = argv.first().map(String::as_str).unwrap_or("");
    let refuse = |why: &str| {
        Err(ValueNotData {
            program: program.to_string(),
            why: why.to_string(),
        })
    };
    let (filled, filled_opaque) = match walk(argv) {
        Ok(found) => found,
        Err(e) => return refuse(&format!("what it runs cannot be read ({e})")),
    };
    let inert_argv: Vec<String> = argv
        .iter()
        .map(|element| {
            values
                .iter()
                .enumerate()
                .fold(element.clone(), |text, (n, v)| text.replace(v, &inert(n)))
        })
        .collect();
    let (expected, expected_opaque) = match walk(&inert_argv) {
        Ok(found) => found,
        Err(e) => return refuse(&format!("what it runs cannot be read ({e})")),
    };
    if filled_opaque > expected_opaque {
        return refuse("it makes the command run something that cannot be checked");
    }
    let shape = |cmds: &[Vec<String>]| -> Vec<usize> { cmds.iter().map(Vec::len).collect() };
    if shape(&filled) != shape(&expected) {
        return refuse("it changes the commands that run or how their words split");
    }
    let restore = |word: &str| {
        values
            .iter()
            .enumerate()
            .fold(word.to_string(), |text, (n, v)| text.replace(&inert(n), v))
    };
    for (i, (f, e)) in filled.iter().zip(&expected).enumerate() {
        // The argv itself (command 0) is data whatever it holds; a command inside it (a
        // wrapper's, a shell line's) may expand what it is given, which is not judged.
        if i > 0
            && e.iter().any(|w| w.contains("tackle0value"))
            && values.iter().any(|v| v.contains(EXPANDS))
        {
            return refuse("a command it wraps would expand it (`$`, `` ` ``, `\\`, globs, `~`)");
        }
        if e.first().is_some_and(|p| p.contains("tackle0value")) {
            return refuse("it would name the program to run");
        }
        // Word by word, what runs must be the inert reading with each value put back whole.
        if f.iter().zip(e).any(|(fw, ew)| *fw != restore(ew)) {
            return refuse("a shell or interpreter the template hands it to would read it as code");
        }
    }
    // Values that could be syntax somewhere: does a program read the element holding one as
    // code (or as a command, a program, an option that runs one)?
    let syntax: Vec<usize> = values
        .iter()
        .enumerate()
        .filter(|(_, v)| {
            v.chars()
                .any(|c| !(c.is_alphanumeric() || "_./:@%+=,-".contains(c)))
        })
        .map(|(n, _)| n)
        .collect();
    if !syntax.is_empty() {
        let markers: Vec<String> = syntax.iter().map(|n| inert(*n)).collect();
        let holds = |element: &str| markers.iter().any(|m| element.contains(m.as_str()));
        match walk_marked(&inert_argv, holds) {
            // More that cannot be seen through, or a part that cannot be seen through (code
            // the analyser never screens, such as `pwsh -Command`) holding the value.
            Ok((_, computed_opaque))
                if computed_opaque.len() > expected_opaque
                    || computed_opaque
                        .iter()
                        .any(|o| markers.iter().any(|m| o.contains(m.as_str()))) =>
            {
                return refuse("a program the template hands it to would read it as code, a command or the program to run");
            }
            Ok(_) => {}
            Err(e) => return refuse(&format!("what it runs cannot be read ({e})")),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    fn ok(template: &[&str], value: &str) -> bool {
        let filled: Vec<String> = template.iter().map(|w| w.replace("{}", value)).collect();
        values_stay_data(&filled, &[value.to_string()]).is_ok()
    }

    #[test]
    fn a_value_passed_straight_to_a_program_is_data_whatever_it_holds() {
        for v in [
            "; rm -rf ~",
            "$(id)",
            "`id`",
            "a > f",
            "-rf",
            "hello world",
            "*",
            "'\"",
        ] {
            assert!(ok(&["git", "log", "-n", "{}"], v), "{v}");
            assert!(ok(&["grep", "-rn", "--", "{}", "notes/"], v), "{v}");
            assert!(ok(&["tool", "--format={}"], v), "{v}");
            // A shell that gets the value as a positional parameter keeps it data.
            assert!(ok(&["sh", "-c", "printf %s \"$1\"", "sh", "{}"], v), "{v}");
        }
    }

    #[test]
    fn a_value_a_shell_would_read_as_code_is_refused() {
        for v in [
            "; rm -rf ~",
            "$(touch x)",
            "`touch x`",
            "a > victim",
            "a && touch x",
            "a | sh",
            "x' ; touch y ; '",
            "hello world",
            "a\ntouch x",
            "${IFS}touch${IFS}x",
        ] {
            assert!(!ok(&["sh", "-c", "echo {}"], v), "{v}");
            assert!(!ok(&["env", "sh", "-c", "ls {}"], v), "{v}");
            assert!(
                !ok(&["find", ".", "-exec", "sh", "-c", "echo {}", ";"], v),
                "{v}"
            );
        }
        assert!(
            ok(&["sh", "-c", "echo {}"], "hello"),
            "a plain word stays a word"
        );
    }

    #[test]
    fn inside_single_quotes_a_value_that_ends_the_quotes_or_expands_is_refused() {
        let quoted = ["bash", "-c", "echo '{}'"];
        assert!(ok(&quoted, "hello"), "a plain word");
        // A value is not spliced into a shell line even where quotes the template wrote
        // would hold it (issue #38): only quoting Tackle applies (a declared `sh` string) is
        // trusted, and that happens before this check.
        for v in [
            "x' ; touch y ; '",
            "'$(touch x)'",
            "a'b",
            "$(touch x)",
            "$HOME",
            "~",
            "; rm -rf /tmp/x",
            "a > victim",
            "hello world",
        ] {
            assert!(!ok(&quoted, v), "{v}");
        }
    }

    #[test]
    fn a_value_in_any_interpreters_code_is_refused() {
        for v in [
            "'); open('pwned', 'w'); print('",
            "\"); require('fs').writeFileSync('pwned', ''); (\"",
            "'; open(F, '>pwned'); '",
            "x\nopen('pwned','w')",
            "a b",
        ] {
            for template in [
                &["python3", "-c", "print('{}')"][..],
                &["/usr/bin/python3.12", "-c", "x = '{}'"],
                &["perl", "-e", "print '{}'"],
                &["node", "-e", "console.log('{}')"],
                &["ruby", "-e", "puts '{}'"],
                &["awk", "BEGIN { print \"{}\" }"],
                &["sed", "s/a/{}/", "f"],
                &["sed", "-e", "s/a/{}/", "f"],
                &["pwsh", "-Command", "Write-Host '{}'"],
                &["bash", "-c", "echo '{}'"],
                &["env", "sh", "-c", "ls '{}'"],
                &["env", "FOO=1", "python3", "-c", "print('{}')"],
                &["xargs", "sh", "-c", "echo '{}'"],
                &["find", ".", "-exec", "sh", "-c", "echo '{}'", ";"],
                &["timeout", "5", "perl", "-e", "print '{}'"],
                &["git", "-c", "core.pager={}", "log"],
                &["tar", "--to-command={}", "-xf", "a.tar"],
            ] {
                assert!(!ok(template, v), "{template:?} {v:?}");
            }
        }
    }

    #[test]
    fn a_value_given_to_code_as_its_argument_stays_data() {
        for v in ["'); open('pwned', 'w'); print('", "a b", "$(id)", "-rf"] {
            for template in [
                &["python3", "-c", "import sys; print(sys.argv[1])", "{}"][..],
                &["perl", "-le", "print shift", "{}"],
                &["awk", "-v", "x={}", "BEGIN { print x }"],
                &["git", "log", "--format=%h", "--grep={}"],
                &["./record.sh", "--", "{}"],
                &["grep", "-rn", "--", "{}", "notes/"],
            ] {
                assert!(ok(template, v), "{template:?} {v:?}");
            }
        }
    }

    #[test]
    fn a_value_that_names_the_program_is_refused() {
        assert!(!ok(&["find", ".", "-exec", "{}", ";"], "rm"));
        assert!(!ok(&["env", "{}"], "rm"));
        assert!(!ok(&["xargs", "{}"], "touch"));
        assert!(values_stay_data(&argv(&["x"]), &[]).is_ok());
    }
}
