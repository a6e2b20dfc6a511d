//! `tackle daemon` reading a Slack app over Socket Mode (`channels.NAME.inbound`, `type:
//! slack`), against a fake Slack written from the public references
//! (https://api.slack.com/apis/socket-mode, https://api.slack.com/methods) on 127.0.0.1: the
//! Web API methods over HTTP, and the WebSocket `apps.connections.open` hands out, which
//! pushes envelopes and records their acknowledgements. Like Slack, it echoes the bot's own
//! posts and edits back as events (which it must not answer).

mod channels_fake;
mod common;

use channels_fake::{
    attach_rules, attachment, audited, channel_audit, Daemon, Request, MARKER_RULES, MESSAGE_AUTO,
    RECALL_RULES,
};
use common::{FakeLlm, Sandbox};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tungstenite::Message;

const BOT_TOKEN: &str = "xoxb-fake-bot-token-must-not-leak";
const APP_TOKEN: &str = "xapp-1-fake-app-token-must-not-leak";
const OWNER: &str = "UOWNER";
const FRIEND: &str = "UFRIEND";
const STRANGER: &str = "USTRANGER";
const BOT_USER: &str = "UTACKLEBOT";
/// The owner's direct-message channel with the app.
const DM: &str = "DOWNER";
/// Seconds a rate-limited answer asks to wait.
const RETRY_AFTER: u64 = 2;

#[derive(Default)]
struct State {
    /// Envelopes waiting for the current socket.
    outbox: VecDeque<Value>,
    next: u64,
    /// The envelope ids written to a socket, and those acknowledged.
    delivered: Vec<String>,
    acked: Vec<String>,
    /// Tickets `apps.connections.open` issued, and the sockets opened with one.
    tickets: Vec<String>,
    sockets: u32,
    /// The socket envelopes go to (the newest); 0 once it was told to disconnect.
    current: u32,
    /// Web API calls but `auth.test` and `apps.connections.open`: (method, body).
    calls: Vec<(String, Value)>,
    /// Methods called with a token Slack refuses.
    refused: Vec<String>,
    /// Requests that carried a token anywhere but the Authorization header.
    leaks: Vec<String>,
    /// Answer this many of the next `chat.postMessage` with 429.
    rate_limit: u32,
    limited: u32,
    /// Upload URLs handed out: (file id, the file name and length asked for).
    upload_urls: Vec<(String, String, String)>,
    /// Bytes posted to an upload URL: (file id, bytes).
    uploads: Vec<(String, Vec<u8>)>,
}

struct FakeSlack {
    port: u16,
    state: Arc<Mutex<State>>,
}

impl FakeSlack {
    fn start() -> Self {
        let state: Arc<Mutex<State>> = Arc::default();
        let ws_port = serve_sockets(Arc::clone(&state));
        let shared = Arc::clone(&state);
        let port =
            channels_fake::serve_headed(Arc::new(move |r: Request| answer(&r, ws_port, &shared)));
        Self { port, state }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap()
    }

    /// An `events_api` envelope carrying `event`.
    fn event(&self, event: Value) {
        push_event(&mut self.state(), event);
    }

    fn message(&self, chat: &str, user: &str, text: &str) {
        self.event(json!({
            "type": "message", "channel": chat, "user": user, "text": text,
            "ts": "1700000000.000100", "channel_type": "im",
        }));
    }

    /// A press of an approval button: an `interactive` `block_actions` envelope.
    fn press(&self, chat: &str, user: &str, value: &str) {
        let mut s = self.state();
        s.next += 1;
        let envelope = json!({
            "envelope_id": format!("env-{}", s.next), "type": "interactive",
            "accepts_response_payload": false,
            "payload": {
                "type": "block_actions", "trigger_id": "1.2.3",
                "user": {"id": user, "username": "someone", "team_id": "T1"},
                "team": {"id": "T1"}, "api_app_id": "A1",
                "container": {"type": "message", "message_ts": "1.0", "channel_id": chat},
                "channel": {"id": chat, "name": "directmessage"},
                "response_url": "https://hooks.slack.invalid/actions/T1/1/x",
                "actions": [{"type": "button", "action_id": "x", "block_id": "b", "value": value, "action_ts": "1.0"}],
            },
        });
        s.outbox.push_back(envelope);
    }

    /// Slack's notice that the socket will close: the client must open a new one.
    fn disconnect(&self) {
        self.state().outbox.push_back(json!({
            "type": "disconnect", "reason": "refresh_requested",
            "debug_info": {"host": "applink-fake"},
        }));
    }

    fn calls(&self) -> Vec<(String, Value)> {
        self.state().calls.clone()
    }

    fn calls_of(&self, method: &str) -> Vec<Value> {
        self.calls()
            .into_iter()
            .filter(|(m, _)| m == method)
            .map(|(_, b)| b)
            .collect()
    }

    fn wait_for<T>(&self, what: &str, found: impl Fn(&[(String, Value)]) -> Option<T>) -> T {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(t) = found(&self.calls()) {
                return t;
            }
            assert!(
                Instant::now() < deadline,
                "no {what}; calls: {:#?}",
                self.calls()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The text (as a reader sees it) of the last message posted or edited in `chat` that
    /// contains `needle`.
    fn wait_text(&self, chat: &str, needle: &str) -> String {
        self.wait_for(&format!("message with {needle:?} in {chat}"), |calls| {
            calls
                .iter()
                .filter(|(m, b)| {
                    (m == "chat.postMessage" || m == "chat.update") && b["channel"] == chat
                })
                .filter_map(|(_, b)| b["text"].as_str().map(unescape))
                .rfind(|t| t.contains(needle))
        })
    }

    /// Waits until every envelope written to a socket was acknowledged.
    fn wait_all_acked(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let (delivered, acked) = {
                let s = self.state();
                (s.delivered.clone(), s.acked.clone())
            };
            let missing: Vec<&String> = delivered.iter().filter(|d| !acked.contains(d)).collect();
            if missing.is_empty() {
                assert!(!delivered.is_empty(), "no envelope was delivered");
                return;
            }
            assert!(
                Instant::now() < deadline,
                "envelopes never acknowledged: {missing:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn push_event(s: &mut State, event: Value) {
    s.next += 1;
    let n = s.next;
    s.outbox.push_back(json!({
        "envelope_id": format!("env-{n}"), "type": "events_api",
        "accepts_response_payload": false, "retry_attempt": 0, "retry_reason": "",
        "payload": {
            "type": "event_callback", "team_id": "T1", "api_app_id": "A1",
            "event_id": format!("Ev{n}"), "event_time": 1_700_000_000, "event": event,
        },
    }));
}

/// Slack escapes `&`, `<` and `>` in a message's text.
fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

fn answer(r: &Request, ws_port: u16, shared: &Mutex<State>) -> (u16, Vec<(String, String)>, Value) {
    let mut s = shared.lock().unwrap();
    let method = r.path.strip_prefix("/api/").unwrap_or_default().to_string();
    let body = String::from_utf8_lossy(&r.raw).to_string();
    for token in [BOT_TOKEN, APP_TOKEN] {
        if r.path.contains(token) || body.contains(token) {
            s.leaks.push(method.clone());
        }
    }
    // The signed upload URL takes the bytes, and no token.
    if let Some(id) = r.path.strip_prefix("/upload/") {
        if r.header("authorization").is_some() {
            s.leaks.push(format!("upload {id}"));
        }
        s.uploads.push((id.to_string(), r.raw.clone()));
        return (200, Vec::new(), json!("OK"));
    }
    // apps.connections.open takes the app-level token, every other method the bot token.
    let token = if method == "apps.connections.open" {
        APP_TOKEN
    } else {
        BOT_TOKEN
    };
    if r.header("authorization") != Some(&format!("Bearer {token}")) {
        s.refused.push(method);
        return (
            200,
            Vec::new(),
            json!({"ok": false, "error": "invalid_auth"}),
        );
    }
    let ok = |v: Value| (200, Vec::new(), v);
    match method.as_str() {
        "auth.test" => ok(json!({
            "ok": true, "url": "https://fake.slack.invalid/", "team": "Fake", "user": "tackle",
            "team_id": "T1", "user_id": BOT_USER, "bot_id": "B1",
        })),
        "apps.connections.open" => {
            let ticket = format!("ticket-{}", s.tickets.len() + 1);
            s.tickets.push(ticket.clone());
            ok(json!({
                "ok": true,
                "url": format!("ws://127.0.0.1:{ws_port}/link/?ticket={ticket}&app_id=A1"),
            }))
        }
        "chat.postMessage" if s.rate_limit > 0 => {
            s.rate_limit -= 1;
            s.limited += 1;
            (
                429,
                vec![("Retry-After".to_string(), RETRY_AFTER.to_string())],
                json!({"ok": false, "error": "ratelimited"}),
            )
        }
        "chat.postMessage" => {
            let ts = format!("1700000001.{:06}", s.calls.len() + 1);
            // Recorded with the ts it was given (`_ts`), to match its edits.
            let mut recorded = r.body.clone();
            recorded["_ts"] = json!(ts);
            s.calls.push((method, recorded));
            let channel = r.body["channel"].clone();
            // Slack tells the app of its own post, as the bot user.
            push_event(
                &mut s,
                json!({"type": "message", "channel": channel, "user": BOT_USER, "bot_id": "B1",
                       "text": r.body["text"], "ts": ts}),
            );
            ok(json!({"ok": true, "channel": channel, "ts": ts,
                      "message": {"type": "message", "text": r.body["text"], "user": BOT_USER, "ts": ts}}))
        }
        "chat.update" => {
            s.calls.push((method, r.body.clone()));
            let channel = r.body["channel"].clone();
            push_event(
                &mut s,
                json!({"type": "message", "subtype": "message_changed", "channel": channel,
                       "message": {"user": BOT_USER, "text": r.body["text"], "ts": r.body["ts"]}}),
            );
            ok(json!({"ok": true, "channel": channel, "ts": r.body["ts"], "text": r.body["text"]}))
        }
        "files.getUploadURLExternal" => {
            let form: std::collections::HashMap<String, String> =
                form_urlencoded::parse(&r.raw).into_owned().collect();
            let id = format!("F{}", s.upload_urls.len() + 1);
            let field = |k: &str| form.get(k).cloned().unwrap_or_default();
            s.upload_urls
                .push((id.clone(), field("filename"), field("length")));
            let host = r.header("host").unwrap_or_default();
            ok(
                json!({"ok": true, "file_id": id, "upload_url": format!("http://{host}/upload/{id}")}),
            )
        }
        "files.completeUploadExternal" => {
            s.calls.push((method, r.body.clone()));
            ok(json!({"ok": true, "files": r.body["files"]}))
        }
        "chat.postEphemeral" => {
            s.calls.push((method, r.body.clone()));
            ok(json!({"ok": true, "message_ts": "1700000002.000001"}))
        }
        _ => ok(json!({"ok": false, "error": "unknown_method"})),
    }
}

/// The Socket Mode endpoint: a socket per valid ticket; the newest takes the envelopes.
fn serve_sockets(state: Arc<Mutex<State>>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let state = Arc::clone(&state);
            std::thread::spawn(move || socket(conn, &state));
        }
    });
    port
}

/// Keeps the path a socket was opened with (its ticket).
struct KeepPath<'a>(&'a mut String);

impl tungstenite::handshake::server::Callback for KeepPath<'_> {
    fn on_request(
        self,
        request: &tungstenite::handshake::server::Request,
        response: tungstenite::handshake::server::Response,
    ) -> Result<
        tungstenite::handshake::server::Response,
        tungstenite::handshake::server::ErrorResponse,
    > {
        *self.0 = request.uri().to_string();
        Ok(response)
    }
}

fn socket(conn: TcpStream, shared: &Mutex<State>) {
    let mut path = String::new();
    let accepted = tungstenite::accept_hdr(conn, KeepPath(&mut path));
    let Ok(mut ws) = accepted else {
        return;
    };
    let me = {
        let mut s = shared.lock().unwrap();
        let ticket = path
            .split("ticket=")
            .nth(1)
            .and_then(|t| t.split('&').next());
        // A ticket is good for one connection.
        match ticket.and_then(|t| s.tickets.iter().position(|k| k == t)) {
            Some(i) => {
                s.tickets[i] = String::new();
            }
            None => {
                drop(s);
                let _ = ws.close(None);
                return;
            }
        }
        s.sockets += 1;
        s.current = s.sockets;
        s.sockets
    };
    let _ = ws
        .get_mut()
        .set_read_timeout(Some(Duration::from_millis(30)));
    let hello = json!({"type": "hello", "num_connections": 1,
        "connection_info": {"app_id": "A1"}, "debug_info": {"host": "applink-fake"}});
    if ws.send(Message::text(hello.to_string())).is_err() {
        return;
    }
    loop {
        let out: Vec<Value> = {
            let mut s = shared.lock().unwrap();
            let mut out = Vec::new();
            // What follows a disconnect waits for the next socket.
            while s.current == me {
                let Some(envelope) = s.outbox.pop_front() else {
                    break;
                };
                if let Some(id) = envelope["envelope_id"].as_str() {
                    s.delivered.push(id.to_string());
                }
                if envelope["type"] == "disconnect" {
                    s.current = 0;
                }
                out.push(envelope);
            }
            out
        };
        for envelope in out {
            if ws.send(Message::text(envelope.to_string())).is_err() {
                return;
            }
        }
        match ws.read() {
            Ok(Message::Text(t)) => {
                let ack: Value = serde_json::from_str(t.as_str()).unwrap_or(Value::Null);
                if let Some(id) = ack["envelope_id"].as_str() {
                    shared.lock().unwrap().acked.push(id.to_string());
                }
            }
            Ok(Message::Close(_)) => return,
            Ok(_) => {}
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return,
        }
    }
}

fn config_with(sb: &Sandbox, llm: &FakeLlm, slack: &FakeSlack, stream: bool, app: bool) -> PathBuf {
    let app_token = if app {
        "    app_token: \"${SLACK_APP}\"\n"
    } else {
        ""
    };
    sb.config(&format!(
        "{}agents:\n  - name: helper\n    backend: fake\n    model: fake-model\n\
channels:\n  bot:\n    type: slack\n    bot_token: \"${{SLACK_BOT}}\"\n{app_token}    api_base: http://127.0.0.1:{}/api\n    inbound:\n      agent: helper\n      allowed_senders: [\"{OWNER}\", \"{FRIEND}\"]\n      approvers: [\"{OWNER}\"]\n      poll_timeout_secs: 1\n      approval_timeout_secs: 60\n",
        llm.backend_yaml("openai", stream),
        slack.port,
    ))
}

fn config(sb: &Sandbox, llm: &FakeLlm, slack: &FakeSlack, stream: bool) -> PathBuf {
    config_with(sb, llm, slack, stream, true)
}

fn daemon(sb: &Sandbox, config: &Path) -> Daemon {
    Daemon::start(
        sb,
        config,
        &[("SLACK_BOT", BOT_TOKEN), ("SLACK_APP", APP_TOKEN)],
    )
}

fn assert_no_token(log: &str, sb: &Sandbox, config: &Path, slack: &FakeSlack) {
    for token in [BOT_TOKEN, APP_TOKEN] {
        assert!(
            !log.contains(token),
            "a token is in the daemon's log:\n{log}"
        );
        let audit = common::run(sb.tackle(config, &["audit", "--json"]));
        assert!(!audit.stdout.contains(token), "a token is in the audit log");
    }
    let s = slack.state();
    assert!(
        s.leaks.is_empty(),
        "a token outside the header: {:?}",
        s.leaks
    );
    assert!(
        s.refused.is_empty(),
        "calls without the right token: {:?}",
        s.refused
    );
}

const STORY: &str = "Once upon a time there was a tiny robot who lived in a lighthouse and counted the waves every night because nobody else would do it and the sea was very large and the robot was very patient so it counted and counted until the morning came and the gulls woke up and asked what the number was and the robot said it had lost count somewhere around the middle of the night but that it would start again tomorrow and the gulls laughed and the robot laughed too and the lighthouse kept shining over the dark water while the boats came home one by one to the harbour where the fishermen sold their catch and the children ran along the pier shouting at the waves the robot had counted the night before and that is the end";

#[test]
fn an_allowed_sender_gets_the_answer_streamed_and_every_envelope_is_acknowledged() {
    let rules = format!(
        "rules:\n  - name: story\n    when: {{messages_contain: \"tell me a story\"}}\n    respond: {{content: \"{STORY}\"}}\n"
    );
    let Some(llm) = FakeLlm::start(&rules) else {
        return;
    };
    let (sb, slack) = (Sandbox::new(), FakeSlack::start());
    let config = config(&sb, &llm, &slack, true);
    let mut d = daemon(&sb, &config);
    slack.message(DM, OWNER, "tell me a story");
    let last = slack.wait_text(DM, "that is the end");
    assert_eq!(last, STORY);
    let posted = slack.calls_of("chat.postMessage");
    assert_eq!(
        posted.len(),
        1,
        "one message, edited as it grew: {posted:#?}"
    );
    let first = posted[0]["text"].as_str().unwrap_or_default();
    assert!(
        STORY.starts_with(first) && first.len() < STORY.len(),
        "the first text is the start of the story: {first:?}"
    );
    let edits = slack.calls_of("chat.update");
    assert!(
        !edits.is_empty(),
        "the answer was not edited as it streamed"
    );
    assert!(edits.len() <= 6, "{} edits", edits.len());
    assert!(
        edits
            .iter()
            .all(|e| e["ts"] == posted[0]["_ts"] && e["channel"] == DM),
        "{edits:#?}"
    );
    // The post and edits came back as events (the bot's own): acknowledged, not answered.
    slack.wait_all_acked();
    let (code, log) = d.stop("-TERM");
    assert_eq!(code, Some(0), "{log}");
    assert_no_token(&log, &sb, &config, &slack);
    let audit = channel_audit(&sb, &config);
    assert!(audited(&audit, "allow", "slack:UOWNER"), "{audit:#?}");
    assert!(
        !audit.iter().any(|a| a.to_string().contains(BOT_USER)),
        "the bot's own messages reached the runner: {audit:#?}"
    );
}

#[test]
fn a_stranger_bots_and_edits_are_not_answered_and_the_stranger_is_audited() {
    let Some(llm) = FakeLlm::start("rules:\n  - name: any\n    when: {messages_contain: \"\"}\n    respond: {content: \"Hello there.\"}\n") else {
        return;
    };
    let (sb, slack) = (Sandbox::new(), FakeSlack::start());
    let config = config(&sb, &llm, &slack, false);
    let mut d = daemon(&sb, &config);
    slack.message("DSTRANGER", STRANGER, "hello, bot");
    // From another app, and an edit: both name an allowed user, neither is someone speaking.
    slack.event(
        json!({"type": "message", "channel": DM, "user": OWNER, "bot_id": "B9",
        "text": "an integration posting as the owner", "ts": "1.1"}),
    );
    slack.event(
        json!({"type": "message", "subtype": "message_changed", "channel": DM,
        "user": OWNER, "message": {"user": OWNER, "text": "edited"}, "ts": "1.2"}),
    );
    slack.message(DM, OWNER, "hello");
    slack.wait_text(DM, "Hello there.");
    std::thread::sleep(Duration::from_millis(800));
    let posted = slack.calls_of("chat.postMessage");
    assert_eq!(posted.len(), 1, "{posted:#?}");
    assert_eq!(posted[0]["channel"], DM);
    slack.wait_all_acked();
    let (code, log) = d.stop("-TERM");
    assert_eq!(code, Some(0), "{log}");
    let audit = channel_audit(&sb, &config);
    assert!(audited(&audit, "deny", "slack:USTRANGER"), "{audit:#?}");
}

#[test]
fn an_approval_is_asked_with_buttons_and_only_an_approver_press_runs_the_call() {
    let Some(llm) = FakeLlm::start(MARKER_RULES) else {
        return;
    };
    let (sb, slack) = (Sandbox::new(), FakeSlack::start());
    let config = config(&sb, &llm, &slack, true);
    let mut d = daemon(&sb, &config);
    let marker = sb.workspace().join("MARKER");
    slack.message(DM, OWNER, "please make the marker");
    let asked = slack.wait_for("an approval with buttons", |calls| {
        calls
            .iter()
            .find(|(m, b)| m == "chat.postMessage" && b.get("blocks").is_some())
            .map(|(_, b)| b.clone())
    });
    let section = asked["blocks"][0]["text"]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        unescape(section).contains("touch MARKER && echo"),
        "{asked:#}"
    );
    assert!(section.chars().count() <= 3000);
    let buttons = &asked["blocks"][1]["elements"];
    assert_eq!(asked["blocks"][1]["type"], "actions");
    let labels: Vec<&str> = (0..3)
        .filter_map(|i| buttons[i]["text"]["text"].as_str())
        .collect();
    assert_eq!(labels, ["Allow", "Allow for session", "Deny"]);
    let allow = buttons[0]["value"].as_str().unwrap_or_default().to_string();
    assert!(allow.starts_with("a:"), "{allow}");
    assert!(buttons[1]["value"]
        .as_str()
        .unwrap_or_default()
        .starts_with("s:"));
    assert!(buttons[2]["value"]
        .as_str()
        .unwrap_or_default()
        .starts_with("d:"));
    // Allowed to talk, not to approve: the press changes nothing and the presser is told.
    slack.press(DM, FRIEND, &allow);
    let told = slack.wait_for("the friend told", |calls| {
        calls
            .iter()
            .find(|(m, b)| m == "chat.postEphemeral" && b["user"] == FRIEND)
            .map(|(_, b)| b["text"].as_str().unwrap_or_default().to_string())
    });
    assert!(told.contains("not an approver"), "{told}");
    std::thread::sleep(Duration::from_millis(500));
    assert!(!marker.exists(), "a non-approver's press ran the call");
    slack.press(DM, OWNER, &allow);
    slack.wait_text(DM, "Made it.");
    assert!(marker.exists(), "the allowed call did not run");
    // The approval message says what became of it, its buttons gone.
    let settled = slack.wait_for("the approval settled", |calls| {
        calls
            .iter()
            .find(|(m, b)| {
                m == "chat.update"
                    && b["ts"] == asked["_ts"]
                    && b["text"]
                        .as_str()
                        .unwrap_or_default()
                        .contains("allowed by slack:UOWNER")
            })
            .map(|(_, b)| b.clone())
    });
    assert_eq!(settled["blocks"], json!([]), "{settled:#}");
    slack.wait_all_acked();
    let (code, log) = d.stop("-TERM");
    assert_eq!(code, Some(0), "{log}");
    assert_no_token(&log, &sb, &config, &slack);
    let audit = channel_audit(&sb, &config);
    assert!(audited(&audit, "deny", "by slack:UFRIEND"), "{audit:#?}");
    let shell = common::run(sb.tackle(&config, &["audit", "--json", "--tool", "shell"]));
    assert!(shell.stdout.contains("queue:slack:UOWNER"), "{shell}");
}

#[test]
fn a_disconnect_envelope_is_followed_by_a_new_socket_and_the_chat_still_answered() {
    let Some(llm) = FakeLlm::start("rules:\n  - name: any\n    when: {messages_contain: \"\"}\n    respond: {content: \"Still here.\"}\n") else {
        return;
    };
    let (sb, slack) = (Sandbox::new(), FakeSlack::start());
    let config = config(&sb, &llm, &slack, false);
    let mut d = daemon(&sb, &config);
    slack.message(DM, OWNER, "are you there?");
    slack.wait_text(DM, "Still here.");
    slack.disconnect();
    // Only a new socket gets this one.
    slack.message(DM, OWNER, "and now?");
    slack.wait_for("a second answer", |calls| {
        let n = calls
            .iter()
            .filter(|(m, b)| m == "chat.postMessage" && b["text"] == "Still here.")
            .count();
        (n == 2).then_some(())
    });
    {
        let s = slack.state();
        assert_eq!(s.sockets, 2, "the daemon did not open a new socket");
        assert!(s.tickets.iter().all(String::is_empty), "an unused ticket");
    }
    slack.wait_all_acked();
    let (code, log) = d.stop("-TERM");
    assert_eq!(code, Some(0), "{log}");
    assert_no_token(&log, &sb, &config, &slack);
}

#[test]
fn a_rate_limited_post_is_waited_out_as_slack_asks_and_the_message_still_answered() {
    let Some(llm) = FakeLlm::start("rules:\n  - name: any\n    when: {messages_contain: \"\"}\n    respond: {content: \"Patience pays.\"}\n") else {
        return;
    };
    let (sb, slack) = (Sandbox::new(), FakeSlack::start());
    let config = config(&sb, &llm, &slack, false);
    let mut d = daemon(&sb, &config);
    slack.state().rate_limit = 2;
    let at = Instant::now();
    slack.message(DM, OWNER, "hello?");
    slack.wait_text(DM, "Patience pays.");
    assert_eq!(slack.state().limited, 2);
    // Each 429 said Retry-After: 2, and was obeyed.
    assert!(
        at.elapsed() >= Duration::from_secs(2 * RETRY_AFTER),
        "{:?}",
        at.elapsed()
    );
    assert_eq!(slack.calls_of("chat.postMessage").len(), 1);
    let (code, log) = d.stop("-TERM");
    assert_eq!(code, Some(0), "{log}");
}

#[test]
fn a_refused_app_token_stops_the_channel_with_a_clear_error_and_nothing_else() {
    let Some(llm) = FakeLlm::start("rules: []\n") else {
        return;
    };
    let (sb, slack) = (Sandbox::new(), FakeSlack::start());
    let config = config(&sb, &llm, &slack, false);
    let mut d = Daemon::start(
        &sb,
        &config,
        &[
            ("SLACK_BOT", BOT_TOKEN),
            ("SLACK_APP", "xapp-1-wrong-token-also-secret"),
        ],
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while slack.state().refused.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1500));
    let (code, log) = d.stop("-TERM");
    assert_eq!(code, Some(0), "{log}");
    assert!(log.contains("channel bot stopped"), "{log}");
    assert!(log.contains("invalid_auth"), "{log}");
    assert!(!log.contains("wrong-token-also-secret"), "{log}");
    assert!(!log.contains(BOT_TOKEN), "{log}");
    // Stopped: it did not keep knocking.
    assert_eq!(slack.state().refused, ["apps.connections.open"]);
}

#[test]
fn reading_slack_without_an_app_token_is_a_usage_error_naming_the_field() {
    let Some(llm) = FakeLlm::start("rules: []\n") else {
        return;
    };
    let (sb, slack) = (Sandbox::new(), FakeSlack::start());
    let config = config_with(&sb, &llm, &slack, false, false);
    let mut child = sb
        .tackle(&config, &["daemon"])
        .env("SLACK_BOT", BOT_TOKEN)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn tackle daemon");
    let stderr = common::drain(child.stderr.take());
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the daemon started without an app token");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let log = stderr.join().unwrap_or_default();
    assert_eq!(status.code(), Some(2), "{log}");
    assert!(log.contains("channels.bot.app_token"), "{log}");
    assert!(!log.contains(BOT_TOKEN), "{log}");
    assert!(slack.state().tickets.is_empty(), "it connected anyway");
}

#[test]
fn a_restarted_daemon_continues_the_chat_session() {
    let Some(llm) = FakeLlm::start(RECALL_RULES) else {
        return;
    };
    let (sb, slack) = (Sandbox::new(), FakeSlack::start());
    let config = config(&sb, &llm, &slack, false);
    let mut d = daemon(&sb, &config);
    slack.message(DM, OWNER, "my fruit is mango");
    slack.wait_text(DM, "Filed under kumquat.");
    d.stop("-KILL");
    let mut d = daemon(&sb, &config);
    slack.message(DM, OWNER, "which fruit did I name?");
    slack.wait_text(DM, "You named mango.");
    let (code, log) = d.stop("-TERM");
    assert_eq!(code, Some(0), "{log}");
}

/// `tackle doctor --json`'s check of the channel, with the daemon's environment.
fn doctor_check(sb: &Sandbox, config: &Path, app_token: &str) -> (Value, common::Run) {
    let mut cmd = sb.tackle(config, &["doctor", "--json"]);
    cmd.env("SLACK_BOT", BOT_TOKEN).env("SLACK_APP", app_token);
    let out = common::run(cmd);
    let report: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("doctor --json printed no JSON ({e}): {out}"));
    let check = report["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == "channel bot (slack)"))
        .cloned()
        .unwrap_or_else(|| panic!("no check for the channel: {report:#}"));
    (check, out)
}

#[test]
fn doctor_probes_both_tokens_and_never_prints_them() {
    let Some(llm) = FakeLlm::start("rules: []\n") else {
        return;
    };
    let (sb, slack) = (Sandbox::new(), FakeSlack::start());
    let config = config(&sb, &llm, &slack, false);
    let (check, out) = doctor_check(&sb, &config, APP_TOKEN);
    assert_eq!(check["status"], "ok", "{check:#}");
    assert!(
        check["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("@tackle"),
        "{check:#}"
    );
    assert!(!out.stdout.contains(BOT_TOKEN) && !out.stdout.contains(APP_TOKEN));
    // A refused app token fails the check, though the bot token is good.
    let wrong = "xapp-1-wrong-token-also-secret";
    let (check, out) = doctor_check(&sb, &config, wrong);
    assert_eq!(check["status"], "fail", "{check:#}");
    assert!(
        check["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("invalid_auth"),
        "{check:#}"
    );
    assert!(!format!("{out}").contains(wrong), "{out}");
    assert_eq!(slack.state().refused, ["apps.connections.open"]);
}

#[test]
fn a_file_from_a_tool_is_uploaded_externally_and_shared_in_the_chat() {
    let Some(llm) = FakeLlm::start(&attach_rules(
        "bot",
        &[("send the report", "out/report.bin")],
    )) else {
        return;
    };
    let (sb, slack) = (Sandbox::new(), FakeSlack::start());
    let config = config(&sb, &llm, &slack, false);
    let config_text = std::fs::read_to_string(&config).unwrap_or_default();
    std::fs::write(&config, format!("{config_text}{MESSAGE_AUTO}")).expect("write config");
    std::fs::create_dir_all(sb.workspace().join("out")).expect("mkdir");
    std::fs::write(sb.workspace().join("out/report.bin"), attachment()).expect("write");
    let mut d = daemon(&sb, &config);
    slack.message(DM, OWNER, "please send the report");
    slack.wait_text(DM, "Filed.");
    {
        let s = slack.state();
        let length = attachment().len().to_string();
        assert_eq!(
            s.upload_urls,
            vec![("F1".to_string(), "report.bin".to_string(), length)]
        );
        assert_eq!(s.uploads.len(), 1);
        assert_eq!(s.uploads[0].0, "F1");
        assert!(
            s.uploads[0].1 == attachment(),
            "the uploaded bytes differ from the file"
        );
    }
    assert_eq!(
        slack.calls_of("files.completeUploadExternal"),
        vec![
            json!({"files": [{"id": "F1", "title": "report.bin"}], "channel_id": DM,
            "initial_comment": "the report"})
        ]
    );
    let (code, log) = d.stop("-TERM");
    assert_eq!(code, Some(0), "{log}");
    assert_no_token(&log, &sb, &config, &slack);
}
