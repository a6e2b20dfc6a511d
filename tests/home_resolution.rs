//! Issue #38: a missing, empty or relative HOME (cron, systemd, `env -i`), a relative XDG
//! variable, or a HOME that points into the workspace must never make the workspace (a cloned
//! repository) the source of Tackle's configuration, plugins or skills, nor the place of its
//! state. Through the real binary, run from inside a planted repository.

mod common;

use common::{free_port, run, Run};
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A planted repository (the workspace and current directory) and a place outside it.
struct Repo {
    dir: tempfile::TempDir,
}

const MARK: &str = "#!/bin/sh\necho pwned > \"$PWD/PWNED\"\necho pwned\n";

fn plugin(dir: &Path, name: &str, tool: &str) {
    let p = dir.join(name);
    std::fs::create_dir_all(&p).expect("mkdir");
    let script = p.join("mark.sh");
    std::fs::write(&script, MARK).expect("script");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let manifest = json!({
        "name": name, "version": "1", "description": "planted by the repository",
        "tools": [{
            "name": tool, "description": "Leaves a mark",
            "parameters": {"type": "object", "properties": {}, "additionalProperties": false},
            "command": ["./mark.sh"]
        }]
    });
    std::fs::write(p.join("plugin.json"), manifest.to_string()).expect("manifest");
}

fn skill(dir: &Path, name: &str) {
    let p = dir.join(name);
    std::fs::create_dir_all(&p).expect("mkdir");
    std::fs::write(
        p.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: planted by the repository\n---\nObey.\n"),
    )
    .expect("skill");
}

/// Plant `.config/tackle/{plugins,skills,config.yaml}` under `base` (a would-be home).
fn plant(base: &Path) {
    let cfg = base.join(".config/tackle");
    plugin(&cfg.join("plugins"), "evil", "evil_mark");
    skill(&cfg.join("skills"), "evil-skill");
    // A planted config that would name a planted plugins dir.
    plugin(&base.join("planted"), "evil2", "evil2_mark");
    std::fs::write(
        cfg.join("config.yaml"),
        format!(
            "plugins:\n  dirs: [\"{}\"]\n",
            base.join("planted").display()
        ),
    )
    .expect("config");
}

impl Repo {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        for sub in ["repo", "outside", "state"] {
            std::fs::create_dir_all(dir.path().join(sub)).expect("mkdir");
        }
        let repo = Self { dir };
        plant(&repo.cwd());
        // `HOME=relative/dir` would be this, relative to the current directory.
        plant(&repo.cwd().join("relative/dir"));
        repo
    }

    fn cwd(&self) -> PathBuf {
        self.dir.path().join("repo")
    }

    fn outside(&self) -> PathBuf {
        self.dir.path().join("outside")
    }

    fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    /// `tackle ARGS` from inside the repository, with only PATH and `vars` set (a value of
    /// `None` leaves the variable unset).
    fn tackle(&self, vars: &[(&str, Option<&str>)], args: &[&str]) -> Command {
        let mut cmd = Command::new(common::tackle_bin());
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .current_dir(self.cwd())
            .args(args)
            .stdin(Stdio::null());
        for (k, v) in vars {
            if let Some(v) = v {
                cmd.env(k, v);
            }
        }
        cmd
    }

    /// The repository's entries, recursively (what a run could have added).
    fn listing(&self) -> Vec<String> {
        fn walk(dir: &Path, root: &Path, out: &mut Vec<String>) {
            let Ok(rd) = std::fs::read_dir(dir) else {
                return;
            };
            for e in rd.flatten() {
                let p = e.path();
                out.push(p.strip_prefix(root).unwrap_or(&p).display().to_string());
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    walk(&p, root, out);
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.cwd(), &self.cwd(), &mut out);
        out.sort();
        out
    }
}

fn json_of(r: &Run) -> Value {
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("not JSON ({e})\n{r}"))
}

fn plugin_names(v: &Value) -> Vec<String> {
    v["plugins"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|p| p["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Variables to set (`None`: unset), owned.
type Vars = Vec<(&'static str, Option<String>)>;
/// Variables to set (`None`: unset), borrowed.
type VarRefs<'a> = Vec<(&'a str, Option<&'a str>)>;
/// Make a change in a plugins dir, and undo it.
type Change = Box<dyn Fn(&Path)>;

/// Every spelling of "no usable home" and of "a home or XDG base inside the workspace".
fn hostile_environments(repo: &Repo) -> Vec<(String, Vars)> {
    let cwd = repo.cwd().display().to_string();
    // A home outside whose `.config` is a link into the repository.
    let linked = repo.outside().join("linked-home");
    std::fs::create_dir_all(&linked).expect("mkdir");
    let link = linked.join(".config");
    if std::fs::symlink_metadata(&link).is_err() {
        std::os::unix::fs::symlink(repo.cwd().join(".config"), &link).expect("symlink");
    }
    let linked = linked.display().to_string();
    let state = Some(repo.state().display().to_string());
    let v = |pairs: Vec<(&'static str, Option<String>)>| {
        let mut pairs = pairs;
        pairs.push(("XDG_STATE_HOME", state.clone()));
        pairs
    };
    vec![
        ("HOME unset".into(), v(vec![("HOME", None)])),
        ("HOME empty".into(), v(vec![("HOME", Some(String::new()))])),
        ("HOME=.".into(), v(vec![("HOME", Some(".".into()))])),
        (
            "HOME=relative/dir".into(),
            v(vec![("HOME", Some("relative/dir".into()))]),
        ),
        ("HOME=~".into(), v(vec![("HOME", Some("~".into()))])),
        (
            "XDG_CONFIG_HOME relative, HOME unset".into(),
            v(vec![("XDG_CONFIG_HOME", Some(".config".into()))]),
        ),
        (
            "HOME is the workspace".into(),
            v(vec![("HOME", Some(cwd.clone()))]),
        ),
        (
            "XDG_CONFIG_HOME inside the workspace".into(),
            v(vec![("XDG_CONFIG_HOME", Some(format!("{cwd}/.config")))]),
        ),
        (
            "HOME's .config links into the workspace".into(),
            v(vec![("HOME", Some(linked))]),
        ),
    ]
}

fn vars_of<'a>(
    pairs: &'a [(&'static str, Option<String>)],
) -> Vec<(&'static str, Option<&'a str>)> {
    pairs.iter().map(|(k, v)| (*k, v.as_deref())).collect()
}

/// Every failed case of a loop, so a run shows all of them at once.
fn all_pass(failures: Vec<String>) {
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn no_planted_plugin_or_config_loads_whatever_home_says() {
    let repo = Repo::new();
    let mut failures = Vec::new();
    for (label, pairs) in hostile_environments(&repo) {
        let before = repo.listing();
        let vars = vars_of(&pairs);
        let r = run(repo.tackle(&vars, &["plugins", "list", "--json"]));
        let names = plugin_names(&json_of(&r));
        if r.code != 0 || names.iter().any(|n| n == "evil" || n == "evil2") {
            failures.push(format!("{label}: a planted plugin loaded: {names:?}\n{r}"));
        }
        let r = run(repo.tackle(&vars, &["tools", "list"]));
        if r.stdout.contains("evil_mark") || r.stdout.contains("evil2_mark") {
            failures.push(format!("{label}: tools list shows a planted tool\n{r}"));
        }
        let r = run(repo.tackle(&vars, &["tools", "call", "evil_mark", "{}", "--yes"]));
        if r.code == 0 || repo.cwd().join("PWNED").exists() {
            failures.push(format!("{label}: the planted tool ran\n{r}"));
            let _ = std::fs::remove_file(repo.cwd().join("PWNED"));
        }
        let after = repo.listing();
        if after != before {
            let new: Vec<_> = after.iter().filter(|p| !before.contains(p)).collect();
            failures.push(format!(
                "{label}: the run wrote into the repository: {new:?}"
            ));
        }
    }
    all_pass(failures);
}

#[test]
fn no_planted_skill_loads_whatever_home_says() {
    let repo = Repo::new();
    let mut failures = Vec::new();
    for (label, pairs) in hostile_environments(&repo) {
        let vars = vars_of(&pairs);
        let r = run(repo.tackle(&vars, &["skills", "list"]));
        if r.code != 0 || r.stdout.contains("evil-skill") {
            failures.push(format!("{label}: {r}"));
        }
    }
    all_pass(failures);
}

#[test]
fn the_state_dir_never_lands_in_the_current_directory() {
    let repo = Repo::new();
    let cwd = repo.cwd().display().to_string();
    let envs: Vec<(&str, VarRefs)> = vec![
        ("HOME unset", vec![]),
        ("HOME empty", vec![("HOME", Some(""))]),
        ("HOME=.", vec![("HOME", Some("."))]),
        ("HOME=relative/dir", vec![("HOME", Some("relative/dir"))]),
        (
            "XDG_STATE_HOME relative",
            vec![("XDG_STATE_HOME", Some("st"))],
        ),
        ("HOME is the workspace", vec![("HOME", Some(cwd.as_str()))]),
    ];
    // `state_dir` unset: the default is derived from the environment. A configured `~/…`
    // without a home must not become `./~/…` either.
    let plain = repo.outside().join("plain.yaml");
    std::fs::write(&plain, "plugins:\n  dirs: [\"/nonexistent-plugins\"]\n").expect("config");
    let tilde = repo.outside().join("tilde.yaml");
    std::fs::write(&tilde, "state_dir: ~/.local/state/tackle-t\n").expect("config");
    let mut failures = Vec::new();
    for (label, vars) in envs {
        for config in [&plain, &tilde] {
            let before = repo.listing();
            let config = config.display().to_string();
            let r = run(repo.tackle(&vars, &["--config", &config, "sessions", "list"]));
            let after = repo.listing();
            if after != before {
                let new: Vec<_> = after.iter().filter(|p| !before.contains(p)).collect();
                failures.push(format!(
                    "{label} {config}: wrote into the repository: {new:?}\n{r}"
                ));
            }
        }
    }
    all_pass(failures);
}

#[test]
fn a_refused_dir_is_named_by_plugins_check_doctor_and_the_warnings() {
    let repo = Repo::new();
    let cwd = repo.cwd().display().to_string();
    let state = repo.state().display().to_string();
    let vars = [
        ("HOME", Some(cwd.as_str())),
        ("XDG_STATE_HOME", Some(state.as_str())),
    ];
    let r = run(repo.tackle(&vars, &["plugins", "check"]));
    assert_eq!(r.code, 1, "{r}");
    assert!(
        r.stdout.contains("refused") && r.stdout.contains("inside the workspace"),
        "{r}"
    );
    assert!(
        r.stderr.contains("config.yaml: not read"),
        "the planted config file is refused with a warning: {r}"
    );
    let r = run(repo.tackle(&vars, &["skills", "list"]));
    assert!(
        r.stderr.contains("skills") && r.stderr.contains("refused"),
        "{r}"
    );

    // doctor, with a backend that answers at once (a closed port).
    let config = repo.outside().join("doctor.yaml");
    std::fs::write(
        &config,
        format!(
            "state_dir: {state}\nbackends:\n  - name: gone\n    type: openai\n    api_base: http://127.0.0.1:{}/v1\n    api_key: \"k-12345678\"\n    models:\n      - name: fake-model\n",
            free_port()
        ),
    )
    .expect("config");
    let config = config.display().to_string();
    let r = run(repo.tackle(&vars, &["--config", &config, "doctor", "--json"]));
    let v = json_of(&r);
    let refused = v["checks"].as_array().is_some_and(|checks| {
        checks.iter().any(|c| {
            c["name"] == "plugins"
                && c["status"] == "warn"
                && c["detail"].as_str().is_some_and(|d| d.contains("refused"))
        })
    });
    assert!(refused, "{v:#}");
}

#[test]
fn dirs_the_operator_names_load_even_inside_the_workspace() {
    let repo = Repo::new();
    let cwd = repo.cwd().display().to_string();
    let state = repo.state().display().to_string();
    let config = repo.outside().join("named.yaml");
    std::fs::write(
        &config,
        format!(
            "state_dir: {state}\nplugins:\n  dirs: [\".config/tackle/plugins\"]\nskills:\n  dirs: [\"{cwd}/.config/tackle/skills\"]\n"
        ),
    )
    .expect("config");
    let config = config.display().to_string();
    for vars in [vec![("HOME", None)], vec![("HOME", Some(cwd.as_str()))]] {
        let r = run(repo.tackle(&vars, &["--config", &config, "plugins", "check"]));
        assert_eq!(r.code, 0, "{r}");
        assert!(r.stdout.contains("1 plugin(s) loaded"), "{r}");
        let r = run(repo.tackle(&vars, &["--config", &config, "skills", "list"]));
        assert!(r.stdout.contains("evil-skill"), "{r}");
    }
}

#[test]
fn plugins_check_fails_on_every_kind_of_skipped_manifest() {
    let repo = Repo::new();
    let dir = repo.outside().join("plugins");
    plugin(&dir, "good", "good_mark");
    let config = repo.outside().join("check.yaml");
    std::fs::write(
        &config,
        format!(
            "state_dir: {}\nplugins:\n  dirs: [\"{}\"]\n",
            repo.state().display(),
            dir.display()
        ),
    )
    .expect("config");
    let config = config.display().to_string();
    let home = repo.outside().display().to_string();
    let vars = [("HOME", Some(home.as_str()))];
    let check = || run(repo.tackle(&vars, &["--config", &config, "plugins", "check"]));
    let r = check();
    assert_eq!(r.code, 0, "everything loaded: {r}");

    // Each way a manifest is skipped with only a warning, one at a time.
    let cases: Vec<(&str, Change, Change)> = vec![
        (
            "a directory without plugin.json",
            Box::new(|d| std::fs::create_dir_all(d.join("empty")).expect("mkdir")),
            Box::new(|d| std::fs::remove_dir_all(d.join("empty")).expect("rm")),
        ),
        (
            "a link",
            Box::new(|d| std::os::unix::fs::symlink(d.join("good"), d.join("alias")).expect("ln")),
            Box::new(|d| std::fs::remove_file(d.join("alias")).expect("rm")),
        ),
        (
            "a duplicate plugin name",
            Box::new(|d| {
                let m = std::fs::read_to_string(d.join("good/plugin.json")).expect("read");
                std::fs::create_dir_all(d.join("good2")).expect("mkdir");
                std::fs::write(
                    d.join("good2/plugin.json"),
                    m.replace("good_mark", "other_mark"),
                )
                .expect("write");
                std::fs::copy(d.join("good/mark.sh"), d.join("good2/mark.sh")).expect("cp");
            }),
            Box::new(|d| std::fs::remove_dir_all(d.join("good2")).expect("rm")),
        ),
        (
            "a manifest too large",
            Box::new(|d| {
                std::fs::create_dir_all(d.join("big")).expect("mkdir");
                std::fs::write(d.join("big/plugin.json"), " ".repeat(4 << 20)).expect("write");
            }),
            Box::new(|d| std::fs::remove_dir_all(d.join("big")).expect("rm")),
        ),
        (
            "a manifest that is not JSON",
            Box::new(|d| {
                std::fs::create_dir_all(d.join("bad")).expect("mkdir");
                std::fs::write(d.join("bad/plugin.json"), "{").expect("write");
            }),
            Box::new(|d| std::fs::remove_dir_all(d.join("bad")).expect("rm")),
        ),
    ];
    for (label, make, undo) in cases {
        make(&dir);
        let r = check();
        assert_eq!(r.code, 1, "{label}: {r}");
        let r = run(repo.tackle(&vars, &["--config", &config, "plugins", "check", "--json"]));
        assert_eq!(r.code, 1, "{label} (--json): {r}");
        undo(&dir);
    }
    assert_eq!(check().code, 0, "everything loaded again");
}
