use super::*;
use crate::programs::Entry;

/// A machine with `/usr` and `/etc` as directories, `/bin` → `usr/bin`, and the given
/// programs in `/usr/bin` (name, real file, inode).
struct Fake {
    programs: Vec<(&'static str, &'static str, u64)>,
    root: bool,
}

impl Machine for Fake {
    fn kind(&self, path: &Path) -> Kind {
        match path.to_str().unwrap_or("") {
            "/usr" | "/etc" | "/etc/ssl/private" => Kind::Dir,
            "/bin" => Kind::Link("usr/bin".into()),
            "/etc/shadow" | "/lib64/ld-linux-x86-64.so.2" => Kind::File,
            _ => Kind::Missing,
        }
    }

    fn listing(&self) -> Arc<Listing> {
        Arc::new(Listing::new(
            vec!["/usr/bin".into()],
            self.programs
                .iter()
                .map(|(name, real, ino)| Entry {
                    dir: "/usr/bin".into(),
                    name: (*name).into(),
                    real: (*real).into(),
                    id: (1, *ino),
                    size: 10 + ino,
                })
                .collect(),
        ))
    }

    fn is_root(&self) -> bool {
        self.root
    }

    fn root_only(&self) -> Vec<(PathBuf, bool)> {
        vec![
            ("/etc/app/key.pem".into(), false),
            ("/etc/ssl/private".into(), true),
        ]
    }

    fn ssh_host_keys(&self) -> Vec<PathBuf> {
        Vec::new()
    }

    fn extra_program_dirs(&self) -> Vec<PathBuf> {
        Vec::new()
    }

    fn libraries(&self, program: &Path) -> Vec<PathBuf> {
        if program.ends_with("git") {
            vec!["/usr/lib/libz.so.1".into(), "/usr/lib/ld.so".into()]
        } else {
            vec!["/usr/lib/libc.so.6".into(), "/usr/lib/ld.so".into()]
        }
    }

    fn helper_libraries(&self, _dir: &Path) -> Vec<PathBuf> {
        Vec::new()
    }
}

fn machine() -> Fake {
    Fake {
        programs: vec![
            ("rm", "/usr/bin/rm", 1),
            ("unlink-alias", "/usr/bin/rm", 1),
            ("bash", "/usr/bin/bash", 2),
            ("sh", "/usr/bin/dash", 3),
            ("git", "/usr/bin/git", 4),
            ("python3", "/usr/bin/python3.11", 5),
        ],
        root: false,
    }
}

fn grant(allow: &[&str], deny: &[&str]) -> ShellGrant {
    ShellGrant {
        allow: allow.iter().map(|s| s.to_string()).collect(),
        deny: deny.iter().map(|s| s.to_string()).collect(),
        ..ShellGrant::default()
    }
}

fn inputs<'a>(shell: &'a ShellGrant, hidden: &'a [PathBuf], bridge: &'a [PathBuf]) -> Inputs<'a> {
    Inputs {
        shell,
        cwd: Path::new("/w"),
        workspace: Path::new("/w"),
        tmpdir: Path::new("/s/tmp/x"),
        read: &[],
        write: &[],
        home: Some(Path::new("/home/u")),
        home_files: &[],
        hidden,
        also_read: bridge,
        proxied_network: false,
    }
}

fn joined(a: &[OsString]) -> String {
    a.iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn home_is_replaced_and_the_workspace_is_writable() {
    let g = ShellGrant::default();
    let view = plan(&inputs(&g, &[], &[]), &machine());
    let a = joined(&view.bwrap_args(&[]));
    assert!(a.contains("--tmpfs /home/u"), "{a}");
    assert!(a.contains("--bind-try /w /w"), "{a}");
    assert!(a.contains("--symlink usr/bin /bin"), "{a}");
    assert!(a.contains("--ro-bind /dev/null /etc/shadow"), "{a}");
    assert!(
        a.contains("--unshare-all") && !a.contains("--share-net"),
        "{a}"
    );
    assert!(a.ends_with("--cap-drop ALL --"), "{a}");
    assert_eq!(view.executable, Executable::Anywhere);
}

#[test]
fn a_decoy_file_appears_read_only_in_the_empty_home_even_from_the_hidden_state_dir() {
    let g = ShellGrant::default();
    let hidden = [PathBuf::from("/s")];
    let files = [(
        PathBuf::from("/s/honeytokens/aws-credentials"),
        PathBuf::from(".aws/credentials"),
    )];
    let mut i = inputs(&g, &hidden, &[]);
    i.home_files = &files;
    let a = joined(&plan(&i, &machine()).bwrap_args(&[]));
    let home = a.find("--tmpfs /home/u ").unwrap_or(usize::MAX);
    let decoy = a
        .find("--ro-bind-try /s/honeytokens/aws-credentials /home/u/.aws/credentials")
        .unwrap_or_else(|| panic!("no decoy mount: {a}"));
    assert!(
        home < decoy,
        "the decoy is mounted before the home is emptied: {a}"
    );
}

#[test]
fn the_network_is_never_shared_and_the_bridge_is_read_only() {
    let g = ShellGrant::default();
    let bridge = [PathBuf::from("/opt/tackle/tackle")];
    let a = joined(&plan(&inputs(&g, &[], &bridge), &machine()).bwrap_args(&[]));
    assert!(
        !a.contains("--share-net") && a.contains("--unshare-all"),
        "{a}"
    );
    assert!(
        a.contains("--ro-bind-try /opt/tackle/tackle /opt/tackle/tackle"),
        "{a}"
    );
}

#[test]
fn the_tmpdir_is_bound_after_the_hidden_state_dir() {
    let g = ShellGrant::default();
    let hidden = [PathBuf::from("/usr")];
    let a = joined(&plan(&inputs(&g, &hidden, &[]), &machine()).bwrap_args(&[]));
    let hide = a.find("--tmpfs /usr");
    let tmp = a.find("--bind /s/tmp/x /s/tmp/x");
    assert!(hide.is_some() && tmp.is_some() && hide < tmp, "{a}");
}

#[test]
fn a_denied_program_is_masked_under_every_name_after_every_bind() {
    let g = grant(&[], &["rm", "git push"]);
    let view = plan(&inputs(&g, &[], &[]), &machine());
    let masked: Vec<&Path> = view
        .masked_programs
        .iter()
        .map(|m| m.path.as_path())
        .collect();
    assert_eq!(masked, [Path::new("/usr/bin/rm")]);
    let a = joined(&view.bwrap_args(&[]));
    let mask = a.find("--ro-bind /dev/null /usr/bin/rm").expect(&a);
    assert!(
        a.find("--ro-bind /usr /usr").is_some_and(|b| b < mask),
        "{a}"
    );
    assert!(a.find("--bind /s/tmp/x").is_some_and(|b| b < mask), "{a}");
    // `git push` is an argument rule: git itself stays.
    assert!(!a.contains("/dev/null /usr/bin/git"), "{a}");
    let layers: Vec<String> = view
        .rules
        .iter()
        .map(|r| format!("{} {}", r.rule, r.layer))
        .collect();
    assert_eq!(layers, ["rm kernel", "git push analyser"]);
}

#[test]
fn an_allow_list_leaves_only_its_programs_the_shell_and_their_libraries_executable() {
    let g = grant(&["git status", "ls"], &[]);
    let view = plan(&inputs(&g, &[], &[]), &machine());
    let a = joined(&view.bwrap_args(&[]));
    assert!(a.contains("--cap-add CAP_SYS_ADMIN"), "{a}");
    let init = joined(&view.init_args(7));
    assert!(
        init.starts_with("__sandbox-exec --empty /usr/bin"),
        "{init}"
    );
    for step in [
        "--show /usr/bin/git /usr/bin/git",
        "--show /usr/bin/bash /usr/bin/bash",
        "--show /usr/bin/dash /usr/bin/sh",
        "--bind-self /usr/lib/libz.so.1",
        "--bind-self /usr/lib/ld.so",
    ] {
        assert!(init.contains(step), "{step} missing: {init}");
    }
    assert!(
        !init.contains("python3") && !a.contains("python3"),
        "{init}"
    );
    assert!(init.ends_with("--close-fd 7 --"), "{init}");
    let Executable::Only { keep, .. } = &view.executable else {
        panic!("{:?}", view.executable)
    };
    for k in [
        "/usr/bin/git",
        "/usr/bin/bash",
        "/usr/bin/sh",
        "/usr/lib/ld.so",
    ] {
        assert!(keep.contains(&PathBuf::from(k)), "{k}: {keep:?}");
    }
    assert!(
        !keep
            .iter()
            .any(|k| k.starts_with("/w") || k.starts_with("/s")),
        "{keep:?}"
    );
}

#[test]
fn a_program_both_allowed_and_denied_is_not_shown() {
    let g = grant(&["git", "rm"], &["rm"]);
    let view = plan(&inputs(&g, &[], &[]), &machine());
    let shown = view.visible_programs.clone().unwrap_or_default();
    assert!(shown.contains(&PathBuf::from("/usr/bin/git")), "{shown:?}");
    assert!(
        !shown
            .iter()
            .any(|p| p.ends_with("rm") || p.ends_with("unlink-alias")),
        "{shown:?}"
    );
}

#[test]
fn running_as_root_hides_what_only_root_may_read() {
    let g = ShellGrant::default();
    let mut m = machine();
    m.root = true;
    let view = plan(&inputs(&g, &[], &[]), &m);
    let a = joined(&view.bwrap_args(&[]));
    assert!(a.contains("--ro-bind /dev/null /etc/app/key.pem"), "{a}");
    assert_eq!(
        view.root_only_hidden, 1,
        "the private key dir is hidden once, as a secret"
    );
    m.root = false;
    let a = joined(&plan(&inputs(&g, &[], &[]), &m).bwrap_args(&[]));
    assert!(!a.contains("/etc/app/key.pem"), "{a}");
}

#[test]
fn a_bash_rule_stays_with_the_analyser_since_every_line_runs_in_bash() {
    let g = grant(&[], &["bash", "rm"]);
    let view = plan(&inputs(&g, &[], &[]), &machine());
    assert!(
        !view
            .masked_programs
            .iter()
            .any(|m| m.path.ends_with("bash")),
        "{:?}",
        view.masked_programs
    );
    let layers: Vec<String> = view
        .rules
        .iter()
        .map(|r| format!("{} {}", r.rule, r.layer))
        .collect();
    assert_eq!(layers, ["bash analyser", "rm kernel"]);
}
