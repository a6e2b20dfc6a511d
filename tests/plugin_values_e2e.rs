//! Issue #38 through the real binary: a plugin value is data wherever the template puts it.
//! A value that starts an argv element never becomes an option (`git log {{since}}..HEAD`
//! with `--output=FILE`), a manifest that splices a value into an interpreter's code string is
//! refused at load (`tackle plugins check` names file and JSON path and exits 1), and a code
//! string whose language the manifest declares gets each value as one quoted literal.

mod common;

use common::{run, Sandbox};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

fn write_plugin(sb: &Sandbox, dir: &str, manifest: &Value) -> PathBuf {
    let plugin = sb.home().join(".config/tackle/plugins").join(dir);
    std::fs::create_dir_all(&plugin).expect("mkdir");
    let file = plugin.join("plugin.json");
    std::fs::write(&file, manifest.to_string()).expect("manifest");
    file
}

fn one_tool(name: &str, tool: &str, command: Value, code: Option<Value>) -> Value {
    let mut t = json!({
        "name": tool, "description": "d",
        "parameters": {"type": "object", "properties": {"v": {"type": "string"}}, "required": ["v"]},
        "command": command,
    });
    if let Some(code) = code {
        t["code"] = code;
    }
    json!({"name": name, "version": "1", "description": "d", "tools": [t]})
}

/// Every file under `dir` whose name starts with `pwned`.
fn markers(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = entry.path();
            if p.is_dir() && !p.ends_with(".git") {
                stack.push(p.clone());
            }
            if entry.file_name().to_string_lossy().starts_with("pwned") {
                found.push(p);
            }
        }
    }
    found
}

fn git(ws: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(ws)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "git {args:?}");
}

#[test]
fn a_value_starting_an_element_never_becomes_a_git_option() {
    let sb = Sandbox::new();
    let ws = sb.workspace();
    git(&ws, &["init", "-q"]);
    std::fs::write(ws.join("a.txt"), "a").expect("write");
    git(&ws, &["add", "a.txt"]);
    git(&ws, &["commit", "-q", "-m", "first"]);
    write_plugin(
        &sb,
        "gitlog",
        &one_tool(
            "gitlog",
            "git_since",
            json!(["git", "log", "--oneline", "{{v}}..HEAD"]),
            None,
        ),
    );
    let config = sb.config("");
    let r = run(sb.tackle(&config, &["plugins", "check"]));
    assert_eq!(r.code, 0, "the template itself is fine: {r}");

    for attack in ["--output=pwned", "--output=../pwned", "-opwned"] {
        let args = json!({ "v": attack }).to_string();
        let r = run(sb.tackle(
            &config,
            &["tools", "call", "git_since", &args, "--yes", "--json"],
        ));
        assert_ne!(r.code, 0, "{attack}: {r}");
        assert!(
            r.stdout.contains("would be read as an option")
                || r.stderr.contains("would be read as an option"),
            "{attack}: {r}"
        );
        assert_eq!(markers(&ws), Vec::<PathBuf>::new(), "{attack}: {r}");
        assert_eq!(
            markers(sb.dir.path()),
            Vec::<PathBuf>::new(),
            "{attack}: {r}"
        );
    }
    // A plain value still runs.
    let args = json!({"v": "HEAD~0"}).to_string();
    let r = run(sb.tackle(
        &config,
        &["tools", "call", "git_since", &args, "--yes", "--json"],
    ));
    assert_eq!(r.code, 0, "{r}");
}

#[test]
fn a_value_spliced_into_interpreter_code_is_refused_at_load() {
    let sb = Sandbox::new();
    let ws = sb.workspace();
    let py = write_plugin(
        &sb,
        "pyecho",
        &one_tool(
            "pyecho",
            "py_echo",
            json!(["/usr/bin/python3", "-c", "print('{{v}}')"]),
            None,
        ),
    );
    let sh = write_plugin(
        &sb,
        "envsh",
        &one_tool(
            "envsh",
            "env_sh",
            json!(["env", "sh", "-c", "echo {{v}}"]),
            None,
        ),
    );
    let config = sb.config("");
    let r = run(sb.tackle(&config, &["plugins", "check"]));
    assert_eq!(r.code, 1, "{r}");
    assert!(
        r.stdout
            .contains(&format!("{}: $.tools[0].command[2]: ", py.display())),
        "{r}"
    );
    assert!(
        r.stdout
            .contains(&format!("{}: $.tools[0].command[3]: ", sh.display())),
        "{r}"
    );
    let r = run(sb.tackle(&config, &["plugins", "check", "--json"]));
    assert_eq!(r.code, 1, "{r}");
    let v: Value = serde_json::from_str(&r.stdout).expect("json");
    let errors = v["errors"].as_array().cloned().unwrap_or_default();
    let has = |file: &Path, path: &str| {
        errors
            .iter()
            .any(|e| e["file"] == file.display().to_string() && e["path"] == path)
    };
    assert!(has(&py, "$.tools[0].command[2]"), "{r}");
    assert!(has(&sh, "$.tools[0].command[3]"), "{r}");

    // Neither tool exists, so no call can run the code.
    for (tool, attack) in [
        ("py_echo", "'); open('pwned', 'w'); print('"),
        ("env_sh", "x; touch pwned"),
    ] {
        let args = json!({ "v": attack }).to_string();
        let r = run(sb.tackle(&config, &["tools", "call", tool, &args, "--yes", "--json"]));
        assert_ne!(r.code, 0, "{tool}: {r}");
        assert_eq!(markers(&ws), Vec::<PathBuf>::new(), "{tool}: {r}");
    }
}

#[test]
fn a_declared_python_string_takes_any_value_as_one_literal() {
    if !Path::new("/usr/bin/python3").exists() {
        eprintln!("skipped: no /usr/bin/python3");
        return;
    }
    let sb = Sandbox::new();
    let ws = sb.workspace();
    write_plugin(
        &sb,
        "pyquoted",
        &one_tool(
            "pyquoted",
            "py_quoted",
            json!([
                "/usr/bin/python3",
                "-c",
                "import sys; sys.stdout.write('<' + {{v}} + '>')"
            ]),
            Some(json!({"2": "python"})),
        ),
    );
    let config = sb.config("");
    let r = run(sb.tackle(&config, &["plugins", "check"]));
    assert_eq!(r.code, 0, "{r}");
    for attack in [
        "'); open('pwned', 'w'); print('",
        "\" + open(\"pwned\", \"w\").name + \"",
        "\\'; open('pwned','w') #",
        "x\nopen('pwned', 'w')",
        "plain words",
    ] {
        let args = json!({ "v": attack }).to_string();
        let r = run(sb.tackle(&config, &["tools", "call", "py_quoted", &args, "--yes"]));
        assert_eq!(r.code, 0, "{attack:?}: {r}");
        assert!(r.stdout.contains(&format!("<{attack}>")), "{attack:?}: {r}");
        assert_eq!(markers(&ws), Vec::<PathBuf>::new(), "{attack:?}: {r}");
    }
}

#[test]
fn a_declared_sh_line_takes_any_value_as_one_word() {
    let sb = Sandbox::new();
    let ws = sb.workspace();
    write_plugin(
        &sb,
        "shquoted",
        &one_tool(
            "shquoted",
            "sh_quoted",
            json!(["sh", "-c", "printf '<%s>' {{v}}"]),
            Some(json!({"2": "sh"})),
        ),
    );
    let config = sb.config("");
    let r = run(sb.tackle(&config, &["plugins", "check"]));
    assert_eq!(r.code, 0, "{r}");
    for attack in [
        "x'; touch pwned; '",
        "$(touch pwned)",
        "`touch pwned`",
        "a b > pwned",
        "x\ntouch pwned",
    ] {
        let args = json!({ "v": attack }).to_string();
        let r = run(sb.tackle(&config, &["tools", "call", "sh_quoted", &args, "--yes"]));
        assert_eq!(r.code, 0, "{attack:?}: {r}");
        assert!(r.stdout.contains(&format!("<{attack}>")), "{attack:?}: {r}");
        assert_eq!(markers(&ws), Vec::<PathBuf>::new(), "{attack:?}: {r}");
    }
    // A quoted value may not start with `-`: the line could pass it on as an option.
    let args = json!({"v": "--help"}).to_string();
    let r = run(sb.tackle(&config, &["tools", "call", "sh_quoted", &args, "--yes"]));
    assert_ne!(r.code, 0, "{r}");
}
