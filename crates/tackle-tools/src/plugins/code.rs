//! Where a template's values land, judged when the manifest loads (issue #38).
//!
//! A value is data wherever it lands. The template is read the way the programs it names read
//! their arguments, and a placeholder is refused where a value would be anything but data:
//! - the program to run, or the program a wrapper runs (`env`, `sudo`, `timeout`, `xargs`,
//!   `find -exec`, …), or an argument of such a wrapper (its options, its `NAME=VALUE`
//!   environment, which an interpreter may read as code: `BASH_ENV`, `PYTHONSTARTUP`, …);
//! - code: the string of `sh -c`, `python -c`, `perl -e`, `node -e`, `ruby -e`, `osascript -e`,
//!   `pwsh -Command`, an `awk` program, a `sed` script, a `jq` filter, `vim -c`, `gdb -ex`, …;
//!   the script or module an interpreter runs; an option value that is a command
//!   (`git -c core.pager=…`, `tar --to-command`, `rsync -e`, `make CC=…`); anything after
//!   `ssh HOST`, `watch`, `su`, `parallel`, whose arguments become a shell line.
//!
//! A code string may take values only when the manifest declares its language
//! (`"code": {"2": "sh"}`) and that language is the one the program reads there: each value
//! then goes in as one string literal of the language ([`Language::quote`]). For `sh` the
//! placeholder must stand outside quotes in a plain line (no `$`, backquotes, `\`, brackets
//! or here-documents), and each command of that line is judged by the same rules in turn; for
//! `python` it must stand where an expression may, outside strings and comments.
//!
//! Whatever the load lets through, the host checks again before each start, on the real words
//! (`tackle_policy::shell::values_stay_data`). Errors here err wide: a name that looks like an
//! interpreter anywhere in the argv is read as one.

use super::template::{Element, Language, Segment};

/// One argv element as the checks see it (index 0 is the program).
#[derive(Clone)]
struct El {
    segments: Vec<Segment>,
    language: Option<Language>,
}

impl El {
    fn has_param(&self) -> bool {
        self.segments.iter().any(|s| matches!(s, Segment::Param(_)))
    }

    /// The whole text when the element holds no placeholder.
    fn literal(&self) -> Option<String> {
        let mut out = String::new();
        for s in &self.segments {
            match s {
                Segment::Literal(l) => out.push_str(l),
                Segment::Param(_) => return None,
            }
        }
        Some(out)
    }

    /// The literal text the element starts with (up to its first placeholder).
    fn head(&self) -> &str {
        match self.segments.first() {
            Some(Segment::Literal(l)) => l,
            _ => "",
        }
    }

    fn starts_with_param(&self) -> bool {
        matches!(self.segments.first(), Some(Segment::Param(_)))
    }
}

/// How a program's first operand is read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum First {
    /// Data.
    Data,
    /// Code in the program's language (an awk program, a sed script, a jq filter).
    Code,
    /// The script file the program runs.
    Script,
    /// A subcommand, which may be an alias or another program (`git x`).
    Subcommand,
}

/// A program that reads some of its arguments as code.
struct Spec {
    names: &'static [&'static str],
    /// Options whose value is code (`-c CODE`, `-cCODE`, `--eval=CODE`).
    code: &'static [&'static str],
    /// Flag letters that make the first operand code (`sh -c`, `bash -lc`).
    code_flags: &'static str,
    /// Options whose value names code to load or run (a file, a module, a config file).
    files: &'static [&'static str],
    /// Options with one data value.
    valued: &'static [&'static str],
    /// Options with two data values (`jq --arg NAME VALUE`).
    valued2: &'static [&'static str],
    first: First,
    /// Every argument after a code option is code too (`pwsh -Command a b c`).
    rest_code: bool,
    /// The language of its code, when a value may be quoted into it.
    language: Option<Language>,
    /// Operands `NAME=VALUE` set variables that may be commands (`make CC=…`).
    assignments: bool,
}

const fn spec(names: &'static [&'static str]) -> Spec {
    Spec {
        names,
        code: &[],
        code_flags: "",
        files: &[],
        valued: &[],
        valued2: &[],
        first: First::Data,
        rest_code: false,
        language: None,
        assignments: false,
    }
}

const SHELL_VALUED: &[&str] = &["-o", "+o", "-O", "+O"];
const SHELL_FILES: &[&str] = &["--rcfile", "--init-file"];

static SPECS: &[Spec] = &[
    Spec {
        code_flags: "c",
        files: SHELL_FILES,
        valued: SHELL_VALUED,
        first: First::Script,
        language: Some(Language::Sh),
        ..spec(&[
            "sh",
            "bash",
            "dash",
            "ash",
            "ksh",
            "mksh",
            "pdksh",
            "oksh",
            "loksh",
            "posh",
            "yash",
            "rbash",
            "zsh",
            "busybox-sh",
        ])
    },
    Spec {
        code: &["-c", "--command", "-C", "--init-command"],
        first: First::Script,
        ..spec(&[
            "fish", "csh", "tcsh", "elvish", "nu", "nushell", "xonsh", "rc", "es", "ion",
        ])
    },
    Spec {
        code: &["-c"],
        files: &["-m"],
        valued: &["-W", "-X", "-Q"],
        first: First::Script,
        language: Some(Language::Python),
        ..spec(&["python", "pypy", "python-dbg", "ipython", "bpython"])
    },
    Spec {
        code: &["-e", "-E"],
        files: &["-M", "-m", "-I", "-d", "-x"],
        valued: &["-l", "-0", "-i"],
        first: First::Script,
        ..spec(&["perl"])
    },
    Spec {
        code: &["-e"],
        files: &["-r", "-I", "--require"],
        valued: &["-E", "--encoding", "-C"],
        first: First::Script,
        ..spec(&["ruby", "jruby", "truffleruby", "irb"])
    },
    Spec {
        code: &["-e", "--eval", "-p", "--print"],
        files: &[
            "-r",
            "--require",
            "--import",
            "--loader",
            "--experimental-loader",
            "-C",
            "--conditions",
        ],
        valued: &["--max-old-space-size", "--stack-size", "--title"],
        first: First::Script,
        ..spec(&["node", "nodejs", "bun", "qjs", "d8"])
    },
    Spec {
        first: First::Subcommand,
        code: &["--eval"],
        ..spec(&["deno"])
    },
    Spec {
        code: &["-r", "-R", "-B", "-E"],
        files: &["-f", "-c", "-d", "-z"],
        first: First::Script,
        ..spec(&["php", "php-cli"])
    },
    Spec {
        code: &["-e"],
        files: &["-l"],
        first: First::Script,
        ..spec(&["lua", "luajit", "texlua"])
    },
    Spec {
        code: &["-c"],
        files: &["-f"],
        first: First::Script,
        ..spec(&["expect", "tclsh", "wish", "jimsh"])
    },
    Spec {
        code: &["-e", "--eval", "-E", "--print"],
        files: &["-L", "--load"],
        first: First::Script,
        ..spec(&["rscript", "r", "julia"])
    },
    Spec {
        code: &[
            "--eval",
            "-eval",
            "-f",
            "--funcall",
            "-funcall",
            "--execute",
        ],
        files: &["-l", "--load", "-load", "--script", "-script", "-x"],
        ..spec(&["emacs", "emacsclient", "xemacs"])
    },
    Spec {
        code: &["-e"],
        valued: &["-l", "-s"],
        first: First::Script,
        ..spec(&["osascript"])
    },
    Spec {
        code: &[
            "-c",
            "-command",
            "-encodedcommand",
            "-e",
            "-ec",
            "-cwa",
            "-commandwithargs",
        ],
        files: &["-f", "-file", "-configurationfile", "-settingsfile"],
        valued: &["-executionpolicy", "-ex", "-workingdirectory", "-wd"],
        first: First::Code,
        rest_code: true,
        ..spec(&["pwsh", "powershell", "pwsh-preview"])
    },
    Spec {
        code: &["-e"],
        files: &["-cp", "-classpath", "--classpath"],
        first: First::Script,
        ..spec(&[
            "groovy",
            "scala",
            "kotlin",
            "kotlinc",
            "jrunscript",
            "jjs",
            "clojure",
            "clj",
            "bb",
            "guile",
            "racket",
            "sbcl",
            "clisp",
            "ghci",
            "runghc",
            "ocaml",
            "swift",
            "dotnet-script",
        ])
    },
    Spec {
        code: &["-e", "--source"],
        files: &["-f", "--file", "-i", "--include", "-l", "--load"],
        valued: &["-F", "-v", "--assign", "--field-separator"],
        first: First::Code,
        ..spec(&["awk", "gawk", "mawk", "nawk", "busybox-awk", "goawk"])
    },
    Spec {
        code: &["-e", "--expression"],
        files: &["-f", "--file"],
        valued: &["-l", "--line-length"],
        first: First::Code,
        ..spec(&["sed", "gsed", "busybox-sed"])
    },
    Spec {
        files: &["-f", "--from-file", "-L"],
        valued: &["--indent", "--tab"],
        valued2: &[
            "--arg",
            "--argjson",
            "--slurpfile",
            "--rawfile",
            "--jsonargs",
        ],
        first: First::Code,
        ..spec(&["jq", "gojq", "jaq", "yq", "gron"])
    },
    Spec {
        code: &["-c", "--cmd", "+"],
        files: &["-S", "-s", "-u", "-U", "-W", "-w"],
        ..spec(&[
            "vim", "vi", "nvim", "gvim", "view", "ex", "vimdiff", "rvim", "gview",
        ])
    },
    Spec {
        code: &[
            "-ex",
            "--ex",
            "-iex",
            "--iex",
            "-eval-command",
            "--eval-command",
            "-init-eval-command",
            "--init-eval-command",
        ],
        files: &[
            "-x",
            "--x",
            "-ix",
            "--ix",
            "-command",
            "--command",
            "-init-command",
            "--init-command",
        ],
        ..spec(&["gdb", "gdb-multiarch", "lldb"])
    },
    Spec {
        code: &[
            "-c",
            "--config-env",
            "--upload-pack",
            "--receive-pack",
            "--exec",
        ],
        files: &["--exec-path", "--template"],
        valued: &["-C", "--git-dir", "--work-tree", "--namespace"],
        first: First::Subcommand,
        ..spec(&["git"])
    },
    Spec {
        code: &[
            "-I",
            "--use-compress-program",
            "--to-command",
            "--rsh-command",
            "--rmt-command",
            "--info-script",
            "--new-volume-script",
            "-F",
            "--checkpoint-action",
        ],
        ..spec(&["tar", "gtar", "bsdtar"])
    },
    Spec {
        code: &["-e", "--rsh", "--rsync-path"],
        ..spec(&["rsync"])
    },
    Spec {
        code: &["-S", "-o", "-D"],
        files: &["-F", "-i"],
        ..spec(&["scp", "sftp"])
    },
    Spec {
        code: &["-TT", "--unzip-command"],
        ..spec(&["zip"])
    },
    Spec {
        code: &["--eval", "-E"],
        files: &["-f", "--file", "--makefile", "-I", "--include-dir"],
        assignments: true,
        ..spec(&["make", "gmake", "bmake", "remake"])
    },
    Spec {
        code: &["-D", "-P", "-C"],
        ..spec(&["cmake"])
    },
    Spec {
        code: &["-cmd"],
        files: &["-init"],
        first: First::Data,
        ..spec(&["sqlite3", "sqlite", "duckdb"])
    },
];

/// Options that give the program itself (so the operands are its arguments).
const PROGRAM_FILES: &[&str] = &[
    "-f",
    "--file",
    "--from-file",
    "-m",
    "-file",
    "--script",
    "-script",
];

/// A program that runs code in a language of its own (not `git`, `tar`, …).
fn interpreter(s: &Spec) -> bool {
    s.language.is_some() || matches!(s.first, First::Script | First::Code)
}

/// An option element (`-W{{v}}`, `--indent={{n}}`) whose option takes a data value.
fn data_option(head: &str, s: &Spec) -> bool {
    let opt: String = if head.starts_with("--") {
        head.split_once('=').map_or(head, |(o, _)| o).to_string()
    } else {
        // `-W{{v}}`, `-vx={{v}}`: the first letter is the option.
        head.chars().take(2).collect()
    };
    s.valued.contains(&opt.as_str())
}

/// Programs that run another program given after their own arguments.
struct Wrapper {
    names: &'static [&'static str],
    valued: &'static [&'static str],
    /// Operands before the program (`timeout DURATION`, `chroot DIR`).
    positional: usize,
    /// `NAME=VALUE` operands before the program set its environment.
    assignments: bool,
}

const fn wrapper(names: &'static [&'static str], valued: &'static [&'static str]) -> Wrapper {
    Wrapper {
        names,
        valued,
        positional: 0,
        assignments: false,
    }
}

static WRAPPERS: &[Wrapper] = &[
    Wrapper {
        assignments: true,
        ..wrapper(
            &["env"],
            &["-u", "--unset", "-C", "--chdir", "-S", "--split-string"],
        )
    },
    Wrapper {
        assignments: true,
        ..wrapper(
            &["sudo", "doas", "pkexec", "run0"],
            &[
                "-u",
                "-g",
                "-C",
                "-D",
                "-h",
                "-p",
                "-r",
                "-t",
                "-U",
                "-T",
                "--user",
                "--group",
                "--chdir",
                "--host",
                "--prompt",
                "--role",
                "--type",
                "--other-user",
            ],
        )
    },
    wrapper(&["nice"], &["-n", "--adjustment"]),
    Wrapper {
        positional: 1,
        ..wrapper(
            &["timeout", "gtimeout"],
            &["-s", "-k", "--signal", "--kill-after"],
        )
    },
    wrapper(
        &[
            "nohup",
            "setsid",
            "unbuffer",
            "catchsegv",
            "nocache",
            "command",
            "exec",
            "builtin",
            "busybox",
            "fakeroot",
            "torsocks",
            "proxychains",
            "proxychains4",
            "caffeinate",
            "rlwrap",
            "sshpass",
            "dbus-run-session",
            "xvfb-run",
            "eatmydata",
            "faketime",
            "firejail",
            "unshare",
            "nsenter",
            "setpriv",
            "systemd-run",
            "valgrind",
            "arch",
            "linux32",
            "linux64",
            "setarch",
        ],
        &[
            "-p", "-f", "-u", "-t", "-m", "-n", "-e", "-o", "-s", "-w", "-x",
        ],
    ),
    wrapper(&["time"], &["-f", "-o", "--format", "--output"]),
    wrapper(
        &["stdbuf"],
        &["-i", "-o", "-e", "--input", "--output", "--error"],
    ),
    Wrapper {
        positional: 1,
        ..wrapper(&["chroot"], &["--userspec", "--groups"])
    },
    Wrapper {
        positional: 1,
        ..wrapper(&["taskset", "chrt", "gosu", "su-exec", "sg", "chpst"], &[])
    },
    wrapper(&["ionice"], &["-c", "-n", "--class", "--classdata"]),
    wrapper(
        &["strace", "ltrace"],
        &[
            "-e", "-o", "-p", "-s", "-u", "-E", "-a", "-b", "-O", "-S", "-P", "-I", "-X",
        ],
    ),
    Wrapper {
        positional: 1,
        ..wrapper(
            &["flock"],
            &[
                "-w",
                "-E",
                "--timeout",
                "--conflict-exit-code",
                "-c",
                "--command",
            ],
        )
    },
    wrapper(
        &["xargs"],
        &[
            "-I",
            "-i",
            "-a",
            "-d",
            "-E",
            "-e",
            "-L",
            "-l",
            "-n",
            "-P",
            "-s",
            "--arg-file",
            "--delimiter",
            "--eof",
            "--replace",
            "--max-lines",
            "--max-args",
            "--max-procs",
            "--max-chars",
            "--process-slot-var",
        ],
    ),
];

/// Programs whose arguments (after the first few) become a shell command line or commands.
const SHELL_LINES: &[&str] = &[
    "ssh",
    "slogin",
    "mosh",
    "autossh",
    "watch",
    "su",
    "runuser",
    "script",
    "parallel",
    "tmux",
    "screen",
    "eval",
    "source",
    "docker-compose",
    "kubectl",
];

/// The program name the way the tables spell it: base name, lower case, without a version
/// (`/usr/bin/python3.12` is `python`).
fn norm(text: &str) -> String {
    let base = text
        .rsplit('/')
        .find(|s| !s.is_empty())
        .unwrap_or(text)
        .to_ascii_lowercase();
    let trimmed = base.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    let trimmed = trimmed.strip_suffix('-').unwrap_or(trimmed);
    if trimmed.is_empty() {
        base
    } else {
        trimmed.to_string()
    }
}

fn find_spec(name: &str) -> Option<&'static Spec> {
    SPECS.iter().find(|s| s.names.contains(&name))
}

fn find_wrapper(name: &str) -> Option<&'static Wrapper> {
    WRAPPERS.iter().find(|w| w.names.contains(&name))
}

/// Whether `text` is `NAME=…` with a shell variable name.
fn is_assignment(text: &str) -> bool {
    match text.split_once('=') {
        Some((name, _)) => {
            let mut chars = name.chars();
            chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

/// Every problem, as (argv index, message). `elements` are the template after `argv[0]`.
pub(crate) fn check(program: &str, elements: &[Element]) -> Vec<(usize, String)> {
    let mut els = vec![El {
        segments: vec![Segment::Literal(program.to_string())],
        language: None,
    }];
    els.extend(elements.iter().map(|e| El {
        segments: e.segments.clone(),
        language: e.language,
    }));
    let mut scan = Scan::new(&els);
    scan.program(0);
    scan.fallback();
    for (i, el) in els.iter().enumerate() {
        if let Some(language) = el.language {
            if !scan.code_checked.contains(&i) {
                scan.refuse(
                    i,
                    format!(
                        "declared {} code, but the program does not read this argument as code",
                        language.name()
                    ),
                );
            }
        }
    }
    scan.problems
}

struct Scan<'a> {
    els: &'a [El],
    visited: Vec<bool>,
    problems: Vec<(usize, String)>,
    code_checked: Vec<usize>,
    depth: usize,
}

impl<'a> Scan<'a> {
    fn new(els: &'a [El]) -> Self {
        Self {
            els,
            visited: vec![false; els.len()],
            problems: Vec::new(),
            code_checked: Vec::new(),
            depth: 0,
        }
    }

    fn refuse(&mut self, i: usize, message: String) {
        if !self.problems.iter().any(|(j, _)| *j == i) {
            self.problems.push((i, message));
        }
    }

    fn param_at(&self, i: usize) -> bool {
        self.els.get(i).is_some_and(El::has_param)
    }

    /// A literal that names an interpreter, a shell line or a code-reading program anywhere in
    /// the argv is read as one (a wrapper's options may hide where its program starts).
    fn fallback(&mut self) {
        for i in 1..self.els.len() {
            if self.visited.get(i).copied().unwrap_or(true) {
                continue;
            }
            let Some(text) = self.els.get(i).and_then(El::literal) else {
                continue;
            };
            let name = norm(&text);
            if find_spec(&name).is_some_and(interpreter) || SHELL_LINES.contains(&name.as_str()) {
                self.program(i);
            }
        }
    }

    /// The program that starts at argv index `i`.
    fn program(&mut self, i: usize) {
        if self.depth > 16 || i >= self.els.len() {
            return;
        }
        self.depth += 1;
        if let Some(v) = self.visited.get_mut(i) {
            *v = true;
        }
        match self.els.get(i).and_then(El::literal) {
            None => self.refuse(
                i,
                "a value would name the program to run; the program must be literal".into(),
            ),
            Some(text) => {
                let name = norm(&text);
                if let Some(w) = find_wrapper(&name) {
                    self.wrapped(i, &name, w);
                } else if SHELL_LINES.contains(&name.as_str()) {
                    for j in i + 1..self.els.len() {
                        if let Some(v) = self.visited.get_mut(j) {
                            *v = true;
                        }
                        if self.param_at(j) {
                            self.refuse(j, format!("`{name}` runs its arguments as commands (a shell line, a remote command), so a value here would be code"));
                        }
                    }
                } else if name == "find" {
                    self.find(i);
                } else if let Some(s) = find_spec(&name) {
                    self.coded(i, &name, s);
                    // The rest are its arguments, judged by its rules (`sh -c '…' sh {{v}}`).
                    for v in self.visited.iter_mut().skip(i + 1) {
                        *v = true;
                    }
                }
            }
        }
        self.depth -= 1;
    }

    /// `find … -exec PROGRAM … ;`: the program and its arguments are a command.
    fn find(&mut self, i: usize) {
        let mut j = i + 1;
        while j < self.els.len() {
            let lit = self.els.get(j).and_then(El::literal);
            if matches!(
                lit.as_deref(),
                Some("-exec" | "-execdir" | "-ok" | "-okdir")
            ) {
                self.program(j + 1);
                j += 2;
                while j < self.els.len()
                    && !matches!(
                        self.els.get(j).and_then(El::literal).as_deref(),
                        Some(";" | "+")
                    )
                {
                    j += 1;
                }
            }
            j += 1;
        }
    }

    /// A wrapper at `i`: every value among its own arguments is refused (it could be an
    /// option, an environment variable or the program), then the program it runs is read.
    fn wrapped(&mut self, i: usize, name: &str, w: &Wrapper) {
        let mut j = i + 1;
        let mut positional = w.positional;
        let mut ended = false;
        while j < self.els.len() {
            if let Some(v) = self.visited.get_mut(j) {
                *v = true;
            }
            let Some(el) = self.els.get(j) else { break };
            let lit = el.literal();
            if el.has_param() {
                let why = if w.assignments && is_assignment(el.head()) {
                    format!("a value would set an environment variable through `{name}`; one the program reads as code (`BASH_ENV`, `PYTHONSTARTUP`, `NODE_OPTIONS`, …) would run it")
                } else {
                    format!("a value here could become an option of `{name}`, an environment variable or the program it runs")
                };
                self.refuse(j, why);
                j += 1;
                continue;
            }
            let text = lit.unwrap_or_default();
            if !ended && text == "--" {
                ended = true;
                j += 1;
                continue;
            }
            if !ended && text.starts_with('-') && text.len() > 1 {
                let valued = w.valued.contains(&text.as_str());
                j += if valued { 2 } else { 1 };
                if valued && self.param_at(j - 1) {
                    self.refuse(
                        j - 1,
                        format!("a value here is an option value of `{name}`, which may change what it runs"),
                    );
                }
                continue;
            }
            if w.assignments && is_assignment(&text) {
                j += 1;
                continue;
            }
            if positional > 0 {
                positional -= 1;
                j += 1;
                continue;
            }
            self.program(j);
            return;
        }
    }

    /// A program with code arguments at `i`.
    fn coded(&mut self, i: usize, name: &str, s: &Spec) {
        let pwsh = s.names.contains(&"pwsh");
        let matches = |opt: &str, text: &str| {
            if pwsh {
                opt.eq_ignore_ascii_case(text)
            } else {
                opt == text
            }
        };
        let mut j = i + 1;
        let mut ended = false;
        let mut code_given = false;
        let mut operands = 0usize;
        while j < self.els.len() {
            let Some(el) = self.els.get(j).cloned() else {
                break;
            };
            let head = el.head().to_string();
            let lit = el.literal();
            if !ended && lit.as_deref() == Some("--") {
                ended = true;
                j += 1;
                continue;
            }
            if code_given && s.rest_code {
                self.code(j, name, s);
                j += 1;
                continue;
            }
            // `-{{v}}`, `+{{v}}`: the value would choose the options (`-c…`, vim's `+cmd`).
            if !ended && (head == "-" || head == "+") && el.has_param() {
                self.refuse(
                    j,
                    format!("a value would choose options of `{name}`, some of which run code"),
                );
                j += 1;
                continue;
            }
            let option = !ended
                && head.len() > 1
                && (head.starts_with('-') || (head.starts_with('+') && s.code.contains(&"+")));
            if option {
                let whole = lit.as_deref();
                if let Some(t) = whole {
                    if s.code.iter().any(|o| matches(o, t)) {
                        code_given = true;
                        self.code(j + 1, name, s);
                        j += 2;
                        continue;
                    }
                    if s.files.iter().any(|o| matches(o, t)) {
                        if PROGRAM_FILES.iter().any(|o| matches(o, t)) {
                            code_given = true;
                        }
                        if self.param_at(j + 1) {
                            self.refuse(j + 1, format!("a value here names code that `{name}` loads or runs (a script, a module, a configuration)"));
                        }
                        j += 2;
                        continue;
                    }
                    if s.valued.iter().any(|o| matches(o, t)) {
                        j += 2;
                        continue;
                    }
                    if s.valued2.iter().any(|o| matches(o, t)) {
                        j += 3;
                        continue;
                    }
                }
                // `--eval=CODE`, `-cCODE`, `-lc`, `-e'…'`, `+CMD`.
                let (attached_code, flag_code, next_code) = self.attached(&head, whole, s);
                if attached_code && el.has_param() {
                    self.refuse(
                        j,
                        format!(
                            "a value would be spliced into `{name}` code given with this option"
                        ),
                    );
                } else if el.has_param() && interpreter(s) && !data_option(&head, s) {
                    self.refuse(j, format!("a value would be spliced into an option of `{name}`, where it could add options that run code"));
                }
                if attached_code {
                    code_given = true;
                }
                if flag_code {
                    code_given = true;
                    // `sh -c`: the first operand is the code.
                    j += 1;
                    self.first_code_operand(&mut j, name, s);
                    continue;
                }
                if next_code {
                    code_given = true;
                    self.code(j + 1, name, s);
                    j += 2;
                    continue;
                }
                j += 1;
                continue;
            }
            // An operand (a value that starts an element is refused at call time if it starts
            // with `-`, so it is one).
            operands += 1;
            if s.assignments && is_assignment(&head) && el.has_param() {
                self.refuse(
                    j,
                    format!(
                        "a value would set a `{name}` variable, which may be a command it runs"
                    ),
                );
            }
            if operands == 1 && !code_given {
                match s.first {
                    First::Data => {}
                    First::Code => self.code(j, name, s),
                    First::Script => {
                        if el.has_param() {
                            self.refuse(
                                j,
                                format!("a value would choose the script `{name}` runs"),
                            );
                        }
                        return;
                    }
                    First::Subcommand => {
                        if el.has_param() {
                            self.refuse(j, format!("a value would name the `{name}` subcommand, which may be an alias or another program"));
                        } else if name == "deno" && matches!(lit.as_deref(), Some("eval")) {
                            self.code(j + 1, name, s);
                            return;
                        } else if name == "deno" && matches!(lit.as_deref(), Some("run")) {
                            if self.param_at(j + 1) {
                                self.refuse(
                                    j + 1,
                                    format!("a value would choose the script `{name}` runs"),
                                );
                            }
                            return;
                        }
                    }
                }
                if s.first == First::Code || s.first == First::Script {
                    return;
                }
            }
            if operands == 1 && code_given && s.first != First::Subcommand {
                // Code was given with an option: the operands are data.
                return;
            }
            j += 1;
        }
    }

    /// After `sh -c` (or `bash -lc`): the first operand is code, the rest data.
    fn first_code_operand(&mut self, j: &mut usize, name: &str, s: &Spec) {
        while *j < self.els.len() {
            let lit = self.els.get(*j).and_then(El::literal);
            match lit.as_deref() {
                Some("--") => *j += 1,
                Some(t) if t.starts_with(['-', '+']) && t.len() > 1 => {
                    *j += if s.valued.contains(&t) || s.files.contains(&t) {
                        2
                    } else {
                        1
                    };
                }
                _ => {
                    self.code(*j, name, s);
                    // `sh -c 'eval "$1"' sh {{v}}`: the line runs its own arguments.
                    if lit.as_deref().is_some_and(runs_its_arguments) {
                        for k in *j + 1..self.els.len() {
                            if self.param_at(k) {
                                self.refuse(k, format!("the `{name}` line runs its arguments as commands or code (`eval`, `\"$1\"` as a command, a shell reading its input), so a value here would be code"));
                            }
                        }
                    }
                    *j = self.els.len();
                }
            }
        }
    }

    /// How an option element gives code: (code attached to it, a flag that makes the first
    /// operand code, code in the next element).
    fn attached(&self, head: &str, whole: Option<&str>, s: &Spec) -> (bool, bool, bool) {
        // `--eval=CODE`
        if let Some((opt, _)) = head.split_once('=') {
            if opt.starts_with("--") || opt.starts_with('-') && opt.len() > 2 {
                let hit = s.code.contains(&opt) || s.files.contains(&opt);
                return (hit, false, false);
            }
        }
        if head.starts_with('+') {
            // `vim +CMD`
            return (s.code.contains(&"+"), false, false);
        }
        if head.starts_with("--") {
            return (false, false, false);
        }
        // A cluster of one-letter options: `-lc`, `-ne`, `-cCODE`, `-Mmodule`.
        let letters = head.strip_prefix('-').unwrap_or("");
        for (k, c) in letters.char_indices() {
            let opt = format!("-{c}");
            let rest = letters.get(k + c.len_utf8()..).unwrap_or("");
            let ends = rest.is_empty() && whole.is_some();
            if s.code_flags.contains(c) {
                return (false, true, false);
            }
            if s.code.contains(&opt.as_str()) || s.files.contains(&opt.as_str()) {
                return if ends {
                    (false, false, s.code.contains(&opt.as_str()))
                } else {
                    (true, false, false)
                };
            }
            if s.valued.contains(&opt.as_str()) {
                return (false, false, false);
            }
            if !c.is_ascii_alphanumeric() {
                return (false, false, false);
            }
        }
        (false, false, false)
    }

    /// Element `j` is code of `name`.
    fn code(&mut self, j: usize, name: &str, s: &Spec) {
        let Some(el) = self.els.get(j).cloned() else {
            return;
        };
        if let Some(v) = self.visited.get_mut(j) {
            *v = true;
        }
        if !el.has_param() {
            if el.language.is_some() {
                self.code_checked.push(j);
            }
            return;
        }
        let Some(declared) = el.language else {
            let hint = match s.language {
                Some(l) => format!(" (or declare it `\"code\": {{\"{j}\": \"{}\"}}` to have each value quoted as a {} string)", l.name(), l.name()),
                None => String::new(),
            };
            self.refuse(
                j,
                format!("a value would be spliced into `{name}` code, where it could run anything; pass it as a separate argument instead{hint}"),
            );
            return;
        };
        self.code_checked.push(j);
        if s.language != Some(declared) {
            self.refuse(
                j,
                format!(
                    "declared {} code, but `{name}` does not read this argument as {}",
                    declared.name(),
                    declared.name()
                ),
            );
            return;
        }
        let verdict = match declared {
            Language::Sh => self.sh_line(&el),
            Language::Python => python_places(&el.segments),
        };
        if let Err(why) = verdict {
            self.refuse(j, why.to_string());
        }
    }

    /// A declared `sh` line: each placeholder stands outside quotes in a plain line, and each
    /// command of the line takes its values as data by the same rules.
    fn sh_line(&self, el: &El) -> Result<(), UnsafeSplice> {
        let commands = sh_commands(&el.segments)?;
        for words in commands {
            if !words.iter().any(El::has_param) {
                continue;
            }
            // Assignments before the command (`X={{v}} cmd`) set its environment.
            let start = words
                .iter()
                .position(|w| !is_assignment(w.head()) || w.starts_with_param())
                .unwrap_or(words.len());
            if words.iter().take(start).any(El::has_param) {
                return Err(UnsafeSplice::Environment);
            }
            let rest = words.get(start..).unwrap_or(&[]);
            let mut inner = Scan::new(rest);
            inner.depth = self.depth + 1;
            inner.program(0);
            inner.fallback();
            if let Some((_, why)) = inner.problems.first() {
                return Err(UnsafeSplice::InCommand(why.clone()));
            }
        }
        Ok(())
    }
}

/// Why a value may not be spliced where a declared `sh` line or Python string puts it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum UnsafeSplice {
    #[error("a value would set an environment variable of a command in the line, which the program may read as code")]
    Environment,
    /// A command of the line failed the same check as a program's own arguments.
    #[error("in the sh line: {0}")]
    InCommand(String),
    #[error("a value would name a file the sh line redirects to or from")]
    RedirectTarget,
    #[error("`{{{{{0}}}}}` stands inside quotes or a comment of the sh line; put it outside quotes, where the quoted value is one word")]
    ShQuoted(String),
    #[error("the sh line uses `{0}`, which this check does not read; only plain lines may take quoted values")]
    ShUnread(char),
    #[error("the sh line has a redirection without a target")]
    NoRedirectTarget,
    #[error("the sh line leaves a quote open")]
    ShOpenQuote,
    #[error("`{{{{{0}}}}}` stands inside a string or comment of the Python code; put it where an expression goes (`print({{{{{0}}}}})`): the value becomes one string literal")]
    PythonQuoted(String),
    #[error("`{{{{{0}}}}}` follows a name in the Python code; it must start an expression")]
    PythonAfterName(String),
    #[error("a Python string is not closed on its line")]
    PythonLineOpen,
    #[error("the Python code holds an f-string, which this check does not read")]
    PythonFString,
    #[error("a Python string is not closed")]
    PythonOpen,
}

/// Whether a literal sh line runs its positional arguments: one is a command word
/// (`"$1" x`), or goes to `eval`, `source`, a shell or an interpreter (`sh -c "$1"`,
/// `python3 -c "$@"`), or a shell or interpreter reads its commands from a pipe.
/// Text in single quotes (`awk '{print $1}'`) is left out. Errs wide.
fn runs_its_arguments(code: &str) -> bool {
    let mut unquoted = String::new();
    let mut single = false;
    for c in code.chars() {
        if c == '\'' {
            // The quoted text stays one word (`awk 'PROGRAM' "$1"`), without its `$`s.
            single = !single;
            unquoted.push('q');
        } else if !single {
            unquoted.push(c);
        }
    }
    let separators = |c: char| matches!(c, ';' | '&' | '|' | '\n' | '(' | ')' | '{' | '}' | '`');
    let positional = |t: &str| {
        [
            "$1", "$2", "$3", "$4", "$5", "$6", "$7", "$8", "$9", "$@", "$*", "${",
        ]
        .iter()
        .any(|p| t.contains(p))
    };
    const KEYWORDS: &[&str] = &[
        "then", "do", "else", "elif", "if", "while", "until", "!", "time", "exec", "command",
        "builtin",
    ];
    let piped = unquoted.contains('|');
    for segment in unquoted.split(separators) {
        let words: Vec<&str> = segment
            .split_whitespace()
            .skip_while(|w| KEYWORDS.contains(w) || (is_assignment(w) && !positional(w)))
            .collect();
        let Some(first) = words.first() else { continue };
        let name = norm(first.trim_matches('"'));
        if matches!(name.as_str(), "eval" | "source" | "." | "trap") && positional(segment) {
            return true;
        }
        // The command read by the same rules, each word holding an argument a value.
        let els: Vec<El> = words
            .iter()
            .map(|w| El {
                segments: vec![if positional(w) {
                    Segment::Param("arg".into())
                } else {
                    Segment::Literal(w.trim_matches('"').to_string())
                }],
                language: None,
            })
            .collect();
        let mut scan = Scan::new(&els);
        scan.program(0);
        scan.fallback();
        if !scan.problems.is_empty() {
            return true;
        }
        // `… | sh`: a shell or interpreter reading its program from the pipe.
        if piped
            && find_spec(&name).is_some_and(interpreter)
            && words.iter().skip(1).all(|w| w.starts_with('-'))
        {
            return true;
        }
    }
    false
}

/// The commands of a plain sh line, as words; a placeholder must stand outside quotes.
fn sh_commands(segments: &[Segment]) -> Result<Vec<Vec<El>>, UnsafeSplice> {
    #[derive(PartialEq)]
    enum Q {
        None,
        Single,
        Double,
        Comment,
    }
    let mut commands: Vec<Vec<El>> = Vec::new();
    let mut words: Vec<El> = Vec::new();
    let mut word: Vec<Segment> = Vec::new();
    let mut in_word = false;
    let mut redirect_next = false;
    let mut q = Q::None;
    let mut after_redirect = false;
    let push_lit = |word: &mut Vec<Segment>, c: char| match word.last_mut() {
        Some(Segment::Literal(l)) => l.push(c),
        _ => word.push(Segment::Literal(c.to_string())),
    };
    let end_word = |words: &mut Vec<El>,
                    word: &mut Vec<Segment>,
                    in_word: &mut bool,
                    redirect_next: &mut bool|
     -> Result<(), UnsafeSplice> {
        if *in_word {
            let el = El {
                segments: std::mem::take(word),
                language: None,
            };
            if *redirect_next {
                if el.has_param() {
                    return Err(UnsafeSplice::RedirectTarget);
                }
                *redirect_next = false;
            } else {
                words.push(el);
            }
        }
        *in_word = false;
        Ok(())
    };
    for seg in segments {
        match seg {
            Segment::Param(p) => {
                after_redirect = false;
                if q != Q::None {
                    return Err(UnsafeSplice::ShQuoted(p.clone()));
                }
                word.push(Segment::Param(p.clone()));
                in_word = true;
            }
            Segment::Literal(text) => {
                for c in text.chars() {
                    // `>&2`, `2>&1`: the `&` belongs to the redirection.
                    let redirect_amp = after_redirect && c == '&' && q == Q::None;
                    after_redirect = q == Q::None && matches!(c, '<' | '>');
                    if redirect_amp {
                        continue;
                    }
                    match q {
                        Q::Comment => {
                            if c == '\n' {
                                q = Q::None;
                                end_word(&mut words, &mut word, &mut in_word, &mut redirect_next)?;
                                commands.push(std::mem::take(&mut words));
                            }
                        }
                        Q::Single => {
                            if c == '\'' {
                                q = Q::None;
                            } else {
                                push_lit(&mut word, c);
                            }
                        }
                        Q::Double => {
                            if c == '"' {
                                q = Q::None;
                            } else if matches!(c, '$' | '`' | '\\') {
                                return Err(UnsafeSplice::ShUnread(c));
                            } else {
                                push_lit(&mut word, c);
                            }
                        }
                        Q::None => match c {
                            '\'' => {
                                q = Q::Single;
                                in_word = true;
                            }
                            '"' => {
                                q = Q::Double;
                                in_word = true;
                            }
                            '#' if !in_word => q = Q::Comment,
                            ' ' | '\t' => {
                                end_word(&mut words, &mut word, &mut in_word, &mut redirect_next)?
                            }
                            '\n' | ';' | '&' | '|' => {
                                end_word(&mut words, &mut word, &mut in_word, &mut redirect_next)?;
                                if redirect_next {
                                    return Err(UnsafeSplice::NoRedirectTarget);
                                }
                                commands.push(std::mem::take(&mut words));
                            }
                            '<' | '>' => {
                                // `2>`: the digits before are the descriptor, not a word.
                                let fd = word.iter().all(|s| matches!(s, Segment::Literal(l) if l.chars().all(|c| c.is_ascii_digit())));
                                if in_word && fd {
                                    word.clear();
                                    in_word = false;
                                } else {
                                    end_word(
                                        &mut words,
                                        &mut word,
                                        &mut in_word,
                                        &mut redirect_next,
                                    )?;
                                }
                                redirect_next = true;
                            }
                            '$' | '`' | '\\' | '(' | ')' | '{' | '}' | '*' | '?' | '[' | ']'
                            | '~' | '!' => {
                                return Err(UnsafeSplice::ShUnread(c));
                            }
                            c => {
                                push_lit(&mut word, c);
                                in_word = true;
                            }
                        },
                    }
                }
            }
        }
    }
    if q == Q::Single || q == Q::Double {
        return Err(UnsafeSplice::ShOpenQuote);
    }
    end_word(&mut words, &mut word, &mut in_word, &mut redirect_next)?;
    if redirect_next {
        return Err(UnsafeSplice::NoRedirectTarget);
    }
    commands.push(words);
    Ok(commands)
}

/// A declared Python string: each placeholder stands where an expression may (outside
/// strings and comments, not right after a name, which would make a string prefix).
fn python_places(segments: &[Segment]) -> Result<(), UnsafeSplice> {
    enum S {
        Code,
        Comment,
        Str { quote: char, triple: bool },
    }
    let mut state = S::Code;
    let mut prev: Option<char> = None;
    let mut ident = String::new();
    for seg in segments {
        match seg {
            Segment::Param(p) => {
                if !matches!(state, S::Code) {
                    return Err(UnsafeSplice::PythonQuoted(p.clone()));
                }
                if prev.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.' || c == '\\') {
                    return Err(UnsafeSplice::PythonAfterName(p.clone()));
                }
                // A quoted value is a closed literal: what follows is code again.
                prev = Some('\'');
                ident.clear();
            }
            Segment::Literal(text) => {
                let chars: Vec<char> = text.chars().collect();
                let mut k = 0;
                while let Some(&c) = chars.get(k) {
                    match state {
                        S::Comment => {
                            if c == '\n' {
                                state = S::Code;
                            }
                        }
                        S::Str { quote, triple } => {
                            if c == '\\' {
                                k += 1;
                            } else if c == quote {
                                let closes = !triple
                                    || (chars.get(k + 1) == Some(&quote)
                                        && chars.get(k + 2) == Some(&quote));
                                if closes {
                                    if triple {
                                        k += 2;
                                    }
                                    state = S::Code;
                                }
                            } else if c == '\n' && !triple {
                                return Err(UnsafeSplice::PythonLineOpen);
                            }
                        }
                        S::Code => {
                            if c == '#' {
                                state = S::Comment;
                            } else if c == '\'' || c == '"' {
                                if ident
                                    .chars()
                                    .any(|p| p == 'f' || p == 'F' || p == 't' || p == 'T')
                                {
                                    return Err(UnsafeSplice::PythonFString);
                                }
                                let triple =
                                    chars.get(k + 1) == Some(&c) && chars.get(k + 2) == Some(&c);
                                if triple {
                                    k += 2;
                                }
                                state = S::Str { quote: c, triple };
                            }
                            if c.is_alphanumeric() || c == '_' {
                                ident.push(c);
                            } else {
                                ident.clear();
                            }
                        }
                    }
                    prev = Some(c);
                    k += 1;
                }
            }
        }
    }
    match state {
        S::Str { .. } => Err(UnsafeSplice::PythonOpen),
        _ => Ok(()),
    }
}
