//! Programs that are not wrappers but still run commands given as option values or inline
//! code: `git -c alias.x='!cmd'`, `tar --to-command`, `rsync -e`, `ssh -o ProxyCommand=`,
//! `python -c 'os.system(…)'`, `awk '{system(…)}'`. Option values that are shell command
//! lines are analysed like `sh -c`; inline interpreter code that starts programs is opaque.

use super::walk::Walker;
use super::words::Word;

/// Options whose value is a command line run by a shell: (program, option spellings).
const COMMAND_OPTIONS: &[(&str, &[&str])] = &[
    (
        "tar",
        &[
            "--to-command",
            "--use-compress-program",
            "-I",
            "--rsh-command",
            "--info-script",
            "-F",
            "--new-volume-script",
        ],
    ),
    ("rsync", &["-e", "--rsh", "--rsync-path"]),
    ("scp", &["-S"]),
    ("zip", &["-TT", "--unzip-command"]),
    ("man", &["-P", "--pager"]),
    ("vim", &["-c", "--cmd"]),
    ("nvim", &["-c", "--cmd"]),
    ("vi", &["-c"]),
];

/// `ssh -o KEY=VALUE` keys whose value is a command.
const SSH_COMMAND_KEYS: &[&str] = &[
    "proxycommand",
    "localcommand",
    "knownhostscommand",
    "remotecommand",
];

/// `git -c KEY=VALUE` keys whose value is a command (aliases starting with `!` too).
const GIT_COMMAND_KEYS: &[&str] = &[
    "core.sshcommand",
    "core.pager",
    "core.editor",
    "core.fsmonitor",
    "core.askpass",
    "sequence.editor",
    "diff.external",
    "gpg.program",
    "credential.helper",
    "uploadpack.packobjectshook",
    "pager.log",
    "pager.diff",
    "pager.show",
];

/// Interpreters and the options that take inline code.
const INTERPRETERS: &[(&str, &[&str])] = &[
    ("python", &["-c"]),
    ("perl", &["-e", "-E"]),
    ("ruby", &["-e"]),
    ("node", &["-e", "--eval", "-p", "--print"]),
    ("nodejs", &["-e", "--eval", "-p", "--print"]),
    ("deno", &["eval"]),
    ("bun", &["-e", "--eval"]),
    ("php", &["-r"]),
    ("lua", &["-e"]),
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
];

impl Walker {
    /// Looks inside programs that run commands given as data. Returns whether `name` was one.
    pub(crate) fn program(&mut self, name: &str, args: &[Word]) -> bool {
        let base = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
        if name == "git" {
            self.git(args);
        } else if name == "ssh" || name == "scp" || name == "sftp" {
            self.ssh_options(name, args);
            if name == "scp" {
                self.command_options(name, args, &["-S"]);
            }
        } else if let Some((_, opts)) = COMMAND_OPTIONS.iter().find(|(p, _)| *p == name) {
            self.command_options(name, args, opts);
            if name == "tar" {
                self.tar_checkpoint(args);
            }
        } else if let Some((_, opts)) = INTERPRETERS.iter().find(|(p, _)| *p == base) {
            self.interpreter(name, args, opts);
        } else if matches!(name, "awk" | "gawk" | "mawk" | "nawk") {
            self.awk(name, args);
        } else {
            return false;
        }
        true
    }

    fn command_options(&mut self, name: &str, args: &[Word], opts: &[&str]) {
        for (i, w) in args.iter().enumerate() {
            for opt in opts {
                let value = if w.text == *opt {
                    args.get(i + 1).cloned()
                } else if let Some(v) = w.text.strip_prefix(&format!("{opt}=")) {
                    Some(Word {
                        text: v.to_string(),
                        dynamic: w.dynamic,
                    })
                } else if opt.len() == 2
                    && !opt.starts_with("--")
                    && w.text.starts_with(opt)
                    && w.text.len() > 2
                {
                    w.text.get(2..).map(|v| Word {
                        text: v.to_string(),
                        dynamic: w.dynamic,
                    })
                } else {
                    None
                };
                let Some(v) = value else { continue };
                // Editors take ex commands; only `:!cmd` runs a shell command.
                let editor = matches!(name, "vim" | "nvim" | "vi");
                let ex = v.text.trim_start_matches([':', ' ']);
                if editor && !v.dynamic && !ex.starts_with('!') {
                    continue;
                }
                let text = if editor {
                    ex.trim_start_matches('!')
                } else {
                    v.text.as_str()
                };
                let line = Word {
                    text: text.to_string(),
                    dynamic: v.dynamic,
                };
                self.run_string(&format!("{name} {opt}"), &line);
            }
        }
    }

    fn ssh_options(&mut self, name: &str, args: &[Word]) {
        for (i, w) in args.iter().enumerate() {
            let kv = if w.text == "-o" {
                args.get(i + 1).cloned()
            } else {
                w.text
                    .strip_prefix("-o")
                    .filter(|v| !v.is_empty())
                    .map(|v| Word {
                        text: v.to_string(),
                        dynamic: w.dynamic,
                    })
            };
            let Some(kv) = kv else { continue };
            let (key, value) = kv
                .text
                .split_once(['=', ' '])
                .unwrap_or((kv.text.as_str(), ""));
            if kv.dynamic || SSH_COMMAND_KEYS.contains(&key.trim().to_ascii_lowercase().as_str()) {
                let value = Word {
                    text: value.trim().to_string(),
                    dynamic: kv.dynamic,
                };
                self.run_string(&format!("{name} -o {}", key.trim()), &value);
            }
        }
    }

    fn git(&mut self, args: &[Word]) {
        for (i, w) in args.iter().enumerate() {
            let kv = match w.text.as_str() {
                "-c" => args.get(i + 1).cloned(),
                t => t
                    .strip_prefix("-c")
                    .filter(|v| !v.is_empty())
                    .map(|v| Word {
                        text: v.to_string(),
                        dynamic: w.dynamic,
                    }),
            };
            let Some(kv) = kv else { continue };
            if kv.dynamic {
                self.opaque(format!("`git -c {}`, computed at run time", kv.text));
                continue;
            }
            let Some((key, value)) = kv.text.split_once('=') else {
                continue;
            };
            let key = key.to_ascii_lowercase();
            if key.starts_with("alias.") && value.starts_with('!') {
                self.walk_line(value.trim_start_matches('!'));
            } else if GIT_COMMAND_KEYS.contains(&key.as_str())
                || key.starts_with("pager.")
                || key.ends_with(".command")
            {
                let value = value.to_string();
                self.walk_line(&value);
            }
        }
    }

    /// `tar --checkpoint-action=exec=CMD`.
    fn tar_checkpoint(&mut self, args: &[Word]) {
        for w in args {
            if let Some(cmd) = w.text.strip_prefix("--checkpoint-action=exec=") {
                let line = Word {
                    text: cmd.to_string(),
                    dynamic: w.dynamic,
                };
                self.run_string("tar --checkpoint-action", &line);
            }
        }
    }

    fn interpreter(&mut self, name: &str, args: &[Word], code_opts: &[&str]) {
        let code = args
            .iter()
            .enumerate()
            .find_map(|(i, w)| code_opts.iter().find_map(|o| code_value(args, i, w, o)));
        match code {
            Some(code) => self.inline_code(name, &code),
            None => {
                let reads_stdin = args.iter().all(|w| w.text.starts_with('-') && !w.dynamic)
                    || args.iter().any(|w| w.text == "-");
                if reads_stdin
                    && !args
                        .iter()
                        .any(|w| matches!(w.text.as_str(), "--version" | "-V" | "--help" | "-h"))
                {
                    self.opaque(format!("`{name}` reading a program from its input"));
                }
            }
        }
    }

    fn awk(&mut self, name: &str, args: &[Word]) {
        if args
            .iter()
            .any(|w| w.text == "-f" || w.text.starts_with("--file"))
        {
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
                // `print | "cmd"` and `"cmd" | getline` run commands too.
                let t = w.text.replace(' ', "");
                if t.contains("|\"") || t.contains("\"|") {
                    return self.opaque(format!("`{name}` code that pipes to or from a command"));
                }
                return self.inline_code(name, w);
            }
        }
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

    fn run_string(&mut self, what: &str, line: &Word) {
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
