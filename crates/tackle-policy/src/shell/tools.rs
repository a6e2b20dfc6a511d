//! Tools with command languages of their own that can start programs: `sed`'s `e` command
//! and `s///e` flag, pipes in `awk`, database shells (`.shell`, `\!`), `gdb -ex shell`,
//! `make --eval`, and the remote command of `ssh`.

use super::walk::Walker;
use super::words::Word;

/// Database shells and the commands in their input that run programs or load code.
const DB_ESCAPES: &[&str] = &[
    ".shell",
    ".system",
    ".once",
    ".output",
    ".excel",
    ".load",
    ".read",
    ".import",
    "edit(",
    "load_extension",
    "\\!",
    "\\o",
    "\\g",
    "\\copy",
    "program",
    "system",
    "\\i",
    "source",
];

/// `gdb` commands that run programs or code.
const GDB_RUNS: &[&str] = &[
    "shell",
    "!",
    "pipe",
    "|",
    "python",
    "py",
    "python-interactive",
    "pi",
    "guile",
    "gu",
    "source",
    "run",
    "r",
    "start",
    "starti",
    "eval",
    "define",
    "compile",
    "call",
    "print",
    "p",
    "attach",
];

/// `ssh` options that take a value.
const SSH_VALUES: &str = "BbcDEeFIiJLlmOopQRSWw";

impl Walker {
    /// Handles tools with their own command language; returns whether `name` was one.
    pub(crate) fn data_program(&mut self, name: &str, args: &[Word]) -> bool {
        match name {
            "sed" | "gsed" => self.sed(args),
            "sqlite3" | "sqlite" | "duckdb" => self.db(name, args, &[]),
            "psql" => self.db(name, args, &["-c", "--command", "-f", "--file"]),
            "mysql" | "mariadb" => self.db(name, args, &["-e", "--execute"]),
            "gdb" => self.gdb(args),
            "lldb" => self.lldb(args),
            "make" | "gmake" => self.make(name, args),
            "less" | "more" | "most" => self.pager(name, args),
            "cargo" => self.cargo(args),
            "fc" => {
                if !args
                    .iter()
                    .any(|w| w.text.starts_with('-') && w.text.contains('l'))
                {
                    self.opaque("`fc`, which runs commands from the history");
                }
            }
            _ => return false,
        }
        true
    }

    fn sed(&mut self, args: &[Word]) {
        let (mut scripts, files, first_operand) = sed_args(args);
        for f in &files {
            self.script_file("sed", f);
        }
        if scripts.is_empty() && files.is_empty() {
            scripts.extend(first_operand);
        }
        for s in scripts {
            if s.dynamic || sed_runs_command(&s.text) {
                self.opaque(format!("the sed script `{}`, which runs a command", s.text));
            }
        }
    }

    fn db(&mut self, name: &str, args: &[Word], script_opts: &[&str]) {
        if let Some(w) = args.iter().find(|w| {
            let lower = w.text.to_ascii_lowercase();
            w.dynamic || DB_ESCAPES.iter().any(|e| lower.contains(e))
        }) {
            return self.opaque(format!(
                "`{name}` with `{}`, which can run programs",
                w.text
            ));
        }
        // Without a command on the line, commands come from the input (`.shell` included).
        let has_script = if script_opts.is_empty() {
            args.iter().filter(|w| !w.text.starts_with('-')).count() >= 2
        } else {
            args.iter().any(|w| {
                script_opts
                    .iter()
                    .any(|o| w.text == *o || w.text.starts_with(&format!("{o}=")))
            })
        };
        let info = args.iter().any(|w| {
            matches!(
                w.text.as_str(),
                "--version" | "-version" | "--help" | "-l" | "--list"
            )
        });
        if !has_script && !info && self.fed {
            self.opaque(format!("`{name}` reading commands from its input"));
        }
    }

    fn gdb(&mut self, args: &[Word]) {
        if let Some(at) = args.iter().position(|w| w.text == "--args") {
            self.inner_words(args.get(at + 1..).unwrap_or(&[]), false);
        }
        let opts = [
            "-ex",
            "-iex",
            "--eval-command",
            "-eval-command",
            "--init-eval-command",
        ];
        for v in super::git::option_values(args, &opts) {
            let first = v.text.split_whitespace().next().unwrap_or("");
            let first = first.trim_start_matches(['!', '|']);
            if v.dynamic
                || v.text.trim_start().starts_with(['!', '|'])
                || GDB_RUNS.contains(&first.to_ascii_lowercase().as_str())
            {
                self.opaque(format!("`gdb -ex {}`, which can run programs", v.text));
            }
        }
    }

    fn lldb(&mut self, args: &[Word]) {
        if let Some(at) = args.iter().position(|w| w.text == "--") {
            self.inner_words(args.get(at + 1..).unwrap_or(&[]), false);
        }
        let opts = ["-o", "-O", "--one-line", "--one-line-before-file", "-k"];
        for v in super::git::option_values(args, &opts) {
            let lower = v.text.to_ascii_lowercase();
            let first = lower.split_whitespace().next().unwrap_or("");
            let runs = [
                "shell", "script", "process", "run", "r", "command", "platform",
            ];
            if v.dynamic || runs.contains(&first) {
                self.opaque(format!("`lldb -o {}`, which can run programs", v.text));
            }
        }
    }

    fn make(&mut self, name: &str, args: &[Word]) {
        for (i, w) in args.iter().enumerate() {
            let t = w.text.as_str();
            let stdin_file = matches!(t, "-f" | "--file" | "--makefile")
                && args
                    .get(i + 1)
                    .is_some_and(|f| f.text == "-" || f.text.starts_with("/dev/"));
            if t == "-E" || t.starts_with("--eval") || stdin_file || t == "-f-" || t == "--file=-" {
                self.opaque(format!(
                    "`{name} {t}`, which runs recipes written on the line"
                ));
            } else if let Some((var, value)) = t.split_once('=').filter(|_| !t.starts_with('-')) {
                // `make CC='…'` overrides a variable that recipes run as a command, and make
                // expands `$(shell …)` in any variable it uses.
                let (var, value) = (var.to_string(), value.to_string());
                self.check_assignment_name(&var);
                if w.dynamic {
                    self.opaque(format!("`{name} {t}`, computed at run time"));
                } else if value.contains("$(") || value.contains("${") {
                    self.opaque(format!(
                        "`{name} {t}`, whose value make expands and may run"
                    ));
                } else {
                    self.assigned_value(&var, &value);
                }
            }
        }
    }

    /// `less +CMD` runs less commands first, and `!cmd` or `|` in them a shell command.
    fn pager(&mut self, name: &str, args: &[Word]) {
        if let Some(w) = args
            .iter()
            .find(|w| w.text.starts_with('+') && (w.dynamic || w.text.contains(['!', '|'])))
        {
            self.opaque(format!("`{name} {}`, which runs a shell command", w.text));
        }
    }

    /// `cargo --config KEY=VALUE` can name a runner, linker or wrapper program.
    fn cargo(&mut self, args: &[Word]) {
        self.cargo_subcommand(args);
        if args.iter().any(|w| w.text == "watch") {
            for line in super::git::option_values(args, &["-s", "--shell"]) {
                self.run_string("cargo watch", &line);
            }
        }
        for v in super::git::option_values(args, &["--config"]) {
            self.cargo_config(&v);
        }
    }

    /// Cargo runs an alias from its configuration (`[alias] p = "publish"` in a
    /// `.cargo/config.toml` of the directory or any parent) in place of any subcommand that
    /// is not built in, external ones (`clippy`, `fmt`) and the short forms (`b`, `t`)
    /// included: such a subcommand may be any other.
    fn cargo_subcommand(&mut self, args: &[Word]) {
        const BUILTINS: &[&str] = &[
            "add",
            "bench",
            "build",
            "check",
            "clean",
            "config",
            "doc",
            "fetch",
            "fix",
            "generate-lockfile",
            "help",
            "info",
            "init",
            "install",
            "locate-project",
            "login",
            "logout",
            "metadata",
            "new",
            "owner",
            "package",
            "pkgid",
            "publish",
            "read-manifest",
            "remove",
            "report",
            "run",
            "rustc",
            "rustdoc",
            "search",
            "test",
            "tree",
            "uninstall",
            "update",
            "vendor",
            "verify-project",
            "version",
            "yank",
        ];
        const VALUED: &[&str] = &["--color", "--config", "-C", "-Z", "--explain"];
        let mut i = 0;
        while let Some(w) = args.get(i) {
            if w.dynamic || !(w.text.starts_with('-') || w.text.starts_with('+')) {
                break;
            }
            i += if VALUED.contains(&w.text.as_str()) {
                2
            } else {
                1
            };
        }
        let Some(sub) = args.get(i) else { return };
        if sub.dynamic || !BUILTINS.contains(&sub.text.as_str()) {
            self.routed(
                "cargo",
                format!(
                    "`cargo {}`, which is no cargo builtin and may be an alias from configuration the analyser cannot see",
                    sub.text
                ),
            );
        }
    }

    /// `cargo --config KEY=VALUE` (TOML) or `--config FILE`.
    fn cargo_config(&mut self, v: &Word) {
        if v.dynamic {
            return self.opaque(format!("`cargo --config {}`, computed at run time", v.text));
        }
        let Some((key, value)) = v.text.split_once('=') else {
            return self.script_file("cargo --config", v);
        };
        let key = key.trim().trim_matches('"').to_ascii_lowercase();
        let names_program = [
            "runner", "wrapper", "linker", "rustc", "rustdoc", "provider",
        ]
        .iter()
        .any(|k| key.contains(k));
        let code = key.starts_with("alias")
            || key.starts_with("env")
            || key.starts_with('[')
            || key.contains("credential")
            || (key.contains("rustflags") && value.to_ascii_lowercase().contains("link"));
        if code {
            self.opaque(format!(
                "`cargo --config {key}=…`, which changes what cargo runs"
            ));
        } else if names_program {
            let line = value.replace(['[', ']', ',', '"', '\''], " ");
            if !line.trim().is_empty() {
                self.walk_line(&line);
            }
        }
    }

    /// `ssh [OPTIONS] HOST [OPTIONS] COMMAND…`: the remote shell runs COMMAND joined by spaces.
    pub(crate) fn ssh_remote(&mut self, args: &[Word]) {
        let mut i = skip_ssh_options(args, 0);
        if args.get(i).is_none() {
            return;
        }
        i = skip_ssh_options(args, i + 1);
        let rest: Vec<&Word> = args.get(i..).unwrap_or(&[]).iter().collect();
        self.joined_line("ssh", &rest);
    }
}

/// sed's script texts (`-e`, `--expression`), script files (`-f`, `--file`), and its first
/// operand (the script when neither is given).
fn sed_args(args: &[Word]) -> (Vec<Word>, Vec<Word>, Option<Word>) {
    let (mut scripts, mut files, mut first_operand) = (Vec::new(), Vec::new(), None);
    let mut i = 0;
    while let Some(w) = args.get(i) {
        i += 1;
        let t = w.text.as_str();
        let attached = |v: &str| Word {
            text: v.into(),
            dynamic: w.dynamic,
        };
        if let Some(v) = t.strip_prefix("--expression=") {
            scripts.push(attached(v));
        } else if let Some(v) = t.strip_prefix("--file=") {
            files.push(attached(v));
        } else if t == "--expression" || t == "--file" {
            let list = if t == "--file" {
                &mut files
            } else {
                &mut scripts
            };
            list.extend(args.get(i).cloned());
            i += 1;
        } else if t.starts_with('-') && !t.starts_with("--") && t.len() > 1 {
            // A cluster such as `-ne SCRIPT` or `-eSCRIPT`; `-i` takes the rest as a suffix.
            let letters: String = t.chars().skip(1).collect();
            match letters.find(['e', 'f']) {
                Some(k) if letters.get(..k).is_some_and(|p| !p.contains('i')) => {
                    let rest = letters.get(k + 1..).unwrap_or("");
                    let value = if rest.is_empty() {
                        i += 1;
                        args.get(i - 1).cloned()
                    } else {
                        Some(attached(rest))
                    };
                    let list = if letters.as_bytes().get(k) == Some(&b'f') {
                        &mut files
                    } else {
                        &mut scripts
                    };
                    list.extend(value);
                }
                _ if letters.starts_with('l') => i += 1,
                _ => {}
            }
        } else if first_operand.is_none() && !t.starts_with("--") {
            first_operand = Some(w.clone());
        }
    }
    (scripts, files, first_operand)
}

fn skip_ssh_options(args: &[Word], mut i: usize) -> usize {
    while let Some(w) = args.get(i) {
        let t = w.text.as_str();
        if t == "--" {
            return i + 1;
        }
        if !t.starts_with('-') || t.len() < 2 {
            return i;
        }
        i += 1;
        let body: Vec<char> = t.chars().skip(1).collect();
        if let Some(k) = body.iter().position(|c| SSH_VALUES.contains(*c)) {
            if k + 1 == body.len() {
                i += 1;
            }
        }
    }
    i
}

/// Whether a sed script runs a command: the `e` command, or the `e` flag of `s///`.
pub(crate) fn sed_runs_command(script: &str) -> bool {
    let chars: Vec<char> = script.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        i = skip_address(&chars, i);
        let Some(&c) = chars.get(i) else { break };
        i += 1;
        match c {
            'e' => return true,
            's' | 'y' => {
                let Some(&delim) = chars.get(i) else { break };
                i = skip_delimited(&chars, i + 1, delim);
                i = skip_delimited(&chars, i, delim);
                if c == 's' {
                    while let Some(&f) = chars.get(i) {
                        if f == 'e' {
                            return true;
                        }
                        if f == 'w' || !(f.is_ascii_alphanumeric()) {
                            break;
                        }
                        i += 1;
                    }
                }
                if chars.get(i) == Some(&'w') {
                    i = skip_line(&chars, i);
                }
            }
            'a' | 'i' | 'c' | 'r' | 'R' | 'w' | 'W' => i = skip_line(&chars, i),
            ':' | 'b' | 't' | 'T' => {
                while chars.get(i).is_some_and(|c| !matches!(c, ';' | '\n' | '}')) {
                    i += 1;
                }
            }
            _ => {}
        }
    }
    false
}

/// Skips blanks, separators and an address (`1`, `$`, `/re/I`, `\%re%`, `1,+3`, `0~2`, `!`).
fn skip_address(chars: &[char], mut i: usize) -> usize {
    while let Some(&c) = chars.get(i) {
        match c {
            ' ' | '\t' | '\n' | ';' | '{' | '}' | ',' | '~' | '+' | '!' | '$' | '0'..='9' => i += 1,
            '/' => i = skip_delimited(chars, i + 1, '/'),
            '\\' => match chars.get(i + 1) {
                Some(&d) => i = skip_delimited(chars, i + 2, d),
                None => return i + 1,
            },
            'I' | 'M' if i > 0 && chars.get(i - 1) == Some(&'/') => i += 1,
            _ => return i,
        }
    }
    i
}

/// Skips to just past the next unescaped `delim`.
fn skip_delimited(chars: &[char], mut i: usize, delim: char) -> usize {
    while let Some(&c) = chars.get(i) {
        i += 1;
        if c == '\\' {
            i += 1;
        } else if c == delim {
            break;
        }
    }
    i
}

fn skip_line(chars: &[char], mut i: usize) -> usize {
    while chars.get(i).is_some_and(|c| *c != '\n') {
        i += 1;
    }
    i
}

/// Whether awk code has a pipe (`print | cmd`, `cmd | getline`, `|&`) outside strings and
/// regular expressions. `||` is a logical or, not a pipe.
pub(crate) fn awk_pipes(code: &str) -> bool {
    let chars: Vec<char> = code.chars().collect();
    let mut i = 0;
    let mut prev = ' ';
    while let Some(&c) = chars.get(i) {
        i += 1;
        match c {
            '"' => i = skip_delimited(&chars, i, '"'),
            '/' if starts_regex(prev) => i = skip_delimited(&chars, i, '/'),
            '#' => i = skip_line(&chars, i),
            '|' => {
                if chars.get(i) == Some(&'|') {
                    i += 1;
                } else {
                    return true;
                }
            }
            _ => {}
        }
        if !c.is_whitespace() {
            prev = c;
        }
    }
    false
}

/// A `/` after one of these starts a regular expression rather than a division.
fn starts_regex(prev: char) -> bool {
    matches!(
        prev,
        ' ' | '(' | ',' | '~' | '!' | '{' | ';' | '&' | '|' | '\n'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sed_scripts_that_run_commands_are_recognised() {
        for s in [
            "1e rm y",
            "s/.*/rm y/e",
            "e",
            "/x/!e rm",
            "$!{e ls\n}",
            "s|a|b|ge",
            "p;e x",
        ] {
            assert!(sed_runs_command(s), "{s}");
        }
        for s in [
            "s/hello/world/p",
            "s/a/b/g;/^$/d",
            "$!N;s/\\n/ /",
            "/e/d",
            "s/e/E/",
            "y/e/f/",
        ] {
            assert!(!sed_runs_command(s), "{s}");
        }
    }

    #[test]
    fn awk_pipes_are_found_outside_strings_and_regexes() {
        assert!(awk_pipes("{ c = \"rm y\"; print | c }"));
        assert!(awk_pipes("{ \"date\" | getline d }"));
        assert!(!awk_pipes("$1 > 2 || $2 < 3 { print \"a|b\" }"));
        assert!(!awk_pipes("/foo|bar/ { print $1 }"));
    }
}
