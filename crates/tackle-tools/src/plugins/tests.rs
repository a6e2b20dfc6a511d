//! Loading: problems named by file and JSON path, clashes refused, the risk floor held.

use super::*;
use crate::mock_host::{exec_ok, MockHost};
use serde_json::{json, Value};
use std::path::Path;
use tackle_protocol::plugins::{FoundManifest, ManifestScan};
use tackle_protocol::{ApprovalMode, Capability, ErrorKind, ExecCommand, Risk};

/// Manifests in memory: `(plugin dir name, manifest)`, all under `/plugins`.
struct Fake(Vec<(&'static str, String)>);

impl PluginDirs for Fake {
    fn scan(&self, dir: &Path, _: u64) -> ManifestScan {
        ManifestScan {
            found: self
                .0
                .iter()
                .map(|(name, text)| FoundManifest {
                    plugin_dir: dir.join(name),
                    path: dir.join(name).join("plugin.json"),
                    bytes: text.as_bytes().to_vec(),
                })
                .collect(),
            warnings: Vec::new(),
        }
    }

    fn is_executable_file(&self, path: &Path) -> bool {
        path.ends_with("run.sh") || path.ends_with("server")
    }
}

/// SHA-256 of `server bytes`.
fn server_sha() -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(b"server bytes")
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn settings(manifests: Vec<(&'static str, Value)>) -> PluginsSettings {
    let fake = Fake(
        manifests
            .into_iter()
            .map(|(n, v)| (n, v.to_string()))
            .collect(),
    );
    let mut s = PluginsSettings::new(Arc::new(fake));
    s.dirs = vec![PluginDir {
        label: "/plugins".into(),
        path: "/plugins".into(),
    }];
    s
}

fn tool(name: &str, command: Value) -> Value {
    json!({
        "name": name,
        "description": "d",
        "parameters": {"type": "object", "properties": {"count": {"type": "integer"}, "path": {"type": "string"}}},
        "command": command,
    })
}

fn manifest(tools: Vec<Value>) -> Value {
    json!({"name": "demo", "version": "1.0.0", "description": "a demo", "tools": tools})
}

fn errors(report: &LoadReport) -> Vec<(String, String)> {
    report
        .errors
        .iter()
        .map(|e| (e.file.display().to_string(), e.path.clone()))
        .collect()
}

#[test]
fn a_good_manifest_loads_with_the_default_risk_floor() {
    let r = load(&settings(vec![(
        "demo",
        manifest(vec![tool(
            "git_log",
            json!(["git", "log", "-n", "{{count}}"]),
        )]),
    )]));
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    let spec = r.plugins[0].tools[0].spec();
    assert_eq!(
        (
            spec.name.as_str(),
            spec.risk,
            spec.approval,
            spec.owner.as_str()
        ),
        (
            "git_log",
            Risk::Medium,
            ApprovalMode::UnlessAutoApproved,
            NAME
        )
    );
}

#[test]
fn each_problem_names_the_file_and_the_json_path() {
    let bad = json!({
        "name": "demo", "version": "", "description": "d",
        "tools": [
            tool("ok_tool", json!(["git", "{{nope}}"])),
            {"name": "9bad", "description": "d", "parameters": {"type": "string"}, "command": ["{{x}}"]},
            tool("t3", json!(["./run.sh", "--", "{{count"])),
            tool("t4", json!(["git"])).as_object().map(|o| {
                let mut o = o.clone();
                o.insert("working_dir".into(), json!("../out"));
                o.insert("env".into(), json!(["LD_PRELOAD"]));
                Value::Object(o)
            }).unwrap_or_default(),
        ]
    });
    let r = load(&settings(vec![("demo", bad)]));
    assert!(r.plugins.is_empty(), "a bad plugin is skipped whole");
    let file = "/plugins/demo/plugin.json".to_string();
    let got = errors(&r);
    for path in [
        "$.version",
        "$.tools[0].command[1]",
        "$.tools[1].name",
        "$.tools[1].parameters.type",
        "$.tools[1].command[0]",
        "$.tools[2].command[2]",
        "$.tools[3].working_dir",
        "$.tools[3].env[0]",
    ] {
        assert!(
            got.contains(&(file.clone(), path.to_string())),
            "{path} missing in {got:?}"
        );
    }
    let undeclared = r.errors.iter().find(|e| e.path == "$.tools[0].command[1]");
    assert!(
        undeclared.is_some_and(|e| e.message.contains("{{nope}}")),
        "{undeclared:?}"
    );
}

#[test]
fn a_syntax_or_type_error_names_its_json_path() {
    let r = load(&settings(vec![
        (
            "a",
            json!({"name": "a", "version": "1", "description": "d", "tools": [{"name": "x", "description": "d", "parameters": {"type": "object"}, "command": ["git"], "timeout_secs": "soon"}]}),
        ),
        (
            "b",
            json!({"name": "b", "version": "1", "description": "d", "tools": [], "surprise": 1}),
        ),
    ]));
    let got = errors(&r);
    assert!(
        got.contains(&(
            "/plugins/a/plugin.json".into(),
            "$.tools[0].timeout_secs".into()
        )),
        "{got:?}"
    );
    assert!(
        got.iter().any(|(f, _)| f == "/plugins/b/plugin.json"),
        "{got:?}"
    );
    let fake = Fake(vec![("c", "{ not json".into())]);
    let mut s = PluginsSettings::new(Arc::new(fake));
    s.dirs = settings(vec![]).dirs;
    let r = load(&s);
    assert_eq!(r.errors.len(), 1);
    assert!(
        r.errors[0]
            .to_string()
            .starts_with("/plugins/c/plugin.json: $"),
        "{}",
        r.errors[0]
    );
}

#[test]
fn risk_and_approval_may_be_raised_but_never_lowered() {
    let with = |risk: &str, approval: &str| {
        let mut t = tool("t", json!(["git"]));
        t["risk"] = json!(risk);
        t["approval"] = json!(approval);
        load(&settings(vec![("demo", manifest(vec![t]))]))
    };
    let raised = with("high", "always");
    let spec = raised.plugins[0].tools[0].spec();
    assert_eq!(
        (spec.risk, spec.approval),
        (Risk::High, ApprovalMode::Always)
    );
    let low = with("low", "unless_auto_approved");
    assert!(low.plugins.is_empty());
    assert_eq!(errors(&low)[0].1, "$.tools[0].risk");
    let never = with("medium", "never");
    assert!(never.plugins.is_empty());
    assert_eq!(errors(&never)[0].1, "$.tools[0].approval");
}

#[test]
fn a_tool_named_like_a_builtin_or_an_mcp_namespace_is_refused_with_a_warning() {
    let mut s = settings(vec![
        (
            "demo",
            manifest(vec![
                tool("shell", json!(["git"])),
                tool("time__now", json!(["git"])),
                tool("mine", json!(["git"])),
            ]),
        ),
        (
            "other",
            json!({"name": "other", "version": "1", "description": "d", "tools": [tool("mine", json!(["git"]))]}),
        ),
    ]);
    s.reserved = vec!["shell".into()];
    s.reserved_prefixes = vec!["time__".into()];
    let r = load(&s);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    let names: Vec<String> = extension(&r)
        .tools()
        .iter()
        .map(|t| t.spec().name)
        .collect();
    assert_eq!(names, ["mine"]);
    assert_eq!(r.warnings.len(), 3, "{:?}", r.warnings);
    assert!(r.warnings[0].contains("`shell`") && r.warnings[0].contains("built-in"));
    assert!(r.warnings[1].contains("MCP namespace"));
    assert!(r.warnings[2].contains("plugin `demo`"));
}

fn binary_manifest(sha256: &str) -> Value {
    let mut t = tool("t", json!(null));
    if let Some(o) = t.as_object_mut() {
        o.remove("command");
    }
    json!({"name": "demo", "version": "1", "description": "d", "execution": "binary",
           "binary": {"path": "./server", "protocol": "jsonrpc", "sha256": sha256}, "tools": [t]})
}

#[test]
fn binary_manifests_are_checked_with_json_paths() {
    let ok = load(&settings(vec![("demo", binary_manifest(&server_sha()))]));
    assert!(ok.errors.is_empty(), "{:?}", ok.errors);
    let mut bad = binary_manifest("xyz");
    bad["binary"]["path"] = json!("../elsewhere");
    bad["tools"][0]["command"] = json!(["git"]);
    let r = load(&settings(vec![("demo", bad)]));
    let got: Vec<String> = errors(&r).into_iter().map(|(_, p)| p).collect();
    assert_eq!(
        got,
        ["$.binary.path", "$.binary.sha256", "$.tools[0].command"]
    );
    let mut missing = binary_manifest("");
    missing.as_object_mut().map(|o| o.remove("binary"));
    let r = load(&settings(vec![("demo", missing)]));
    assert_eq!(errors(&r)[0].1, "$.binary");
}

#[tokio::test]
async fn a_binary_gets_one_json_rpc_request_and_its_last_line_is_the_answer() {
    let r = load(&settings(vec![("demo", binary_manifest(&server_sha()))]));
    let host = Arc::new(MockHost::new());
    host.reply_exec(Ok(exec_ok(
        0,
        "starting\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"output\":\"done\"}}\n",
        "",
    )));
    let out = r.plugins[0].tools[0]
        .call(json!({"path": "a; b"}), &host.context())
        .await
        .map(|o| o.content);
    assert_eq!(out, Ok("done".to_string()));
    let req = &host.exec_requests()[0];
    assert_eq!(
        req.command,
        ExecCommand::Argv {
            program: "/plugins/demo/server".into(),
            args: vec![]
        }
    );
    let sent: Value = serde_json::from_slice(req.stdin.as_deref().unwrap_or_default()).unwrap();
    assert_eq!(
        sent["params"],
        json!({"tool": "t", "args": {"path": "a; b"}})
    );
}

#[tokio::test]
async fn a_binary_is_started_only_through_the_hosts_digest_check() {
    // The host checks the digest and runs the checked bytes (tackle-host `pinned_program`);
    // the tool must hand it the manifest's digest with every start.
    let r = load(&settings(vec![("demo", binary_manifest(&server_sha()))]));
    let host = Arc::new(MockHost::new());
    host.reply_exec(Ok(exec_ok(
        0,
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"output\":\"done\"}}\n",
        "",
    )));
    let _ = r.plugins[0].tools[0].call(json!({}), &host.context()).await;
    let req = &host.exec_requests()[0];
    assert_eq!(req.program_sha256.as_deref(), Some(server_sha().as_str()));
    // A template plugin names no digest.
    let t = load(&settings(vec![(
        "demo",
        manifest(vec![tool("t", json!(["git", "log"]))]),
    )]));
    let host = Arc::new(MockHost::new());
    host.reply_exec(Ok(exec_ok(0, "", "")));
    let _ = t.plugins[0].tools[0].call(json!({}), &host.context()).await;
    assert_eq!(host.exec_requests()[0].program_sha256, None);
}

#[test]
fn legacy_string_commands_load_only_as_plain_words() {
    let ok = load(&settings(vec![(
        "demo",
        manifest(vec![tool("t", json!("git log -n {{count}}"))]),
    )]));
    assert!(ok.errors.is_empty(), "{:?}", ok.errors);
    let bad = load(&settings(vec![(
        "demo",
        manifest(vec![tool("t", json!("git log '{{path}}'"))]),
    )]));
    assert_eq!(errors(&bad)[0].1, "$.tools[0].command");
}

#[test]
fn plugin_relative_programs_must_stay_inside_and_be_executable() {
    let r = load(&settings(vec![(
        "demo",
        manifest(vec![tool("t", json!(["./run.sh", "{{path}}"]))]),
    )]));
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    let exec = match &r.plugins[0].tools[0].def.mode {
        Mode::Argv { program, .. } => program.clone(),
        Mode::Binary { .. } => String::new(),
    };
    assert_eq!(exec, "/plugins/demo/run.sh");
    for bad in ["../x/run.sh", "./missing.sh"] {
        let r = load(&settings(vec![(
            "demo",
            manifest(vec![tool("t", json!([bad]))]),
        )]));
        assert_eq!(errors(&r)[0].1, "$.tools[0].command[0]", "{bad}");
    }
}

#[tokio::test]
async fn a_call_execs_argv_in_the_workspace_with_its_own_read_grant() {
    let r = load(&settings(vec![(
        "demo",
        manifest(vec![tool(
            "t",
            json!(["./run.sh", "--", "{{path}}", "-n={{count}}"]),
        )]),
    )]));
    let t = r.plugins[0].tools[0].clone();
    let host = Arc::new(MockHost::new());
    host.reply_exec(Ok(exec_ok(0, "ok\n", "")));
    let out = t
        .call(json!({"path": "-rf; $(id)", "count": 3}), &host.context())
        .await
        .map(|o| o.is_error);
    assert_eq!(out, Ok(false));
    let reqs = host.exec_requests();
    assert_eq!(
        reqs[0].command,
        ExecCommand::Argv {
            program: "/plugins/demo/run.sh".into(),
            args: vec!["--".into(), "-rf; $(id)".into(), "-n=3".into()],
        }
    );
    assert!(matches!(&host.capabilities()[0], Capability::Exec { .. }));
    let grants = t.default_policy().grants;
    assert!(grants
        .fs
        .is_some_and(|f| f.allow_read.contains(&"/plugins/demo".to_string())));
}

#[tokio::test]
async fn a_leading_dash_value_without_double_dash_is_invalid_and_nothing_runs() {
    let r = load(&settings(vec![(
        "demo",
        manifest(vec![tool("t", json!(["git", "{{path}}"]))]),
    )]));
    let host = Arc::new(MockHost::new());
    let err = r.plugins[0].tools[0]
        .call(json!({"path": "--output=/etc/x"}), &host.context())
        .await
        .err()
        .map(|e| e.kind);
    assert_eq!(err, Some(ErrorKind::InvalidArguments));
    assert!(host.exec_requests().is_empty());
}

/// Manifests that can change between loads.
struct Changing(std::sync::Mutex<Vec<(&'static str, String)>>);

impl PluginDirs for Changing {
    fn scan(&self, dir: &Path, max: u64) -> ManifestScan {
        let now = self.0.lock().map(|g| g.clone()).unwrap_or_default();
        Fake(now).scan(dir, max)
    }
    fn is_executable_file(&self, _: &Path) -> bool {
        false
    }
}

#[test]
fn reload_replaces_the_tool_set_and_a_broken_edit_removes_the_plugin() {
    let disk = Arc::new(Changing(std::sync::Mutex::new(vec![(
        "demo",
        manifest(vec![tool("first", json!(["git"]))]).to_string(),
    )])));
    let mut s = PluginsSettings::new(disk.clone());
    s.dirs = settings(vec![]).dirs;
    let plugins = Plugins::new(s);
    let names = |p: &Plugins| -> Vec<String> { p.tools().iter().map(|t| t.spec().name).collect() };
    assert_eq!(names(&plugins), ["first"]);
    if let Ok(mut g) = disk.0.lock() {
        *g = vec![(
            "demo",
            manifest(vec![tool("second", json!(["git"]))]).to_string(),
        )];
    }
    plugins.reload();
    assert_eq!(names(&plugins), ["second"]);
    if let Ok(mut g) = disk.0.lock() {
        *g = vec![("demo", "{ broken".to_string())];
    }
    let report = plugins.reload();
    assert!(names(&plugins).is_empty());
    assert_eq!(report.errors.len(), 1);
}

#[test]
fn allow_and_block_lists_keep_plugins_out_and_block_wins() {
    let good = || manifest(vec![tool("t", json!(["git"]))]);
    let loaded = |s: &PluginsSettings| -> Vec<String> {
        load(s)
            .plugins
            .iter()
            .map(|p| p.manifest.name.clone())
            .collect()
    };
    let excluded = |s: &PluginsSettings| load(s).excluded;

    // Neither list: it loads.
    let s = settings(vec![("demo", good())]);
    assert_eq!(loaded(&s), ["demo"]);

    // Blocked by its manifest name (here in a directory named otherwise).
    let mut s = settings(vec![("elsewhere", good())]);
    s.block = vec!["demo".into()];
    assert!(loaded(&s).is_empty());
    assert_eq!(
        excluded(&s),
        [("demo".to_string(), "is in plugins.block".to_string())]
    );

    // An allow list names the plugins that may load; the others stay out.
    let mut s = settings(vec![("demo", good())]);
    s.allow = vec!["other".into()];
    assert!(loaded(&s).is_empty());
    assert_eq!(excluded(&s)[0].1, "is not in plugins.allow");
    s.allow.push("demo".into());
    assert_eq!(loaded(&s), ["demo"]);

    // On both lists: blocked.
    s.block = vec!["demo".into()];
    assert!(loaded(&s).is_empty());

    // A blocked directory is not parsed, so a broken manifest in it is no problem.
    let mut s = settings(vec![("demo", json!({"tools": "broken"}))]);
    s.block = vec!["demo".into()];
    let r = load(&s);
    assert!(
        r.errors.is_empty() && r.plugins.is_empty(),
        "{:?}",
        errors(&r)
    );
    assert_eq!(r.excluded.len(), 1);
}
