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
    "--attr-source",
];

/// Global options that point git at a repository, configuration or attributes of the line's
/// choosing (a planted `config` with aliases, `hooks/`).
const ROUTING_GLOBALS: &[&str] = &["--git-dir", "--work-tree", "--attr-source", "--bare"];

/// Subcommands built into git. Git runs a builtin before looking for an alias, so these
/// cannot be renamed by configuration; any other word (`git p`, `git st`, `git send-email`
/// where that script is not installed) may be an alias from configuration the analyser
/// cannot see, set by an earlier line or planted in the repository.
const BUILTINS: &[&str] = &[
    "add",
    "am",
    "annotate",
    "apply",
    "archive",
    "backfill",
    "bisect",
    "blame",
    "branch",
    "bugreport",
    "bundle",
    "cat-file",
    "check-attr",
    "check-ignore",
    "check-mailmap",
    "check-ref-format",
    "checkout",
    "checkout-index",
    "cherry",
    "cherry-pick",
    "clean",
    "clone",
    "column",
    "commit",
    "commit-graph",
    "commit-tree",
    "config",
    "count-objects",
    "credential",
    "describe",
    "diagnose",
    "diff",
    "diff-files",
    "diff-index",
    "diff-tree",
    "difftool",
    "fast-export",
    "fast-import",
    "fetch",
    "fetch-pack",
    "fmt-merge-msg",
    "for-each-ref",
    "for-each-repo",
    "format-patch",
    "fsck",
    "gc",
    "get-tar-commit-id",
    "grep",
    "hash-object",
    "help",
    "hook",
    "index-pack",
    "init",
    "init-db",
    "interpret-trailers",
    "log",
    "ls-files",
    "ls-remote",
    "ls-tree",
    "mailinfo",
    "mailsplit",
    "maintenance",
    "merge",
    "merge-base",
    "merge-file",
    "merge-index",
    "merge-tree",
    "mktag",
    "mktree",
    "multi-pack-index",
    "mv",
    "name-rev",
    "notes",
    "pack-objects",
    "pack-refs",
    "patch-id",
    "prune",
    "prune-packed",
    "pull",
    "push",
    "range-diff",
    "read-tree",
    "rebase",
    "receive-pack",
    "reflog",
    "refs",
    "remote",
    "repack",
    "replace",
    "replay",
    "rerere",
    "reset",
    "restore",
    "rev-list",
    "rev-parse",
    "revert",
    "rm",
    "send-pack",
    "shortlog",
    "show",
    "show-branch",
    "show-index",
    "show-ref",
    "sparse-checkout",
    "stage",
    "stash",
    "status",
    "stripspace",
    "submodule",
    "switch",
    "symbolic-ref",
    "tag",
    "unpack-file",
    "unpack-objects",
    "update-index",
    "update-ref",
    "update-server-info",
    "upload-archive",
    "upload-pack",
    "var",
    "verify-commit",
    "verify-pack",
    "verify-tag",
    "version",
    "whatchanged",
    "worktree",
    "write-tree",
];

/// Subcommands that update another repository's refs the way `push` does: a rule about
/// `git push` covers them.
const PUSH_LIKE: &[&str] = &["send-pack", "http-push", "receive-pack"];

/// Programs that only read the files they name: a `.git/…` word given to them plants
/// nothing (their redirections are checked as writes of their own).
const READERS: &[&str] = &[
    "cat", "ls", "head", "tail", "less", "more", "wc", "grep", "rg", "stat", "file", "du", "diff",
    "echo", "printf", "test", "[", "[[", "realpath", "readlink", "basename", "dirname", "tree",
];

/// The program whose configuration, hooks or aliases live at `path`, which can rename or
/// re-route its subcommands: anything inside a `.git` directory, a user's `.gitconfig` or
/// `git/config` under a configuration directory (git); anything inside a `.cargo` directory,
/// whose `config.toml` holds aliases (cargo).
pub(crate) fn config_place(path: &str) -> Option<&'static str> {
    let parts: Vec<&str> = path.split('/').collect();
    let base = parts.last().copied().unwrap_or("");
    let parent = parts.len().checked_sub(2).and_then(|i| parts.get(i));
    let git = parts.contains(&".git")
        || base == ".gitconfig"
        || path.contains(".config/git/")
        || (base == "config" && parent == Some(&"git"));
    if git {
        Some("git")
    } else if parts.contains(&".cargo") {
        Some("cargo")
    } else {
        None
    }
}

/// What a write to a program's configuration place can do, for the `why`.
pub(crate) fn config_place_phrase(program: &str) -> &'static str {
    if program == "git" {
        "where git keeps configuration and hooks (aliases, hooks and includes can re-route a git subcommand)"
    } else {
        "where cargo keeps configuration (its aliases can re-route a cargo subcommand)"
    }
}

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
        let mut aliases = Vec::new();
        let sub = self.git_globals(args, &mut aliases);
        let Some(sub) = sub else { return };
        let Some(name) = args.get(sub) else { return };
        let rest = args.get(sub + 1..).unwrap_or(&[]);
        if name.dynamic {
            return self.opaque(format!(
                "the git subcommand `{}`, computed at run time",
                name.text
            ));
        }
        // An alias given with `-c alias.NAME=…` here was checked as what it expands to.
        if !BUILTINS.contains(&name.text.as_str()) && !aliases.contains(&name.text) {
            self.routed(
                "git",
                format!(
                    "`git {}`, which is no git builtin and may be an alias from configuration the analyser cannot see",
                    name.text
                ),
            );
        }
        if PUSH_LIKE.contains(&name.text.as_str()) {
            // `git send-pack REMOTE REFS` pushes without the word `push`.
            let mut words = vec![Word::literal("git"), Word::literal("push")];
            words.extend(rest.iter().cloned());
            self.command(super::walk::Cmd {
                words,
                open_tail: false,
                maybe: true,
            });
        }
        // git's option parser takes any unambiguous prefix (`--templ=…` is `--template`).
        let template = || {
            rest.iter().any(|w| w.dynamic)
                || !super::options::find(rest, &["--template"], &[], super::options::Style::Gnu)
                    .is_empty()
        };
        if matches!(name.text.as_str(), "init" | "init-db" | "clone") && template() {
            self.routed(
                "git",
                format!(
                    "`git {} --template`, which copies hooks and configuration from a directory of the line's choosing",
                    name.text
                ),
            );
        }
        if name.text == "clone" {
            // `git clone -c KEY=VALUE` writes configuration into the new repository.
            for kv in option_values(rest, &["-c", "--config"]) {
                self.git_config(&kv);
            }
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

    /// Reads global options (checking `-c` values, and noting the aliases they define);
    /// returns where the subcommand is.
    fn git_globals(&mut self, args: &[Word], aliases: &mut Vec<String>) -> Option<usize> {
        let mut i = 0;
        while let Some(w) = args.get(i) {
            let t = w.text.as_str();
            if w.dynamic && t.starts_with('-') {
                self.opaque(format!("`git {t}`, computed at run time"));
                return None;
            }
            if let Some(opt) = ROUTING_GLOBALS
                .iter()
                .find(|o| t == **o || t.strip_prefix(**o).is_some_and(|r| r.starts_with('=')))
            {
                self.routed(
                    "git",
                    format!("`git {opt}`, which points git at configuration and hooks of the line's choosing"),
                );
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
                    if let Some(alias) = kv.text.split_once('=').and_then(|(k, _)| {
                        k.to_ascii_lowercase()
                            .strip_prefix("alias.")
                            .map(String::from)
                    }) {
                        aliases.push(alias);
                    }
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
            // An alias of an alias (`alias.p=q` with `q` from configuration) is not seen.
            let target = value.split_whitespace().find(|w| !w.starts_with('-'));
            if target.is_none_or(|t| !BUILTINS.contains(&t)) {
                self.routed(
                    "git",
                    format!("the git alias `{key}={value}`, whose target is no git builtin"),
                );
            }
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
        // Writes whose key the analyser does not see: a section renamed into `alias` or
        // `include`, a file that another configuration may include, an editor session.
        const HIDDEN_WRITES: &[&str] = &["rename-section", "remove-section", "edit"];
        const HIDDEN_OPTIONS: &[&str] = &[
            "--rename-section",
            "--remove-section",
            "-f",
            "--file",
            "-e",
            "--edit",
        ];
        // Long options abbreviate (`--fil`, `--rename-s`) and short ones cluster (`-lf x`).
        let hidden = super::options::find(
            rest,
            HIDDEN_OPTIONS,
            HIDDEN_OPTIONS,
            super::options::Style::Gnu,
        );
        let written = hidden.first().map(|h| h.written.clone()).or_else(|| {
            rest.iter()
                .find(|w| w.dynamic || HIDDEN_WRITES.contains(&w.text.as_str()))
                .map(|w| w.text.clone())
        });
        if let Some(written) = written {
            self.routed(
                "git",
                format!(
                    "`git config {written}`, which can write git configuration the analyser does not see"
                ),
            );
        }
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

    /// A program other than a plain reader given a path where git or cargo keeps
    /// configuration or hooks (`cp hook .git/hooks/pre-commit`, `cd .git`,
    /// `sed -i … .cargo/config.toml`) may plant what re-routes a later subcommand.
    pub(crate) fn note_config_place_words(&mut self, name: &str, args: &[Word]) {
        if READERS.contains(&name) {
            return;
        }
        for w in args.iter().filter(|w| !w.dynamic) {
            // `--file=.git/config`, `of=.git/config`: the path is the value.
            let value = w.text.split_once('=').map(|(_, v)| v);
            // Code given to an interpreter names the path inside a longer string
            // (`python3 -c "open('.git/hooks/post-commit', 'w')…"`).
            let inside = if w.text.contains(".git/") || w.text.contains(".gitconfig") {
                Some("git")
            } else if w.text.contains(".cargo/") {
                Some("cargo")
            } else {
                None
            };
            let place = config_place(&w.text)
                .or_else(|| value.and_then(config_place))
                .or(inside);
            if let Some(program) = place.filter(|p| *p != name) {
                self.routed(
                    program,
                    format!(
                        "`{name}` with `{}`, {}",
                        w.text,
                        config_place_phrase(program)
                    ),
                );
                return;
            }
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
