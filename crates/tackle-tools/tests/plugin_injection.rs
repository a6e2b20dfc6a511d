//! The injection corpus (`corpus/plugin_injection.txt`) through a real plugin, run by the real
//! host: every value arrives as literal argv elements, or is refused before anything runs, and
//! nothing else ever runs (the victim file survives, no marker file appears).

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tackle_host::{DiskPluginDirs, HostConfig, NativeHostProvider};
use tackle_protocol::{CallScope, ErrorKind, HostProvider, Tool, ToolContext};
use tackle_tools::plugins::{load, PluginDir, PluginsSettings};

const RECORD: &str = r#"#!/bin/sh
rm -rf rec && mkdir rec || exit 1
i=0
for a in "$@"; do
  printf '%s' "$a" > "rec/$i"
  i=$((i+1))
done
echo "recorded $i"
"#;

const VICTIM: &str = "precious\n";

struct Case {
    line: usize,
    value: String,
    plain: bool,
    guarded: bool,
}

fn corpus() -> Vec<Case> {
    let text = include_str!("corpus/plugin_injection.txt");
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("line {}: {e}", n + 1));
        let value = match (v.get("value"), v.get("repeat")) {
            (Some(Value::String(s)), _) => s.clone(),
            (_, Some(Value::String(s))) => s.repeat(v["times"].as_u64().unwrap() as usize),
            _ => panic!("line {}: no value", n + 1),
        };
        let literal = |k: &str| match v[k].as_str() {
            Some("literal") => true,
            Some("refused") => false,
            other => panic!("line {}: {k} = {other:?}", n + 1),
        };
        out.push(Case {
            line: n + 1,
            value,
            plain: literal("plain"),
            guarded: literal("guarded"),
        });
    }
    out
}

fn write_plugin(dir: &Path) {
    let plugin = dir.join("recorder");
    std::fs::create_dir_all(&plugin).unwrap();
    let script = plugin.join("record.sh");
    std::fs::write(&script, RECORD).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let params = json!({"type": "object", "properties": {"value": {"type": "string"}, "other": {"type": "string"}}, "required": ["value"]});
    let manifest = json!({
        "name": "recorder", "version": "1.0.0", "description": "records its argv",
        "tools": [
            {"name": "rec_guarded", "description": "d", "parameters": params,
             "command": ["./record.sh", "--", "{{value}}", "x={{value}}", "{{other}}"]},
            {"name": "rec_plain", "description": "d", "parameters": params,
             "command": ["./record.sh", "{{value}}"]},
            // A template that hands the value to a shell line, declared as sh so that the value
            // is quoted by sh's rules: it must stay data.
            {"name": "rec_shelled", "description": "d", "parameters": params,
             "command": ["sh", "-c", "printf '%s\\n' {{value}} > said.txt"],
             "code": {"2": "sh"}}
        ]
    });
    std::fs::write(plugin.join("plugin.json"), manifest.to_string()).unwrap();
}

fn recorded(ws: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for i in 0.. {
        match std::fs::read(ws.join("rec").join(i.to_string())) {
            Ok(bytes) => out.push(String::from_utf8(bytes).unwrap()),
            Err(_) => break,
        }
    }
    out
}

fn markers(ws: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![ws.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p.clone());
            }
            if e.file_name().to_string_lossy().contains("pwned") {
                found.push(p);
            }
        }
    }
    found
}

#[tokio::test]
async fn every_corpus_value_arrives_as_one_literal_argv_element_and_nothing_else_runs() {
    let plugins = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    write_plugin(plugins.path());
    let ws_path = std::fs::canonicalize(ws.path()).unwrap();
    std::fs::write(ws_path.join("victim.txt"), VICTIM).unwrap();

    let mut settings = PluginsSettings::new(Arc::new(DiskPluginDirs));
    settings.dirs = vec![PluginDir {
        label: "test".into(),
        path: plugins.path().to_path_buf(),
    }];
    let report = load(&settings);
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    let tools = &report.plugins[0].tools;
    let find = |name: &str| {
        tools
            .iter()
            .find(|t| t.spec().name == name)
            .unwrap()
            .clone()
    };
    let (guarded, plain) = (find("rec_guarded"), find("rec_plain"));
    let provider = NativeHostProvider::new(HostConfig::new(state.path()));

    let cases = corpus();
    assert!(cases.len() >= 20, "the corpus holds {} cases", cases.len());
    for case in &cases {
        for (tool, literal, expected) in [
            (
                &guarded,
                case.guarded,
                vec![
                    "--".to_string(),
                    case.value.clone(),
                    format!("x={}", case.value),
                    "OTHER".to_string(),
                ],
            ),
            (&plain, case.plain, vec![case.value.clone()]),
        ] {
            let name = tool.spec().name;
            let _ = std::fs::remove_dir_all(ws_path.join("rec"));
            let scope = CallScope {
                tool: name.clone(),
                session_id: "s".into(),
                agent: "a".into(),
                workspace: ws_path.clone(),
                grants: tool.default_policy().grants,
                cancel: Default::default(),
                approved: false,
            };
            let cx = ToolContext::new(&scope, "test", provider.scoped(&scope));
            let out = tool
                .call(json!({"value": case.value, "other": "OTHER"}), &cx)
                .await;
            let shown = tackle_protocol::text::preview(&case.value, 40);
            if literal {
                let out =
                    out.unwrap_or_else(|e| panic!("line {} {name} {shown:?}: {e}", case.line));
                assert!(!out.is_error, "line {} {name}: {}", case.line, out.content);
                assert_eq!(
                    recorded(&ws_path),
                    expected,
                    "line {} {name} {shown:?}",
                    case.line
                );
            } else {
                let kind = out.err().map(|e| e.kind);
                assert_eq!(
                    kind,
                    Some(ErrorKind::InvalidArguments),
                    "line {} {name} {shown:?}",
                    case.line
                );
                assert!(
                    !ws_path.join("rec").exists(),
                    "line {} {name}: the command ran",
                    case.line
                );
            }
            assert_eq!(
                markers(&ws_path),
                Vec::<PathBuf>::new(),
                "line {} {name}",
                case.line
            );
            assert_eq!(
                std::fs::read_to_string(ws_path.join("victim.txt")).unwrap(),
                VICTIM
            );
        }
    }
}

#[tokio::test]
async fn a_template_that_hands_values_to_a_shell_line_runs_only_what_stays_data() {
    let plugins = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    write_plugin(plugins.path());
    let ws_path = std::fs::canonicalize(ws.path()).unwrap();
    std::fs::write(ws_path.join("victim.txt"), VICTIM).unwrap();
    let mut settings = PluginsSettings::new(Arc::new(DiskPluginDirs));
    settings.dirs = vec![PluginDir {
        label: "test".into(),
        path: plugins.path().to_path_buf(),
    }];
    let report = load(&settings);
    let tool = report.plugins[0]
        .tools
        .iter()
        .find(|t| t.spec().name == "rec_shelled")
        .unwrap()
        .clone();
    let provider = NativeHostProvider::new(HostConfig::new(state.path()));
    let mut values: Vec<String> = corpus().into_iter().map(|c| c.value).collect();
    values.extend(["hello".to_string(), "plain-word_1.2".to_string()]);
    let mut ran = 0;
    for value in &values {
        let _ = std::fs::remove_file(ws_path.join("said.txt"));
        let scope = CallScope {
            tool: "rec_shelled".into(),
            session_id: "s".into(),
            agent: "a".into(),
            workspace: ws_path.clone(),
            grants: tool.default_policy().grants,
            cancel: Default::default(),
            approved: false,
        };
        let cx = ToolContext::new(&scope, "test", provider.scoped(&scope));
        let out = tool.call(json!({"value": value}), &cx).await;
        let shown = tackle_protocol::text::preview(value, 40);
        match out {
            Ok(out) if !out.is_error => {
                // It ran: the value reached printf whole, as one word.
                ran += 1;
                let said = std::fs::read_to_string(ws_path.join("said.txt")).unwrap_or_default();
                assert_eq!(said, format!("{value}\n"), "{shown:?}");
            }
            Ok(out) => panic!("{shown:?}: {}", out.content),
            Err(e) => {
                assert!(
                    matches!(e.kind, ErrorKind::Denied | ErrorKind::InvalidArguments),
                    "{shown:?}: {e}"
                );
                assert!(!ws_path.join("said.txt").exists(), "{shown:?}: it ran");
            }
        }
        assert_eq!(markers(&ws_path), Vec::<PathBuf>::new(), "{shown:?}");
        assert_eq!(
            std::fs::read_to_string(ws_path.join("victim.txt")).unwrap(),
            VICTIM,
            "{shown:?}"
        );
    }
    assert!(ran >= 2, "plain words still run ({ran} ran)");
}
