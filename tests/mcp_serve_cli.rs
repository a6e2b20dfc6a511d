//! `tackle mcp serve` as a person meets it: `--http localhost:PORT` works and the address it
//! got is printed on stdout (for scripts) as well as stderr; started by hand in a terminal it
//! says what it is waiting for, and says nothing of the kind to an MCP client.

mod common;

use common::tmux::{shell_quote, Tmux};
use common::{run, Sandbox};
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

#[test]
fn a_host_name_that_resolves_to_loopback_is_served_and_the_address_goes_to_stdout() {
    let sb = Sandbox::new();
    let config = sb.config("");
    let mut child = sb
        .tackle(&config, &["mcp", "serve", "--http", "localhost:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn tackle mcp serve");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let first = BufReader::new(stdout).lines().next();
        let _ = tx.send(first.and_then(Result::ok).unwrap_or_default());
    });
    let line = rx.recv_timeout(Duration::from_secs(60)).unwrap_or_default();
    let _ = child.kill();
    let out = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        line.starts_with("http://127.0.0.1:") && line.ends_with("/mcp"),
        "stdout: {line:?}\nstderr: {stderr}"
    );
    assert!(!line.contains(":0/"), "the port it got, not 0: {line}");
    assert!(stderr.contains(&line), "{stderr}");
}

#[test]
fn a_malformed_http_address_is_a_usage_error_naming_the_shape() {
    let sb = Sandbox::new();
    let config = sb.config("");
    let r = run(sb.tackle(&config, &["mcp", "serve", "--http", "localhost"]));
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("localhost:8765"), "{r}");
}

#[test]
fn started_by_hand_in_a_terminal_it_says_what_it_waits_for() {
    let sb = Sandbox::new();
    let config = sb.config("");
    let command = format!(
        "env -i PATH={} HOME={} {} --config {} mcp serve; sleep 30",
        shell_quote(&std::env::var("PATH").unwrap_or_default()),
        shell_quote(&sb.home().to_string_lossy()),
        shell_quote(&common::tackle_bin().to_string_lossy()),
        shell_quote(&config.to_string_lossy()),
    );
    let Some(tmux) = Tmux::start(&format!("tackle-mcp-hint-{}", std::process::id()), &command)
    else {
        return;
    };
    tmux.wait_for("waiting for an MCP client", 1);
    tmux.key("C-d");

    // An MCP client (stdin a pipe) gets no such line.
    let r = run(sb.tackle(&config, &["mcp", "serve"]));
    assert!(!r.stderr.contains("waiting for an MCP client"), "{r}");
}
