//! A real terminal for front-end tests: a detached tmux session running one command, typed
//! into and read back. `start` returns `None` (the test skips) where tmux is missing.

use std::process::Command;
use std::time::{Duration, Instant};

pub struct Tmux {
    name: String,
}

impl Tmux {
    /// A 200×50 terminal running `command`.
    pub fn start(name: &str, command: &str) -> Option<Self> {
        Self::start_sized(name, command, 200)
    }

    /// A `width`×50 terminal running `command`.
    pub fn start_sized(name: &str, command: &str, width: u16) -> Option<Self> {
        let ok = Command::new("tmux")
            .args([
                "new-session",
                "-d",
                "-s",
                name,
                "-x",
                &width.to_string(),
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

    /// A key by its tmux name (`C-c`), not typed as text.
    pub fn key(&self, key: &str) {
        let _ = Command::new("tmux")
            .args(["send-keys", "-t", &self.name, key])
            .status();
    }

    /// Type `keys` and press Enter.
    pub fn send(&self, keys: &str) {
        let _ = Command::new("tmux")
            .args(["send-keys", "-t", &self.name, "-l", keys])
            .status();
        let _ = Command::new("tmux")
            .args(["send-keys", "-t", &self.name, "Enter"])
            .status();
    }

    pub fn screen(&self) -> String {
        Command::new("tmux")
            .args(["capture-pane", "-p", "-J", "-S", "-200", "-t", &self.name])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    }

    pub fn wait_for(&self, needle: &str, times: usize) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
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

/// `s` as one word for `sh`.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}
