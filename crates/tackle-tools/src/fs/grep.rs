//! `grep {pattern, path?, glob?, case_insensitive?, max_results?}`: regex search of file
//! contents via `host.search` (ripgrep's crates, in-process). Only with `coding_tools`.

use super::list_files::joined;
use super::{non_empty, planned_path, resolve, shown};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tackle_protocol::text::truncate_at_char_boundary;
use tackle_protocol::{
    ApprovalMode, Capability, Risk, SearchRequest, Tool, ToolContext, ToolError, ToolOutput,
    ToolSpec,
};

const DEFAULT_RESULTS: usize = 100;
const MAX_RESULTS: usize = 1_000;
/// A matching line is shown at most this long.
const LINE_SHOWN: usize = 300;

/// The `grep` tool: regex search of file contents via `host.search`.
pub struct Grep;

// Arguments of `grep` (a plain comment, so not sent as the schema's description).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Regular expression, e.g. `fn\s+main` or `TODO`.
    pattern: String,
    /// Directory or file to search. Default: the workspace.
    path: Option<String>,
    /// Only files matching this glob, e.g. `*.rs` (by file name) or `src/**/*.ts`.
    glob: Option<String>,
    /// Ignore case. Default false.
    #[serde(default)]
    case_insensitive: bool,
    /// Stop after this many matching lines. Default 100.
    #[schemars(range(min = 1, max = MAX_RESULTS))]
    max_results: Option<usize>,
}

#[async_trait]
impl Tool for Grep {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "grep",
            "Search file contents with a regular expression (Rust regex syntax), skipping binary, hidden \
             and .gitignored files. Returns `path:line: text` per match, paths relative to the workspace.",
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
        let req = SearchRequest {
            root: root.clone(),
            pattern: args.pattern.clone(),
            case_insensitive: args.case_insensitive,
            glob: args.glob.clone(),
            include_hidden: false,
            max_results: max,
        };
        let hits = cx.host().search(req).await?;
        let prefix = shown(cx, &root);
        if hits.is_empty() {
            return Ok(ToolOutput::text(format!(
                "No matches for /{}/ in {prefix}",
                args.pattern
            )));
        }
        let mut out = String::new();
        for hit in &hits {
            // Searching a single file yields an empty relative path: show the file itself.
            let path = if hit.path.as_os_str().is_empty() {
                prefix.clone()
            } else {
                joined(&prefix, &hit.path)
            };
            let line = truncate_at_char_boundary(&hit.line, LINE_SHOWN);
            out.push_str(&format!("{path}:{}: {line}\n", hit.line_number));
        }
        if hits.len() >= max {
            out.push_str(&format!(
                "[stopped at {max} matches; narrow with path or glob, or raise max_results]\n"
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
    async fn hits_are_workspace_relative_with_line_numbers() {
        let host = Arc::new(MockHost::new().with_file("src/a.rs", "fn main() {}\n// TODO x\n"));
        let out = Grep
            .call(json!({"pattern": "TODO", "path": "src"}), &host.context())
            .await;
        assert_eq!(
            out.map(|o| o.content),
            Ok("src/a.rs:2: // TODO x\n".to_string())
        );
    }

    #[tokio::test]
    async fn hitting_the_cap_says_so() {
        let host = Arc::new(MockHost::new().with_file("a", "x\nx\nx\n"));
        let out = Grep
            .call(json!({"pattern": "x", "max_results": 2}), &host.context())
            .await;
        let content = out.map(|o| o.content).unwrap_or_default();
        assert!(
            content.ends_with(
                "[stopped at 2 matches; narrow with path or glob, or raise max_results]\n"
            ),
            "{content}"
        );
    }

    #[tokio::test]
    async fn no_match_is_a_plain_answer_not_an_error() {
        let host = Arc::new(MockHost::new().with_file("a", "x"));
        let out = Grep.call(json!({"pattern": "zzz"}), &host.context()).await;
        assert_eq!(out.map(|o| o.is_error), Ok(false));
    }
}
