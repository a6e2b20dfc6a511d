//! What `tackle doctor` says, through the real binary: a detected backend is probed like a
//! configured one, the probe goes where requests go, its own words are never redacted, its
//! report is grouped and counted, and broken skills are checked with their whole error.

mod common;

use common::{free_port, run, FakeLlm, Run, Sandbox};
use serde_json::Value;
use std::path::Path;

fn doctor_json(sb: &Sandbox, config: &Path, env: &[(&str, &str)]) -> (Run, Value) {
    let mut cmd = sb.tackle(config, &["doctor", "--json"]);
    cmd.envs(env.iter().copied());
    let r = run(cmd);
    let v: Value = serde_json::from_str(&r.stdout)
        .unwrap_or_else(|e| panic!("doctor --json is not JSON ({e})\n{r}"));
    (r, v)
}

fn check<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["checks"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["name"] == name))
        .unwrap_or_else(|| panic!("no check `{name}` in {v:#}"))
}

fn detail(c: &Value) -> &str {
    c["detail"].as_str().unwrap_or("")
}

#[test]
fn a_backend_found_in_the_environment_is_probed_and_the_probe_is_named() {
    let sb = Sandbox::new();
    let config = sb.config("");
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}/v1");
    let (r, v) = doctor_json(
        &sb,
        &config,
        &[
            ("OPENAI_API_KEY", "sk-env-0123456789abcdef"),
            ("OPENAI_BASE_URL", &base),
        ],
    );
    // Nothing answers there: `tackle run` would fail, so doctor must not say ok.
    assert_eq!(r.code, 1, "{r}");
    assert!(
        detail(check(&v, "backends")).contains("OPENAI_API_KEY"),
        "{v:#}"
    );
    let c = check(&v, "backend.openai.endpoint");
    assert_eq!(c["status"], "fail", "{v:#}");
    assert!(
        detail(c).contains(&format!("GET {base}/models")) && detail(c).contains("unreachable"),
        "{c}"
    );

    let Some(llm) = FakeLlm::start("rules: []\n") else {
        return;
    };
    let base = format!("http://127.0.0.1:{}/v1", llm.port);
    let (r, v) = doctor_json(
        &sb,
        &config,
        &[
            ("OPENAI_API_KEY", "sk-env-0123456789abcdef"),
            ("OPENAI_BASE_URL", &base),
        ],
    );
    assert_eq!(r.code, 0, "{r}");
    let c = check(&v, "backend.openai.endpoint");
    assert_eq!(c["status"], "ok", "{v:#}");
    assert!(
        detail(c).contains(&format!("GET {base}/models answered")),
        "{c}"
    );
    assert!(!r.stdout.contains("sk-env-0123456789abcdef"), "{r}");
}

#[test]
fn api_base_with_or_without_v1_reaches_the_same_urls_for_run_and_doctor() {
    let Some(llm) = FakeLlm::start(
        "rules:\n  - name: hello\n    when: {messages_contain: \"hello\"}\n    respond: {content: \"Hi there, friend.\"}\n",
    ) else {
        return;
    };
    for kind in ["anthropic", "openai"] {
        for suffix in ["", "/v1"] {
            let sb = Sandbox::new();
            let config = sb.config(&format!(
                "backends:\n  - name: fake\n    type: {kind}\n    api_base: http://127.0.0.1:{}{suffix}\n    api_key: test-key-not-secret\n    models:\n      - name: fake-model\n",
                llm.port
            ));
            let r = run(sb.tackle(&config, &["run", "-m", "hello"]));
            assert_eq!(r.code, 0, "{kind} api_base …{suffix}\n{r}");
            assert!(r.stdout.contains("Hi there, friend."), "{r}");
            let (_, v) = doctor_json(&sb, &config, &[]);
            let c = check(&v, "backend.fake.endpoint");
            let probed = format!("GET http://127.0.0.1:{}/v1/models ", llm.port);
            assert!(detail(c).contains(&probed), "{kind} …{suffix}: {c}");
        }
    }
}

#[test]
fn doctor_never_redacts_its_own_words_only_secret_values() {
    let sb = Sandbox::new();
    let port = free_port();
    let config = sb.config(&format!(
        "mcp_servers:\n  remote:\n    url: http://127.0.0.1:{port}/mcp\n    headers:\n      Authorization: \"Bearer ${{TACKLE_DOCTOR_UNSET_TOKEN}}\"\n"
    ));
    let r = run(sb.tackle(&config, &["doctor"]));
    assert!(
        r.stdout.contains(
            "mcp_servers.remote.headers.Authorization: environment variable TACKLE_DOCTOR_UNSET_TOKEN is not set"
        ),
        "{r}"
    );
    assert!(!r.stdout.contains("[redacted secret] variable"), "{r}");

    // A secret in the config file still never reaches the report, even through an error
    // that quotes the file.
    let secret = "sk-proj-0123456789abcdefghijklmn";
    let config = sb.config(&format!(
        "backends:\n  - name: x\n    type: openai\n    api_key: \"{secret}\n"
    ));
    let r = run(sb.tackle(&config, &["doctor"]));
    assert_eq!(r.code, 2, "{r}");
    assert!(
        !r.stdout.contains(secret) && !r.stderr.contains(secret),
        "{r}"
    );
}

#[test]
fn repeated_problems_are_grouped_and_counted_and_landlock_off_is_a_warning() {
    let sb = Sandbox::new();
    let plugins = sb.home().join("plugins");
    for name in ["a", "b", "c", "d"] {
        let dir = plugins.join(name);
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::write(dir.join("plugin.json"), "{ not json").expect("manifest");
    }
    let config = sb.config(&format!("plugins:\n  dirs: [\"{}\"]\n", plugins.display()));
    let r = run(sb.tackle(&config, &["doctor"]));
    assert_eq!(r.code, 1, "{r}");
    let verdict = r.stdout.lines().last().unwrap_or("");
    assert!(verdict.contains("4 broken: plugins (4)"), "{r}");
    assert!(!verdict.contains("plugins, plugins"), "{r}");
    // One heading for the four, each problem under it.
    assert_eq!(r.stdout.matches("plugins: FAIL").count(), 1, "{r}");

    let (_, v) = doctor_json(&sb, &config, &[]);
    for c in v["checks"].as_array().expect("checks") {
        if c["enforced"] == false {
            assert_ne!(
                c["status"], "ok",
                "a protection not in force is not ok: {c}"
            );
        }
    }
}

#[test]
fn a_broken_skill_is_a_doctor_failure_with_its_error_on_several_lines() {
    let sb = Sandbox::new();
    let skills = sb.home().join("skills");
    let bad = skills.join("bad");
    std::fs::create_dir_all(&bad).expect("mkdir");
    std::fs::write(
        bad.join("SKILL.md"),
        "---\nname: bad\ndescription: \"unterminated\ntriggers: [a, b\n---\nbody\n",
    )
    .expect("skill");
    let good = skills.join("good");
    std::fs::create_dir_all(&good).expect("mkdir");
    std::fs::write(
        good.join("SKILL.md"),
        "---\nname: good\ndescription: works\n---\nbody\n",
    )
    .expect("skill");
    let config = sb.config(&format!("skills:\n  dirs: [\"{}\"]\n", skills.display()));
    let (r, v) = doctor_json(&sb, &config, &[]);
    assert_eq!(r.code, 1, "{r}");
    let found = v["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .filter(|c| c["name"] == "skills")
        .collect::<Vec<_>>();
    assert!(
        found
            .iter()
            .any(|c| c["status"] == "ok" && detail(c).contains("1 skill")),
        "{v:#}"
    );
    let broken = found
        .iter()
        .find(|c| c["status"] == "fail")
        .unwrap_or_else(|| panic!("no failed skills check in {v:#}"));
    let text = detail(broken);
    assert!(
        text.contains("SKILL.md") && text.contains("line 3"),
        "{text}"
    );
    assert!(
        text.lines().count() > 2,
        "the error keeps its lines: {text}"
    );
    assert!(!text.contains("<input>"), "{text}");

    // In the text report the continuation lines are indented under the check.
    let r = run(sb.tackle(&config, &["doctor"]));
    assert!(r.stdout.contains("skills: FAIL"), "{r}");
    assert!(
        r.stdout
            .lines()
            .any(|l| l.starts_with("    ") && l.contains("unclosed")),
        "{r}"
    );
}

#[test]
fn each_config_warning_is_reported_once_not_again_on_stderr() {
    let sb = Sandbox::new();
    let config = sb.config(
        "web_search:\n  backends:\n    - type: brave\n      api_key: \"${TACKLE_DOCTOR_UNSET_A}\"\n    - type: duckduckgo\n",
    );
    let r = run(sb.tackle(&config, &["doctor"]));
    let all = format!("{}{}", r.stdout, r.stderr);
    let lines = all
        .lines()
        .filter(|l| l.contains("TACKLE_DOCTOR_UNSET_A"))
        .count();
    assert_eq!(lines, 1, "{r}");
    assert!(r.stdout.contains("TACKLE_DOCTOR_UNSET_A"), "{r}");
}

/// Answers each request with an empty model listing and hands back its head, lower-cased.
fn recording_server() -> (u16, std::sync::mpsc::Receiver<String>) {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    let port = listener.local_addr().expect("local address").port();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(&stream);
            let mut head = String::new();
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                head.push_str(&line.to_ascii_lowercase());
                line.clear();
            }
            let body = "{\"object\":\"list\",\"data\":[]}";
            let _ = write!(
                &stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            if tx.send(head).is_err() {
                return;
            }
        }
    });
    (port, rx)
}

#[test]
fn the_probe_sends_the_key_and_version_the_way_each_kind_of_api_wants_them() {
    for (kind, expected) in [
        (
            "anthropic",
            &["x-api-key: probe-key-1", "anthropic-version: 2023-06-01"][..],
        ),
        ("openai", &["authorization: bearer probe-key-1"][..]),
    ] {
        let (port, heads) = recording_server();
        let sb = Sandbox::new();
        let config = sb.config(&format!(
            "backends:\n  - name: probed\n    type: {kind}\n    api_base: http://127.0.0.1:{port}\n    api_key: probe-key-1\n    models:\n      - name: m\n"
        ));
        let (r, v) = doctor_json(&sb, &config, &[]);
        let c = check(&v, "backend.probed.endpoint");
        assert_eq!(c["status"], "ok", "{kind}: {c}\n{r}");
        let head = heads
            .recv_timeout(std::time::Duration::from_secs(5))
            .unwrap_or_else(|_| panic!("{kind}: the probe never arrived\n{r}"));
        assert!(head.starts_with("get /v1/models "), "{kind}: {head}");
        for header in expected {
            assert!(head.contains(header), "{kind}: no `{header}` in\n{head}");
        }
        assert_eq!(
            head.matches("probe-key-1").count(),
            1,
            "{kind}: the key is sent once, in its own header\n{head}"
        );
    }
}
