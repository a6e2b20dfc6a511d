//! The `fs` extension: `read_file`, `write_file`, `edit_file`, `list_files`, and with
//! `coding_tools` also `grep` and `find`.
//!
//! Every tool here reaches files only through `cx.host()`, which checks the fs grants; paths
//! the model gives are taken relative to the workspace unless absolute.

mod edit_file;
mod find;
mod grep;
mod list_files;
mod patch;
mod read_file;
mod write_file;

pub use edit_file::EditFile;
pub use find::Find;
pub use grep::Grep;
pub use list_files::ListFiles;
pub use read_file::ReadFile;
pub use write_file::WriteFile;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tackle_protocol::{Extension, Tool, ToolContext, ToolError};

/// The `fs` extension. `grep` and `find` are registered only when `coding_tools` is on
/// (config `tools.coding_tools`, docs/architecture.md, "Tools").
pub fn extension(coding_tools: bool) -> Arc<dyn Extension> {
    Arc::new(FsExtension { coding_tools })
}

struct FsExtension {
    coding_tools: bool,
}

impl Extension for FsExtension {
    fn name(&self) -> &str {
        "fs"
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let mut tools: Vec<Arc<dyn Tool>> = vec![
            Arc::new(ReadFile),
            Arc::new(WriteFile),
            Arc::new(EditFile),
            Arc::new(ListFiles),
        ];
        if self.coding_tools {
            tools.push(Arc::new(Grep));
            tools.push(Arc::new(Find));
        }
        tools
    }

    fn unavailable(&self, tool: &str) -> Option<String> {
        (!self.coding_tools && matches!(tool, "grep" | "find")).then(|| {
            format!("`{tool}` is a coding tool; enable it with `tools.coding_tools: true` or `--template coder`")
        })
    }
}

/// A name that is safe as one path component and one token of a line: 1-64 ASCII letters,
/// digits, `-`, `_` or `.`, starting with a letter or digit (so never `.`, `..` or an option).
pub(crate) fn is_plain_name(name: &str) -> bool {
    name.len() <= 64
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

/// The path a tool asks the host for: relative paths are joined to the workspace root;
/// absolute and `~` paths are passed as given (the host expands `~` and checks the grant).
pub(crate) fn resolve(cx: &ToolContext, path: &str) -> PathBuf {
    if path.starts_with('~') {
        return PathBuf::from(path);
    }
    cx.host().workspace().join(path)
}

/// How a path is shown to the model: relative to the workspace when inside it.
pub(crate) fn shown(cx: &ToolContext, path: &Path) -> String {
    let ws = cx.host().workspace();
    match path.strip_prefix(ws) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
        Ok(rel) => rel.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

/// A required, non-empty string argument's common check.
pub(crate) fn non_empty(field: &str, value: &str) -> Result<(), ToolError> {
    if value.trim().is_empty() {
        return Err(ToolError::invalid_arguments(format!(
            "`{field}` must not be empty"
        )));
    }
    Ok(())
}

/// Best-effort extraction of the `path` argument for `planned_capabilities`, which runs
/// before the call and must not fail.
pub(crate) fn planned_path(args: &Value, cx: &ToolContext, key: &str, default: &str) -> PathBuf {
    let raw = args.get(key).and_then(Value::as_str).unwrap_or(default);
    resolve(cx, raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grep_and_find_appear_only_with_coding_tools() {
        let names = |on: bool| -> Vec<String> {
            extension(on)
                .tools()
                .iter()
                .map(|t| t.spec().name)
                .collect()
        };
        assert_eq!(
            names(false),
            ["read_file", "write_file", "edit_file", "list_files"]
        );
        assert_eq!(
            names(true),
            [
                "read_file",
                "write_file",
                "edit_file",
                "list_files",
                "grep",
                "find"
            ]
        );
        assert!(extension(false)
            .unavailable("grep")
            .is_some_and(|m| m.contains("coding_tools")));
        assert!(extension(true).unavailable("grep").is_none());
    }

    /// Each tool's parameter names and required ones as the hand-written schemas had them:
    /// the contract with models and MCP clients. Then a valid call.
    const CONTRACT: &[(&str, &[&str], &[&str], &str)] = &[
        (
            "read_file",
            &["path", "offset", "limit"],
            &["path"],
            r#"{"path": "a.txt", "offset": 1, "limit": 5}"#,
        ),
        (
            "write_file",
            &["path", "content"],
            &["path", "content"],
            r#"{"path": "a.txt", "content": "x"}"#,
        ),
        (
            "edit_file",
            &["path", "old_text", "new_text", "edits", "diff"],
            &["path"],
            r#"{"path": "a.txt", "edits": [{"old_text": "a", "new_text": "b"}]}"#,
        ),
        (
            "list_files",
            &["path", "depth", "include_hidden"],
            &[],
            r#"{"path": "src", "depth": 1, "include_hidden": true}"#,
        ),
        (
            "find",
            &["pattern", "path", "max_results"],
            &["pattern"],
            r#"{"pattern": "*.rs", "max_results": 3}"#,
        ),
        (
            "grep",
            &["pattern", "path", "glob", "case_insensitive", "max_results"],
            &["pattern"],
            r#"{"pattern": "x", "glob": "*.rs", "case_insensitive": true}"#,
        ),
    ];

    #[tokio::test]
    async fn fs_schemas_keep_their_names_and_refuse_unknown_or_missing_arguments() {
        let tools = extension(true).tools();
        assert_eq!(tools.len(), CONTRACT.len());
        for (name, properties, required, valid) in CONTRACT {
            let tool = tools.iter().find(|t| t.spec().name == *name);
            let Some(tool) = tool else {
                panic!("no tool {name}")
            };
            crate::args::contract::assert_names(&tool.spec().parameters, properties, required);
            let valid: Value = serde_json::from_str(valid).unwrap_or_default();
            crate::args::contract::assert_refusals(tool.as_ref(), valid, required).await;
        }
    }

    #[test]
    fn fs_schemas_keep_bounds_and_refuse_an_empty_edit_list() {
        let schema = |name: &str| {
            extension(true)
                .tools()
                .iter()
                .map(|t| t.spec())
                .find(|s| s.name == name)
                .map(|s| s.parameters)
                .unwrap_or_default()
        };
        let accepts = crate::args::contract::accepts;
        let edit = schema("edit_file");
        assert!(!accepts(
            &edit,
            &serde_json::json!({"path": "a", "edits": []})
        ));
        assert!(!accepts(
            &edit,
            &serde_json::json!({"path": "a", "edits": [{"old_text": "a"}]})
        ));
        let read = schema("read_file");
        assert!(!accepts(
            &read,
            &serde_json::json!({"path": "a", "offset": 0})
        ));
        let list = schema("list_files");
        assert!(!accepts(&list, &serde_json::json!({"depth": 21})));
        let grep = schema("grep");
        assert!(!accepts(
            &grep,
            &serde_json::json!({"pattern": "x", "max_results": 1001})
        ));
        let find = schema("find");
        assert!(!accepts(
            &find,
            &serde_json::json!({"pattern": "x", "max_results": 2001})
        ));
    }

    #[test]
    fn every_fs_schema_forbids_unknown_arguments() {
        for tool in extension(true).tools() {
            let spec = tool.spec();
            assert_eq!(spec.owner, "fs");
            assert_eq!(
                spec.parameters["additionalProperties"],
                Value::Bool(false),
                "{}",
                spec.name
            );
        }
    }
}
