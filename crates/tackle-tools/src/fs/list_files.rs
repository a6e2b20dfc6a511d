//! `list_files {path?, depth?, include_hidden?}`: a sorted, capped listing via `host.list`.

use super::{planned_path, resolve, shown};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::path::Path;
use tackle_protocol::{
    ApprovalMode, Capability, DirEntry, ListRequest, Risk, Tool, ToolContext, ToolError,
    ToolOutput, ToolSpec,
};

const DEFAULT_DEPTH: usize = 2;
const MAX_DEPTH: usize = 20;
pub(crate) const MAX_ENTRIES: usize = 1_000;

/// The `list_files` tool: a sorted, capped directory listing via `host.list`.
pub struct ListFiles;

// Arguments of `list_files` (a plain comment, so not sent as the schema's description).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Directory to list, relative to the workspace or absolute. Default: the workspace.
    path: Option<String>,
    /// How many levels deep to go (1 = direct children only). Default 2.
    #[schemars(range(min = 1, max = MAX_DEPTH))]
    depth: Option<usize>,
    /// Include dot-files and dot-directories. Default false.
    #[serde(default)]
    include_hidden: bool,
}

#[async_trait]
impl Tool for ListFiles {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "list_files",
            "List a directory tree, sorted, with file sizes; directories end in `/`. Files ignored by \
             .gitignore are left out, and so are hidden ones unless include_hidden is true. At most 1000 entries.",
            "fs",
        )
        .risk(Risk::Low)
        .approval(ApprovalMode::Never)
        .parameters(crate::args::schema::<Args>())
    }

    fn planned_capabilities(&self, args: &Value, cx: &ToolContext) -> Vec<Capability> {
        vec![Capability::FileRead {
            path: planned_path(args, cx, "path", "."),
        }]
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = crate::args::parse(args)?;
        let root = resolve(cx, args.path.as_deref().unwrap_or("."));
        let req = ListRequest {
            path: root.clone(),
            max_depth: Some(args.depth.unwrap_or(DEFAULT_DEPTH).clamp(1, MAX_DEPTH)),
            include_hidden: args.include_hidden,
            respect_gitignore: true,
            glob: None,
            max_entries: MAX_ENTRIES,
        };
        let mut entries = cx.host().list(req).await?;
        entries.sort_by(|a, b| a.path.cmp(&b.path));
        let prefix = shown(cx, &root);
        if entries.is_empty() {
            return Ok(ToolOutput::text(format!(
                "{prefix} is empty (or everything in it is ignored or hidden)"
            )));
        }
        let mut out = String::new();
        for e in &entries {
            out.push_str(&render(&prefix, e));
            out.push('\n');
        }
        if entries.len() >= MAX_ENTRIES {
            out.push_str(&format!(
                "[stopped at {MAX_ENTRIES} entries; list a subdirectory or lower depth]\n"
            ));
        }
        Ok(ToolOutput::text(out))
    }
}

/// An entry's path as the model should pass it back: relative to the workspace.
pub(crate) fn joined(prefix: &str, entry: &Path) -> String {
    if entry.is_absolute() || prefix == "." {
        entry.display().to_string()
    } else {
        Path::new(prefix).join(entry).display().to_string()
    }
}

fn render(prefix: &str, e: &DirEntry) -> String {
    let p = joined(prefix, &e.path);
    if e.is_dir {
        format!("{p}/")
    } else {
        format!("{p} ({} bytes)", e.size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock_host::MockHost;
    use serde_json::json;
    use std::sync::Arc;

    #[tokio::test]
    async fn listing_is_sorted_workspace_relative_and_marks_directories() {
        let host = Arc::new(
            MockHost::new()
                .with_file("src/b.rs", "bb")
                .with_file("src/a.rs", "a")
                .with_file(".env", "x"),
        );
        let out = ListFiles
            .call(json!({"path": "src"}), &host.context())
            .await;
        assert_eq!(
            out.map(|o| o.content),
            Ok("src/a.rs (1 bytes)\nsrc/b.rs (2 bytes)\n".to_string())
        );
        let all = ListFiles
            .call(json!({"include_hidden": true, "depth": 1}), &host.context())
            .await;
        assert_eq!(
            all.map(|o| o.content),
            Ok(".env (1 bytes)\nsrc/\n".to_string())
        );
    }

    #[tokio::test]
    async fn a_denied_directory_is_a_denied_error() {
        let host = Arc::new(MockHost::new());
        host.deny_matching("/etc");
        let out = ListFiles
            .call(json!({"path": "/etc"}), &host.context())
            .await;
        assert_eq!(
            out.err().map(|e| e.kind),
            Some(tackle_protocol::ErrorKind::Denied)
        );
    }
}
