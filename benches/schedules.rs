//! `tackle daemon` holding 10,000 schedules: resident memory, CPU while idle, and how late
//! fires are claimed (from the fire records: claim time − due time). The real binary against
//! fakellm on 127.0.0.1. Run: `cargo bench --profile dev --bench schedules` (the figures in
//! BENCHMARKS.md say which build); `TACKLE_BENCH_IDLE_SECS` shortens the idle window,
//! `TACKLE_BENCH_HELD` sets how many schedules are held (10,000 unless set), and
//! `TACKLE_BENCH_BIN` measures another build of `tackle` (a release one) than the bench's own.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tackle_store::{NewSchedule, ScheduleKind, Store, Target};
use time::OffsetDateTime;

const HELD: usize = 10_000;
const FIRED: usize = 200;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let fakellm = root.join(".ci/venv/bin/fakellm");
    if !fakellm.exists() {
        eprintln!("SKIP: fakellm is not installed; run .ci/llm-peers.sh");
        return;
    }
    let idle_secs: u64 = env_or("TACKLE_BENCH_IDLE_SECS", 60);
    let held: usize = env_or("TACKLE_BENCH_HELD", HELD);
    let dir = tempfile::tempdir().expect("tempdir");
    for sub in ["home", "ws", "state"] {
        std::fs::create_dir_all(dir.path().join(sub)).expect("mkdir");
    }
    let port = free_port();
    let mut llm = start_fakellm(&fakellm, dir.path(), port);
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "state_dir: {}\nbackends:\n  - name: fake\n    type: openai\n    api_base: http://127.0.0.1:{port}/v1\n    api_key: bench\n    models:\n      - name: fake-model\nagents:\n  - name: default\n    backend: fake\n    model: fake-model\nschedules:\n  max_concurrent_per_agent: 8\n",
            dir.path().join("state").display()
        ),
    )
    .expect("config");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let store = Store::open(&dir.path().join("state")).expect("store");
    let now = OffsetDateTime::now_utc();
    // Held but not due during the run: a day ahead, one second apart.
    rt.block_on(add(
        &store,
        "held",
        held,
        now + time::Duration::days(1),
        1000,
    ));

    let daemon = start_daemon(dir.path(), &config);
    std::thread::sleep(Duration::from_secs(5));
    let pid = daemon.id();
    let rss_kib = rss_kib(pid);
    let cpu0 = cpu_ticks(pid);
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs(idle_secs));
    let cpu_secs = (cpu_ticks(pid) - cpu0) as f64 / 100.0;
    let idle_window = t0.elapsed().as_secs_f64();

    // 200 more, due 3 s from now, 50 ms apart; the daemon is woken by the change.
    let first_due = OffsetDateTime::now_utc() + time::Duration::seconds(3);
    rt.block_on(add(&store, "fire", FIRED, first_due, 50));
    let deadline = Instant::now() + Duration::from_secs(120);
    let lateness = loop {
        let late = rt.block_on(lateness_ms(&store));
        if late.len() >= FIRED || Instant::now() > deadline {
            break late;
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    let _ = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status();
    let _ = daemon.wait_with_output();
    let _ = llm.kill();
    let _ = llm.wait();

    let mut sorted = lateness.clone();
    sorted.sort_unstable();
    let pct = |p: f64| {
        let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
        sorted.get(i).copied().unwrap_or(-1)
    };
    println!("schedules held: {held}");
    println!(
        "daemon RSS after start-up: {:.1} MiB",
        rss_kib as f64 / 1024.0
    );
    println!(
        "idle CPU over {idle_window:.0} s: {cpu_secs:.2} s ({:.3} %)",
        100.0 * cpu_secs / idle_window
    );
    println!(
        "fires claimed: {} of {FIRED}; lateness p50 {} ms, p99 {} ms, max {} ms",
        sorted.len(),
        pct(0.5),
        pct(0.99),
        sorted.last().copied().unwrap_or(-1)
    );
}

async fn add(store: &Store, prefix: &str, n: usize, first: OffsetDateTime, step_ms: i64) {
    for i in 0..n {
        let offset = time::Duration::milliseconds(step_ms * i64::try_from(i).unwrap_or(0));
        store
            .add_schedule(NewSchedule {
                agent: "default".into(),
                name: format!("{prefix}-{i:05}"),
                kind: ScheduleKind::Cron,
                spec: "0 0 0 1 1 *".into(),
                message: format!("{prefix} {i}"),
                next_fire: Some(first + offset),
                target: Target::Fresh,
                session_id: None,
                max_fires: None,
                expires_at: None,
            })
            .await
            .expect("add schedule");
    }
}

/// Claim time − due time of every run of the `fire-*` schedules, in ms.
async fn lateness_ms(store: &Store) -> Vec<i64> {
    let mut out = Vec::new();
    for s in store.list_schedules(Some("default")).await.expect("list") {
        if !s.name.starts_with("fire-") {
            continue;
        }
        for f in store.fires(&s.agent, &s.name, 5).await.expect("fires") {
            if let Some(started) = f.started {
                out.push((started - f.due).whole_milliseconds() as i64);
            }
        }
    }
    out
}

fn start_daemon(dir: &Path, config: &Path) -> Child {
    let bin = std::env::var_os("TACKLE_BENCH_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_tackle")));
    Command::new(bin)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir.join("home"))
        .arg("--config")
        .arg(config)
        .arg("--workspace")
        .arg(dir.join("ws"))
        .arg("-q")
        .arg("daemon")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn daemon")
}

fn start_fakellm(bin: &Path, dir: &Path, port: u16) -> Child {
    let rules = dir.join("fakellm.yaml");
    std::fs::write(
        &rules,
        "version: 1\nrules:\n  - name: any\n    respond: {content: \"ok\"}\n",
    )
    .expect("rules");
    let child = Command::new(bin)
        .args([
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "--config",
        ])
        .arg(&rules)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn fakellm");
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    child
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// utime + stime in clock ticks (100 per second on Linux).
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let get = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // utime and stime are fields 14 and 15 of the line: 11 and 12 counted from the state.
    get(11) + get(12)
}
