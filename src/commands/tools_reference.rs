//! `tackle tools reference`: the Markdown reference of every built-in tool (docs/tools.md),
//! rendered from the tool registry the other commands use, so the committed file is what the
//! binary offers (tests/tools_reference.rs fails when it is stale).
//!
//! No config is read: the built-in defaults, with every tool that waits for configuration
//! (a `services.*` section, `web_search.backends`, the coding tools) switched on, so the
//! reference is the same on every machine. Tools that only some builds have (a cargo
//! feature) get one line each, whether this build has them or not, for the same reason.

use crate::app::{App, AppBuilder, Selection};
use crate::cli::Global;
use crate::config::{parse_with_secrets, Loaded};
use crate::exit;
use anyhow::Result;
use serde_json::Value;
use std::fmt::Write as _;
use tackle_protocol::ToolSpec;
use tackle_store::Store;
use tackle_tools::gated::GATED_TOOLS;

/// Switches on every tool that waits for configuration. The placeholders are never used: a
/// listing runs nothing.
const EVERY_TOOL: &str = "\
tools:
  coding_tools: true
web_search:
  backends:
    - type: duckduckgo
services:
  whatsapp: {access_token: placeholder-not-a-token, phone_number_id: '0'}
  gsheets: {}
  stripe: {secret_key: placeholder-not-a-key}
  r8r: {}
";

/// The command that regenerates docs/tools.md, as the file and the staleness test name it.
pub const REFRESH: &str = "cargo run -q -- tools reference > docs/tools.md";

pub async fn run(global: &Global) -> Result<i32> {
    let every = registry_app(global, EVERY_TOOL)?;
    let defaults = registry_app(global, "")?;
    let specs: Vec<ToolSpec> = every
        .dispatcher
        .registry()
        .specs()
        .into_iter()
        // A plugin from this machine is not built in; a gated tool gets its own section.
        .filter(|s| s.owner != tackle_tools::plugins::NAME)
        .filter(|s| GATED_TOOLS.iter().all(|g| g.tool != s.name))
        .collect();
    // What a default config lacks for a tool is what the registry tells a caller naming it.
    let needs = |name: &str| {
        let registry = defaults.dispatcher.registry();
        match registry.get(name) {
            Some(_) => None,
            None => registry.unavailable(name),
        }
    };
    let text = render(&specs, &needs);
    every.shutdown().await;
    defaults.shutdown().await;
    let mut out = exit::stdout();
    exit::unless_closed(write!(out, "{text}"))?;
    Ok(exit::OK)
}

/// An app over the built-in defaults plus `yaml`, listing only: no MCP server, no database.
fn registry_app(global: &Global, yaml: &str) -> Result<App> {
    // No environment either: a `TACKLE_*` variable must not change the reference.
    let (config, _, secrets) = parse_with_secrets(yaml, "the tool reference", &|_| None, &[])?;
    let store = Store::open_deferred(&App::state_dir_for(&config));
    let loaded = Loaded {
        config,
        source: None,
        warnings: Vec::new(),
        secrets,
    };
    let selection = Selection {
        without_mcp: true,
        lists_only: true,
        ..Selection::default()
    };
    AppBuilder::with_loaded(global, &selection, loaded, store)?.app()
}

fn render(specs: &[ToolSpec], needs: &dyn Fn(&str) -> Option<String>) -> String {
    let mut md = String::new();
    let _ = write!(
        md,
        "# Tool reference\n\n\
         Every built-in tool, generated from the tool registry by `{REFRESH}`; a test fails when \
         this file is stale. `tackle tools list` shows the tools a given config and agent have, \
         `tackle tools describe NAME` one tool as they have it.\n\n\
         - **Risk** and **approval** are the tool's defaults: `security.tool_policies` and an \
         agent's settings can change the approval, and some calls ask for more (a `git push`).\n\
         - **Conversation only**: the tool asks the running agent for its work (a child agent, \
         a summary, a message). The model is offered it in `tackle run` and `tackle chat`; \
         `tackle tools call` and `tackle mcp serve` cannot run it and say so.\n\
         - **Needs**: the tool is offered only once that is configured.\n\n"
    );
    md.push_str("| Tool | Owner | Risk | Approval | Runs | Summary |\n");
    md.push_str("|---|---|---|---|---|---|\n");
    for s in specs {
        let _ = writeln!(
            md,
            "| [`{name}`](#{name}) | {} | {} | `{}` | {} | {} |",
            s.owner,
            s.risk,
            s.approval,
            if s.conversation_only {
                "conversation only"
            } else {
                "anywhere"
            },
            cell(&summary(&s.description)),
            name = s.name,
        );
    }
    md.push_str("\n## Tools built with a cargo feature\n\n");
    md.push_str(
        "Not in the default build; `cargo build --release --features FEATURE` adds them, and \
         `tackle tools describe NAME` in such a build shows their parameters.\n\n",
    );
    md.push_str("| Tool | Feature |\n|---|---|\n");
    for g in GATED_TOOLS {
        let _ = writeln!(md, "| `{}` | `{}` |", g.tool, g.feature);
    }
    for s in specs {
        md.push('\n');
        md.push_str(&section(s, needs(&s.name).as_deref()));
    }
    md
}

/// One tool: its facts, its description, its parameters, and the exact schema.
fn section(s: &ToolSpec, needs: Option<&str>) -> String {
    let mut md = format!("## `{}`\n\n", s.name);
    let _ = write!(
        md,
        "Owner `{}` · risk {} · approval `{}`",
        s.owner, s.risk, s.approval
    );
    if s.conversation_only {
        md.push_str(" · **conversation only**");
    }
    md.push_str("\n\n");
    if let Some(why) = needs {
        let _ = writeln!(md, "Needs: {}\n", prose(&one_line(why)));
    }
    let _ = writeln!(md, "{}\n", prose(s.description.trim()));
    md.push_str(&parameters(&s.parameters));
    let schema = serde_json::to_string_pretty(&s.parameters).unwrap_or_default();
    let _ = writeln!(
        md,
        "\n<details><summary>JSON Schema</summary>\n\n```json\n{schema}\n```\n\n</details>"
    );
    md
}

/// The top-level parameters as a table; the schema below has the nested detail.
fn parameters(schema: &Value) -> String {
    let Some(props) = schema["properties"].as_object().filter(|p| !p.is_empty()) else {
        return "No parameters.\n".to_string();
    };
    let required: Vec<&str> = schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let mut md = String::from("| Parameter | Type | Required | Description |\n|---|---|---|---|\n");
    for (name, p) in props {
        let _ = writeln!(
            md,
            "| `{name}` | {} | {} | {} |",
            cell(&type_of(p)),
            if required.contains(&name.as_str()) {
                "yes"
            } else {
                ""
            },
            cell(p["description"].as_str().unwrap_or_default()),
        );
    }
    md
}

/// `string`, `integer or null`, `array of string`, `one of "a", "b"`.
fn type_of(p: &Value) -> String {
    if let Some(values) = p["enum"].as_array() {
        let values: Vec<String> = values.iter().map(Value::to_string).collect();
        return format!("one of {}", values.join(", "));
    }
    let base = match &p["type"] {
        Value::String(t) => t.clone(),
        Value::Array(ts) => ts
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" or "),
        _ if p.get("oneOf").or_else(|| p.get("anyOf")).is_some() => {
            "one of several shapes (see the schema)".to_string()
        }
        _ => "any".to_string(),
    };
    match p["items"].get("type").and_then(Value::as_str) {
        Some(item) if base == "array" => format!("array of {item}"),
        _ => base,
    }
}

/// The description's first sentence (up to its first line): the table's summary.
fn summary(description: &str) -> String {
    let first = description.trim().lines().next().unwrap_or_default();
    let end = first.match_indices(". ").map(|(i, _)| i).find(|&i| {
        let before = first.get(..i).unwrap_or_default();
        !["e.g", "i.e", "etc", "vs"]
            .iter()
            .any(|abbr| before.ends_with(abbr))
    });
    match end.and_then(|i| first.get(..=i)) {
        Some(sentence) => sentence.to_string(),
        None => first.to_string(),
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Text safe inside a Markdown table cell: one line, no bare `|`.
fn cell(text: &str) -> String {
    prose(&one_line(text)).replace('|', "\\|")
}

/// `<` outside code spans as `&lt;`, so `r<N>` is not read as an HTML tag and hidden.
fn prose(text: &str) -> String {
    text.split('`')
        .enumerate()
        .map(|(i, piece)| {
            // The odd pieces are inside backticks, where Markdown shows `<` as it is.
            if i % 2 == 0 {
                piece.replace('<', "&lt;")
            } else {
                piece.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("`")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_is_the_first_sentence_past_abbreviations() {
        assert_eq!(
            summary("Reads a file, e.g. notes.md. Then more."),
            "Reads a file, e.g. notes.md."
        );
        assert_eq!(summary("No full stop"), "No full stop");
        assert_eq!(summary("One line.\nSecond line."), "One line.");
    }

    #[test]
    fn types_name_enums_unions_and_arrays() {
        let t = |v: Value| type_of(&v);
        assert_eq!(t(serde_json::json!({"type": "string"})), "string");
        assert_eq!(
            t(serde_json::json!({"type": ["integer", "null"]})),
            "integer or null"
        );
        assert_eq!(
            t(serde_json::json!({"type": "array", "items": {"type": "string"}})),
            "array of string"
        );
        assert_eq!(
            t(serde_json::json!({"type": "string", "enum": ["run", "aggregate"]})),
            r#"one of "run", "aggregate""#
        );
    }

    #[test]
    fn cells_stay_one_table_cell() {
        assert_eq!(cell("a | b\nc"), "a \\| b c");
        assert_eq!(cell("r<N>, `<title>`"), "r&lt;N>, `<title>`");
    }
}
