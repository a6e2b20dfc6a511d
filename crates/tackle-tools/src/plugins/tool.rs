//! A plugin tool: its manifest's argv template filled with the call's arguments (or, for
//! `execution: binary`, one JSON-RPC request on stdin) and run through the host's `Exec`
//! capability (sandboxed, no shell) under the tool's own grants.

use super::jsonrpc;
use super::manifest::{Mode, ToolDef};
use crate::core::finish_exec;
use async_trait::async_trait;
use serde_json::{Map, Value};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tackle_protocol::{
    Capability, ExecCommand, ExecRequest, FsGrant, Grants, OutputLines, Tool, ToolContext,
    ToolError, ToolOutput, ToolPolicy, ToolSpec,
};

/// Per stream; both together stay under the sanitizer's 50 KB cut.
const MAX_STREAM_BYTES: usize = 24_000;

/// What a plugin tool knows about the plugin it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginInfo {
    /// The plugin's name.
    pub name: String,
    /// The plugin's version.
    pub version: String,
    /// The plugin directory.
    pub dir: PathBuf,
}

/// One tool of a plugin, as the registry runs it.
pub struct PluginTool {
    pub(crate) plugin: Arc<PluginInfo>,
    pub(crate) def: ToolDef,
    /// The allowed variables' values, read by the binary at load.
    pub(crate) env: Vec<(String, String)>,
}

impl PluginTool {
    /// The program and its arguments for these call arguments.
    pub(crate) fn command(&self, args: &Value) -> Result<(String, Vec<String>), ToolError> {
        match &self.def.mode {
            Mode::Binary { path, .. } => Ok((path.display().to_string(), Vec::new())),
            Mode::Argv { program, template } => {
                let empty = Map::new();
                let map = match args {
                    Value::Object(m) => m,
                    Value::Null => &empty,
                    _ => {
                        return Err(ToolError::invalid_arguments(
                            "arguments must be a JSON object",
                        ))
                    }
                };
                let argv = template.fill(map).map_err(|e| {
                    ToolError::invalid_arguments(format!("plugin tool `{}`: {e}", self.def.name))
                })?;
                Ok((program.clone(), argv))
            }
        }
    }
}

#[async_trait]
impl Tool for PluginTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(&self.def.name, &self.def.description, super::NAME)
            .parameters(self.def.parameters.clone())
            .risk(self.def.risk)
            .approval(self.def.approval)
    }

    /// The plugin's own directory is readable (its program lives there) besides the workspace.
    fn default_policy(&self) -> ToolPolicy {
        ToolPolicy::new(self.def.approval).with_grants(Grants {
            fs: Some(FsGrant {
                allow_read: vec![".".into(), self.plugin.dir.display().to_string()],
                allow_write: Vec::new(),
            }),
            ..Grants::default()
        })
    }

    fn planned_capabilities(&self, args: &Value, _cx: &ToolContext) -> Vec<Capability> {
        match self.command(args) {
            Ok((program, args)) => vec![Capability::Exec { program, args }],
            Err(_) => Vec::new(),
        }
    }

    fn timeout(&self) -> Option<Duration> {
        Some(Duration::from_secs(self.def.timeout_secs + 15))
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let (program, argv) = self.command(&args)?;
        let ws = cx.host().workspace().to_path_buf();
        let cwd = match &self.def.working_dir {
            Some(rel) => ws.join(rel),
            None => ws,
        };
        let binary = matches!(self.def.mode, Mode::Binary { .. });
        let req = ExecRequest {
            command: ExecCommand::Argv {
                program,
                args: argv,
            },
            cwd: Some(cwd),
            timeout: Duration::from_secs(self.def.timeout_secs),
            env: self.env.clone(),
            stdin: binary.then(|| jsonrpc::request(&self.def.name, &args)),
            max_output_bytes: MAX_STREAM_BYTES,
            output_lines: if binary {
                None
            } else {
                cx.progress().cloned().map(OutputLines)
            },
            // The model's values: the host refuses the call if a command the template hands
            // them to (a shell line, a wrapper) would read them as anything but data.
            // Checked by the host before each start, which then runs the checked bytes.
            program_sha256: match &self.def.mode {
                Mode::Binary { sha256, .. } => sha256.clone(),
                Mode::Argv { .. } => None,
            },
            data_values: match &self.def.mode {
                Mode::Binary { .. } => Vec::new(),
                Mode::Argv { template, .. } => data_values(&args, template),
            },
        };
        // The variables a manifest asks for are credentials more often than not (an API
        // token): a plugin that prints one hands it to nobody.
        let secrets = crate::secrets::Secrets::new(self.env.iter().map(|(_, v)| v.clone()));
        let out = cx
            .host()
            .exec(req)
            .await
            .map_err(|e| secrets.scrub_error(e.into()))?;
        let result = if binary {
            jsonrpc::response(&self.def.name, &out, self.def.timeout_secs)
        } else {
            finish_exec(&out, self.def.timeout_secs)
        };
        result
            .map(|o| secrets.scrub_output(o))
            .map_err(|e| secrets.scrub_error(e))
    }
}

/// Every argument value as the template would place it, but for a value that goes only into
/// code of a declared language: that one is quoted as a string literal of the language (and
/// checked where it stands when the manifest loaded), so its text is not found whole.
fn data_values(args: &Value, template: &super::template::Template) -> Vec<String> {
    let quoted_only = |name: &str| {
        let holds = |e: &&super::template::Element| {
            e.segments
                .iter()
                .any(|s| matches!(s, super::template::Segment::Param(p) if p == name))
        };
        let mut elements = template.elements.iter().filter(holds).peekable();
        elements.peek().is_some() && elements.all(|e| e.language.is_some())
    };
    match args {
        Value::Object(map) => map
            .iter()
            .filter(|(k, v)| !v.is_null() && !quoted_only(k))
            .map(|(_, v)| super::template::render(v))
            .collect(),
        _ => Vec::new(),
    }
}
