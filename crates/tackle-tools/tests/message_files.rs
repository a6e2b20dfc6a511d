//! The `message` tool's `file`: a workspace file sent as an attachment through the real host
//! to local stand-ins for the Telegram Bot API (`sendDocument`, multipart), the Matrix
//! client-server API (media upload, then an `m.file` event) and Slack's external upload
//! (`files.getUploadURLExternal`, the upload, `files.completeUploadExternal`). Each stand-in
//! keeps what it received, and the bytes are compared with the file. A file the grant does
//! not cover, or too large, is refused before anything is sent.

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use tackle_host::{HostConfig, NativeHostProvider};
use tackle_protocol::config::ChannelConfig;
use tackle_protocol::{CallScope, ErrorKind, HostProvider, Tool, ToolContext, ToolError};
use wiremock::matchers::{header, method, path, path_regex, query_param};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

const TG_TOKEN: &str = "123456:AAE-SECRET_telegram_token";
const SLACK_TOKEN: &str = "xoxb-SECRET-slack-token";
const MX_TOKEN: &str = "syt_SECRET_matrix_token";
/// Not text: every byte value, so nothing on the way may re-encode it.
fn report() -> Vec<u8> {
    (0..=255u8)
        .chain(b"end of report".iter().copied())
        .collect()
}

struct Setup {
    ws: tempfile::TempDir,
    _state: tempfile::TempDir,
    cx: ToolContext,
    tool: Arc<dyn Tool>,
}

impl Setup {
    fn new(base: &str) -> Self {
        let yaml = format!(
            r#"
tg: {{type: telegram, bot_token: "{TG_TOKEN}", chat_id: "-100123", api_base: "{base}"}}
team: {{type: slack, bot_token: "{SLACK_TOKEN}", channel: C0123ABC, api_base: "{base}/api/"}}
mx: {{type: matrix, access_token: "{MX_TOKEN}", homeserver: "{base}"}}
guild: {{type: discord, bot_token: "MTIz.x", channel_id: "111", api_base: "{base}/api/v10"}}
ops: {{type: webhook, url: "{base}/hook"}}
"#
        );
        let channels: BTreeMap<String, ChannelConfig> =
            serde_saphyr::from_str(&yaml).unwrap_or_else(|e| panic!("channels: {e}"));
        let ws = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let state = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let mut config = HostConfig::new(state.path());
        config.operator_hosts = channels.values().map(ChannelConfig::operator_url).collect();
        let scope = CallScope {
            tool: "message".into(),
            session_id: "s".into(),
            agent: "default".into(),
            workspace: ws.path().to_path_buf(),
            grants: Default::default(),
            cancel: Default::default(),
            approved: false,
        };
        let host = NativeHostProvider::new(config).scoped(&scope);
        let tool = tackle_tools::core::extension_with_channels(channels)
            .tools()
            .into_iter()
            .find(|t| t.spec().name == "message")
            .unwrap_or_else(|| panic!("no message tool"));
        std::fs::create_dir_all(ws.path().join("out")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(ws.path().join("out/report.pdf"), report())
            .unwrap_or_else(|e| panic!("{e}"));
        Self {
            ws,
            _state: state,
            cx: ToolContext::new(&scope, "test", host),
            tool,
        }
    }

    async fn call(&self, args: Value) -> Result<String, ToolError> {
        let out = self.tool.call(args, &self.cx).await;
        let shown = match &out {
            Ok(o) => o.content.clone(),
            Err(e) => e.message.clone(),
        };
        for secret in [TG_TOKEN, SLACK_TOKEN, MX_TOKEN, "SECRET"] {
            assert!(!shown.contains(secret), "{secret} leaked: {shown}");
        }
        out.map(|o| o.content)
    }
}

/// The body of the part named `name` of a multipart/form-data request.
fn part(r: &Request, name: &str) -> Option<Vec<u8>> {
    let ct = r.headers.get("content-type")?.to_str().ok()?;
    let boundary = ct.split("boundary=").nth(1)?.trim_matches('"');
    let delim = format!("\r\n--{boundary}");
    let body = [b"\r\n".as_slice(), &r.body].concat();
    let mut rest = body.as_slice();
    while let Some(at) = find(rest, delim.as_bytes()) {
        rest = &rest[at + delim.len()..];
        let head_end = find(rest, b"\r\n\r\n")?;
        let head = String::from_utf8_lossy(&rest[..head_end]);
        let data = &rest[head_end + 4..];
        let end = find(data, delim.as_bytes())?;
        if head.contains(&format!("name=\"{name}\"")) {
            return Some(data[..end].to_vec());
        }
    }
    None
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[tokio::test]
async fn a_message_file_goes_to_telegram_as_a_document_with_its_bytes_and_caption() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(format!("/bot{TG_TOKEN}/sendDocument")))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"ok": true, "result": {"message_id": 77}})),
        )
        .expect(1)
        .mount(&server)
        .await;
    let s = Setup::new(&server.uri());
    let out = s
        .call(json!({"content": "the report", "channel": "tg", "file": "out/report.pdf"}))
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(out, "Sent the file to tg:-100123 (message id 77).");
    let got = server.received_requests().await.unwrap_or_default();
    let r = &got[0];
    assert_eq!(part(r, "document"), Some(report()));
    assert_eq!(
        part(r, "caption").as_deref(),
        Some(b"the report".as_slice())
    );
    assert_eq!(part(r, "chat_id").as_deref(), Some(b"-100123".as_slice()));
    let body = String::from_utf8_lossy(&r.body);
    assert!(
        body.contains("filename=\"report.pdf\"\r\nContent-Type: application/pdf"),
        "{body}"
    );
}

#[tokio::test]
async fn a_message_file_goes_to_matrix_as_an_upload_then_an_m_file_event() {
    let server = MockServer::start().await;
    let auth = format!("Bearer {MX_TOKEN}");
    Mock::given(method("POST"))
        .and(path("/_matrix/media/v3/upload"))
        .and(query_param("filename", "report.pdf"))
        .and(header("authorization", auth.as_str()))
        .and(header("content-type", "application/pdf"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"content_uri": "mxc://fake/abc"})),
        )
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("PUT"))
        .and(path_regex(
            r"^/_matrix/client/v3/rooms/%21room%3Afake/send/m\.room\.message/[^/]+$",
        ))
        .and(header("authorization", auth.as_str()))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"event_id": "$sent"})))
        .expect(2)
        .mount(&server)
        .await;
    let s = Setup::new(&server.uri());
    let out = s
        .call(
            json!({"content": "the report", "channel": "mx", "chat_id": "!room:fake",
            "file": "out/report.pdf", "reply_to": "$asked"}),
        )
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(out, "Sent the file to mx:!room:fake (message id $sent).");
    // Plain text too, now that matrix is a destination.
    s.call(json!({"content": "hello", "channel": "matrix", "chat_id": "!room:fake"}))
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    let got = server.received_requests().await.unwrap_or_default();
    assert_eq!(got[0].body, report());
    let event: Value = serde_json::from_slice(&got[1].body).unwrap_or_default();
    assert_eq!(
        event,
        json!({"msgtype": "m.file", "body": "the report", "filename": "report.pdf",
            "url": "mxc://fake/abc", "info": {"size": 269, "mimetype": "application/pdf"},
            "m.relates_to": {"m.in_reply_to": {"event_id": "$asked"}}})
    );
    let text: Value = serde_json::from_slice(&got[2].body).unwrap_or_default();
    assert_eq!(text, json!({"msgtype": "m.text", "body": "hello"}));
    // No room: Matrix has no default one.
    let e = s
        .call(json!({"content": "x", "channel": "mx"}))
        .await
        .err()
        .map(|e| e.message);
    assert!(e.is_some_and(|m| m.contains("give `chat_id`")));
}

#[tokio::test]
async fn a_message_file_goes_to_slack_in_three_calls_and_the_upload_carries_its_bytes() {
    let server = MockServer::start().await;
    let auth = format!("Bearer {SLACK_TOKEN}");
    Mock::given(method("POST"))
        .and(path("/api/files.getUploadURLExternal"))
        .and(header("authorization", auth.as_str()))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "ok": true, "file_id": "F123", "upload_url": format!("{}/upload/v1/signed?x=1", server.uri()),
        })))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/upload/v1/signed"))
        .and(query_param("x", "1"))
        .respond_with(ResponseTemplate::new(200).set_body_string("OK - 269"))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/api/files.completeUploadExternal"))
        .and(header("authorization", auth.as_str()))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"ok": true, "files": [{"id": "F123"}]})),
        )
        .expect(1)
        .mount(&server)
        .await;
    let s = Setup::new(&server.uri());
    let out = s
        .call(json!({"content": "the report", "channel": "team", "file": "out/report.pdf"}))
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(out, "Sent the file to team:C0123ABC (message id F123).");
    let got = server.received_requests().await.unwrap_or_default();
    let form = String::from_utf8_lossy(&got[0].body).to_string();
    assert_eq!(form, "filename=report.pdf&length=269");
    assert_eq!(got[1].body, report());
    assert!(
        got[1].headers.get("authorization").is_none(),
        "the token went to the upload URL"
    );
    let done: Value = serde_json::from_slice(&got[2].body).unwrap_or_default();
    assert_eq!(
        done,
        json!({"files": [{"id": "F123", "title": "report.pdf"}], "channel_id": "C0123ABC",
            "initial_comment": "the report"})
    );
}

#[tokio::test]
async fn a_message_file_is_not_sent_to_a_slack_upload_url_elsewhere() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/api/files.getUploadURLExternal"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "ok": true, "file_id": "F1", "upload_url": "http://127.0.0.2:9/steal",
        })))
        .mount(&server)
        .await;
    let s = Setup::new(&server.uri());
    let e = s
        .call(json!({"content": "c", "channel": "team", "file": "out/report.pdf"}))
        .await
        .err()
        .map(|e| e.message)
        .unwrap_or_default();
    assert!(e.contains("upload URL on neither"), "{e}");
    assert_eq!(
        server.received_requests().await.unwrap_or_default().len(),
        1
    );
}

#[tokio::test]
async fn a_message_file_outside_the_grant_is_refused_by_the_host_and_nothing_is_sent() {
    let server = MockServer::start().await;
    Mock::given(wiremock::matchers::any())
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"ok": true})))
        .mount(&server)
        .await;
    let s = Setup::new(&server.uri());
    let outside = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "do not send").unwrap_or_else(|e| panic!("{e}"));
    let escape = format!(
        "../{}/secret.txt",
        outside
            .path()
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    );
    let up = s.ws.path().parent().map(|p| p.join(&escape[3..]));
    assert_eq!(
        up.as_deref(),
        Some(secret.as_path()),
        "the test's `..` path is wrong"
    );
    for file in [secret.display().to_string(), escape] {
        for channel in ["tg", "team", "mx"] {
            let e = s
                .call(json!({"content": "c", "channel": channel, "chat_id": if channel == "mx" { "!r:fake" } else { "C0123ABC" }, "file": file}))
                .await
                .err()
                .unwrap_or_else(|| panic!("{file} to {channel} was sent"));
            assert!(
                e.kind == ErrorKind::Denied,
                "{file} to {channel}: {:?} {}",
                e.kind,
                e.message
            );
        }
    }
    assert!(server
        .received_requests()
        .await
        .unwrap_or_default()
        .is_empty());
}

#[tokio::test]
async fn a_message_file_is_refused_where_files_cannot_go_and_over_the_cap() {
    let server = MockServer::start().await;
    Mock::given(wiremock::matchers::any())
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"ok": true})))
        .mount(&server)
        .await;
    let s = Setup::new(&server.uri());
    for channel in ["session", "ops", "guild"] {
        let e = s
            .call(json!({"content": "c", "channel": channel, "file": "out/report.pdf"}))
            .await
            .err()
            .unwrap_or_else(|| panic!("a file went to {channel}"));
        assert_eq!(e.kind, ErrorKind::InvalidArguments, "{}", e.message);
        assert!(
            e.message
                .contains("files go to telegram, matrix and slack channels"),
            "{}",
            e.message
        );
    }
    let e = s
        .call(json!({"content": "c", "channel": "tg", "action": "inline_keyboard", "file": "out/report.pdf"}))
        .await
        .err()
        .map(|e| e.message)
        .unwrap_or_default();
    assert!(e.contains("`file` goes with action `send`"), "{e}");
    let big = std::fs::File::create(s.ws.path().join("big.bin")).unwrap_or_else(|e| panic!("{e}"));
    big.set_len(20 * 1024 * 1024 + 1)
        .unwrap_or_else(|e| panic!("{e}"));
    let e = s
        .call(json!({"content": "c", "channel": "tg", "file": "big.bin"}))
        .await
        .err()
        .map(|e| e.message)
        .unwrap_or_default();
    assert!(e.contains("at most 20 MiB"), "{e}");
    assert!(server
        .received_requests()
        .await
        .unwrap_or_default()
        .is_empty());
}
