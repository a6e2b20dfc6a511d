//! The shell corpora through the real binary, with a file to lose: every case of
//! `runners.txt`, and the `shell.txt` deny cases whose line names `victim`, runs as
//! `tackle tools call shell` in a fresh sandbox whose workspace holds `victim`, under the
//! case's grant. A deny case holds only when the call is refused (exit 3) and `victim` is
//! still there afterwards; an allow case holds when the call is not refused (it may still fail
//! for other reasons, such as the program not being installed). All failures are reported at
//! once.

mod common;

use common::{drain, Sandbox};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long the line itself may run (the shell tool kills it after this).
const LINE_TIMEOUT_SECS: u64 = 10;
/// How long one `tackle` run may take before the test kills it.
const RUN_DEADLINE: Duration = Duration::from_secs(60);
const WORKERS: usize = 4;

struct Case {
    file: &'static str,
    line_no: usize,
    deny: bool,
    grant: String,
    input: String,
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/tackle-policy/tests/corpus/")
}

/// `VERDICT | GRANT | LINE` cases; lines that start no case continue the previous one.
fn parse(file: &'static str) -> Vec<Case> {
    let path = corpus_dir().join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out: Vec<Case> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let starts_case = ["allow ", "allow|", "deny ", "deny|"]
            .iter()
            .any(|p| line.starts_with(p));
        if !starts_case {
            let last = out
                .last_mut()
                .unwrap_or_else(|| panic!("{file}:{}: no case to continue", i + 1));
            last.input.push('\n');
            last.input.push_str(line);
            continue;
        }
        let mut parts = line.splitn(3, " | ");
        let (Some(verdict), Some(grant), Some(input)) = (parts.next(), parts.next(), parts.next())
        else {
            panic!("{file}:{}: expected `VERDICT | GRANT | LINE`", i + 1)
        };
        let deny = match verdict.trim() {
            "allow" => false,
            "deny" => true,
            other => panic!("{file}:{}: unknown verdict {other}", i + 1),
        };
        out.push(Case {
            file,
            line_no: i + 1,
            deny,
            grant: grant.trim().to_string(),
            input: input.to_string(),
        });
    }
    out
}

/// The rules after `key=` in `allow=a b, c deny=d`, up to the other key.
fn rules(grant: &str, key: &str, other: &str) -> Vec<String> {
    let Some(at) = grant.find(&format!("{key}=")) else {
        return Vec::new();
    };
    let start = at + key.len() + 1;
    let end = grant
        .find(&format!("{other}="))
        .filter(|o| *o > at)
        .unwrap_or(grant.len());
    grant[start..end]
        .split(',')
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(String::from)
        .collect()
}

/// The shell tool's policy for a case's grant (rules as JSON strings, which YAML reads).
fn policy(grant: &str) -> String {
    let list = |rules: Vec<String>| serde_json::to_string(&rules).expect("rules serialise to JSON");
    format!(
        "security:\n  tool_policies:\n    shell:\n      grants:\n        shell:\n          allow: {}\n          deny: {}\n",
        list(rules(grant, "allow", "deny")),
        list(rules(grant, "deny", "allow")),
    )
}

/// Waits for the child up to the deadline; `None` when it had to be killed.
fn wait_bounded(child: &mut Child) -> Option<i32> {
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status.code().unwrap_or(-1)),
            Ok(None) if started.elapsed() < RUN_DEADLINE => {
                std::thread::sleep(Duration::from_millis(20));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}

/// Runs one case; `Some(why)` when it does not hold.
fn check(case: &Case) -> Option<String> {
    let sb = Sandbox::new();
    let victim = sb.workspace().join("victim");
    std::fs::write(&victim, "keep\n").expect("write victim");
    let cfg = sb.config(&policy(&case.grant));
    let args =
        serde_json::json!({ "command": case.input, "timeout_secs": LINE_TIMEOUT_SECS }).to_string();
    let mut cmd = sb.tackle(&cfg, &["tools", "call", "shell", &args, "--yes", "--json"]);
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn tackle");
    let out = drain(child.stdout.take());
    let err = drain(child.stderr.take());
    let code = wait_bounded(&mut child);
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    let kept = victim.exists();
    let what = format!(
        "{}:{}: {} | {} | {}",
        case.file,
        case.line_no,
        if case.deny { "deny " } else { "allow" },
        case.grant,
        case.input
    );
    let Some(code) = code else {
        return Some(format!(
            "{what}\n      tackle did not finish in {RUN_DEADLINE:?}"
        ));
    };
    let detail = || {
        let text = if stdout.trim().is_empty() {
            &stderr
        } else {
            &stdout
        };
        let text = text.trim();
        let cut: String = text.chars().take(300).collect();
        cut.replace('\n', " ")
    };
    match (case.deny, code == 3, kept) {
        (true, true, true) | (false, false, _) => None,
        (true, true, false) => Some(format!(
            "{what}\n      exit 3 but `victim` is gone: {}",
            detail()
        )),
        (true, false, kept) => Some(format!(
            "{what}\n      not refused (exit {code}), victim {}: {}",
            if kept { "kept" } else { "DELETED" },
            detail()
        )),
        (false, true, _) => Some(format!("{what}\n      refused (exit 3): {}", detail())),
    }
}

#[test]
fn corpus_lines_do_not_touch_the_victim() {
    let mut cases = parse("runners.txt");
    let from_runners = cases.len();
    cases.extend(
        parse("shell.txt")
            .into_iter()
            .filter(|c| c.deny && c.input.contains("victim") && !c.input.starts_with("argv:")),
    );
    let from_shell = cases.len() - from_runners;
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..WORKERS {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(case) = cases.get(i) else { break };
                if let Some(f) = check(case) {
                    failures
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push((i, f));
                }
            });
        }
    });
    let mut failures = failures.into_inner().unwrap_or_else(|e| e.into_inner());
    failures.sort();
    println!(
        "ran {} cases ({from_runners} from runners.txt, {from_shell} from shell.txt); {} failed",
        cases.len(),
        failures.len()
    );
    assert!(!cases.is_empty(), "no cases");
    let report: Vec<String> = failures
        .into_iter()
        .map(|(_, f)| format!("  {f}"))
        .collect();
    assert!(
        report.is_empty(),
        "{} of {} cases failed:\n{}",
        report.len(),
        cases.len(),
        report.join("\n")
    );
}
