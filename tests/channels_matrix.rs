//! `tackle daemon` reading a Matrix account (`channels.NAME.inbound`, `type: matrix`), against
//! a fake homeserver written from the client-server API reference
//! (https://spec.matrix.org/latest/client-server-api/) on 127.0.0.1: `/sync` hands out the
//! timeline past the `since` token, sends are recorded and appear in the timeline as the
//! bot's own events (which it must not answer).

mod channels_fake;
mod common;

use channels_fake::{
    attach_rules, attachment, audited, channel_audit, Daemon, Request, MARKER_RULES, MESSAGE_AUTO,
    RECALL_RULES,
};
use common::{FakeLlm, Sandbox};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

const TOKEN: &str = "syt_fake_matrix_token_must_not_leak";
const ROOM: &str = "!room:fake";
const OWNER: &str = "@owner:fake";
const FRIEND: &str = "@friend:fake";
const STRANGER: &str = "@stranger:fake";
const BOT: &str = "@bot:fake";

#[derive(Default)]
struct State {
    /// The room's timeline; `since` tokens are `sN`: events from index N on are new.
    timeline: Vec<Value>,
    /// What the bot sent: (room, content), and each one's event id.
    sent: Vec<(String, Value)>,
    sent_ids: Vec<String>,
    /// Files uploaded to the media repository: (the query's file name, media type, bytes).
    uploads: Vec<(String, String, Vec<u8>)>,
    txns: Vec<String>,
    /// `/sync` calls so far.
    syncs: u32,
}

struct FakeHomeserver {
    port: u16,
    state: Arc<(Mutex<State>, Condvar)>,
}

impl FakeHomeserver {
    fn start() -> Self {
        let state: Arc<(Mutex<State>, Condvar)> = Arc::default();
        let shared = Arc::clone(&state);
        let port = channels_fake::serve(Arc::new(move |r: Request| answer(&r, &shared)));
        Self { port, state }
    }

    fn say(&self, sender: &str, text: &str) -> String {
        self.event(
            sender,
            "m.room.message",
            json!({"msgtype": "m.text", "body": text}),
        )
    }

    /// Puts an event in the room's timeline; its id.
    fn event(&self, sender: &str, kind: &str, content: Value) -> String {
        let (lock, cv) = &*self.state;
        let mut s = lock.lock().unwrap();
        let id = format!("$e{}", s.timeline.len());
        s.timeline.push(json!({
            "type": kind, "sender": sender, "event_id": id, "content": content,
        }));
        cv.notify_all();
        id
    }

    fn react(&self, sender: &str, on: &str, key: &str) {
        self.event(
            sender,
            "m.reaction",
            json!({"m.relates_to": {"rel_type": "m.annotation", "event_id": on, "key": key}}),
        );
    }

    /// The id of the last event the bot sent with `needle` in its text.
    fn sent_id(&self, needle: &str) -> String {
        self.wait_text(needle);
        let s = self.state.0.lock().unwrap();
        let at = s
            .sent
            .iter()
            .rposition(|(_, c)| c["body"].as_str().is_some_and(|b| b.contains(needle)));
        at.and_then(|i| s.sent_ids.get(i).cloned())
            .unwrap_or_default()
    }

    /// Waits until the daemon has read past the history and is long polling.
    fn wait_polling(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        let at = self.state.0.lock().unwrap().syncs;
        while self.state.0.lock().unwrap().syncs < at + 2 {
            assert!(Instant::now() < deadline, "the daemon never synced");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn sent(&self) -> Vec<Value> {
        self.state
            .0
            .lock()
            .unwrap()
            .sent
            .iter()
            .map(|(_, c)| c.clone())
            .collect()
    }

    /// The shown text of every message and edit the bot sent.
    fn texts(&self) -> Vec<String> {
        self.sent()
            .iter()
            .map(|c| {
                c["m.new_content"]["body"]
                    .as_str()
                    .or(c["body"].as_str())
                    .unwrap_or_default()
                    .to_string()
            })
            .collect()
    }

    fn wait_text(&self, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(t) = self.texts().into_iter().rfind(|t| t.contains(needle)) {
                return t;
            }
            assert!(
                Instant::now() < deadline,
                "no message with {needle:?}; sent: {:#?}",
                self.texts()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn answer(r: &Request, shared: &(Mutex<State>, Condvar)) -> (u16, Value) {
    if r.header("authorization") != Some(&format!("Bearer {TOKEN}")) {
        return (
            401,
            json!({"errcode": "M_UNKNOWN_TOKEN", "error": "Invalid access token"}),
        );
    }
    let (lock, cv) = shared;
    let path = r
        .path
        .strip_prefix("/_matrix/client/v3")
        .unwrap_or_default();
    if path == "/account/whoami" {
        return (200, json!({"user_id": BOT}));
    }
    if let Some(query) = path.strip_prefix("/sync?") {
        let param = |k: &str| {
            query
                .split('&')
                .find_map(|kv| kv.strip_prefix(&format!("{k}=")))
                .map(str::to_string)
        };
        let from = param("since")
            .and_then(|s| s.strip_prefix('s').and_then(|n| n.parse::<usize>().ok()))
            .unwrap_or(0);
        let wait = param("timeout")
            .and_then(|t| t.parse::<u64>().ok())
            .unwrap_or(0)
            .min(2000);
        let mut s = lock.lock().unwrap();
        s.syncs += 1;
        let until = Instant::now() + Duration::from_millis(wait);
        while s.timeline.len() <= from && Instant::now() < until {
            s = cv.wait_timeout(s, Duration::from_millis(50)).unwrap().0;
        }
        let events: Vec<Value> = s.timeline.get(from..).unwrap_or_default().to_vec();
        return (
            200,
            json!({
                "next_batch": format!("s{}", s.timeline.len()),
                "rooms": {"join": {ROOM: {"timeline": {"events": events}}}},
            }),
        );
    }
    if let Some(query) = r.path.strip_prefix("/_matrix/media/v3/upload?") {
        let mut s = lock.lock().unwrap();
        let name = query
            .strip_prefix("filename=")
            .unwrap_or_default()
            .to_string();
        let kind = r.header("content-type").unwrap_or_default().to_string();
        s.uploads.push((name, kind, r.raw.clone()));
        let uri = format!("mxc://fake/m{}", s.uploads.len());
        return (200, json!({"content_uri": uri}));
    }
    let decoded = path.replace("%21", "!").replace("%3A", ":");
    if let Some(rest) = decoded.strip_prefix("/rooms/") {
        if let Some((room, txn)) = rest.split_once("/send/m.room.message/") {
            let mut s = lock.lock().unwrap();
            let n = s.timeline.len();
            let id = format!("$e{n}");
            // A retried transaction is the same event, not a second one.
            if !s.txns.contains(&txn.to_string()) {
                s.txns.push(txn.to_string());
                s.sent.push((room.to_string(), r.body.clone()));
                s.sent_ids.push(id.clone());
                s.timeline.push(json!({
                    "type": "m.room.message", "sender": BOT, "event_id": id,
                    "content": r.body,
                }));
                cv.notify_all();
            }
            return (200, json!({"event_id": id}));
        }
    }
    (
        404,
        json!({"errcode": "M_UNRECOGNIZED", "error": "Unrecognized request"}),
    )
}

fn config(sb: &Sandbox, llm: &FakeLlm, hs: &FakeHomeserver) -> PathBuf {
    config_with(sb, llm, hs, "")
}

fn config_with(sb: &Sandbox, llm: &FakeLlm, hs: &FakeHomeserver, extra: &str) -> PathBuf {
    sb.config(&format!(
        "{}agents:\n  - name: helper\n    backend: fake\n    model: fake-model\n\
channels:\n  room:\n    type: matrix\n    access_token: \"${{MX_TOKEN}}\"\n    homeserver: http://127.0.0.1:{}\n    inbound:\n      agent: helper\n      allowed_senders: [\"{OWNER}\", \"{FRIEND}\"]\n      approvers: [\"{OWNER}\"]\n      poll_timeout_secs: 1\n      approval_timeout_secs: 60\n{extra}",
        llm.backend_yaml("openai", false),
        hs.port,
    ))
}

fn daemon(sb: &Sandbox, config: &Path) -> Daemon {
    Daemon::start(sb, config, &[("MX_TOKEN", TOKEN)])
}

#[test]
fn a_message_is_answered_in_the_room_but_not_the_history_nor_a_stranger() {
    let Some(llm) = FakeLlm::start("rules:\n  - name: any\n    when: {messages_contain: \"\"}\n    respond: {content: \"Hello from the agent.\"}\n") else {
        return;
    };
    let (sb, hs) = (Sandbox::new(), FakeHomeserver::start());
    let config = config(&sb, &llm, &hs);
    // Said before the bot ever ran: the past, not answered.
    hs.say(OWNER, "an old message");
    let mut d = daemon(&sb, &config);
    hs.wait_polling();
    hs.say(STRANGER, "hello?");
    hs.say(OWNER, "hello");
    hs.wait_text("Hello from the agent.");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(hs.sent().len(), 1, "{:#?}", hs.texts());
    let (code, log) = d.stop("-TERM");
    assert_eq!(code, Some(0), "{log}");
    assert!(!log.contains(TOKEN), "{log}");
    let audit = channel_audit(&sb, &config);
    assert!(
        audited(&audit, "deny", "matrix:@stranger:fake"),
        "{audit:#?}"
    );
    assert!(audited(&audit, "allow", "matrix:@owner:fake"), "{audit:#?}");
}

#[test]
fn an_approval_is_answered_by_reply_and_only_from_an_approver() {
    let Some(llm) = FakeLlm::start(MARKER_RULES) else {
        return;
    };
    let (sb, hs) = (Sandbox::new(), FakeHomeserver::start());
    let config = config(&sb, &llm, &hs);
    let mut d = daemon(&sb, &config);
    hs.wait_polling();
    let marker = sb.workspace().join("MARKER");
    hs.say(OWNER, "please make the marker");
    let asked = hs.wait_text("Reply y");
    assert!(asked.contains("touch MARKER"), "{asked}");
    // Allowed to talk, not to approve.
    hs.say(FRIEND, "y");
    hs.wait_text("not an approver");
    std::thread::sleep(Duration::from_millis(500));
    assert!(!marker.exists(), "a non-approver's reply ran the call");
    hs.say(OWNER, "y");
    hs.wait_text("Made it.");
    assert!(marker.exists(), "the allowed call did not run");
    hs.wait_text("allowed by matrix:@owner:fake");
    let (code, log) = d.stop("-TERM");
    assert_eq!(code, Some(0), "{log}");
    let audit = channel_audit(&sb, &config);
    assert!(
        audited(&audit, "deny", "by matrix:@friend:fake"),
        "{audit:#?}"
    );
}

#[test]
fn a_restarted_daemon_reads_on_from_where_it_stopped_in_the_same_session() {
    let Some(llm) = FakeLlm::start(RECALL_RULES) else {
        return;
    };
    let (sb, hs) = (Sandbox::new(), FakeHomeserver::start());
    let config = config(&sb, &llm, &hs);
    let mut d = daemon(&sb, &config);
    hs.wait_polling();
    hs.say(OWNER, "my fruit is mango");
    hs.wait_text("Filed under kumquat.");
    d.stop("-KILL");
    // Said while the daemon was down: answered once it is back, in the same session.
    hs.say(OWNER, "which fruit did I name?");
    let mut d = daemon(&sb, &config);
    hs.wait_text("You named mango.");
    std::thread::sleep(Duration::from_millis(1500));
    let answers = hs.texts();
    assert_eq!(
        answers
            .iter()
            .filter(|t| t.contains("Filed under kumquat"))
            .count(),
        1,
        "the first message was answered again: {answers:#?}"
    );
    let (code, log) = d.stop("-TERM");
    assert_eq!(code, Some(0), "{log}");
}

#[test]
fn a_message_taken_before_a_kill_is_answered_after_the_restart() {
    // MARKER_RULES without its catch-all: the interrupted call left in the session must not
    // decide the answer, the message taken up again does.
    let rules = concat!(
        "rules:\n",
        "  - name: made\n    when: {tool_result_contains: \"marker-made\"}\n    respond: {content: \"Made it.\"}\n",
        "  - name: touch\n    when: {messages_contain: \"make the marker\"}\n    respond:\n      tool_calls:\n        - {name: shell, arguments: {command: \"touch MARKER && echo marker-made\"}}\n",
    );
    let Some(llm) = FakeLlm::start(rules) else {
        return;
    };
    let (sb, hs) = (Sandbox::new(), FakeHomeserver::start());
    let config = config(&sb, &llm, &hs);
    let mut d = daemon(&sb, &config);
    hs.wait_polling();
    let marker = sb.workspace().join("MARKER");
    hs.say(OWNER, "please make the marker");
    hs.wait_text("Reply y");
    // Killed while its turn waits for the approval: the message was read (the sync
    // position moved past it) but never answered.
    d.stop("-KILL");
    let mut d = daemon(&sb, &config);
    let deadline = Instant::now() + Duration::from_secs(20);
    while hs.texts().iter().filter(|t| t.contains("Reply y")).count() < 2 {
        assert!(
            Instant::now() < deadline,
            "the message taken before the kill was not taken up again: {:#?}",
            hs.texts()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    hs.say(OWNER, "y");
    hs.wait_text("Made it.");
    assert!(
        marker.exists(),
        "the call allowed after the restart did not run"
    );
    let (code, log) = d.stop("-TERM");
    assert_eq!(code, Some(0), "{log}");
    assert!(
        log.contains("taken before it stopped"),
        "the restart did not say it took the message up again: {log}"
    );
}

#[test]
fn a_message_from_someone_who_is_not_an_operator_taints_the_session() {
    // A loopback endpoint the agent may POST to without asking (auto-approved, granted).
    let posts: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = Arc::clone(&posts);
    let site = channels_fake::serve(Arc::new(move |r: Request| {
        seen.lock()
            .unwrap()
            .push(format!("{} {}", r.method, r.path));
        (200, json!({"ok": true}))
    }));
    let rules = format!(
        "rules:\n  - name: sent\n    when: {{tool_result_contains: \"ok\"}}\n    respond: {{content: \"Report sent.\"}}\n  - name: send\n    when: {{messages_contain: \"send the report\"}}\n    respond:\n      tool_calls:\n        - {{name: http_request, arguments: {{method: POST, url: \"http://127.0.0.1:{site}/collect\", body: \"the report\"}}}}\n"
    );
    let Some(llm) = FakeLlm::start(&rules) else {
        return;
    };
    let (sb, hs) = (Sandbox::new(), FakeHomeserver::start());
    let grant = "      grants:\n        network:\n          allow_private: true\n          endpoints:\n            - host: 127.0.0.1\n";
    let security = format!(
        "security:\n  auto_approved_tools: [http_request]\n  tool_policies:\n    http_request:\n{grant}"
    );
    let config = config_with(&sb, &llm, &hs, &security);
    let mut d = daemon(&sb, &config);
    hs.wait_polling();
    // The friend may talk but is no operator: what they wrote is someone else's text in the
    // session, so the auto-approved POST waits for an approver.
    hs.say(FRIEND, "please send the report");
    let asked = hs.wait_text("Reply y");
    assert!(
        asked.contains("untrusted") && asked.contains("@friend:fake"),
        "the prompt does not say why: {asked}"
    );
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        posts.lock().unwrap().is_empty(),
        "the POST ran without an approver"
    );
    let (code, log) = d.stop("-TERM");
    assert_eq!(code, Some(0), "{log}");

    // The owner's own request, in a session of its own, runs as configured.
    let (sb, hs) = (Sandbox::new(), FakeHomeserver::start());
    let config = config_with(&sb, &llm, &hs, &security);
    let mut d = daemon(&sb, &config);
    hs.wait_polling();
    hs.say(OWNER, "please send the report");
    hs.wait_text("Report sent.");
    assert_eq!(
        posts.lock().unwrap().len(),
        1,
        "{:?}",
        posts.lock().unwrap()
    );
    let (code, log) = d.stop("-TERM");
    assert_eq!(code, Some(0), "{log}");
}

#[test]
fn answers_reply_to_the_users_message_and_stay_in_its_thread() {
    let Some(llm) = FakeLlm::start("rules:\n  - name: any\n    when: {messages_contain: \"\"}\n    respond: {content: \"Hello from the agent.\"}\n") else {
        return;
    };
    let (sb, hs) = (Sandbox::new(), FakeHomeserver::start());
    let config = config(&sb, &llm, &hs);
    let mut d = daemon(&sb, &config);
    hs.wait_polling();
    let asked = hs.say(OWNER, "hello");
    hs.wait_text("Hello from the agent.");
    let first = hs.sent();
    assert_eq!(
        first.last().map(|c| c["m.relates_to"].clone()),
        Some(json!({"m.in_reply_to": {"event_id": asked}})),
        "{first:#?}"
    );
    // A message in a thread is answered in the thread, as a reply to it.
    let in_thread = hs.event(
        OWNER,
        "m.room.message",
        json!({"msgtype": "m.text", "body": "hello again",
            "m.relates_to": {"rel_type": "m.thread", "event_id": asked}}),
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while hs.sent().len() < 2 {
        assert!(
            Instant::now() < deadline,
            "no second answer: {:#?}",
            hs.texts()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let second = hs.sent();
    assert_eq!(
        second.get(1).map(|c| c["m.relates_to"].clone()),
        Some(
            json!({"rel_type": "m.thread", "event_id": asked, "is_falling_back": false,
            "m.in_reply_to": {"event_id": in_thread}})
        ),
        "{second:#?}"
    );
    let (code, log) = d.stop("-TERM");
    assert_eq!(code, Some(0), "{log}");
}

#[test]
fn an_approval_is_answered_by_a_reaction_and_only_from_an_approver() {
    let Some(llm) = FakeLlm::start(MARKER_RULES) else {
        return;
    };
    let (sb, hs) = (Sandbox::new(), FakeHomeserver::start());
    let config = config(&sb, &llm, &hs);
    let mut d = daemon(&sb, &config);
    hs.wait_polling();
    let marker = sb.workspace().join("MARKER");
    hs.say(OWNER, "please make the marker");
    let approval = hs.sent_id("react 👍");
    assert!(approval.starts_with('$'), "{approval}");
    // Allowed to talk, not to approve; and someone not even allowed to talk.
    hs.react(FRIEND, &approval, "👍");
    hs.wait_text("not an approver");
    hs.react(STRANGER, &approval, "✅");
    // A thumbs up on another message answers nothing.
    let other = hs.say(OWNER, "unrelated");
    hs.react(OWNER, &other, "👍");
    std::thread::sleep(Duration::from_millis(800));
    assert!(
        !marker.exists(),
        "the call ran without an approver's reaction"
    );
    hs.react(OWNER, &approval, "👍🏽");
    hs.wait_text("Made it.");
    assert!(marker.exists(), "the allowed call did not run");
    hs.wait_text("allowed by matrix:@owner:fake");
    let (code, log) = d.stop("-TERM");
    assert_eq!(code, Some(0), "{log}");
    let audit = channel_audit(&sb, &config);
    for who in ["by matrix:@friend:fake", "by matrix:@stranger:fake"] {
        assert!(audited(&audit, "deny", who), "{who}: {audit:#?}");
    }
    assert!(
        audited(&audit, "allow", "by matrix:@owner:fake"),
        "{audit:#?}"
    );
    // The stranger was not answered: only the friend was told.
    let told = hs.texts();
    assert_eq!(
        told.iter()
            .filter(|t| t.contains("not an approver"))
            .count(),
        1,
        "{told:#?}"
    );
}

#[test]
fn a_file_from_a_tool_is_uploaded_and_sent_as_an_m_file_event() {
    let Some(llm) = FakeLlm::start(&attach_rules(
        "room",
        &[("send the report", "out/report.bin")],
    )) else {
        return;
    };
    let (sb, hs) = (Sandbox::new(), FakeHomeserver::start());
    let config = config_with(&sb, &llm, &hs, MESSAGE_AUTO);
    std::fs::create_dir_all(sb.workspace().join("out")).expect("mkdir");
    std::fs::write(sb.workspace().join("out/report.bin"), attachment()).expect("write");
    let mut d = daemon(&sb, &config);
    hs.wait_polling();
    let asked = hs.say(OWNER, "please send the report");
    hs.wait_text("Filed.");
    let uploads = hs.state.0.lock().unwrap().uploads.clone();
    assert_eq!(uploads.len(), 1);
    assert_eq!(uploads[0].0, "report.bin");
    assert_eq!(uploads[0].1, "application/octet-stream");
    assert!(
        uploads[0].2 == attachment(),
        "the uploaded bytes differ from the file"
    );
    let file = hs
        .sent()
        .into_iter()
        .find(|c| c["msgtype"] == "m.file")
        .unwrap_or_default();
    assert_eq!(file["url"], "mxc://fake/m1", "{file:#}");
    assert_eq!(file["body"], "the report");
    assert_eq!(file["filename"], "report.bin");
    assert_eq!(file["info"]["size"], attachment().len());
    let answer = hs
        .sent()
        .into_iter()
        .find(|c| c["body"] == "Filed.")
        .unwrap_or_default();
    assert_eq!(
        answer["m.relates_to"]["m.in_reply_to"]["event_id"],
        json!(asked)
    );
    let (code, log) = d.stop("-TERM");
    assert_eq!(code, Some(0), "{log}");
    assert!(!log.contains(TOKEN), "{log}");
}
