//! `delegate {action: run|aggregate}`: fan a task out to roles (worker templates of that
//! name, else a generic prompt). Parallel mode runs at most `max_concurrent_children` at
//! once and shares nothing; sequential mode passes each earlier output on (cut by
//! characters, never inside one).

use super::spawn::render;
use async_trait::async_trait;
use futures::future::join_all;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::time::Duration;
use tackle_protocol::{
    ApprovalMode, ChildKind, Risk, SpawnRequest, Tool, ToolContext, ToolError, ToolOutput, ToolSpec,
};

/// The most of one earlier output passed to the next role in sequential mode.
const PASSED_CHARS: usize = 2_000;

// Arguments of `delegate`; which fields each action reads is in their descriptions.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Default `run`.
    #[serde(default)]
    action: Action,
    /// run: the role.
    role: Option<String>,
    /// run: the task.
    task: Option<String>,
    /// run: narrow the role's tools.
    tools: Option<Vec<String>>,
    /// aggregate: the tasks.
    #[serde(default)]
    tasks: Vec<RoleTask>,
    /// aggregate: run at once, sharing nothing (default false).
    #[serde(default)]
    parallel: bool,
    #[serde(default)]
    merge_strategy: Merge,
}

#[derive(Deserialize, JsonSchema, Default, PartialEq)]
#[schemars(inline)]
#[serde(rename_all = "snake_case")]
enum Action {
    #[default]
    Run,
    Aggregate,
}

#[derive(Deserialize, JsonSchema, Default, PartialEq)]
#[schemars(inline)]
#[serde(rename_all = "snake_case")]
enum Merge {
    #[default]
    Concatenate,
    Summarize,
}

#[derive(Deserialize, JsonSchema, Clone)]
#[schemars(inline)]
#[serde(deny_unknown_fields)]
struct RoleTask {
    #[serde(default = "assistant")]
    role: String,
    task: String,
    tools: Option<Vec<String>>,
}

fn assistant() -> String {
    "assistant".to_string()
}

/// The `delegate` tool: fans a task out to roles, in parallel or in sequence.
pub struct Delegate;

#[async_trait]
impl Tool for Delegate {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "delegate",
            "Delegate work to sub-agents by role (a worker template of that name, else a generic one). `run`: one role and task. `aggregate`: several tasks, in order (each sees the earlier results) or in parallel, merged.",
            "core",
        )
        .parameters(crate::args::schema::<Args>())
        .risk(Risk::Medium)
        .approval(ApprovalMode::UnlessAutoApproved)
        .conversation_only()
        .spawns_children()
    }

    fn timeout(&self) -> Option<Duration> {
        Some(Duration::from_secs(600))
    }

    fn sink(&self, _args: &Value) -> Option<String> {
        Some("starts an agent with a task this session wrote".into())
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let a: Args = crate::args::parse_for("delegate", args)?;
        let agents = cx.agents()?;
        agents.can_spawn(cx)?;
        if a.action == Action::Run {
            let (Some(role), Some(task)) = (a.role, a.task) else {
                return Err(ToolError::invalid_arguments(
                    "`delegate` with `action: run` needs `role` and `task`",
                ));
            };
            let mut req = SpawnRequest::new(ChildKind::Role(role), task);
            req.tools = a.tools;
            return Ok(render(agents.spawn(cx, req).await?));
        }
        if a.tasks.is_empty() {
            return Err(ToolError::invalid_arguments(
                "`delegate` with `action: aggregate` needs a non-empty `tasks` list",
            ));
        }
        let mut results: Vec<(String, String)> = Vec::new();
        if a.parallel {
            let at_once = agents.max_concurrent_children().max(1);
            for chunk in a.tasks.chunks(at_once) {
                let runs = chunk.iter().map(|t| {
                    let mut req =
                        SpawnRequest::new(ChildKind::Role(t.role.clone()), t.task.clone());
                    req.tools = t.tools.clone();
                    agents.spawn(cx, req)
                });
                for (t, out) in chunk.iter().zip(join_all(runs).await) {
                    let text = match out {
                        Ok(r) => r.text,
                        Err(e) => format!("[error]: {}", e.message),
                    };
                    results.push((t.role.clone(), text));
                }
            }
        } else {
            for t in &a.tasks {
                let mut req = SpawnRequest::new(ChildKind::Role(t.role.clone()), t.task.clone());
                req.tools = t.tools.clone();
                if !results.is_empty() {
                    req.context = Some(earlier(&results));
                }
                match agents.spawn(cx, req).await {
                    Ok(r) => results.push((t.role.clone(), r.text)),
                    Err(e) => {
                        let so_far = merge(&results, &a.merge_strategy);
                        return Err(ToolError::failed(format!(
                            "role `{}` failed: {}\nResults so far:\n{so_far}",
                            t.role, e.message
                        )));
                    }
                }
            }
        }
        Ok(ToolOutput::text(merge(&results, &a.merge_strategy)))
    }
}

/// Earlier outputs for the next role, each cut to [`PASSED_CHARS`] characters.
fn earlier(results: &[(String, String)]) -> String {
    results
        .iter()
        .map(|(role, text)| {
            let n = text.chars().count();
            let shown: String = text.chars().take(PASSED_CHARS).collect();
            let more = if n > PASSED_CHARS { " […]" } else { "" };
            format!("[{role}]: {shown}{more}")
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn merge(results: &[(String, String)], how: &Merge) -> String {
    match how {
        Merge::Concatenate => results
            .iter()
            .map(|(role, text)| format!("[{role}]: {text}"))
            .collect::<Vec<_>>()
            .join("\n\n"),
        Merge::Summarize => {
            let mut out = String::from("## Aggregated Results\n");
            for (role, text) in results {
                out.push_str(&format!("\n### {role}\n{text}\n"));
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earlier_outputs_are_cut_by_characters() {
        let long = "é".repeat(PASSED_CHARS + 10);
        let text = earlier(&[("r".into(), long)]);
        assert!(text.ends_with(" […]"));
        assert_eq!(text.chars().filter(|c| *c == 'é').count(), PASSED_CHARS);
    }

    #[test]
    fn summarize_has_a_heading_per_role() {
        let out = merge(
            &[("a".into(), "x".into()), ("b".into(), "y".into())],
            &Merge::Summarize,
        );
        assert!(out.starts_with("## Aggregated Results"));
        assert!(out.contains("### a\nx") && out.contains("### b\ny"));
    }
}
