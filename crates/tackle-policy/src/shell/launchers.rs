//! Programs that start a command given as their arguments but whose options the analyser does
//! not model one by one (`unshare`, `firejail`, `valgrind`, `ip netns exec`, `sg`, `tmux`…).
//!
//! They are read loosely: words starting with `-` are options, the first other word starts
//! the command. An option whose value is a separate word would make that value look like the
//! command, so every later word that could start a command is also checked against the deny
//! rules (see [`Cmd::maybe`](super::walk::Cmd)).

use super::walk::{Cmd, Walker};
use super::words::Word;

/// Wrappers read loosely, with the number of fixed operands before the command.
const LOOSE: &[(&str, usize)] = &[
    ("toybox", 0),
    ("unshare", 0),
    ("nsenter", 0),
    ("fakeroot", 0),
    ("fakechroot", 0),
    ("eatmydata", 0),
    ("firejail", 0),
    ("bwrap", 0),
    ("valgrind", 0),
    ("prlimit", 0),
    ("numactl", 0),
    ("sshpass", 0),
    ("chronic", 0),
    ("ifne", 0),
    ("systemd-run", 0),
    ("systemd-inhibit", 0),
    ("torsocks", 0),
    ("torify", 0),
    ("proxychains", 0),
    ("proxychains4", 0),
    ("tsocks", 0),
    ("cpulimit", 0),
    ("trickle", 0),
    ("rlwrap", 0),
    ("dbus-run-session", 0),
    ("xvfb-run", 0),
    ("runcon", 0),
    ("chpst", 0),
    ("tini", 0),
    ("dumb-init", 0),
    ("cgexec", 0),
    ("faketime", 1),
    ("linux32", 0),
    ("linux64", 0),
    ("setarch", 1),
    ("caffeinate", 0),
    ("lckdo", 1),
    ("run-one", 0),
    ("timelimit", 0),
    ("flatpak-spawn", 0),
    ("distrobox-enter", 0),
    ("schroot", 0),
    ("proot", 0),
    ("daemonize", 0),
    ("dtach", 0),
    ("with-contenv", 0),
    ("systemd-nspawn", 0),
    ("ssh-agent", 0),
    ("run0", 0),
    ("dbus-launch", 0),
    ("xinit", 0),
    ("logsave", 1),
    ("x86_64", 0),
    ("i386", 0),
    ("i486", 0),
    ("i586", 0),
    ("i686", 0),
    ("uname26", 0),
    ("aarch64", 0),
    ("arm64", 0),
    ("ppc64", 0),
    ("s390x", 0),
    ("s390", 0),
    ("ppc", 0),
    ("ppc32", 0),
    ("mispipe", 0),
    ("setlock", 1),
    ("softlimit", 0),
    ("envuidgid", 1),
    ("envdir", 1),
    ("pgrphack", 0),
    ("setuidgid", 1),
    ("multitime", 0),
    ("choom", 0),
    ("msgexec", 0),
    ("msgfilter", 0),
    ("heaptrack", 0),
    ("memusage", 0),
    ("luit", 0),
    ("gp-collect-app", 0),
    ("corepack", 0),
    ("gprofng", 0),
];

/// (program, subcommand, fixed operands): `uv run CMD`, `docker exec CONTAINER CMD`.
const SUBCOMMAND_LAUNCHERS: &[(&str, &str, usize)] = &[
    ("uv", "run", 0),
    ("poetry", "run", 0),
    ("pipenv", "run", 0),
    ("pdm", "run", 0),
    ("hatch", "run", 0),
    ("rye", "run", 0),
    ("pixi", "run", 0),
    ("conda", "run", 0),
    ("mamba", "run", 0),
    ("micromamba", "run", 0),
    ("bundle", "exec", 0),
    ("mise", "exec", 0),
    ("rtx", "exec", 0),
    ("asdf", "exec", 0),
    ("nvm", "exec", 0),
    ("npm", "exec", 0),
    ("pnpm", "exec", 0),
    ("pnpm", "dlx", 0),
    ("yarn", "exec", 0),
    ("yarn", "dlx", 0),
    ("docker", "run", 1),
    ("docker", "exec", 1),
    ("docker", "create", 1),
    ("podman", "run", 1),
    ("podman", "exec", 1),
    ("nerdctl", "run", 1),
    ("nerdctl", "exec", 1),
    ("kubectl", "exec", 1),
    ("kubectl", "run", 1),
    ("kubectl", "debug", 1),
    ("oc", "exec", 1),
    ("oc", "rsh", 1),
    ("lxc", "exec", 1),
    ("incus", "exec", 1),
    ("flatpak", "run", 0),
    ("snap", "run", 0),
    ("cmake", "env", 0),
    ("cmake", "time", 0),
    ("cmake", "chdir", 1),
    ("npm", "x", 0),
    ("bun", "x", 0),
    ("dotnet", "exec", 0),
    ("vagrant", "ssh", 0),
];

/// Options of container runners that take a value, so that the image and its command are
/// found after them (`docker run -v a:b -w /src IMAGE CMD`).
const CONTAINER_VALUED: &[(&str, &[&str])] = &[
    ("docker", DOCKER_VALUED),
    ("podman", DOCKER_VALUED),
    ("nerdctl", DOCKER_VALUED),
];
const DOCKER_VALUED: &[&str] = &[
    "-v",
    "--volume",
    "-w",
    "--workdir",
    "-e",
    "--env",
    "-p",
    "--publish",
    "-u",
    "--user",
    "--name",
    "--network",
    "--net",
    "-m",
    "--memory",
    "--mount",
    "--env-file",
    "-l",
    "--label",
    "--platform",
    "--cpus",
    "-h",
    "--hostname",
    "--add-host",
    "--device",
    "--cap-add",
    "--cap-drop",
    "--security-opt",
    "--ulimit",
    "--restart",
    "--log-driver",
    "--log-opt",
    "--pull",
    "--gpus",
    "--shm-size",
    "--tmpfs",
    "--volumes-from",
    "--link",
    "--ipc",
    "--pid",
    "--uts",
    "--runtime",
    "--group-add",
    "--dns",
    "--expose",
    "--label-file",
    "--cidfile",
    "--detach-keys",
    "--health-cmd",
    "--stop-signal",
    "--stop-timeout",
    "--userns",
];

/// How many later words are also checked as possible commands.
const MAX_CANDIDATES: usize = 8;

/// How many candidates one line may check in all.
const MAX_CANDIDATE_WALKS: usize = 512;

/// `tmux` subcommands that run no command and type no keys.
const TMUX_SAFE: &[&str] = &[
    "ls",
    "list-sessions",
    "list-windows",
    "lsw",
    "list-panes",
    "lsp",
    "capture-pane",
    "capturep",
    "has-session",
    "has",
    "kill-session",
    "kill-server",
    "kill-window",
    "kill-pane",
];

impl Walker {
    /// Handles `name` if it is a launcher; returns whether it was.
    pub(crate) fn launcher(&mut self, name: &str, args: &[Word], tail: bool) -> bool {
        if let Some((_, fixed)) = LOOSE.iter().find(|(n, _)| *n == name) {
            self.loose(name, args, *fixed, tail);
            return true;
        }
        if self.subcommand_launcher(name, args, tail) {
            return true;
        }
        // The dynamic loader runs the program named after its options.
        if name.starts_with("ld-linux") || name.starts_with("ld.so") || name.starts_with("ld-musl")
        {
            self.loose(name, args, 0, tail);
            return true;
        }
        self.named_launcher(name, args, tail)
    }

    /// `uv run CMD`, `docker exec CONTAINER CMD`, … (see [`SUBCOMMAND_LAUNCHERS`]).
    fn subcommand_launcher(&mut self, name: &str, args: &[Word], tail: bool) -> bool {
        let Some(sub) = args.iter().position(|w| !w.text.starts_with('-')) else {
            return false;
        };
        let word = args.get(sub).map(|w| w.text.as_str()).unwrap_or("");
        let found = SUBCOMMAND_LAUNCHERS
            .iter()
            .find(|(p, s, _)| *p == name && *s == word);
        let Some((_, _, fixed)) = found else {
            return false;
        };
        let rest = args.get(sub + 1..).unwrap_or(&[]);
        // `npx -c 'cmd'`, `npm exec --call='cmd'`, `vagrant ssh -c 'cmd'` take a line (and
        // npm's option parser takes abbreviations: `--cal=`).
        let opts = ["-c", "--call", "--command", "--entrypoint"];
        let hits = super::options::find(rest, &opts, &[], super::options::Style::Gnu);
        for line in hits.into_iter().filter_map(|h| h.value) {
            self.run_string(&format!("{name} {word}"), &line);
        }
        if let Some(valued) = CONTAINER_VALUED.iter().find(|(p, _)| *p == name) {
            self.container(name, rest, valued.1, tail);
            return true;
        }
        self.loose(name, rest, *fixed, tail);
        true
    }

    fn named_launcher(&mut self, name: &str, args: &[Word], tail: bool) -> bool {
        match name {
            "crontab" => {
                let lists = args.iter().any(|w| matches!(w.text.as_str(), "-l" | "-r"));
                if !lists {
                    self.opaque("`crontab`, which schedules commands it is given");
                }
            }
            "socat" => self.socat(args),
            "start-stop-daemon" => {
                let opts = ["--exec", "-x", "--startas", "-a"];
                let after = args.iter().position(|w| w.text == "--").map(|i| i + 1);
                let rest = after.and_then(|i| args.get(i..)).unwrap_or(&[]);
                for program in super::git::option_values(args, &opts) {
                    let mut words = vec![program];
                    words.extend(rest.iter().cloned());
                    self.inner_words(&words, tail);
                }
            }
            "nc" | "ncat" | "netcat" | "nc.openbsd" | "nc.traditional" => {
                let opts = ["-e", "-c", "--exec", "--sh-exec", "--lua-exec"];
                for line in super::git::option_values(args, &opts) {
                    self.run_string(name, &line);
                }
            }
            "npx" | "bunx" | "uvx" | "pipx" => {
                for line in super::git::option_values(args, &["-c", "--call"]) {
                    self.run_string(name, &line);
                }
                let args = if name == "pipx" {
                    args.get(1..).unwrap_or(&[])
                } else {
                    args
                };
                self.loose(name, args, 0, tail);
            }
            "sem" => self.opaque("`sem`, which builds the commands it runs from its input"),
            "dpkg-architecture" => {
                // `dpkg-architecture -c COMMAND…` runs the command with the variables set.
                let at = args
                    .iter()
                    .position(|w| matches!(w.text.as_str(), "-c" | "--command"));
                if let Some(at) = at {
                    self.inner_words(args.get(at + 1..).unwrap_or(&[]), tail);
                }
            }
            "gio" | "gtk-launch" | "gapplication" => {
                let launches = name != "gio" || args.first().is_some_and(|w| w.text == "launch");
                if launches {
                    self.opaque(format!("`{name}`, which runs what a desktop file names"));
                }
            }
            "hyperfine" => {
                // Each operand, and the setup and cleanup options, is a shell line.
                for w in args.iter().filter(|w| !w.text.starts_with('-')) {
                    self.run_string(name, w);
                }
            }
            "nodemon" => {
                for line in super::git::option_values(args, &["--exec", "-x"]) {
                    self.run_string(name, &line);
                }
            }
            "sg" => self.sg(args),
            "tmux" => self.tmux(args),
            "screen" | "byobu" | "at" | "batch" => {
                let info = matches!(
                    args.first().map(|w| w.text.as_str()),
                    Some("-ls" | "-list" | "-v" | "-l")
                );
                if !info {
                    self.opaque(format!("`{name}`, which runs commands it is given later"));
                }
            }
            "perf" => {
                let runs = ["record", "stat", "trace", "sched", "mem", "c2c", "kmem"];
                if args
                    .first()
                    .is_some_and(|w| runs.contains(&w.text.as_str()))
                {
                    self.loose(name, args.get(1..).unwrap_or(&[]), 0, tail);
                }
            }
            "ip" => self.ip(args, tail),
            "capsh" => {
                // `capsh [OPTIONS] -- ARGS` runs the shell (`--shell=`, else bash) with ARGS.
                if let Some(at) = args.iter().position(|w| !w.dynamic && w.text == "--") {
                    let shell = super::git::option_values(args, &["--shell"])
                        .pop()
                        .unwrap_or_else(|| Word::literal("bash"));
                    let mut words = vec![shell];
                    words.extend(args.get(at + 1..).unwrap_or(&[]).iter().cloned());
                    self.inner_words(&words, tail);
                } else if args.iter().any(|w| w.dynamic) {
                    self.opaque("`capsh` with an argument computed at run time");
                }
            }
            "pee" => {
                // Each operand is a shell line that gets a copy of the input.
                for w in args
                    .iter()
                    .filter(|w| w.dynamic || !w.text.starts_with('-'))
                {
                    self.run_string(name, w);
                }
            }
            "entr" => {
                let shell = args
                    .iter()
                    .take_while(|w| w.text.starts_with('-'))
                    .any(|w| !w.text.starts_with("--") && w.text.contains('s'));
                let rest: Vec<Word> = args
                    .iter()
                    .skip_while(|w| w.text.starts_with('-'))
                    .cloned()
                    .collect();
                match rest.first() {
                    Some(line) if shell => self.run_string("entr -s", line),
                    _ => self.loose(name, args, 0, tail),
                }
            }
            "watchexec" => {
                // Operands are joined and run by a shell unless `--shell=none`.
                let ops: Vec<&Word> = args
                    .iter()
                    .filter(|w| w.dynamic || !w.text.starts_with('-'))
                    .collect();
                self.joined_line("watchexec", &ops);
                self.loose(name, args, 0, tail);
            }
            "run-parts" => {
                let info = args.iter().any(|w| {
                    matches!(
                        w.text.as_str(),
                        "--test" | "--list" | "--help" | "--version"
                    )
                });
                if !info {
                    self.opaque("`run-parts`, which runs every program in a directory");
                }
            }
            "direnv" => {
                if args.first().is_some_and(|w| w.text == "exec") {
                    self.inner_words(args.get(2..).unwrap_or(&[]), tail);
                }
            }
            "nix" => {
                if let Some(i) = args
                    .iter()
                    .position(|w| matches!(w.text.as_str(), "-c" | "--command"))
                {
                    self.inner_words(args.get(i + 1..).unwrap_or(&[]), tail);
                }
            }
            _ => return false,
        }
        true
    }

    /// `docker run [OPTIONS] IMAGE [COMMAND…]`: options with values skipped by the table, so
    /// the command after the image is checked exactly; a computed option is opaque.
    fn container(&mut self, name: &str, args: &[Word], valued: &[&str], tail: bool) {
        let mut i = 0;
        while let Some(w) = args.get(i) {
            if super::options::may_be_option(w) {
                return self.opaque(format!(
                    "`{name}` with the option `{}`, computed at run time",
                    w.text
                ));
            }
            let t = w.text.as_str();
            if t == "--" {
                i += 1;
                break;
            }
            if !t.starts_with('-') || t == "-" {
                break;
            }
            let bare = t.split('=').next().unwrap_or(t);
            i += if valued.contains(&bare) && !t.contains('=') {
                2
            } else {
                1
            };
        }
        // The image, then the command.
        self.inner_words(args.get(i + 1..).unwrap_or(&[]), tail);
    }

    /// `NAME [-OPTIONS…] [FIXED…] COMMAND ARGS…`, options not modelled.
    pub(crate) fn loose(&mut self, name: &str, args: &[Word], fixed: usize, tail: bool) {
        let mut i = 0;
        while let Some(w) = args.get(i) {
            if w.dynamic && w.text.starts_with('-') {
                return self.opaque(format!(
                    "`{name}` with the option `{}`, computed at run time",
                    w.text
                ));
            }
            if w.text == "--" {
                i += 1;
                break;
            }
            if !w.text.starts_with('-') || w.text == "-" {
                break;
            }
            i += 1;
        }
        let mut start = i + fixed;
        if fixed > 0 && args.get(start).is_some_and(|w| w.text == "--") {
            start += 1;
        }
        let rest = args.get(start..).unwrap_or(&[]);
        self.inner_words(rest, tail);
        let later = (start + 1..args.len())
            .filter(|j| args.get(*j).is_some_and(|w| !w.text.starts_with('-')))
            .take(MAX_CANDIDATES);
        for j in later.collect::<Vec<_>>() {
            // Candidates of candidates multiply with every nested launcher: past a budget the
            // line is refused rather than checked in part.
            if self.candidates >= MAX_CANDIDATE_WALKS {
                return self.fail(super::ShellError::TooDeep(super::walk::MAX_DEPTH));
            }
            self.candidates += 1;
            self.maybe_words(args.get(j..).unwrap_or(&[]), tail);
        }
    }

    pub(crate) fn inner_words(&mut self, words: &[Word], open_tail: bool) {
        if !words.is_empty() {
            self.command(Cmd {
                words: words.to_vec(),
                open_tail,
                maybe: false,
            });
        }
    }

    /// Words that may be a command: checked against deny rules, and never an error.
    pub(crate) fn maybe_words(&mut self, words: &[Word], open_tail: bool) {
        let (was, opaque, error) = (self.maybe, self.out.opaque.len(), self.out.error.clone());
        self.maybe = true;
        self.inner_words(words, open_tail);
        self.maybe = was;
        self.out.opaque.truncate(opaque);
        if matches!(self.out.error, Some(super::ShellError::Parse(_))) {
            self.out.error = error;
        }
    }

    /// `socat EXEC:prog` and `SYSTEM:line` addresses run commands.
    fn socat(&mut self, args: &[Word]) {
        for w in args {
            let lower = w.text.to_ascii_lowercase();
            let at = lower.find("exec:").or_else(|| lower.find("system:"));
            if let Some(at) = at {
                let tail = w.text.get(at..).unwrap_or("");
                let body = tail.split_once(':').map(|(_, b)| b).unwrap_or("");
                let body = body.split(',').next().unwrap_or("");
                let line = Word {
                    text: body.to_string(),
                    dynamic: w.dynamic,
                };
                self.run_string("socat", &line);
            }
        }
    }

    /// `sg GROUP [-c] 'COMMAND LINE'`: the line runs in `/bin/sh`.
    fn sg(&mut self, args: &[Word]) {
        let mut rest = args.iter().skip_while(|w| w.text.starts_with('-')).skip(1);
        let line = match rest.next() {
            Some(w) if w.text == "-c" => rest.next(),
            other => other,
        };
        if let Some(line) = line.cloned() {
            self.script("sg", &line);
        }
    }

    fn tmux(&mut self, args: &[Word]) {
        let sub = args.iter().find(|w| !w.text.starts_with('-'));
        let safe = match sub {
            None => args.iter().all(|w| w.text == "-V"),
            Some(w) => !w.dynamic && TMUX_SAFE.contains(&w.text.as_str()),
        };
        if !safe {
            self.opaque("`tmux`, which runs commands and types keys it is given");
        }
    }

    /// `ip [OPTIONS] netns exec NAME COMMAND…`.
    fn ip(&mut self, args: &[Word], tail: bool) {
        let at = args
            .iter()
            .position(|w| w.text == "netns" || w.text == "-netns");
        let Some(at) = at else { return };
        if args.get(at + 1).is_some_and(|w| w.text == "exec") {
            self.inner_words(args.get(at + 3..).unwrap_or(&[]), tail);
        } else if args.get(at + 1).is_some_and(|w| w.dynamic) {
            self.opaque("`ip netns` with a subcommand computed at run time");
        }
    }
}
