//! Hints printed at the command line name commands a person can type, not the model's tools.

mod common;

use common::{run, Sandbox};

#[test]
fn an_unknown_skill_points_at_the_skills_command_not_the_tool() {
    let sb = Sandbox::new();
    let config = sb.config("");
    let r = run(sb.tackle(&config, &["skills", "show", "no-such-skill"]));
    assert_ne!(r.code, 0, "{r}");
    assert!(r.stderr.contains("`tackle skills list`"), "{r}");
    assert!(!r.stderr.contains("skill_list"), "{r}");
}

#[test]
fn an_unknown_schedule_points_at_the_schedule_command_not_the_tool() {
    let sb = Sandbox::new();
    let config = sb.config("");
    let r = run(sb.tackle(&config, &["schedule", "rm", "nope"]));
    assert_ne!(r.code, 0, "{r}");
    assert!(r.stderr.contains("`tackle schedule list`"), "{r}");
    assert!(!r.stderr.contains("schedule_list"), "{r}");
}
