//! One wording across the command line: one "did you mean" style, time errors in plain words,
//! commands that change something say what they changed, and scores a person can read.

mod common;

use common::{run, Sandbox};
use serde_json::Value;

#[test]
fn every_suggestion_has_the_same_wording() {
    let sb = Sandbox::new();
    let cfg = sb.config("agents:\n  - name: main\n");
    let described = run(sb.tackle(&cfg, &["tools", "describe", "calculat"]));
    let called = run(sb.tackle(&cfg, &["tools", "call", "calculat", "{}", "--json"]));
    let called_message = serde_json::from_str::<Value>(called.stdout.trim())
        .ok()
        .and_then(|v| v["error"]["message"].as_str().map(str::to_string))
        .unwrap_or_default();
    let agent = run(sb.tackle(&cfg, &["tools", "list", "--agent", "mian"]));
    for (what, text) in [
        ("describe", described.stderr.as_str()),
        ("call", called_message.as_str()),
    ] {
        assert!(text.contains("; did you mean calculate?"), "{what}: {text}");
    }
    assert!(agent.stderr.contains("; did you mean main?"), "{agent}");
}

#[test]
fn a_bad_since_is_explained_in_plain_words() {
    let sb = Sandbox::new();
    let cfg = sb.config("");
    let r = run(sb.tackle(&cfg, &["audit", "--since", "2x"]));
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("`2x`"), "{r}");
    assert!(
        r.stderr.contains("30m"),
        "says what a duration looks like\n{r}"
    );
    assert!(!r.stderr.contains("component"), "the parser's words\n{r}");
}

#[test]
fn memory_rm_says_what_it_removed_and_scores_are_relative_to_the_best() {
    let sb = Sandbox::new();
    let cfg = sb.config("");
    for (key, value) in [
        ("editor", "the user edits with helix"),
        ("shell", "the user runs fish as the login shell"),
    ] {
        let r = run(sb.tackle(&cfg, &["memory", "set", key, value]));
        assert_eq!(r.code, 0, "{r}");
    }
    let r = run(sb.tackle(&cfg, &["memory", "list", "helix", "--json"]));
    assert_eq!(r.code, 0, "{r}");
    let hits: Value = serde_json::from_str(&r.stdout).expect("JSON");
    let best = hits
        .as_array()
        .and_then(|a| a.first())
        .unwrap_or_else(|| panic!("no hit\n{r}"));
    assert_eq!(best["key"], "editor", "{r}");
    assert_eq!(best["score"], 1.0, "an exact match is the best match\n{r}");

    let r = run(sb.tackle(&cfg, &["memory", "rm", "editor"]));
    assert_eq!(r.code, 0, "{r}");
    assert!(
        r.stderr.contains("removed") && r.stderr.contains("editor"),
        "{r}"
    );
    let r = run(sb.tackle(&cfg, &["-q", "memory", "rm", "shell"]));
    assert_eq!(
        (r.code, r.stderr.as_str()),
        (0, ""),
        "-q: nothing on stderr\n{r}"
    );
}
