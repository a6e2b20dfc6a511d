//! Tackle's MCP client against the official conformance suite's client scenarios: the
//! handshake, a tool call, SSE reconnection honouring `retry` (SEP-1699), and an elicitation
//! form whose schema defaults (SEP-1034) a person keeps by pressing Enter in a real terminal.

mod common;

use common::Sandbox;
use std::path::PathBuf;

/// A client command for the suite: point a config at the scenario's URL, list the server's
/// tools through Tackle, and call the ones the scenarios watch for. The elicitation tool is
/// called in a tmux terminal, where the form is answered by pressing Enter on every field,
/// which keeps each field's default.
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
case "$tools" in *conf__test_client_elicitation_defaults*)
  pane="tackle-sep1034-$$"
  tmux new-session -d -s "$pane" -x 200 -y 50 \
    "env -i PATH='$PATH' HOME='$dir' {bin} --config '$dir/config.yaml' --workspace '$dir/ws' tools call conf__test_client_elicitation_defaults '{{}}' --yes; echo EXIT=\$?; sleep 30" || exit 1
  trap 'tmux kill-session -t "$pane" 2>/dev/null' EXIT
  seen=""
  for _ in $(seq 1 200); do
    screen=$(tmux capture-pane -p -t "$pane" 2>/dev/null)
    case "$screen" in *EXIT=0*) exit 0;; *EXIT=*) echo "$screen" >&2; exit 1;; esac
    case "$screen" in *"asks:"*) seen=1;; esac
    [ -n "$seen" ] && tmux send-keys -t "$pane" Enter
    sleep 0.2
  done
  echo "the form did not finish: $screen" >&2
  exit 1;;
esac
exit 0
"#,
        root = sb.dir.path().display(),
        bin = common::tackle_bin().display(),
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
fn the_client_passes_the_suites_core_client_scenarios() {
    let Some((cli, node_bin)) = common::conformance_suite() else {
        eprintln!("SKIP: the MCP conformance suite is not installed; run .ci/conformance-peers.sh (or set MCP_CONFORMANCE_DIR)");
        return;
    };
    let sb = Sandbox::new();
    let driver = driver(&sb);
    for scenario in [
        "initialize",
        "tools_call",
        "sse-retry",
        "elicitation-sep1034-client-defaults",
    ] {
        let (ok, text) = common::conformance_client(&cli, &node_bin, &driver, scenario);
        assert!(ok, "{scenario}:\n{text}");
    }
}
