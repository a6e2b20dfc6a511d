//! `find {pattern, path?}`: paths matching a glob, via `host.list`. Only with `coding_tools`.

use super::list_files::joined;
use super::{non_empty, planned_path, resolve, shown};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tackle_protocol::{
    ApprovalMode, Capability, ListRequest, Risk, Tool, ToolContext, ToolError, ToolOutput, ToolSpec,
};

const DEFAULT_RESULTS: usize = 200;
const MAX_RESULTS: usize = 2_000;

/// The `find` tool: paths matching a glob, via `host.list`.
pub struct Find;

// Arguments of `find` (a plain comment, so not sent as the schema's description).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Glob, e.g. `*.rs`, `**/test_*.py`, `docs/*.md`.
    pattern: String,
    /// Directory to search under. Default: the workspace.
    path: Option<String>,
    /// Most paths to return. Default 200.
    #[schemars(range(min = 1, max = MAX_RESULTS))]
    max_results: Option<usize>,
}

#[async_trait]
impl Tool for Find {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "find",
            "Find files and directories by glob. A glob without `/` matches file names anywhere \
             (`*.rs`, `Cargo.toml`); one with `/` matches paths (`src/**/*.rs`). Hidden and .gitignored \
             paths are skipped. Paths are relative to the workspace; directories end in `/`.",
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
        non_empty("pattern", &args.pattern)?;
        let root = resolve(cx, args.path.as_deref().unwrap_or("."));
        let max = args
            .max_results
            .unwrap_or(DEFAULT_RESULTS)
            .clamp(1, MAX_RESULTS);
        let req = ListRequest {
            path: root.clone(),
            max_depth: None,
            include_hidden: false,
            respect_gitignore: true,
            glob: Some(args.pattern.clone()),
            max_entries: max,
        };
        let mut entries = cx.host().list(req).await?;
        entries.sort_by(|a, b| a.path.cmp(&b.path));
        let prefix = shown(cx, &root);
        if entries.is_empty() {
            return Ok(ToolOutput::text(format!(
                "No paths match `{}` under {prefix}",
                args.pattern
            )));
        }
        let mut out = String::new();
        for e in &entries {
            out.push_str(&joined(&prefix, &e.path));
            out.push_str(if e.is_dir { "/\n" } else { "\n" });
        }
        if entries.len() >= max {
            out.push_str(&format!(
                "[stopped at {max} paths; narrow the pattern or path, or raise max_results]\n"
            ));
        }
        Ok(ToolOutput::text(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock_host::MockHost;
    use serde_json::json;
    use std::sync::Arc;

    #[tokio::test]
    async fn find_passes_the_glob_to_the_host_and_lists_matches() {
        let host = Arc::new(
            MockHost::new()
                .with_file("src/a.rs", "")
                .with_file("src/b.txt", ""),
        );
        let out = Find.call(json!({"pattern": "*.rs"}), &host.context()).await;
        assert_eq!(out.map(|o| o.content), Ok("src/a.rs\n".to_string()));
    }
}
