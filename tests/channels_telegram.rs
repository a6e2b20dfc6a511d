//! `tackle daemon` reading a Telegram bot (`channels.NAME.inbound`), against a fake Bot API
//! written from the public reference (https://core.telegram.org/bots/api) and served on
//! 127.0.0.1: `getUpdates` hands out queued updates by offset, every other method is
//! recorded and answered as Telegram answers it.

mod channels_fake;
mod common;

use channels_fake::{
    attach_rules, attachment, audited, channel_audit, Daemon, Request, MARKER_RULES, MESSAGE_AUTO,
    RECALL_RULES,
};
use common::{FakeLlm, Sandbox};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

const TOKEN: &str = "4242:fake-bot-token-must-not-leak";
const OWNER: i64 = 42;
const STRANGER: i64 = 666;

#[derive(Default)]
struct State {
    /// Updates not yet confirmed by an offset past them.
    queue: VecDeque<Value>,
    next_update: i64,
    next_message: i64,
    /// Every call but `getUpdates`: (method, body).
    calls: Vec<(String, Value)>,
    /// Answer this many of the next sending calls with 429.
    rate_limit: u32,
    limited: u32,
    /// Requests whose path did not carry the bot's token.
    bad_paths: Vec<String>,
}

struct FakeTelegram {
    port: u16,
    state: Arc<(Mutex<State>, Condvar)>,
}

impl FakeTelegram {
    fn start() -> Self {
        let state: Arc<(Mutex<State>, Condvar)> = Arc::default();
        let shared = Arc::clone(&state);
        let port = channels_fake::serve(Arc::new(move |r: Request| {
            let body = if r.path.ends_with("/sendDocument") {
                document(&r)
            } else {
                r.body.clone()
            };
            answer(&r.path, body, &shared)
        }));
        Self { port, state }
    }

    fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn push(&self, update: Value) {
        let (lock, cv) = &*self.state;
        let mut s = lock.lock().unwrap();
        s.next_update += 1;
        let mut update = update;
        update["update_id"] = json!(s.next_update);
        s.queue.push_back(update);
        cv.notify_all();
    }

    fn message(&self, chat: i64, from: i64, text: &str) {
        self.push(json!({"message": {
            "message_id": 1, "date": 0, "text": text,
            "chat": {"id": chat, "type": "private"},
            "from": {"id": from, "is_bot": false, "first_name": "x"},
        }}));
    }

    fn photo(&self, chat: i64, from: i64) {
        self.push(json!({"message": {
            "message_id": 1, "date": 0, "photo": [{"file_id": "f", "file_unique_id": "u", "width": 1, "height": 1}],
            "chat": {"id": chat, "type": "private"},
            "from": {"id": from, "is_bot": false, "first_name": "x"},
        }}));
    }

    fn press(&self, chat: i64, from: i64, id: &str, data: &str) {
        self.push(json!({"callback_query": {
            "id": id, "chat_instance": "1", "data": data,
            "from": {"id": from, "is_bot": false, "first_name": "x"},
            "message": {"message_id": 1, "date": 0, "chat": {"id": chat, "type": "private"}},
        }}));
    }

    fn rate_limit(&self, n: u32) {
        self.state.0.lock().unwrap().rate_limit = n;
    }

    fn calls(&self) -> Vec<(String, Value)> {
        self.state.0.lock().unwrap().calls.clone()
    }

    fn calls_of(&self, method: &str) -> Vec<Value> {
        self.calls()
            .into_iter()
            .filter(|(m, _)| m == method)
            .map(|(_, b)| b)
            .collect()
    }

    /// Waits until `found` picks something out of the calls so far.
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

    /// The text of the last message sent or edited in `chat` that contains `needle`.
    fn wait_text(&self, chat: i64, needle: &str) -> String {
        self.wait_for(
            &format!("message with {needle:?} in chat {chat}"),
            |calls| {
                calls
                    .iter()
                    .filter(|(m, b)| {
                        (m == "sendMessage" || m == "editMessageText")
                            && b["chat_id"] == json!(chat)
                    })
                    .filter_map(|(_, b)| b["text"].as_str())
                    .rfind(|t| t.contains(needle))
                    .map(str::to_string)
            },
        )
    }
}

/// A `sendDocument` form as JSON, to record with the other calls: its fields, the file's
/// bytes as a list.
fn document(r: &Request) -> Value {
    let text = |k: &str| r.part(k).map(|b| String::from_utf8_lossy(&b).to_string());
    json!({
        "chat_id": text("chat_id").and_then(|c| c.parse::<i64>().ok()),
        "caption": text("caption"),
        "document": r.part("document"),
    })
}

fn answer(path: &str, body: Value, shared: &(Mutex<State>, Condvar)) -> (u16, Value) {
    let (lock, cv) = shared;
    let prefix = format!("/bot{TOKEN}/");
    let Some(method) = path.strip_prefix(&prefix) else {
        lock.lock().unwrap().bad_paths.push(path.to_string());
        return (
            401,
            json!({"ok": false, "error_code": 401, "description": "Unauthorized"}),
        );
    };
    let mut s = lock.lock().unwrap();
    if method == "getUpdates" {
        let offset = body["offset"].as_i64().unwrap_or(0);
        s.queue
            .retain(|u| u["update_id"].as_i64().unwrap_or(0) >= offset);
        // Long polling: wait (a little, for the tests' pace) for something to hand out.
        let until =
            Instant::now() + Duration::from_secs(body["timeout"].as_u64().unwrap_or(0).min(2));
        while s.queue.is_empty() && Instant::now() < until {
            s = cv.wait_timeout(s, Duration::from_millis(50)).unwrap().0;
        }
        let out: Vec<Value> = s.queue.iter().cloned().collect();
        return (200, json!({"ok": true, "result": out}));
    }
    if s.rate_limit > 0 && method != "answerCallbackQuery" {
        s.rate_limit -= 1;
        s.limited += 1;
        return (
            429,
            json!({"ok": false, "error_code": 429,
                   "description": "Too Many Requests: retry after 1",
                   "parameters": {"retry_after": 1}}),
        );
    }
    s.calls.push((method.to_string(), body.clone()));
    match method {
        "sendMessage" | "sendDocument" => {
            s.next_message += 1;
            let id = s.next_message;
            (
                200,
                json!({"ok": true, "result": {
                    "message_id": id, "date": 0, "text": body["text"],
                    "chat": {"id": body["chat_id"], "type": "private"},
                }}),
            )
        }
        "editMessageText" => (
            200,
            json!({"ok": true, "result": {
                "message_id": body["message_id"], "date": 0, "text": body["text"],
                "chat": {"id": body["chat_id"], "type": "private"},
            }}),
        ),
        "answerCallbackQuery" => (200, json!({"ok": true, "result": true})),
        "getMe" => (
            200,
            json!({"ok": true, "result": {"id": 4242, "is_bot": true, "first_name": "Tackle",
                   "username": "tackle_test_bot"}}),
        ),
        _ => (
            404,
            json!({"ok": false, "error_code": 404, "description": "Not Found"}),
        ),
    }
}

fn config(sb: &Sandbox, llm: &FakeLlm, tg: &FakeTelegram, stream: bool) -> PathBuf {
    sb.config(&format!(
        "{}agents:\n  - name: helper\n    backend: fake\n    model: fake-model\n\
channels:\n  bot:\n    type: telegram\n    bot_token: \"${{TG_TOKEN}}\"\n    api_base: {}\n    inbound:\n      agent: helper\n      allowed_senders: [\"{OWNER}\"]\n      poll_timeout_secs: 1\n      approval_timeout_secs: 60\n",
        llm.backend_yaml("openai", stream),
        tg.base(),
    ))
}

fn daemon(sb: &Sandbox, config: &Path) -> Daemon {
    Daemon::start(sb, config, &[("TG_TOKEN", TOKEN)])
}

fn assert_no_token(log: &str, sb: &Sandbox, config: &Path) {
    assert!(
        !log.contains(TOKEN),
        "the token is in the daemon's log:\n{log}"
    );
    let audit = common::run(sb.tackle(config, &["audit", "--json"]));
    assert!(
        !audit.stdout.contains(TOKEN),
        "the token is in the audit log"
    );
}

const STORY: &str = "Once upon a time there was a tiny robot who lived in a lighthouse and counted the waves every night because nobody else would do it and the sea was very large and the robot was very patient so it counted and counted until the morning came and the gulls woke up and asked what the number was and the robot said it had lost count somewhere around the middle of the night but that it would start again tomorrow and the gulls laughed and the robot laughed too and the lighthouse kept shining over the dark water while the boats came home one by one to the harbour where the fishermen sold their catch and the children ran along the pier shouting at the waves the robot had counted the night before and that is the end";

#[test]
fn an_allowed_sender_gets_the_answer_streamed_into_one_message() {
    let rules = format!(
        "rules:\n  - name: story\n    when: {{messages_contain: \"tell me a story\"}}\n    respond: {{content: \"{STORY}\"}}\n"
    );
    let Some(llm) = FakeLlm::start(&rules) else {
        return;
    };
    let (sb, tg) = (Sandbox::new(), FakeTelegram::start());
    let config = config(&sb, &llm, &tg, true);
    let mut d = daemon(&sb, &config);
    tg.message(OWNER, OWNER, "tell me a story");
    let last = tg.wait_text(OWNER, "that is the end");
    assert_eq!(last, STORY);
    let sent = tg.calls_of("sendMessage");
    assert_eq!(sent.len(), 1, "one message, edited as it grew: {sent:#?}");
    let first = sent[0]["text"].as_str().unwrap_or_default();
    assert!(
        STORY.starts_with(first) && first.len() < STORY.len(),
        "the first text is the start of the story: {first:?}"
    );
    let edits = tg.calls_of("editMessageText");
    assert!(
        !edits.is_empty(),
        "the answer was not edited while it streamed"
    );
    // Throttled: a 1.5 s stream of ~150 words is not one edit per word.
    assert!(edits.len() <= 6, "{} edits", edits.len());
    let (code, log) = d.stop("-TERM");
    assert_eq!(code, Some(0), "{log}");
    assert_no_token(&log, &sb, &config);
    let audit = channel_audit(&sb, &config);
    assert!(
        audit.iter().any(|a| a["outcome"] == "ok"
            && a["args_summary"]
                .as_str()
                .unwrap_or_default()
                .contains("telegram:42")),
        "{audit:#?}"
    );
}

#[test]
fn a_stranger_is_not_answered_and_is_audited_and_a_photo_is_not_dropped() {
    let Some(llm) = FakeLlm::start("rules:\n  - name: any\n    when: {messages_contain: \"\"}\n    respond: {content: \"Hello there.\"}\n") else {
        return;
    };
    let (sb, tg) = (Sandbox::new(), FakeTelegram::start());
    let config = config(&sb, &llm, &tg, false);
    let mut d = daemon(&sb, &config);
    tg.message(STRANGER, STRANGER, "hello, bot");
    // The owner's message after it is answered: the stranger's was read and passed over.
    tg.photo(OWNER, OWNER);
    tg.message(OWNER, OWNER, "hello");
    tg.wait_text(OWNER, "Hello there.");
    // A message with no text is not dropped in silence.
    tg.wait_text(OWNER, "Only text messages are read here.");
    let to_stranger: Vec<Value> = tg
        .calls()
        .into_iter()
        .filter(|(_, b)| b["chat_id"] == json!(STRANGER))
        .map(|(_, b)| b)
        .collect();
    assert!(to_stranger.is_empty(), "{to_stranger:#?}");
    let (code, log) = d.stop("-TERM");
    assert_eq!(code, Some(0), "{log}");
    let audit = channel_audit(&sb, &config);
    assert!(audited(&audit, "deny", "telegram:666"), "{audit:#?}");
}

#[test]
fn an_approval_is_asked_with_buttons_and_only_an_approver_press_runs_the_call() {
    let Some(llm) = FakeLlm::start(MARKER_RULES) else {
        return;
    };
    let (sb, tg) = (Sandbox::new(), FakeTelegram::start());
    let config = config(&sb, &llm, &tg, true);
    let mut d = daemon(&sb, &config);
    let marker = sb.workspace().join("MARKER");
    tg.message(OWNER, OWNER, "please make the marker");
    let keyboard = tg.wait_for("an inline keyboard", |calls| {
        calls
            .iter()
            .find(|(m, b)| m == "sendMessage" && b.get("reply_markup").is_some())
            .map(|(_, b)| b.clone())
    });
    assert!(
        keyboard["text"]
            .as_str()
            .unwrap_or_default()
            .contains("touch MARKER"),
        "{keyboard:#}"
    );
    let buttons = &keyboard["reply_markup"]["inline_keyboard"][0];
    let labels: Vec<&str> = (0..3).filter_map(|i| buttons[i]["text"].as_str()).collect();
    assert_eq!(labels, ["Allow", "Allow for session", "Deny"]);
    let allow = buttons[0]["callback_data"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(allow.starts_with("a:"), "{allow}");
    // A stranger's press changes nothing.
    tg.press(OWNER, STRANGER, "press-1", &allow);
    let told = tg.wait_for("the stranger's press answered", |calls| {
        calls
            .iter()
            .find(|(m, b)| m == "answerCallbackQuery" && b["callback_query_id"] == "press-1")
            .map(|(_, b)| b["text"].as_str().unwrap_or_default().to_string())
    });
    assert!(told.contains("not an approver"), "{told}");
    std::thread::sleep(Duration::from_millis(500));
    assert!(!marker.exists(), "a stranger's press ran the call");
    // The owner's press runs it, and the answer follows.
    tg.press(OWNER, OWNER, "press-2", &allow);
    tg.wait_text(OWNER, "Made it.");
    assert!(marker.exists(), "the allowed call did not run");
    let outcome = tg.wait_text(OWNER, "allowed by telegram:42");
    assert!(outcome.contains("touch MARKER"), "{outcome}");
    let (code, log) = d.stop("-TERM");
    assert_eq!(code, Some(0), "{log}");
    assert_no_token(&log, &sb, &config);
    let audit = channel_audit(&sb, &config);
    assert!(audited(&audit, "deny", "by telegram:666"), "{audit:#?}");
    // The dispatcher's own line names who allowed the call.
    let shell = common::run(sb.tackle(&config, &["audit", "--json", "--tool", "shell"]));
    assert!(shell.stdout.contains("queue:telegram:42"), "{shell}");
}

#[test]
fn a_rate_limit_storm_is_waited_out_and_the_message_still_answered() {
    let Some(llm) = FakeLlm::start("rules:\n  - name: any\n    when: {messages_contain: \"\"}\n    respond: {content: \"Still here.\"}\n") else {
        return;
    };
    let (sb, tg) = (Sandbox::new(), FakeTelegram::start());
    let config = config(&sb, &llm, &tg, false);
    let mut d = daemon(&sb, &config);
    tg.rate_limit(3);
    let at = Instant::now();
    tg.message(OWNER, OWNER, "are you there?");
    tg.wait_text(OWNER, "Still here.");
    assert_eq!(tg.state.0.lock().unwrap().limited, 3);
    // Each 429 said to wait a second, and was obeyed.
    assert!(at.elapsed() >= Duration::from_secs(3), "{:?}", at.elapsed());
    let (code, log) = d.stop("-TERM");
    assert_eq!(code, Some(0), "{log}");
}

#[test]
fn a_restarted_daemon_continues_the_chat_session() {
    let rules = RECALL_RULES;
    let Some(llm) = FakeLlm::start(rules) else {
        return;
    };
    let (sb, tg) = (Sandbox::new(), FakeTelegram::start());
    let config = config(&sb, &llm, &tg, false);
    let mut d = daemon(&sb, &config);
    tg.message(OWNER, OWNER, "my fruit is mango");
    tg.wait_text(OWNER, "Filed under kumquat.");
    // Killed outright: nothing of the conversation is in the daemon's memory any more.
    d.stop("-KILL");
    let mut d = daemon(&sb, &config);
    tg.message(OWNER, OWNER, "which fruit did I name?");
    tg.wait_text(OWNER, "You named mango.");
    let (code, log) = d.stop("-TERM");
    assert_eq!(code, Some(0), "{log}");
}

#[test]
fn a_refused_token_stops_the_channel_with_a_clear_error_and_nothing_else() {
    let Some(llm) = FakeLlm::start("rules: []\n") else {
        return;
    };
    let (sb, tg) = (Sandbox::new(), FakeTelegram::start());
    let config = config(&sb, &llm, &tg, false);
    let mut d = Daemon::start(
        &sb,
        &config,
        &[("TG_TOKEN", "4242:wrong-token-also-secret")],
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while tg.state.0.lock().unwrap().bad_paths.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    let (code, log) = d.stop("-TERM");
    // The daemon ran on (schedules, the API) and stopped cleanly when asked.
    assert_eq!(code, Some(0), "{log}");
    assert!(log.contains("channel bot stopped"), "{log}");
    assert!(log.contains("401"), "{log}");
    assert!(!log.contains("wrong-token-also-secret"), "{log}");
    // Stopped: it did not keep hammering the platform.
    assert_eq!(tg.state.0.lock().unwrap().bad_paths.len(), 1);
}

#[test]
fn a_message_tool_call_without_a_chat_answers_in_the_chat_the_turn_came_from() {
    let rules = concat!(
        "rules:\n",
        "  - name: done\n    when: {tool_result_contains: \"Sent to\"}\n    respond: {content: \"Told you.\"}\n",
        "  - name: tell\n    when: {messages_contain: \"ping me\"}\n    respond:\n      tool_calls:\n        - {name: message, arguments: {channel: bot, content: \"PING-FROM-TOOL\"}}\n",
    );
    let Some(llm) = FakeLlm::start(rules) else {
        return;
    };
    let (sb, tg) = (Sandbox::new(), FakeTelegram::start());
    let config = config(&sb, &llm, &tg, false);
    let config_text = std::fs::read_to_string(&config).unwrap_or_default();
    std::fs::write(
        &config,
        format!("{config_text}security:\n  auto_approved_tools: [message]\n"),
    )
    .expect("write config");
    let mut d = daemon(&sb, &config);
    tg.message(OWNER, OWNER, "ping me");
    let sent = tg.wait_text(OWNER, "PING-FROM-TOOL");
    assert_eq!(sent, "PING-FROM-TOOL");
    tg.wait_text(OWNER, "Told you.");
    let (code, log) = d.stop("-TERM");
    assert_eq!(code, Some(0), "{log}");
}

/// The daemon of the attachment tests: `message` runs without asking, the workspace holds
/// `out/report.bin` and the home, outside it, `secret.txt`.
fn attaching(sb: &Sandbox, llm: &FakeLlm, tg: &FakeTelegram) -> (PathBuf, Daemon) {
    let config = config(sb, llm, tg, false);
    let config_text = std::fs::read_to_string(&config).unwrap_or_default();
    std::fs::write(&config, format!("{config_text}{MESSAGE_AUTO}")).expect("write config");
    std::fs::create_dir_all(sb.workspace().join("out")).expect("mkdir");
    std::fs::write(sb.workspace().join("out/report.bin"), attachment()).expect("write");
    std::fs::write(sb.home().join("secret.txt"), "SECRET-OUTSIDE").expect("write");
    let d = daemon(sb, &config);
    (config, d)
}

#[test]
fn a_file_from_a_tool_is_sent_as_a_document_with_the_workspace_files_bytes() {
    let rules = attach_rules("bot", &[("send the report", "out/report.bin")]);
    let Some(llm) = FakeLlm::start(&rules) else {
        return;
    };
    let (sb, tg) = (Sandbox::new(), FakeTelegram::start());
    let (config, mut d) = attaching(&sb, &llm, &tg);
    tg.message(OWNER, OWNER, "please send the report");
    let sent = tg.wait_for("a document", |calls| {
        calls
            .iter()
            .find(|(m, _)| m == "sendDocument")
            .map(|(_, b)| b.clone())
    });
    assert_eq!(sent["document"], json!(attachment()));
    assert_eq!(sent["caption"], "the report");
    assert_eq!(sent["chat_id"], json!(OWNER));
    tg.wait_text(OWNER, "Filed.");
    let (code, log) = d.stop("-TERM");
    assert_eq!(code, Some(0), "{log}");
    assert_no_token(&log, &sb, &config);
}

#[test]
fn a_file_outside_the_workspace_is_refused_and_nothing_is_uploaded() {
    let rules = attach_rules("bot", &[("send the secret", "../home/secret.txt")]);
    let Some(llm) = FakeLlm::start(&rules) else {
        return;
    };
    let (sb, tg) = (Sandbox::new(), FakeTelegram::start());
    let (config, mut d) = attaching(&sb, &llm, &tg);
    tg.message(OWNER, OWNER, "please send the secret");
    tg.wait_text(OWNER, "Not sent.");
    assert!(tg.calls_of("sendDocument").is_empty(), "{:#?}", tg.calls());
    let everything = format!("{:?}", tg.calls());
    assert!(!everything.contains("SECRET-OUTSIDE"), "{everything}");
    let (code, log) = d.stop("-TERM");
    assert_eq!(code, Some(0), "{log}");
    // Refused for where the file is, not for anything else.
    let audit = common::run(sb.tackle(&config, &["audit", "--json", "--tool", "message"]));
    let lines: Vec<Value> = serde_json::from_str(&audit.stdout).unwrap_or_default();
    assert!(
        lines.iter().any(|l| l["verdict"] == "deny"
            && l["why"].as_str().is_some_and(|w| w.contains("secret.txt"))),
        "{audit}"
    );
}

/// `tackle doctor` with the daemon's environment.
fn doctor(sb: &Sandbox, config: &Path, token: &str) -> common::Run {
    let mut cmd = sb.tackle(config, &["doctor", "--json"]);
    cmd.env("TG_TOKEN", token);
    common::run(cmd)
}

fn channel_check(out: &common::Run) -> Value {
    let report: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "doctor --json printed no JSON ({e}): {}{}",
            out.stdout, out.stderr
        )
    });
    report["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == "channel bot (telegram)"))
        .cloned()
        .unwrap_or_else(|| panic!("no check for the channel: {report:#}"))
}

#[test]
fn doctor_probes_the_channel_and_says_how_its_reading_stands() {
    let Some(llm) = FakeLlm::start("rules:\n  - name: any\n    when: {messages_contain: \"\"}\n    respond: {content: \"Hi.\"}\n") else {
        return;
    };
    let (sb, tg) = (Sandbox::new(), FakeTelegram::start());
    let config = config(&sb, &llm, &tg, false);
    let check = channel_check(&doctor(&sb, &config, TOKEN));
    assert_eq!(check["status"], "ok", "{check:#}");
    let detail = check["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("@tackle_test_bot"), "{detail}");
    assert!(detail.contains("not read by a daemon yet"), "{detail}");

    // Once a daemon has read the chat, doctor says when.
    let mut d = daemon(&sb, &config);
    tg.message(OWNER, OWNER, "hello");
    tg.wait_text(OWNER, "Hi.");
    let (code, log) = d.stop("-TERM");
    assert_eq!(code, Some(0), "{log}");
    let check = channel_check(&doctor(&sb, &config, TOKEN));
    let detail = check["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("last read") && detail.contains("s ago"),
        "{detail}"
    );

    // A refused token fails the check, exits 1 and is never shown.
    let out = doctor(&sb, &config, "4242:wrong-token-also-secret");
    let check = channel_check(&out);
    assert_eq!(check["status"], "fail", "{check:#}");
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(
        !out.stdout.contains("wrong-token-also-secret")
            && !out.stderr.contains("wrong-token-also-secret"),
        "{}{}",
        out.stdout,
        out.stderr
    );
}

/// Two daemons on two machines (their own state directories) share their state in
/// PostgreSQL and name the same bot: one reads it, so each message is answered once; when that
/// one is killed outright, the other takes the channel over once its lease lapses.
#[test]
fn daemons_sharing_state_answer_each_message_once_and_one_takes_over_from_a_killed_reader() {
    let Some(url) = common::postgres::fresh_database() else {
        return;
    };
    let rules = "rules:\n  - name: pong\n    when: {messages_contain: \"ping\"}\n    respond: {content: \"pong\"}\n";
    let Some(llm) = FakeLlm::start(rules) else {
        return;
    };
    let tg = FakeTelegram::start();
    let machines = [Sandbox::new(), Sandbox::new()];
    let configs: Vec<PathBuf> = machines
        .iter()
        .map(|sb| {
            let path = config(sb, &llm, &tg, false);
            let mut text = std::fs::read_to_string(&path).unwrap();
            text.push_str(&format!("state_url: \"{url}\"\n"));
            std::fs::write(&path, text).unwrap();
            path
        })
        .collect();
    let mut daemons: Vec<Daemon> = machines
        .iter()
        .zip(&configs)
        .map(|(sb, c)| daemon(sb, c))
        .collect();
    let pongs = |tg: &FakeTelegram| {
        tg.calls_of("sendMessage")
            .iter()
            .filter(|b| b["text"] == "pong")
            .count()
    };
    for i in 1..=3 {
        tg.message(OWNER, OWNER, &format!("ping {i}"));
        tg.wait_for("an answer", |_| (pongs(&tg) >= i).then_some(()));
    }
    // Time for a second reader to answer again, if there were one.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        pongs(&tg),
        3,
        "each message answered once: {:#?}",
        tg.calls()
    );
    // Kill the daemon that reads the channel (the lease names its process).
    let holder =
        common::postgres::rows(&url, "SELECT owner FROM leases WHERE name = 'channel:bot'");
    let owner = holder
        .first()
        .and_then(|r| r.first().cloned().flatten())
        .expect("a daemon holds the channel's lease");
    let reader = daemons
        .iter()
        .position(|d| {
            d.pid()
                .is_some_and(|pid| owner.split('/').nth(2) == Some(pid.to_string().as_str()))
        })
        .expect("the lease names one of the daemons");
    daemons[reader].stop("-KILL");
    tg.message(OWNER, OWNER, "ping 4");
    let deadline = Instant::now() + Duration::from_secs(40);
    while pongs(&tg) < 4 {
        assert!(
            Instant::now() < deadline,
            "nobody took over: {:#?}",
            tg.calls()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let (code, log) = daemons[1 - reader].stop("-TERM");
    assert_eq!(code, Some(0), "{log}");
    assert_eq!(pongs(&tg), 4, "{:#?}", tg.calls());
    assert!(log.contains("channel bot"), "{log}");
}
