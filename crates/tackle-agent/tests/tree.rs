//! A tree of agents end to end: spawn_worker / spawn_agent / spawn / delegate / message with a
//! scripted model, the real core tools and host (real processes), the real store.

mod tree_support;

use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tackle_agent::approvers::{AutoApprover, NonInteractiveApprover};
use tackle_agent::DoneReason;
use tackle_protocol::{ApprovalAnswer, ApprovalRequest, ApprovalUnavailable, Approver};
use tokio_util::sync::CancellationToken;
use tree_support::{results, system, tool_names, Harness, Reply};

const WORKER: &str = "WORKER-PROMPT";

fn yaml(root_extra: &str, worker_tools: &str, rest: &str) -> String {
    format!(
        "agents:\n  - name: default\n    system_prompt: ROOT-PROMPT\n{root_extra}    workers:\n      - name: researcher\n        system_prompt: {WORKER}\n        tools: {worker_tools}\n{rest}"
    )
}

fn last(req: &tackle_llm::ChatRequest) -> String {
    results(req)
        .last()
        .map(|s| s.to_string())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_worker_asked_for_a_tool_outside_its_template_is_refused_by_name() {
    let h = Harness::new(
        &yaml("", "[calculate]", ""),
        Box::new(|req| {
            if results(req).is_empty() {
                Reply::Calls(vec![(
                    "spawn_worker",
                    json!({"name": "researcher", "task": "t", "tools": ["calculate", "shell"]}),
                )])
            } else {
                Reply::Text(last(req))
            }
        }),
        Duration::ZERO,
    );
    let (out, _) = h
        .run("go", Arc::new(AutoApprover), &CancellationToken::new())
        .await;
    assert!(out.text.contains("invalid_arguments"), "{}", out.text);
    assert!(out.text.contains("`shell`"), "{}", out.text);
    assert!(h.store.session_links().await.expect("links").is_empty());
}

#[tokio::test]
async fn an_unknown_preset_is_refused_as_invalid_arguments_and_nothing_is_started() {
    let h = Harness::new(
        &yaml(
            "",
            "[calculate]",
            "presets:\n  slow:\n    model: m\n  thorough: {}\n",
        ),
        Box::new(|req| {
            if results(req).is_empty() {
                Reply::Calls(vec![(
                    "spawn_worker",
                    json!({"name": "researcher", "task": "t", "preset": "fast"}),
                )])
            } else {
                Reply::Text(last(req))
            }
        }),
        Duration::ZERO,
    );
    let (out, _) = h
        .run("go", Arc::new(AutoApprover), &CancellationToken::new())
        .await;
    assert!(out.text.contains("invalid_arguments"), "{}", out.text);
    assert!(out.text.contains("unknown preset `fast`"), "{}", out.text);
    assert!(
        out.text.contains("available: `slow`, `thorough`"),
        "{}",
        out.text
    );
    assert!(h.store.session_links().await.expect("links").is_empty());
}

/// What a preset's child sent: its system prompt and model.
type Seen = Arc<Mutex<Vec<(String, String)>>>;

#[tokio::test]
async fn a_preset_reshapes_a_worker_but_never_widens_its_parents_grants() {
    // The preset changes the model and the prompt; the parent's deny list still holds.
    let seen: Seen = Arc::default();
    let log = Arc::clone(&seen);
    let h = Harness::new(
        &yaml(
            "    grants:\n      shell:\n        deny: [\"rm\"]\n",
            "[shell]",
            "presets:\n  fast:\n    model: preset-model\n    system_prompt: PRESET-LINE\n",
        ),
        Box::new(move |req| {
            if system(req).starts_with(WORKER) {
                log.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push((system(req).to_string(), req.model.clone()));
                if results(req).is_empty() {
                    return Reply::Calls(vec![("shell", json!({"command": "rm -f keep.txt"}))]);
                }
                return Reply::Text(format!("worker saw: {}", last(req)));
            }
            if results(req).is_empty() {
                Reply::Calls(vec![(
                    "spawn_worker",
                    json!({"name": "researcher", "task": "delete keep.txt", "preset": "fast"}),
                )])
            } else {
                Reply::Text(last(req))
            }
        }),
        Duration::ZERO,
    );
    std::fs::write(h.workspace().join("keep.txt"), "x").expect("write");
    let (out, _) = h
        .run("go", Arc::new(AutoApprover), &CancellationToken::new())
        .await;
    assert!(
        out.text.contains("worker saw: error (denied)"),
        "{}",
        out.text
    );
    assert!(h.workspace().join("keep.txt").exists(), "rm ran");
    let seen = seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
    assert!(!seen.is_empty(), "the worker sent nothing");
    for (prompt, model) in &seen {
        assert_eq!(prompt, &format!("{WORKER}\n\nPRESET-LINE"));
        assert_eq!(model, "preset-model");
    }
}

#[tokio::test]
async fn a_peer_spawned_with_a_preset_still_runs_with_the_intersection() {
    let rest = "  - name: wide\n    system_prompt: PEER-PROMPT\npresets:\n  fast:\n    system_prompt: PRESET-LINE\n";
    let h = Harness::new(
        &yaml(
            "    grants:\n      shell:\n        allow: [\"ls\"]\n",
            "[calculate]",
            rest,
        ),
        Box::new(|req| {
            if system(req) == "PEER-PROMPT\n\nPRESET-LINE" {
                if results(req).is_empty() {
                    return Reply::Calls(vec![("shell", json!({"command": "touch made.txt"}))]);
                }
                return Reply::Text(format!("peer saw: {}", last(req)));
            }
            if results(req).is_empty() {
                Reply::Calls(vec![(
                    "spawn_agent",
                    json!({"agent": "wide", "task": "make a file", "preset": "fast"}),
                )])
            } else {
                Reply::Text(last(req))
            }
        }),
        Duration::ZERO,
    );
    let (out, _) = h
        .run("go", Arc::new(AutoApprover), &CancellationToken::new())
        .await;
    assert!(
        out.text.contains("peer saw: error (denied)"),
        "{}",
        out.text
    );
    assert!(
        !h.workspace().join("made.txt").exists(),
        "the peer widened its grant"
    );
}

#[tokio::test]
async fn a_workers_shell_runs_under_its_parents_deny_list_and_is_audited_with_its_path() {
    let h = Harness::new(
        &yaml(
            "    grants:\n      shell:\n        deny: [\"rm\"]\n",
            "[shell]",
            "",
        ),
        Box::new(|req| {
            if system(req) == WORKER {
                if results(req).is_empty() {
                    return Reply::Calls(vec![("shell", json!({"command": "rm -f keep.txt"}))]);
                }
                return Reply::Text(format!("worker saw: {}", last(req)));
            }
            if results(req).is_empty() {
                Reply::Calls(vec![(
                    "spawn_worker",
                    json!({"name": "researcher", "task": "delete keep.txt"}),
                )])
            } else {
                Reply::Text(last(req))
            }
        }),
        Duration::ZERO,
    );
    std::fs::write(h.workspace().join("keep.txt"), "x").expect("write");
    let (out, root) = h
        .run("go", Arc::new(AutoApprover), &CancellationToken::new())
        .await;
    assert!(
        out.text.contains("worker saw: error (denied)"),
        "{}",
        out.text
    );
    assert!(h.workspace().join("keep.txt").exists(), "rm ran");
    let links = h.store.session_links().await.expect("links");
    assert_eq!(links.len(), 1);
    assert_eq!(links[0].parent.as_str(), root.id());
    assert_eq!(links[0].path, "default › researcher");
    let audit = h.store.audit_tail(20).await.expect("audit");
    let shell = audit
        .iter()
        .find(|r| r.tool == "shell")
        .unwrap_or_else(|| panic!("no shell record: {audit:?}"));
    assert_eq!(shell.agent, "default › researcher");
    assert_eq!(shell.outcome, "denied");
}

#[tokio::test]
async fn a_peer_with_wider_grants_runs_with_the_intersection() {
    let rest = "  - name: wide\n    system_prompt: PEER-PROMPT\n";
    let h = Harness::new(
        &yaml(
            "    grants:\n      shell:\n        allow: [\"ls\"]\n",
            "[calculate]",
            rest,
        ),
        Box::new(|req| {
            if system(req) == "PEER-PROMPT" {
                if results(req).is_empty() {
                    return Reply::Calls(vec![("shell", json!({"command": "touch made.txt"}))]);
                }
                return Reply::Text(format!("peer saw: {}", last(req)));
            }
            if results(req).is_empty() {
                Reply::Calls(vec![(
                    "spawn_agent",
                    json!({"agent": "wide", "task": "make a file"}),
                )])
            } else {
                Reply::Text(last(req))
            }
        }),
        Duration::ZERO,
    );
    let (out, _) = h
        .run("go", Arc::new(AutoApprover), &CancellationToken::new())
        .await;
    assert!(
        out.text.contains("peer saw: error (denied)"),
        "{}",
        out.text
    );
    assert!(
        !h.workspace().join("made.txt").exists(),
        "the peer widened its grant"
    );
    let links = h.store.session_links().await.expect("links");
    assert_eq!(
        links.first().map(|l| l.path.as_str()),
        Some("default › wide")
    );
}

#[tokio::test]
async fn depth_four_is_refused_at_the_default_max_depth() {
    let h = Harness::new(
        &yaml("", "[spawn_worker]", ""),
        Box::new(|req| {
            if results(req).is_empty() {
                Reply::Calls(vec![(
                    "spawn_worker",
                    json!({"name": "researcher", "task": "go deeper"}),
                )])
            } else {
                Reply::Text(last(req))
            }
        }),
        Duration::ZERO,
    );
    let (out, _) = h
        .run("go", Arc::new(AutoApprover), &CancellationToken::new())
        .await;
    assert!(out.text.contains("max_depth"), "{}", out.text);
    assert!(out.text.contains("denied"), "{}", out.text);
    // Depths 1, 2 and 3 ran; the fourth was never created.
    let links = h.store.session_links().await.expect("links");
    assert_eq!(links.len(), 3, "{links:?}");
    assert_eq!(
        links[2].path,
        "default › researcher › researcher › researcher"
    );
}

#[tokio::test]
async fn the_tree_shares_one_iteration_pool() {
    // Root max 10: its first turn spawns the worker, which uses 8 (7 tool turns and its
    // answer); the root has what is left, not a fresh 10: the last unit, for its closing
    // request.
    let h = Harness::new(
        &yaml("    max_iterations: 10\n", "[calculate]", ""),
        Box::new(|req| {
            if system(req) == WORKER {
                let n = results(req).len();
                if n < 7 {
                    // Different each time, or the loop guard would stop the worker.
                    let e = format!("{n}+1");
                    return Reply::Calls(vec![("calculate", json!({"expression": e}))]);
                }
                return Reply::Text("worker done".into());
            }
            if results(req).is_empty() {
                Reply::Calls(vec![(
                    "spawn_worker",
                    json!({"name": "researcher", "task": "count"}),
                )])
            } else {
                Reply::Calls(vec![("calculate", json!({"expression": "2+2"}))])
            }
        }),
        Duration::ZERO,
    );
    let (out, _) = h
        .run("go", Arc::new(AutoApprover), &CancellationToken::new())
        .await;
    assert_eq!(out.reason, DoneReason::MaxIterations);
    // 10 − 1 (the spawning turn) − 8 (the worker) = 1: the closing request, no tool turn.
    assert_eq!(out.iterations, 1, "{out:?}");
    assert_eq!(h.root.budget().remaining(), 0);
}

/// Records what it is asked and answers yes.
#[derive(Default)]
struct Recording(Mutex<Vec<String>>);

#[async_trait::async_trait]
impl Approver for Recording {
    fn name(&self) -> &str {
        "recording"
    }
    async fn ask(&self, req: &ApprovalRequest) -> Result<ApprovalAnswer, ApprovalUnavailable> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(req.summary.clone());
        // `y`, not `a`: every call asks again, so each one is counted.
        Ok(ApprovalAnswer::Once)
    }
}

fn shell_worker_script() -> Box<tree_support::Script> {
    Box::new(|req| {
        if system(req) == WORKER {
            if results(req).len() < 2 {
                return Reply::Calls(vec![("shell", json!({"command": "echo child-ran"}))]);
            }
            return Reply::Text(format!("worker: {}", last(req)));
        }
        if results(req).is_empty() {
            Reply::Calls(vec![(
                "spawn_worker",
                json!({"name": "researcher", "task": "run echo"}),
            )])
        } else {
            Reply::Text(last(req))
        }
    })
}

#[tokio::test]
async fn a_childs_approvals_go_to_the_root_front_end_labelled_with_its_path() {
    let h = Harness::new(
        &yaml("", "[shell]", ""),
        shell_worker_script(),
        Duration::ZERO,
    );
    let approver = Arc::new(Recording::default());
    let (out, _) = h
        .run("go", approver.clone(), &CancellationToken::new())
        .await;
    assert!(out.text.contains("child-ran"), "{}", out.text);
    let asked = approver.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
    // spawn_worker itself, then each child shell call: the root's yes to spawn_worker is
    // not inherited by what the child does.
    assert!(
        asked.iter().any(|s| s.contains("spawn_worker")),
        "{asked:?}"
    );
    let labelled: Vec<_> = asked
        .iter()
        .filter(|s| s.starts_with("[default › researcher]"))
        .collect();
    assert_eq!(labelled.len(), 2, "{asked:?}");
}

#[tokio::test]
async fn with_no_one_to_ask_a_child_reports_needs_approval_up() {
    let yaml = format!(
        "{}security:\n  auto_approved_tools: [spawn_worker]\n",
        yaml("", "[shell]", "")
    );
    let h = Harness::new(&yaml, shell_worker_script(), Duration::ZERO);
    let started = Instant::now();
    let (out, _) = h
        .run(
            "go",
            Arc::new(NonInteractiveApprover),
            &CancellationToken::new(),
        )
        .await;
    assert!(started.elapsed() < Duration::from_secs(60), "it hung");
    assert!(out.text.contains("needs_approval"), "{}", out.text);
    assert_eq!(out.needs_approval, 1, "{out:?}");
}

/// Whether a process whose command line is exactly `argv` runs on this machine (the
/// sandbox may give it its own PID namespace, so its own `$$` says nothing here).
fn running(argv: &[&str]) -> bool {
    let want: Vec<u8> = argv.iter().flat_map(|a| a.bytes().chain([0])).collect();
    std::fs::read_dir("/proc")
        .map(|dir| {
            dir.flatten().any(|e| {
                let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
                !stat.contains(") Z ")
                    && std::fs::read(e.path().join("cmdline")).is_ok_and(|c| c == want)
            })
        })
        .unwrap_or(false)
}

#[tokio::test]
async fn cancelling_the_run_kills_the_childs_process() {
    // An odd duration makes the command line unique to this test.
    const ARGV: [&str; 2] = ["sleep", "47.317"];
    let h = Harness::new(
        &yaml("", "[shell]", ""),
        Box::new(|req| {
            if system(req) == WORKER {
                return Reply::Calls(vec![("shell", json!({"command": "exec sleep 47.317"}))]);
            }
            if results(req).is_empty() {
                Reply::Calls(vec![(
                    "spawn_worker",
                    json!({"name": "researcher", "task": "sleep"}),
                )])
            } else {
                Reply::Text(last(req))
            }
        }),
        Duration::ZERO,
    );
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let saw = tokio::spawn(async move {
        for _ in 0..600 {
            if running(&ARGV) {
                trigger.cancel();
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        trigger.cancel();
        false
    });
    let (out, _) = h.run("go", Arc::new(AutoApprover), &cancel).await;
    assert!(
        saw.await.unwrap_or(false),
        "the child's sleep never started"
    );
    assert_eq!(out.reason, DoneReason::Cancelled, "{out:?}");
    let mut gone = false;
    for _ in 0..200 {
        if !running(&ARGV) {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(gone, "the child's sleep survived the cancel");
}

#[tokio::test]
async fn a_background_task_posts_its_result_into_the_parent_session() {
    let h = Harness::new(
        &yaml("", "[calculate]", ""),
        Box::new(|req| {
            let user = req
                .messages
                .iter()
                .find(|m| m.role == tackle_protocol::message::Role::User)
                .map(|m| m.content.clone())
                .unwrap_or_default();
            if user == "background job" {
                assert!(!tool_names(req).iter().any(|t| t.starts_with("spawn")));
                return Reply::Text("background answer 42".into());
            }
            let last_user = req
                .messages
                .iter()
                .rev()
                .find(|m| m.role == tackle_protocol::message::Role::User)
                .map(|m| m.content.clone())
                .unwrap_or_default();
            if last_user == "what came back?" {
                let seen = req
                    .messages
                    .iter()
                    .any(|m| m.content.starts_with("[Background task 'bg' completed]"));
                return Reply::Text(format!("seen: {seen}"));
            }
            if results(req).is_empty() {
                Reply::Calls(vec![(
                    "spawn",
                    json!({"task": "background job", "label": "bg"}),
                )])
            } else {
                Reply::Text("started".into())
            }
        }),
        Duration::ZERO,
    );
    let (_, mut root) = h
        .run("go", Arc::new(AutoApprover), &CancellationToken::new())
        .await;
    h.tree.wait_tasks().await;
    // The live session's next turn sees it without being resumed.
    let next = h
        .run_in(
            &mut root,
            "what came back?",
            Arc::new(AutoApprover),
            &CancellationToken::new(),
        )
        .await;
    assert_eq!(next.text, "seen: true");
    assert!(h.tree.open_tasks().is_empty());
    let entries = h
        .store
        .entries(&tackle_store::SessionId(root.id().to_string()))
        .await
        .expect("entries");
    let posted = entries.iter().any(|e| {
        e.content
            .to_string()
            .contains("[Background task 'bg' completed]")
            && e.content.to_string().contains("background answer 42")
    });
    assert!(posted, "{entries:?}");
}

#[tokio::test]
async fn delegate_aggregate_in_parallel_takes_about_one_model_turn() {
    let turn = Duration::from_millis(1500);
    // Every model turn takes `turn`; the delegate call is timed alone, through the
    // dispatcher, so only the roles' turns count.
    let slow = Harness::new(
        &yaml("", "[calculate]", ""),
        Box::new(|req| Reply::Text(format!("done by {}", system(req)))),
        turn,
    );
    let session = tackle_agent::Session::create(slow.store.clone(), "default")
        .await
        .expect("session");
    let call = tackle_protocol::ToolCall {
        id: "d".into(),
        name: "delegate".into(),
        arguments: json!({"action": "aggregate", "parallel": true, "tasks": [
            {"role": "alpha", "task": "a"}, {"role": "beta", "task": "b"}, {"role": "gamma", "task": "c"}
        ]}),
    };
    let started = Instant::now();
    let out = slow
        .dispatcher
        .dispatch(
            tackle_agent::CallRequest::new(call, Arc::new(AutoApprover)).session(session.id()),
        )
        .await
        .expect("delegate runs");
    let took = started.elapsed();
    for role in ["alpha", "beta", "gamma"] {
        assert!(
            out.content
                .contains(&format!("[{role}]: done by You are a {role}")),
            "{}",
            out.content
        );
    }
    // Three roles one after another would take at least 3 turns (4.5 s); in parallel ~1.
    assert!(took < turn * 5 / 2, "took {took:?}");
}

/// A one-request HTTP server on 127.0.0.1 that hands back the request body.
fn one_shot_server() -> (String, std::sync::mpsc::Receiver<String>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/hook", listener.local_addr().expect("addr"));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let Ok((stream, _)) = listener.accept() else {
            return;
        };
        let mut reader = BufReader::new(stream.try_clone().expect("clone"));
        let mut len = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; len];
        let _ = reader.read_exact(&mut body);
        let _ = tx.send(String::from_utf8_lossy(&body).into_owned());
        let mut s = stream;
        let _ = s.write_all(
            b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        );
    });
    (url, rx)
}

#[tokio::test]
async fn message_reaches_a_configured_local_webhook_and_refuses_an_unconfigured_channel() {
    let (url, body) = one_shot_server();
    let yaml = format!(
        "{}channels:\n  ops:\n    type: webhook\n    url: {url}\n",
        yaml("", "[calculate]", "")
    );
    let h = Harness::new(
        &yaml,
        Box::new(|_| Reply::Text(String::new())),
        Duration::ZERO,
    );
    let session = tackle_agent::Session::create(h.store.clone(), "default")
        .await
        .expect("session");
    let send = |args: serde_json::Value| tackle_protocol::ToolCall {
        id: "m".into(),
        name: "message".into(),
        arguments: args,
    };
    let out = h
        .dispatcher
        .dispatch(
            tackle_agent::CallRequest::new(
                send(json!({"content": "deploy finished", "channel": "ops", "chat_id": "c1"})),
                Arc::new(AutoApprover),
            )
            .session(session.id()),
        )
        .await
        .expect("message sent");
    assert!(out.content.contains("ops:c1"), "{}", out.content);
    let got = body
        .recv_timeout(Duration::from_secs(30))
        .expect("the webhook got a POST");
    let got: serde_json::Value = serde_json::from_str(&got).expect("JSON body");
    assert_eq!(got["content"], "deploy finished");
    assert_eq!(got["chat_id"], "c1");
    assert_eq!(got["session"], session.id());

    let err = h
        .dispatcher
        .dispatch(
            tackle_agent::CallRequest::new(
                send(json!({"content": "x", "channel": "pager"})),
                Arc::new(AutoApprover),
            )
            .session(session.id()),
        )
        .await
        .expect_err("an unconfigured channel is refused");
    assert_eq!(err.kind, tackle_protocol::ErrorKind::InvalidArguments);
    assert!(err.message.contains("`session`, `ops`"), "{}", err.message);

    // `session`: written to the session log.
    h.dispatcher
        .dispatch(
            tackle_agent::CallRequest::new(
                send(json!({"content": "hello front end"})),
                Arc::new(AutoApprover),
            )
            .session(session.id()),
        )
        .await
        .expect("session message");
    let entries = h
        .store
        .entries(&tackle_store::SessionId(session.id().to_string()))
        .await
        .expect("entries");
    assert!(entries
        .iter()
        .any(|e| e.content["message"] == "hello front end"));
}

#[tokio::test]
async fn a_child_cannot_call_a_tool_outside_its_scope_even_by_name() {
    let h = Harness::new(
        &yaml("", "[calculate]", ""),
        Box::new(|req| {
            if system(req) == WORKER {
                if results(req).is_empty() {
                    assert_eq!(tool_names(req), vec!["calculate".to_string()]);
                    return Reply::Calls(vec![("shell", json!({"command": "touch x.txt"}))]);
                }
                return Reply::Text(format!("worker saw: {}", last(req)));
            }
            if results(req).is_empty() {
                Reply::Calls(vec![(
                    "spawn_worker",
                    json!({"name": "researcher", "task": "t"}),
                )])
            } else {
                Reply::Text(last(req))
            }
        }),
        Duration::ZERO,
    );
    let (out, _) = h
        .run("go", Arc::new(AutoApprover), &CancellationToken::new())
        .await;
    assert!(
        out.text.contains("worker saw: error (not_found)"),
        "{}",
        out.text
    );
    assert!(!h.workspace().join("x.txt").exists());
}

#[tokio::test]
async fn more_children_at_once_than_max_concurrent_children_is_denied_naming_the_limit() {
    let h = Harness::new(
        &yaml("    max_concurrent_children: 1\n", "[calculate]", ""),
        Box::new(|req| {
            if system(req) == WORKER {
                return Reply::Text("worker done".into());
            }
            if results(req).is_empty() {
                let call = json!({"name": "researcher", "task": "t"});
                Reply::Calls(vec![("spawn_worker", call.clone()), ("spawn_worker", call)])
            } else {
                Reply::Text(results(req).join("\n---\n"))
            }
        }),
        // Each model turn takes a while, so the first child is still running when the
        // second is asked for.
        Duration::from_millis(200),
    );
    let (out, _) = h
        .run("go", Arc::new(AutoApprover), &CancellationToken::new())
        .await;
    assert!(out.text.contains("worker done"), "{}", out.text);
    assert!(out.text.contains("max_concurrent_children"), "{}", out.text);
    assert_eq!(out.denied, 1, "{out:?}");
}

#[tokio::test]
async fn a_peer_reaches_only_the_memory_banks_its_caller_reaches() {
    // `wide` may write the `team` bank; its caller may not: started by it, `wide` cannot.
    let rest = "  - name: wide\n    system_prompt: PEER-PROMPT\nmemory_banks:\n  team:\n    write: [wide]\n";
    let h = Harness::new(
        &yaml("", "[calculate]", rest),
        Box::new(|req| {
            if system(req) == "PEER-PROMPT" {
                return match results(req).len() {
                    0 => Reply::Calls(vec![(
                        "remember",
                        json!({"key": "k", "value": "shared secret", "bank": "team"}),
                    )]),
                    1 => Reply::Calls(vec![("remember", json!({"key": "own", "value": "mine"}))]),
                    _ => Reply::Text(results(req).join("\n---\n")),
                };
            }
            if results(req).is_empty() {
                Reply::Calls(vec![(
                    "spawn_agent",
                    json!({"agent": "wide", "task": "remember"}),
                )])
            } else {
                Reply::Text(last(req))
            }
        }),
        Duration::ZERO,
    );
    let (out, _) = h
        .run("go", Arc::new(AutoApprover), &CancellationToken::new())
        .await;
    let mut parts = out.text.split("\n---\n");
    let team = parts.next().unwrap_or_default();
    let own = parts.next().unwrap_or_default();
    assert!(
        team.starts_with("error ("),
        "the team bank was written: {}",
        out.text
    );
    assert!(
        !own.starts_with("error ("),
        "its own memory failed: {}",
        out.text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_task_keeps_the_pool_of_the_turn_that_started_it() {
    // Root max 5. Turn 1: the root spawns (1), the task sleeps (1), the root answers (1):
    // two left in turn 1's pool, one of them kept for a closing request. Turn 2 starts while
    // the task sleeps; its new pool is the root's alone, so the task gets one more tool turn,
    // not a refilled pool, and no closing request.
    let tool_turns = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = Arc::clone(&tool_turns);
    let h = Harness::new(
        &yaml("    max_iterations: 5\n", "[calculate]", ""),
        Box::new(move |req| {
            let first = req
                .messages
                .iter()
                .find(|m| m.role == tackle_protocol::message::Role::User)
                .map(|m| m.content.clone())
                .unwrap_or_default();
            if first == "background job" {
                if req.tools.is_empty() {
                    return Reply::Text("out of iterations".into());
                }
                let n = counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if n == 0 {
                    return Reply::Calls(vec![("shell", json!({"command": "sleep 2"}))]);
                }
                // Different each time, or the loop guard would stop the task.
                let e = format!("{n}+1");
                return Reply::Calls(vec![("calculate", json!({"expression": e}))]);
            }
            let last_user = req
                .messages
                .iter()
                .rev()
                .find(|m| m.role == tackle_protocol::message::Role::User)
                .map(|m| m.content.clone())
                .unwrap_or_default();
            if last_user == "second" || !results(req).is_empty() {
                Reply::Text("root answer".into())
            } else {
                Reply::Calls(vec![(
                    "spawn",
                    json!({"task": "background job", "label": "bg"}),
                )])
            }
        }),
        Duration::ZERO,
    );
    let cancel = CancellationToken::new();
    let (out, mut session) = h.run("first", Arc::new(AutoApprover), &cancel).await;
    assert_eq!(out.reason, DoneReason::Answer, "{out:?}");
    let out = h
        .run_in(&mut session, "second", Arc::new(AutoApprover), &cancel)
        .await;
    assert_eq!(out.reason, DoneReason::Answer, "{out:?}");
    assert_eq!(
        h.root.budget().remaining(),
        4,
        "turn 2 has a pool of its own"
    );
    tokio::time::timeout(Duration::from_secs(30), h.tree.wait_tasks())
        .await
        .expect("the task ends");
    assert_eq!(
        tool_turns.load(std::sync::atomic::Ordering::SeqCst),
        2,
        "the sleep and one more turn: what turn 1's pool had left"
    );
    let stored = format!(
        "{:?}",
        h.store
            .entries(&tackle_store::SessionId(session.id().to_string()))
            .await
    );
    assert!(stored.contains("pool is used up"), "{stored}");
    assert!(
        !stored.contains("out of iterations"),
        "a task sends no closing request: {stored}"
    );
}

/// A delegated role is offered none of the tools that start children (those whose spec says
/// `spawns_children`: a role does not nest), yet keeps the rest of its parent's tools.
#[tokio::test]
async fn a_delegated_role_is_offered_no_tool_that_starts_children() {
    const SPAWNING: [&str; 4] = ["spawn", "spawn_agent", "spawn_worker", "delegate"];
    let h = Harness::new(
        &yaml("", "[calculate]", ""),
        Box::new(|req| {
            if system(req) != "ROOT-PROMPT" {
                let names = tool_names(req);
                let spawning: Vec<&String> = names
                    .iter()
                    .filter(|n| SPAWNING.contains(&n.as_str()))
                    .collect();
                return Reply::Text(format!(
                    "child offered calculate: {}, spawning: {spawning:?}",
                    names.iter().any(|n| n == "calculate")
                ));
            }
            if results(req).is_empty() {
                Reply::Calls(vec![(
                    "delegate",
                    json!({"action": "run", "role": "analyst", "task": "t"}),
                )])
            } else {
                Reply::Text(last(req))
            }
        }),
        Duration::ZERO,
    );
    let (out, _) = h
        .run("go", Arc::new(AutoApprover), &CancellationToken::new())
        .await;
    assert!(
        out.text
            .contains("child offered calculate: true, spawning: []"),
        "{}",
        out.text
    );
}
