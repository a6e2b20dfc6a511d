//! Programs that are not wrappers but still run commands given as option values or inline
//! code: `git -c alias.x='!cmd'`, `tar --to-command`, `rsync -e`, `ssh -o ProxyCommand=`,
//! `python -c 'os.system(…)'`, `awk '{system(…)}'`. Option values that are shell command
//! lines are analysed like `sh -c`; inline interpreter code that starts programs is opaque.

use super::walk::Walker;
use super::words::Word;

/// `ssh -o KEY=VALUE` keys whose value is a command.
const SSH_COMMAND_KEYS: &[&str] = &[
    "proxycommand",
    "localcommand",
    "knownhostscommand",
    "remotecommand",
    "pkcs11provider",
    "securitykeyprovider",
    "include",
];

/// Interpreters, the options that take inline code, and words in that code that (besides
/// [`RUNS_PROGRAMS`]) reach a program-starting call indirectly: by a computed name
/// (`getattr(os, 'sys'+'tem')`), a pipe `open`, or a module loaded by a computed name.
type Interpreter = (
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
);
const INTERPRETERS: &[Interpreter] = &[
    ("python", &["-c"], PYTHON),
    ("pypy", &["-c"], PYTHON),
    ("perl", &["-e", "-E"], PERL),
    ("ruby", &["-e"], RUBY),
    ("node", &["-e", "--eval", "-p", "--print"], JS),
    ("nodejs", &["-e", "--eval", "-p", "--print"], JS),
    ("deno", &["eval"], JS),
    ("bun", &["-e", "--eval"], JS),
    ("php", &["-r", "-R", "-B", "-E"], PHP),
    ("lua", &["-e"], LUA),
    ("luajit", &["-e"], LUA),
    ("expect", &["-c"], TCL),
    ("rscript", &["-e"], R),
    ("julia", &["-e", "--eval", "-E", "--print"], JULIA),
    ("emacs", &["--eval", "-eval"], LISP),
];
const PYTHON: &[&str] = &[
    "getattr",
    "setattr",
    // Dunders that reach other objects (`().__class__.__base__.__subclasses__()`); plain
    // `__version__` and `__name__` do not.
    "__import__",
    "__builtins__",
    "__dict__",
    "__class__",
    "__subclasses__",
    "__globals__",
    "__getattr",
    "__base",
    "__mro__",
    "__code__",
    "__reduce",
    "__loader__",
    "__spec__",
    "__self__",
    "__func__",
    "__init__",
    "__call__",
    "__closure__",
    "sys.modules",
    "inspect",
    "gc.",
    "pkgutil",
    "zipimport",
    "import sh",
    "from sh",
    "plumbum",
    "pexpect",
    "breakpoint",
    "pydoc",
    "webbrowser",
    "pdb",
    "cffi",
    "multiprocessing",
    "platform",
    "vars(",
    "globals",
    "locals(",
    "importlib",
    "builtins",
    "ctypes",
    "attrgetter",
    "methodcaller",
    "compile(",
    "runpy",
    "fork",
    "pickle",
    "marshal",
];
const PERL: &[&str] = &[
    "open", "pipe", "fork", "readpipe", "syscall", "require", "do ", "&{",
];
const RUBY: &[&str] = &[
    "open",
    "fork",
    "syscall",
    "send",
    "method(",
    "instance_eval",
    "class_eval",
    "const_get",
    "kernel",
    "io.",
    "process",
    "%x",
    "require",
    "load",
];
// `require('fs')` is fine; a computed or dangerous module name is not (see `js_loads`).
const JS: &[&str] = &[
    "child",
    "worker",
    "process.binding",
    "process.dlopen",
    "mainmodule",
    "_linkedbinding",
    "module.",
    "createrequire",
    "constructor",
    "globalthis",
    "new function",
    "reflect",
    "deno.",
    "bun.",
    "wasi",
    "vm.",
    "inspector",
    "process[",
    "global",
    "this[",
];
const PHP: &[&str] = &[
    "assert",
    "create_function",
    "call_user_func",
    "pcntl",
    "mail(",
    "include",
    "require",
    "$$",
    "array_map",
    "usort",
    "ffi",
];
const LUA: &[&str] = &[
    "os.", "io.", "load", "dofile", "require", "package", "_g", "_env",
];
const TCL: &[&str] = &["open", "spawn", "source", "interp", "uplevel", "subst"];
const R: &[&str] = &[
    "shell",
    "pipe",
    "process",
    "do.call",
    "get(",
    "parse",
    "match.fun",
    "sys.",
];
const JULIA: &[&str] = &[
    "run(", "pipeline", "ccall", "include", "getfield", "symbol", "meta", "@",
];
const LISP: &[&str] = &[
    "process", "shell", "funcall", "apply", "intern", "load", "symbol",
];

/// Calls that start other programs from inline code.
const RUNS_PROGRAMS: &[&str] = &[
    "system",
    "popen",
    "subprocess",
    "spawn",
    "child_process",
    "exec",
    "eval",
    "`",
    "qx",
    "pty",
    "shell_exec",
    "passthru",
    "proc_open",
    "getline",
    "|&",
    "os.run",
    "command(",
    "@load",
    "&$",
    "->(",
    "array_",
    "_func",
    "callback",
    "register_shutdown",
    "iterator_apply",
];

impl Walker {
    /// Looks inside programs that run commands given as data. Returns whether `name` was one.
    pub(crate) fn program(&mut self, name: &str, args: &[Word]) -> bool {
        let base = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
        let in_table = self.runner(name, args);
        if let Some(sub) = name.strip_prefix("git-").filter(|s| !s.is_empty()) {
            // Git runs its subcommands as programs from its exec-path
            // (`/usr/lib/git-core/git-push`, `git-send-pack`): a rule about `git push` covers
            // them, so they are checked as the `git` command they are.
            let mut words = vec![Word::literal("git"), Word::literal(sub)];
            words.extend(args.iter().cloned());
            self.command(super::walk::Cmd {
                words,
                open_tail: false,
                maybe: true,
            });
        }
        let screened = if name == "git" {
            self.git(args);
            true
        } else if name == "ssh" || name == "scp" || name == "sftp" {
            self.ssh_options(name, args);
            if name == "ssh" {
                self.ssh_remote(args);
            }
            true
        } else if let Some(interp) = INTERPRETERS.iter().find(|(p, _, _)| *p == base) {
            self.interpreter(name, args, interp);
            true
        } else if matches!(name, "awk" | "gawk" | "mawk" | "nawk" | "busybox-awk") {
            self.awk(name, args);
            true
        } else {
            self.data_program(name, args)
        };
        in_table || screened
    }

    /// An editor's ex command: `:!cmd` runs a shell line; writing, quitting, settings and
    /// plain substitutions run nothing; anything else (`call system()`, `r !cmd`, `py3 …`,
    /// `\=` expressions) may run programs.
    pub(crate) fn ex_command(&mut self, name: &str, v: &Word) {
        let ex = v.text.trim_start_matches([':', ' ']);
        if v.dynamic {
            self.opaque(format!(
                "`{name}` ex command `{}`, computed at run time",
                v.text
            ));
        } else if let Some(cmd) = ex.strip_prefix('!') {
            let cmd = cmd.to_string();
            self.walk_line(&cmd);
        } else if !ex_is_inert(ex) {
            self.opaque(format!(
                "`{name}` ex command `{ex}`, which may run programs"
            ));
        }
    }

    fn ssh_options(&mut self, name: &str, args: &[Word]) {
        // `-o` also stands at the end of a flag cluster (`-4qo KEY=VALUE`).
        let hits = super::options::find(args, &["-o"], &[], super::options::Style::Gnu);
        for kv in hits.into_iter().filter_map(|h| h.value) {
            // ssh reads `Key=Value`, `Key Value` and `Key = Value`, with any blanks.
            let text = kv.text.trim_start();
            let (key, value) = text
                .split_once(|c: char| c == '=' || c.is_whitespace())
                .unwrap_or((text, ""));
            let value = value.trim_start().strip_prefix('=').unwrap_or(value).trim();
            if kv.dynamic || SSH_COMMAND_KEYS.contains(&key.trim().to_ascii_lowercase().as_str()) {
                let value = Word {
                    text: value.to_string(),
                    dynamic: kv.dynamic,
                };
                self.run_string(&format!("{name} -o {}", key.trim()), &value);
            }
        }
    }

    fn interpreter(&mut self, name: &str, args: &[Word], interp: &Interpreter) {
        let (_, code_opts, indirect) = interp;
        // Perl's `<>` (and `-n`/`-p`) opens each operand with the two-argument `open`, so
        // `'cmd|'` runs a command; Ruby's `open` does the same with `'|cmd'`.
        if matches!(interp.0, "perl" | "ruby") {
            let loops = args.iter().any(|w| {
                let t = w.text.as_str();
                (t.starts_with('-') && !t.starts_with("--") && t.contains(['n', 'p']))
                    || t.contains("<>")
                    || t.contains("ARGV")
                    || t.contains("ARGF")
            });
            let piped = |w: &&Word| {
                let t = w.text.trim();
                (w.dynamic && loops) || t.starts_with('|') || t.ends_with('|')
            };
            if let Some(w) = args.iter().find(piped) {
                return self.opaque(format!(
                    "`{name}` with the operand `{}`, which it may open as a command",
                    w.text
                ));
            }
        }
        if let Some(what) = loads_code_from_options(args) {
            return self.opaque(format!("`{name}` with `{what}`, which can run programs"));
        }
        let code = args
            .iter()
            .enumerate()
            .find_map(|(i, w)| code_opts.iter().find_map(|o| code_value(args, i, w, o)));
        match code {
            Some(code) => self.interpreter_code(name, &code, indirect),
            None => {
                // The first operand is the program file; one produced on the fly hides its code.
                if let Some(file) = args.iter().find(|w| w.dynamic || !w.text.starts_with('-')) {
                    self.script_file(name, file);
                }
                let reads_stdin = args.iter().all(|w| w.text.starts_with('-') && !w.dynamic)
                    || args.iter().any(|w| w.text == "-");
                let info = [
                    "--version",
                    "-V",
                    "-v",
                    "--help",
                    "-h",
                    "--test",
                    "-version",
                ];
                let info = args.iter().any(|w| info.contains(&w.text.as_str()));
                // With no input from the line there is no program to read.
                if reads_stdin && self.fed && !info {
                    match self.stdin_literal.clone() {
                        // A here-document or here-string is inline code like `-c CODE`.
                        Some(code) => self.interpreter_code(name, &Word::literal(code), indirect),
                        None => self.opaque(format!("`{name}` reading a program from its input")),
                    }
                }
            }
        }
    }

    /// Inline interpreter code: opaque when it may start programs, directly or indirectly.
    fn interpreter_code(&mut self, name: &str, code: &Word, indirect: &[&str]) {
        // A backslash-newline joins identifiers (`sys\<newline>tem`) in most of these.
        let lower = code.text.replace("\\\n", "").to_ascii_lowercase();
        let mut hidden = hidden_spelling(&lower);
        if indirect == JS && hidden.is_none() {
            hidden = js_loads(&code.text);
        }
        match indirect
            .iter()
            .find(|m| lower.contains(*m))
            .or(hidden.as_ref())
        {
            Some(m) if !code.dynamic => self.opaque(format!(
                "`{name}` code that may start programs indirectly (`{m}`)"
            )),
            _ => self.inline_code(
                name,
                &Word {
                    text: lower,
                    dynamic: code.dynamic,
                },
            ),
        }
    }

    fn awk(&mut self, name: &str, args: &[Word]) {
        // gawk's `-e`/`--source` give program text; `-f` a program file (checked as a script).
        let sources = super::git::option_values(args, &["-e", "--source"]);
        if !sources.is_empty() {
            for code in &sources {
                self.awk_code(name, code);
            }
            return;
        }
        let files = super::git::option_values(args, &["-f", "--file"]);
        if !files.is_empty() {
            for f in &files {
                self.script_file(name, f);
            }
            return;
        }
        // The program is the first operand that is not an option or an option's value.
        let mut skip_next = false;
        for w in args {
            if skip_next {
                skip_next = false;
            } else if matches!(
                w.text.as_str(),
                "-F" | "-v" | "--assign" | "--field-separator"
            ) {
                skip_next = true;
            } else if !w.text.starts_with('-') || w.dynamic {
                return self.awk_code(name, w);
            }
        }
    }

    /// `print | cmd` and `cmd | getline` run commands, whether `cmd` is a string or a variable.
    fn awk_code(&mut self, name: &str, code: &Word) {
        if !code.dynamic && super::tools::awk_pipes(&code.text) {
            return self.opaque(format!("`{name}` code that pipes to or from a command"));
        }
        // Words inside awk's string literals are data (`print "system"`); calls are not.
        let code = Word {
            text: without_awk_strings(&code.text),
            dynamic: code.dynamic,
        };
        self.inline_code(name, &code);
    }

    fn inline_code(&mut self, name: &str, code: &Word) {
        let lower = code.text.to_ascii_lowercase();
        if code.dynamic {
            self.opaque(format!("`{name}` code computed at run time"));
        } else if let Some(call) = RUNS_PROGRAMS.iter().find(|c| lower.contains(*c)) {
            self.opaque(format!(
                "`{name}` code that starts other programs (`{call}`)"
            ));
        }
    }

    pub(crate) fn run_string(&mut self, what: &str, line: &Word) {
        if line.dynamic {
            self.opaque(format!("`{what}` with a command computed at run time"));
        } else if !line.text.trim().is_empty() {
            let text = line.text.clone();
            self.walk_line(&text);
        }
    }
}

/// The inline code for option `o` at `args[i]`: `-e CODE`, `--eval=CODE`, a flag cluster
/// ending in the option (`-lne CODE`), or code attached after it (`-e'CODE'`, `-le'CODE'`).
fn code_value(args: &[Word], i: usize, w: &Word, o: &str) -> Option<Word> {
    if w.text == o {
        return args.get(i + 1).cloned();
    }
    if let Some(v) = w
        .text
        .strip_prefix(&format!("{o}="))
        .filter(|_| o.starts_with("--"))
    {
        return Some(Word {
            text: v.to_string(),
            dynamic: w.dynamic,
        });
    }
    let letter = o
        .strip_prefix('-')
        .filter(|l| l.len() == 1 && !w.text.starts_with("--"))?;
    let cluster = w.text.strip_prefix('-')?;
    let at = cluster.find(letter)?;
    let rest = cluster.get(at + 1..).unwrap_or("");
    if !cluster
        .get(..at)
        .unwrap_or("")
        .chars()
        .all(|c| c.is_ascii_alphabetic())
    {
        return None;
    }
    if rest.is_empty() {
        args.get(i + 1).cloned()
    } else {
        Some(Word {
            text: rest.to_string(),
            dynamic: w.dynamic,
        })
    }
}

/// Options that load code which runs programs, or run code given elsewhere on the line:
/// `perl -MIPC::Run`, `python -m timeit 'code'`, `node --import data:…`.
fn loads_code_from_options(args: &[Word]) -> Option<String> {
    const MODULES: &[&str] = &[
        "ipc", "system", "shell", "proc", "open", "exec", "spawn", "fork", "expect", "pty",
    ];
    const CODE_RUNNERS: &[&str] = &[
        "timeit", "cprofile", "profile", "trace", "pdb", "code", "runpy", "asyncio", "idlelib",
    ];
    for (i, w) in args.iter().enumerate() {
        let lower = w.text.to_ascii_lowercase();
        if lower.contains("data:") {
            return Some(w.text.clone());
        }
        let module = lower
            .strip_prefix("-m")
            .filter(|m| !m.is_empty())
            .map(str::to_string)
            .or_else(|| {
                (lower == "-m")
                    .then(|| args.get(i + 1).map(|n| n.text.to_ascii_lowercase()))
                    .flatten()
            });
        let Some(module) = module else { continue };
        let module = module.trim_start_matches('-');
        // Perl's `open` pragma (`-Mopen=:std,:utf8`) only sets I/O layers.
        if module == "open" || module.starts_with("open=") {
            continue;
        }
        if MODULES.iter().any(|m| module.contains(m)) || CODE_RUNNERS.contains(&module) {
            return Some(format!("-m {module}"));
        }
    }
    None
}

/// Spellings that hide a name from a substring search: non-ASCII letters (Python folds
/// `ｓｙｓｔｅｍ` to `system`), `\u` escapes in identifiers (JavaScript), and calls through a
/// variable (`$f(…)` in PHP, `&$f` in Perl).
fn hidden_spelling(code: &str) -> Option<&'static str> {
    if !code.is_ascii() {
        return Some("non-ASCII text");
    }
    if code.contains("\\u") {
        return Some("\\u");
    }
    let b = code.as_bytes();
    for (i, c) in b.iter().enumerate() {
        if *c != b'$' {
            continue;
        }
        let mut j = i + 1;
        while b
            .get(j)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
        {
            j += 1;
        }
        while b.get(j) == Some(&b' ') {
            j += 1;
        }
        if j > i + 1 && b.get(j) == Some(&b'(') {
            return Some("$name(");
        }
    }
    None
}

/// A `require(…)` or `import(…)` whose module is computed, or is one that runs programs or
/// code (`child_process`, `vm`, `worker_threads`); also a bare `Function(…)` constructor.
fn js_loads(code: &str) -> Option<&'static str> {
    if code.contains("Function(") || code.contains("Function`") {
        return Some("Function(");
    }
    // `process['bind' + 'ing']`: a member of `process` chosen at run time.
    if code.contains("process") && code.contains('[') {
        return Some("process[…]");
    }
    for call in ["require", "import"] {
        for (at, _) in code.match_indices(call) {
            let rest = code.get(at + call.len()..).unwrap_or("").trim_start();
            let Some(arg) = rest.strip_prefix('(') else {
                continue;
            };
            let arg = arg.trim_start();
            let Some(q) = arg.chars().next().filter(|c| matches!(c, '\'' | '"')) else {
                return Some("a computed module name");
            };
            let body = arg.get(1..).unwrap_or("");
            let Some((name, after)) = body.split_once(q) else {
                return Some("a computed module name");
            };
            let dangerous = [
                "child",
                "worker",
                "vm",
                "cluster",
                "process",
                "module",
                "inspector",
            ];
            if !after.trim_start().starts_with(')') || dangerous.iter().any(|d| name.contains(d)) {
                return Some("a module that runs programs");
            }
        }
    }
    None
}

/// Ex commands that run nothing: each `|`-separated part, after its range, is one of these.
fn ex_is_inert(ex: &str) -> bool {
    const INERT: &[&str] = &[
        "w",
        "wq",
        "wqa",
        "wa",
        "x",
        "xa",
        "q",
        "qa",
        "e",
        "set",
        "se",
        "setlocal",
        "noh",
        "nohlsearch",
        "syntax",
        "syn",
        "filetype",
        "retab",
        "s",
        "substitute",
        "d",
        "delete",
        "j",
        "join",
        "m",
        "t",
        "co",
        "copy",
        "undo",
        "u",
        "redo",
        "update",
        "up",
        "wall",
        "quit",
        "write",
        "xit",
        "exit",
        "bd",
        "bn",
        "bp",
        "",
    ];
    if ex.contains(['!', '`']) || ex.contains("\\=") || ex.contains("system") {
        return false;
    }
    ex.split('|').all(|part| {
        let cmd = part.trim().trim_start_matches(|c: char| {
            c.is_ascii_digit() || matches!(c, '%' | '$' | ',' | '.' | '\'' | '<' | '>' | ' ')
        });
        let word: String = cmd
            .chars()
            .take_while(|c| c.is_ascii_alphabetic())
            .collect();
        if matches!(word.as_str(), "g" | "global" | "v" | "vglobal") {
            // `:g/PATTERN/CMD` runs CMD on each matching line: inert when CMD is.
            let rest = cmd.get(word.len()..).unwrap_or("").trim_start_matches('!');
            let mut chars = rest.chars();
            let Some(delim) = chars.next().filter(|c| !c.is_alphanumeric() && *c != '|') else {
                return false;
            };
            let after: String = chars.collect();
            return match after.split_once(delim) {
                Some((_, inner)) => ex_is_inert(inner),
                None => false,
            };
        }
        INERT.contains(&word.as_str())
    })
}

/// Awk code with the contents of its `"…"` string literals removed (escapes honoured).
fn without_awk_strings(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut in_string = false;
    let mut chars = code.chars();
    while let Some(c) = chars.next() {
        match (in_string, c) {
            (true, '\\') => {
                chars.next();
            }
            (_, '"') => {
                in_string = !in_string;
                out.push('"');
            }
            (true, _) => {}
            (false, c) => out.push(c),
        }
    }
    out
}
