//! Several `tackle daemon`s over one PostgreSQL database (`state_url`), each with its own
//! state directory as on separate machines: every due fire runs on exactly one of them, none
//! is lost when one is killed with SIGKILL in the middle of its runs, and the daemon that
//! takes a dead one's schedule over is named in the record of the run that never finished.

mod common;

use common::postgres::{fresh_database, rows};
use common::{run, FakeLlm, Sandbox};
use std::collections::BTreeMap;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

const PASSWORD: &str = "s3cret-db-pw";

fn daemon(sb: &Sandbox, config: &std::path::Path) -> Child {
    sb.tackle(config, &["daemon"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn tackle daemon")
}

fn stop(mut child: Child) {
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if matches!(child.try_wait(), Ok(Some(_))) {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("a daemon did not stop within 30 s of SIGTERM");
}

/// How many schedules fire how often, and how long the daemons run before and after the kill.
struct Load {
    schedules: usize,
    every_secs: i64,
    before_kill: Duration,
    after_kill: Duration,
}

#[test]
fn three_daemons_fire_each_schedule_once_and_take_over_from_one_killed_mid_run() {
    fire_each_once_across_a_kill(&Load {
        schedules: 20,
        every_secs: 2,
        before_kill: Duration::from_secs(8),
        after_kill: Duration::from_secs(12),
    });
}

/// The same at the scale an operator would run: 200 schedules every 5 s for a minute.
/// `cargo nextest run --test daemons_shared --run-ignored only -E 'test(two_hundred)'`
/// (about two minutes on 2 cores, most of it adding the schedules one command at a time).
#[test]
#[ignore = "a minute of 200 schedules: run by hand"]
fn two_hundred_schedules_for_a_minute_fire_once_each_across_a_kill() {
    fire_each_once_across_a_kill(&Load {
        schedules: 200,
        every_secs: 5,
        before_kill: Duration::from_secs(30),
        after_kill: Duration::from_secs(30),
    });
}

fn fire_each_once_across_a_kill(load: &Load) {
    let Some(url) = fresh_database() else {
        return;
    };
    // Each fire runs a command that takes most of its two seconds, so a daemon killed at any
    // moment is in the middle of runs.
    let Some(llm) = FakeLlm::start(concat!(
        "rules:\n",
        "  - name: done\n    when: {tool_result_contains: \"slept\"}\n    respond: {content: \"done\"}\n",
        "  - name: work\n    respond:\n      tool_calls:\n",
        "        - {name: shell, arguments: {command: \"sleep 1.5; echo slept\"}}\n",
    )) else {
        return;
    };
    // The test cluster trusts local connections; the password is there to be kept out of
    // every report.
    let with_password = url.replacen("tackle@", &format!("tackle:{PASSWORD}@"), 1);
    assert_ne!(with_password, url);
    let yaml = format!(
        "{}state_url: \"{with_password}\"\nsecurity:\n  tool_policies:\n    shell:\n      approval: never\nschedules:\n  min_interval_secs: 1\n  lease_secs: 3\n  max_concurrent_per_agent: 64\n",
        llm.backend_yaml("openai", true)
    );
    // Four machines: each its own home and state directory, one database between them.
    let machines: Vec<Sandbox> = (0..4).map(|_| Sandbox::new()).collect();
    let configs: Vec<_> = machines.iter().map(|m| m.config(&yaml)).collect();
    let doctor = run(machines[0].tackle(&configs[0], &["doctor", "--json"]));
    assert!(
        doctor.stdout.contains("postgresql")
            && doctor.stdout.contains("reachable")
            && doctor.stdout.contains("schema version"),
        "doctor names the shared engine and its schema:\n{doctor}"
    );
    assert!(
        !doctor.stdout.contains(PASSWORD) && !doctor.stderr.contains(PASSWORD),
        "the password never reaches the report:
{doctor}"
    );

    let a = daemon(&machines[0], &configs[0]);
    let b = daemon(&machines[1], &configs[1]);
    let c = daemon(&machines[2], &configs[2]);
    for i in 0..load.schedules {
        let add = run(machines[3].tackle(
            &configs[3],
            &[
                "tools",
                "call",
                "schedule_add",
                &format!(
                    r#"{{"id": "s{i:03}", "cron": "*/{} * * * * *", "task": "work {i}"}}"#,
                    load.every_secs
                ),
                "--yes",
            ],
        ));
        assert_eq!(add.code, 0, "{add}");
    }
    // Let every daemon fire a few rounds, then kill one in the middle of its runs: at a
    // moment the database shows it holding a run.
    std::thread::sleep(load.before_kill);
    let mut a = a;
    let a_pid = a.id();
    let holding = format!(
        "SELECT count(*) FROM schedule_fires WHERE status = 'running' AND owner LIKE 'daemon-%-{a_pid}-%'"
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while rows(&url, &holding)
        .first()
        .and_then(|r| r.first().cloned().flatten())
        .is_none_or(|n| n == "0")
    {
        assert!(
            Instant::now() < deadline,
            "the first daemon never held a run"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = a.kill(); // SIGKILL
    let _ = a.wait();
    let d = daemon(&machines[3], &configs[3]);
    std::thread::sleep(load.after_kill);
    for child in [b, c, d] {
        stop(child);
    }

    let records = rows(
        &url,
        "SELECT name, due_ms, status, COALESCE(owner, ''), detail FROM schedule_fires ORDER BY name, due_ms, id",
    );
    let mut per_schedule: BTreeMap<String, Vec<(i64, String, String, String)>> = BTreeMap::new();
    for r in &records {
        let text = |i: usize| r.get(i).cloned().flatten().unwrap_or_default();
        per_schedule.entry(text(0)).or_default().push((
            text(1).parse().unwrap_or(0),
            text(2),
            text(3),
            text(4),
        ));
    }
    assert_eq!(
        per_schedule.len(),
        load.schedules,
        "every schedule fired: {per_schedule:?}"
    );
    let mut owners = BTreeMap::<String, usize>::new();
    let mut taken_over = 0;
    for (name, fires) in &per_schedule {
        // None twice: one record per due instant.
        let mut dues: Vec<i64> = fires.iter().map(|f| f.0).collect();
        dues.dedup();
        assert_eq!(
            dues.len(),
            fires.len(),
            "{name} fired twice at one instant: {fires:?}"
        );
        // None lost: from its first fire to its last, every instant on the grid has a record
        // (run, or skipped while a dead daemon's lease ran out).
        for pair in dues.windows(2) {
            assert_eq!(
                pair[1] - pair[0],
                load.every_secs * 1000,
                "{name} lost a fire: {fires:?}"
            );
        }
        let window = load.before_kill + load.after_kill;
        assert!(
            u64::try_from(fires.len()).unwrap_or(0)
                >= window.as_secs() / u64::try_from(load.every_secs).unwrap_or(1) * 4 / 5,
            "{name} fired through the whole run: {fires:?}"
        );
        for (_, status, owner, detail) in fires {
            assert_ne!(
                status, "running",
                "{name}: a run left open after the daemons stopped: {fires:?}"
            );
            assert_ne!(
                status, "missed",
                "{name}: a daemon was always up: {fires:?}"
            );
            if status == "ok" || status == "failed" {
                *owners.entry(owner.clone()).or_default() += 1;
            }
            if detail.contains("taken over by") {
                taken_over += 1;
                assert!(
                    owner.contains(&format!("-{a_pid}-")),
                    "only the killed daemon's runs are taken over: {fires:?}"
                );
            }
        }
    }
    assert!(
        owners.len() >= 3,
        "the fires were spread over the daemons: {owners:?}"
    );
    assert!(
        taken_over >= 1,
        "the killed daemon's unfinished runs are recorded as taken over: {per_schedule:?}"
    );
}

/// How late fires start with one and with three daemons over one database: 20 schedules
/// every two seconds for 20 s, the lateness of each run (`started - due`) as p50 and p99.
/// `cargo nextest run --test daemons_shared --run-ignored only --no-capture -E 'test(measure)'`
/// (BENCHMARKS.md).
#[test]
#[ignore = "a measurement: prints figures, asserts nothing about speed"]
fn measure_fire_lateness_with_one_and_three_daemons() {
    for daemons in [1usize, 3] {
        let Some(url) = fresh_database() else {
            return;
        };
        let Some(llm) = FakeLlm::start("rules:\n  - name: any\n    respond: {content: \"done\"}\n")
        else {
            return;
        };
        let yaml = format!(
            "{}state_url: \"{url}\"\nschedules:\n  min_interval_secs: 1\n  max_concurrent_per_agent: 64\n",
            llm.backend_yaml("openai", true)
        );
        let machines: Vec<Sandbox> = (0..daemons).map(|_| Sandbox::new()).collect();
        let configs: Vec<_> = machines.iter().map(|m| m.config(&yaml)).collect();
        let children: Vec<Child> = machines
            .iter()
            .zip(&configs)
            .map(|(m, c)| daemon(m, c))
            .collect();
        for i in 0..20 {
            let add = run(machines[0].tackle(
                &configs[0],
                &[
                    "tools",
                    "call",
                    "schedule_add",
                    &format!(r#"{{"id": "m{i:02}", "cron": "*/2 * * * * *", "task": "tick"}}"#),
                    "--yes",
                ],
            ));
            assert_eq!(add.code, 0, "{add}");
        }
        std::thread::sleep(Duration::from_secs(20));
        for child in children {
            stop(child);
        }
        let mut late: Vec<i64> = rows(
            &url,
            "SELECT started_ms - due_ms FROM schedule_fires WHERE started_ms IS NOT NULL",
        )
        .iter()
        .filter_map(|r| r.first().cloned().flatten()?.parse().ok())
        .collect();
        late.sort_unstable();
        let at = |q: f64| {
            late.get(((late.len() as f64 - 1.0) * q).round() as usize)
                .copied()
                .unwrap_or(-1)
        };
        println!(
            "daemons: {daemons}, fires run: {}, late p50 {} ms, p99 {} ms, max {} ms",
            late.len(),
            at(0.5),
            at(0.99),
            late.last().copied().unwrap_or(-1)
        );
    }
}

/// A `state_url` that names no engine, or no valid PostgreSQL address, is a config error (exit
/// 2) naming the key; an unreachable database fails the command (exit 1). No message carries
/// the password.
#[test]
fn a_bad_or_unreachable_state_url_is_said_without_its_password() {
    let sb = Sandbox::new();
    for (url, code) in [
        (format!("mysql://tackle:{PASSWORD}@db/tackle"), 2),
        (
            format!("postgres://tackle:{PASSWORD}@db:notaport/tackle"),
            2,
        ),
        (
            format!("postgres://tackle:{PASSWORD}@127.0.0.1:1/tackle"),
            1,
        ),
    ] {
        let config = sb.config(&format!("state_url: \"{url}\"\n"));
        let r = run(sb.tackle(&config, &["schedule", "list"]));
        assert_eq!(r.code, code, "{url}: {r}");
        assert!(r.stderr.contains("state"), "{r}");
        assert!(
            !r.stderr.contains(PASSWORD) && !r.stdout.contains(PASSWORD),
            "{r}"
        );
        let doctor = run(sb.tackle(&config, &["doctor", "--json"]));
        assert!(
            !doctor.stdout.contains(PASSWORD) && !doctor.stderr.contains(PASSWORD),
            "{doctor}"
        );
        assert!(doctor.stdout.contains("\"fail\""), "{doctor}");
    }
}

/// A server that accepts the connection and never answers (a stuck proxy, a wrong port) ends
/// the command with an error within the store's bounds, never a hang.
#[test]
fn a_database_that_accepts_and_never_answers_is_an_error_not_a_hang() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = silent.local_addr().expect("addr").port();
    let held = std::thread::spawn(move || {
        let mut kept = Vec::new();
        for stream in silent.incoming().flatten().take(4) {
            kept.push(stream);
        }
        std::thread::sleep(Duration::from_secs(40));
    });
    let sb = Sandbox::new();
    let config = sb.config(&format!(
        "state_url: \"postgres://tackle:{PASSWORD}@127.0.0.1:{port}/tackle?sslmode=disable\"\n"
    ));
    let started = Instant::now();
    let r = run(sb.tackle(&config, &["schedule", "list"]));
    assert_eq!(r.code, 1, "{r}");
    assert!(r.stderr.contains("no answer within"), "{r}");
    assert!(!r.stderr.contains(PASSWORD), "{r}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "took {:?}",
        started.elapsed()
    );
    drop(held);
}
