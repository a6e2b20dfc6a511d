//! Tool profiles end to end: the real `tackle run` against fakellm in both wire formats. The
//! fake model's rules look at the tool names in each request (`tools_include`), so what the
//! provider received decides what it answers.

mod common;

use common::{run, FakeLlm, Run, Sandbox};

/// Rules in order, first match wins: the tool result comes back → final answer; `calculate`
/// among the request's tools → say so; otherwise ask for `calculate` by name.
const RULES: &str = concat!(
    "rules:\n",
    "  - name: answer\n    when: {tool_result_contains: \"42\"}\n    respond: {content: \"The answer is 42.\"}\n",
    "  - name: sent\n    when: {tools_include: calculate}\n    respond: {content: \"CALCULATE WAS SENT\"}\n",
    "  - name: ask\n    when: {messages_contain: \"compute\"}\n    respond:\n      tool_calls:\n        - {name: calculate, arguments: {expression: \"6*7\"}}\n",
);

const HIDING: &str = "tool_profiles:\n  tight:\n    default: brief\n    tools:\n      calculate: hidden\nagents:\n  - name: a\n    tool_profile: tight\n";

fn tackle_run(llm: &FakeLlm, kind: &str, extra_yaml: &str, prompt: &str) -> Run {
    let sb = Sandbox::new();
    let config = sb.config(&format!("{}{extra_yaml}", llm.backend_yaml(kind, false)));
    run(sb.tackle(&config, &["run", "-m", prompt]))
}

#[test]
fn a_hidden_tool_is_not_sent_to_the_provider_but_stays_callable() {
    let Some(llm) = FakeLlm::start(RULES) else {
        return;
    };
    for kind in ["openai", "anthropic"] {
        let r = tackle_run(&llm, kind, HIDING, &format!("compute hidden {kind}"));
        assert_eq!(r.code, 0, "{kind}\n{r}");
        assert!(!r.stdout.contains("CALCULATE WAS SENT"), "{kind}\n{r}");
        assert!(r.stdout.contains("The answer is 42."), "{kind}\n{r}");
        assert!(r.stderr.contains("✓ calculate"), "{kind}\n{r}");
    }
}

#[test]
fn without_a_profile_the_same_tool_is_sent() {
    // The control for the test above: the rule that sees `calculate` does fire when it is sent.
    let Some(llm) = FakeLlm::start(RULES) else {
        return;
    };
    for kind in ["openai", "anthropic"] {
        let r = tackle_run(&llm, kind, "", &format!("compute shown {kind}"));
        assert_eq!(r.code, 0, "{kind}\n{r}");
        assert!(r.stdout.contains("CALCULATE WAS SENT"), "{kind}\n{r}");
    }
}

#[test]
fn an_agent_naming_an_unknown_profile_is_a_config_error_naming_it() {
    let sb = Sandbox::new();
    let config = sb.config("agents:\n  - name: a\n    tool_profile: nosuch\n");
    let r = run(sb.tackle(&config, &["tools", "list"]));
    assert_ne!(r.code, 0, "{r}");
    assert!(
        r.stderr.contains("nosuch") && r.stderr.contains("agents[0].tool_profile"),
        "{r}"
    );
}

#[test]
fn tools_list_shows_each_tools_profile_mode_for_the_agent() {
    let sb = Sandbox::new();
    let config = sb.config(
        "tool_profiles:\n  p:\n    default: brief\n    tools:\n      calculate: hidden\n      \"web_*\": summary\nagents:\n  - name: a\n    tool_profile: p\n  - name: b\n",
    );
    let r = run(sb.tackle(&config, &["tools", "list", "--agent", "a", "--json"]));
    assert_eq!(r.code, 0, "{r}");
    let rows: serde_json::Value = serde_json::from_str(&r.stdout).expect("json");
    let mode = |name: &str| {
        rows.as_array()
            .and_then(|a| a.iter().find(|t| t["name"] == name))
            .map(|t| t["profile"].clone())
            .unwrap_or_else(|| panic!("{name} not listed: {rows}"))
    };
    assert_eq!(mode("calculate"), "hidden");
    assert_eq!(mode("web_fetch"), "summary");
    assert_eq!(mode("read_file"), "brief");
    let text = run(sb.tackle(&config, &["tools", "list", "--agent", "a"]));
    assert!(
        text.stdout
            .lines()
            .next()
            .is_some_and(|h| h.ends_with("PROFILE")),
        "{text}"
    );
    assert!(
        text.stdout
            .lines()
            .any(|l| l.starts_with("calculate ") && l.ends_with("hidden")),
        "{text}"
    );
    let other = run(sb.tackle(&config, &["tools", "list", "--agent", "b", "--json"]));
    assert!(other.stdout.contains("\"profile\": \"full\""), "{other}");
    assert!(!other.stdout.contains("\"profile\": \"hidden\""), "{other}");
}
