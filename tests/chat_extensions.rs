//! An extension disabled for one chat session (`/disable EXT` in `tackle chat`): the real
//! binary with piped input against a scripted model (fakellm) that answers by what the
//! request offers (`tools_include`). After `/disable web` the next request carries no web
//! tool, and a model that calls `web_fetch` anyway is refused by the dispatcher (nothing is
//! fetched, and the audit log says why); `/enable web` offers it again. `/extensions` lists
//! each extension with its state; an unknown name is refused with a hint.

mod common;

use common::{run, FakeLlm, Sandbox};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

#[test]
fn a_disabled_extensions_tools_are_not_sent_and_a_forced_call_is_refused() {
    // A loopback site that counts what reaches it: the refused fetch must not.
    let site = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = site.local_addr().expect("addr").port();
    let hits = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&hits);
    std::thread::spawn(move || {
        for mut stream in site.incoming().flatten() {
            seen.fetch_add(1, Ordering::SeqCst);
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\nConnection: close\r\n\r\nfetched",
            );
        }
    });
    // One conversation, a request per turn: the third asks for web_fetch whatever it is
    // offered; otherwise the answer says whether the request offered web_fetch.
    let rules = format!(
        concat!(
            "rules:\n",
            "  - name: force\n    when: {{turn: 3}}\n    respond:\n      tool_calls:\n        - {{name: web_fetch, arguments: {{url: \"http://127.0.0.1:{port}/page\"}}}}\n",
            "  - name: refused\n    when: {{turn: 4, tool_result_contains: \"disabled for this session\"}}\n    respond: {{content: \"CALL-REFUSED\"}}\n",
            "  - name: ran\n    when: {{turn: 4}}\n    respond: {{content: \"CALL-RAN\"}}\n",
            "  - name: offered\n    when: {{tools_include: web_fetch}}\n    respond: {{content: \"WEB-OFFERED\"}}\n",
            "  - name: hidden\n    when: {{}}\n    respond: {{content: \"WEB-HIDDEN\"}}\n",
        ),
        port = port
    );
    let Some(llm) = FakeLlm::start(&rules) else {
        return;
    };
    let sb = Sandbox::new();
    // web_fetch runs unasked and may reach the loopback site: only the session's switch
    // stands between the forced call and the site.
    let config = sb.config(&format!(
        "{}security:\n  auto_approved_tools: [web_fetch]\n  tool_policies:\n    web_fetch:\n      approval: unless_auto_approved\n      grants:\n        network:\n          allow_private: true\n          endpoints:\n            - host: 127.0.0.1\n",
        llm.backend_yaml("openai", false)
    ));
    let script = [
        "which tools first",
        "/extensions",
        "/disable nosuch",
        "/disable web",
        "which tools now",
        "fetch it",
        "/extensions",
        "/enable web",
        "which tools again",
        "/quit",
    ];
    let mut cmd = sb.tackle(&config, &["chat"]);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn tackle chat");
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(format!("{}\n", script.join("\n")).as_bytes());
    }
    let out = child.wait_with_output().expect("chat ends");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let both = format!("{stdout}\n--- stderr ---\n{stderr}");
    assert_eq!(out.status.code(), Some(0), "{both}");

    // The model's answers, in order: what each request offered, then the forced call's fate.
    let answers: Vec<&str> = both
        .lines()
        .filter_map(|l| {
            ["WEB-OFFERED", "WEB-HIDDEN", "CALL-REFUSED", "CALL-RAN"]
                .into_iter()
                .find(|a| l.contains(a))
        })
        .collect();
    assert_eq!(
        answers,
        ["WEB-OFFERED", "WEB-HIDDEN", "CALL-REFUSED", "WEB-OFFERED"],
        "{both}"
    );
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "the refused fetch went out\n{both}"
    );

    // /extensions: every extension, web's state before and after.
    let web_rows: Vec<&str> = stderr
        .lines()
        .filter(|l| l.split_whitespace().next() == Some("web"))
        .collect();
    assert_eq!(web_rows.len(), 2, "{both}");
    assert!(
        web_rows[0].contains(" on ") && web_rows[0].contains("web_fetch"),
        "{both}"
    );
    assert!(web_rows[1].contains("disabled"), "{both}");
    assert!(
        stderr
            .lines()
            .any(|l| l.split_whitespace().next() == Some("fs")),
        "{both}"
    );
    assert!(stderr.contains("no extension `nosuch`"), "{both}");
    assert!(stderr.contains("disabled `web` for this session"), "{both}");
    assert!(stderr.contains("enabled `web` again"), "{both}");

    // The dispatcher refused it, on record with why.
    let r = run(sb.tackle(&config, &["audit", "--json", "--tool", "web_fetch"]));
    assert_eq!(r.code, 0, "{r}");
    let records: Vec<Value> =
        serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}\n{r}"));
    assert_eq!(records.len(), 1, "{records:#?}");
    assert_eq!(records[0]["verdict"], "deny", "{records:#?}");
    assert_eq!(records[0]["caller"], "model", "{records:#?}");
    assert!(
        records[0]["rule"]
            .as_str()
            .is_some_and(|r| r.contains("extension disabled") && r.contains("web")),
        "{records:#?}"
    );
}

/// The switch is kept with the session: `tackle chat --session ID` resumes with the extension
/// still off (its tools not offered), until `/enable` turns it on again.
#[test]
fn a_resumed_chat_keeps_its_disabled_extension() {
    let rules = concat!(
        "rules:\n",
        "  - name: offered\n    when: {tools_include: web_fetch}\n    respond: {content: \"WEB-OFFERED\"}\n",
        "  - name: hidden\n    when: {}\n    respond: {content: \"WEB-HIDDEN\"}\n",
    );
    let Some(llm) = FakeLlm::start(rules) else {
        return;
    };
    let sb = Sandbox::new();
    let config = sb.config(&llm.backend_yaml("openai", false));
    let chat = |args: &[&str], script: &[&str]| {
        let mut cmd = sb.tackle(&config, args);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn tackle chat");
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(format!("{}\n", script.join("\n")).as_bytes());
        }
        let out = child.wait_with_output().expect("chat ends");
        let both = format!(
            "{}\n--- stderr ---\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(0), "{both}");
        // The answers (stdout) first, so a recap of earlier ones (stderr) is not counted.
        (String::from_utf8_lossy(&out.stdout).into_owned(), both)
    };
    let (_, first) = chat(&["chat"], &["/disable web", "which tools", "/quit"]);
    assert!(first.contains("WEB-HIDDEN"), "{first}");
    let id = first
        .split("resume with tackle chat --session ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .map(|s| s.trim_end_matches(')').to_string())
        .unwrap_or_else(|| panic!("no session id:\n{first}"));
    let (answered, resumed) = chat(
        &["chat", "--session", &id],
        &[
            "/extensions",
            "which tools now",
            "/enable web",
            "and now",
            "/quit",
        ],
    );
    let answers: Vec<&str> = answered
        .lines()
        .filter_map(|l| {
            ["WEB-OFFERED", "WEB-HIDDEN"]
                .into_iter()
                .find(|a| l.contains(a))
        })
        .collect();
    assert_eq!(answers, ["WEB-HIDDEN", "WEB-OFFERED"], "{resumed}");
    assert!(
        resumed
            .lines()
            .any(|l| l.split_whitespace().next() == Some("web") && l.contains("disabled")),
        "{resumed}"
    );
    // A third start resumes with it on: /enable was kept as well.
    let (answered, third) = chat(&["chat", "--session", &id], &["last time", "/quit"]);
    assert!(answered.contains("WEB-OFFERED"), "{third}");
}
