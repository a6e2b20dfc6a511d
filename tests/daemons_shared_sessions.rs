//! Conversations shared by daemons over one PostgreSQL database (docs/scale-out.md), through
//! the real binary's HTTP API: each turn of a conversation goes to another daemon than the
//! last, and the model's answer is computed from the whole history it is sent, so a turn that
//! missed another daemon's entries (or saw another conversation's) says so. Every call lands
//! in the one audit log, which verifies from any daemon. Two turns of one conversation sent to
//! two daemons at once are served one after the other (the session's lease).

mod common;
#[path = "gateway_load/daemon.rs"]
#[allow(dead_code)]
mod daemon;
#[path = "gateway_load/instant_model.rs"]
#[allow(dead_code)]
mod instant_model;

use common::postgres::fresh_database;
use common::{free_port, run, Sandbox};
use daemon::{gateway_yaml, Api, Daemon};
use instant_model::{field, InstantModel};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

const AGENTS: usize = 4;
const DAEMONS: usize = 3;

/// Three machines (state directories) with a daemon each, over one database.
struct Cluster {
    machines: Vec<Sandbox>,
    configs: Vec<PathBuf>,
    daemons: Vec<Daemon>,
    apis: Vec<Api>,
}

impl Cluster {
    fn start(model: &InstantModel, url: &str) -> Self {
        let machines: Vec<Sandbox> = (0..DAEMONS).map(|_| Sandbox::new()).collect();
        let ports: Vec<u16> = (0..DAEMONS).map(|_| free_port()).collect();
        let configs: Vec<PathBuf> = machines
            .iter()
            .zip(&ports)
            .map(|(sb, port)| {
                let mut yaml = model.backend_yaml();
                yaml.push_str(&format!("state_url: \"{url}\"\nagents:\n"));
                for i in 0..AGENTS {
                    yaml.push_str(&format!(
                        "  - name: load{i}\n    backend: instant\n    model: instant-model\n"
                    ));
                }
                yaml.push_str(&gateway_yaml(*port, 60));
                sb.config(&yaml)
            })
            .collect();
        let daemons: Vec<Daemon> = (0..DAEMONS)
            .map(|i| Daemon::start(&machines[i], &configs[i], ports[i]))
            .collect();
        let apis = daemons.iter().map(|d| d.api).collect();
        Self {
            machines,
            configs,
            daemons,
            apis,
        }
    }

    /// The audit log as daemon `i`'s machine reads it.
    fn audit(&self, i: usize) -> Vec<Value> {
        let r = run(self.machines[i].tackle(&self.configs[i], &["audit", "--json"]));
        assert_eq!(r.code, 0, "{r}");
        serde_json::from_str::<Value>(&r.stdout)
            .unwrap_or_else(|e| panic!("{e}\n{r}"))
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    fn stop(&mut self) {
        for d in &mut self.daemons {
            let (code, log) = d.stop();
            assert_eq!(code, Some(0), "{log}");
        }
    }
}

/// The answer's text, and the session it names.
fn answer(body: &Value) -> (&str, Option<&str>) {
    (
        body["choices"][0]["message"]["content"]
            .as_str()
            .unwrap_or_default(),
        body["tackle"]["session"].as_str(),
    )
}

/// One conversation of `turns` turns, turn `t` on daemon `(s + t) % DAEMONS`, a turn where
/// `s + t` is a multiple of 4 making a `calculate` call. Its session id and the expressions it
/// had computed.
fn conversation(apis: &[Api], s: usize, turns: usize) -> Result<(String, Vec<String>), String> {
    let model = format!("tackle:load{}", s % AGENTS);
    let nonce = format!("s{s:03}");
    let mut session: Option<String> = None;
    let mut exprs = Vec::new();
    for turn in 1..=turns {
        let on = (s + turn) % DAEMONS;
        let calc = (s + turn).is_multiple_of(4);
        let expr = format!("{s}*1000+{turn}");
        let task = if calc {
            format!("nonce={nonce} turn={turn} calc={expr}")
        } else {
            format!("nonce={nonce} turn={turn}")
        };
        let (status, body) = apis[on].complete(&model, session.as_deref(), &task);
        let (text, named) = answer(&body);
        // `seen` counts this conversation's user messages in the history the model was sent:
        // all earlier turns, whichever daemon took them; `foreign` counts other ones.
        let head = format!("nonce={nonce} turn={turn} seen={turn} foreign=0");
        let right = if calc {
            text.strip_prefix(&head)
                .and_then(|r| r.strip_prefix(" result="))
                .is_some_and(|r| r.contains(&(s * 1000 + turn).to_string()))
        } else {
            text == head
        };
        if status != 200 || !right {
            return Err(format!(
                "conversation {s}, turn {turn} on daemon {on}: {status} {body}"
            ));
        }
        if calc {
            exprs.push(expr);
        }
        if session.is_none() {
            session = named.map(str::to_string);
        }
    }
    session
        .map(|id| (id, exprs))
        .ok_or_else(|| format!("conversation {s}: no session named"))
}

#[test]
fn a_hundred_conversations_spread_over_three_daemons_each_see_their_whole_history() {
    let Some(url) = fresh_database() else {
        return;
    };
    let model = InstantModel::start();
    let mut cluster = Cluster::start(&model, &url);
    const CONVERSATIONS: usize = 100;
    const TURNS: usize = 3;
    let apis = cluster.apis.clone();
    let outcomes: Vec<Result<(String, Vec<String>), String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..CONVERSATIONS)
            .map(|s| {
                let apis = &apis;
                std::thread::Builder::new()
                    .stack_size(256 * 1024)
                    .spawn_scoped(scope, move || conversation(apis, s, TURNS))
                    .expect("client thread")
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("client thread"))
            .collect()
    });
    let failed: Vec<&String> = outcomes.iter().filter_map(|o| o.as_ref().err()).collect();
    assert!(
        failed.is_empty(),
        "{} of {CONVERSATIONS} conversations went wrong; first: {}",
        failed.len(),
        failed[0]
    );

    // One audit log: the third machine sees every call any daemon ran, once, in its session.
    let records = cluster.audit(2);
    let mut calls: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in &records {
        assert_ne!(r["outcome"], "running", "a call left running: {r}");
        if r["tool"] == "calculate" && r["outcome"] == "ok" {
            calls
                .entry(r["session_id"].as_str().unwrap_or_default().to_string())
                .or_default()
                .push(r["args_summary"].as_str().unwrap_or_default().to_string());
        }
    }
    for (session, exprs) in outcomes.iter().flatten() {
        let audited = calls.get(session).cloned().unwrap_or_default();
        assert_eq!(
            audited.len(),
            exprs.len(),
            "session {session}: calls {exprs:?}, audited {audited:?}"
        );
        for expr in exprs {
            assert!(
                audited.iter().any(|a| a.contains(expr.as_str())),
                "{session}: {expr}"
            );
        }
    }
    // Each daemon signed part of the one chain; every machine verifies all of it.
    for i in 0..DAEMONS {
        let r = run(cluster.machines[i].tackle(&cluster.configs[i], &["audit", "verify"]));
        assert_eq!(r.code, 0, "daemon {i}'s machine: {r}");
    }
    cluster.stop();
}

#[test]
fn two_turns_of_one_conversation_sent_to_two_daemons_at_once_are_served_one_after_the_other() {
    let Some(url) = fresh_database() else {
        return;
    };
    let model = InstantModel::start();
    let mut cluster = Cluster::start(&model, &url);
    const CONVERSATIONS: usize = 12;
    let apis = cluster.apis.clone();
    let outcomes: Vec<Result<(), String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..CONVERSATIONS)
            .map(|s| {
                let apis = &apis;
                scope.spawn(move || {
                    let model = format!("tackle:load{}", s % AGENTS);
                    let nonce = format!("p{s:02}");
                    let (status, body) =
                        apis[0].complete(&model, None, &format!("nonce={nonce} turn=1"));
                    let session = match (status, answer(&body).1) {
                        (200, Some(id)) => id.to_string(),
                        _ => return Err(format!("{s}: the first turn: {status} {body}")),
                    };
                    // Turns 2 and 3 at once, on two other daemons.
                    let seen: Vec<Option<usize>> = std::thread::scope(|inner| {
                        let turns: Vec<_> = [(1, 2), (2, 3)]
                            .into_iter()
                            .map(|(on, turn)| {
                                let (session, model, nonce) = (&session, &model, &nonce);
                                inner.spawn(move || {
                                    let (status, body) = apis[on].complete(
                                        model,
                                        Some(session),
                                        &format!("nonce={nonce} turn={turn}"),
                                    );
                                    let (text, _) = answer(&body);
                                    (status == 200 && field(text, "foreign") == Some("0"))
                                        .then(|| field(text, "seen")?.parse().ok())
                                        .flatten()
                                })
                            })
                            .collect();
                        turns.into_iter().map(|t| t.join().expect("turn")).collect()
                    });
                    // Served one after the other, the first saw two of this conversation's
                    // messages and the second three; interleaved, both would have seen two.
                    let mut seen: Vec<usize> = seen
                        .into_iter()
                        .collect::<Option<_>>()
                        .ok_or_else(|| format!("{s}: a concurrent turn failed"))?;
                    seen.sort_unstable();
                    if seen != [2, 3] {
                        return Err(format!("{s}: the two turns saw {seen:?} of the history"));
                    }
                    let (status, body) =
                        apis[2].complete(&model, Some(&session), &format!("nonce={nonce} turn=4"));
                    let (text, _) = answer(&body);
                    if status != 200 || field(text, "seen") != Some("4") {
                        return Err(format!("{s}: the fourth turn: {status} {body}"));
                    }
                    Ok(())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("conversation"))
            .collect()
    });
    let failed: Vec<&String> = outcomes.iter().filter_map(|o| o.as_ref().err()).collect();
    assert!(failed.is_empty(), "{failed:?}");
    cluster.stop();
}
