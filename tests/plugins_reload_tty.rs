//! Plugins reload while `tackle chat` runs in a real terminal (tmux): a plugin added, then
//! changed, then broken on disk is picked up by the running chat without a restart — the added
//! tool runs, the changed command is the one that runs next, and the broken manifest takes the
//! tool away with a warning while the chat carries on.

mod common;

use common::tmux::{shell_quote, Tmux};
use common::{FakeLlm, Sandbox};
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

const RECORD: &str = "#!/bin/sh\nrm -rf rec && mkdir rec || exit 1\ni=0\nfor a in \"$@\"; do\n  printf '%s' \"$a\" > \"rec/$i\"\n  i=$((i+1))\ndone\necho \"recorded $i\"\n";

fn manifest(command: Value) -> String {
    json!({
        "name": "recorder", "version": "1.0.0", "description": "records its argv",
        "tools": [{
            "name": "record_args", "description": "Record the arguments",
            "parameters": {"type": "object", "properties": {"value": {"type": "string"}},
                           "required": ["value"], "additionalProperties": false},
            "command": command
        }]
    })
    .to_string()
}

/// What the last run of the plugin recorded, argument by argument.
fn recorded(ws: &Path) -> Vec<String> {
    (0..)
        .map(|i| std::fs::read_to_string(ws.join("rec").join(i.to_string())))
        .take_while(Result::is_ok)
        .map(|r| r.unwrap_or_default())
        .collect()
}

#[test]
fn chat_picks_up_a_plugin_added_changed_and_broken_while_it_runs() {
    let call = |turn: u32, value: &str| {
        format!(
            "  - name: call{turn}\n    when: {{turn: {turn}}}\n    respond:\n      tool_calls:\n        - {{name: record_args, arguments: {{value: \"{value}\"}}}}\n"
        )
    };
    let answer = |turn: u32, text: &str| {
        format!("  - name: answer{turn}\n    when: {{turn: {turn}}}\n    respond: {{content: \"{text}\"}}\n")
    };
    let rules = format!(
        "rules:\n{}{}{}{}{}{}",
        call(1, "first"),
        answer(2, "phase one over"),
        call(3, "second"),
        answer(4, "phase two over"),
        call(5, "third"),
        answer(6, "phase three over"),
    );
    let Some(llm) = FakeLlm::start(&rules) else {
        return;
    };
    let sb = Sandbox::new();
    let plugins = sb.home().join(".config/tackle/plugins");
    std::fs::create_dir_all(&plugins).expect("plugins dir");
    let config = sb.config(&format!(
        "{}security:\n  tool_policies:\n    record_args:\n      approval: never\n",
        llm.backend_yaml("openai", true)
    ));
    let command = format!(
        "env -i PATH={} HOME={} TACKLE_LOG=info {} --config {} --workspace {} chat; sleep 30",
        shell_quote(&std::env::var("PATH").unwrap_or_default()),
        shell_quote(&sb.home().to_string_lossy()),
        shell_quote(&common::tackle_bin().to_string_lossy()),
        shell_quote(&config.to_string_lossy()),
        shell_quote(&sb.workspace().to_string_lossy()),
    );
    let Some(tmux) = Tmux::start_sized(
        &format!("tackle-plugins-{}", std::process::id()),
        &command,
        200,
    ) else {
        return;
    };
    tmux.wait_for("you>", 1);

    // Added: copied in as a directory while the chat waits for input.
    let dir = plugins.join("recorder");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let script = dir.join("record.sh");
    std::fs::write(&script, RECORD).expect("script");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let file = dir.join("plugin.json");
    std::fs::write(&file, manifest(json!(["./record.sh", "{{value}}"]))).expect("manifest");
    tmux.wait_for("plugins reloaded: 1 plugin(s), 0 problem(s)", 1);
    tmux.send("record first");
    let screen = tmux.wait_for("phase one over", 1);
    assert!(screen.contains("✓ record_args"), "{screen}");
    assert_eq!(recorded(&sb.workspace()), ["first"], "{screen}");

    // Changed: the next call runs the new command.
    std::fs::write(
        &file,
        manifest(json!(["./record.sh", "changed", "{{value}}"])),
    )
    .expect("manifest");
    tmux.wait_for("plugins reloaded: 1 plugin(s), 0 problem(s)", 2);
    tmux.send("record second");
    tmux.wait_for("phase two over", 1);
    assert_eq!(recorded(&sb.workspace()), ["changed", "second"]);

    // Broken: the plugin is skipped with a warning naming the file; its tool is gone, nothing
    // runs, and the chat answers on.
    std::fs::write(&file, "{\"name\": \"recorder\", \"tools\": [").expect("manifest");
    let screen = tmux.wait_for("plugin skipped", 1);
    assert!(screen.contains("plugin.json"), "{screen}");
    tmux.send("record third");
    let screen = tmux.wait_for("phase three over", 1);
    assert!(screen.contains("unknown tool `record_args`"), "{screen}");
    assert_eq!(recorded(&sb.workspace()), ["changed", "second"]);
    tmux.send("/quit");
}
