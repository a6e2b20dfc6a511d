//! Loading: problems named by file and JSON path, clashes refused, the risk floor held.

use super::*;
use crate::mock_host::{exec_ok, MockHost};
use serde_json::{json, Value};
use std::path::Path;
use tackle_protocol::plugins::{FoundManifest, ManifestScan};
use tackle_protocol::{ApprovalMode, Capability, ErrorKind, ExecCommand, Risk, ToolError};

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
        manifest(vec![tool("t", json!(["git", "log", "{{path}}"]))]),
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

// --- Issue #38: plugin values that become options or code -------------------------------

/// The JSON paths of the problems a single tool with this command (and `code` declarations)
/// gets at load.
fn load_problems(command: Value, code: Option<Value>) -> Vec<String> {
    let mut t = tool("t", command);
    if let Some(code) = code {
        t["code"] = code;
    }
    let r = load(&settings(vec![("demo", manifest(vec![t]))]));
    r.errors.iter().map(|e| e.path.clone()).collect()
}

#[test]
fn a_value_starting_an_element_never_becomes_an_option() {
    use super::template::{parse_element, Template};
    let t =
        |parts: &[&str]| Template::new(parts.iter().map(|p| parse_element(p).unwrap()).collect());
    let fill = |tpl: &Template, v: Value| tpl.fill(v.as_object().unwrap());
    let dash = |r: Result<Vec<String>, FillError>| matches!(r, Err(FillError::LeadingDash { .. }));
    // `{{since}}..HEAD` with `--output=FILE` would make git write FILE.
    assert!(dash(fill(
        &t(&["log", "{{path}}..HEAD"]),
        json!({"path": "--output=x"})
    )));
    assert!(dash(fill(&t(&["{{path}}"]), json!({"path": "-rf"}))));
    assert!(dash(fill(
        &t(&["{{path}}=x"]),
        json!({"path": "--upload-pack"})
    )));
    // An empty first value leaves the next one first.
    assert!(dash(fill(
        &t(&["{{path}}{{count}}"]),
        json!({"path": "", "count": -1})
    )));
    assert!(dash(fill(&t(&["{{path}}-x"]), json!({"path": ""}))));
    // A literal first character keeps the value inside the option's text.
    assert_eq!(
        fill(
            &t(&["-o{{path}}", "--format={{count}}"]),
            json!({"path": "-x", "count": -2})
        )
        .unwrap(),
        ["-o-x", "--format=-2"]
    );
    // After a literal `--` nothing is an option.
    assert_eq!(
        fill(&t(&["--", "{{path}}..HEAD"]), json!({"path": "--output=x"})).unwrap(),
        ["--", "--output=x..HEAD"]
    );
    assert_eq!(
        fill(&t(&["log", "{{path}}..HEAD"]), json!({"path": "v1.0"})).unwrap(),
        ["log", "v1.0..HEAD"]
    );
}

#[test]
fn a_placeholder_in_code_or_naming_a_program_is_refused_at_load_with_its_path() {
    let cases: Vec<(Value, usize)> = vec![
        (json!(["python3", "-c", "print('{{path}}')"]), 2),
        (json!(["/usr/bin/python3.12", "-c", "x = {{count}}"]), 2),
        (json!(["python3", "-c{{path}}"]), 1),
        (json!(["python3", "{{path}}"]), 1),
        (json!(["python3", "-m", "{{path}}"]), 2),
        (json!(["sh", "-c", "echo {{path}}"]), 2),
        (json!(["bash", "-c", "echo {{path}}"]), 2),
        (json!(["bash", "-lc", "echo {{path}}"]), 2),
        (json!(["bash", "-o", "pipefail", "-c", "ls {{path}}"]), 4),
        (json!(["zsh", "-c", "ls '{{path}}'"]), 2),
        (json!(["perl", "-e", "print '{{path}}'"]), 2),
        (json!(["perl", "-ne", "print if /{{path}}/", "f"]), 2),
        (json!(["perl", "-M{{path}}", "-e", "1"]), 1),
        (json!(["node", "-e", "console.log('{{path}}')"]), 2),
        (json!(["node", "--eval={{path}}"]), 1),
        (json!(["ruby", "-e", "puts '{{path}}'"]), 2),
        (json!(["awk", "{print \"{{path}}\"}", "f"]), 1),
        (json!(["gawk", "-e", "BEGIN{print {{count}}}"]), 2),
        (json!(["sed", "s/a/{{path}}/", "f"]), 1),
        (json!(["sed", "-e", "s/a/{{path}}/", "f"]), 2),
        (json!(["sed", "-n", "-e{{path}}", "f"]), 2),
        (json!(["jq", "{{path}}", "f.json"]), 1),
        (json!(["osascript", "-e", "display dialog \"{{path}}\""]), 2),
        (json!(["pwsh", "-Command", "Write-Host {{path}}"]), 2),
        (
            json!(["pwsh", "-NoProfile", "-Command", "Write-Host", "{{path}}"]),
            4,
        ),
        (json!(["vim", "-c", "{{path}}", "f"]), 2),
        (json!(["vim", "+{{path}}", "f"]), 1),
        (json!(["python3", "-{{path}}", "./script.py"]), 1),
        (json!(["gdb", "-batch", "-ex", "print {{count}}"]), 3),
        (json!(["php", "-r", "echo '{{path}}';"]), 2),
        (json!(["lua", "-e", "print('{{path}}')"]), 2),
        (json!(["Rscript", "-e", "cat('{{path}}')"]), 2),
        (json!(["expect", "-c", "send \"{{path}}\""]), 2),
        (json!(["sed", "-i", "s/a/{{path}}/", "f"]), 2),
        (json!(["awk", "-F,", "{print \"{{path}}\"}", "f"]), 2),
        // Through wrappers.
        (json!(["stdbuf", "-oL", "sh", "-c", "echo {{path}}"]), 4),
        (json!(["busybox", "sh", "-c", "echo {{path}}"]), 3),
        (
            json!(["docker", "run", "img", "sh", "-c", "echo {{path}}"]),
            5,
        ),
        (json!(["env", "-S", "sh -c {{path}}"]), 2),
        (json!(["env", "sh", "-c", "ls {{path}}"]), 3),
        (
            json!(["env", "-i", "FOO=1", "python3", "-c", "print({{path}})"]),
            5,
        ),
        (json!(["xargs", "sh", "-c", "echo {{path}}"]), 3),
        (
            json!(["find", ".", "-exec", "sh", "-c", "echo {{path}}", ";"]),
            5,
        ),
        (json!(["timeout", "5", "python3", "-c", "x = {{path}}"]), 4),
        (json!(["nice", "-n", "5", "bash", "-c", "{{path}}"]), 5),
        (json!(["sudo", "-u", "x", "perl", "-e", "{{path}}"]), 5),
        (
            json!(["timeout", "-s", "KILL", "5", "node", "-e", "{{path}}"]),
            6,
        ),
        // Interpreter environment set from a value.
        (json!(["env", "BASH_ENV={{path}}", "bash", "./run.sh"]), 1),
        (json!(["env", "PYTHONSTARTUP={{path}}", "python3"]), 1),
        (json!(["env", "{{path}}", "x"]), 1),
        // The program, directly or through a wrapper.
        (json!(["env", "{{path}}"]), 1),
        (json!(["sudo", "{{path}}"]), 1),
        (json!(["xargs", "{{path}}"]), 1),
        (json!(["find", ".", "-exec", "{{path}}", ";"]), 3),
        // Option values that are commands, and shell lines.
        (json!(["git", "-c", "core.pager={{path}}", "log"]), 2),
        (json!(["git", "{{path}}"]), 1),
        (
            json!(["git", "fetch", "--upload-pack={{path}}", "origin"]),
            2,
        ),
        (json!(["tar", "--to-command={{path}}", "-xf", "a.tar"]), 1),
        (json!(["rsync", "-e", "{{path}}", "a", "b"]), 2),
        (json!(["make", "CC={{path}}"]), 1),
        (json!(["ssh", "host", "ls {{path}}"]), 2),
        (json!(["watch", "ls", "{{path}}"]), 2),
        // A shell line that runs its own arguments.
        (json!(["sh", "-c", "eval \"$1\"", "sh", "{{path}}"]), 4),
        (json!(["bash", "-c", "\"$@\"", "bash", "{{path}}"]), 4),
        (
            json!(["sh", "-c", "python3 -c \"$1\"", "sh", "{{path}}"]),
            4,
        ),
        (json!(["sh", "-c", "echo \"$1\" | sh", "sh", "{{path}}"]), 4),
    ];
    for (command, index) in cases {
        let got = load_problems(command.clone(), None);
        let want = format!("$.tools[0].command[{index}]");
        assert!(got.contains(&want), "{command}: want {want}, got {got:?}");
    }
}

#[test]
fn values_passed_as_plain_arguments_still_load() {
    for command in [
        json!(["git", "log", "{{path}}..HEAD"]),
        json!(["git", "log", "--format={{path}}", "-n", "{{count}}"]),
        json!(["git", "-C", "sub", "log", "--", "{{path}}"]),
        json!(["grep", "-rn", "-e{{path}}", "notes/"]),
        json!(["grep", "-rn", "--", "{{path}}", "notes/"]),
        json!(["sh", "-c", "printf '%s\\n' \"$1\"", "sh", "{{path}}"]),
        json!([
            "sh",
            "-c",
            "awk '{print $1}' \"$1\" | sort",
            "sh",
            "{{path}}"
        ]),
        json!(["bash", "./run.sh", "{{path}}"]),
        json!(["python3", "./script.py", "--name", "{{path}}"]),
        json!([
            "python3",
            "-c",
            "import sys; print(sys.argv[1])",
            "{{path}}"
        ]),
        json!(["perl", "-e", "print @ARGV", "{{path}}"]),
        json!(["node", "-e", "console.log(process.argv[1])", "{{path}}"]),
        json!(["awk", "-v", "x={{path}}", "{print x}", "f"]),
        json!(["awk", "-vx={{path}}", "{print x}", "f"]),
        json!(["python3", "-W{{path}}", "./script.py"]),
        json!(["awk", "-f", "prog.awk", "{{path}}"]),
        json!(["sed", "-e", "s/a/b/", "{{path}}"]),
        json!(["jq", "--arg", "x", "{{path}}", ".a == $x", "f.json"]),
        json!(["env", "LC_ALL=C", "sort", "{{path}}"]),
        json!(["timeout", "5", "git", "log", "{{path}}"]),
        json!(["find", ".", "-name", "{{path}}", "-exec", "ls", "{}", ";"]),
        json!(["./run.sh", "--", "{{path}}", "-n={{count}}"]),
    ] {
        let got = load_problems(command.clone(), None);
        assert!(got.is_empty(), "{command}: {got:?}");
    }
}

#[test]
fn a_declared_language_quotes_each_value_and_must_match_the_program() {
    // Loads: the placeholder stands where a quoted value is one word / one literal.
    for (command, code) in [
        (
            json!(["sh", "-c", "printf '%s\\n' {{path}} > said.txt"]),
            json!({"2": "sh"}),
        ),
        (
            json!(["bash", "-c", "ls -l -- {{path}} 2>&1 | head -n 3"]),
            json!({"2": "sh"}),
        ),
        (
            json!(["python3", "-c", "import sys; sys.stdout.write({{path}})"]),
            json!({"2": "python"}),
        ),
        (
            json!(["python3", "-c", "print('a', {{path}}, \"#\")  # note"]),
            json!({"2": "python"}),
        ),
    ] {
        let got = load_problems(command.clone(), Some(code));
        assert!(got.is_empty(), "{command}: {got:?}");
    }
    // Refused, at the element's path.
    for (command, code, path) in [
        // Inside quotes the quoting would end them.
        (
            json!(["sh", "-c", "echo '{{path}}'"]),
            json!({"2": "sh"}),
            "command[2]",
        ),
        (
            json!(["sh", "-c", "echo \"{{path}}\""]),
            json!({"2": "sh"}),
            "command[2]",
        ),
        // The quoted word would still be code or the program inside the line.
        (
            json!(["sh", "-c", "eval {{path}}"]),
            json!({"2": "sh"}),
            "command[2]",
        ),
        (
            json!(["sh", "-c", "{{path}} x"]),
            json!({"2": "sh"}),
            "command[2]",
        ),
        (
            json!(["sh", "-c", "python3 -c {{path}}"]),
            json!({"2": "sh"}),
            "command[2]",
        ),
        (
            json!(["sh", "-c", "X={{path}} ls"]),
            json!({"2": "sh"}),
            "command[2]",
        ),
        (
            json!(["sh", "-c", "echo $({{path}})"]),
            json!({"2": "sh"}),
            "command[2]",
        ),
        (
            json!(["sh", "-c", "cat > {{path}}"]),
            json!({"2": "sh"}),
            "command[2]",
        ),
        // The wrong language for the program.
        (
            json!(["sh", "-c", "echo {{path}}"]),
            json!({"2": "python"}),
            "command[2]",
        ),
        (
            json!(["python3", "-c", "print({{path}})"]),
            json!({"2": "sh"}),
            "command[2]",
        ),
        (
            json!(["perl", "-e", "print {{path}}"]),
            json!({"2": "sh"}),
            "command[2]",
        ),
        // Python: inside a string, after a name (a string prefix), in an f-string.
        (
            json!(["python3", "-c", "print('{{path}}')"]),
            json!({"2": "python"}),
            "command[2]",
        ),
        (
            json!(["python3", "-c", "print(f{{path}})"]),
            json!({"2": "python"}),
            "command[2]",
        ),
        (
            json!(["python3", "-c", "print(f'{x}', {{path}})"]),
            json!({"2": "python"}),
            "command[2]",
        ),
        (
            json!(["python3", "-c", "x = 1 # {{path}}"]),
            json!({"2": "python"}),
            "command[2]",
        ),
        // Not code at all, a language nobody quotes, an index that is not there.
        (
            json!(["git", "log", "{{path}}"]),
            json!({"2": "sh"}),
            "command[2]",
        ),
        (
            json!(["perl", "-e", "print {{path}}"]),
            json!({"2": "perl"}),
            "code.2",
        ),
        (
            json!(["sh", "-c", "echo {{path}}"]),
            json!({"7": "sh"}),
            "code.7",
        ),
    ] {
        let got = load_problems(command.clone(), Some(code.clone()));
        let want = format!("$.tools[0].{path}");
        assert!(
            got.contains(&want),
            "{command} {code}: want {want}, got {got:?}"
        );
    }
}

fn declared_tool(command: Value, code: Value) -> Arc<PluginTool> {
    let mut t = tool("t", command);
    t["code"] = code;
    let r = load(&settings(vec![("demo", manifest(vec![t]))]));
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    r.plugins[0].tools[0].clone()
}

fn argv_for(t: &PluginTool, args: Value) -> Result<(String, Vec<String>), ToolError> {
    t.command(&args)
}

const ATTACKS: &[&str] = &[
    "x'; touch pwned; '",
    "'); open('pwned', 'w'); print('",
    "\"); import os; os.system('touch pwned'); (\"",
    "$(touch pwned)",
    "`touch pwned`",
    "a\nimport os\nos.system('touch pwned')",
    "\\'; touch pwned #",
    "é ✓ \u{1F600} \\x27 \\\\",
    "''' + __import__('os').system('touch pwned') + '''",
];

#[test]
fn a_quoted_value_reaches_sh_and_python_as_exactly_its_text() {
    let dir = tempfile::tempdir().unwrap();
    let sh = declared_tool(
        json!(["sh", "-c", "printf '%s|' {{path}} end"]),
        json!({"2": "sh"}),
    );
    let py = declared_tool(
        json!([
            "python3",
            "-c",
            "import sys; sys.stdout.write({{path}} + '|')"
        ]),
        json!({"2": "python"}),
    );
    let python_runs = std::process::Command::new("python3")
        .arg("-c")
        .arg("pass")
        .output()
        .is_ok_and(|o| o.status.success());
    for attack in ATTACKS {
        for (t, runs) in [(&sh, true), (&py, python_runs)] {
            let (program, argv) = argv_for(t, json!({ "path": attack })).unwrap();
            if !runs {
                continue;
            }
            let out = std::process::Command::new(&program)
                .args(&argv)
                .current_dir(dir.path())
                .output()
                .unwrap();
            let said = String::from_utf8_lossy(&out.stdout);
            let want = if program == "sh" {
                format!("{attack}|end|")
            } else {
                format!("{attack}|")
            };
            assert_eq!(
                said,
                want,
                "{program} {argv:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(
                !dir.path().join("pwned").exists(),
                "{program} {attack:?} ran code"
            );
        }
    }
    // A quoted value may not start with `-` (the code could pass it on as an option).
    let err = argv_for(&sh, json!({"path": "--output=x"}))
        .err()
        .map(|e| e.kind);
    assert_eq!(err, Some(ErrorKind::InvalidArguments));
}

#[test]
fn checking_a_template_never_panics_on_odd_text() {
    for text in [
        "",
        "-",
        "--",
        "=",
        "-=",
        "--=",
        "+",
        "é",
        "-é{{path}}",
        "{{path}}é",
        "'",
        "\"",
        "'''",
        "\"\"\"",
        "#",
        "\\",
        "\n",
        "-c",
        "a\u{0}b",
        ">&",
        "2>",
        "<",
        "'{{path}}",
        "\"{{path}}",
    ] {
        for program in [
            "sh", "python3", "env", "find", "git", "pwsh", "xargs", "perl", "awk",
        ] {
            for code in [None, Some(json!({"1": "sh"})), Some(json!({"1": "python"}))] {
                let _ = load_problems(json!([program, "-c", text, text, "{{path}}"]), code.clone());
                let _ = load_problems(json!([program, text, "{{path}}", text]), code);
            }
        }
    }
}
