//! The tree-wide iteration pool under load: every node of a tree (root, workers, peers,
//! grandchildren, parallel siblings, background tasks, compactions) claims a unit before each
//! model request, so however the tree fans out the model sees at most `max_iterations`
//! requests, and a node that finds the pool empty ends saying so.

mod tree_support;

use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tackle_agent::approvers::AutoApprover;
use tackle_agent::DoneReason;
use tokio_util::sync::CancellationToken;
use tree_support::{results, system, Harness, Reply};

fn yaml(pool: u32) -> String {
    format!(
        "agents:
  - name: default
    system_prompt: ROOT-PROMPT
    max_iterations: {pool}
    max_concurrent_children: 8
    workers:
      - name: lead
        system_prompt: LEAD-PROMPT
        tools: [spawn_worker, calculate]
      - name: leaf
        system_prompt: LEAF-PROMPT
        tools: [calculate]
  - name: peer
    system_prompt: PEER-PROMPT
"
    )
}

/// How the root fans out on its first model turn.
#[derive(Clone, Copy, Debug)]
enum Shape {
    /// 8 `spawn_worker` leads in parallel, each starting 3 leaves in parallel.
    Workers,
    /// 6 `spawn_agent` peers in parallel.
    Peers,
    /// `delegate` aggregate in parallel over 8 roles.
    Delegate,
    /// A lead that starts a lead that starts a leaf, one below the other.
    Nested,
    /// 10 `compact` calls in one turn.
    Compactions,
}

/// Every model request the tree sends, and those sent without tools (closing summaries).
#[derive(Default)]
struct Counts {
    requests: AtomicUsize,
    closing: AtomicUsize,
}

/// A different calculation each time: the loop guard never stops a node, so every node
/// would loop forever if the pool let it.
fn another(n: usize) -> Reply {
    Reply::Calls(vec![("calculate", json!({"expression": format!("{n}+1")}))])
}

fn many(name: &'static str, args: impl Fn(usize) -> Value, n: usize) -> Reply {
    Reply::Calls((0..n).map(|i| (name, args(i))).collect())
}

fn harness(shape: Shape, pool: u32, counts: Arc<Counts>) -> Harness {
    let script = Box::new(move |req: &tackle_llm::ChatRequest| {
        let n = counts.requests.fetch_add(1, Ordering::SeqCst);
        if req.tools.is_empty() {
            // A compaction's summary carries no system prompt; a node's closing request does.
            if system(req).is_empty() {
                return Reply::Text("a summary".into());
            }
            counts.closing.fetch_add(1, Ordering::SeqCst);
            return Reply::Text("closing summary".into());
        }
        let first = results(req).is_empty();
        match system(req) {
            "ROOT-PROMPT" if first => match shape {
                Shape::Workers => many(
                    "spawn_worker",
                    |i| json!({"name": "lead", "task": format!("lead {i}")}),
                    8,
                ),
                Shape::Peers => many(
                    "spawn_agent",
                    |i| json!({"agent": "peer", "task": format!("peer {i}")}),
                    6,
                ),
                Shape::Delegate => Reply::Calls(vec![(
                    "delegate",
                    json!({"action": "aggregate", "parallel": true, "tasks":
                        (0..8).map(|i| json!({"role": "leaf", "task": format!("role {i}")})).collect::<Vec<_>>()}),
                )]),
                Shape::Nested => Reply::Calls(vec![(
                    "spawn_worker",
                    json!({"name": "lead", "task": "nest"}),
                )]),
                Shape::Compactions => many("compact", |_| json!({}), 10),
            },
            "LEAD-PROMPT" if first => match shape {
                Shape::Nested if req.messages.iter().any(|m| m.content == "nest") => {
                    Reply::Calls(vec![(
                        "spawn_worker",
                        json!({"name": "lead", "task": "nest deeper"}),
                    )])
                }
                Shape::Nested => Reply::Calls(vec![(
                    "spawn_worker",
                    json!({"name": "leaf", "task": "bottom"}),
                )]),
                _ => many(
                    "spawn_worker",
                    |i| json!({"name": "leaf", "task": format!("leaf {i}")}),
                    3,
                ),
            },
            _ => another(n),
        }
    });
    Harness::with_compactor(&yaml(pool), script, Duration::from_millis(2))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn no_tree_shape_sends_more_model_requests_than_the_pool() {
    for shape in [
        Shape::Workers,
        Shape::Peers,
        Shape::Delegate,
        Shape::Nested,
        Shape::Compactions,
    ] {
        for pool in [1u32, 2, 5, 8, 13, 40] {
            let counts = Arc::new(Counts::default());
            let h = harness(shape, pool, Arc::clone(&counts));
            let (out, _) = tokio::time::timeout(
                Duration::from_secs(60),
                h.run("go", Arc::new(AutoApprover), &CancellationToken::new()),
            )
            .await
            .unwrap_or_else(|_| panic!("{shape:?}/{pool}: the tree ends"));
            let sent = counts.requests.load(Ordering::SeqCst);
            let case = format!("{shape:?}, pool {pool}: {sent} requests, {out:?}");
            assert!(sent <= pool as usize, "beyond the pool: {case}");
            // Every node wants more: the whole pool is used, to the unit.
            assert_eq!(sent, pool as usize, "{case}");
            assert_eq!(h.root.budget().remaining(), 0, "{case}");
            assert_eq!(out.reason, DoneReason::MaxIterations, "{case}");
            assert_eq!(out.text, "closing summary", "{case}");
            assert_eq!(
                counts.closing.load(Ordering::SeqCst),
                1,
                "only the root sends a closing request, none of its children: {case}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_child_that_empties_the_pool_reports_it_and_its_parent_gets_only_the_closing_request() {
    let counts = Arc::new(Counts::default());
    let seen = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let (c, s) = (Arc::clone(&counts), Arc::clone(&seen));
    let h = Harness::new(
        &yaml(6),
        Box::new(move |req| {
            let n = c.requests.fetch_add(1, Ordering::SeqCst);
            if req.tools.is_empty() {
                c.closing.fetch_add(1, Ordering::SeqCst);
                if let Ok(mut seen) = s.lock() {
                    seen.extend(results(req).iter().map(|r| r.to_string()));
                }
                return Reply::Text("closing summary".into());
            }
            if system(req) == "ROOT-PROMPT" && results(req).is_empty() {
                return Reply::Calls(vec![(
                    "spawn_worker",
                    json!({"name": "leaf", "task": "loop"}),
                )]);
            }
            another(n)
        }),
        Duration::ZERO,
    );
    let (out, _) = h
        .run("go", Arc::new(AutoApprover), &CancellationToken::new())
        .await;
    // The root's spawning turn (1), the leaf's turns (4: all but the closing unit), the
    // root's closing request (1).
    assert_eq!(counts.requests.load(Ordering::SeqCst), 6, "{out:?}");
    assert_eq!(counts.closing.load(Ordering::SeqCst), 1, "{out:?}");
    assert_eq!(out.reason, DoneReason::MaxIterations);
    assert_eq!(out.iterations, 1, "the root's one tool turn: {out:?}");
    let seen = seen.lock().map(|s| s.join("\n")).unwrap_or_default();
    assert!(
        seen.contains("stopped: iteration budget exhausted"),
        "the root's model is told why the child stopped: {seen}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn background_tasks_draw_from_the_turns_pool() {
    // The root starts 5 background tasks that would loop forever, then answers; the tasks
    // share what the turn has left and stop when it is gone.
    let counts = Arc::new(Counts::default());
    let c = Arc::clone(&counts);
    let h = Harness::new(
        &yaml(10),
        Box::new(move |req| {
            let n = c.requests.fetch_add(1, Ordering::SeqCst);
            if req.tools.is_empty() {
                c.closing.fetch_add(1, Ordering::SeqCst);
                return Reply::Text("closing summary".into());
            }
            if system(req) == "ROOT-PROMPT" {
                return if results(req).is_empty() {
                    many(
                        "spawn",
                        |i| json!({"task": format!("job {i}"), "label": format!("bg{i}")}),
                        5,
                    )
                } else {
                    Reply::Text("started them".into())
                };
            }
            another(n)
        }),
        Duration::from_millis(2),
    );
    let (out, _) = h
        .run("go", Arc::new(AutoApprover), &CancellationToken::new())
        .await;
    tokio::time::timeout(Duration::from_secs(60), h.tree.wait_tasks())
        .await
        .expect("the tasks end");
    let sent = counts.requests.load(Ordering::SeqCst);
    let closing = counts.closing.load(Ordering::SeqCst);
    // Every step but the unit kept for the root's closing request, which the root uses only
    // when the tasks drained the pool before its answering turn.
    assert!(sent <= 10, "the pool is 10: {sent} requests, {out:?}");
    assert_eq!(sent, 9 + closing, "{out:?}");
    assert_eq!(
        out.reason,
        if closing == 0 {
            DoneReason::Answer
        } else {
            DoneReason::MaxIterations
        }
    );
}
