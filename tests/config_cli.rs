//! A newcomer's first steps through the real binary, in a fresh home: the example config
//! copied as the README says loads clean, `tackle init` writes a starter config (and keeps an
//! existing one), `tackle config path | show` say where the config is and what is in effect
//! (secrets redacted), `tackle completions` prints a script and `tackle man` the manual page.

mod common;

use common::{run, tackle_bin, Run, Sandbox};
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// `tackle ARGS` as a new user runs it: no --config, only the fresh home.
fn tackle(sb: &Sandbox, args: &[&str]) -> Command {
    let mut cmd = Command::new(tackle_bin());
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", sb.home())
        .current_dir(sb.workspace())
        .args(args)
        .stdin(Stdio::null());
    cmd
}

fn user_config(sb: &Sandbox) -> PathBuf {
    sb.home().join(".config/tackle/config.yaml")
}

/// Doctor found nothing broken and the config itself raised no warning.
fn assert_clean(r: &Run) {
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stdout.contains("doctor: nothing broken"), "{r}");
    assert!(!r.stdout.contains("config: warn"), "{r}");
    assert!(!r.stderr.contains("WARN"), "{r}");
}

#[test]
fn the_example_config_copied_into_a_fresh_home_leaves_nothing_broken() {
    let sb = Sandbox::new();
    let path = user_config(&sb);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::copy(common::repo_root().join("config.example.yaml"), &path).expect("copy");
    let r = run(tackle(&sb, &["doctor"]));
    assert_clean(&r);
    assert!(
        r.stdout
            .contains(&format!("config: ok — {}", path.display())),
        "{r}"
    );
    // Each note once: no line of the report repeats.
    let mut lines: Vec<&str> = r.stdout.lines().collect();
    let all = lines.len();
    lines.sort_unstable();
    lines.dedup();
    assert_eq!(lines.len(), all, "{r}");
}

#[test]
fn init_writes_a_starter_that_loads_clean_and_keeps_an_existing_file() {
    let sb = Sandbox::new();
    let path = user_config(&sb);
    let r = run(tackle(&sb, &["init"]));
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stdout.contains(&path.display().to_string()), "{r}");
    assert!(
        r.stdout.contains("tackle doctor") && r.stdout.contains("tackle run"),
        "{r}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path)
            .expect("written")
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "mode {mode:o}");
    }
    assert_clean(&run(tackle(&sb, &["doctor"])));

    std::fs::write(&path, "# mine\n").expect("write");
    let r = run(tackle(&sb, &["init"]));
    assert_eq!(r.code, 1, "{r}");
    assert!(r.stderr.contains("--force"), "{r}");
    assert_eq!(std::fs::read_to_string(&path).expect("read"), "# mine\n");
    let r = run(tackle(&sb, &["init", "--force"]));
    assert_eq!(r.code, 0, "{r}");
    assert_ne!(std::fs::read_to_string(&path).expect("read"), "# mine\n");
}

#[test]
fn config_path_names_the_file_and_show_prints_it_without_secrets() {
    let sb = Sandbox::new();
    let path = user_config(&sb);
    let r = run(tackle(&sb, &["config", "path"]));
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(r.stdout.trim(), path.display().to_string(), "{r}");
    assert!(r.stderr.contains("tackle init"), "{r}");

    let secret = "sk-live-config-show-0123456789";
    let header = "hdr-token-0123456789abcdef";
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(
        &path,
        format!(
            "backends:\n  - name: mine\n    type: openai\n    api_base: http://127.0.0.1:9/v1\n    api_key: {secret}\n    models:\n      - name: some-model\nmcp_servers:\n  remote:\n    url: http://127.0.0.1:9/mcp\n    headers:\n      Authorization: \"Bearer ${{HDR}}\"\n"
        ),
    )
    .expect("write");
    let mut cmd = tackle(&sb, &["config", "show"]);
    cmd.env("HDR", header);
    let r = run(cmd);
    assert_eq!(r.code, 0, "{r}");
    assert!(
        r.stdout.contains("some-model") && r.stdout.contains("[redacted secret]"),
        "{r}"
    );
    for s in [secret, header] {
        assert!(
            !r.stdout.contains(s) && !r.stderr.contains(s),
            "{s} shown\n{r}"
        );
    }
    let mut cmd = tackle(&sb, &["config", "show", "--json"]);
    cmd.env("HDR", header);
    let r = run(cmd);
    assert_eq!(r.code, 0, "{r}");
    let v: serde_json::Value =
        serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}\n{r}"));
    assert_eq!(v["backends"][0]["api_key"], "[redacted secret]", "{v:#}");
    assert!(
        !r.stdout.contains(secret) && !r.stdout.contains(header),
        "{r}"
    );
}

#[test]
fn completions_are_printed_for_bash_zsh_and_fish() {
    let sb = Sandbox::new();
    for shell in ["bash", "zsh", "fish"] {
        let r = run(tackle(&sb, &["completions", shell]));
        assert_eq!(r.code, 0, "{shell}\n{r}");
        assert!(
            r.stdout.contains("doctor") && r.stdout.contains("init"),
            "{shell}\n{r}"
        );
    }
    let r = run(tackle(&sb, &["completions", "tcsh"]));
    assert_eq!(r.code, 2, "{r}");
}

#[test]
fn the_manual_page_is_roff_naming_every_command() {
    let sb = Sandbox::new();
    let r = run(tackle(&sb, &["man"]));
    assert_eq!(r.code, 0, "{r}");
    assert!(
        r.stdout.starts_with(".ie") || r.stdout.contains(".TH tackle"),
        "{r}"
    );
    for command in ["run", "doctor", "init", "config", "completions"] {
        assert!(r.stdout.contains(command), "{command}\n{r}");
    }
}
