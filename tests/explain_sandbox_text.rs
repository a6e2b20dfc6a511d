//! `tools call … --explain` in text says what the sandbox holds for the call, even when the
//! rules allow it: where writes may land, what `~` is, which programs are masked, network.
//! The detailed view follows; its JSON twin is `--explain --json` (tests/explain_json.rs).

mod common;

use common::{run, Sandbox};

/// `Err(why)` when this machine runs commands without namespaces (the text then lists what
/// is lost instead, which other tests cover).
fn namespaces(sb: &Sandbox) -> Result<(), String> {
    let cfg = sb.config("");
    let doctor = run(sb.tackle(&cfg, &["doctor"]));
    if doctor.stdout.contains("namespaces: enforced") {
        Ok(())
    } else {
        Err(doctor.stdout)
    }
}

#[test]
fn explain_of_an_allowed_rm_rf_home_says_what_the_sandbox_holds() {
    let sb = Sandbox::new();
    if let Err(why) = namespaces(&sb) {
        eprintln!("skipped: no namespace sandbox here\n{why}");
        return;
    }
    let cfg = sb.config(&format!("workspace: {}\n", sb.workspace().display()));
    let r = run(sb.tackle(
        &cfg,
        &[
            "tools",
            "call",
            "shell",
            r#"{"command": "rm -rf ~"}"#,
            "--explain",
        ],
    ));
    assert_eq!(r.code, 0, "{r}");
    let out = &r.stdout;
    assert!(out.contains("whatever the rules allow"), "{r}");
    let writes = out
        .lines()
        .find(|l| l.trim_start().starts_with("writes land only in:"))
        .unwrap_or_else(|| panic!("no line says where writes land: {r}"));
    assert!(
        writes.contains(&sb.workspace().display().to_string()),
        "{writes}"
    );
    assert!(
        !writes.contains(&format!("{},", sb.home().display()))
            && !writes.ends_with(&sb.home().display().to_string()),
        "the home is not writable: {writes}"
    );
    assert!(
        out.contains(&format!("~ ({}): an empty directory", sb.home().display())),
        "{r}"
    );
    assert!(out.contains("masked programs: none"), "{r}");
    assert!(out.contains("  network: none"), "{r}");
}

#[test]
fn explain_names_the_masked_programs_of_a_deny_list() {
    let sb = Sandbox::new();
    if let Err(why) = namespaces(&sb) {
        eprintln!("skipped: no namespace sandbox here\n{why}");
        return;
    }
    let cfg = sb.config(
        "security:\n  tool_policies:\n    shell:\n      grants:\n        shell:\n          deny: [rm, curl]\n",
    );
    let r = run(sb.tackle(
        &cfg,
        &[
            "tools",
            "call",
            "shell",
            r#"{"command": "ls"}"#,
            "--explain",
        ],
    ));
    assert_eq!(r.code, 0, "{r}");
    let masked = r
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("masked programs:"))
        .unwrap_or_else(|| panic!("{r}"));
    assert!(masked.contains("rm") && masked.contains("curl"), "{masked}");
}
