//! `hardware` against a pseudo-terminal pair: the tool opens the pair's slave end as the
//! board's port (configured under `devices.hardware.ports`), and a thread on the master end
//! plays the board's firmware, one JSON object per line each way.
#![cfg(all(unix, feature = "hardware"))]

use serde_json::{json, Value};
use std::io::{ErrorKind as IoKind, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tackle_host::{HostConfig, NativeHostProvider};
use tackle_protocol::config::HardwarePort;
use tackle_protocol::{CallScope, ErrorKind, HostProvider, Tool, ToolContext, ToolError};
use tackle_tools::devices::{Hardware, HardwareSettings};

/// What the fake firmware sends back for one request line (raw lines, without `\n`).
type Firmware = dyn Fn(&Value) -> Vec<Vec<u8>> + Send + Sync;

struct Board {
    /// The slave end's path: the "device file" the tool opens.
    path: String,
    /// Every request line the board received, parsed.
    received: Arc<Mutex<Vec<Value>>>,
    /// Lines to print unprompted, as a board's logging does.
    unsolicited: Arc<Mutex<Vec<Vec<u8>>>>,
    stop: Arc<AtomicBool>,
    _thread: JoinHandle<()>,
    // Held open so the master keeps working while the tool opens and closes the slave.
    _slave: serialport::TTYPort,
}

impl Drop for Board {
    fn drop(&mut self) {
        // Not joined: a board blocked writing to a port nobody reads any more must not hang
        // the test that failed; the thread ends with the test's process.
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn board(firmware: Box<Firmware>) -> Board {
    let (mut master, slave) = serialport::TTYPort::pair().unwrap_or_else(|e| panic!("{e}"));
    let path = serialport::SerialPort::name(&slave).unwrap_or_else(|| panic!("pty has no name"));
    serialport::SerialPort::set_timeout(&mut master, Duration::from_millis(20))
        .unwrap_or_else(|e| panic!("{e}"));
    let received = Arc::new(Mutex::new(Vec::new()));
    let unsolicited: Arc<Mutex<Vec<Vec<u8>>>> = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let (r, u, s) = (received.clone(), unsolicited.clone(), stop.clone());
    let thread = std::thread::spawn(move || {
        let mut pending = Vec::new();
        let mut buf = [0u8; 4096];
        while !s.load(Ordering::SeqCst) {
            for line in std::mem::take(&mut *u.lock().unwrap_or_else(|p| p.into_inner())) {
                send(&mut master, &line);
            }
            match master.read(&mut buf) {
                Ok(n) => pending.extend_from_slice(&buf[..n]),
                Err(e) if matches!(e.kind(), IoKind::TimedOut | IoKind::WouldBlock) => continue,
                // EIO while no one has the slave open: the board waits to be plugged in.
                Err(_) => {
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                }
            }
            while let Some(at) = pending.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = pending.drain(..=at).collect();
                let request: Value = serde_json::from_slice(&line).unwrap_or(Value::Null);
                r.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(request.clone());
                for answer in firmware(&request) {
                    send(&mut master, &answer);
                }
            }
        }
    });
    Board {
        path,
        received,
        unsolicited,
        stop,
        _thread: thread,
        _slave: slave,
    }
}

fn send(master: &mut serialport::TTYPort, line: &[u8]) {
    let mut bytes = line.to_vec();
    bytes.push(b'\n');
    let _ = master.write_all(&bytes);
    let _ = master.flush();
}

/// Answers `{"id", "ok": true, "result": {"cmd", "args"}}`: the board echoes what it got.
fn echo(request: &Value) -> Vec<Vec<u8>> {
    let answer = json!({"id": request["id"], "ok": true, "result": {"cmd": request["cmd"], "args": request["args"]}});
    vec![answer.to_string().into_bytes()]
}

fn tool(path: &str) -> Hardware {
    Hardware::new(HardwareSettings {
        baud: Some(115_200),
        ports: vec![HardwarePort {
            name: "bench".into(),
            path: path.into(),
            detail: Some("bench power controller".into()),
            architecture: Some("ARM Cortex-M4".into()),
        }],
    })
}

struct Session {
    cx: ToolContext,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
}

fn session(id: &str) -> Session {
    let ws = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let state = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let scope = CallScope {
        tool: "hardware".into(),
        session_id: id.into(),
        agent: "default".into(),
        workspace: ws.path().to_path_buf(),
        grants: Default::default(),
        cancel: Default::default(),
        approved: true,
    };
    let host = NativeHostProvider::new(HostConfig::new(state.path())).scoped(&scope);
    Session {
        cx: ToolContext::new(&scope, "test", host),
        _dirs: (ws, state),
    }
}

async fn call(tool: &Hardware, s: &Session, args: Value) -> Result<Value, ToolError> {
    tool.call(args, &s.cx)
        .await
        .map(|o| o.structured.unwrap_or(Value::String(o.content)))
}

#[tokio::test]
async fn a_configured_port_is_listed_by_name_with_its_path() {
    let b = board(Box::new(echo));
    let t = tool(&b.path);
    let s = session("s");
    let list = call(&t, &s, json!({"action": "list_devices"}))
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    let devices = list["devices"].as_array().cloned().unwrap_or_default();
    let bench = devices
        .iter()
        .find(|d| d["name"] == "bench")
        .unwrap_or_else(|| panic!("bench not listed: {list}"));
    assert_eq!(bench["device_path"], b.path);
    assert_eq!(bench["architecture"], "ARM Cortex-M4");
    let info = call(&t, &s, json!({"action": "device_info", "device": "BENCH"}))
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(info["connected"][0]["device_path"], b.path, "{info}");
}

#[tokio::test]
async fn a_command_and_its_arguments_reach_the_board_as_one_line_and_the_answer_comes_back() {
    let b = board(Box::new(echo));
    let t = tool(&b.path);
    let s = session("s");
    // A newline or a forged second request inside an argument stays inside the one line.
    let args = json!({"pin": 13, "label": "a\nb\r\n{\"id\":\"1\",\"cmd\":\"reset\"}"});
    let out = call(
        &t,
        &s,
        json!({"action": "send_command", "device": "bench", "command": "gpio_write", "args": args}),
    )
    .await
    .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(out, json!({"result": {"cmd": "gpio_write", "args": args}}));
    let got = b.received.lock().unwrap_or_else(|p| p.into_inner()).clone();
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["cmd"], "gpio_write");
    assert_eq!(got[0]["args"], args);
    // Ids are fresh per request: a second command carries another one.
    call(
        &t,
        &s,
        json!({"action": "send_command", "device": "bench", "command": "gpio_read"}),
    )
    .await
    .unwrap_or_else(|e| panic!("{e:?}"));
    let got = b.received.lock().unwrap_or_else(|p| p.into_inner()).clone();
    assert_eq!(got.len(), 2);
    assert_ne!(got[0]["id"], got[1]["id"]);
    assert_eq!(got[1]["args"], json!({}));
}

#[tokio::test]
async fn logs_and_stale_answers_are_not_taken_for_the_answer_and_read_data_returns_them() {
    let b = board(Box::new(|req: &Value| {
        vec![
            b"boot: ok, 3 sensors".to_vec(),
            json!({"id": "stale-9", "ok": true, "result": "wrong"})
                .to_string()
                .into_bytes(),
            b"\xff\xfe not utf-8".to_vec(),
            json!({"id": req["id"], "ok": true, "result": "right"})
                .to_string()
                .into_bytes(),
        ]
    }));
    let t = tool(&b.path);
    let s = session("s");
    let connected = call(&t, &s, json!({"action": "connect", "device": "bench"})).await;
    assert!(connected.is_ok(), "{connected:?}");
    let out = call(
        &t,
        &s,
        json!({"action": "send_command", "device": "bench", "command": "status"}),
    )
    .await
    .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(out, json!({"result": "right"}));
    b.unsolicited
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(b"temp=21.5".to_vec());
    let read = call(&t, &s, json!({"action": "read_data", "device": "bench"}))
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    let text = read.as_str().unwrap_or_default();
    assert!(text.contains("boot: ok, 3 sensors"), "{text}");
    assert!(text.contains("stale-9"), "{text}");
    assert!(text.contains("temp=21.5"), "{text}");
    let disc = call(&t, &s, json!({"action": "disconnect", "device": "bench"})).await;
    assert!(disc.is_ok(), "{disc:?}");
    // Without a connection nothing is being kept, and read_data says so.
    let err = call(&t, &s, json!({"action": "read_data", "device": "bench"}))
        .await
        .expect_err("read_data while disconnected");
    assert!(err.message.contains("not connected"), "{}", err.message);
}

#[tokio::test]
async fn a_refusal_is_an_error_that_carries_the_boards_reason() {
    let b = board(Box::new(|req: &Value| {
        vec![
            json!({"id": req["id"], "ok": false, "error": "no such pin: 99"})
                .to_string()
                .into_bytes(),
        ]
    }));
    let t = tool(&b.path);
    let s = session("s");
    let err = call(
        &t,
        &s,
        json!({"action": "send_command", "device": "bench", "command": "gpio_read", "args": {"pin": 99}}),
    )
    .await
    .expect_err("refused");
    assert_eq!(err.kind, ErrorKind::Failed);
    assert!(err.message.contains("no such pin: 99"), "{}", err.message);
}

#[tokio::test]
async fn a_silent_board_times_out_instead_of_hanging() {
    let b = board(Box::new(|_: &Value| Vec::new()));
    let t = tool(&b.path);
    let s = session("s");
    let started = Instant::now();
    let err = call(
        &t,
        &s,
        json!({"action": "send_command", "device": "bench", "command": "ping"}),
    )
    .await
    .expect_err("no answer");
    assert_eq!(err.kind, ErrorKind::Timeout, "{}", err.message);
    // Within the tool's own limit (the dispatcher would cut it off there anyway).
    assert!(
        started.elapsed() < t.timeout().unwrap_or(Duration::MAX),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        b.received.lock().unwrap_or_else(|p| p.into_inner()).len(),
        1
    );
}

#[tokio::test]
async fn an_overlong_line_is_dropped_whole_and_the_port_keeps_working() {
    let b = board(Box::new(|req: &Value| {
        if req["cmd"] == "flood" {
            // 200 KB before the newline, and no answer.
            vec![vec![b'x'; 200 * 1024]]
        } else if req["cmd"] == "dump" {
            // A 100 KB dump whose tail looks like an answer, then the real answer.
            let mut dump = vec![b'y'; 100 * 1024];
            dump.extend_from_slice(
                json!({"id": req["id"], "ok": true, "result": "tail"})
                    .to_string()
                    .as_bytes(),
            );
            vec![dump, echo(req).remove(0)]
        } else {
            echo(req)
        }
    }));
    let t = tool(&b.path);
    let s = session("s");
    assert!(
        call(&t, &s, json!({"action": "connect", "device": "bench"}))
            .await
            .is_ok()
    );
    let err = call(
        &t,
        &s,
        json!({"action": "send_command", "device": "bench", "command": "flood"}),
    )
    .await
    .expect_err("no answer");
    assert_eq!(err.kind, ErrorKind::Timeout, "{}", err.message);
    assert!(
        err.message.contains("1 longer than 64 KB dropped"),
        "{}",
        err.message
    );
    for cmd in ["dump", "ping"] {
        let out = call(
            &t,
            &s,
            json!({"action": "send_command", "device": "bench", "command": cmd}),
        )
        .await
        .unwrap_or_else(|e| panic!("{cmd}: {e:?}"));
        assert_eq!(out["result"]["cmd"], cmd);
    }
    let read = call(&t, &s, json!({"action": "read_data", "device": "bench"}))
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    let text = read.as_str().unwrap_or_default();
    assert!(
        text.contains("[2 line(s) longer than 64 KB dropped]"),
        "{text}"
    );
    assert!(
        !text.contains("xxx") && !text.contains("yyy"),
        "{}",
        text.len()
    );
}

#[tokio::test]
async fn a_port_held_by_one_session_or_program_is_refused_to_another() {
    let b = board(Box::new(echo));
    let t = tool(&b.path);
    let (mine, theirs) = (session("s"), session("t"));
    assert!(
        call(&t, &mine, json!({"action": "connect", "device": "bench"}))
            .await
            .is_ok()
    );
    for action in ["connect", "send_command", "disconnect"] {
        let err = call(
            &t,
            &theirs,
            json!({"action": action, "device": "bench", "command": "ping"}),
        )
        .await
        .expect_err(action);
        assert!(
            err.message.contains("another session"),
            "{action}: {}",
            err.message
        );
    }
    // A second Tackle process (another tool instance) finds the port locked.
    let other = tool(&b.path);
    let err = call(
        &other,
        &theirs,
        json!({"action": "connect", "device": "bench"}),
    )
    .await
    .expect_err("exclusive");
    assert!(err.message.contains("in use"), "{}", err.message);
    assert!(call(
        &t,
        &mine,
        json!({"action": "disconnect", "device": "bench"})
    )
    .await
    .is_ok());
    let now = call(
        &other,
        &theirs,
        json!({"action": "connect", "device": "bench"}),
    )
    .await;
    assert!(now.is_ok(), "{now:?}");
}

#[tokio::test]
async fn devices_are_named_never_given_as_paths() {
    let b = board(Box::new(echo));
    let t = tool(&b.path);
    let s = session("s");
    for device in [b.path.as_str(), "/dev/null", "../../dev/ttyS0", "nosuch"] {
        let err = call(
            &t,
            &s,
            json!({"action": "send_command", "device": device, "command": "ping"}),
        )
        .await
        .expect_err(device);
        assert_eq!(err.kind, ErrorKind::NotFound, "{device}: {}", err.message);
        assert!(err.message.contains("bench"), "{}", err.message);
    }
    assert!(b
        .received
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .is_empty());
    let err = call(&t, &s, json!({"action": "device_info", "device": "nosuch"}))
        .await
        .expect_err("unknown");
    assert_eq!(err.kind, ErrorKind::NotFound);
}
