//! `backends[].models[].context_window` decides how much history the model is sent: with a
//! small window, an early long message is trimmed from a later turn's request; with the
//! default window it stays.

mod common;

use common::{run, FakeLlm, Sandbox};

/// The second turn's answer: whether the model still saw the first turn's marker.
fn second_answer(window: Option<u32>) -> Option<String> {
    let rules = "rules:\n  - name: remembered\n    when: {messages_contain: \"alpha-marker-7\"}\n    respond: {content: \"REMEMBERED\"}\n  - name: gone\n    when: {messages_contain: \"\"}\n    respond: {content: \"GONE\"}\n";
    let llm = FakeLlm::start(rules)?;
    let sb = Sandbox::new();
    let models = match window {
        Some(w) => format!("      - name: fake-model\n        context_window: {w}\n"),
        None => "      - name: fake-model\n".to_string(),
    };
    let backend = llm
        .backend_yaml("openai", false)
        .replace("      - name: fake-model\n", &models);
    let config = sb.config(&backend);
    // Turn one: the marker and ~2,000 tokens of padding; turn two: ~1,000 tokens.
    let first = format!("ALPHA-MARKER-7 {}", "pad ".repeat(2000));
    let r = run(sb.tackle(&config, &["run", "--session", "window-1", "-m", &first]));
    assert_eq!(r.code, 0, "{r}");
    let second = format!("second question {}", "more ".repeat(800));
    let r = run(sb.tackle(&config, &["run", "--session", "window-1", "-m", &second]));
    assert_eq!(r.code, 0, "{r}");
    Some(r.stdout)
}

#[test]
fn a_small_context_window_trims_the_oldest_turn_and_the_default_keeps_it() {
    let Some(small) = second_answer(Some(2500)) else {
        return;
    };
    assert!(
        small.contains("GONE"),
        "the first turn was still sent: {small}"
    );
    let Some(default) = second_answer(None) else {
        return;
    };
    assert!(
        default.contains("REMEMBERED"),
        "the first turn was trimmed: {default}"
    );
}
