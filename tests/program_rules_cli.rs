//! Which layer enforces each shell rule, as `--explain` and `tackle doctor` tell it, and that
//! the sandbox `--explain` prints is the one a command runs in.

mod common;

use common::{run, Sandbox};
use serde_json::Value;
use std::collections::BTreeSet;

fn grant_yaml(allow: &[&str], deny: &[&str]) -> String {
    let list = |l: &[&str]| serde_json::to_string(l).expect("rules serialise");
    format!(
        "security:\n  tool_policies:\n    shell:\n      grants:\n        shell:\n          allow: {}\n          deny: {}\n          opaque: ask\n",
        list(allow),
        list(deny)
    )
}

fn namespaces(sb: &Sandbox) -> bool {
    let doctor = run(sb.tackle(&sb.config(""), &["doctor"]));
    doctor.stdout.contains("namespaces: enforced")
}

fn explain_json(sb: &Sandbox, yaml: &str, line: &str) -> Value {
    let cfg = sb.config(yaml);
    let args = serde_json::json!({ "command": line }).to_string();
    let r = run(sb.tackle(
        &cfg,
        &["tools", "call", "shell", &args, "--explain", "--json"],
    ));
    serde_json::from_str(r.stdout.trim()).unwrap_or_else(|e| panic!("not JSON ({e})\n{r}"))
}

#[test]
fn explain_and_doctor_name_the_layer_of_each_rule() {
    let sb = Sandbox::new();
    let yaml = grant_yaml(&[], &["rm", "git push"]);
    let cfg = sb.config(&yaml);
    let args = serde_json::json!({ "command": "ls" }).to_string();
    let text = run(sb.tackle(&cfg, &["tools", "call", "shell", &args, "--explain"]));
    assert!(
        text.stdout
            .contains("shell rule: deny `git push` → analyser"),
        "{text}"
    );
    let doctor = run(sb.tackle(&cfg, &["doctor"]));
    if namespaces(&sb) {
        assert!(
            text.stdout.contains("shell rule: deny `rm` → kernel"),
            "{text}"
        );
        assert!(
            doctor
                .stdout
                .contains("deny `rm`: kernel, deny `git push`: analyser"),
            "{doctor}"
        );
        let v = explain_json(&sb, &yaml, "ls");
        let masked: Vec<&str> = v["sandbox"]["masked_programs"]
            .as_array()
            .map(|a| a.iter().filter_map(|m| m["program"].as_str()).collect())
            .unwrap_or_default();
        assert!(
            !masked.is_empty() && masked.iter().all(|p| *p == "rm"),
            "{v}"
        );
    } else {
        eprintln!("SKIP (kernel half): no namespace sandbox here");
        assert!(
            doctor.stdout.contains("deny `rm`: analyser only here"),
            "{doctor}"
        );
    }
}

#[test]
fn the_programs_explain_shows_are_the_ones_a_command_finds() {
    let sb = Sandbox::new();
    if !namespaces(&sb) {
        eprintln!("SKIP: the namespace sandbox is not available here");
        return;
    }
    let yaml = grant_yaml(&["ls", "cat", "echo"], &[]);
    let v = explain_json(&sb, &yaml, "ls /usr/bin");
    let shown: BTreeSet<String> = v["sandbox"]["visible_programs"]
        .as_array()
        .unwrap_or_else(|| panic!("no visible_programs: {v}"))
        .iter()
        .filter_map(|p| p.as_str())
        .filter(|p| p.starts_with("/usr/bin/"))
        .filter_map(|p| p.rsplit('/').next().map(String::from))
        .collect();
    assert_eq!(v["sandbox"]["executable"]["kind"], "only", "{v}");
    let cfg = sb.config(&yaml);
    let args = serde_json::json!({ "command": "ls /usr/bin" }).to_string();
    let r = run(sb.tackle(&cfg, &["tools", "call", "shell", &args, "--yes", "--json"]));
    let out: Value = serde_json::from_str(r.stdout.trim()).unwrap_or_else(|e| panic!("{e}\n{r}"));
    assert_eq!(out["ok"], true, "{r}");
    let content = out["content"].as_str().unwrap_or_default();
    let listed: BTreeSet<String> = content
        .split("stdout:")
        .nth(1)
        .unwrap_or_default()
        .split("stderr:")
        .next()
        .unwrap_or_default()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect();
    assert_eq!(listed, shown, "{content}");
    for needed in ["ls", "cat", "echo", "bash"] {
        assert!(listed.contains(needed), "{needed} missing: {listed:?}");
    }
}
