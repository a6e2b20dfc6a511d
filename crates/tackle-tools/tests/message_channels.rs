//! The `message` tool's provider channels end to end: the real host (operator destinations,
//! pinning, timeouts) in front of local stand-ins for the Telegram Bot, Slack Web, Discord and
//! WhatsApp Cloud APIs. Each stand-in checks method, path, auth header and the exact JSON body
//! as the real API documents them, and answers with the shapes those APIs send. Every output
//! is grepped for the tokens.

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tackle_host::{HostConfig, NativeHostProvider};
use tackle_protocol::config::ChannelConfig;
use tackle_protocol::{
    CallScope, ErrorKind, HostProvider, Tool, ToolContext, ToolError, ToolOutput,
};
use wiremock::matchers::{body_json, header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const TG_TOKEN: &str = "123456:AAE-SECRET_telegram_token";
const SLACK_TOKEN: &str = "xoxb-SECRET-slack-token";
const DISCORD_TOKEN: &str = "MTIz.SECRET-discord-token";
const WA_TOKEN: &str = "EAAG-SECRET-whatsapp-token";
const HOOK_TOKEN: &str = "hook-SECRET-path-token";

struct Setup {
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    cx: ToolContext,
    tool: Arc<dyn Tool>,
    seen: Mutex<Vec<String>>,
}

/// `channels:` as an operator writes it, every API base pointing at `base`.
fn channels(base: &str, timeout_secs: u64) -> BTreeMap<String, ChannelConfig> {
    let yaml = format!(
        r#"
tg: {{type: telegram, bot_token: "{TG_TOKEN}", chat_id: "-100123", api_base: "{base}", timeout_secs: {timeout_secs}}}
team: {{type: slack, bot_token: "{SLACK_TOKEN}", channel: C0123ABC, api_base: "{base}/api/", timeout_secs: {timeout_secs}}}
guild: {{type: discord, bot_token: "{DISCORD_TOKEN}", channel_id: "111", api_base: "{base}/api/v10", timeout_secs: {timeout_secs}}}
wa: {{type: whatsapp, access_token: "{WA_TOKEN}", phone_number_id: "106540352242922", to: "14155550123", api_base: "{base}", timeout_secs: {timeout_secs}}}
ops: {{type: webhook, url: "{base}/hook/{HOOK_TOKEN}", timeout_secs: {timeout_secs}}}
"#
    );
    serde_saphyr::from_str(&yaml).unwrap_or_else(|e| panic!("channels: {e}"))
}

impl Setup {
    /// A host whose operator list is the channels' own destinations (as the binary builds
    /// it), with no network grant at all.
    fn new(channels: BTreeMap<String, ChannelConfig>) -> Self {
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
        Self {
            _dirs: (ws, state),
            cx: ToolContext::new(&scope, "test", host),
            tool,
            seen: Mutex::default(),
        }
    }

    async fn on(server: &MockServer) -> Self {
        Self::new(channels(&server.uri(), 5))
    }

    async fn call(&self, args: Value) -> Result<ToolOutput, ToolError> {
        let out = self.tool.call(args, &self.cx).await;
        let text = match &out {
            Ok(o) => format!("{}\n{:?}", o.content, o.structured),
            Err(e) => format!("{e:?}"),
        };
        self.seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(text);
        out
    }

    async fn ok(&self, args: Value) -> ToolOutput {
        self.call(args)
            .await
            .unwrap_or_else(|e| panic!("{:?}: {}", e.kind, e.message))
    }

    async fn err(&self, args: Value) -> ToolError {
        match self.call(args).await {
            Ok(o) => panic!("expected an error, got {}", o.content),
            Err(e) => e,
        }
    }
}

impl Drop for Setup {
    /// Whatever a test did, no token came back in any result or error.
    fn drop(&mut self) {
        let all = self
            .seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .join("\n");
        for secret in [
            TG_TOKEN,
            "AAE-SECRET",
            SLACK_TOKEN,
            DISCORD_TOKEN,
            WA_TOKEN,
            HOOK_TOKEN,
        ] {
            assert!(!all.contains(secret), "{secret} leaked:\n{all}");
        }
    }
}

fn structured(out: &ToolOutput) -> Value {
    out.structured.clone().unwrap_or(Value::Null)
}

#[tokio::test]
async fn telegram_sends_to_the_configured_chat_or_the_models_and_replies() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(format!("/bot{TG_TOKEN}/sendMessage")))
        .and(body_json(
            json!({"chat_id": -100123, "text": "deploy done"}),
        ))
        .respond_with(ResponseTemplate::new(200).set_body_json(
            json!({"ok": true, "result": {"message_id": 42, "chat": {"id": -100123}}}),
        ))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(format!("/bot{TG_TOKEN}/sendMessage")))
        .and(body_json(
            json!({"chat_id": "@release_notes", "text": "v2", "reply_to_message_id": 7}),
        ))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"ok": true, "result": {"message_id": 43}})),
        )
        .expect(1)
        .mount(&server)
        .await;
    let s = Setup::on(&server).await;
    let out = s
        .ok(json!({"content": "deploy done", "channel": "telegram"}))
        .await;
    assert_eq!(out.content, "Sent to tg:-100123 (message id 42).");
    assert_eq!(
        structured(&out),
        json!({"channel": "tg", "chat_id": "-100123", "message_id": "42"})
    );
    let out = s
        .ok(json!({"content": "v2", "channel": "tg", "chat_id": "@release_notes", "reply_to": "7"}))
        .await;
    assert_eq!(out.content, "Sent to tg:@release_notes (message id 43).");
}

#[tokio::test]
async fn telegram_inline_keyboards_are_rebuilt_from_the_buttons() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(format!("/bot{TG_TOKEN}/sendMessage")))
        .and(body_json(json!({
            "chat_id": -100123,
            "text": "Approve the deploy?",
            "reply_markup": {"inline_keyboard": [
                [{"text": "Yes", "callback_data": "deploy:yes"}, {"text": "No", "callback_data": "deploy:no"}],
                [{"text": "Logs", "url": "https://ci.example/run/1"}]
            ]}
        })))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"ok": true, "result": {"message_id": 9}})),
        )
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(body_json(json!({
            "chat_id": -100123,
            "text": "Pick one",
            "reply_markup": {"inline_keyboard": [[{"text": "A", "callback_data": "a"}]]}
        })))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"ok": true, "result": {"message_id": 10}})),
        )
        .expect(1)
        .mount(&server)
        .await;
    let s = Setup::on(&server).await;
    let out = s
        .ok(json!({"content": "Approve the deploy?", "channel": "tg", "action": "inline_keyboard",
            "payload": {"buttons": [
                [{"text": "Yes", "callback_data": "deploy:yes"}, {"text": "No", "callback_data": "deploy:no"}],
                [{"text": "Logs", "url": "https://ci.example/run/1", "extra": "dropped"}]
            ]}}))
        .await;
    assert!(out.content.contains("message id 9"), "{}", out.content);
    // A flat list is one row.
    s.ok(
        json!({"content": "Pick one", "channel": "tg", "action": "inline_keyboard",
        "payload": {"buttons": [{"text": "A", "callback_data": "a"}]}}),
    )
    .await;
    for buttons in [
        json!([]),
        json!([[{"text": "x"}]]),
        json!([[{"text": "x", "callback_data": "a", "url": "https://x"}]]),
        json!([[{"text": "x", "url": "javascript:alert(1)"}]]),
        json!([[{"text": "", "callback_data": "a"}]]),
        json!("Yes,No"),
    ] {
        let e = s
            .err(json!({"content": "c", "channel": "tg", "action": "inline_keyboard", "payload": {"buttons": buttons}}))
            .await;
        assert_eq!(
            e.kind,
            ErrorKind::InvalidArguments,
            "{buttons}: {}",
            e.message
        );
    }
}

#[tokio::test]
async fn telegram_refusals_carry_the_description_and_never_the_token_or_its_url() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(format!("/bot{TG_TOKEN}/sendMessage")))
        .respond_with(ResponseTemplate::new(400).set_body_json(json!({
            "ok": false, "error_code": 400,
            "description": format!("Bad Request: chat not found (bot{TG_TOKEN})")
        })))
        .mount(&server)
        .await;
    let s = Setup::on(&server).await;
    let e = s.err(json!({"content": "x", "channel": "tg"})).await;
    assert_eq!(e.kind, ErrorKind::Failed);
    assert!(
        e.message
            .starts_with("Telegram answered HTTP 400: Bad Request: chat not found"),
        "{}",
        e.message
    );

    // `ok: false` with a 200 is a refusal too.
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(
            json!({"ok": false, "description": "Forbidden: bot was blocked by the user"}),
        ))
        .mount(&server)
        .await;
    let s = Setup::on(&server).await;
    let e = s.err(json!({"content": "x", "channel": "tg"})).await;
    assert!(
        e.message
            .ends_with("Forbidden: bot was blocked by the user"),
        "{}",
        e.message
    );
}

#[tokio::test]
async fn an_unreachable_or_slow_api_fails_without_showing_the_tokened_url() {
    // A port nobody listens on: the connection error names the URL, token and all.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
        l.local_addr().unwrap_or_else(|e| panic!("{e}")).port()
    };
    let s = Setup::new(channels(&format!("http://127.0.0.1:{port}"), 5));
    for channel in ["tg", "team", "guild", "wa", "ops"] {
        let e = s.err(json!({"content": "x", "channel": channel})).await;
        assert_eq!(e.kind, ErrorKind::Failed, "{channel}: {}", e.message);
    }
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_delay(Duration::from_secs(4))
                .set_body_json(json!({"ok": true, "result": {"message_id": 1}})),
        )
        .mount(&server)
        .await;
    let s = Setup::new(channels(&server.uri(), 1));
    let started = std::time::Instant::now();
    let e = s.err(json!({"content": "x", "channel": "tg"})).await;
    assert_eq!(e.kind, ErrorKind::Timeout, "{}", e.message);
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn slack_posts_text_threads_and_blocks_and_reads_ok_false_from_a_200() {
    let server = MockServer::start().await;
    let blocks = json!([
        {"type": "header", "text": {"type": "plain_text", "text": "Deploy"}},
        {"type": "section", "text": {"type": "mrkdwn", "text": "*v2* is live"}}
    ]);
    Mock::given(method("POST"))
        .and(path("/api/chat.postMessage"))
        .and(header(
            "authorization",
            format!("Bearer {SLACK_TOKEN}").as_str(),
        ))
        .and(body_json(
            json!({"channel": "C0123ABC", "text": "hi", "thread_ts": "1712345678.000100"}),
        ))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(
                json!({"ok": true, "channel": "C0123ABC", "ts": "1712345679.000200"}),
            ),
        )
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/api/chat.postMessage"))
        .and(header(
            "authorization",
            format!("Bearer {SLACK_TOKEN}").as_str(),
        ))
        .and(body_json(
            json!({"channel": "#ops", "text": "v2 is live", "blocks": blocks}),
        ))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"ok": true, "ts": "1712345680.000300"})),
        )
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/api/chat.postMessage"))
        .and(body_json(json!({"channel": "C999", "text": "x"})))
        .respond_with(ResponseTemplate::new(200).set_body_json(
            json!({"ok": false, "error": "channel_not_found", "token": SLACK_TOKEN}),
        ))
        .mount(&server)
        .await;
    let s = Setup::on(&server).await;
    let out = s
        .ok(json!({"content": "hi", "channel": "slack", "reply_to": "1712345678.000100"}))
        .await;
    assert_eq!(
        out.content,
        "Sent to team:C0123ABC (message id 1712345679.000200)."
    );
    let out = s
        .ok(
            json!({"content": "v2 is live", "channel": "slack:team", "chat_id": "#ops",
            "action": "rich_message", "payload": {"blocks": blocks}}),
        )
        .await;
    assert_eq!(structured(&out)["message_id"], "1712345680.000300");
    let e = s
        .err(json!({"content": "x", "channel": "team", "chat_id": "C999"}))
        .await;
    assert_eq!(e.kind, ErrorKind::Failed);
    assert_eq!(e.message, "Slack answered HTTP 200: channel_not_found");
    for payload in [
        json!({}),
        json!({"blocks": []}),
        json!({"blocks": [{"text": "no type"}]}),
    ] {
        let e = s
            .err(json!({"content": "c", "channel": "team", "action": "rich_message", "payload": payload}))
            .await;
        assert_eq!(e.kind, ErrorKind::InvalidArguments, "{payload}");
    }
}

#[tokio::test]
async fn discord_sends_replies_and_reacts_with_an_encoded_emoji() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/api/v10/channels/111/messages"))
        .and(header(
            "authorization",
            format!("Bot {DISCORD_TOKEN}").as_str(),
        ))
        .and(body_json(
            json!({"content": "shipped", "message_reference": {"message_id": "456"}}),
        ))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"id": "789", "channel_id": "111"})),
        )
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("PUT"))
        .and(path(
            "/api/v10/channels/222/messages/456/reactions/%F0%9F%91%8D/@me",
        ))
        .and(header(
            "authorization",
            format!("Bot {DISCORD_TOKEN}").as_str(),
        ))
        .respond_with(ResponseTemplate::new(204))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("PUT"))
        .and(path(
            "/api/v10/channels/111/messages/457/reactions/party_blob%3A1234/@me",
        ))
        .respond_with(ResponseTemplate::new(204))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/api/v10/channels/333/messages"))
        .respond_with(
            ResponseTemplate::new(403)
                .set_body_json(json!({"message": "Missing Access", "code": 50001})),
        )
        .mount(&server)
        .await;
    let s = Setup::on(&server).await;
    let out = s
        .ok(json!({"content": "shipped", "channel": "discord", "reply_to": "456"}))
        .await;
    assert_eq!(out.content, "Sent to guild:111 (message id 789).");
    let out = s
        .ok(
            json!({"content": "", "channel": "guild", "chat_id": "222", "action": "react",
            "payload": {"emoji": "👍", "message_id": "456"}}),
        )
        .await;
    assert_eq!(out.content, "Reacted in guild:222 (message id 456).");
    // The message may be named by `reply_to` instead.
    s.ok(
        json!({"content": "", "channel": "guild", "action": "react", "reply_to": "457",
        "payload": {"emoji": "party_blob:1234"}}),
    )
    .await;
    let e = s
        .err(json!({"content": "x", "channel": "guild", "chat_id": "333"}))
        .await;
    assert_eq!(e.kind, ErrorKind::Failed);
    assert_eq!(e.message, "Discord answered HTTP 403: Missing Access");
    for (payload, reply_to) in [
        (json!({"message_id": "456"}), None),
        (json!({"emoji": "👍"}), None),
        (json!({"emoji": "👍", "message_id": "1"}), Some("2")),
        (json!({"emoji": 1, "message_id": "1"}), None),
    ] {
        let e = s
            .err(json!({"content": "", "channel": "guild", "action": "react", "payload": payload, "reply_to": reply_to}))
            .await;
        assert_eq!(
            e.kind,
            ErrorKind::InvalidArguments,
            "{payload}: {}",
            e.message
        );
    }
}

#[tokio::test]
async fn model_named_ids_cannot_steer_a_request_to_another_path() {
    let server = MockServer::start().await;
    Mock::given(wiremock::matchers::any())
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"ok": true, "id": "1"})))
        .mount(&server)
        .await;
    let s = Setup::on(&server).await;
    let tricks = [
        "111/../../users/@me",
        "111?x=1",
        "111#frag",
        "..",
        "%2e%2e",
        "111%2F..",
        "111/",
        "\\..\\x",
        "111 222",
    ];
    for t in tricks {
        for args in [
            json!({"content": "x", "channel": "guild", "chat_id": t}),
            json!({"content": "x", "channel": "guild", "reply_to": t}),
            json!({"content": "x", "channel": "guild", "action": "react", "payload": {"emoji": "👍", "message_id": t}}),
            json!({"content": "x", "channel": "guild", "action": "react", "payload": {"emoji": t, "message_id": "1"}}),
            json!({"content": "x", "channel": "tg", "chat_id": t}),
            json!({"content": "x", "channel": "tg", "reply_to": t}),
            json!({"content": "x", "channel": "team", "chat_id": t}),
            json!({"content": "x", "channel": "team", "reply_to": t}),
            json!({"content": "x", "channel": "wa", "chat_id": t}),
        ] {
            let e = s.err(args.clone()).await;
            assert_eq!(e.kind, ErrorKind::InvalidArguments, "{args}: {}", e.message);
        }
    }
    for emoji in ["👍/../..", "👍?x", "👍#", "a:1/../2", "../👍"] {
        let e = s
            .err(json!({"content": "x", "channel": "guild", "action": "react", "payload": {"emoji": emoji, "message_id": "1"}}))
            .await;
        assert_eq!(e.kind, ErrorKind::InvalidArguments, "{emoji}");
    }
    let got = server.received_requests().await.unwrap_or_default();
    assert!(
        got.is_empty(),
        "requests went out: {:?}",
        got.iter().map(|r| r.url.to_string()).collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn whatsapp_channels_send_through_the_cloud_api_path() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v18.0/106540352242922/messages"))
        .and(header(
            "authorization",
            format!("Bearer {WA_TOKEN}").as_str(),
        ))
        .and(body_json(json!({
            "messaging_product": "whatsapp", "recipient_type": "individual",
            "to": "14155550123", "type": "text",
            "text": {"preview_url": false, "body": "order shipped"}
        })))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "messaging_product": "whatsapp",
            "contacts": [{"input": "14155550123", "wa_id": "14155550123"}],
            "messages": [{"id": "wamid.T1"}]
        })))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v18.0/106540352242922/messages"))
        .and(body_json(json!({
            "messaging_product": "whatsapp", "recipient_type": "individual",
            "to": "4915112345678", "type": "text",
            "text": {"preview_url": false, "body": "x"}
        })))
        .respond_with(ResponseTemplate::new(400).set_body_json(json!({
            "error": {"message": format!("(#131030) Recipient not in allowed list {WA_TOKEN}"), "code": 131030}
        })))
        .mount(&server)
        .await;
    let s = Setup::on(&server).await;
    let out = s
        .ok(json!({"content": "order shipped", "channel": "whatsapp"}))
        .await;
    assert_eq!(out.content, "Sent to wa:14155550123 (message id wamid.T1).");
    let e = s
        .err(json!({"content": "x", "channel": "wa", "chat_id": "+49 151 12345678"}))
        .await;
    assert_eq!(e.kind, ErrorKind::Failed);
    assert!(
        e.message
            .starts_with("WhatsApp answered HTTP 400: (#131030) Recipient not in allowed list"),
        "{}",
        e.message
    );
}

#[tokio::test]
async fn every_action_works_only_on_its_channel_type() {
    let server = MockServer::start().await;
    let s = Setup::on(&server).await;
    let cases = [
        (
            "react",
            json!({"emoji": "👍", "message_id": "1"}),
            "discord",
            ["tg", "team", "wa", "ops", "session"],
        ),
        (
            "rich_message",
            json!({"blocks": [{"type": "divider"}]}),
            "slack",
            ["tg", "guild", "wa", "ops", "session"],
        ),
        (
            "inline_keyboard",
            json!({"buttons": [[{"text": "a", "callback_data": "a"}]]}),
            "telegram",
            ["team", "guild", "wa", "ops", "session"],
        ),
    ];
    for (action, payload, supported, wrong) in cases {
        for channel in wrong {
            let e = s
                .err(json!({"content": "x", "channel": channel, "action": action, "payload": payload}))
                .await;
            assert_eq!(e.kind, ErrorKind::InvalidArguments);
            assert!(
                e.message
                    .contains(&format!("works on {supported} channels only")),
                "{action} on {channel}: {}",
                e.message
            );
        }
    }
    // A payload field the action does not read is named, not ignored.
    let e = s
        .err(json!({"content": "x", "channel": "tg", "payload": {"buttons": []}}))
        .await;
    assert_eq!(e.kind, ErrorKind::InvalidArguments);
    assert!(e.message.contains("`buttons`"), "{}", e.message);
    let e = s
        .err(json!({"content": "x", "channel": "tg", "action": "shout"}))
        .await;
    assert_eq!(e.kind, ErrorKind::InvalidArguments);
    assert!(server
        .received_requests()
        .await
        .unwrap_or_default()
        .is_empty());
}

#[tokio::test]
async fn an_unconfigured_channel_is_refused_listing_the_configured_ones() {
    let server = MockServer::start().await;
    let s = Setup::on(&server).await;
    for channel in ["pager", "telegram:team", "webhook:tg", "matrix"] {
        let e = s.err(json!({"content": "x", "channel": channel})).await;
        assert_eq!(e.kind, ErrorKind::InvalidArguments);
        assert!(
            e.message.ends_with(
                "configured: `session`, `guild` (discord), `ops` (webhook), `team` (slack), `tg` (telegram), `wa` (whatsapp)"
            ),
            "{}",
            e.message
        );
    }
    // With no channels at all, only the session is offered.
    let bare = Setup::new(BTreeMap::new());
    let e = bare
        .err(json!({"content": "x", "channel": "telegram"}))
        .await;
    assert!(
        e.message.ends_with("configured: `session`"),
        "{}",
        e.message
    );
}

#[tokio::test]
async fn a_webhook_still_posts_its_json_and_its_tokened_url_stays_hidden() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(format!("/hook/{HOOK_TOKEN}")))
        .and(body_json(json!({"content": "hi", "chat_id": "c1", "reply_to": null, "agent": "default", "session": "s"})))
        .respond_with(ResponseTemplate::new(204))
        .expect(1)
        .mount(&server)
        .await;
    let s = Setup::on(&server).await;
    let out = s
        .ok(json!({"content": "hi", "channel": "webhook:ops", "chat_id": "c1"}))
        .await;
    assert_eq!(out.content, "Sent to ops:c1.");
}
