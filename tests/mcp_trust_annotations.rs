//! A server's `readOnlyHint` lowers a tool's policy only when the operator trusts that
//! server's annotations; by default an MCP tool asks.

mod common;

use common::{repo_root, run, Sandbox};
use serde_json::Value;

fn config(sb: &Sandbox, trust: Option<bool>) -> Option<std::path::PathBuf> {
    let server = repo_root().join(".ci/venv/bin/mcp-server-time");
    if !server.exists() {
        eprintln!("SKIP: mcp-server-time is not installed; run .ci/mcp-peers.sh");
        return None;
    }
    let trust = trust.map_or(String::new(), |t| format!("    trust_annotations: {t}\n"));
    Some(sb.config(&format!(
        "mcp_servers:\n  time:\n    command: {}\n    args: [\"--local-timezone\", \"UTC\"]\n{trust}",
        server.display()
    )))
}

fn listed(sb: &Sandbox, cfg: &std::path::Path) -> Value {
    let r = run(sb.tackle(cfg, &["tools", "list", "--mcp", "--json"]));
    assert_eq!(r.code, 0, "{r}");
    let rows: Vec<Value> = serde_json::from_str(&r.stdout).expect("json");
    rows.into_iter()
        .find(|t| t["name"] == "time__get_current_time")
        .unwrap_or_else(|| panic!("time__get_current_time not listed\n{r}"))
}

#[test]
fn annotations_are_believed_only_for_a_trusted_server() {
    let args = r#"{"timezone":"UTC"}"#;
    for (trust, approval, risk, code) in [
        (None, "unless_auto_approved", "medium", 4),
        (Some(false), "unless_auto_approved", "medium", 4),
        (Some(true), "never", "low", 0),
    ] {
        let sb = Sandbox::new();
        let Some(cfg) = config(&sb, trust) else {
            return;
        };
        let row = listed(&sb, &cfg);
        assert_eq!(row["approval"], approval, "trust {trust:?}: {row}");
        assert_eq!(row["risk"], risk, "trust {trust:?}: {row}");
        let r = run(sb.tackle(
            &cfg,
            &["tools", "call", "time__get_current_time", args, "--json"],
        ));
        assert_eq!(r.code, code, "trust {trust:?}\n{r}");
    }
}
