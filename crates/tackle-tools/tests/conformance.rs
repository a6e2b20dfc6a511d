//! Conformance suite: the JSON fixtures in `tests/conformance/<tool>.json` (repo root) run
//! against the real `NativeHost` over a fresh temporary workspace per case.
//!
//! A fixture file is `{"tool": NAME, "cases": [CASE…]}`; a case is
//! `{"name", "files"?: {PATH: TEXT | {"base64": B64} | {"repeat": TEXT, "times": N}},
//!   "run"?: [SHELL LINE…], "grants"?: GRANTS, "needs"?: "git", "args": {…}, "expect": {…}}`.
//! `{ws}` anywhere in `args` is replaced by the workspace path. `expect` may hold `is_error`,
//! `error_kind`, `output_contains`, `output_not_contains`, `file_exact`, `file_contains`,
//! `file_not_contains` and `file_absent`. Adding a case is adding a JSON object.

use base64::Engine;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tackle_host::{HostConfig, NativeHostProvider};
use tackle_protocol::{
    CallScope, ExecCommand, ExecRequest, Grants, HostProvider, ReadRequest, Tool, ToolContext,
    ToolError, ToolHost, ToolOutput, WriteRequest,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Fixture {
    tool: String,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    #[serde(default)]
    files: BTreeMap<String, FileSpec>,
    #[serde(default)]
    run: Vec<String>,
    #[serde(default)]
    grants: Grants,
    needs: Option<String>,
    args: Value,
    #[serde(default)]
    expect: Expect,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum FileSpec {
    Text(String),
    Base64 { base64: String },
    Repeat { repeat: String, times: usize },
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Expect {
    is_error: Option<bool>,
    error_kind: Option<String>,
    #[serde(default)]
    output_contains: Vec<String>,
    #[serde(default)]
    output_not_contains: Vec<String>,
    #[serde(default)]
    file_exact: BTreeMap<String, String>,
    #[serde(default)]
    file_contains: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    file_not_contains: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    file_absent: Vec<String>,
}

impl FileSpec {
    fn bytes(&self) -> Result<Vec<u8>, String> {
        match self {
            FileSpec::Text(t) => Ok(t.clone().into_bytes()),
            FileSpec::Base64 { base64 } => base64::engine::general_purpose::STANDARD
                .decode(base64)
                .map_err(|e| format!("bad base64: {e}")),
            FileSpec::Repeat { repeat, times } => Ok(repeat.repeat(*times).into_bytes()),
        }
    }
}

fn all_tools() -> BTreeMap<String, Arc<dyn Tool>> {
    let settings = tackle_tools::dev::DevSettings::default();
    [
        tackle_tools::fs::extension(true),
        tackle_tools::core::extension(),
        tackle_tools::dev::extension(settings),
    ]
    .iter()
    .flat_map(|e| e.tools())
    .map(|t| (t.spec().name, t))
    .collect()
}

/// A case's workspace, state directory and scoped host. The temp dirs go when it drops.
struct Bench {
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    ws: std::path::PathBuf,
    scope: CallScope,
    host: Arc<dyn ToolHost>,
}

fn bench(grants: Grants) -> Result<Bench, String> {
    let ws_dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let state = tempfile::tempdir().map_err(|e| e.to_string())?;
    let provider = NativeHostProvider::new(HostConfig::new(state.path()));
    let scope = CallScope {
        tool: "conformance".into(),
        session_id: "conformance".into(),
        agent: "default".into(),
        workspace: ws_dir.path().to_path_buf(),
        grants,
        cancel: Default::default(),
        approved: false,
    };
    let host = provider.scoped(&scope);
    let ws = host.workspace().to_path_buf();
    Ok(Bench {
        _dirs: (ws_dir, state),
        ws,
        scope,
        host,
    })
}

async fn sh(host: &dyn ToolHost, line: &str) -> Result<(), String> {
    let env = [
        ("GIT_AUTHOR_NAME", "T"),
        ("GIT_AUTHOR_EMAIL", "t@example.com"),
        ("GIT_COMMITTER_NAME", "T"),
        ("GIT_COMMITTER_EMAIL", "t@example.com"),
    ];
    let req = ExecRequest {
        command: ExecCommand::Shell(line.to_string()),
        cwd: Some(host.workspace().to_path_buf()),
        timeout: Duration::from_secs(30),
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        stdin: None,
        max_output_bytes: 64 * 1024,
        output_lines: None,
        program_sha256: None,
        data_values: Vec::new(),
    };
    let out = host
        .exec(req)
        .await
        .map_err(|e| format!("setup `{line}`: {e}"))?;
    match out.exit_code {
        Some(0) => Ok(()),
        code => Err(format!("setup `{line}` exited {code:?}: {}", out.stderr)),
    }
}

async fn git_available(host: &dyn ToolHost) -> bool {
    sh(host, "git --version").await.is_ok()
}

async fn setup(b: &Bench, case: &Case) -> Result<(), String> {
    for (path, spec) in &case.files {
        let req = WriteRequest {
            expected: None,
            path: b.ws.join(path),
            data: spec.bytes()?,
            create_dirs: true,
        };
        b.host
            .write(req)
            .await
            .map_err(|e| format!("setup write {path}: {e}"))?;
    }
    for line in &case.run {
        sh(b.host.as_ref(), line).await?;
    }
    Ok(())
}

fn with_ws(args: &Value, ws: &Path) -> Value {
    let text = args.to_string().replace("{ws}", &ws.display().to_string());
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

async fn file_text(host: &dyn ToolHost, ws: &Path, path: &str) -> Option<String> {
    let got = host
        .read(ReadRequest {
            path: ws.join(path),
            offset: 0,
            max_bytes: Some(64 << 20),
        })
        .await
        .ok()?;
    Some(String::from_utf8_lossy(&got.bytes).into_owned())
}

/// Every way `result` differs from `expect`, as sentences.
async fn check(expect: &Expect, result: &Result<ToolOutput, ToolError>, b: &Bench) -> Vec<String> {
    let mut bad = Vec::new();
    let (text, is_error) = match result {
        Ok(o) => (o.content.clone(), o.is_error),
        Err(e) => (e.message.clone(), true),
    };
    if let Some(want) = expect.is_error.filter(|w| *w != is_error) {
        bad.push(format!("is_error: want {want}, got {is_error}"));
    }
    let kind = result.as_ref().err().map(|e| e.kind.as_str().to_string());
    if expect.error_kind.is_some() && expect.error_kind != kind {
        bad.push(format!(
            "error_kind: want {:?}, got {kind:?}",
            expect.error_kind
        ));
    }
    for s in &expect.output_contains {
        if !text.contains(s.as_str()) {
            bad.push(format!("output lacks {s:?}"));
        }
    }
    for s in &expect.output_not_contains {
        if text.contains(s.as_str()) {
            bad.push(format!("output has {s:?}"));
        }
    }
    check_files(expect, b, &mut bad).await;
    if !bad.is_empty() {
        let shown = tackle_protocol::text::truncate_at_char_boundary(&text, 1500);
        bad.push(format!("--- output was:\n{shown}"));
    }
    bad
}

async fn check_files(expect: &Expect, b: &Bench, bad: &mut Vec<String>) {
    let host = b.host.as_ref();
    for (path, want) in &expect.file_exact {
        let got = file_text(host, &b.ws, path).await;
        if got.as_deref() != Some(want.as_str()) {
            bad.push(format!("file {path}: want exactly {want:?}, got {got:?}"));
        }
    }
    for (path, wants) in &expect.file_contains {
        let got = file_text(host, &b.ws, path).await.unwrap_or_default();
        bad.extend(
            wants
                .iter()
                .filter(|w| !got.contains(w.as_str()))
                .map(|w| format!("file {path} lacks {w:?}")),
        );
    }
    for (path, wants) in &expect.file_not_contains {
        let got = file_text(host, &b.ws, path).await.unwrap_or_default();
        bad.extend(
            wants
                .iter()
                .filter(|w| got.contains(w.as_str()))
                .map(|w| format!("file {path} has {w:?}")),
        );
    }
    for path in &expect.file_absent {
        if file_text(host, &b.ws, path).await.is_some() {
            bad.push(format!("file {path} exists but should not"));
        }
    }
}

/// Run one case; `Ok(false)` when it was skipped for a missing program.
async fn run_case(tool: &Arc<dyn Tool>, case: &Case) -> Result<bool, String> {
    let b = bench(case.grants.clone())?;
    if case.needs.as_deref() == Some("git") && !git_available(b.host.as_ref()).await {
        println!("skip {}: git is not installed", case.name);
        return Ok(false);
    }
    setup(&b, case).await?;
    let cx = ToolContext::new(&b.scope, "test", b.host.clone());
    let args = with_ws(&case.args, &b.ws);
    let result = tokio::time::timeout(Duration::from_secs(60), tool.call(args, &cx))
        .await
        .map_err(|_| "the call did not finish within 60s".to_string())?;
    let bad = check(&case.expect, &result, &b).await;
    if bad.is_empty() {
        Ok(true)
    } else {
        Err(bad.join("\n  "))
    }
}

async fn run_fixture(json: &str) {
    let fixture: Fixture = match serde_json::from_str(json) {
        Ok(f) => f,
        Err(e) => panic!("fixture does not parse: {e}"),
    };
    let tools = all_tools();
    let Some(tool) = tools.get(&fixture.tool) else {
        panic!("fixture names unknown tool {}", fixture.tool)
    };
    let (mut passed, mut skipped, mut failures) = (0, 0, Vec::new());
    for case in &fixture.cases {
        match run_case(tool, case).await {
            Ok(true) => passed += 1,
            Ok(false) => skipped += 1,
            Err(why) => failures.push(format!("{} / {}:\n  {why}", fixture.tool, case.name)),
        }
    }
    println!(
        "{}: {passed} passed, {} failed, {skipped} skipped",
        fixture.tool,
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

macro_rules! fixture_tests {
    ($($name:ident => $file:literal),* $(,)?) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            run_fixture(include_str!(concat!("../../../tests/conformance/", $file))).await;
        }
    )*};
}

fixture_tests! {
    read_file_conforms => "read_file.json",
    write_file_conforms => "write_file.json",
    edit_file_conforms => "edit_file.json",
    list_files_conforms => "list_files.json",
    grep_conforms => "grep.json",
    find_conforms => "find.json",
    shell_conforms => "shell.json",
    git_conforms => "git.json",
}
