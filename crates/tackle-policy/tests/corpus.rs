//! Runs the bypass corpora in `tests/corpus/` and reports every failing line at once.
//!
//! Line formats (`#` starts a comment line):
//! - `shell.txt`, `runners.txt`, `everyday.txt`: `VERDICT | GRANT | LINE` where GRANT is `-`
//!   or `allow=a b, c deny=d` (rules separated by commas) and LINE is a shell line; `argv:`
//!   before LINE splits it on spaces and checks it with `check_argv`.
//! - `url.txt`: `VERDICT | GRANT | [METHOD] URL` where GRANT is `-` or a comma-separated list
//!   of endpoints `HOST[/PATH_PREFIX][@METHOD+METHOD]`, optionally followed by ` private`.
//! - `path.txt`: `VERDICT | GRANT | read|write PATH` with the workspace `/work/ws` and the home
//!   `/home/u`; GRANT is `none` (no fs grant) or `read=a,b write=c`.

use std::path::Path;
use tackle_policy::{net, path, shell};
use tackle_protocol::{Endpoint, FsGrant, NetworkGrant, ShellGrant, Verdict};

fn cases(name: &str) -> Vec<(usize, Verdict, String, String)> {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(name);
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let mut out: Vec<(usize, Verdict, String, String)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let is_case = ["allow ", "allow|", "deny ", "deny|"]
            .iter()
            .any(|p| line.starts_with(p));
        if !is_case {
            // A continuation of the previous case (here-document bodies, `\` newlines).
            let last = out
                .last_mut()
                .unwrap_or_else(|| panic!("{name}:{}: no case to continue", i + 1));
            last.3.push('\n');
            last.3.push_str(line);
            continue;
        }
        let parts: Vec<&str> = line.splitn(3, " | ").collect();
        let [verdict, grant, input] = parts[..] else {
            panic!("{name}:{}: expected `VERDICT | GRANT | INPUT`", i + 1)
        };
        let verdict = match verdict.trim() {
            "allow" => Verdict::Allow,
            "deny" => Verdict::Deny,
            other => panic!("{name}:{}: unknown verdict {other}", i + 1),
        };
        out.push((i + 1, verdict, grant.trim().to_string(), input.to_string()));
    }
    out
}

/// `allow=a b, c deny=d` → the two lists.
fn two_lists(grant: &str, first: &str, second: &str) -> (Vec<String>, Vec<String>) {
    let split = |s: &str| -> Vec<String> {
        s.split(',')
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .map(String::from)
            .collect()
    };
    let a_key = format!("{first}=");
    let b_key = format!("{second}=");
    let a_at = grant.find(&a_key);
    let b_at = grant.find(&b_key);
    let a = a_at.map(|i| {
        let end = b_at.filter(|b| *b > i).unwrap_or(grant.len());
        split(&grant[i + a_key.len()..end])
    });
    let b = b_at.map(|i| {
        let end = a_at.filter(|a| *a > i).unwrap_or(grant.len());
        split(&grant[i + b_key.len()..end])
    });
    (a.unwrap_or_default(), b.unwrap_or_default())
}

fn report(name: &str, failures: Vec<String>, total: usize) {
    assert!(total > 0, "{name} has no cases");
    assert!(
        failures.is_empty(),
        "{} of {total} cases in {name} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Checks every case of a shell corpus file (`shell.txt` format) and reports all failures.
fn check_shell_corpus(name: &str) {
    let cases = cases(name);
    let mut failures = Vec::new();
    for (line_no, want, grant, input) in &cases {
        let (allow, deny) = two_lists(grant, "allow", "deny");
        let grant = ShellGrant {
            allow,
            deny,
            ..Default::default()
        };
        let got = match input.strip_prefix("argv:") {
            Some(argv) => {
                let argv: Vec<String> = argv.split_whitespace().map(String::from).collect();
                shell::check_argv(&argv, &grant)
            }
            None => shell::check_shell(input, &grant),
        };
        if got.verdict != *want {
            failures.push(format!(
                "  line {line_no}: want {want:?}, got {:?} for `{input}`: {}",
                got.verdict, got.why
            ));
        }
    }
    report(name, failures, cases.len());
}

#[test]
fn shell_corpus_holds() {
    check_shell_corpus("shell.txt");
}

#[test]
fn runners_corpus_holds() {
    check_shell_corpus("runners.txt");
}

#[test]
fn everyday_corpus_holds() {
    check_shell_corpus("everyday.txt");
}

fn network_grant(spec: &str) -> NetworkGrant {
    let mut grant = NetworkGrant::default();
    let mut spec = spec.trim();
    if let Some(rest) = spec.strip_suffix("private") {
        grant.allow_private = true;
        spec = rest.trim();
    }
    if spec == "-" || spec.is_empty() {
        return grant;
    }
    for e in spec.split(',').map(str::trim) {
        let (e, methods) = match e.split_once('@') {
            Some((e, m)) => (e, Some(m.split('+').map(String::from).collect())),
            None => (e, None),
        };
        let (host, path_prefix) = match e.find('/') {
            Some(i) => (&e[..i], Some(e[i..].to_string())),
            None => (e, None),
        };
        grant.endpoints.push(Endpoint {
            host: host.to_string(),
            path_prefix,
            methods,
        });
    }
    grant
}

#[test]
fn url_corpus_holds() {
    let cases = cases("url.txt");
    let mut failures = Vec::new();
    for (line_no, want, grant, input) in &cases {
        let grant = network_grant(grant);
        let (method, url) = match input.split_once(' ') {
            Some((m, u)) => (m, u),
            None => ("GET", input.as_str()),
        };
        let got = match net::check_url(method, url, &grant) {
            Ok(_) => (Verdict::Allow, "allowed".to_string()),
            Err(d) => (d.verdict, d.why),
        };
        if got.0 != *want {
            failures.push(format!(
                "  line {line_no}: want {want:?}, got {:?} for `{input}`: {}",
                got.0, got.1
            ));
        }
    }
    report("url.txt", failures, cases.len());
}

#[test]
fn path_corpus_holds() {
    let cases = cases("path.txt");
    let mut failures = Vec::new();
    for (line_no, want, grant, input) in &cases {
        let fs = if grant == "none" {
            None
        } else {
            let (allow_read, allow_write) = two_lists(grant, "read", "write");
            Some(FsGrant {
                allow_read,
                allow_write,
            })
        };
        let roots = path::roots(
            fs.as_ref(),
            Path::new("/work/ws"),
            Some(Path::new("/home/u")),
        );
        let (access, p) = input.split_once(' ').unwrap_or(("read", input));
        let access = if access == "write" {
            path::Access::Write
        } else {
            path::Access::Read
        };
        let got = path::check_path(Path::new(p), access, &roots);
        if got.verdict != *want {
            failures.push(format!(
                "  line {line_no}: want {want:?}, got {:?} for `{input}`: {}",
                got.verdict, got.why
            ));
        }
    }
    report("path.txt", failures, cases.len());
}
