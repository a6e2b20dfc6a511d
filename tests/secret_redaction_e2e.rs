//! Config credentials never reach output or the audit log, through the real binary
//! (docs/architecture.md, "The call pipeline"). Each member plants a credential in a config key
//! (often inside a larger value, `Bearer ${VAR}`, as config.example.yaml writes it), makes a
//! real tool print the bare value or an encoding of it, and checks that the value appears
//! nowhere: not on stdout or stderr (text and `--json`), not in `tackle audit --json`, and not
//! in the bytes of any file under the state directory (the SQLite audit log and sessions).
//! Each member also checks that the tool did print something redacted, so a tool that printed
//! nothing cannot make it pass.

mod common;

use base64::Engine;
use common::{run, FakeLlm, Run, Sandbox};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};

const REDACTED: &str = "[redacted";

/// One attack: a config that holds `secret`, the environment it is read from, and the call that
/// makes a tool print it (or `forms` of it).
struct Member {
    name: &'static str,
    config: String,
    env: Vec<(&'static str, String)>,
    tool: &'static str,
    args: String,
    /// The texts that must appear nowhere: the bare secret and the encodings the tool prints.
    forms: Vec<String>,
    /// Files planted in the workspace first (a checked-out `.env`).
    files: Vec<(&'static str, String)>,
}

/// Random-looking credentials that no built-in pattern knows: only the config can say they
/// are secret. Variable names avoid `KEY`/`TOKEN` so no `NAME=value` rule helps either.
fn credential(tag: &str) -> String {
    format!("Qz7{tag}pLm2Rv9Xw4Tn8Hc")
}

/// Lets the shell pass `vars` through to commands (`security.env_passthrough`).
fn passthrough(vars: &[&str]) -> String {
    format!("security:\n  env_passthrough: [{}]\n", vars.join(", "))
}

fn shell(command: &str) -> String {
    serde_json::json!({ "command": command }).to_string()
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Fails naming `where` when any of `forms` is in `text`.
fn assert_absent(member: &str, place: &str, text: &str, forms: &[String]) {
    for form in forms {
        assert!(
            !text.contains(form.as_str()),
            "{member}: `{form}` leaked in {place}:\n{text}"
        );
    }
}

/// Run the member through `tools call` (JSON and text), then read the audit log and the state
/// directory's bytes.
fn check(member: &Member) {
    let sb = Sandbox::new();
    for (path, text) in &member.files {
        std::fs::write(sb.workspace().join(path), text).expect("plant file");
    }
    let config = sb.config(&member.config);
    let call = |json: bool| -> Run {
        let mut argv = vec!["tools", "call", member.tool, member.args.as_str(), "--yes"];
        if json {
            argv.push("--json");
        }
        let mut cmd = sb.tackle(&config, &argv);
        for (k, v) in &member.env {
            cmd.env(k, v);
        }
        run(cmd)
    };
    for json in [true, false] {
        let r = call(json);
        let place = if json { "--json output" } else { "text output" };
        assert_absent(
            member.name,
            place,
            &format!("{}{}", r.stdout, r.stderr),
            &member.forms,
        );
        assert!(
            r.stdout.contains(REDACTED),
            "{}: the tool printed nothing redacted ({place}), so the attack did not run:\n{r}",
            member.name
        );
    }
    let mut audit = sb.tackle(&config, &["audit", "--json"]);
    for (k, v) in &member.env {
        audit.env(k, v);
    }
    let audit = run(audit);
    assert_eq!(audit.code, 0, "{}: {audit}", member.name);
    assert!(
        audit.stdout.contains(member.tool),
        "{}: the call is not in the audit log:\n{audit}",
        member.name
    );
    assert_absent(
        member.name,
        "tackle audit --json",
        &audit.stdout,
        &member.forms,
    );
    for file in files_under(&sb.state())
        .into_iter()
        .chain(files_under(&sb.home()))
    {
        let bytes = std::fs::read(&file).unwrap_or_default();
        for form in &member.forms {
            let found = bytes.windows(form.len()).any(|w| w == form.as_bytes());
            assert!(
                !found,
                "{}: `{form}` is in the bytes of {}",
                member.name,
                file.display()
            );
        }
    }
}

/// An HTTP server on 127.0.0.1 that answers every request with its own request head: an echo
/// server reflecting the headers it was sent, and a proxy error page quoting them.
fn echo_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                match conn.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
            let head = String::from_utf8_lossy(&buf).into_owned();
            let body = format!("you sent:\n{head}");
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

fn b64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

#[test]
fn a_token_inside_an_mcp_header_is_not_printed_bare_by_printenv() {
    let token = credential("mcpH");
    check(&Member {
        name: "mcp header Bearer ${VAR}, shell printenv",
        config: format!(
            "mcp_servers:\n  gh:\n    url: http://127.0.0.1:9/mcp\n    headers:\n      Authorization: \"Bearer ${{E2E_GH_AUTH}}\"\n{}",
            passthrough(&["E2E_GH_AUTH"])
        ),
        env: vec![("E2E_GH_AUTH", token.clone())],
        tool: "shell",
        args: shell("printenv E2E_GH_AUTH; echo \"again: $E2E_GH_AUTH\""),
        forms: vec![token],
        files: vec![],
    });
}

#[test]
fn a_token_inside_an_mcp_servers_env_value_is_not_printed_by_env() {
    let token = credential("mcpE");
    check(&Member {
        name: "mcp env `token ${VAR}`, shell env",
        config: format!(
            "mcp_servers:\n  local:\n    command: /bin/true\n    env:\n      UPSTREAM_AUTH: \"token ${{E2E_UPSTREAM}}\"\n{}",
            passthrough(&["E2E_UPSTREAM"])
        ),
        env: vec![("E2E_UPSTREAM", token.clone())],
        tool: "shell",
        args: shell("env | grep E2E_UPSTREAM"),
        forms: vec![token],
        files: vec![],
    });
}

#[test]
fn transcribe_api_key_is_redacted_from_a_file_the_agent_reads() {
    let key = credential("stt");
    check(&Member {
        name: "transcribe.api_key, read_file of a checked-out file",
        config: "transcribe:\n  api_base: http://127.0.0.1:9/v1\n  api_key: \"${E2E_STT}\"\n"
            .to_string(),
        env: vec![("E2E_STT", key.clone())],
        tool: "read_file",
        args: r#"{"path": "deploy.txt"}"#.to_string(),
        forms: vec![key.clone()],
        files: vec![("deploy.txt", format!("speech server\nstt {key}\n"))],
    });
}

#[test]
fn a_key_the_shell_writes_to_a_file_and_reads_back_is_redacted() {
    let key = credential("file");
    check(&Member {
        name: "web_search api_key, shell write then cat",
        config: format!(
            "web_search:\n  backends:\n    - type: brave\n      api_key: \"${{E2E_SEARCH}}\"\n{}",
            passthrough(&["E2E_SEARCH"])
        ),
        env: vec![("E2E_SEARCH", key.clone())],
        tool: "shell",
        args: shell("echo \"$E2E_SEARCH\" > saved.txt && cat saved.txt"),
        forms: vec![key],
        files: vec![],
    });
}

#[test]
fn a_backend_api_key_is_redacted_in_base64_of_user_colon_key() {
    let key = credential("llm");
    // `user:KEY`, `ab:KEY` and `KEY:` put the key at each of base64's three alignments.
    let encoded: Vec<String> = ["user:", "ab:", ""]
        .iter()
        .map(|p| b64(&format!("{p}{key}{}", if p.is_empty() { ":" } else { "" })))
        .collect();
    let mut forms = vec![key.clone()];
    forms.extend(encoded.iter().cloned());
    check(&Member {
        name: "backends[].api_key, base64 of basic-auth pairs",
        config: format!(
            "backends:\n  - name: local\n    type: openai\n    api_base: http://127.0.0.1:9/v1\n    api_key: \"${{E2E_LLM}}\"\n{}",
            passthrough(&["E2E_LLM"])
        ),
        env: vec![("E2E_LLM", key.clone())],
        tool: "shell",
        args: shell(
            "printf 'user:%s' \"$E2E_LLM\" | base64; printf 'ab:%s' \"$E2E_LLM\" | base64; printf '%s:' \"$E2E_LLM\" | base64",
        ),
        forms,
        files: vec![],
    });
}

#[test]
fn a_service_token_reflected_by_an_echo_server_is_redacted() {
    let token = credential("r8r");
    let port = echo_server();
    check(&Member {
        name: "services.r8r.token, http_request to a header echo server",
        config: format!(
            "services:\n  r8r:\n    url: http://127.0.0.1:{port}\n    token: \"${{E2E_R8R}}\"\nsecurity:\n  tool_policies:\n    http_request:\n      grants:\n        network:\n          allow_private: true\n          endpoints:\n            - host: 127.0.0.1\n"
        ),
        env: vec![("E2E_R8R", token.clone())],
        tool: "http_request",
        args: serde_json::json!({
            "url": format!("http://127.0.0.1:{port}/echo"),
            "method": "GET",
            "headers": {"X-Forward": token, "X-Basic": format!("Basic {}", b64(&format!("me:{token}")))}
        })
        .to_string(),
        forms: vec![token.clone(), b64(&format!("me:{token}"))],
        files: vec![],
    });
}

#[test]
fn a_webhook_channel_header_token_is_redacted_in_the_url_encoded_form() {
    let token = format!("{}/+x", credential("hook"));
    let encoded = token.replace('/', "%2F").replace('+', "%2B");
    check(&Member {
        name: "channels.NAME.headers `Bearer ${VAR}`, url-encoded by the shell",
        config: format!(
            "channels:\n  ops:\n    type: webhook\n    url: http://127.0.0.1:9/hook\n    headers:\n      Authorization: \"Bearer ${{E2E_HOOK}}\"\n{}",
            passthrough(&["E2E_HOOK"])
        ),
        env: vec![("E2E_HOOK", token.clone())],
        tool: "shell",
        args: shell("printf 'q=%s\\n' \"$E2E_HOOK\" | sed -e 's#/#%2F#g' -e 's#+#%2B#g'; printenv E2E_HOOK"),
        forms: vec![token, encoded],
        files: vec![],
    });
}

#[test]
fn a_model_that_makes_a_tool_print_the_token_sees_and_stores_only_the_redaction() {
    let token = credential("run");
    let Some(llm) = FakeLlm::start(concat!(
        "rules:\n",
        "  - name: answer\n    when: {tool_result_contains: \"redacted\"}\n    respond: {content: \"The tool printed a redacted value.\"}\n",
        "  - name: ask\n    when: {messages_contain: \"show\"}\n    respond:\n      tool_calls:\n        - {name: shell, arguments: {command: \"printenv E2E_RUN_AUTH\"}}\n",
    )) else {
        return;
    };
    for json in [false, true] {
        let sb = Sandbox::new();
        let config = sb.config(&format!(
            "{}mcp_servers:\n  gh:\n    url: http://127.0.0.1:9/mcp\n    headers:\n      Authorization: \"Bearer ${{E2E_RUN_AUTH}}\"\n{}",
            llm.backend_yaml("openai", true),
            passthrough(&["E2E_RUN_AUTH"])
        ));
        // A prompt of its own per run: fakellm tells conversations apart by their text.
        let prompt = format!("show the header (json: {json})");
        let mut args = vec!["run", "-m", prompt.as_str(), "--yes"];
        if json {
            args.push("--json");
        }
        let mut cmd = sb.tackle(&config, &args);
        cmd.env("E2E_RUN_AUTH", &token);
        let r = run(cmd);
        assert_eq!(r.code, 0, "{r}");
        assert!(
            r.stdout.contains("redacted value"),
            "the model saw the redaction:\n{r}"
        );
        let forms = vec![token.clone()];
        assert_absent(
            "tackle run",
            "run output",
            &format!("{}{}", r.stdout, r.stderr),
            &forms,
        );
        let audit = run(sb.tackle(&config, &["audit", "--json"]));
        assert!(audit.stdout.contains("shell"), "{audit}\n{r}");
        assert_absent("tackle run", "tackle audit --json", &audit.stdout, &forms);
        for file in files_under(&sb.state()) {
            let bytes = std::fs::read(&file).unwrap_or_default();
            assert!(
                !bytes.windows(token.len()).any(|w| w == token.as_bytes()),
                "the token is in the bytes of {}",
                file.display()
            );
        }
    }
}

/// An MCP server that dies quoting its environment on stderr, as a server refused upstream
/// does: its last stderr line goes into the start-up warning and `tackle doctor`'s report. It
/// waits a second before it exits so that line is read before the pipe closes.
const LEAKY_SERVER: &str = "mcp_servers:\n  broken:\n    command: /bin/sh\n    args: [\"-c\", \"echo \\\"upstream refused $UPSTREAM\\\" >&2; sleep 1; exit 1\"]\n    env:\n      UPSTREAM: \"Bearer ${E2E_DOC}\"\n";

#[test]
fn doctor_and_log_lines_do_not_print_a_token_a_failing_mcp_server_quotes() {
    let token = credential("doc");
    let sb = Sandbox::new();
    let config = sb.config(LEAKY_SERVER);
    for json in [false, true] {
        let mut args = vec!["doctor"];
        if json {
            args.push("--json");
        }
        let mut cmd = sb.tackle(&config, &args);
        cmd.env("E2E_DOC", &token);
        let r = run(cmd);
        assert!(
            r.stdout.contains("upstream refused Bearer [redacted"),
            "the server's line is reported, redacted:\n{r}"
        );
        assert_absent(
            "doctor",
            "doctor output",
            &format!("{}{}", r.stdout, r.stderr),
            std::slice::from_ref(&token),
        );
    }
}

#[test]
fn a_warning_logged_while_a_tool_runs_does_not_print_the_token() {
    let token = credential("log");
    let sb = Sandbox::new();
    let config = sb.config(&LEAKY_SERVER.replace("E2E_DOC", "E2E_LOG"));
    // The server is retried in the background while this call waits for its tools.
    let mut cmd = sb.tackle(
        &config,
        &["tools", "call", "broken__anything", "{}", "--json"],
    );
    cmd.env("E2E_LOG", &token);
    let r = run(cmd);
    assert!(
        r.stderr.contains("upstream refused Bearer [redacted"),
        "the warning is logged, redacted:\n{r}"
    );
    assert_absent(
        "log",
        "stderr",
        &format!("{}{}", r.stdout, r.stderr),
        &[token],
    );
}

/// A plugin whose tool is given a credential from Tackle's environment (`env` in its manifest)
/// and prints it, as a tool that logs its own request does.
fn leaky_plugin(sb: &Sandbox) {
    use std::os::unix::fs::PermissionsExt;
    let dir = sb.home().join(".config/tackle/plugins/leaky");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let script = dir.join("show.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\necho \"calling upstream with $E2E_PLUGIN_CRED\"\necho \"auth: $E2E_PLUGIN_CRED\" >&2\n",
    )
    .expect("script");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let manifest = serde_json::json!({
        "name": "leaky", "version": "1", "description": "prints its credential",
        "tools": [{
            "name": "leaky_call", "description": "Call upstream",
            "parameters": {"type": "object", "properties": {}, "additionalProperties": false},
            "command": ["./show.sh"],
            "env": ["E2E_PLUGIN_CRED"]
        }]
    });
    std::fs::write(dir.join("plugin.json"), manifest.to_string()).expect("manifest");
}

#[test]
fn a_plugin_credential_from_the_environment_is_not_printed() {
    let cred = credential("plug");
    let sb = Sandbox::new();
    leaky_plugin(&sb);
    let config = sb.config("");
    for json in [true, false] {
        let mut argv = vec!["tools", "call", "leaky_call", "{}", "--yes"];
        if json {
            argv.push("--json");
        }
        let mut cmd = sb.tackle(&config, &argv);
        cmd.env("E2E_PLUGIN_CRED", &cred);
        let r = run(cmd);
        assert!(r.stdout.contains("calling upstream with [redacted"), "{r}");
        assert_absent(
            "plugin env",
            "output",
            &format!("{}{}", r.stdout, r.stderr),
            std::slice::from_ref(&cred),
        );
    }
    let audit = run(sb.tackle(&config, &["audit", "--json"]));
    assert!(audit.stdout.contains("leaky_call"), "{audit}");
    assert_absent(
        "plugin env",
        "tackle audit --json",
        &audit.stdout,
        std::slice::from_ref(&cred),
    );
    for file in files_under(&sb.state()) {
        let bytes = std::fs::read(&file).unwrap_or_default();
        assert!(
            !bytes.windows(cred.len()).any(|w| w == cred.as_bytes()),
            "{}",
            file.display()
        );
    }
}

#[test]
fn a_credential_passed_through_to_commands_is_not_printed() {
    // Not in any config key: the operator lets commands see it (`security.env_passthrough`),
    // and its name says what it is.
    let password = credential("pgpw");
    check(&Member {
        name: "env_passthrough PGPASSWORD-like variable, shell printenv",
        config: passthrough(&["E2E_DB_PASSWORD", "E2E_PLAIN"]),
        env: vec![
            ("E2E_DB_PASSWORD", password.clone()),
            ("E2E_PLAIN", "plain-visible-value".to_string()),
        ],
        tool: "shell",
        args: shell("printenv E2E_DB_PASSWORD; printenv E2E_PLAIN"),
        forms: vec![password],
        files: vec![],
    });
}

#[test]
fn a_backend_that_quotes_the_key_in_its_error_does_not_print_it() {
    let key = credential("bk");
    let rules = format!(
        "rules:\n  - name: nope\n    respond: {{status: 401, error: \"Incorrect API key provided: {key}. You can find your key at example.com\"}}\n"
    );
    let Some(llm) = FakeLlm::start(&rules) else {
        return;
    };
    for json in [false, true] {
        let sb = Sandbox::new();
        let config = sb.config(&format!(
            "backends:\n  - name: fake\n    type: openai\n    api_base: http://127.0.0.1:{}/v1\n    api_key: \"${{E2E_BACKEND}}\"\n    stream: false\n    models:\n      - name: fake-model\n",
            llm.port
        ));
        let prompt = format!("hello (json: {json})");
        let mut args = vec!["run", "-m", prompt.as_str()];
        if json {
            args.push("--json");
        }
        let mut cmd = sb.tackle(&config, &args);
        cmd.env("E2E_BACKEND", &key);
        let r = run(cmd);
        assert_ne!(r.code, 0, "{r}");
        assert_absent(
            "backend 401",
            "run output",
            &format!("{}{}", r.stdout, r.stderr),
            std::slice::from_ref(&key),
        );
        assert!(
            format!("{}{}", r.stdout, r.stderr).contains("Incorrect API key provided: [redacted"),
            "the server's message is shown, redacted:\n{r}"
        );
        for file in files_under(&sb.state()) {
            let bytes = std::fs::read(&file).unwrap_or_default();
            assert!(
                !bytes.windows(key.len()).any(|w| w == key.as_bytes()),
                "the key is in the bytes of {}",
                file.display()
            );
        }
    }
}

#[test]
fn a_key_in_a_calls_arguments_is_not_printed_on_the_terminal() {
    // The model quotes a token it saw in a call of its own: the `→` line shows the call, not
    // the token (as the audit log and the model's context do).
    let token = "ghp_Zq8rT3vW9yX1aB2cD4eF6gH7iJ0kL5mN8pQs";
    let rules = format!(
        "rules:\n  - name: done\n    when: {{tool_result_contains: \"\"}}\n    respond: {{content: \"done\"}}\n  - name: leak\n    when: {{messages_contain: \"go\"}}\n    respond:\n      tool_calls:\n        - {{name: http_request, arguments: {{method: GET, url: \"http://127.0.0.1:9/x?t={token}\"}}}}\n"
    );
    let Some(llm) = FakeLlm::start(&rules) else {
        return;
    };
    let sb = Sandbox::new();
    let config = sb.config(&llm.backend_yaml("openai", false));
    let r = run(sb.tackle(&config, &["run", "-m", "go"]));
    assert!(r.stderr.contains("→ http_request"), "{r}");
    assert!(
        !r.stderr.contains(token) && !r.stdout.contains(token),
        "{r}"
    );
}
