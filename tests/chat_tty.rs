//! `tackle chat` in a real terminal (tmux): a tool call asks y/n/a inline, and `a` stops further
//! prompts for that tool in the session.

mod common;

use common::{FakeLlm, Sandbox};
use std::process::Command;
use std::time::{Duration, Instant};

struct Tmux {
    name: String,
}

impl Tmux {
    fn start(name: &str, command: &str) -> Option<Self> {
        let ok = Command::new("tmux")
            .args([
                "new-session",
                "-d",
                "-s",
                name,
                "-x",
                "160",
                "-y",
                "50",
                command,
            ])
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if !ok {
            eprintln!("SKIP: tmux is not available");
            return None;
        }
        Some(Self {
            name: name.to_string(),
        })
    }

    fn send(&self, keys: &str) {
        let _ = Command::new("tmux")
            .args(["send-keys", "-t", &self.name, "-l", keys])
            .status();
        let _ = Command::new("tmux")
            .args(["send-keys", "-t", &self.name, "Enter"])
            .status();
    }

    fn screen(&self) -> String {
        Command::new("tmux")
            .args(["capture-pane", "-p", "-S", "-200", "-t", &self.name])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    }

    /// Wait until the screen shows `needle` `times` times.
    fn wait_for(&self, needle: &str, times: usize) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let screen = self.screen();
            if screen.matches(needle).count() >= times {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {needle:?} x{times}; screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.name])
            .status();
    }
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

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
        shell_quote(env!("CARGO_BIN_EXE_tackle")),
        shell_quote(&config.to_string_lossy()),
        shell_quote(&sb.workspace().to_string_lossy()),
    );
    let name = format!("tackle-chat-{}", std::process::id());
    let Some(tmux) = Tmux::start(&name, &command) else {
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
