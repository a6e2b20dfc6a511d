//! Programs that run other programs: `env`, `sudo`, `xargs`, `find -exec`, `sh -c`, `eval`…
//! Each is a command itself (its name is checked) and the command it runs is checked too.

use super::walk::{Cmd, Walker, MAX_DEPTH};
use super::words::Word;
use super::ShellError;

/// How a wrapper's options are spelled.
struct Opts {
    /// Short options without a value.
    flags: &'static str,
    /// Short options that take a value (attached or the next word).
    values: &'static str,
    long_flags: &'static [&'static str],
    long_values: &'static [&'static str],
    /// Short options whose value, if any, is attached (`xargs -l`, `-l5`).
    optional: &'static str,
}

const fn opts(
    flags: &'static str,
    values: &'static str,
    long_flags: &'static [&'static str],
    long_values: &'static [&'static str],
) -> Opts {
    Opts {
        flags,
        values,
        long_flags,
        long_values,
        optional: "",
    }
}

/// The options a wrapper was given and where its operands start.
struct Parsed {
    seen: Vec<(String, Option<Word>)>,
    operands: usize,
}

impl Parsed {
    fn has(&self, names: &[&str]) -> bool {
        self.seen.iter().any(|(n, _)| names.contains(&n.as_str()))
    }

    fn value(&self, names: &[&str]) -> Option<&Word> {
        self.seen
            .iter()
            .find(|(n, _)| names.contains(&n.as_str()))
            .and_then(|(_, v)| v.as_ref())
    }
}

/// Why a wrapper's options could not be read.
enum OptIssue {
    Unknown(String),
    Dynamic(String),
}

/// getopt-style reading of `args` (the words after the program name).
fn parse_opts(args: &[Word], spec: &Opts) -> Result<Parsed, OptIssue> {
    let mut seen = Vec::new();
    let mut i = 0;
    while let Some(w) = args.get(i) {
        if w.dynamic && super::options::may_be_option(w) {
            return Err(OptIssue::Dynamic(w.text.clone()));
        }
        let t = w.text.as_str();
        if w.dynamic {
            break;
        }
        if t == "--" {
            i += 1;
            break;
        }
        if let Some(long) = t.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((n, v)) => (n, Some(Word::literal(v))),
                None => (long, None),
            };
            if spec.long_values.contains(&name) {
                let value = match attached {
                    Some(v) => Some(v),
                    None => {
                        i += 1;
                        args.get(i).cloned()
                    }
                };
                seen.push((format!("--{name}"), value));
            } else if spec.long_flags.contains(&name) {
                seen.push((format!("--{name}"), attached));
            } else {
                return Err(OptIssue::Unknown(t.to_string()));
            }
        } else if t.len() > 1 && (t.starts_with('-') || t.starts_with('+')) {
            i = short_cluster(args, i, spec, &mut seen)?;
        } else {
            break;
        }
        i += 1;
    }
    Ok(Parsed { seen, operands: i })
}

/// Reads `-abc` / `-uNAME` / `-u NAME`; returns the index of the last word consumed.
fn short_cluster(
    args: &[Word],
    mut i: usize,
    spec: &Opts,
    seen: &mut Vec<(String, Option<Word>)>,
) -> Result<usize, OptIssue> {
    let t = args.get(i).map(|w| w.text.clone()).unwrap_or_default();
    let body: Vec<char> = t.chars().skip(1).collect();
    for (k, c) in body.iter().enumerate() {
        if spec.optional.contains(*c) {
            let rest: String = body.iter().skip(k + 1).collect();
            seen.push((
                format!("-{c}"),
                (!rest.is_empty()).then(|| Word::literal(rest)),
            ));
            return Ok(i);
        }
        if spec.values.contains(*c) {
            let rest: String = body.iter().skip(k + 1).collect();
            let value = if rest.is_empty() {
                i += 1;
                args.get(i).cloned()
            } else {
                Some(Word::literal(rest))
            };
            seen.push((format!("-{c}"), value));
            return Ok(i);
        }
        if !spec.flags.contains(*c) {
            return Err(OptIssue::Unknown(t.clone()));
        }
        seen.push((format!("-{c}"), None));
    }
    Ok(i)
}

const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh", "lksh", "rbash", "fish",
    "csh", "tcsh",
];

const ENV: Opts = opts(
    "i0v",
    "uCSP",
    &[
        "ignore-environment",
        "null",
        "debug",
        "list-signal-handling",
        "default-signal",
        "ignore-signal",
        "block-signal",
    ],
    &["unset", "chdir", "split-string"],
);
const SUDO: Opts = opts(
    "AbEeHiKklnPSsVvNB",
    "ugCDhprtTUR",
    &[
        "askpass",
        "background",
        "preserve-env",
        "edit",
        "set-home",
        "login",
        "remove-timestamp",
        "reset-timestamp",
        "list",
        "non-interactive",
        "preserve-groups",
        "stdin",
        "shell",
        "validate",
        "version",
        "help",
        "bell",
    ],
    &[
        "user",
        "group",
        "close-from",
        "chdir",
        "host",
        "prompt",
        "role",
        "type",
        "command-timeout",
        "other-user",
        "chroot",
    ],
);
const DOAS: Opts = opts("nsL", "uC", &[], &[]);
const NOHUP: Opts = opts("", "", &["help", "version"], &[]);
const TIMEOUT: Opts = opts(
    "v",
    "ks",
    &["preserve-status", "foreground", "verbose"],
    &["kill-after", "signal"],
);
const NICE: Opts = opts("", "n", &[], &["adjustment"]);
const IONICE: Opts = opts(
    "t",
    "cnpPu",
    &["ignore"],
    &["class", "classdata", "pid", "pgid", "uid"],
);
const CHROOT: Opts = opts("", "", &["skip-chdir"], &["userspec", "groups"]);
const STDBUF: Opts = opts("", "ioe", &[], &["input", "output", "error"]);
const SETSID: Opts = opts("cfw", "", &["ctty", "fork", "wait"], &[]);
const TIME: Opts = opts(
    "pvaq",
    "fo",
    &["portability", "verbose", "append", "quiet"],
    &["format", "output"],
);
const COMMAND: Opts = opts("pvV", "", &[], &[]);
const EXEC: Opts = opts("cl", "a", &[], &[]);
// `-e`, `-i` and `-l` take a value only when it is attached (`-l5`), so `xargs -l rm` runs rm.
const XARGS: Opts = Opts {
    optional: "eil",
    ..opts(
        "0rtpxo",
        "InPdaEsL",
        &[
            "null",
            "no-run-if-empty",
            "verbose",
            "interactive",
            "exit",
            "open-tty",
            "show-limits",
            "replace",
            "eof",
            "max-lines",
        ],
        &[
            "max-args",
            "max-procs",
            "delimiter",
            "arg-file",
            "max-chars",
            "process-slot-var",
        ],
    )
};
const SHELL: Opts = opts(
    "abcefhiklmnprstuvxBCEHPTsD",
    "oO",
    &[
        "norc",
        "noprofile",
        "login",
        "posix",
        "restricted",
        "verbose",
        "debugger",
        "dump-strings",
        "dump-po-strings",
        "noediting",
        "help",
        "version",
        "pretty-print",
    ],
    &["rcfile", "init-file"],
);
const WATCH: Opts = opts(
    "dtbegcxpwrqC",
    "nsq",
    &[
        "differences",
        "no-title",
        "beep",
        "errexit",
        "chgexit",
        "color",
        "no-color",
        "exec",
        "precise",
        "version",
        "help",
        "no-wrap",
        "no-linewrap",
    ],
    &["interval", "equexit", "shotsdir"],
);
const TASKSET: Opts = opts("acp", "", &["all-tasks", "cpu-list", "pid"], &[]);
const CHRT: Opts = opts(
    "abdfiorRmpve",
    "TPD",
    &[
        "all-tasks",
        "batch",
        "deadline",
        "fifo",
        "idle",
        "other",
        "rr",
        "reset-on-fork",
        "max",
        "pid",
        "verbose",
        "ext",
    ],
    &["sched-runtime", "sched-period", "sched-deadline"],
);
const FLOCK: Opts = opts(
    "sxenuoFv",
    "wEc",
    &[
        "shared",
        "exclusive",
        "nonblock",
        "unlock",
        "close",
        "no-fork",
        "verbose",
    ],
    &["timeout", "conflict-exit-code", "command"],
);
const PKEXEC: Opts = opts(
    "",
    "",
    &["disable-internal-agent", "keep-cwd", "help", "version"],
    &["user"],
);
const STRACE: Opts = opts(
    "cCdDfFhiqrtTvVwxyzkn",
    "abeEIoOpPsSuUX",
    &[
        "summary-only",
        "summary",
        "follow-forks",
        "output-separately",
        "debug",
        "no-abbrev",
        "verbose",
        "quiet",
    ],
    &[
        "expr",
        "output",
        "signal",
        "env",
        "user",
        "trace",
        "trace-path",
        "string-limit",
    ],
);
const TRAP: Opts = opts("lpP", "", &[], &[]);
const NONE: Opts = opts("", "", &[], &[]);

/// The program name as rules see it: unquoted, last path component, `.` as `source`.
pub(crate) fn program_name(w: &Word) -> Option<String> {
    if w.dynamic {
        return None;
    }
    let base = w
        .text
        .rsplit('/')
        .find(|s| !s.is_empty())
        .unwrap_or(w.text.as_str());
    Some(if base == "." {
        "source".into()
    } else {
        base.to_string()
    })
}

impl Walker {
    /// Records one command and analyses whatever it runs in turn.
    pub(crate) fn command(&mut self, mut cmd: Cmd) {
        cmd.maybe |= self.maybe;
        let name = cmd.words.first().and_then(program_name);
        self.note_files(&cmd, name.as_deref());
        if let Some(n) = name.as_deref().filter(|_| !cmd.maybe) {
            self.note_config_place_words(
                &n.to_ascii_lowercase(),
                cmd.words.get(1..).unwrap_or(&[]),
            );
        }
        self.out.cmds.push(cmd.clone());
        let Some(name) = name else { return };
        if self.depth >= MAX_DEPTH {
            self.fail(ShellError::TooDeep(MAX_DEPTH));
            return;
        }
        self.depth += 1;
        // Like deny rules, wrappers are recognised without case: `SUDO` runs `sudo` where the
        // file system ignores case.
        self.unwrap(&name.to_ascii_lowercase(), &cmd);
        self.depth -= 1;
    }

    /// Records files a command writes (`tee`) or runs by path, and refuses `/proc/…/exe`.
    fn note_files(&mut self, cmd: &Cmd, name: Option<&str>) {
        let Some(first) = cmd.words.first().filter(|w| !w.dynamic) else {
            return;
        };
        if first.text.starts_with("/proc/") {
            // `/proc/self/exe` is the running shell (or any program, by process id).
            self.opaque("a program run from `/proc`, which may be any program");
        }
        if first.text.contains('/') {
            self.out.run_files.push(super::walk::file_key(&first.text));
        }
        let args = cmd.words.get(1..).unwrap_or(&[]);
        let operands = || {
            args.iter()
                .filter(|w| w.dynamic || !w.text.starts_with('-'))
        };
        match name {
            Some("tee") => {
                for w in operands().cloned().collect::<Vec<_>>() {
                    self.note_written(&w);
                }
            }
            // The destination of a copy, move or link is the last operand, or the `-t` dir.
            Some("cp" | "mv" | "ln" | "install" | "rsync") => {
                let target = args.iter().position(|w| {
                    w.text == "-t" || w.text.starts_with("--target") || w.text.starts_with("-t")
                });
                match target {
                    Some(_) => {
                        let dir = Word::unknown("the files it copies into a directory");
                        self.note_written(&dir);
                    }
                    None => {
                        if let Some(last) = operands().next_back().cloned() {
                            self.note_written(&last);
                        }
                    }
                }
            }
            // `npm pkg set scripts.test=…`, `npm init`: the package's scripts change.
            Some("npm" | "pnpm" | "yarn" | "bun")
                if args.iter().any(|w| {
                    matches!(w.text.as_str(), "pkg" | "set-script" | "init" | "create")
                }) =>
            {
                self.note_written(&Word::literal("package.json"));
            }
            // `sort -o FILE`, `uniq IN OUT`, and sed's `w FILE` write files of the line's text.
            Some("sort") => {
                let hits = super::options::find(
                    args,
                    &["-o", "--output"],
                    &[],
                    super::options::Style::Gnu,
                );
                for file in hits.into_iter().filter_map(|h| h.value) {
                    self.note_written(&file);
                }
            }
            Some("uniq") => {
                let mut files = args
                    .iter()
                    .filter(|w| w.dynamic || w.text == "-" || !w.text.starts_with('-'));
                if let Some(out) = files.nth(1).cloned() {
                    self.note_written(&out);
                }
            }
            Some("sed" | "gsed") if args.iter().any(|w| w.dynamic || sed_writes(&w.text)) => {
                let file = Word::unknown("a file its script writes");
                self.note_written(&file);
            }
            Some("dd") => {
                for w in args.iter().filter(|w| w.text.starts_with("of=")) {
                    let file = Word {
                        text: w.text.trim_start_matches("of=").to_string(),
                        dynamic: w.dynamic,
                    };
                    self.note_written(&file);
                }
            }
            _ => {}
        }
    }

    fn unwrap(&mut self, name: &str, cmd: &Cmd) {
        let args = cmd.words.get(1..).unwrap_or(&[]);
        let tail = cmd.open_tail;
        match name {
            "env" => self.env(args, tail),
            "sudo" => self.prefix(name, args, &SUDO, tail, |p| !p.has(&["-e", "--edit"]), 0),
            "doas" => self.prefix(name, args, &DOAS, tail, |_| true, 0),
            "nohup" | "unbuffer" | "setpriv" | "catchsegv" | "nocache" => {
                self.prefix(name, args, &NOHUP, tail, |_| true, 0)
            }
            "builtin" => self.prefix(name, args, &NONE, tail, |_| true, 0),
            "timeout" => self.prefix(name, args, &TIMEOUT, tail, |_| true, 1),
            "nice" => self.nice(args, tail),
            "ionice" => self.prefix(
                name,
                args,
                &IONICE,
                tail,
                |p| !p.has(&["-p", "-P", "-u", "--pid", "--pgid", "--uid"]),
                0,
            ),
            "chroot" => self.prefix(name, args, &CHROOT, tail, |_| true, 1),
            "stdbuf" => self.prefix(name, args, &STDBUF, tail, |_| true, 0),
            "setsid" => self.prefix(name, args, &SETSID, tail, |_| true, 0),
            "time" => self.prefix(name, args, &TIME, tail, |_| true, 0),
            "command" => self.prefix(name, args, &COMMAND, tail, |p| !p.has(&["-v", "-V"]), 0),
            "exec" => self.prefix(name, args, &EXEC, tail, |_| true, 0),
            "taskset" => self.prefix(name, args, &TASKSET, tail, |p| !p.has(&["-p", "--pid"]), 1),
            "chrt" => self.prefix(
                name,
                args,
                &CHRT,
                tail,
                |p| !p.has(&["-p", "--pid", "-m", "--max"]),
                1,
            ),
            "gosu" | "su-exec" => self.prefix(name, args, &NONE, tail, |_| true, 1),
            "busybox" => self.prefix(name, args, &NONE, tail, |_| true, 0),
            "xargs" => self.xargs(args),
            "pkexec" => self.prefix(name, args, &PKEXEC, tail, |_| true, 0),
            "strace" | "ltrace" => self.prefix(name, args, &STRACE, tail, |p| !p.has(&["-p"]), 0),
            "parallel" => {
                self.opaque("`parallel`, which builds the commands it runs from its input")
            }
            "compgen" | "complete" => self.callback(name, args),
            "mapfile" | "readarray" => {
                self.callback(name, args);
                self.assigned("MAPFILE", None);
                for w in variable_name_args(name, args) {
                    let w = w.text.clone();
                    self.assigned(&w, None);
                }
            }
            "let" => self.let_(args),
            "find" => self.find(args),
            "eval" => self.eval(args),
            "trap" => self.trap(args),
            "alias" => self.alias(args),
            "source" => {
                if let Some(file) = args.iter().find(|w| w.dynamic || !w.text.starts_with('-')) {
                    self.script_file("source", file);
                    // A sourced file runs in this shell: it may define functions and aliases
                    // that change what every later command name in the line runs.
                    self.opaque(format!(
                        "`source {}`, whose commands run in this shell and may redefine later commands",
                        file.text
                    ));
                }
            }
            "watch" => self.watch(args),
            "flock" => self.flock(args, tail),
            "su" => {
                self.dash_c(name, args);
                self.login_shell(args);
            }
            "runuser" => {
                self.dash_c(name, args);
                self.login_shell(args);
                self.runuser(args, tail);
            }
            "export" | "declare" | "typeset" | "local" | "readonly" => {
                self.declare(args);
                self.subscripts(name, args);
            }
            "printf" | "read" | "unset" | "getopts" | "wait" | "test" | "[" => {
                for w in variable_name_args(name, args) {
                    let w = w.text.clone();
                    self.assigned(&w, None);
                }
                self.subscripts(name, args)
            }
            "hash" | "enable" => self.rebinding(name, args),
            _ if is_shell(name) => self.shell(name, args),
            _ if self.launcher(name, args, tail) => {}
            _ => {
                self.program(name, args);
            }
        }
    }

    fn opt_issue(&mut self, name: &str, issue: OptIssue) {
        match issue {
            OptIssue::Unknown(o) => self.opaque(format!("`{name}` with the unknown option `{o}`")),
            OptIssue::Dynamic(w) => self.opaque(format!(
                "`{name}` with the argument `{w}`, which is computed at run time"
            )),
        }
    }

    /// A wrapper of the form `NAME [OPTIONS] [N FIXED OPERANDS] COMMAND ARGS…`.
    fn prefix(
        &mut self,
        name: &str,
        args: &[Word],
        spec: &Opts,
        tail: bool,
        runs: impl Fn(&Parsed) -> bool,
        skip: usize,
    ) {
        let parsed = match parse_opts(args, spec) {
            Ok(p) => p,
            Err(issue) => return self.opt_issue(name, issue),
        };
        if !runs(&parsed) {
            return;
        }
        let start = parsed.operands + skip;
        let mut rest = args.get(start..).unwrap_or(&[]);
        if name == "sudo" {
            rest = self.skip_assignments(rest);
        }
        self.inner(rest, tail);
    }

    fn inner(&mut self, words: &[Word], open_tail: bool) {
        if words.is_empty() && open_tail {
            // `xargs env`: the command itself comes from the input.
            return self.opaque("a wrapper whose command comes from its input");
        }
        if !words.is_empty() {
            self.command(Cmd {
                words: words.to_vec(),
                open_tail,
                maybe: false,
            });
        }
    }

    /// Skips `NAME=VALUE` words, checking the names and the values as possible commands;
    /// stops at the first other word. Like `env`, any word with `=` is an assignment, so
    /// `BASH_FUNC_ls%%=() { …; }` (an exported function) is one too.
    fn skip_assignments<'a>(&mut self, mut rest: &'a [Word]) -> &'a [Word] {
        while let Some(w) = rest.first() {
            let Some((n, value)) = w.text.split_once('=') else {
                break;
            };
            if n.is_empty() {
                break;
            }
            if w.dynamic {
                self.opaque(format!(
                    "the environment assignment `{}`, computed at run time",
                    w.text
                ));
            } else if !is_name(n) {
                self.opaque(format!(
                    "the environment entry `{n}`, which is no variable name"
                ));
            }
            let (n, value) = (n.to_string(), value.to_string());
            self.check_assignment_name(&n);
            if !w.dynamic {
                self.assigned_value(&n, &value);
            }
            rest = rest.get(1..).unwrap_or(&[]);
        }
        rest
    }

    fn env(&mut self, args: &[Word], tail: bool) {
        let parsed = match parse_opts(args, &ENV) {
            Ok(p) => p,
            Err(issue) => return self.opt_issue("env", issue),
        };
        let mut rest = args.get(parsed.operands..).unwrap_or(&[]);
        // A lone `-` is the old spelling of `-i`.
        while rest.first().is_some_and(|w| !w.dynamic && w.text == "-") {
            rest = rest.get(1..).unwrap_or(&[]);
        }
        let rest = self.skip_assignments(rest);
        match parsed.value(&["-S", "--split-string"]) {
            Some(split) if split.dynamic => {
                self.opaque(format!("`env -S {}`, computed at run time", split.text))
            }
            Some(split) => {
                // `env -S 'a b' c` runs `a b c`: analyse the split string followed by the rest.
                let mut line = env_split_text(&split.text);
                for w in rest {
                    line.push(' ');
                    line.push_str(&quote(&w.text));
                }
                self.walk_line(&line);
            }
            None => self.inner(rest, tail),
        }
    }

    fn nice(&mut self, args: &[Word], tail: bool) {
        // `nice -5 cmd` is the old spelling of `nice -n 5 cmd`.
        let old = args.first().is_some_and(|w| {
            !w.dynamic
                && w.text.len() > 1
                && w.text.starts_with('-')
                && w.text
                    .get(1..)
                    .is_some_and(|d| d.chars().all(|c| c.is_ascii_digit()))
        });
        if old {
            self.inner(args.get(1..).unwrap_or(&[]), tail);
        } else {
            self.prefix("nice", args, &NICE, tail, |_| true, 0);
        }
    }

    fn xargs(&mut self, args: &[Word]) {
        let parsed = match parse_opts(args, &XARGS) {
            Ok(p) => p,
            Err(issue) => return self.opt_issue("xargs", issue),
        };
        let rest = args.get(parsed.operands..).unwrap_or(&[]);
        // With -I R (or -i / --replace, R = `{}`), words containing R are filled from input.
        let replace = parsed
            .value(&["-I", "-i", "--replace"])
            .map(|w| w.text.clone())
            .or_else(|| parsed.has(&["-i", "--replace"]).then(|| "{}".to_string()));
        let words: Vec<Word> = rest
            .iter()
            .map(|w| match &replace {
                Some(r) if !r.is_empty() && w.text.contains(r.as_str()) => {
                    Word::unknown(w.text.clone())
                }
                _ => w.clone(),
            })
            .collect();
        if words.is_empty() {
            self.inner(&[Word::literal("echo")], true);
        } else {
            self.inner(&words, true);
        }
    }

    fn find(&mut self, args: &[Word]) {
        let mut i = 0;
        while let Some(w) = args.get(i) {
            i += 1;
            if w.dynamic || !matches!(w.text.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
                continue;
            }
            let mut words = Vec::new();
            while let Some(a) = args.get(i) {
                i += 1;
                if !a.dynamic && (a.text == ";" || a.text == "+") {
                    break;
                }
                words.push(if a.text.contains("{}") {
                    Word::unknown(a.text.clone())
                } else {
                    a.clone()
                });
            }
            self.inner(&words, false);
        }
    }

    fn eval(&mut self, args: &[Word]) {
        // Bash's `eval` ends its options at `--`.
        let args = match args.first() {
            Some(w) if !w.dynamic && w.text == "--" => args.get(1..).unwrap_or(&[]),
            _ => args,
        };
        if let Some(d) = args.iter().find(|w| w.dynamic) {
            return self.opaque(format!("`eval` of `{}`, computed at run time", d.text));
        }
        let line: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
        self.walk_line(&line.join(" "));
    }

    fn trap(&mut self, args: &[Word]) {
        let Ok(parsed) = parse_opts(args, &TRAP) else {
            return;
        };
        let ops = args.get(parsed.operands..).unwrap_or(&[]);
        if ops.len() >= 2 {
            self.script("trap", &ops[0]);
        }
    }

    fn alias(&mut self, args: &[Word]) {
        for w in args {
            if w.dynamic {
                self.opaque(format!("`alias {}`, computed at run time", w.text));
            } else if let Some((name, value)) = w.text.split_once('=') {
                // What the alias runs is checked against deny rules, but where it is used
                // later a plain command name runs something else.
                let value = value.to_string();
                self.maybe_line(&value);
                self.opaque(format!(
                    "the alias definition `{name}`, which makes a later command name run `{value}`"
                ));
            }
        }
    }

    fn watch(&mut self, args: &[Word]) {
        let parsed = match parse_opts(args, &WATCH) {
            Ok(p) => p,
            Err(issue) => return self.opt_issue("watch", issue),
        };
        let rest = args.get(parsed.operands..).unwrap_or(&[]);
        if parsed.has(&["-x", "--exec"]) {
            return self.inner(rest, false);
        }
        self.eval(rest);
    }

    fn flock(&mut self, args: &[Word], tail: bool) {
        let parsed = match parse_opts(args, &FLOCK) {
            Ok(p) => p,
            Err(issue) => return self.opt_issue("flock", issue),
        };
        if let Some(c) = parsed.value(&["-c", "--command"]).cloned() {
            return self.script("flock", &c);
        }
        let rest = args.get(parsed.operands + 1..).unwrap_or(&[]);
        match rest.first() {
            Some(w) if !w.dynamic && (w.text == "-c" || w.text == "--command") => {
                if let Some(s) = rest.get(1) {
                    self.script("flock", s);
                }
            }
            _ => self.inner(rest, tail),
        }
    }

    /// `su -c STRING`, `runuser -c`, `script -c`: the string is a shell line.
    fn dash_c(&mut self, name: &str, args: &[Word]) {
        let mut i = 0;
        while let Some(w) = args.get(i) {
            i += 1;
            if w.dynamic {
                continue;
            }
            if is_dash_c(&w.text) || matches!(w.text.as_str(), "--command" | "--session-command") {
                if let Some(s) = args.get(i).cloned() {
                    self.script(name, &s);
                }
            } else if let Some(s) = w
                .text
                .strip_prefix("--command=")
                .or_else(|| w.text.strip_prefix("--session-command="))
            {
                let s = Word::literal(s);
                self.script(name, &s);
            }
        }
    }

    /// `runuser -u USER [--] CMD…` runs a command without a shell.
    fn runuser(&mut self, args: &[Word], tail: bool) {
        let user = args
            .iter()
            .position(|w| w.text == "-u" || w.text == "--user");
        let attached = args.iter().position(|w| w.text.starts_with("--user="));
        let start = user.map(|i| i + 2).or(attached.map(|i| i + 1));
        if let Some(start) = start {
            self.loose("runuser", args.get(start..).unwrap_or(&[]), 0, tail);
        } else if let Some(i) = args.iter().position(|w| !w.dynamic && w.text == "--") {
            self.inner(args.get(i + 1..).unwrap_or(&[]), tail);
        }
    }

    /// `su -s PROGRAM`: the program given as the login shell runs.
    fn login_shell(&mut self, args: &[Word]) {
        for shell in super::git::option_values(args, &["-s", "--shell"]) {
            self.inner(&[shell], false);
        }
    }

    /// `compgen -C CMD`, `complete -C CMD`, `mapfile -C CALLBACK`: strings run as commands.
    fn callback(&mut self, name: &str, args: &[Word]) {
        let mut i = 0;
        while let Some(w) = args.get(i) {
            i += 1;
            if w.dynamic && w.text.starts_with('-') {
                self.opaque(format!(
                    "`{name}` with the option `{}`, computed at run time",
                    w.text
                ));
            } else if w.text.starts_with('-') && !w.text.starts_with("--") && w.text.ends_with('C')
            {
                if let Some(s) = args.get(i).cloned() {
                    self.script(name, &s);
                }
            }
        }
    }

    /// `let` evaluates each argument as arithmetic, which runs code hidden in variables.
    fn let_(&mut self, args: &[Word]) {
        for w in args {
            self.arithmetic_reads(&w.text);
        }
    }

    /// Builtins that take variable names evaluate subscripts: `printf -v 'a[$(cmd)]'` runs cmd.
    fn subscripts(&mut self, name: &str, args: &[Word]) {
        if let Some(w) = variable_name_args(name, args)
            .into_iter()
            .find(|w| w.dynamic)
        {
            return self.opaque(format!(
                "`{name}` with the variable name `{}`, computed at run time",
                w.text
            ));
        }
        if let Some(w) = args
            .iter()
            .find(|w| w.text.contains('[') && w.text.contains(['$', '`']))
        {
            self.opaque(format!(
                "`{name}` with `{}`, whose subscript bash evaluates as code",
                w.text
            ));
        }
    }

    pub(crate) fn script(&mut self, name: &str, s: &Word) {
        if s.dynamic {
            self.opaque(format!(
                "the script `{}` given to `{name}`, computed at run time",
                s.text
            ));
        } else {
            let text = s.text.clone();
            self.walk_line(&text);
        }
    }

    fn shell(&mut self, name: &str, args: &[Word]) {
        if name == "fish" {
            // fish spells its options differently: `-c`/`--command`, `-C`/`--init-command`.
            let opts = ["-c", "--command", "-C", "--init-command"];
            let lines = super::git::option_values(args, &opts);
            for line in &lines {
                self.script(name, line);
            }
            if lines.is_empty() && self.fed {
                self.opaque("`fish` without `-c`, which may read commands from its input");
            }
            return;
        }
        let parsed = match parse_opts(args, &SHELL) {
            Ok(p) => p,
            Err(issue) => return self.opt_issue(name, issue),
        };
        let rest = args.get(parsed.operands..).unwrap_or(&[]);
        // A start-up file given on the line is code that runs first.
        if let Some(rc) = parsed.value(&["--rcfile", "--init-file"]) {
            let rc = rc.clone();
            self.script_file(name, &rc);
        }
        if parsed.has(&["-c"]) {
            match rest.first() {
                Some(s) => self.script(name, s),
                None => self.fail(ShellError::Parse(format!("`{name} -c` without a command"))),
            }
        } else if parsed.has(&["--help", "--version"]) {
        } else if rest.is_empty() || parsed.has(&["-s"]) {
            match self.stdin_literal.clone() {
                // `bash <<'EOF' … EOF`: the here-document is the script.
                Some(script) if self.fed => self.walk_line(&script),
                _ if self.fed => self.opaque(format!("`{name}` reading commands from its input")),
                _ => {}
            }
        } else if let Some(file) = rest.first() {
            self.script_file(name, file);
        }
    }

    /// A script named by a plain path is the command itself; one whose content is produced
    /// on the fly (`<(…)`, `$(…)`, `/dev/stdin`, `/dev/fd/N`) hides its commands.
    pub(crate) fn script_file(&mut self, name: &str, file: &Word) {
        let t = file.text.as_str();
        if !file.dynamic {
            self.out.run_files.push(super::walk::file_key(t));
        }
        if file.dynamic || t == "-" || produced_on_the_fly(t) {
            self.opaque(format!(
                "`{name} {t}`, whose commands are produced at run time"
            ));
        }
    }

    fn declare(&mut self, args: &[Word]) {
        for w in args {
            if let Some((n, value)) = w.text.split_once('=') {
                let n = n.trim_end_matches('+').to_string();
                self.assigned(&n, (!w.dynamic).then_some(value));
                self.check_assignment_name(&n);
                if !w.dynamic {
                    let value = value.to_string();
                    self.assigned_value(&n, &value);
                }
                // `declare -a 'a=($(cmd))'`: a quoted compound value is expanded again.
                let quoted = !w.dynamic || w.text.starts_with(['"', '\'']);
                if quoted && value.starts_with('(') && value.contains(['$', '`', '[']) {
                    self.opaque(format!(
                        "the array assignment `{}`, which bash expands again",
                        w.text
                    ));
                }
            }
            // A name computed at run time may carry a subscript that runs code.
            let name_part = w.text.split('=').next().unwrap_or("");
            if w.dynamic && name_part.contains(['$', '`']) {
                self.opaque(format!(
                    "the variable name in `{}`, computed at run time",
                    w.text
                ));
            }
            let is_opt = !w.dynamic && w.text.starts_with(['-', '+']);
            if is_opt && w.text.contains('i') {
                self.opaque("an integer variable, whose assignments evaluate values as code");
            }
            if is_opt && w.text.contains('n') {
                self.opaque("a name reference, which may name a subscript that runs code");
            }
        }
    }

    fn rebinding(&mut self, name: &str, args: &[Word]) {
        let risky = if name == "hash" { "p" } else { "f" };
        if args
            .iter()
            .any(|w| w.dynamic || (w.text.starts_with('-') && w.text.contains(risky)))
        {
            self.opaque(format!("`{name} -{risky}`, which rebinds a command name"));
        }
    }
}

/// The arguments of a builtin that are variable names (whose subscripts bash evaluates).
fn variable_name_args<'a>(name: &str, args: &'a [Word]) -> Vec<&'a Word> {
    let after = |opt: &str| -> Vec<&'a Word> {
        args.iter()
            .enumerate()
            .filter(|(_, w)| w.text == opt)
            .filter_map(|(i, _)| args.get(i + 1))
            .collect()
    };
    match name {
        "printf" => after("-v"),
        "wait" => after("-p"),
        "test" | "[" => after("-v"),
        "unset" => args.iter().filter(|w| !w.text.starts_with('-')).collect(),
        // Every operand is a variable name (erring wide for option values such as `-p`).
        "read" | "getopts" | "mapfile" | "readarray" => {
            args.iter().filter(|w| !w.text.starts_with('-')).collect()
        }
        _ => Vec::new(),
    }
}

/// The text of `env -S` as a shell line: `\_` and `\t`-style escapes separate words (outside
/// quotes), and `\c` ends the string.
fn env_split_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('_' | 't' | 'n' | 'v' | 'f' | 'r') => out.push(' '),
            Some('c') | None => break,
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    out
}

/// Whether a sed script may write a file (`w FILE`, `W FILE`, the `w` flag of `s///`).
fn sed_writes(script: &str) -> bool {
    script.contains("w ") || script.contains("W ") || script.contains("w/") || script.ends_with('w')
}

/// A path whose content is produced as it is read: under `/dev` or `/proc` however spelled
/// (`//dev/stdin`, `/dev/../dev/fd/0`), or reached by climbing out of the working directory.
fn produced_on_the_fly(path: &str) -> bool {
    let normal = crate::path::normalize(std::path::Path::new(path));
    let special = |p: &std::path::Path| p.starts_with("/dev") || p.starts_with("/proc");
    if special(&normal) {
        return true;
    }
    normal.starts_with("..")
        && normal
            .components()
            .any(|c| matches!(c.as_os_str().to_str(), Some("dev" | "proc" | "fd")))
}

/// `bash`, and versioned names such as `bash5` or `bash-5.2`.
fn is_shell(name: &str) -> bool {
    let base = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    let base = base.strip_suffix('-').unwrap_or(base);
    SHELLS.contains(&name) || SHELLS.contains(&base)
}

/// `-c`, or a cluster of flags ending in `c` (`-lc`, `-qc`), whose value is the next word.
fn is_dash_c(t: &str) -> bool {
    t.strip_prefix('-').is_some_and(|f| {
        !f.starts_with('-') && f.ends_with('c') && f.chars().all(|c| c.is_ascii_alphabetic())
    })
}

fn is_name(n: &str) -> bool {
    let mut c = n.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

/// Single-quotes a word so re-parsing it yields the same word.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}
