//! The daemon's HTTP API under load (issue #40): many clients at once, each in its own
//! session over `X-Tackle-Session`, against the real binary and an instant model that answers
//! from the conversation it is sent, so every answer can be checked for its session and turn.
//! Then the same under a `kill -9` with turns and approvals in flight: the store must come
//! back intact, every answer given still stored, no approval silently gone.
//!
//! The measurements (`#[ignore]`d) print requests/s and latency; see BENCHMARKS.md.

mod common;
#[path = "gateway_load/daemon.rs"]
mod daemon;
#[path = "gateway_load/instant_model.rs"]
mod instant_model;

use common::{free_port, run, Sandbox};
use daemon::{gateway_yaml, Api, Daemon, APPROVE_TOKEN, CHAT_TOKEN};
use instant_model::InstantModel;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// A config with agents `NAME0..NAMEn` for each `(NAME, n)`, all on the instant model.
fn config(sb: &Sandbox, model: &InstantModel, port: u16, agents: &[(&str, usize)]) -> PathBuf {
    let mut yaml = model.backend_yaml();
    yaml.push_str("agents:\n");
    for (name, n) in agents {
        for i in 0..*n {
            yaml.push_str(&format!(
                "  - name: {name}{i}\n    backend: instant\n    model: instant-model\n"
            ));
        }
    }
    // Long enough that an approval pending at the kill is still pending after the restart.
    yaml.push_str(&gateway_yaml(port, 600));
    sb.config(&yaml)
}

/// What a client asks at turn `turn` of session `s`, and the call it expects, if any.
struct Ask {
    task: String,
    head: String,
    calc: Option<(String, i64)>,
}

fn ask(s: usize, turn: usize, calc_every: usize) -> Ask {
    let nonce = format!("s{s:03}");
    let head = format!("nonce={nonce} turn={turn} seen={turn} foreign=0");
    if (s + turn).is_multiple_of(calc_every) {
        let expr = format!("{s}*1000+{turn}");
        let value = i64::try_from(s * 1000 + turn).unwrap_or(i64::MAX);
        return Ask {
            task: format!("nonce={nonce} turn={turn} calc={expr}"),
            head,
            calc: Some((expr, value)),
        };
    }
    Ask {
        task: format!("nonce={nonce} turn={turn}"),
        head,
        calc: None,
    }
}

/// What the answer to `ask` must be; `Err` says how it is not.
fn check(ask: &Ask, status: u16, body: &Value) -> Result<(), String> {
    if status != 200 {
        return Err(format!("status {status}: {body}"));
    }
    let text = body["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or_default();
    let calls = body["tackle"]["tool_calls"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let right = match &ask.calc {
        None => text == ask.head && calls.is_empty(),
        Some((_, value)) => {
            text.strip_prefix(&ask.head)
                .and_then(|rest| rest.strip_prefix(" result="))
                .is_some_and(|r| r.contains(&value.to_string()))
                && calls.len() == 1
                && calls[0]["name"] == "calculate"
                && calls[0]["ok"] == true
        }
    };
    if right && body["tackle"]["outcome"] == "ok" {
        Ok(())
    } else {
        Err(format!("asked {:?}, got {body}", ask.task))
    }
}

/// One answered turn, as the client saw it.
struct Answered {
    turn: usize,
    text: String,
    calc: Option<String>,
}

/// One client's session: its id and its answered turns; `failed` says what went wrong.
#[derive(Default)]
struct Client {
    session: Option<String>,
    answered: Vec<Answered>,
    failed: Option<String>,
}

/// Session `s` on `model`: `turns` turns, the first opening the session, the rest continuing it
/// with `X-Tackle-Session`, each right answer counted in `answers`. Stops at the first wrong or
/// missing answer.
fn client(
    api: Api,
    model: &str,
    (s, turns, calc_every): (usize, usize, usize),
    answers: &AtomicUsize,
) -> Client {
    let mut out = Client::default();
    for turn in 1..=turns {
        let ask = ask(s, turn, calc_every);
        let (status, body) = api.complete(model, out.session.as_deref(), &ask.task);
        if let Err(e) = check(&ask, status, &body) {
            out.failed = Some(format!("session {s} turn {turn}: {e}"));
            return out;
        }
        if out.session.is_none() {
            out.session = body["tackle"]["session"].as_str().map(str::to_string);
        }
        answers.fetch_add(1, Ordering::SeqCst);
        out.answered.push(Answered {
            turn,
            text: body["choices"][0]["message"]["content"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            calc: ask.calc.map(|(expr, _)| expr),
        });
    }
    out
}

fn audit(sb: &Sandbox, config: &Path) -> Vec<Value> {
    let r = run(sb.tackle(config, &["audit", "--json"]));
    assert_eq!(r.code, 0, "{r}");
    serde_json::from_str::<Value>(&r.stdout)
        .unwrap_or_else(|e| panic!("{e}\n{r}"))
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Every tool call a client's answers show has its audit record (ok, in its session, with
/// its expression), and every completion its request line; none is left `running`. With
/// `exact`, no call is audited that no answer shows (after a kill, the call of a turn whose
/// answer never came may be).
fn assert_audited(records: &[Value], clients: &[Client], exact: bool) {
    let mut calls: BTreeMap<(&str, &str), Vec<&str>> = BTreeMap::new();
    let mut requests: BTreeMap<&str, usize> = BTreeMap::new();
    for r in records {
        let session = r["session_id"].as_str().unwrap_or_default();
        let tool = r["tool"].as_str().unwrap_or_default();
        assert_ne!(r["outcome"], "running", "a call left running: {r}");
        if tool == "api" {
            let line = r["args_summary"].as_str().unwrap_or_default();
            if line.starts_with("POST /v1/chat/completions") && line.ends_with("200") {
                *requests.entry(session).or_default() += 1;
            }
        } else if r["outcome"] == "ok" {
            let summary = r["args_summary"].as_str().unwrap_or_default();
            calls.entry((session, tool)).or_default().push(summary);
        }
    }
    for c in clients {
        let Some(session) = c.session.as_deref() else {
            continue;
        };
        let exprs: Vec<&str> = c
            .answered
            .iter()
            .filter_map(|a| a.calc.as_deref())
            .collect();
        let audited = calls
            .get(&(session, "calculate"))
            .cloned()
            .unwrap_or_default();
        assert!(
            audited.len() == exprs.len() || (!exact && audited.len() > exprs.len()),
            "session {session}: calls {exprs:?}, audited {audited:?}"
        );
        for expr in exprs {
            assert!(
                audited.iter().any(|s| s.contains(expr)),
                "session {session}: {expr} not audited: {audited:?}"
            );
        }
        assert!(
            requests.get(session).copied().unwrap_or(0) >= c.answered.len(),
            "session {session}: {} answers, {:?} request lines",
            c.answered.len(),
            requests.get(session)
        );
    }
}

const LOAD_AGENTS: usize = 16;

#[test]
fn two_hundred_sessions_of_ten_turns_at_once_each_get_their_own_answers_all_audited() {
    const SESSIONS: usize = 200;
    const TURNS: usize = 10;
    let model = InstantModel::start();
    let sb = Sandbox::new();
    let port = free_port();
    let config = config(&sb, &model, port, &[("load", LOAD_AGENTS)]);
    let mut daemon = Daemon::start(&sb, &config, port);
    let api = daemon.api;
    let started = Instant::now();
    let clients: Vec<Client> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..SESSIONS)
            .map(|s| {
                let model = format!("tackle:load{}", s % LOAD_AGENTS);
                std::thread::Builder::new()
                    .stack_size(256 * 1024)
                    .spawn_scoped(scope, move || {
                        client(api, &model, (s, TURNS, 3), &AtomicUsize::new(0))
                    })
                    .expect("client thread")
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let took = started.elapsed();
    let (code, log) = daemon.stop();
    let failed: Vec<&String> = clients.iter().filter_map(|c| c.failed.as_ref()).collect();
    assert!(
        failed.is_empty(),
        "{} of {SESSIONS} sessions failed; first: {:?}\n{log}",
        failed.len(),
        failed.first()
    );
    assert_eq!(code, Some(0), "{log}");
    let sessions: BTreeSet<&str> = clients
        .iter()
        .filter_map(|c| c.session.as_deref())
        .collect();
    assert_eq!(
        sessions.len(),
        SESSIONS,
        "every client had a session of its own"
    );
    eprintln!(
        "{} turns in {:.1} s ({:.0}/s)",
        SESSIONS * TURNS,
        took.as_secs_f64(),
        (SESSIONS * TURNS) as f64 / took.as_secs_f64()
    );
    assert_audited(&audit(&sb, &config), &clients, true);
}

/// An approval as the approver answered it, or as it was seen pending.
type Approvals = BTreeMap<String, String>;

/// Answers the first `quota` approvals it sees (allow, deny, allow, …), then only watches;
/// returns what it answered.
fn approver(api: Api, quota: usize, stop: &AtomicBool) -> Approvals {
    let mut answered = Approvals::new();
    while !stop.load(Ordering::SeqCst) && answered.len() < quota {
        let (code, text) = api.get("/v1/approvals", APPROVE_TOKEN);
        let list: Value = serde_json::from_str(&text).unwrap_or_default();
        assert_eq!(code, 200, "{text}");
        for a in list["approvals"].as_array().into_iter().flatten() {
            let id = a["id"].as_str().unwrap_or_default().to_string();
            if answered.len() >= quota || answered.contains_key(&id) {
                continue;
            }
            let (word, status) = match answered.len() % 2 {
                0 => ("allow", "allowed"),
                _ => ("deny", "denied"),
            };
            let (code, body) = api.post(
                &format!("/v1/approvals/{id}"),
                APPROVE_TOKEN,
                "",
                &format!("{{\"answer\": \"{word}\"}}"),
            );
            assert_eq!(code, 200, "{body}");
            answered.insert(id, status.to_string());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    answered
}

/// The approvals pending now, by id.
fn pending(api: Api) -> BTreeSet<String> {
    api.json("/v1/approvals", APPROVE_TOKEN)["approvals"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| a["id"].as_str().map(str::to_string))
        .collect()
}

/// A client of an agent whose every call asks first: turns until the connection drops.
fn asking_client(api: Api, model: &str, s: usize, turns: usize) -> Client {
    let mut out = Client::default();
    for turn in 1..=turns {
        let nonce = format!("s{s:03}");
        let task = format!("nonce={nonce} turn={turn} shell=echo-{nonce}-{turn}");
        let (status, body) = api.complete(model, out.session.as_deref(), &task);
        if status != 200 {
            out.failed = Some(format!("session {s} turn {turn}: status {status}: {body}"));
            return out;
        }
        out.session = body["tackle"]["session"].as_str().map(str::to_string);
        out.answered.push(Answered {
            turn,
            text: body["choices"][0]["message"]["content"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            calc: None,
        });
    }
    out
}

/// `PRAGMA integrity_check` of the store as the kill left it (WAL and all), with the sqlite3
/// CLI; `None` when it is not installed.
fn integrity(state: &Path) -> Option<String> {
    let out = std::process::Command::new("sqlite3")
        .arg(state.join("tackle.db"))
        .arg("PRAGMA integrity_check;")
        .output()
        .ok()?;
    Some(format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout).trim(),
        String::from_utf8_lossy(&out.stderr).trim()
    ))
}

/// Every entry's content of session `id`, as JSON text.
fn stored(api: Api, id: &str) -> String {
    api.json(&format!("/v1/sessions/{id}"), CHAT_TOKEN)["entries"].to_string()
}

#[test]
fn kill_9_under_load_leaves_the_store_intact_every_answer_stored_and_no_approval_lost() {
    const PLAIN: usize = 48;
    const ASKING: usize = 8;
    const ASK_AGENTS: usize = 4;
    const ANSWERS_BEFORE_KILL: usize = 120;
    let model = InstantModel::start();
    let sb = Sandbox::new();
    let port = free_port();
    let config = config(
        &sb,
        &model,
        port,
        &[("load", LOAD_AGENTS), ("ask", ASK_AGENTS)],
    );
    let mut daemon = Daemon::start(&sb, &config, port);
    let api = daemon.api;
    let answers = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (plain, asking, answered, seen_pending) = std::thread::scope(|scope| {
        let plain: Vec<_> = (0..PLAIN)
            .map(|s| {
                let (model, answers) = (format!("tackle:load{}", s % LOAD_AGENTS), &answers);
                scope.spawn(move || client(api, &model, (s, 10, 2), answers))
            })
            .collect();
        let asking: Vec<_> = (0..ASKING)
            .map(|i| {
                let model = format!("tackle:ask{}", i % ASK_AGENTS);
                scope.spawn(move || asking_client(api, &model, PLAIN + i, 10))
            })
            .collect();
        let approver = scope.spawn(|| approver(api, 6, &stop));
        // Kill once the approver has answered its share, every asking agent waits on an
        // approval no one will answer, and plain turns are still coming in.
        let deadline = Instant::now() + Duration::from_secs(60);
        let seen_pending = loop {
            let now_pending = pending(api);
            let ready = approver.is_finished()
                && now_pending.len() >= ASK_AGENTS
                && answers.load(Ordering::SeqCst) >= ANSWERS_BEFORE_KILL;
            if ready || Instant::now() > deadline {
                break now_pending;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let log = daemon.kill9();
        stop.store(true, Ordering::SeqCst);
        let join = |h: std::thread::ScopedJoinHandle<'_, Client>| h.join().unwrap_or_default();
        let plain: Vec<Client> = plain.into_iter().map(join).collect();
        let asking: Vec<Client> = asking.into_iter().map(join).collect();
        let answered = approver
            .join()
            .unwrap_or_else(|_| panic!("approver\n{log}"));
        (plain, asking, answered, seen_pending)
    });
    assert_eq!(answered.len(), 6, "the approver answered its share");
    assert!(
        seen_pending.len() >= ASK_AGENTS,
        "approvals were pending at the kill: {seen_pending:?}"
    );
    let in_flight = plain.iter().filter(|c| c.answered.len() < 10).count();
    eprintln!(
        "killed with {} answers given, {in_flight} plain sessions unfinished, {} approvals pending",
        plain.iter().map(|c| c.answered.len()).sum::<usize>(),
        seen_pending.len()
    );
    // Answers given before the kill were right; after it, only dropped connections.
    for c in &plain {
        if let Some(f) = &c.failed {
            assert!(f.contains("status 0"), "{f}");
        }
    }

    // The store as the kill left it.
    match integrity(&sb.state()) {
        Some(verdict) => assert_eq!(verdict, "ok", "integrity_check after kill -9"),
        None => eprintln!("SKIP integrity_check: no sqlite3 CLI"),
    }

    let mut daemon = Daemon::start(&sb, &config, port);
    let api = daemon.api;
    // Every answer given before the kill reads back from its session.
    for c in plain.iter().chain(&asking) {
        let Some(id) = c.session.as_deref() else {
            continue;
        };
        let entries = stored(api, id);
        for a in &c.answered {
            let quoted = Value::String(a.text.clone()).to_string();
            assert!(
                entries.contains(&quoted),
                "session {id} lost turn {}'s answer {quoted}: {entries}",
                a.turn
            );
        }
    }
    // Every approval pending at the kill is still pending, or closed with who or what closed
    // it; every answered one keeps its answer.
    let now_pending = pending(api);
    let store = tackle_store::Store::open(&sb.state()).expect("open the store");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let row = |id: &str| {
        rt.block_on(store.approval(id))
            .expect("read the approval")
            .unwrap_or_else(|| panic!("approval {id} is gone"))
    };
    for id in &seen_pending {
        let a = row(id);
        let status = a.status.as_str();
        let closed = matches!(status, "expired" | "cancelled")
            && a.answered_by.as_deref().is_some_and(|b| !b.is_empty());
        assert!(
            (status == "pending" && now_pending.contains(id)) || closed,
            "approval {id} pending at the kill is now {status} by {:?}",
            a.answered_by
        );
    }
    for (id, status) in &answered {
        assert_eq!(row(id).status.as_str(), status, "approval {id}");
    }
    for a in rt
        .block_on(store.list_recent_approvals(10_000))
        .expect("list approvals")
    {
        assert!(
            a.status.as_str() == "pending" || a.answered_by.is_some(),
            "approval {} closed without a reason: {a:?}",
            a.id
        );
    }

    // Each session whose turn was waiting on an approval at the kill goes on: its call, left
    // without a result, does not make the conversation one the model refuses.
    for id in &seen_pending {
        let waited = row(id);
        let (status, body) = api.complete(
            &format!("tackle:{}", waited.agent),
            Some(&waited.session_id),
            "nonce=resumed turn=1",
        );
        assert_eq!(status, 200, "approval {id}'s session: {body}");
        assert_eq!(body["tackle"]["outcome"], "ok", "{body}");
    }
    // The restarted daemon serves new turns, on an agent that was waiting on an approval too.
    let after: Vec<Client> = [("tackle:load0", 900), ("tackle:ask0", 901)]
        .into_iter()
        .map(|(model, s)| client(api, model, (s, 2, 2), &AtomicUsize::new(0)))
        .collect();
    for c in &after {
        assert!(c.failed.is_none(), "{:?}", c.failed);
        assert_eq!(c.answered.len(), 2);
    }
    let (code, log) = daemon.stop();
    assert_eq!(code, Some(0), "{log}");
    let records = audit(&sb, &config);
    assert_audited(&records, &plain, false);
    assert_audited(&records, &after, true);
}

/// Requests/s and latency of whole completions (a new session each, one instant model turn,
/// no tool) at `concurrency` clients spread over `agents` agents; `total` requests.
fn throughput(
    api: Api,
    agents: usize,
    concurrency: usize,
    total: usize,
) -> (f64, Duration, Duration) {
    let per_client = total / concurrency;
    let started = Instant::now();
    let mut took: Vec<Duration> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..concurrency)
            .map(|c| {
                scope.spawn(move || {
                    (0..per_client)
                        .map(|i| {
                            let model = format!("tackle:load{}", (c + i) % agents);
                            let task = format!("nonce=m{c}x{i} turn=1");
                            let at = Instant::now();
                            let (status, body) = api.complete(&model, None, &task);
                            assert_eq!(status, 200, "{body}");
                            at.elapsed()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let wall = started.elapsed();
    took.sort();
    let at = |q: f64| took[((took.len() as f64 * q) as usize).min(took.len() - 1)];
    (took.len() as f64 / wall.as_secs_f64(), at(0.50), at(0.95))
}

/// Prints requests/s and p50/p95 of `POST /v1/chat/completions` (whole) with the instant
/// model, at 1 and 16 clients, over one agent (whose turns run one at a time) and over 16;
/// and p50 of the same model request sent to the model directly. Run with
/// `TACKLE_TEST_BIN=target/release/tackle cargo test --test gateway_load measure -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement, not a check"]
fn measure_completions_per_second_with_an_instant_model() {
    const TOTAL: usize = 1600;
    let model = InstantModel::start();
    let sb = Sandbox::new();
    let port = free_port();
    let config = config(&sb, &model, port, &[("load", LOAD_AGENTS)]);
    let mut daemon = Daemon::start(&sb, &config, port);
    let api = daemon.api;
    // Every agent's runtime is built by its first request: not measured.
    throughput(api, LOAD_AGENTS, LOAD_AGENTS, LOAD_AGENTS * 4);
    let direct = {
        let model_api = Api { port: model.port };
        let body =
            r#"{"model":"instant-model","messages":[{"role":"user","content":"nonce=d turn=1"}]}"#;
        let mut took: Vec<Duration> = (0..TOTAL / 4)
            .map(|_| {
                let at = Instant::now();
                let (status, text) = model_api.post("/v1/chat/completions", "-", "", body);
                assert_eq!(status, 200, "{text}");
                at.elapsed()
            })
            .collect();
        took.sort();
        took[took.len() / 2]
    };
    println!("| agents | clients | requests/s | p50 | p95 |");
    println!("| --- | --- | --- | --- | --- |");
    for (agents, clients) in [(1, 1), (1, 16), (LOAD_AGENTS, 1), (LOAD_AGENTS, 16)] {
        let total = if clients == 1 { TOTAL / 4 } else { TOTAL };
        let (rps, p50, p95) = throughput(api, agents, clients, total);
        println!(
            "| {agents} | {clients} | {rps:.0} | {:.2} ms | {:.2} ms |",
            p50.as_secs_f64() * 1e3,
            p95.as_secs_f64() * 1e3
        );
    }
    println!(
        "the model request alone, straight to the model: p50 {:.3} ms",
        direct.as_secs_f64() * 1e3
    );
    let (code, log) = daemon.stop();
    assert_eq!(code, Some(0), "{log}");
}

/// Two turns sent at once to one session run one after the other (an agent's turns do), and
/// the second is run on the conversation as the first left it, not as it was when both came.
#[test]
fn two_turns_sent_at_once_to_one_session_each_see_the_other() {
    let model = InstantModel::start();
    let sb = Sandbox::new();
    let port = free_port();
    let config = config(&sb, &model, port, &[("load", 1)]);
    let mut daemon = Daemon::start(&sb, &config, port);
    let api = daemon.api;
    let first = client(api, "tackle:load0", (0, 1, 1000), &AtomicUsize::new(0));
    assert!(first.failed.is_none(), "{:?}", first.failed);
    let session = first.session.clone().unwrap_or_default();
    let seen: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = ["nonce=s000 turn=2 calc=6*7", "nonce=s000 turn=3"]
            .into_iter()
            .map(|task| {
                let session = &session;
                scope.spawn(move || {
                    let (status, body) = api.complete("tackle:load0", Some(session), task);
                    assert_eq!(status, 200, "{body}");
                    let text = body["choices"][0]["message"]["content"]
                        .as_str()
                        .unwrap_or_default();
                    instant_model::field(text, "seen")
                        .unwrap_or("?")
                        .to_string()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let (code, log) = daemon.stop();
    assert_eq!(code, Some(0), "{log}");
    let mut sorted = seen.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        ["2", "3"],
        "each turn's count of the session's user messages: {seen:?}"
    );
}
