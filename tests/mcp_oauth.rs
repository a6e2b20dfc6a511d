//! OAuth for Streamable HTTP servers: a server that answers 401 says `needs login: tackle mcp
//! login NAME` (in `mcp list` and in the tool's error); `mcp logout` forgets a token; and, where
//! the official conformance suite is installed, `mcp login` passes its client auth scenarios
//! (discovery, registration, PKCE, scopes, token endpoint auth, pre-registration).

mod common;

use common::{run, Sandbox};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Command;

/// A server on 127.0.0.1 that answers every request with 401 and an OAuth challenge.
fn unauthorized_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 8192];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(
                format!(
                    "HTTP/1.1 401 Unauthorized\r\nwww-authenticate: Bearer resource_metadata=\"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp\"\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                )
                .as_bytes(),
            );
        }
    });
    format!("http://127.0.0.1:{port}/mcp")
}

#[test]
fn a_server_that_wants_a_login_says_how_to_log_in() {
    let sb = Sandbox::new();
    let url = unauthorized_server();
    let cfg = sb.config(&format!(
        "mcp_servers:\n  remote:\n    url: {url}\n    startup_timeout_secs: 10\n"
    ));
    let r = run(sb.tackle(&cfg, &["mcp", "list"]));
    assert_eq!(
        r.code, 1,
        "its only server cannot be used until it logs in\n{r}"
    );
    assert!(
        r.stdout.contains("needs login: tackle mcp login remote"),
        "{r}"
    );
    let r = run(sb.tackle(
        &cfg,
        &["tools", "call", "remote__anything", "{}", "--yes", "--json"],
    ));
    assert_ne!(r.code, 0, "{r}");
    assert!(
        r.stdout.contains("needs login: tackle mcp login remote"),
        "{r}"
    );
}

#[test]
fn logout_forgets_the_token_and_login_refuses_what_is_not_an_http_server() {
    let sb = Sandbox::new();
    let cfg = sb.config(
        "mcp_servers:\n  remote:\n    url: http://127.0.0.1:9/mcp\n    oauth: {client_id: tackle}\n  local:\n    command: /bin/true\n",
    );
    let token = sb.state().join("mcp-oauth/remote.json");
    std::fs::create_dir_all(token.parent().expect("dir")).expect("mkdir");
    std::fs::write(&token, "{}").expect("write");
    let r = run(sb.tackle(&cfg, &["mcp", "logout", "remote"]));
    assert_eq!(r.code, 0, "{r}");
    assert!(!token.exists(), "{r}");
    let r = run(sb.tackle(&cfg, &["mcp", "logout", "remote"]));
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stderr.contains("no token was kept"), "{r}");
    let r = run(sb.tackle(&cfg, &["mcp", "login", "local"]));
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("not a Streamable HTTP server"), "{r}");
    let r = run(sb.tackle(&cfg, &["mcp", "login", "nobody"]));
    assert_eq!(r.code, 6, "not found (README, exit codes)\n{r}");
}

/// A client command for the suite: log in unattended, list the server's tools and call the
/// first; when the call says it needs a login (a step-up to more scope), log in again and call
/// again, as a person would. A client ID metadata document URL is configured, as a deployment
/// that publishes one would; the suite's authorization server expects its own test URL.
fn driver(sb: &Sandbox) -> PathBuf {
    let script = format!(
        r#"#!/usr/bin/env bash
set -u
url="$1"
dir=$(mktemp -d "{root}/run.XXXXXX")
ctx="${{MCP_CONFORMANCE_CONTEXT:-}}"
field() {{ printf '%s' "$ctx" | python3 -c "import json,sys; print(json.load(sys.stdin).get('$1') or '')" 2>/dev/null; }}
{{
  echo "state_dir: $dir/state"
  echo "mcp_servers:"
  echo "  conf:"
  echo "    url: \"$url\""
  echo "    oauth:"
  echo "      client_metadata_url: https://conformance-test.local/client-metadata.json"
  cid=$(field client_id); csec=$(field client_secret)
  if [ -n "$cid" ]; then
    echo "      client_id: \"$cid\""
    if [ -n "$csec" ]; then echo "      client_secret: \"$csec\""; fi
  fi
}} > "$dir/config.yaml"
mkdir -p "$dir/ws"
tackle() {{ env -i PATH="$PATH" HOME="$dir" {bin} --config "$dir/config.yaml" --workspace "$dir/ws" "$@"; }}
tackle mcp login conf --unattended >/dev/null || exit 1
tackle tools list --mcp --json >"$dir/list.json" || exit 1
tool=$(python3 -c "import json,sys; print(next((t['name'] for t in json.load(open(sys.argv[1])) if t['name'].startswith('conf__')), ''))" "$dir/list.json")
[ -n "$tool" ] || exit 0
if ! tackle tools call "$tool" '{{}}' --yes >"$dir/call.out" 2>&1; then
  grep -q "needs login: tackle mcp login conf" "$dir/call.out" || {{ cat "$dir/call.out" >&2; exit 1; }}
  tackle mcp login conf --unattended >/dev/null || exit 1
  tackle tools call "$tool" '{{}}' --yes >/dev/null 2>&1 || exit 1
fi
"#,
        root = sb.dir.path().display(),
        bin = common::tackle_bin().display(),
    );
    let path = sb.dir.path().join("driver.sh");
    std::fs::write(&path, script).expect("write driver");
    let _ = Command::new("chmod").arg("+x").arg(&path).status();
    path
}

#[test]
fn login_passes_the_conformance_suites_client_auth_scenarios() {
    let Some((cli, node_bin)) = common::conformance_suite() else {
        eprintln!("SKIP: the MCP conformance suite is not installed; run .ci/conformance-peers.sh (or set MCP_CONFORMANCE_DIR)");
        return;
    };
    let sb = Sandbox::new();
    let driver = driver(&sb);
    // The whole `auth` suite: discovery variants, client ID metadata documents, scope
    // selection and step-up, retry limits, token endpoint auth methods, pre-registration.
    let (ok, text) = common::conformance_client_suite(&cli, &node_bin, &driver, "auth");
    assert!(ok, "{text}");
    // Of the 2025-03-26 back-compatibility scenarios, the endpoint fallback. Not the metadata
    // one: its authorization server's `issuer` differs from the URL its metadata was fetched
    // from, which RFC 8414 §3.3 says must not be used (.ci/conformance-expected-failures.yaml).
    let scenario = "auth/2025-03-26-oauth-endpoint-fallback";
    let (ok, text) = common::conformance_client(&cli, &node_bin, &driver, scenario);
    assert!(ok, "{scenario}:\n{text}");
    // That one is refused, and says why: metadata served for another issuer is how a mix-up
    // attack would send the code to the wrong authorization server.
    let scenario = "auth/2025-03-26-oauth-metadata-backcompat";
    let (ok, text) = common::conformance_client(&cli, &node_bin, &driver, scenario);
    assert!(!ok, "{scenario}:\n{text}");
    assert!(text.contains("issuer mismatch"), "{scenario}:\n{text}");
    assert!(
        text.contains("Expected Check Missing: token-request"),
        "no token may be requested from it:\n{text}"
    );
}
