//! `tackle chat` in a real terminal (tmux): a tool call asks y/n/a inline, and `a` stops further
//! prompts for that tool in the session; a concurrent call's output never lands in the waiting
//! prompt's line; Ctrl-C at a prompt denies the call and cancels the turn; file writes show
//! what they will write; the prompt says in words what a yes allows, lists every call the
//! model asked for before asking about the first, and `tools call` offers no "always"; a long
//! call shows its elapsed time; the chat's commands and colours.

mod common;

use common::tmux::{shell_quote, Tmux};
use common::{FakeLlm, Sandbox};
use std::time::{Duration, Instant};

#[test]
fn always_for_this_session_stops_further_prompts_for_that_tool() {
    let Some(llm) = FakeLlm::start(concat!(
        "rules:\n",
        "  - name: first\n    when: {turn: 1}\n    respond:\n      tool_calls:\n        - {name: shell, arguments: {command: \"echo first-ran\"}}\n",
        "  - name: first-done\n    when: {turn: 2}\n    respond: {content: \"first finished\"}\n",
        "  - name: second\n    when: {turn: 3}\n    respond:\n      tool_calls:\n        - {name: shell, arguments: {command: \"echo second-ran\"}}\n",
        "  - name: second-done\n    when: {turn: 4}\n    respond: {content: \"second finished\"}\n",
    )) else {
        return;
    };
    let sb = Sandbox::new();
    let config = sb.config(&llm.backend_yaml("openai", true));
    let command = format!(
        "env -i PATH={} HOME={} {} --config {} --workspace {} chat; sleep 30",
        shell_quote(&std::env::var("PATH").unwrap_or_default()),
        shell_quote(&sb.home().to_string_lossy()),
        shell_quote(&common::tackle_bin().to_string_lossy()),
        shell_quote(&config.to_string_lossy()),
        shell_quote(&sb.workspace().to_string_lossy()),
    );
    let name = format!("tackle-chat-{}", std::process::id());
    let Some(tmux) = Tmux::start_sized(&name, &command, 160) else {
        return;
    };
    tmux.wait_for("you>", 1);
    tmux.send("run it");
    let screen = tmux.wait_for("[a] always for this session", 1);
    assert!(
        screen.contains("echo first-ran"),
        "the prompt shows what will run:\n{screen}"
    );
    tmux.send("a");
    let screen = tmux.wait_for("first finished", 1);
    assert!(screen.contains("✓ shell"), "{screen}");
    tmux.send("again please");
    let screen = tmux.wait_for("second finished", 1);
    assert_eq!(
        screen.matches("[a] always for this session").count(),
        1,
        "no second prompt:\n{screen}"
    );
    tmux.send("/quit");
}

/// `tackle chat` for `llm` with `extra_yaml` in the config, in a tmux session named after
/// `tag`; the pane stays a while after chat exits so its last screen can be read.
fn start_chat(sb: &Sandbox, llm: &FakeLlm, extra_yaml: &str, tag: &str) -> Option<Tmux> {
    let config = sb.config(&format!("{}{extra_yaml}", llm.backend_yaml("openai", true)));
    let command = format!(
        "env -i PATH={} HOME={} {} --config {} --workspace {} chat; sleep 30",
        shell_quote(&std::env::var("PATH").unwrap_or_default()),
        shell_quote(&sb.home().to_string_lossy()),
        shell_quote(&common::tackle_bin().to_string_lossy()),
        shell_quote(&config.to_string_lossy()),
        shell_quote(&sb.workspace().to_string_lossy()),
    );
    let tmux = Tmux::start_sized(
        &format!("tackle-chat-{tag}-{}", std::process::id()),
        &command,
        160,
    )?;
    tmux.wait_for("you>", 1);
    Some(tmux)
}

/// Shell calls run without asking, so they run alongside a call that waits for its answer.
const SHELL_UNASKED: &str = "security:\n  tool_policies:\n    shell:\n      approval: never\n";
const QUESTION: &str = "Allow? [y] once  [n] deny  [a] always for this session, then Enter:";

/// The screen's lines without trailing blanks, the empty lines below the last one dropped.
fn lines(screen: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = screen.lines().map(str::trim_end).collect();
    while lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    lines
}

#[test]
fn a_concurrent_call_finishing_leaves_the_waiting_prompt_intact() {
    let content: String = (1..=25).map(|i| format!("row {i:02}\\n")).collect();
    let Some(llm) = FakeLlm::start(&format!(
        concat!(
            "rules:\n",
            "  - name: both\n    when: {{turn: 1}}\n    respond:\n      tool_calls:\n",
            "        - {{name: write_file, arguments: {{path: notes.txt, content: \"{}\"}}}}\n",
            "        - {{name: shell, arguments: {{command: \"sleep 1; echo done > done.txt\"}}}}\n",
            "  - name: done\n    when: {{turn: 2}}\n    respond: {{content: \"both finished\"}}\n",
        ),
        content
    )) else {
        return;
    };
    let sb = Sandbox::new();
    let Some(tmux) = start_chat(&sb, &llm, SHELL_UNASKED, "concurrent") else {
        return;
    };
    tmux.send("write the notes");
    tmux.wait_for(QUESTION, 1);
    // The shell call (no approval needed) ends a second later, while the prompt waits.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !sb.workspace().join("done.txt").exists() {
        assert!(Instant::now() < deadline, "the shell call never finished");
        std::thread::sleep(Duration::from_millis(100));
    }
    // Time for its `✓` to reach the terminal writer.
    std::thread::sleep(Duration::from_millis(1000));
    let screen = tmux.screen();
    let shown = lines(&screen);
    assert_eq!(
        shown.last().copied(),
        Some(QUESTION),
        "the prompt is the last line, whole, with nothing written into or after it:\n{screen}"
    );
    assert_eq!(screen.matches("needs approval").count(), 1, "{screen}");
    assert!(
        screen.contains("│ row 01"),
        "the content to write:\n{screen}"
    );
    assert!(screen.contains("│ row 20"), "{screen}");
    assert!(!screen.contains("row 21"), "cut after 20 lines:\n{screen}");
    assert!(screen.contains("… 5 more lines"), "{screen}");
    tmux.send("y");
    let screen = tmux.wait_for("both finished", 1);
    assert!(
        screen.contains("✓ shell"),
        "what was held is printed:\n{screen}"
    );
    assert!(screen.contains("✓ write_file"), "{screen}");
    for line in screen.lines().filter(|l| l.contains("✓")) {
        assert!(
            line.trim_start().starts_with('✓'),
            "a `✓` line of its own: {line:?}\n{screen}"
        );
    }
    let written = std::fs::read_to_string(sb.workspace().join("notes.txt")).unwrap_or_default();
    assert_eq!(written, content.replace("\\n", "\n"));
    tmux.send("/quit");
}

#[test]
fn ctrl_c_at_a_prompt_denies_the_call_cancels_the_turn_and_the_chat_goes_on() {
    let Some(llm) = FakeLlm::start(concat!(
        "rules:\n",
        "  - name: both\n    when: {turn: 1}\n    respond:\n      tool_calls:\n",
        "        - {name: write_file, arguments: {path: never.txt, content: \"x\"}}\n",
        "        - {name: shell, arguments: {command: \"sleep 6; touch late.txt\"}}\n",
        "  - name: next\n    when: {turn: 2}\n    respond: {content: \"still here\"}\n",
    )) else {
        return;
    };
    let sb = Sandbox::new();
    let Some(tmux) = start_chat(&sb, &llm, SHELL_UNASKED, "ctrlc") else {
        return;
    };
    tmux.send("start both");
    tmux.wait_for(QUESTION, 1);
    let pressed = Instant::now();
    tmux.key("C-c");
    let screen = tmux.wait_for("(cancelled)", 1);
    assert!(
        pressed.elapsed() < Duration::from_secs(5),
        "the turn ends at once, the 6 s shell call cancelled with it:\n{screen}"
    );
    assert!(screen.contains("✗ write_file denied"), "{screen}");
    assert!(
        screen
            .lines()
            .any(|l| l.contains("✗ shell") && l.contains("cancelled")),
        "the concurrent call was running and is cancelled, not asked about:\n{screen}"
    );
    let screen = tmux.wait_for("you>", 2);
    assert_eq!(
        lines(&screen).last().map(|l| l.trim()),
        Some("you>"),
        "the chat prompt is back:\n{screen}"
    );
    tmux.send("are you there?");
    tmux.wait_for("still here", 1);
    tmux.send("/quit");
    tmux.wait_for("resume with tackle chat --session", 1);
    std::thread::sleep(
        Duration::from_secs(6).saturating_sub(pressed.elapsed()) + Duration::from_millis(500),
    );
    assert!(!sb.workspace().join("never.txt").exists(), "denied");
    let late = sb.workspace().join("late.txt");
    if late.exists() {
        // When it was written says which step let it through (a call that was never
        // stopped writes it about 6 s after it started, a second run later still).
        let written = std::fs::metadata(&late)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok());
        panic!(
            "the concurrent call was cancelled, yet late.txt was written {written:?} ago ({:?} after Ctrl-C); screen:\n{}",
            pressed.elapsed(),
            tmux.screen()
        );
    }
}

#[test]
fn an_edit_file_prompt_shows_the_old_and_new_text() {
    let Some(llm) = FakeLlm::start(concat!(
        "rules:\n",
        "  - name: edit\n    when: {turn: 1}\n    respond:\n      tool_calls:\n",
        "        - {name: edit_file, arguments: {path: settings.txt, old_text: \"colour = red\", new_text: \"colour = blue\"}}\n",
        "  - name: done\n    when: {turn: 2}\n    respond: {content: \"edited it\"}\n",
    )) else {
        return;
    };
    let sb = Sandbox::new();
    std::fs::write(
        sb.workspace().join("settings.txt"),
        "size = 3\ncolour = red\n",
    )
    .expect("write");
    let Some(tmux) = start_chat(&sb, &llm, "", "edit") else {
        return;
    };
    tmux.send("make it blue");
    let screen = tmux.wait_for(QUESTION, 1);
    assert!(screen.contains("- colour = red"), "{screen}");
    assert!(screen.contains("+ colour = blue"), "{screen}");
    assert_eq!(
        screen.matches("needs approval").count(),
        1,
        "the why is said once:\n{screen}"
    );
    tmux.send("y");
    tmux.wait_for("edited it", 1);
    assert_eq!(
        std::fs::read_to_string(sb.workspace().join("settings.txt")).unwrap_or_default(),
        "size = 3\ncolour = blue\n"
    );
    tmux.send("/quit");
}

/// `tackle ARGS` for `llm` in a tmux session, with extra environment `env` (`NAME=value …`).
fn start_tackle(
    sb: &Sandbox,
    config: &std::path::Path,
    env: &str,
    args: &str,
    tag: &str,
) -> Option<Tmux> {
    let command = format!(
        "env -i PATH={} HOME={} {env} {} --config {} --workspace {} {args}; sleep 30",
        shell_quote(&std::env::var("PATH").unwrap_or_default()),
        shell_quote(&sb.home().to_string_lossy()),
        shell_quote(&common::tackle_bin().to_string_lossy()),
        shell_quote(&config.to_string_lossy()),
        shell_quote(&sb.workspace().to_string_lossy()),
    );
    Tmux::start_sized(
        &format!("tackle-{tag}-{}", std::process::id()),
        &command,
        160,
    )
}

#[test]
fn the_prompt_says_in_words_what_a_yes_allows_and_lists_the_calls_first() {
    let Some(llm) = FakeLlm::start(concat!(
        "rules:\n",
        "  - name: two\n    when: {turn: 1}\n    respond:\n      tool_calls:\n",
        "        - {name: shell, arguments: {command: \"echo alpha\"}}\n",
        "        - {name: shell, arguments: {command: \"echo beta\"}}\n",
        "  - name: done\n    when: {turn: 2}\n    respond: {content: \"both ran\"}\n",
    )) else {
        return;
    };
    let sb = Sandbox::new();
    let Some(tmux) = start_chat(&sb, &llm, "", "grants") else {
        return;
    };
    tmux.send("run both");
    let screen = tmux.wait_for(QUESTION, 1);
    let first_prompt = screen.find("Allow?").unwrap_or(0);
    for call in ["→ shell  echo alpha", "→ shell  echo beta"] {
        let at = screen.find(call);
        assert!(
            at.is_some_and(|at| at < first_prompt),
            "every call's line comes before the first prompt:\n{screen}"
        );
    }
    assert!(screen.contains("if allowed, it runs with:"), "{screen}");
    assert!(
        screen.contains("commands: any (inside the sandbox)"),
        "{screen}"
    );
    assert!(screen.contains("files: the workspace only"), "{screen}");
    assert!(
        !screen.contains("grants in force"),
        "no JSON blob:\n{screen}"
    );
    tmux.send("y");
    tmux.wait_for(QUESTION, 2);
    tmux.send("y");
    tmux.wait_for("both ran", 1);
    tmux.send("/quit");
}

#[test]
fn a_one_shot_tools_call_does_not_offer_always() {
    let sb = Sandbox::new();
    let config = sb.config("");
    let Some(tmux) = start_tackle(
        &sb,
        &config,
        "",
        "tools call shell '{\"command\": \"echo one-shot-ran\"}'",
        "oneshot",
    ) else {
        return;
    };
    let screen = tmux.wait_for("Allow? [y] yes  [n] no, then Enter:", 1);
    assert!(!screen.contains("[a]"), "{screen}");
    tmux.send("a");
    tmux.wait_for("Please answer y or n.", 1);
    tmux.send("y");
    tmux.wait_for("one-shot-ran", 1);
}

#[test]
fn a_long_call_shows_its_elapsed_time_on_a_terminal() {
    let Some(llm) = FakeLlm::start(concat!(
        "rules:\n",
        "  - name: slow\n    when: {turn: 1}\n    respond:\n      tool_calls:\n",
        "        - {name: shell, arguments: {command: \"sleep 4; echo slept\"}}\n",
        "  - name: done\n    when: {turn: 2}\n    respond: {content: \"woke up\"}\n",
    )) else {
        return;
    };
    let sb = Sandbox::new();
    let Some(tmux) = start_chat(&sb, &llm, SHELL_UNASKED, "elapsed") else {
        return;
    };
    tmux.send("take a nap");
    tmux.wait_for("shell running 2s", 1);
    let screen = tmux.wait_for("woke up", 1);
    assert!(
        !screen.contains("shell running"),
        "the status line is erased when the call ends:\n{screen}"
    );
    assert!(screen.contains("✓ shell"), "{screen}");
    tmux.send("/quit");
}

/// The pane with its escape sequences (colours) kept.
fn screen_with_escapes(tmux_name: &str) -> String {
    std::process::Command::new("tmux")
        .args(["capture-pane", "-p", "-e", "-S", "-200", "-t", tmux_name])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

#[test]
fn chat_colours_its_terminal_unless_no_color_is_set() {
    let Some(llm) = FakeLlm::start("rules: []\n") else {
        return;
    };
    let sb = Sandbox::new();
    let config = sb.config(&llm.backend_yaml("openai", true));
    for (env, coloured) in [("", true), ("NO_COLOR=1", false)] {
        let tag = if coloured { "colour" } else { "nocolour" };
        let Some(tmux) = start_tackle(&sb, &config, env, "chat", tag) else {
            return;
        };
        tmux.wait_for("you>", 1);
        tmux.send("/help");
        let screen = tmux.wait_for("/permissions", 1);
        assert!(screen.contains("/clear"), "{screen}");
        assert_eq!(
            screen.matches("tackle chat").count(),
            1,
            "/help lists the commands instead of repeating the banner:\n{screen}"
        );
        let raw = screen_with_escapes(&format!("tackle-{tag}-{}", std::process::id()));
        assert_eq!(raw.contains("\u{1b}["), coloured, "{env}: {raw:?}");
        tmux.send("/quit");
    }
}
