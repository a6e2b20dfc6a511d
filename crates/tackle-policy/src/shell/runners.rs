//! Programs that run other programs through their options, operands, configuration files or
//! input, held as data: one row per program says which options take a command line, which a
//! file of code or configuration, which code in the program's own language, and whether the
//! program reads its commands from its input. Each row has its cases in
//! `tests/corpus/runners.txt`.
//!
//! What a row names is analysed (a command line is walked like `sh -c`); what it cannot see
//! through (code it does not screen, a command computed at run time, commands read from the
//! input) is opaque, which the rules refuse ("cannot tell what this runs").

use super::options::{self, Style};
use super::walk::Walker;
use super::words::Word;

/// What an option's value (or the option itself) makes the program do.
#[derive(Clone, Copy)]
pub(crate) enum Runs {
    /// The value is a command line, or a program with its arguments.
    Command,
    /// The value is a program and its arguments separated by commas (`gcc -wrapper`).
    CommaCommand,
    /// The value names a file of code or configuration that can run programs.
    File,
    /// The value is code in the program's own language; inert only if the screen says so.
    Code(Screen),
    /// The option alone makes the program run something the line does not show.
    Opaque,
    /// A value starting with `|` is a command the output is piped to (`psql -o '|cmd'`).
    PipeOrFile,
    /// An editor's ex command (`vim -c CMD`, `+CMD`): `!cmd` is a shell line.
    Ex,
}

/// Says whether code in a program's own language is inert (runs no program).
pub(crate) type Screen = Option<fn(&str) -> bool>;

/// What the program's operands are.
#[derive(Clone, Copy)]
pub(crate) enum Operands {
    /// Data: files to read or write.
    Data,
    /// The program reads its commands from its input unless one of these options gives them.
    Stdin(&'static [&'static str]),
    /// The first operand is a program file; without one the program reads it from its input.
    Script,
    /// Operands after the first N are code in the program's own language (or its commands
    /// come from its input when there are none).
    CodeAfter(usize, Screen),
    /// Reads commands from its input unless a command given with an option quits.
    UntilQuit,
}

pub(crate) struct Runner {
    pub names: &'static [&'static str],
    pub style: Style,
    pub opts: &'static [(&'static str, Runs)],
    pub operands: Operands,
    /// Options that take a value but run nothing (to tell a computed value from a computed
    /// option, and operands from option values).
    pub valued: &'static [&'static str],
    /// Files the program reads by itself that can name programs (`Makefile`, `*.rs`,
    /// `.git/`): a line that writes one and runs the program is opaque.
    pub reads: &'static [&'static str],
    /// `@FILE` words are files of more options (GNU response files).
    pub at_files: bool,
    /// Reading commands from the input is fine when the input is literal text in the line
    /// (a here-document or here-string) that this screen finds inert.
    pub stdin_screen: Screen,
}

const fn row(names: &'static [&'static str], opts: &'static [(&'static str, Runs)]) -> Runner {
    Runner {
        names,
        style: Style::Gnu,
        opts,
        operands: Operands::Data,
        valued: &[],
        reads: &[],
        at_files: false,
        stdin_screen: None,
    }
}

use Operands::{CodeAfter, Script, Stdin};
use Runs::{Code, CommaCommand, Command, Ex, File, Opaque, PipeOrFile};

const VI_OPTS: &[(&str, Runs)] = &[
    ("-c", Ex),
    ("--cmd", Ex),
    ("+", Ex),
    ("-S", File),
    ("-s", File),
    ("-u", File),
    ("-U", File),
    ("-W", Opaque),
];
const TEX_OPTS: &[(&str, Runs)] = &[
    ("-shell-escape", Opaque),
    ("--shell-escape", Opaque),
    ("-enable-write18", Opaque),
    ("--enable-write18", Opaque),
];
const GCC_OPTS: &[(&str, Runs)] = &[
    ("-wrapper", CommaCommand),
    ("-fplugin", Opaque),
    ("-B", Opaque),
    ("-specs", File),
    ("--specs", File),
    ("-fuse-ld", Opaque),
    ("--ld-path", Opaque),
    ("-no-integrated-as", Opaque),
];
const SSH_FILE_OPTS: &[(&str, Runs)] = &[("-F", File), ("-I", Opaque)];

/// The table. Programs with a screener of their own (git, ssh, interpreters, awk, sed,
/// databases, gdb, make, cargo) have theirs elsewhere; their rows here add what is generic.
pub(crate) static RUNNERS: &[Runner] = &[
    // --- archivers
    Runner {
        valued: &[
            "-f",
            "-C",
            "-T",
            "-X",
            "-b",
            "-H",
            "-K",
            "-N",
            "-V",
            "-g",
            "-L",
            "--file",
            "--directory",
            "--files-from",
            "--exclude-from",
            "--exclude",
            "--transform",
            "--owner",
            "--group",
            "--mode",
            "--mtime",
            "--format",
            "--label",
        ],
        ..row(
            &["tar", "gtar", "bsdtar"],
            &[
                ("--to-command", Command),
                ("--use-compress-program", Command),
                ("-I", Command),
                ("--rsh-command", Command),
                ("--rmt-command", Command),
                ("--info-script", Command),
                ("--new-volume-script", Command),
                ("-F", Command),
                ("--checkpoint-action", Code(Some(tar_action_inert))),
            ],
        )
    },
    row(&["zip"], &[("-TT", Command), ("--unzip-command", Command)]),
    row(
        &["cpio"],
        &[("--rsh-command", Command), ("--rmt-command", Command)],
    ),
    row(
        &["dpkg"],
        &[
            ("--pre-invoke", Command),
            ("--post-invoke", Command),
            ("--status-logger", Command),
            ("-i", Opaque),
            ("--install", Opaque),
            ("--unpack", Opaque),
            ("--configure", Opaque),
            ("--triggers-only", Opaque),
            ("--remove", Opaque),
            ("--purge", Opaque),
        ],
    ),
    row(
        &["apt-get", "apt", "aptitude", "apt-cache"],
        &[
            ("-o", Code(None)),
            ("--option", Code(None)),
            ("-c", File),
            ("--config-file", File),
        ],
    ),
    row(
        &["rpm"],
        &[
            ("--eval", Code(Some(rpm_inert))),
            ("-E", Code(Some(rpm_inert))),
            ("--define", Code(Some(rpm_inert))),
            ("-D", Code(Some(rpm_inert))),
            ("--macros", File),
            ("--rcfile", File),
            ("--pipe", Command),
            ("-i", Opaque),
            ("-U", Opaque),
            ("--install", Opaque),
            ("--upgrade", Opaque),
            ("-e", Opaque),
            ("--erase", Opaque),
        ],
    ),
    // --- text tools
    Runner {
        valued: &[
            "-k",
            "-t",
            "-o",
            "-S",
            "-T",
            "--key",
            "--field-separator",
            "--output",
            "--buffer-size",
            "--temporary-directory",
            "--parallel",
            "--files0-from",
            "--batch-size",
            "--sort",
            "--random-source",
        ],
        ..row(&["sort"], &[("--compress-program", Command)])
    },
    Runner {
        valued: &[
            "-l",
            "-b",
            "-C",
            "-n",
            "-a",
            "-t",
            "--lines",
            "--bytes",
            "--line-bytes",
            "--number",
            "--suffix-length",
            "--additional-suffix",
            "--separator",
        ],
        ..row(&["split"], &[("--filter", Command)])
    },
    Runner {
        operands: Script,
        ..row(
            &["m4", "gm4"],
            &[
                ("-D", Code(Some(m4_inert))),
                ("--define", Code(Some(m4_inert))),
            ],
        )
    },
    Runner {
        operands: Script,
        ..row(
            &["dc"],
            &[
                ("-e", Code(Some(no_bang))),
                ("--expression", Code(Some(no_bang))),
                ("-f", File),
                ("--file", File),
            ],
        )
    },
    Runner {
        operands: Stdin(&[]),
        stdin_screen: Some(no_bang),
        ..row(&["ed"], &[])
    },
    // --- pagers and documentation
    row(
        &["less"],
        &[
            ("+", Code(Some(less_inert))),
            ("-k", File),
            ("--lesskey-file", File),
            ("--lesskey-src", File),
            ("--lesskey-content", Code(None)),
        ],
    ),
    row(&["more", "most", "pg"], &[("+", Code(Some(less_inert)))]),
    row(
        &["man"],
        &[
            ("-P", Command),
            ("--pager", Command),
            ("-H", Command),
            ("--html", Command),
            ("-C", File),
            ("--config-file", File),
            (
                "--preprocessor",
                Code(Some(|p| p.chars().all(|c| c.is_ascii_alphabetic()))),
            ),
        ],
    ),
    row(&["bat", "batcat"], &[("--pager", Command)]),
    row(&["groff", "troff", "nroff"], &[("-U", Opaque)]),
    // --- editors
    // Editors read keys (or, in ex mode, commands) from their input until a command quits.
    Runner {
        operands: Operands::UntilQuit,
        stdin_screen: Some(no_bang),
        ..row(
            &[
                "vim",
                "vi",
                "nvim",
                "ex",
                "view",
                "vimdiff",
                "gvim",
                "rvim",
                "rview",
                "evim",
                "vim.basic",
                "vim.tiny",
                "editor",
                "sensible-editor",
            ],
            VI_OPTS,
        )
    },
    row(
        &["emacs", "emacsclient"],
        &[
            ("--eval", Code(None)),
            ("-eval", Code(None)),
            ("--execute", Code(None)),
            ("-l", File),
            ("--load", File),
            ("-f", Code(None)),
            ("--funcall", Code(None)),
            ("--script", File),
            ("-x", File),
        ],
    ),
    row(
        &["nano", "pico", "rnano"],
        &[("-s", Command), ("--speller", Command)],
    ),
    // --- network clients
    row(
        &["rsync"],
        &[
            ("-e", Command),
            ("--rsh", Command),
            ("--rsync-path", Command),
            ("--daemon", Opaque),
            ("--config", File),
        ],
    ),
    row(&["scp"], &[("-S", Command), ("-F", File), ("-I", Opaque)]),
    Runner {
        operands: Stdin(&["-b"]),
        ..row(
            &["sftp"],
            &[("-S", Command), ("-D", Command), ("-F", File), ("-b", File)],
        )
    },
    Runner {
        reads: &[".ssh/"],
        ..row(&["ssh", "slogin"], SSH_FILE_OPTS)
    },
    row(
        &["wget", "wget2"],
        &[
            ("--use-askpass", Command),
            ("-e", Code(Some(wget_inert))),
            ("--execute", Code(Some(wget_inert))),
            ("--config", File),
        ],
    ),
    row(
        &[
            "nc",
            "netcat",
            "nc.openbsd",
            "nc.traditional",
            "ncat",
            "busybox-nc",
        ],
        &[
            ("-e", Command),
            ("-c", Command),
            ("--exec", Command),
            ("--sh-exec", Command),
            ("--lua-exec", Code(None)),
        ],
    ),
    row(
        &["openvpn"],
        &[
            ("--up", Command),
            ("--down", Command),
            ("--route-up", Command),
            ("--route-pre-down", Command),
            ("--ipchange", Command),
            ("--client-connect", Command),
            ("--client-disconnect", Command),
            ("--learn-address", Command),
            ("--auth-user-pass-verify", Command),
            ("--tls-verify", Command),
            ("--config", File),
            ("--plugin", Opaque),
        ],
    ),
    row(&["tcpdump"], &[("-z", Command)]),
    Runner {
        operands: Stdin(&["-c", "-e", "-f"]),
        ..row(
            &["lftp"],
            &[
                ("-c", Code(Some(no_bang))),
                ("-e", Code(Some(no_bang))),
                ("-f", File),
            ],
        )
    },
    Runner {
        operands: Stdin(&[]),
        ..row(&["ftp", "tftp", "telnet"], &[])
    },
    row(
        &["smbclient"],
        &[
            ("-c", Code(Some(no_bang))),
            ("--command", Code(Some(no_bang))),
        ],
    ),
    // --- version control
    Runner {
        reads: &[".hg/", ".hgrc"],
        ..row(
            &["hg"],
            &[("--config", Code(None)), ("--config-file", File)],
        )
    },
    row(
        &["svn"],
        &[
            ("--editor-cmd", Command),
            ("--diff-cmd", Command),
            ("--diff3-cmd", Command),
            ("--config-option", Code(None)),
            ("--config-dir", Opaque),
        ],
    ),
    // --- build tools (their own screening is in `tools.rs`; the rows add what they read)
    Runner {
        valued: &[
            "-C",
            "-I",
            "-j",
            "-l",
            "-o",
            "-W",
            "--directory",
            "--include-dir",
            "--jobs",
            "--load-average",
            "--old-file",
            "--what-if",
            "--assume-new",
            "--assume-old",
        ],
        reads: &["Makefile", "makefile", "GNUmakefile", "*.mk"],
        ..row(
            &[
                "make",
                "gmake",
                "bmake",
                "pmake",
                "make-first-existing-target",
            ],
            &[
                ("--eval", Code(None)),
                ("-E", Code(None)),
                ("-f", File),
                ("--file", File),
                ("--makefile", File),
                ("--include-dir", Opaque),
                ("-I", Opaque),
            ],
        )
    },
    Runner {
        reads: &[
            "Cargo.toml",
            "*.rs",
            ".cargo/",
            "rust-toolchain",
            "rust-toolchain.toml",
        ],
        ..row(&["cargo"], &[])
    },
    Runner {
        reads: &[
            ".git/",
            ".gitattributes",
            ".gitmodules",
            ".gitconfig",
            ".lfsconfig",
        ],
        ..row(&["git"], &[])
    },
    // Interpreters import modules from the working directory and their paths.
    Runner {
        reads: &["*.py", "*.pth"],
        ..row(&["python", "pypy"], &[])
    },
    Runner {
        reads: &["*.js", "*.mjs", "*.cjs", "*.ts", "package.json"],
        ..row(&["node", "nodejs", "deno"], &[])
    },
    Runner {
        reads: &["*.pm", "*.pl"],
        ..row(&["perl"], &[])
    },
    Runner {
        reads: &["*.rb"],
        ..row(&["ruby"], &[])
    },
    Runner {
        reads: &["*.php"],
        ..row(&["php"], &[])
    },
    Runner {
        reads: &["*.lua"],
        ..row(&["lua", "luajit"], &[])
    },
    Runner {
        reads: &[".gdbinit"],
        operands: Stdin(&["-batch", "--batch", "-batch-silent", "--batch-silent"]),
        ..row(
            &["gdb", "gdb-multiarch", "gdbtui"],
            &[
                ("-x", File),
                ("--x", File),
                ("-command", File),
                ("--command", File),
                ("-ix", File),
                ("--ix", File),
                ("-init-command", File),
                ("--init-command", File),
                ("-batch", Code(Some(|_| true))),
                ("--batch", Code(Some(|_| true))),
                ("-batch-silent", Code(Some(|_| true))),
                ("--batch-silent", Code(Some(|_| true))),
            ],
        )
    },
    Runner {
        reads: &["CMakeLists.txt", "*.cmake"],
        ..row(
            &["cmake"],
            &[("-P", File), ("-C", File), ("-D", Code(Some(cmake_inert)))],
        )
    },
    Runner {
        reads: &["build.ninja", "*.ninja"],
        ..row(&["ninja"], &[("-f", File)])
    },
    Runner {
        reads: &["meson.build"],
        ..row(&["meson"], &[])
    },
    Runner {
        at_files: true,
        ..row(
            &[
                "gcc",
                "g++",
                "cc",
                "c++",
                "clang",
                "clang++",
                "c89",
                "c99",
                "gfortran",
                "cpp",
                "x86_64-linux-gnu-gcc",
                "tcc",
            ],
            GCC_OPTS,
        )
    },
    Runner {
        at_files: true,
        ..row(
            &[
                "ld", "ld.bfd", "ld.gold", "ld.lld", "lld", "mold", "as", "ar", "objcopy",
            ],
            &[("-plugin", Opaque), ("--plugin", Opaque)],
        )
    },
    row(
        &["rustc"],
        &[
            ("-C", Code(Some(rustc_codegen_inert))),
            ("--codegen", Code(Some(rustc_codegen_inert))),
            ("-Z", Code(None)),
        ],
    ),
    Runner {
        style: Style::Single,
        reads: &["*.go", "go.mod", "go.work"],
        ..row(
            &["go"],
            &[
                ("-exec", Command),
                ("-toolexec", Command),
                ("-overlay", File),
            ],
        )
    },
    Runner {
        reads: &["package.json", ".npmrc", "*.js", "*.mjs", "*.cjs", "*.ts"],
        ..row(
            &["npm", "pnpm", "yarn", "bun"],
            &[("--script-shell", Command), ("--node-options", Code(None))],
        )
    },
    Runner {
        reads: &["setup.py", "pyproject.toml", "setup.cfg"],
        ..row(&["pip", "pip3", "pipx"], &[])
    },
    Runner {
        reads: &[
            "*.py",
            "pytest.ini",
            "pyproject.toml",
            "tox.ini",
            "setup.cfg",
        ],
        ..row(&["pytest", "py.test"], &[("-p", Opaque)])
    },
    Runner {
        reads: &["tox.ini", "pyproject.toml", "setup.cfg"],
        ..row(&["tox"], &[])
    },
    Runner {
        reads: &["noxfile.py"],
        ..row(&["nox"], &[])
    },
    Runner {
        reads: &["Rakefile", "rakefile", "*.rake"],
        ..row(
            &["rake"],
            &[
                ("-e", Code(None)),
                ("--execute", Code(None)),
                ("-p", Code(None)),
                ("-f", File),
            ],
        )
    },
    Runner {
        reads: &["pom.xml"],
        ..row(&["mvn", "mvnw"], &[])
    },
    Runner {
        reads: &["*.gradle", "*.gradle.kts"],
        ..row(&["gradle", "gradlew"], &[])
    },
    Runner {
        reads: &["composer.json"],
        ..row(&["composer"], &[])
    },
    Runner {
        reads: &["justfile", "Justfile", ".justfile"],
        ..row(
            &["just"],
            &[("--shell", Command), ("-f", File), ("--justfile", File)],
        )
    },
    row(
        &["latexmk"],
        &[
            ("-e", Code(None)),
            ("-r", File),
            ("-pdflatex", Command),
            ("-latex", Command),
            ("-lualatex", Command),
            ("-xelatex", Command),
            ("-bibtex", Command),
            ("-makeindex", Command),
            ("-dvips", Command),
            ("-ps2pdf", Command),
            ("-pdf-viewer", Command),
        ],
    ),
    row(
        &[
            "tex", "latex", "pdflatex", "xelatex", "lualatex", "luatex", "pdftex", "xetex", "etex",
            "context",
        ],
        TEX_OPTS,
    ),
    row(
        &["pandoc"],
        &[
            ("--filter", Command),
            ("-F", Command),
            ("--lua-filter", File),
            ("-L", File),
            ("--pdf-engine", Command),
            ("--defaults", File),
            ("-d", File),
        ],
    ),
    row(&["dvips"], &[("-R0", Opaque)]),
    // --- languages of their own
    Runner {
        operands: Script,
        ..row(&["tclsh", "wish", "jimsh"], &[])
    },
    Runner {
        operands: Script,
        ..row(
            &["gnuplot"],
            &[("-e", Code(Some(gnuplot_inert))), ("-c", File)],
        )
    },
    Runner {
        operands: Stdin(&["--eval", "-e"]),
        ..row(&["octave", "octave-cli"], &[("--eval", Code(None))])
    },
    Runner {
        operands: Stdin(&["-e", "-f", "--file"]),
        ..row(
            &["r"],
            &[("-e", Code(None)), ("-f", File), ("--file", File)],
        )
    },
    row(&["ghc", "ghci", "stack", "cabal"], &[("-e", Code(None))]),
    Runner {
        operands: Script,
        ..row(
            &[
                "runghc",
                "runhaskell",
                "ocaml",
                "guile",
                "racket",
                "sbcl",
                "clisp",
                "scheme",
            ],
            &[
                ("-c", Code(None)),
                ("-e", Code(None)),
                ("--eval", Code(None)),
                ("-l", File),
                ("--load", File),
                ("--script", File),
            ],
        )
    },
    row(
        &[
            "groovy",
            "scala",
            "kotlin",
            "clojure",
            "clj",
            "jrunscript",
            "jjs",
        ],
        &[("-e", Code(None))],
    ),
    Runner {
        operands: Stdin(&["-c", "-Command", "-File", "-f", "-EncodedCommand", "-e"]),
        ..row(
            &["pwsh", "powershell"],
            &[
                ("-c", Code(None)),
                ("-Command", Code(None)),
                ("-EncodedCommand", Code(None)),
                ("-e", Code(None)),
                ("-File", File),
                ("-f", File),
            ],
        )
    },
    Runner {
        operands: Stdin(&[]),
        ..row(&["jshell", "irb", "pry", "bpython", "ipython"], &[])
    },
    // --- databases and their shells (their inputs are screened elsewhere too)
    Runner {
        operands: CodeAfter(1, Some(sqlite_inert)),
        ..row(
            &["sqlite3", "sqlite", "duckdb"],
            &[("-cmd", Code(Some(sqlite_inert))), ("-init", File)],
        )
    },
    Runner {
        operands: Stdin(&["-c", "--command", "-f", "--file"]),
        ..row(
            &["psql"],
            &[
                ("-c", Code(Some(psql_inert))),
                ("--command", Code(Some(psql_inert))),
                ("-f", File),
                ("--file", File),
                ("-o", PipeOrFile),
                ("--output", PipeOrFile),
                ("-L", PipeOrFile),
            ],
        )
    },
    Runner {
        operands: Stdin(&["-e", "--execute"]),
        ..row(
            &["mysql", "mariadb"],
            &[
                ("-e", Code(Some(mysql_inert))),
                ("--execute", Code(Some(mysql_inert))),
                ("--pager", Command),
                ("--defaults-file", File),
                ("--defaults-extra-file", File),
                ("--init-command", Code(Some(mysql_inert))),
                ("--plugin-dir", Opaque),
            ],
        )
    },
    Runner {
        reads: &["debian/"],
        ..row(
            &["dpkg-buildpackage", "debuild"],
            &[
                ("--root-command", Command),
                ("-r", Command),
                ("--check-command", Command),
                ("--sign-command", Command),
                ("--hook-init", Command),
                ("--hook-preclean", Command),
                ("--hook-source", Command),
                ("--hook-build", Command),
                ("--hook-binary", Command),
                ("--hook-buildinfo", Command),
                ("--hook-changes", Command),
                ("--hook-postclean", Command),
                ("--hook-check", Command),
                ("--hook-sign", Command),
                ("--hook-done", Command),
            ],
        )
    },
    row(
        &["gpg", "gpg2"],
        &[
            ("--photo-viewer", Command),
            ("--exec-path", Opaque),
            ("--load-extension", Opaque),
        ],
    ),
    Runner {
        style: Style::Single,
        ..row(
            &["java"],
            &[
                ("-javaagent", Opaque),
                ("-agentpath", Opaque),
                ("-agentlib", Opaque),
                ("-XX", Code(Some(java_xx_inert))),
            ],
        )
    },
    Runner {
        operands: Script,
        ..row(&["lli", "lli-14"], &[])
    },
    row(&["git-shell"], &[("-c", Opaque)]),
    row(&["install", "ginstall"], &[("--strip-program", Command)]),
    row(&["sdiff", "diff3"], &[("--diff-program", Command)]),
    row(&["pic", "gpic"], &[("-U", Opaque)]),
    // --- debuggers, tracers, profilers
    row(&["valgrind"], &[("--db-command", Command)]),
    row(&["perf"], &[("-s", File), ("--script", File)]),
    // --- terminals, sessions, schedulers
    row(&["script"], &[("-c", Command), ("--command", Command)]),
    row(
        &[
            "xterm",
            "uxterm",
            "x-terminal-emulator",
            "gnome-terminal",
            "konsole",
            "kitty",
            "alacritty",
            "st",
            "urxvt",
        ],
        &[("-e", Command), ("--command", Command)],
    ),
    row(
        &["fd", "fdfind"],
        &[
            ("-x", Command),
            ("--exec", Command),
            ("-X", Command),
            ("--exec-batch", Command),
        ],
    ),
    row(
        &["rg", "ripgrep"],
        &[("--pre", Command), ("--hostname-bin", Command)],
    ),
    row(
        &["fzf", "sk"],
        &[
            ("--preview", Command),
            ("--bind", Code(None)),
            ("--with-shell", Command),
        ],
    ),
    row(
        &["nix-shell"],
        &[("--run", Command), ("--command", Command)],
    ),
    row(
        &["aria2c"],
        &[
            ("--on-download-complete", Command),
            ("--on-download-error", Command),
            ("--on-download-start", Command),
            ("--on-download-pause", Command),
            ("--on-download-stop", Command),
            ("--on-bt-download-complete", Command),
            ("--conf-path", File),
        ],
    ),
    row(
        &["certbot"],
        &[
            ("--pre-hook", Command),
            ("--post-hook", Command),
            ("--deploy-hook", Command),
            ("--manual-auth-hook", Command),
            ("--manual-cleanup-hook", Command),
        ],
    ),
    row(&["scrot"], &[("-e", Command), ("--exec", Command)]),
    row(&["logrotate"], &[]),
    row(
        &["tshark", "wireshark"],
        &[("-X", Code(None)), ("-z", Code(None))],
    ),
    row(
        &["nmap"],
        &[
            ("--script", Opaque),
            ("--script-args", Code(None)),
            ("--interactive", Opaque),
        ],
    ),
    row(
        &[
            "xdg-open",
            "run-mailcap",
            "see",
            "edit",
            "compose",
            "print",
            "open",
        ],
        &[],
    ),
    row(&["gem"], &[("-e", Command), ("--editor", Command)]),
    row(&["cowsay", "cowthink"], &[("-f", File)]),
    row(&["mutt", "neomutt"], &[("-e", Code(None)), ("-F", File)]),
    row(&["mail", "mailx", "s-nail", "bsd-mailx"], &[]),
    row(
        &["busctl"],
        &[("--address", Code(Some(|a| !a.contains("unixexec"))))],
    ),
];

/// Programs that open files or URLs with whatever program the system associates with them.
const ASSOCIATION_OPENERS: &[&str] = &[
    "xdg-open",
    "run-mailcap",
    "see",
    "edit",
    "compose",
    "print",
    "open",
];

/// Programs whose input or association runs commands and for which no option helps.
const ALWAYS_OPAQUE: &[(&str, &str)] = &[
    ("logrotate", "runs the scripts of its configuration"),
    ("mail", "runs `~!` escapes from its input"),
    ("mailx", "runs `~!` escapes from its input"),
    ("s-nail", "runs `~!` escapes from its input"),
    ("bsd-mailx", "runs `~!` escapes from its input"),
];

/// Options that only print information; a program given one reads no commands.
const INFO: &[&str] = &[
    "--version",
    "-version",
    "-V",
    "--help",
    "-help",
    "-h",
    "-v",
    "-l",
    "--list",
];

/// The row of `name`, or of its unversioned name (`python3.12` is `python`).
pub(crate) fn find_runner(name: &str) -> Option<&'static Runner> {
    static BY_NAME: std::sync::OnceLock<std::collections::HashMap<&'static str, &'static Runner>> =
        std::sync::OnceLock::new();
    let by_name = BY_NAME.get_or_init(|| {
        let mut map = std::collections::HashMap::new();
        for row in RUNNERS {
            for n in row.names {
                // The first row naming a program wins, as a linear search would.
                map.entry(*n).or_insert(row);
            }
        }
        map
    });
    let base = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    let base = base.strip_suffix('-').unwrap_or(base);
    // `x86_64-linux-gnu-g++`, `c89-gcc`: a tool behind a prefix (erring wide: `foo-make` is
    // looked through as make).
    let tool = base
        .rsplit('-')
        .next()
        .filter(|t| !t.is_empty() && *t != base);
    by_name
        .get(name)
        .or_else(|| by_name.get(base))
        .or_else(|| tool.and_then(|t| by_name.get(t)))
        .copied()
}

impl Walker {
    /// Looks through a program of the table; returns whether `name` is one.
    pub(crate) fn runner(&mut self, name: &str, args: &[Word]) -> bool {
        let Some(row) = find_runner(name) else {
            return false;
        };
        let old_style;
        let args = if row.names.first() == Some(&"tar") {
            old_style = tar_old_style(args);
            old_style.as_slice()
        } else {
            args
        };
        if let Some((_, why)) = ALWAYS_OPAQUE.iter().find(|(n, _)| *n == name) {
            self.opaque(format!("`{name}`, which {why}"));
        }
        if ASSOCIATION_OPENERS.contains(&name) {
            self.opaque(format!(
                "`{name}`, which opens its operands with whatever program they are associated with"
            ));
        }
        if !row.opts.is_empty() {
            if let Some(w) = options::computed_option(args, row.valued) {
                self.opaque(format!(
                    "`{name}` with the argument `{}`, computed at run time, which may be an option that runs a command",
                    w.text
                ));
            }
        }
        let opts: Vec<&'static str> = row.opts.iter().map(|(o, _)| *o).collect();
        let flags: Vec<&'static str> = row
            .opts
            .iter()
            .filter(|(_, r)| matches!(r, Runs::Opaque))
            .map(|(o, _)| *o)
            .collect();
        let hits = options::find(args, &opts, &flags, row.style);
        for hit in &hits {
            let runs = row
                .opts
                .iter()
                .find(|(o, _)| *o == hit.opt)
                .map(|(_, r)| *r)
                .unwrap_or(Runs::Opaque);
            self.hit(name, hit, runs);
        }
        let given: Vec<&str> = hits.iter().map(|h| h.opt).collect();
        self.operands(name, row, args, &given);
        if !row.reads.is_empty() {
            self.out.reads.push((name.to_string(), row.reads));
        }
        if row.at_files {
            for file in args.iter().filter(|w| w.text.starts_with('@')) {
                let file = Word {
                    text: file.text.trim_start_matches('@').to_string(),
                    dynamic: file.dynamic,
                };
                self.script_file(name, &file);
            }
        }
        true
    }

    fn hit(&mut self, name: &str, hit: &options::Hit, runs: Runs) {
        let what = format!("{name} {}", hit.written);
        let Some(value) = &hit.value else {
            if matches!(runs, Runs::Opaque) {
                self.opaque(format!("`{what}`, which makes `{name}` run other code"));
            }
            return;
        };
        match runs {
            Runs::Command => self.run_string(&what, value),
            Runs::CommaCommand => {
                let line = Word {
                    text: value.text.replace(',', " "),
                    dynamic: value.dynamic,
                };
                self.run_string(&what, &line);
            }
            Runs::File => self.script_file(name, value),
            Runs::Code(screen) => {
                let inert = !value.dynamic && screen.is_some_and(|s| s(&value.text));
                if !inert {
                    self.opaque(format!(
                        "`{name}` code `{}`, which may run programs",
                        value.text
                    ));
                }
            }
            Runs::Opaque => self.opaque(format!("`{what}`, which makes `{name}` run other code")),
            Runs::PipeOrFile => {
                if let Some(cmd) = value.text.trim_start().strip_prefix('|') {
                    let cmd = Word {
                        text: cmd.to_string(),
                        dynamic: value.dynamic,
                    };
                    self.run_string(&what, &cmd);
                } else if value.dynamic {
                    self.opaque(format!("`{what}`, computed at run time"));
                }
            }
            Runs::Ex => self.ex_command(name, value),
        }
    }

    fn operands(&mut self, name: &str, row: &Runner, args: &[Word], given: &[&str]) {
        let info = args.iter().any(|w| INFO.contains(&w.text.as_str()));
        let operands = operand_words(args, row);
        // Without input from the line there are no commands to read; input that is literal
        // text in the line is screened like any other code.
        let literal_input = !self.fed
            || self
                .stdin_literal
                .as_deref()
                .is_some_and(|text| row.stdin_screen.is_some_and(|s| s(text)));
        match row.operands {
            Operands::Data => {}
            Operands::Stdin(unless) => {
                let remote = name == "sftp" && operands.iter().any(|w| w.text.contains(':'));
                if !info && !literal_input && !remote && !given.iter().any(|g| unless.contains(g)) {
                    self.opaque(format!("`{name}` reading its commands from its input"));
                }
            }
            Operands::UntilQuit => {
                let quits = given_quit(args);
                if !info && !literal_input && !quits {
                    self.opaque(format!(
                        "`{name}` reading keys or commands from its input (end the commands given with `-c` in a quit, e.g. `-c wq`)"
                    ));
                }
            }
            Operands::Script => match operands.first() {
                Some(file) => self.script_file(name, file),
                None if info || !given.is_empty() || !self.fed => {}
                None => self.opaque(format!("`{name}` reading a program from its input")),
            },
            Operands::CodeAfter(n, screen) => {
                let code = operands.get(n..).unwrap_or(&[]);
                for c in code {
                    let inert = !c.dynamic && screen.is_some_and(|s| s(&c.text));
                    if !inert {
                        self.opaque(format!(
                            "`{name}` code `{}`, which may run programs",
                            c.text
                        ));
                    }
                }
                if code.is_empty() && !info && given.is_empty() && self.fed {
                    self.opaque(format!("`{name}` reading its commands from its input"));
                }
            }
        }
    }
}

/// `tar cIf CMD a.tgz` (options without a dash, their values in the next words, in order) as
/// `tar -c -I CMD -f a.tgz`.
fn tar_old_style(args: &[Word]) -> Vec<Word> {
    const VALUED: &str = "fIFCTXbHKNVgL";
    let Some(first) = args.first().filter(|w| {
        !w.dynamic && !w.text.starts_with('-') && w.text.chars().all(|c| c.is_ascii_alphabetic())
    }) else {
        return args.to_vec();
    };
    let mut rest = args.iter().skip(1);
    let mut out = Vec::new();
    for c in first.text.chars() {
        out.push(Word::literal(format!("-{c}")));
        if VALUED.contains(c) {
            out.extend(rest.next().cloned());
        }
    }
    out.extend(rest.cloned());
    out
}

/// Whether the last ex command given with `-c` or `+` quits the editor (`wq`, `q!`, `x`).
fn given_quit(args: &[Word]) -> bool {
    let hits = options::find(args, &["-c", "+"], &[], Style::Gnu);
    hits.last().and_then(|h| h.value.as_ref()).is_some_and(|v| {
        let ex = v.text.trim().trim_start_matches(':');
        matches!(
            ex,
            "q" | "q!"
                | "wq"
                | "wq!"
                | "x"
                | "x!"
                | "qa"
                | "qa!"
                | "wqa"
                | "wqa!"
                | "xa"
                | "quit"
                | "quit!"
                | "exit"
                | "xit"
                | "wqall"
                | "qall"
                | "qall!"
        )
    })
}

/// The operands: words that are neither options nor the values of the row's options.
fn operand_words(args: &[Word], row: &Runner) -> Vec<Word> {
    let mut out = Vec::new();
    let mut skip = false;
    let mut ended = false;
    for w in args {
        if skip {
            skip = false;
            continue;
        }
        if !ended && !w.dynamic && w.text == "--" {
            ended = true;
            continue;
        }
        let t = w.text.as_str();
        if !ended && t.len() > 1 && t.starts_with(['-', '+']) && !w.dynamic {
            let takes = row.valued.contains(&t)
                || row
                    .opts
                    .iter()
                    .any(|(o, r)| *o == t && !matches!(r, Runs::Opaque) && *o != "+");
            skip = takes;
            continue;
        }
        out.push(w.clone());
    }
    out
}

/// `java -XX:OnError=CMD` and `-XX:OnOutOfMemoryError=CMD` run a command.
fn java_xx_inert(v: &str) -> bool {
    let v = v.to_ascii_lowercase();
    !(v.contains("onerror") || v.contains("onoutofmemory"))
}

/// `tar --checkpoint-action`: every action but `exec=`/`EXEC=` only prints or waits.
fn tar_action_inert(v: &str) -> bool {
    !v.to_ascii_lowercase().contains("exec")
}

fn no_bang(v: &str) -> bool {
    !v.contains('!')
}

/// m4 definitions are inert unless they call the shell or read other files.
fn m4_inert(v: &str) -> bool {
    mentions_none(v, &["syscmd", "esyscmd", "include", "sinclude", "undivert"])
}

/// less commands given with `+`: searches and motions, but not `!`/`|` (shell), `v` (editor),
/// `s`/`o` (save to a file), `:e`/`E` (examine another file) or `#` (prompt expansion).
fn less_inert(v: &str) -> bool {
    let body = v.trim_start_matches('+');
    if let Some(pattern) = body.strip_prefix(['/', '?']) {
        return !pattern.contains(['!', '|', '`']);
    }
    body.chars()
        .all(|c| c.is_ascii_digit() || matches!(c, 'g' | 'G' | 'F' | 'j' | 'k' | 'p' | '%' | 'q'))
}

/// wgetrc commands are inert unless they name a program (`use_askpass`).
fn wget_inert(v: &str) -> bool {
    let v = v.to_ascii_lowercase().replace(['_', '-'], "");
    !v.contains("askpass")
}

/// rpm macros run the shell through `%(…)`, and Lua through `%{lua:…}`.
fn rpm_inert(v: &str) -> bool {
    !(v.contains("%(") || v.contains("lua") || v.contains("%{expand"))
}

/// `cmake -D` variables that name a program to run (launchers, compilers, tools).
fn cmake_inert(v: &str) -> bool {
    let key = v
        .split(['=', ':'])
        .next()
        .unwrap_or("")
        .to_ascii_uppercase();
    ![
        "LAUNCHER",
        "COMPILER",
        "PROGRAM",
        "COMMAND",
        "EXECUTABLE",
        "LINKER",
        "TOOL",
        "SHELL",
        "EMULATOR",
    ]
    .iter()
    .any(|k| key.contains(k))
}

/// `rustc -C KEY=VALUE`: only the linker (and its flavour) names a program.
fn rustc_codegen_inert(v: &str) -> bool {
    let key = v.split('=').next().unwrap_or("").trim().replace('_', "-");
    !matches!(
        key.as_str(),
        "linker" | "linker-flavor" | "llvm-args" | "link-self-contained"
    )
}

/// gnuplot runs the shell through `system`, `!`, backticks, and pipes in file names.
fn gnuplot_inert(v: &str) -> bool {
    !v.contains(['!', '`', '|', '<'])
        && mentions_none(v, &["system", "load", "call", "shell", "eval"])
}

/// sqlite3 SQL and dot-commands: inert unless a dot-command other than the listed ones appears
/// (`.shell`, `.system`, `.once |…`, `.import`, `.load` …) or SQL loads an extension or
/// starts an editor.
fn sqlite_inert(v: &str) -> bool {
    const DOTS: &[&str] = &[
        ".tables",
        ".schema",
        ".headers",
        ".header",
        ".mode",
        ".quit",
        ".exit",
        ".dump",
        ".indexes",
        ".indices",
        ".databases",
        ".timer",
        ".width",
        ".nullvalue",
        ".separator",
        ".show",
        ".changes",
        ".eqp",
        ".print",
        ".fullschema",
        ".stats",
        ".bail",
        ".echo",
    ];
    let lower = v.to_ascii_lowercase();
    if lower.contains("load_extension")
        || lower.contains("edit(")
        || lower.contains("readfile")
        || lower.contains("writefile")
    {
        return false;
    }
    // Dot-commands stand at the start of a line (or of the whole argument).
    lower.lines().all(|line| {
        let line = line.trim_start();
        !line.starts_with('.')
            || DOTS
                .iter()
                .any(|d| line.split_whitespace().next() == Some(*d))
    }) && !lower.contains(";.")
        && !lower.contains("; .")
}

/// psql meta-commands that run programs or read or write files.
fn psql_inert(v: &str) -> bool {
    const RUNS: &[&str] = &[
        "\\!", "\\o", "\\g", "\\copy", "\\i", "\\w", "\\e", "\\setenv", "\\s", "program",
    ];
    mentions_none(v, RUNS)
}

/// mysql client commands that run programs or read files.
fn mysql_inert(v: &str) -> bool {
    const RUNS: &[&str] = &[
        "\\!",
        "system",
        "\\.",
        "source",
        "pager",
        "\\p",
        "tee",
        "\\t",
        "load_file",
        "outfile",
        "dumpfile",
    ];
    mentions_none(v, RUNS)
}

/// Whether `v` mentions none of `words`, ignoring case.
fn mentions_none(v: &str, words: &[&str]) -> bool {
    let lower = v.to_ascii_lowercase();
    !words.iter().any(|w| lower.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_program_has_one_row() {
        let mut seen = std::collections::HashSet::new();
        for row in RUNNERS {
            for n in row.names {
                assert!(seen.insert(*n), "`{n}` has two rows");
            }
        }
    }

    /// The table is data with cases: each row's programs appear in the corpus, so a row
    /// cannot be added (or kept) without a line that exercises it.
    #[test]
    fn every_row_has_a_corpus_case() {
        let text = include_str!("../../tests/corpus/runners.txt");
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("allow") || l.starts_with("deny"))
            .collect();
        let missing: Vec<&str> = RUNNERS
            .iter()
            .filter(|row| {
                !lines.iter().any(|l| {
                    l.splitn(3, " | ").nth(2).is_some_and(|cmd| {
                        cmd.split_whitespace()
                            .filter_map(find_runner)
                            .any(|r| std::ptr::eq(r, *row))
                    })
                })
            })
            .map(|row| row.names.first().copied().unwrap_or(""))
            .collect();
        assert!(
            missing.is_empty(),
            "rows without a case in runners.txt: {missing:?}"
        );
    }
}
