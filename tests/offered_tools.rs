//! The model is offered only tools that can work: a service tool whose `services.*` section is
//! missing, and `web_search` without `web_search.backends`, are not sent to it; configured,
//! they are. Named anyway, they say what to add.

mod common;

use common::{run, FakeLlm, Sandbox};

const RULES: &str = concat!(
    "rules:\n",
    "  - name: whatsapp\n    when: {tools_include: whatsapp}\n    respond: {content: \"offered whatsapp\"}\n",
    "  - name: search\n    when: {tools_include: web_search}\n    respond: {content: \"offered web_search\"}\n",
    "  - name: r8r\n    when: {tools_include: r8r}\n    respond: {content: \"offered r8r\"}\n",
    "  - name: none\n    respond: {content: \"offered none of them\"}\n",
);

#[test]
fn unconfigured_service_tools_and_web_search_are_not_sent_to_the_model() {
    let Some(llm) = FakeLlm::start(RULES) else {
        return;
    };
    let sb = Sandbox::new();
    let config = sb.config(&llm.backend_yaml("openai", false));
    let r = run(sb.tackle(&config, &["run", "hi"]));
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stdout.contains("offered none of them"), "{r}");

    let r = run(sb.tackle(
        &config,
        &["tools", "call", "web_search", r#"{"query": "x"}"#],
    ));
    assert_eq!(r.code, 1, "{r}");
    assert!(
        r.stderr.contains("web_search.backends"),
        "says what to add\n{r}"
    );
}

#[test]
fn a_configured_service_is_offered() {
    let Some(llm) = FakeLlm::start(RULES) else {
        return;
    };
    let sb = Sandbox::new();
    let config = sb.config(&format!(
        "{}web_search:\n  backends:\n    - type: duckduckgo\n",
        llm.backend_yaml("openai", false)
    ));
    let r = run(sb.tackle(&config, &["run", "hi"]));
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stdout.contains("offered web_search"), "{r}");
}
