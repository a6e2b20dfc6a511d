//! `plugin.json` (README, "Plugins"): parsed, then checked as a whole, every problem reported with
//! the manifest's file and the JSON path of the value at fault.

use super::template::{parse_element, Language, Template};
use serde::Deserialize;
use serde_json::Value;
use std::fmt;
use std::path::{Component, Path, PathBuf};
use tackle_protocol::{ApprovalMode, Risk};

/// The lowest risk a plugin tool runs at, and the laxest approval (a manifest may raise both).
pub const RISK_FLOOR: Risk = Risk::Medium;
/// The laxest approval a plugin tool may ask for (see [`RISK_FLOOR`]).
pub const APPROVAL_FLOOR: ApprovalMode = ApprovalMode::UnlessAutoApproved;

/// A tool's time limit when its manifest gives none, in seconds.
pub const DEFAULT_TIMEOUT_SECS: u64 = 30;
/// The longest time limit a manifest may set, in seconds.
pub const MAX_TIMEOUT_SECS: u64 = 600;

/// One problem in one manifest.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {path}: {message}", .file.display())]
pub struct ManifestError {
    /// The manifest file the problem is in.
    pub file: PathBuf,
    /// Where in the document: `$`, `$.tools[0].command[2]`.
    pub path: String,
    /// What is wrong, for people.
    pub message: String,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Execution {
    #[default]
    Command,
    Binary,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawManifest {
    name: String,
    version: String,
    description: String,
    #[serde(default)]
    #[allow(dead_code)]
    author: Option<String>,
    #[serde(default)]
    execution: Execution,
    #[serde(default)]
    binary: Option<RawBinary>,
    tools: Vec<RawTool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBinary {
    path: String,
    #[serde(default)]
    protocol: Option<String>,
    #[serde(default)]
    timeout_secs: Option<u64>,
    #[serde(default)]
    sha256: Option<String>,
}

/// How a tool runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// One program with an argv template; `program` is a path inside the plugin directory, an
    /// absolute path, or a name on `PATH`.
    Argv {
        /// The program to run.
        program: String,
        /// The arguments after the program, filled from each call.
        template: Template,
    },
    /// The plugin's executable, spoken to in JSON-RPC over stdio; its digest (lowercase hex)
    /// checked before each start when the manifest gives one.
    Binary {
        /// The executable, inside the plugin directory.
        path: PathBuf,
        /// The expected SHA-256 of the executable; `None`: not checked.
        sha256: Option<String>,
    },
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawCommand {
    Argv(Vec<String>),
    Legacy(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTool {
    name: String,
    description: String,
    parameters: Value,
    #[serde(default)]
    command: Option<RawCommand>,
    #[serde(default)]
    working_dir: Option<String>,
    #[serde(default)]
    timeout_secs: Option<u64>,
    #[serde(default)]
    env: Vec<String>,
    /// Command elements that are code in a language whose string literals each value is
    /// quoted as: `{"2": "sh"}` (see `code.rs`).
    #[serde(default)]
    code: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    risk: Option<Risk>,
    #[serde(default)]
    approval: Option<ApprovalMode>,
}

/// A manifest that passed every check.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    /// The plugin's name; it names its tools' namespace and `plugins.allow`/`block` entries.
    pub name: String,
    /// The plugin's version, as the manifest wrote it.
    pub version: String,
    /// What the plugin is for, for people.
    pub description: String,
    /// The plugin directory; relative paths of the manifest are resolved against it.
    pub dir: PathBuf,
    /// The manifest file itself, for messages.
    pub file: PathBuf,
    /// The plugin's tools, in manifest order.
    pub tools: Vec<ToolDef>,
}

/// One checked plugin tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDef {
    /// The tool's name as the model calls it.
    pub name: String,
    /// What the tool does, shown to the model.
    pub description: String,
    /// JSON Schema of the tool's arguments.
    pub parameters: Value,
    /// How the tool runs: an argv template or the plugin's binary.
    pub mode: Mode,
    /// Relative to the workspace; `None` = the workspace.
    pub working_dir: Option<PathBuf>,
    /// Time limit of one call, in seconds (at most [`MAX_TIMEOUT_SECS`]).
    pub timeout_secs: u64,
    /// Names of variables passed through from Tackle's own environment.
    pub env: Vec<String>,
    /// The tool's risk, never below [`RISK_FLOOR`].
    pub risk: Risk,
    /// The tool's approval mode, never laxer than [`APPROVAL_FLOOR`].
    pub approval: ApprovalMode,
}

/// Collects problems with their JSON paths.
struct Problems<'a> {
    file: &'a Path,
    list: Vec<ManifestError>,
}

impl Problems<'_> {
    fn add(&mut self, path: impl fmt::Display, message: impl Into<String>) {
        self.list.push(ManifestError {
            file: self.file.to_path_buf(),
            path: path.to_string(),
            message: message.into(),
        });
    }
}

/// Parse and check one manifest. `is_executable` answers for plugin-relative programs.
pub fn load(
    file: &Path,
    dir: &Path,
    bytes: &[u8],
    is_executable: &dyn Fn(&Path) -> bool,
) -> Result<Manifest, Vec<ManifestError>> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let raw: RawManifest = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let path = if path == "." {
            "$".to_string()
        } else {
            format!("$.{path}")
        };
        vec![ManifestError {
            file: file.to_path_buf(),
            path,
            message: e.into_inner().to_string(),
        }]
    })?;
    let mut problems = Problems {
        file,
        list: Vec::new(),
    };
    if !is_plugin_name(&raw.name) {
        problems.add(
            "$.name",
            format!(
                "{:?} is not a plugin name: 1 to 64 ASCII letters, digits and `-`, starting with a letter or digit",
                raw.name
            ),
        );
    }
    if raw.version.trim().is_empty() {
        problems.add("$.version", "must not be empty");
    }
    if raw.description.trim().is_empty() {
        problems.add("$.description", "must not be empty");
    }
    let binary = match (raw.execution, raw.binary) {
        (Execution::Binary, Some(b)) => check_binary(&b, dir, is_executable, &mut problems),
        (Execution::Binary, None) => {
            problems.add(
                "$.binary",
                "required with `execution: binary`: {\"path\": \"./server\", \"sha256\": \"…\"}",
            );
            None
        }
        (Execution::Command, Some(_)) => {
            problems.add("$.binary", "only used with `execution: binary`");
            None
        }
        (Execution::Command, None) => None,
    };
    let binary_mode = raw.execution == Execution::Binary;
    if raw.tools.is_empty() {
        problems.add("$.tools", "a plugin declares at least one tool");
    }
    let mut tools = Vec::new();
    for (i, tool) in raw.tools.into_iter().enumerate() {
        let at = format!("$.tools[{i}]");
        if tools.iter().any(|t: &ToolDef| t.name == tool.name) {
            problems.add(
                format!("{at}.name"),
                format!("tool `{}` is declared twice", tool.name),
            );
        }
        let ctx = ToolCtx {
            dir,
            is_executable,
            binary: binary_mode.then_some(binary.as_ref()),
        };
        if let Some(def) = check_tool(&at, tool, &ctx, &mut problems) {
            tools.push(def);
        }
    }
    if !problems.list.is_empty() {
        return Err(problems.list);
    }
    Ok(Manifest {
        name: raw.name,
        version: raw.version,
        description: raw.description,
        dir: dir.to_path_buf(),
        file: file.to_path_buf(),
        tools,
    })
}

fn is_plugin_name(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= 64
        && chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '-')
}

fn is_tool_name(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= 64
        && chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A checked `binary` section.
struct Binary {
    path: PathBuf,
    sha256: Option<String>,
    timeout_secs: Option<u64>,
}

/// What checking a tool needs from its manifest.
struct ToolCtx<'a> {
    dir: &'a Path,
    is_executable: &'a dyn Fn(&Path) -> bool,
    /// `Some` under `execution: binary` (holding the binary when its section is sound).
    binary: Option<Option<&'a Binary>>,
}

fn check_binary(
    b: &RawBinary,
    dir: &Path,
    is_executable: &dyn Fn(&Path) -> bool,
    problems: &mut Problems<'_>,
) -> Option<Binary> {
    let before = problems.list.len();
    let rel = Path::new(&b.path);
    let inside = !b.path.is_empty()
        && !rel.is_absolute()
        && rel
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    let path = inside_dir(dir, rel);
    if !inside {
        problems.add(
            "$.binary.path",
            format!(
                "{:?} must be a relative path inside the plugin directory",
                b.path
            ),
        );
    } else if !is_executable(&path) {
        problems.add(
            "$.binary.path",
            format!(
                "{} is not an executable file (no link may lead to it)",
                path.display()
            ),
        );
    }
    if b.protocol.as_deref().is_some_and(|p| p != "jsonrpc") {
        problems.add("$.binary.protocol", "the only protocol is `jsonrpc`");
    }
    let sha256 = b.sha256.as_ref().map(|s| s.to_ascii_lowercase());
    if sha256
        .as_ref()
        .is_some_and(|s| s.len() != 64 || !s.bytes().all(|c| c.is_ascii_hexdigit()))
    {
        problems.add(
            "$.binary.sha256",
            "must be 64 hex digits (the SHA-256 of the executable)",
        );
    }
    if b.timeout_secs
        .is_some_and(|t| !(1..=MAX_TIMEOUT_SECS).contains(&t))
    {
        problems.add(
            "$.binary.timeout_secs",
            format!("must be between 1 and {MAX_TIMEOUT_SECS}"),
        );
    }
    (problems.list.len() == before).then_some(Binary {
        path,
        sha256,
        timeout_secs: b.timeout_secs,
    })
}

fn check_tool(
    at: &str,
    tool: RawTool,
    ctx: &ToolCtx<'_>,
    problems: &mut Problems<'_>,
) -> Option<ToolDef> {
    let (dir, is_executable) = (ctx.dir, ctx.is_executable);
    let before = problems.list.len();
    if !is_tool_name(&tool.name) {
        problems.add(
            format!("{at}.name"),
            format!(
                "{:?} is not a tool name: 1 to 64 ASCII letters, digits and `_`, starting with a letter",
                tool.name
            ),
        );
    }
    if tool.description.trim().is_empty() {
        problems.add(format!("{at}.description"), "must not be empty");
    }
    let declared = check_parameters(&format!("{at}.parameters"), &tool.parameters, problems);
    let argv = match (&ctx.binary, tool.command) {
        (Some(_), Some(_)) => {
            problems.add(
                format!("{at}.command"),
                "not used with `execution: binary` (the binary is told the tool's name)",
            );
            Vec::new()
        }
        (Some(_), None) => Vec::new(),
        (None, None) => {
            problems.add(
                format!("{at}.command"),
                "required: an argv template such as [\"git\", \"log\", \"-n\", \"{{count}}\"]",
            );
            Vec::new()
        }
        (None, Some(RawCommand::Argv(argv))) => argv,
        (None, Some(RawCommand::Legacy(line))) => {
            legacy_words(&format!("{at}.command"), &line, problems)
        }
    };
    let program = if ctx.binary.is_some() {
        None
    } else {
        check_program(
            &format!("{at}.command[0]"),
            argv.first(),
            dir,
            is_executable,
            problems,
        )
    };
    let mut parsed = Vec::new();
    let mut unparsed = false;
    for (k, element) in argv.iter().enumerate().skip(1) {
        match parse_element(element) {
            Ok(segments) => parsed.push(segments),
            Err(e) => {
                unparsed = true;
                problems.add(format!("{at}.command[{k}]"), e.to_string());
            }
        }
    }
    let mut template = Template::new(parsed);
    for (key, language) in &tool.code {
        let index = key
            .parse::<usize>()
            .ok()
            .filter(|k| *k >= 1 && *k < argv.len());
        let Some(index) = index else {
            problems.add(
                format!("{at}.code.{key}"),
                format!(
                    "{key:?} is not the index of an argument of `command` (1 to {})",
                    argv.len().saturating_sub(1)
                ),
            );
            continue;
        };
        let Some(language) = Language::parse(language) else {
            problems.add(
                format!("{at}.code.{key}"),
                format!("{language:?} is not a language values can be quoted for: only \"sh\" and \"python\""),
            );
            continue;
        };
        if let Some(element) = template.elements.get_mut(index - 1) {
            element.language = Some(language);
        }
    }
    for (k, element) in template.elements.iter().enumerate() {
        for p in element.segments.iter().filter_map(|s| match s {
            super::template::Segment::Param(p) => Some(p),
            super::template::Segment::Literal(_) => None,
        }) {
            if declared.as_ref().is_some_and(|d| !d.contains(p)) {
                problems.add(
                    format!("{at}.command[{}]", k + 1),
                    format!("`{{{{{p}}}}}` names no parameter declared in `parameters.properties`"),
                );
            }
        }
    }
    // Where each value lands: never the program, an option, or code (issue #38).
    if let (None, Some(first), false) = (&ctx.binary, argv.first(), unparsed) {
        if !first.contains("{{") {
            for (k, why) in super::code::check(first, &template.elements) {
                // One problem per element: an undeclared placeholder is reported already.
                let path = format!("{at}.command[{k}]");
                if !problems.list.iter().any(|p| p.path == path) {
                    problems.add(path, why);
                }
            }
        }
    }
    let working_dir = tool.working_dir.as_deref().and_then(|w| {
        let p = Path::new(w);
        let inside = !w.is_empty()
            && p.components()
                .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
        if !inside {
            problems.add(
                format!("{at}.working_dir"),
                format!(
                    "{w:?} must be a relative path inside the workspace (no `..`, not absolute)"
                ),
            );
        }
        inside.then(|| p.to_path_buf())
    });
    let binary_timeout = ctx.binary.flatten().and_then(|b| b.timeout_secs);
    let timeout_secs = tool
        .timeout_secs
        .or(binary_timeout)
        .unwrap_or(DEFAULT_TIMEOUT_SECS);
    if !(1..=MAX_TIMEOUT_SECS).contains(&timeout_secs) {
        problems.add(
            format!("{at}.timeout_secs"),
            format!("{timeout_secs} is not between 1 and {MAX_TIMEOUT_SECS}"),
        );
    }
    for (k, name) in tool.env.iter().enumerate() {
        if let Some(why) = env_problem(name) {
            problems.add(format!("{at}.env[{k}]"), why);
        }
    }
    let risk = tool.risk.unwrap_or(RISK_FLOOR);
    if risk < RISK_FLOOR {
        problems.add(
            format!("{at}.risk"),
            format!("`{risk}` is below the floor for plugin tools; a manifest may raise risk to `high` but never lower it below `{RISK_FLOOR}`"),
        );
    }
    let approval = tool.approval.unwrap_or(APPROVAL_FLOOR);
    if approval < APPROVAL_FLOOR {
        problems.add(
            format!("{at}.approval"),
            format!("`{approval}` is below the floor for plugin tools; a manifest may raise approval to `always` but never lower it below `{APPROVAL_FLOOR}` (auto-approve a tool in `security.auto_approved_tools` instead)"),
        );
    }
    if problems.list.len() > before {
        return None;
    }
    let mode = match ctx.binary {
        Some(b) => {
            let b = b?;
            Mode::Binary {
                path: b.path.clone(),
                sha256: b.sha256.clone(),
            }
        }
        None => Mode::Argv {
            program: program?,
            template,
        },
    };
    Some(ToolDef {
        name: tool.name,
        description: tool.description,
        parameters: tool.parameters,
        mode,
        working_dir,
        timeout_secs,
        env: tool.env,
        risk,
        approval,
    })
}

/// The declared property names, when the schema is an object schema that compiles.
fn check_parameters(at: &str, schema: &Value, problems: &mut Problems<'_>) -> Option<Vec<String>> {
    let Some(obj) = schema.as_object() else {
        problems.add(at, "must be a JSON Schema object");
        return None;
    };
    if obj.get("type").and_then(Value::as_str) != Some("object") {
        problems.add(
            format!("{at}.type"),
            "must be \"object\": a tool takes an object of named arguments",
        );
        return None;
    }
    if let Err(e) = jsonschema::validator_for(schema) {
        problems.add(at, format!("is not a valid JSON Schema: {e}"));
        return None;
    }
    let props = match obj.get("properties") {
        None => Vec::new(),
        Some(Value::Object(p)) => p.keys().cloned().collect(),
        Some(_) => {
            problems.add(format!("{at}.properties"), "must be an object");
            return None;
        }
    };
    Some(props)
}

/// A legacy string command loads only if it is plain words (README, "Plugins").
fn legacy_words(at: &str, line: &str, problems: &mut Problems<'_>) -> Vec<String> {
    const SHELL: &[char] = &[
        '\'', '"', '\\', '$', '`', ';', '&', '|', '<', '>', '(', ')', '*', '?', '[', ']', '!', '#',
        '~',
    ];
    if let Some(c) = line.chars().find(|c| SHELL.contains(c)) {
        problems.add(
            at,
            format!("a command string may hold only plain words, and `{c}` is shell syntax; write the command as an argv array instead"),
        );
        return Vec::new();
    }
    line.split_whitespace().map(str::to_string).collect()
}

fn check_program(
    at: &str,
    first: Option<&String>,
    dir: &Path,
    is_executable: &dyn Fn(&Path) -> bool,
    problems: &mut Problems<'_>,
) -> Option<String> {
    let Some(first) = first else {
        problems.add(at, "the command is empty");
        return None;
    };
    if first.contains("{{") {
        problems.add(at, "the program must be a literal, not a placeholder");
        return None;
    }
    if first.is_empty() || first.contains('\0') {
        problems.add(at, "the program name is empty or holds a NUL byte");
        return None;
    }
    if !first.contains('/') || Path::new(first).is_absolute() {
        return Some(first.clone());
    }
    let rel = Path::new(first);
    if rel.components().any(|c| matches!(c, Component::ParentDir)) {
        problems.add(at, format!("{first:?} leaves the plugin directory"));
        return None;
    }
    let path = inside_dir(dir, rel);
    if !is_executable(&path) {
        problems.add(
            at,
            format!(
                "{} is not an executable file (no link may lead to it)",
                path.display()
            ),
        );
        return None;
    }
    Some(path.display().to_string())
}

/// `dir/rel` without `.` components (`./run.sh` → `dir/run.sh`); `rel` holds no `..`.
fn inside_dir(dir: &Path, rel: &Path) -> PathBuf {
    let mut path = dir.to_path_buf();
    path.extend(
        rel.components()
            .filter(|c| matches!(c, Component::Normal(_))),
    );
    path
}

fn env_problem(name: &str) -> Option<String> {
    let mut chars = name.chars();
    let well_formed = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !well_formed {
        return Some(format!("{name:?} is not an environment variable name"));
    }
    if name.starts_with("LD_") || name.starts_with("DYLD_") || name == "TMPDIR" {
        return Some(format!(
            "{name} changes how programs load and may not be passed to a plugin"
        ));
    }
    None
}
