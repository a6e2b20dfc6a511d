//! The `services` tools through the real binary: `tackle tools call NAME '{json}' --json` with
//! a config whose `api_base` (r8r: `url`) points at a stand-in API on 127.0.0.1. Each stand-in
//! records the request; the test checks it as the real API documents it, and greps stdout,
//! stderr and every file of the state directory (the audit log) for the configured secrets.

mod common;

use common::{run, Run, Sandbox};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const TEST_KEY: &str =
    include_str!("../crates/tackle-tools/src/services/testdata/service_account_key.pem");

/// One request as the stand-in saw it; header names lower-cased.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: String,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

type Log = Arc<Mutex<Vec<Seen>>>;

/// A stand-in API: `routes` are `(method, path?query, status, JSON body)`; anything else is a
/// 404 in the APIs' `{error: {message}}` shape. It serves a bounded number of connections.
fn stand_in(routes: Vec<(&'static str, String, u16, String)>) -> (u16, Log) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let log: Log = Arc::default();
    let seen = log.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(16) {
            let Ok(mut s) = stream else { continue };
            let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
            let Some(req) = read_request(&mut s) else {
                continue;
            };
            let route = routes
                .iter()
                .find(|(m, t, _, _)| *m == req.method && *t == req.target);
            let (status, body) = match route {
                Some((_, _, status, body)) => (*status, body.clone()),
                None => (404, r#"{"error":{"message":"no such route"}}"#.to_string()),
            };
            seen.lock().unwrap_or_else(|e| e.into_inner()).push(req);
            let reply = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = s.write_all(reply.as_bytes());
        }
    });
    (port, log)
}

fn read_request(s: &mut std::net::TcpStream) -> Option<Seen> {
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return None,
            Ok(n) => data.extend_from_slice(&buf[..n]),
        }
    };
    let head = String::from_utf8_lossy(&data[..head_end]).into_owned();
    let mut lines = head.lines();
    let mut first = lines.next()?.split_whitespace();
    let method = first.next()?.to_string();
    let target = first.next()?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = data[head_end + 4..].to_vec();
    while body.len() < len {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => body.extend_from_slice(&buf[..n]),
        }
    }
    Some(Seen {
        method,
        target,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

fn log_of(log: &Log) -> Vec<Seen> {
    log.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

fn json_of(r: &Run) -> Value {
    serde_json::from_str(r.stdout.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {r}"))
}

/// No secret in what the binary printed or in any file it left in the state directory.
fn assert_nowhere(sb: &Sandbox, r: &Run, secrets: &[&str]) {
    let mut everything = format!("{}\n{}", r.stdout, r.stderr);
    let mut stack = vec![sb.state()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(bytes) = std::fs::read(&p) {
                everything.push_str(&String::from_utf8_lossy(&bytes));
            }
        }
    }
    assert!(
        everything.contains("whatsapp")
            || everything.contains("gsheets")
            || everything.contains("stripe")
            || everything.contains("r8r"),
        "the audit log was not written"
    );
    for s in secrets {
        assert!(!everything.contains(s), "{s} leaked:\n{r}");
    }
}

fn call(sb: &Sandbox, config: &Path, tool: &str, args: &str, env: &[(&str, &str)]) -> Run {
    let mut cmd = sb.tackle(config, &["tools", "call", tool, args, "--json", "--yes"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    run(cmd)
}

#[test]
fn whatsapp_sends_with_the_interpolated_token() {
    let token = "EAAG-cli-SECRET-whatsapp";
    let (port, log) = stand_in(vec![(
        "POST",
        "/v18.0/1065403522/messages".into(),
        200,
        r#"{"messaging_product":"whatsapp","contacts":[{"input":"14155550123","wa_id":"14155550123"}],"messages":[{"id":"wamid.CLI1"}]}"#.into(),
    )]);
    let sb = Sandbox::new();
    let config = sb.config(&format!(
        "services:\n  whatsapp:\n    access_token: \"${{WA_TOKEN}}\"\n    phone_number_id: \"1065403522\"\n    api_base: http://127.0.0.1:{port}\n"
    ));
    let r = call(
        &sb,
        &config,
        "whatsapp",
        r#"{"to": "14155550123", "message": "hello"}"#,
        &[("WA_TOKEN", token)],
    );
    assert_eq!(r.code, 0, "{r}");
    let v = json_of(&r);
    assert_eq!(
        v["content"],
        "Sent WhatsApp message to 14155550123: message id wamid.CLI1"
    );
    let seen = log_of(&log);
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(
        seen[0].header("authorization"),
        Some(format!("Bearer {token}").as_str())
    );
    assert_eq!(seen[0].header("content-type"), Some("application/json"));
    let body: Value = serde_json::from_str(&seen[0].body).unwrap_or_default();
    assert_eq!(
        body,
        serde_json::json!({"messaging_product": "whatsapp", "recipient_type": "individual",
            "to": "14155550123", "type": "text", "text": {"preview_url": false, "body": "hello"}})
    );
    assert_nowhere(&sb, &r, &[token]);
}

#[test]
fn a_service_without_its_section_fails_naming_the_key() {
    let sb = Sandbox::new();
    let config = sb.config("");
    let r = call(&sb, &config, "r8r", r#"{"action": "list"}"#, &[]);
    assert_eq!(r.code, 1, "{r}");
    let v = json_of(&r);
    assert_eq!(v["error"]["kind"], "failed");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .starts_with("services.r8r is not configured"),
        "{r}"
    );
}

#[test]
fn gsheets_mints_a_token_from_the_key_file_and_reads() {
    let (port, log) = stand_in(vec![
        (
            "POST",
            "/token".into(),
            200,
            r#"{"access_token":"ya29.cli-SECRET-token","expires_in":3599,"token_type":"Bearer"}"#
                .into(),
        ),
        (
            "GET",
            "/v4/spreadsheets/sheet-1/values/Sheet1%21A1%3AB2".into(),
            200,
            r#"{"range":"Sheet1!A1:B2","majorDimension":"ROWS","values":[["a","b"],["c","d"]]}"#
                .into(),
        ),
    ]);
    let sb = Sandbox::new();
    // The key's token_uri is on 127.0.0.1 too: the key file is the operator's, so it is trusted.
    let key = serde_json::json!({
        "type": "service_account",
        "client_email": "bot@proj.iam.gserviceaccount.com",
        "private_key_id": "k1",
        "private_key": TEST_KEY,
        "token_uri": format!("http://127.0.0.1:{port}/token"),
    });
    let key_path = sb.home().join(".config/tackle/sa.json");
    std::fs::create_dir_all(key_path.parent().expect("parent")).expect("mkdir");
    std::fs::write(&key_path, key.to_string()).expect("write key");
    let config = sb.config(&format!(
        "services:\n  gsheets:\n    service_account_file: ~/.config/tackle/sa.json\n    api_base: http://127.0.0.1:{port}\nsecurity:\n  auto_approved_tools: [gsheets]\n"
    ));
    let r = run(sb.tackle(
        &config,
        &[
            "tools",
            "call",
            "gsheets",
            r#"{"spreadsheet_id": "sheet-1", "action": "read", "range": "Sheet1!A1:B2"}"#,
            "--json",
        ],
    ));
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(json_of(&r)["content"], "Row 1: a | b\nRow 2: c | d");
    let seen = log_of(&log);
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(
        seen[0].header("content-type"),
        Some("application/x-www-form-urlencoded")
    );
    assert!(seen[0].body.starts_with(
        "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=ey"
    ));
    assert_eq!(
        seen[1].header("authorization"),
        Some("Bearer ya29.cli-SECRET-token")
    );
    let key_line = TEST_KEY.lines().nth(1).unwrap_or("PRIVATE KEY");
    assert_nowhere(&sb, &r, &["ya29.cli-SECRET-token", key_line, "PRIVATE KEY"]);
}

#[test]
fn stripe_creates_a_payment_and_strips_client_secret() {
    let key = "sk_test_cli_SECRET_key";
    let (port, log) = stand_in(vec![(
        "POST",
        "/v1/payment_intents".into(),
        200,
        r#"{"id":"pi_cli","object":"payment_intent","amount":1500,"currency":"eur","status":"requires_payment_method","client_secret":"pi_cli_secret_ABCDEF"}"#.into(),
    )]);
    let sb = Sandbox::new();
    let config = sb.config(&format!(
        "services:\n  stripe:\n    secret_key: \"${{STRIPE_KEY}}\"\n    webhook_secret: whsec_cli_SECRET\n    currency: eur\n    api_base: http://127.0.0.1:{port}\n"
    ));
    let r = call(
        &sb,
        &config,
        "stripe",
        r#"{"action": "create_payment", "amount": 1500}"#,
        &[("STRIPE_KEY", key)],
    );
    assert_eq!(r.code, 0, "{r}");
    let content = json_of(&r)["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(content.starts_with("Created payment_intent pi_cli."), "{r}");
    assert!(
        !r.stdout.contains("client_secret") && !r.stdout.contains("secret_ABCDEF"),
        "{r}"
    );
    let seen = log_of(&log);
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].body, "amount=1500&currency=eur");
    assert_eq!(
        seen[0].header("content-type"),
        Some("application/x-www-form-urlencoded")
    );
    assert!(seen[0]
        .header("idempotency-key")
        .is_some_and(|k| k.starts_with("tackle-")));
    use base64::Engine as _;
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("{key}:"));
    assert_eq!(
        seen[0].header("authorization"),
        Some(format!("Basic {basic}").as_str())
    );
    assert_nowhere(&sb, &r, &[key, &basic, "whsec_cli_SECRET"]);
}

#[test]
fn r8r_runs_a_workflow_and_waits_for_it() {
    let (port, log) = stand_in(vec![(
        "POST",
        "/api/workflows/daily/execute".into(),
        200,
        r#"{"execution_id":"ex_cli","status":"completed","output":{"ok":true},"duration_ms":7}"#
            .into(),
    )]);
    let sb = Sandbox::new();
    let config = sb.config(&format!(
        "services:\n  r8r:\n    url: http://127.0.0.1:{port}\n    token: r8r-cli-SECRET\n"
    ));
    let r = call(
        &sb,
        &config,
        "r8r",
        r#"{"workflow": "daily", "inputs": {"n": 1}}"#,
        &[],
    );
    assert_eq!(r.code, 0, "{r}");
    let content = json_of(&r)["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        content.starts_with("workflow `daily` execution ex_cli completed in 7 ms."),
        "{r}"
    );
    let seen = log_of(&log);
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(
        seen[0].header("authorization"),
        Some("Bearer r8r-cli-SECRET")
    );
    let body: Value = serde_json::from_str(&seen[0].body).unwrap_or_default();
    assert_eq!(body, serde_json::json!({"input": {"n": 1}, "wait": true}));
    assert_nowhere(&sb, &r, &["r8r-cli-SECRET"]);
}
