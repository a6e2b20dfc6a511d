//! Tackle's MCP client against the official conformance suite's client scenarios: the
//! handshake, a tool call, and SSE reconnection honouring `retry` (SEP-1699).

mod common;

use common::Sandbox;
use std::path::PathBuf;

/// A client command for the suite: point a config at the scenario's URL, list the server's
/// tools through Tackle, and call the ones the scenarios watch for.
fn driver(sb: &Sandbox) -> PathBuf {
    let script = format!(
        r#"#!/usr/bin/env bash
set -u
url="$1"
dir=$(mktemp -d "{root}/run.XXXXXX")
printf 'state_dir: %s/state\nmcp_servers:\n  conf:\n    url: "%s"\n' "$dir" "$url" > "$dir/config.yaml"
mkdir -p "$dir/ws"
t() {{ env -i PATH="$PATH" HOME="$dir" {bin} --config "$dir/config.yaml" --workspace "$dir/ws" "$@"; }}
tools=$(t tools list --mcp --json) || exit 1
case "$tools" in *conf__add_numbers*) t tools call conf__add_numbers '{{"a": 2, "b": 3}}' --yes >/dev/null || exit 1;; esac
case "$tools" in *conf__test_reconnection*) t tools call conf__test_reconnection '{{}}' --yes >/dev/null || exit 1;; esac
exit 0
"#,
        root = sb.dir.path().display(),
        bin = env!("CARGO_BIN_EXE_tackle"),
    );
    let path = sb.dir.path().join("driver.sh");
    std::fs::write(&path, script).expect("write driver");
    let _ = std::process::Command::new("chmod")
        .arg("+x")
        .arg(&path)
        .status();
    path
}

#[test]
fn the_client_passes_the_suites_initialize_tools_call_and_sse_retry_scenarios() {
    let Some((cli, node_bin)) = common::conformance_suite() else {
        eprintln!("SKIP: the MCP conformance suite is not installed; run .ci/conformance-peers.sh (or set MCP_CONFORMANCE_DIR)");
        return;
    };
    let sb = Sandbox::new();
    let driver = driver(&sb);
    for scenario in ["initialize", "tools_call", "sse-retry"] {
        let (ok, text) = common::conformance_client(&cli, &node_bin, &driver, scenario);
        assert!(ok, "{scenario}:\n{text}");
    }
}
