//! The audit chain under several writers at once, one of them killed (SIGKILL) mid-write.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tackle_protocol::Verdict;
use tackle_store::{AuditEntry, AuditOutcome, AuditRecord, Store, DB_FILE};

const WRITER_ENV: &str = "TACKLE_TEST_CHAIN_WRITER";
const THREADS: usize = 4;
const PER_THREAD: usize = 2_500;

fn entry(caller: &str, i: usize) -> AuditEntry {
    AuditEntry {
        record: AuditRecord {
            ts: String::new(),
            session_id: Some(format!("s-{caller}")),
            agent: "default".into(),
            tool: "calculate".into(),
            args_summary: format!("{{\"expression\":\"{i} * 2\"}}"),
            verdict: if i.is_multiple_of(5) {
                Verdict::Deny
            } else {
                Verdict::Allow
            },
            rule: "tools.allow".into(),
            why: String::new(),
            approver: Some("policy".into()),
            outcome: "ok".into(),
            duration_ms: Some(1),
        },
        caller: caller.into(),
    }
}

/// One call as the dispatcher records it: a refusal whole, a call that runs as intent and
/// outcome.
async fn call(store: &Store, caller: &str, i: usize) {
    if i.is_multiple_of(5) {
        store.append_audit_entry(entry(caller, i)).await.unwrap();
        return;
    }
    let id = store.begin_audit(entry(caller, i)).await.unwrap();
    store
        .finish_audit(
            id,
            AuditOutcome {
                outcome: "ok".into(),
                rule: "tools.allow".into(),
                why: String::new(),
                duration_ms: Some(1),
                ..AuditOutcome::default()
            },
        )
        .await
        .unwrap();
}

fn rows(dir: &std::path::Path, caller: &str) -> i64 {
    rusqlite::Connection::open(dir.join(DB_FILE))
        .unwrap()
        .query_row(
            "SELECT COUNT(*) FROM audit WHERE caller = ?1",
            [caller],
            |r| r.get(0),
        )
        .unwrap_or(0)
}

#[test]
fn ten_thousand_calls_from_several_writers_and_a_killed_one_leave_a_chain_that_verifies() {
    let rt = || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    };
    if let Ok(dir) = std::env::var(WRITER_ENV) {
        // The child: writes until it is killed.
        let store = Store::open(std::path::Path::new(&dir)).unwrap();
        rt().block_on(async {
            for i in 0.. {
                call(&store, "child", i).await;
            }
        });
        return;
    }
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    drop(Store::open(dir.path()).unwrap());
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "ten_thousand_calls_from_several_writers_and_a_killed_one_leave_a_chain_that_verifies",
            "--nocapture",
        ])
        .env(WRITER_ENV, dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let writers: Vec<_> = (0..THREADS)
        .map(|t| {
            let dir = dir.path().to_path_buf();
            std::thread::spawn(move || {
                // Each thread its own store: its own connection, as separate processes have.
                let store = Store::open(&dir).unwrap();
                let caller = format!("w{t}");
                rt().block_on(async {
                    for i in 0..PER_THREAD {
                        call(&store, &caller, i).await;
                    }
                });
            })
        })
        .collect();
    // Killed once it has written for a while, at whatever point of a write it is in.
    let deadline = Instant::now() + Duration::from_secs(20);
    while rows(dir.path(), "child") < 300 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let child_rows = rows(dir.path(), "child");
    assert!(child_rows >= 300, "the child wrote {child_rows} records");
    for w in writers {
        w.join().unwrap();
    }

    // The next process to open the store closes the child's open intent and signs the head.
    let store = Store::open(dir.path()).unwrap();
    let v = rt().block_on(store.verify_audit(None)).unwrap();
    assert_eq!(v.problem, None);
    assert_eq!(v.running, 0);
    assert_eq!(v.unsigned_tail, 0);
    assert_eq!(
        v.chained,
        (THREADS * PER_THREAD) as u64 + child_rows as u64,
        "every record is in the chain, once"
    );
    assert!(v.checkpoints >= 10, "{v:?}");
    eprintln!(
        "{} records in {:.1} s",
        v.chained,
        started.elapsed().as_secs_f64()
    );
}
