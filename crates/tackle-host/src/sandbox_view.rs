//! The sandbox of one command, as a value.
//!
//! [`plan`] turns the call's grants and paths and what this machine has ([`Machine`]) into a
//! [`SandboxView`]: every mount in order, the programs taken away or the only ones left, where
//! files may be executed, the system-call filter, the network and the user. `exec` spawns
//! exactly what the view says (bubblewrap's arguments are [`SandboxView::bwrap_args`]), and
//! `--explain` and `tackle doctor` print the same value, so what is shown is what runs.

use crate::programs::{self, Listing, MaskedProgram};
use serde::Serialize;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tackle_policy::shell::{program_rules, rule_layers, RuleEnforcement};
use tackle_protocol::ShellGrant;

/// System directories shown read-only (as links where the host has links: `/bin` → `usr/bin`).
pub(crate) const SYSTEM: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix",
];

/// Secrets kept in the system directories (readable to root, who may be running Tackle).
const SYSTEM_SECRETS: &[&str] = &[
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/ssl/private",
    "/etc/sudoers",
    "/etc/sudoers.d",
];

/// Where files only their owner may read are looked for when Tackle runs as root (inside the
/// sandbox root still owns them, so the kernel's permission check would let it read them).
const ROOT_ONLY_SCAN: &[&str] = &["/etc", "/opt"];

/// Toolchains under the home directory, shown read-only so that `cargo`, `rustup`, `pyenv`,
/// `nvm` … still work. Credentials kept beside them (`~/.cargo/credentials.toml`) are not
/// among these paths.
const HOME_TOOLCHAINS: &[&str] = &[
    ".cargo/bin",
    ".cargo/registry",
    ".cargo/git",
    ".rustup",
    ".pyenv",
    ".nvm",
    ".local/bin",
    ".local/lib",
    ".deno",
    ".bun",
    ".volta",
    "go/bin",
    "go/pkg",
    ".gitconfig",
];

/// The device nodes of a sandbox /dev made without a devpts (those bubblewrap's `--dev` has).
const DEVICE_NODES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

/// The links such a /dev has: (target, link).
const DEVICE_LINKS: &[(&str, &str)] = &[
    ("/proc/self/fd", "/dev/fd"),
    ("/proc/self/fd/0", "/dev/stdin"),
    ("/proc/self/fd/1", "/dev/stdout"),
    ("/proc/self/fd/2", "/dev/stderr"),
    ("/proc/kcore", "/dev/core"),
];

/// What kind of thing a path is on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    Missing,
    Dir,
    File,
    Link(PathBuf),
}

/// What the plan needs to know about this machine. The real one looks at the file system;
/// tests give a made-up one.
pub(crate) trait Machine {
    fn kind(&self, path: &Path) -> Kind;
    /// The program directories and what is in them.
    fn listing(&self) -> Arc<Listing>;
    /// Whether Tackle runs as root (files root owns are then the command's own).
    fn is_root(&self) -> bool;
    /// Files and directories under `ROOT_ONLY_SCAN` that others may not read: (path, is a dir).
    fn root_only(&self) -> Vec<(PathBuf, bool)>;
    /// The host's SSH keys, which sit beside the client configuration ssh still needs.
    fn ssh_host_keys(&self) -> Vec<PathBuf>;
    /// Directories programs come from outside the system ones (`PATH` entries, toolchain homes).
    fn extra_program_dirs(&self) -> Vec<PathBuf>;
    /// The shared libraries `program` links (real paths, the dynamic loader included).
    fn libraries(&self, program: &Path) -> Vec<PathBuf>;
    /// The libraries the programs of a helper directory link.
    fn helper_libraries(&self, dir: &Path) -> Vec<PathBuf>;
    /// A hint that [`Machine::libraries`] will be asked about each of `programs`.
    fn prefetch_libraries(&self, _programs: &[PathBuf]) {}
}

/// The call's side of the plan.
pub(crate) struct Inputs<'a> {
    pub shell: &'a ShellGrant,
    pub cwd: &'a Path,
    pub workspace: &'a Path,
    pub tmpdir: &'a Path,
    pub read: &'a [PathBuf],
    pub write: &'a [PathBuf],
    pub home: Option<&'a Path>,
    /// Files shown read-only under the (empty) home: (the file, the path under the home).
    /// Decoy credentials (`security.honeytokens`); nothing when there is no home.
    pub home_files: &'a [(PathBuf, PathBuf)],
    /// Files and directories that stay invisible even inside a granted root (Tackle's config
    /// file and state directory).
    pub hidden: &'a [PathBuf],
    /// More paths to show read-only (the network bridge program).
    pub also_read: &'a [PathBuf],
    /// The call reaches the network through the filtering proxy.
    pub proxied_network: bool,
}

/// One mount, in the order bubblewrap makes them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Mount {
    /// A symbolic link at `at` pointing to `target` (bubblewrap's `--symlink`), as the host
    /// has it (e.g. `/bin` → `usr/bin` on merged-/usr systems).
    Symlink {
        /// What the link points to, as written in the host's link (may be relative).
        target: PathBuf,
        /// Where the link is made in the sandbox.
        at: PathBuf,
    },
    /// `src` shown read-only at `at`; `optional`: nothing when `src` is missing.
    ReadOnly {
        /// The host path shown.
        src: PathBuf,
        /// Where it appears in the sandbox.
        at: PathBuf,
        /// A missing `src` is skipped instead of failing the sandbox's start.
        optional: bool,
    },
    /// `src` shown writable at `at` (the workspace, write grants, the session's TMPDIR):
    /// the command's writes land in the host's files.
    ReadWrite {
        /// The host path shown.
        src: PathBuf,
        /// Where it appears in the sandbox.
        at: PathBuf,
        /// A missing `src` is skipped instead of failing the sandbox's start.
        optional: bool,
    },
    /// An empty directory (writable unless remounted read-only later).
    Tmpfs {
        /// Where the tmpfs is mounted in the sandbox.
        at: PathBuf,
    },
    /// A file replaced by an empty one that cannot be executed.
    Masked {
        /// The path in the sandbox whose file is replaced by `/dev/null`.
        at: PathBuf,
    },
    /// A minimal `/dev` made by bubblewrap (null, zero, random, tty and the like; no disks).
    Dev {
        /// Where it is mounted, normally `/dev`.
        at: PathBuf,
    },
    /// A device node of the host, usable (no `nodev`).
    DeviceNode {
        /// The device's path, the same on the host and in the sandbox.
        at: PathBuf,
    },
    /// An empty directory created in a tmpfs.
    Dir {
        /// The directory's path in the sandbox.
        at: PathBuf,
    },
    /// A fresh `/proc` for the sandbox's own PID namespace: only its processes are seen.
    Proc {
        /// Where it is mounted, normally `/proc`.
        at: PathBuf,
    },
    /// An earlier mount at `at` made read-only once everything under it is in place (e.g. an
    /// emptied home whose placeholders are made).
    RemountReadOnly {
        /// The mount point made read-only.
        at: PathBuf,
    },
}

/// Where files may be executed from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Executable {
    /// Anything the view shows (denied programs are not in it).
    Anywhere,
    /// The start-up step empties the program directories (`emptied`), shows each allowed
    /// program in its place (`shown`: real file, place), binds the libraries they link, the
    /// loader and their helper directories on themselves (`bound`), then makes every mount
    /// `noexec` but those (`keep`). Neither `execve` nor the dynamic loader (which maps a
    /// program with `PROT_EXEC`) can run anything else, written or found.
    Only {
        /// The program directories emptied (a tmpfs over each, read-only afterwards).
        emptied: Vec<PathBuf>,
        /// Each allowed program as (its real file on the host, its place in an emptied
        /// directory).
        shown: Vec<(PathBuf, PathBuf)>,
        /// Libraries, the loader and helper directories bound on themselves, so that they stay
        /// executable.
        bound: Vec<PathBuf>,
        /// Every mount left executable: the shown programs' places and `bound`.
        keep: Vec<PathBuf>,
        /// Directories of helper programs the allowed programs run (such as git's
        /// `libexec/git-core`); also in `bound`.
        helper_dirs: Vec<PathBuf>,
    },
}

/// The sandbox one command runs in.
#[derive(Debug, Clone, Serialize)]
pub struct SandboxView {
    /// The mounts that make the view, in the order bubblewrap makes them (later ones cover
    /// earlier ones).
    pub mounts: Vec<Mount>,
    /// Files taken away because they are a denied program.
    pub masked_programs: Vec<MaskedProgram>,
    /// Under an allow list: the only programs in the program directories.
    pub visible_programs: Option<Vec<PathBuf>>,
    /// Where files may be executed from in the view.
    pub executable: Executable,
    /// Files hidden because only root may read them and Tackle runs as root.
    pub root_only_hidden: usize,
    /// Blocked system calls and argument checks (names), see `seccomp`.
    pub seccomp: &'static [String],
    /// What network the command has, for a person: `none`, or only through the filtering
    /// proxy when the call has a network grant.
    pub network: &'static str,
    /// Who the command runs as, for a person (the operator's user, no capabilities).
    pub user: &'static str,
    /// The directory the command starts in (inside the workspace or a granted root).
    pub cwd: PathBuf,
    /// Each rule of the shell grant with the layer that enforces it (the view, the seccomp
    /// filter or the shell analyser).
    pub rules: Vec<RuleEnforcement>,
}

impl SandboxView {
    /// Whether the command starts through `tackle __sandbox-exec` (an allow list).
    pub fn needs_init(&self) -> bool {
        matches!(self.executable, Executable::Only { .. })
    }

    /// bubblewrap's arguments for this view, ending with `--` (the program follows).
    pub(crate) fn bwrap_args(&self, seccomp_fds: &[i32]) -> Vec<OsString> {
        let mut a: Vec<OsString> = Vec::new();
        let mut push =
            |words: &[&std::ffi::OsStr]| a.extend(words.iter().map(|w| w.to_os_string()));
        for m in &self.mounts {
            match m {
                Mount::Symlink { target, at } => {
                    push(&["--symlink".as_ref(), target.as_os_str(), at.as_os_str()])
                }
                Mount::ReadOnly { src, at, optional } => {
                    let flag = if *optional {
                        "--ro-bind-try"
                    } else {
                        "--ro-bind"
                    };
                    push(&[flag.as_ref(), src.as_os_str(), at.as_os_str()])
                }
                Mount::ReadWrite { src, at, optional } => {
                    let flag = if *optional { "--bind-try" } else { "--bind" };
                    push(&[flag.as_ref(), src.as_os_str(), at.as_os_str()])
                }
                Mount::Tmpfs { at } => push(&["--tmpfs".as_ref(), at.as_os_str()]),
                Mount::Masked { at } => {
                    push(&["--ro-bind".as_ref(), "/dev/null".as_ref(), at.as_os_str()])
                }
                Mount::Dev { at } => push(&["--dev".as_ref(), at.as_os_str()]),
                Mount::DeviceNode { at } => {
                    push(&["--dev-bind".as_ref(), at.as_os_str(), at.as_os_str()])
                }
                Mount::Dir { at } => push(&["--dir".as_ref(), at.as_os_str()]),
                Mount::Proc { at } => push(&["--proc".as_ref(), at.as_os_str()]),
                Mount::RemountReadOnly { at } => push(&["--remount-ro".as_ref(), at.as_os_str()]),
            }
        }
        push(&["--chdir".as_ref(), self.cwd.as_os_str()]);
        // No network: a command with a network grant reaches it through the bridge and proxy.
        push(&["--unshare-all".as_ref()]);
        for fd in seccomp_fds {
            push(&["--add-seccomp-fd".as_ref(), fd.to_string().as_ref()]);
        }
        push(&["--die-with-parent".as_ref(), "--new-session".as_ref()]);
        push(&["--cap-drop".as_ref(), "ALL".as_ref()]);
        if self.needs_init() {
            // Only for the start-up step, which remounts the writable places `noexec`, drops
            // every capability (bounding set included) and restricts execution before the
            // command starts.
            push(&["--cap-add".as_ref(), "CAP_SYS_ADMIN".as_ref()]);
            push(&["--cap-add".as_ref(), "CAP_SETPCAP".as_ref()]);
        }
        push(&["--".as_ref()]);
        a
    }

    /// The arguments of the start-up step for this view: `__sandbox-exec`, the mounts that
    /// keep their right to execute, and the descriptor the step was started from (Tackle's
    /// own binary, passed in rather than shown in the view; closed before the command runs).
    pub(crate) fn init_args(&self, own_fd: i32) -> Vec<OsString> {
        let mut a: Vec<OsString> = vec!["__sandbox-exec".into()];
        if let Executable::Only {
            emptied,
            shown,
            bound,
            ..
        } = &self.executable
        {
            for d in emptied {
                a.push("--empty".into());
                a.push(d.clone().into());
            }
            for (src, at) in shown {
                a.push("--show".into());
                a.push(src.clone().into());
                a.push(at.clone().into());
            }
            for p in bound {
                a.push("--bind-self".into());
                a.push(p.clone().into());
            }
        }
        a.push("--close-fd".into());
        a.push(own_fd.to_string().into());
        a.push("--".into());
        a
    }
}

/// What Landlock alone can make of a grant's program rules where namespaces are missing: a
/// denied program's files neither readable nor executable; under an allow list, only the
/// allowed programs, the shell and the loader executable (nothing written). The dynamic
/// loader can still map a readable file, which only the namespace view stops.
pub(crate) fn landlock_limits(shell: &ShellGrant) -> crate::sandbox::ProgramLimits {
    use crate::sandbox::ProgramLimits;
    let mut rules = program_rules(shell);
    rules.denied.retain(|p| !is_the_shell(p));
    if rules.is_empty() {
        return ProgramLimits::None;
    }
    let listing = RealMachine.listing();
    match &rules.allowed {
        Some(allowed) => {
            let masked = programs::denied_files(&listing, &rules.denied);
            let mut files: Vec<PathBuf> = Vec::new();
            for (_, name, real) in programs::allowed_entries(&listing, allowed) {
                if masked.iter().any(|m| m.path == real) {
                    continue;
                }
                if let Some(n) = name.to_str() {
                    files.extend(programs::helper_dirs(n, &real));
                }
                files.push(real);
            }
            files.extend(
                programs::LOADERS
                    .iter()
                    .filter_map(|l| std::fs::canonicalize(l).ok()),
            );
            files.sort();
            files.dedup();
            ProgramLimits::ExecuteOnly(files)
        }
        None => ProgramLimits::Hidden(
            programs::denied_files(&listing, &rules.denied)
                .into_iter()
                .map(|m| m.path)
                .collect(),
        ),
    }
}

/// The view for one command on this machine.
pub(crate) fn for_command(inputs: &Inputs<'_>) -> SandboxView {
    plan(inputs, &RealMachine)
}

/// The view for one command: grants, call and machine in, mounts and rules out.
pub(crate) fn plan(inputs: &Inputs<'_>, machine: &dyn Machine) -> SandboxView {
    let mut rules = program_rules(inputs.shell);
    // The line itself runs in bash: taking bash away would stop every line, not the ones that
    // start another bash, so a `bash` rule stays with the analyser.
    rules.denied.retain(|p| !is_the_shell(p));
    let listing = if rules.is_empty() {
        Arc::new(Listing::default())
    } else {
        machine.listing()
    };
    let mut mounts = Vec::new();
    for dir in SYSTEM.iter().map(PathBuf::from) {
        match machine.kind(&dir) {
            Kind::Link(target) => mounts.push(Mount::Symlink { target, at: dir }),
            Kind::Dir => mounts.push(Mount::ReadOnly {
                src: dir.clone(),
                at: dir,
                optional: false,
            }),
            Kind::File | Kind::Missing => {}
        }
    }
    let secrets: Vec<PathBuf> = SYSTEM_SECRETS
        .iter()
        .map(PathBuf::from)
        .chain(machine.ssh_host_keys())
        .collect();
    for s in &secrets {
        hide(&mut mounts, machine, s);
    }
    let mut root_only_hidden = 0;
    if machine.is_root() {
        for (p, is_dir) in machine.root_only() {
            if secrets.iter().any(|s| p.starts_with(s)) {
                continue;
            }
            root_only_hidden += 1;
            mounts.push(if is_dir {
                Mount::Tmpfs { at: p }
            } else {
                Mount::Masked { at: p }
            });
        }
    }
    if rules.allowed.is_some() {
        // bubblewrap's `--dev` mounts a devpts, for which it sets the sandbox up in a user
        // namespace of its own and runs the command in a nested one that does not own the
        // mounts; the start-up step could then not make them `noexec`. Commands get no
        // terminal anyway, so this /dev is the usual nodes without a devpts.
        mounts.push(Mount::Tmpfs { at: "/dev".into() });
        for node in DEVICE_NODES {
            mounts.push(Mount::DeviceNode { at: node.into() });
        }
        for (target, at) in DEVICE_LINKS {
            mounts.push(Mount::Symlink {
                target: target.into(),
                at: at.into(),
            });
        }
        mounts.push(Mount::Dir {
            at: "/dev/shm".into(),
        });
    } else {
        mounts.push(Mount::Dev { at: "/dev".into() });
    }
    mounts.push(Mount::Proc { at: "/proc".into() });
    for t in ["/run", "/tmp", "/var/tmp"] {
        mounts.push(Mount::Tmpfs { at: t.into() });
    }
    let home = inputs.home.filter(|h| h.is_absolute());
    if let Some(home) = home {
        // An empty, writable home that vanishes with the call; toolchains read-only on top.
        mounts.push(Mount::Tmpfs { at: home.into() });
        for sub in HOME_TOOLCHAINS {
            let p = home.join(sub);
            mounts.push(Mount::ReadOnly {
                src: p.clone(),
                at: p,
                optional: true,
            });
        }
        for (src, under_home) in inputs.home_files {
            mounts.push(Mount::ReadOnly {
                src: src.clone(),
                at: home.join(under_home),
                optional: true,
            });
        }
    }
    let extra_dirs: Vec<PathBuf> = machine
        .extra_program_dirs()
        .into_iter()
        .filter(|d| home.is_none_or(|h| !h.starts_with(d)))
        .collect();
    for dir in &extra_dirs {
        mounts.push(Mount::ReadOnly {
            src: dir.clone(),
            at: dir.clone(),
            optional: true,
        });
    }
    for r in inputs.read.iter().chain(inputs.also_read) {
        mounts.push(Mount::ReadOnly {
            src: r.clone(),
            at: r.clone(),
            optional: true,
        });
    }
    let writable: Vec<PathBuf> = inputs
        .write
        .iter()
        .cloned()
        .chain([inputs.workspace.to_path_buf()])
        .collect();
    for w in &writable {
        mounts.push(Mount::ReadWrite {
            src: w.clone(),
            at: w.clone(),
            optional: true,
        });
    }
    for h in inputs.hidden {
        hide(&mut mounts, machine, h);
    }
    // The session's TMPDIR lives in the (hidden) state directory: bound again on top.
    mounts.push(Mount::ReadWrite {
        src: inputs.tmpdir.into(),
        at: inputs.tmpdir.into(),
        optional: false,
    });

    // Program rules, after every bind that could show a program directory again.
    let visible_roots: Vec<PathBuf> = SYSTEM
        .iter()
        .map(PathBuf::from)
        .chain(extra_dirs.iter().cloned())
        .chain(
            home.iter()
                .flat_map(|h| HOME_TOOLCHAINS.iter().map(|s| h.join(s))),
        )
        .chain(inputs.read.iter().cloned())
        .chain(writable.iter().cloned())
        .collect();
    let shown = |p: &Path| visible_roots.iter().any(|r| p.starts_with(r));
    let masked_programs: Vec<MaskedProgram> = programs::denied_files(&listing, &rules.denied)
        .into_iter()
        .filter(|m| shown(&m.path))
        .collect();
    for m in &masked_programs {
        mounts.push(Mount::Masked { at: m.path.clone() });
    }
    let executable = match &rules.allowed {
        None => Executable::Anywhere,
        Some(allowed) => allow_list_view(
            allowed,
            &listing,
            machine,
            &masked_programs,
            &shown,
            &writable,
            inputs.proxied_network,
        ),
    };
    let visible_programs = match &executable {
        Executable::Only { shown, .. } => Some(shown.iter().map(|(_, at)| at.clone()).collect()),
        Executable::Anywhere => None,
    };
    // Nothing else is writable: `/tmp` and the sandbox's own root are made read-only (the
    // session's TMPDIR is where temporary files go), so a write elsewhere fails loudly.
    for r in ["/tmp", "/var/tmp", "/"] {
        mounts.push(Mount::RemountReadOnly { at: r.into() });
    }
    SandboxView {
        mounts,
        masked_programs,
        visible_programs,
        executable,
        root_only_hidden,
        seccomp: crate::seccomp::summary(),
        network: if inputs.proxied_network {
            "through the filtering proxy only"
        } else {
            "none"
        },
        user: "the operator's, with no capabilities; no file it makes can be setuid or setgid",
        cwd: inputs.cwd.to_path_buf(),
        rules: enforced_rules(inputs.shell),
    }
}

/// Each rule of a shell grant with the layer that enforces it in Tackle's sandbox.
pub fn enforced_rules(shell: &ShellGrant) -> Vec<RuleEnforcement> {
    rule_layers(shell)
        .into_iter()
        .map(|mut r| {
            let program = r.rule.trim().rsplit('/').next().unwrap_or("");
            if r.list == "deny" && is_the_shell(program) {
                r.layer = tackle_policy::shell::RuleLayer::Analyser;
            }
            r
        })
        .collect()
}

fn is_the_shell(program: &str) -> bool {
    program.eq_ignore_ascii_case("bash")
}

/// Each program directory becomes empty but for the allowed programs (and the shell); those,
/// their libraries, the loader and their helper directories are mounts of their own, which keep
/// the right to execute when the start-up step makes every other mount `noexec`. The start-up
/// step makes these mounts itself (plain system calls, where bubblewrap would read the mount
/// table again for each one).
fn allow_list_view(
    allowed: &[String],
    listing: &Listing,
    machine: &dyn Machine,
    masked: &[MaskedProgram],
    shown_at: &dyn Fn(&Path) -> bool,
    writable: &[PathBuf],
    network: bool,
) -> Executable {
    let emptied: Vec<PathBuf> = listing
        .program_dirs
        .iter()
        .filter(|d| shown_at(d) && !writable.iter().any(|w| d.starts_with(w)))
        .cloned()
        .collect();
    let entries = programs::allowed_entries(listing, allowed);
    machine.prefetch_libraries(
        &entries
            .iter()
            .map(|(_, _, r)| r.clone())
            .collect::<Vec<_>>(),
    );
    let mut shown: Vec<(PathBuf, PathBuf)> = Vec::new();
    let mut libraries: Vec<PathBuf> = Vec::new();
    let mut helper_dirs: Vec<PathBuf> = Vec::new();
    for (dir, name, real) in entries {
        if !emptied.contains(&dir) || masked.iter().any(|m| m.path == real) {
            continue;
        }
        libraries.extend(machine.libraries(&real));
        if let Some(n) = name.to_str() {
            for helpers in programs::helper_dirs(n, &real) {
                if !helper_dirs.contains(&helpers) {
                    helper_dirs.push(helpers);
                }
            }
        }
        shown.push((real, dir.join(&name)));
    }
    // The helpers that link more than their program does are the network transports
    // (git-remote-https and its curl stack); without a network they have nothing to do.
    if network {
        for d in &helper_dirs {
            libraries.extend(machine.helper_libraries(d));
        }
    }
    libraries.sort();
    libraries.dedup();
    libraries.retain(|lib| !masked.iter().any(|m| &m.path == lib));
    let bound: Vec<PathBuf> = libraries
        .into_iter()
        .chain(helper_dirs.iter().cloned())
        .collect();
    let keep: Vec<PathBuf> = shown
        .iter()
        .map(|(_, at)| at.clone())
        .chain(bound.iter().cloned())
        .collect();
    Executable::Only {
        emptied,
        shown,
        bound,
        keep,
        helper_dirs,
    }
}

/// The libraries the programs in a helper directory link (each distinct file once).
fn helper_libraries(dir: &Path, machine: &dyn Machine) -> Vec<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut seen = std::collections::BTreeSet::new();
    let mut elves = Vec::new();
    for e in entries.flatten() {
        let Ok(meta) = std::fs::metadata(e.path()) else {
            continue;
        };
        if meta.is_file() && seen.insert((meta.dev(), meta.ino())) && programs::is_elf(&e.path()) {
            elves.push(e.path());
        }
    }
    machine.prefetch_libraries(&elves);
    let mut out: Vec<PathBuf> = elves.iter().flat_map(|p| machine.libraries(p)).collect();
    out.sort();
    out.dedup();
    out
}

/// Covers a directory with an empty one and a file with an empty file.
fn hide(mounts: &mut Vec<Mount>, machine: &dyn Machine, path: &Path) {
    match machine.kind(path) {
        Kind::Dir => mounts.push(Mount::Tmpfs { at: path.into() }),
        Kind::File => mounts.push(Mount::Masked { at: path.into() }),
        // A link is replaced where it points; nothing there is nothing to hide.
        Kind::Link(_) => {
            if let Ok(real) = std::fs::canonicalize(path) {
                if real.is_dir() {
                    mounts.push(Mount::Tmpfs { at: real });
                } else {
                    mounts.push(Mount::Masked { at: real });
                }
            }
        }
        Kind::Missing => {}
    }
}

/// This machine, as the plan sees it.
pub(crate) struct RealMachine;

impl Machine for RealMachine {
    fn kind(&self, path: &Path) -> Kind {
        match std::fs::symlink_metadata(path) {
            Err(_) => Kind::Missing,
            Ok(m) if m.file_type().is_symlink() => match std::fs::read_link(path) {
                Ok(t) => Kind::Link(t),
                Err(_) => Kind::Missing,
            },
            Ok(m) if m.is_dir() => Kind::Dir,
            Ok(_) => Kind::File,
        }
    }

    fn listing(&self) -> Arc<Listing> {
        programs::listing(&programs::command_path_dirs())
    }

    fn is_root(&self) -> bool {
        // SAFETY: geteuid has no preconditions and cannot fail.
        unsafe { libc::geteuid() == 0 }
    }

    fn root_only(&self) -> Vec<(PathBuf, bool)> {
        static FOUND: std::sync::OnceLock<Vec<(PathBuf, bool)>> = std::sync::OnceLock::new();
        FOUND
            .get_or_init(|| {
                let mut out = Vec::new();
                for dir in ROOT_ONLY_SCAN {
                    scan_root_only(Path::new(dir), 0, &mut out);
                }
                out
            })
            .clone()
    }

    fn ssh_host_keys(&self) -> Vec<PathBuf> {
        std::fs::read_dir("/etc/ssh")
            .map(|entries| {
                entries
                    .flatten()
                    .filter(|e| e.file_name().to_string_lossy().starts_with("ssh_host_"))
                    .map(|e| e.path())
                    .collect()
            })
            .unwrap_or_default()
    }

    fn extra_program_dirs(&self) -> Vec<PathBuf> {
        let mut dirs = programs::command_path_dirs();
        if let Some(cargo) = std::env::var_os("CARGO_HOME").map(PathBuf::from) {
            dirs.extend(["bin", "registry", "git"].map(|s| cargo.join(s)));
        }
        dirs.extend(std::env::var_os("RUSTUP_HOME").map(PathBuf::from));
        // A directory this user cannot reach (root's `~/.cargo/bin` in a `PATH` inherited by
        // another user) holds nothing it could run, and bubblewrap would refuse to bind it.
        dirs.retain(|d| {
            d.is_absolute()
                && d.components().count() > 2
                && !SYSTEM.iter().any(|s| d.starts_with(s))
                && d.is_dir()
        });
        dirs
    }

    fn libraries(&self, program: &Path) -> Vec<PathBuf> {
        crate::programs::libraries(program)
    }

    fn prefetch_libraries(&self, programs: &[PathBuf]) {
        crate::programs::prefetch_libraries(programs)
    }

    fn helper_libraries(&self, dir: &Path) -> Vec<PathBuf> {
        type Cache = std::sync::Mutex<std::collections::BTreeMap<PathBuf, Vec<PathBuf>>>;
        static CACHE: std::sync::OnceLock<Cache> = std::sync::OnceLock::new();
        let cache = CACHE.get_or_init(Default::default);
        if let Some(hit) = cache.lock().ok().and_then(|c| c.get(dir).cloned()) {
            return hit;
        }
        let found = helper_libraries(dir, self);
        if let Ok(mut c) = cache.lock() {
            c.insert(dir.to_path_buf(), found.clone());
        }
        found
    }
}

/// Entries of `dir` that others may not read (directories: not enter), not descending into
/// them; bounded depth so that a deep tree cannot stall a call.
fn scan_root_only(dir: &Path, depth: usize, out: &mut Vec<(PathBuf, bool)>) {
    use std::os::unix::fs::PermissionsExt;
    const MAX_DEPTH: usize = 8;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let Ok(meta) = std::fs::symlink_metadata(e.path()) else {
            continue;
        };
        if meta.file_type().is_symlink() {
            continue;
        }
        let mode = meta.permissions().mode();
        if meta.is_dir() {
            if mode & 0o005 != 0o005 {
                out.push((e.path(), true));
            } else if depth < MAX_DEPTH {
                scan_root_only(&e.path(), depth + 1, out);
            }
        } else if meta.is_file() && mode & 0o004 == 0 {
            out.push((e.path(), false));
        }
    }
}

#[cfg(test)]
mod tests;
