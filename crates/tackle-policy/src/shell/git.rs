//! `git` runs commands from its configuration (`-c core.pager=…`, aliases starting with `!`)
//! and from options of some subcommands (`rebase --exec`, `bisect run`, `submodule foreach`,
//! `--upload-pack`). Known command keys and options are analysed like `sh -c`; the value of
//! a key whose name suggests a command is checked against deny rules as a possible command.

use super::walk::Walker;
use super::words::Word;

/// `git -c KEY=VALUE` keys whose value is a command (aliases starting with `!` too).
const COMMAND_KEYS: &[&str] = &[
    "core.sshcommand",
    "core.pager",
    "core.editor",
    "core.fsmonitor",
    "core.askpass",
    "core.gitproxy",
    "sequence.editor",
    "diff.external",
    "gpg.program",
    "gpg.ssh.program",
    "gpg.x509.program",
    "gpg.openpgp.program",
    "credential.helper",
    "uploadpack.packobjectshook",
    "sendemail.sendmailcmd",
    "sendemail.tocmd",
    "sendemail.cccmd",
    "interactive.difffilter",
];

/// Key endings whose value is a command, for any driver or tool name.
const COMMAND_KEY_ENDINGS: &[&str] = &[
    ".command",
    ".cmd",
    ".textconv",
    ".clean",
    ".smudge",
    ".process",
    ".driver",
    ".helper",
    ".uploadpack",
    ".receivepack",
];

/// Keys that point git at code or configuration it then runs or reads.
const CODE_KEYS: &[&str] = &[
    "core.hookspath",
    "include.path",
    "protocol.ext.allow",
    "protocol.allow",
    "core.worktree",
];

/// Parts of key names that suggest a command; such values are checked against deny rules.
const COMMANDISH: &[&str] = &[
    "cmd", "command", "program", "editor", "pager", "hook", "exec", "filter", "tool", "shell",
    "wrapper", "viewer", "browser",
];

/// Global options that take the next word as their value.
const GLOBAL_VALUES: &[&str] = &[
    "-C",
    "-c",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--super-prefix",
    "--config-env",
    "--list-cmds",
];

/// (subcommand, options whose value is a shell command line).
const COMMAND_OPTIONS: &[(&str, &[&str])] = &[
    ("rebase", &["-x", "--exec"]),
    ("difftool", &["-x", "--extcmd"]),
    ("grep", &["-O", "--open-files-in-pager"]),
    ("fetch", &["--upload-pack"]),
    ("pull", &["--upload-pack"]),
    ("clone", &["-u", "--upload-pack"]),
    ("ls-remote", &["--upload-pack"]),
    ("fetch-pack", &["--upload-pack", "--exec"]),
    ("push", &["--receive-pack", "--exec"]),
    ("send-pack", &["--receive-pack", "--exec"]),
    ("archive", &["--exec"]),
    (
        "send-email",
        &["--to-cmd", "--cc-cmd", "--sendmail-cmd", "--smtp-server"],
    ),
    (
        "filter-branch",
        &[
            "--setup",
            "--env-filter",
            "--tree-filter",
            "--index-filter",
            "--parent-filter",
            "--msg-filter",
            "--commit-filter",
            "--tag-name-filter",
        ],
    ),
];

impl Walker {
    pub(crate) fn git(&mut self, args: &[Word]) {
        if args.iter().any(|w| w.text.contains("ext::")) {
            self.opaque("a git `ext::` URL, which runs a command");
        }
        let sub = self.git_globals(args);
        let Some(sub) = sub else { return };
        let (name, rest) = (&args[sub], args.get(sub + 1..).unwrap_or(&[]));
        if name.dynamic {
            return self.opaque(format!(
                "the git subcommand `{}`, computed at run time",
                name.text
            ));
        }
        match name.text.as_str() {
            "bisect" if rest.first().is_some_and(|w| w.text == "run") => {
                self.inner_words(rest.get(1..).unwrap_or(&[]), false);
            }
            "submodule" => {
                if let Some(at) = rest.iter().position(|w| w.text == "foreach") {
                    let line: Vec<&Word> = rest
                        .iter()
                        .skip(at + 1)
                        .skip_while(|w| w.text.starts_with('-'))
                        .collect();
                    self.joined_line("git submodule foreach", &line);
                }
            }
            // `git config core.pager 'cmd'` stores a command that later git commands run.
            "config" => self.git_config_command(rest),
            sub => {
                if let Some((_, opts)) = COMMAND_OPTIONS.iter().find(|(s, _)| *s == sub) {
                    // git's option parser takes any unambiguous prefix (`--exe` is `--exec`).
                    let hits = super::options::find(rest, opts, &[], super::options::Style::Gnu);
                    for hit in hits {
                        if let Some(value) = &hit.value {
                            self.run_string(&format!("git {sub} {}", hit.written), value);
                        }
                    }
                }
            }
        }
    }

    /// Reads global options (checking `-c` values); returns where the subcommand is.
    fn git_globals(&mut self, args: &[Word]) -> Option<usize> {
        let mut i = 0;
        while let Some(w) = args.get(i) {
            let t = w.text.as_str();
            if w.dynamic && t.starts_with('-') {
                self.opaque(format!("`git {t}`, computed at run time"));
                return None;
            }
            if t == "-c" || (t.starts_with("-c") && t.len() > 2) {
                let kv = if t == "-c" {
                    args.get(i + 1).cloned()
                } else {
                    t.get(2..).map(|v| Word {
                        text: v.to_string(),
                        dynamic: w.dynamic,
                    })
                };
                if let Some(kv) = kv {
                    self.git_config(&kv);
                }
            } else if t.starts_with("--config-env") {
                self.opaque("`git --config-env`, which reads configuration from a variable");
            } else if t.starts_with("--exec-path=") {
                self.opaque("`git --exec-path=…`, which runs programs from another directory");
            }
            if GLOBAL_VALUES.contains(&t) {
                i += 2;
            } else if t.starts_with('-') {
                i += 1;
            } else {
                return Some(i);
            }
        }
        None
    }

    fn git_config(&mut self, kv: &Word) {
        if kv.dynamic {
            return self.opaque(format!("`git -c {}`, computed at run time", kv.text));
        }
        let Some((key, value)) = kv.text.split_once('=') else {
            return;
        };
        let key = key.to_ascii_lowercase();
        // git runs a helper or driver value starting with `!` as a shell line.
        let value = value.strip_prefix('!').unwrap_or(value);
        if key.starts_with("alias.") && kv.text.contains("=!") {
            self.walk_line(value.trim_start_matches('!'));
        } else if key.starts_with("alias.") {
            // `alias.p=push` makes `git p` run `git push`.
            let line = format!("git {value}");
            self.maybe_line(&line);
        } else if COMMAND_KEYS.contains(&key.as_str())
            || key.starts_with("pager.")
            || COMMAND_KEY_ENDINGS.iter().any(|e| key.ends_with(e))
        {
            let value = value.to_string();
            self.walk_line(&value);
        } else if CODE_KEYS.contains(&key.as_str()) || key.starts_with("includeif.") {
            self.opaque(format!(
                "`git -c {key}`, which makes git run or read other code"
            ));
        } else if COMMANDISH.iter().any(|w| key.contains(w)) || key.ends_with(".path") {
            // A key that names a program (`mergetool.x.path`, `web.browser`): what it names
            // must be allowed like any command.
            let value = value.to_string();
            self.walk_line(&value);
        }
    }

    fn git_config_command(&mut self, rest: &[Word]) {
        const VALUED: &[&str] = &[
            "-f",
            "--file",
            "--blob",
            "--type",
            "--default",
            "--comment",
            "--value",
            "--url",
        ];
        let mut operands = Vec::new();
        let mut i = 0;
        while let Some(w) = rest.get(i) {
            i += 1;
            if VALUED.contains(&w.text.as_str()) {
                i += 1;
            } else if !w.text.starts_with('-') || w.dynamic {
                operands.push(w);
            }
        }
        const VERBS: &[&str] = &["set", "add", "replace-all", "get", "unset", "list", "edit"];
        if operands
            .first()
            .is_some_and(|w| VERBS.contains(&w.text.as_str()))
        {
            operands.remove(0);
        }
        if let [key, value, ..] = operands[..] {
            let kv = Word {
                text: format!("{}={}", key.text, value.text),
                dynamic: key.dynamic || value.dynamic,
            };
            self.git_config(&kv);
        }
    }

    /// Words joined with spaces and run as one shell line.
    pub(crate) fn joined_line(&mut self, what: &str, words: &[&Word]) {
        if let Some(d) = words.iter().find(|w| w.dynamic) {
            return self.opaque(format!("`{what}` with `{}`, computed at run time", d.text));
        }
        let line: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
        if !line.is_empty() {
            self.walk_line(&line.join(" "));
        }
    }
}

/// The values given to `opts` in `args`: `--opt VALUE`, `--opt=VALUE`, `-xVALUE`, `-x VALUE`.
pub(crate) fn option_values(args: &[Word], opts: &[&str]) -> Vec<Word> {
    let mut out = Vec::new();
    for (i, w) in args.iter().enumerate() {
        for opt in opts {
            let attached = if opt.starts_with("--") {
                w.text.strip_prefix(&format!("{opt}="))
            } else {
                w.text.strip_prefix(opt).filter(|v| !v.is_empty())
            };
            if w.text == *opt {
                out.extend(args.get(i + 1).cloned());
            } else if let Some(v) = attached {
                out.push(Word {
                    text: v.to_string(),
                    dynamic: w.dynamic,
                });
            }
        }
    }
    out
}
