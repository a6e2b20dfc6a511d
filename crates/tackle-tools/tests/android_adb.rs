//! `android` through the real host in front of a fake `adb` on PATH. The fake records its
//! argv and plays the device: for `adb shell …` it joins the words and hands them to `sh -c`,
//! as adb and the device's shell do, with stand-ins for the device's `input`, `uiautomator`
//! and `wm` that record what they receive.
#![cfg(all(unix, feature = "android"))]

use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tackle_host::{HostConfig, NativeHostProvider};
use tackle_protocol::{CallScope, HostProvider, Tool, ToolContext};
use tackle_tools::devices::{Android, AndroidSettings};

struct Fake {
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    root: PathBuf,
    cx: ToolContext,
}

const DUMP: &str = r#"<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation="0"><node text="Send" resource-id="com.chat:id/send" class="android.widget.Button" package="com.chat" clickable="true" bounds="[900,2200][1060,2300]" /></hierarchy>"#;

fn script(path: &Path, body: &str) {
    std::fs::write(path, format!("#!/bin/sh\n{body}")).unwrap_or_else(|e| panic!("{e}"));
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .unwrap_or_else(|e| panic!("{e}"));
}

fn fake() -> Fake {
    let ws = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let state = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let root = std::fs::canonicalize(ws.path()).unwrap_or_else(|e| panic!("{e}"));
    let bin = root.join("host-bin");
    let device = root.join("device-bin");
    std::fs::create_dir_all(&bin).unwrap_or_else(|e| panic!("{e}"));
    std::fs::create_dir_all(&device).unwrap_or_else(|e| panic!("{e}"));
    let r = root.display();
    // argv, NUL-terminated, one record per line of calls.
    script(
        &bin.join("adb"),
        &format!(
            r#"printf '%s\0' "$@" >> '{r}/adb.argv'; printf '\n' >> '{r}/adb.argv'
[ "$1" = "-s" ] && shift 2
[ "$1" = "shell" ] || {{ echo "List of devices attached"; echo "emulator-5554 device model:Fake"; exit 0; }}
shift
PATH='{d}':$PATH sh -c "$*"
"#,
            d = device.display()
        ),
    );
    script(
        &device.join("input"),
        &format!("printf '%s\\0' \"$@\" >> '{r}/input.argv'; printf '\\n' >> '{r}/input.argv'\n"),
    );
    // The first dump fails the way a busy device does; the second works.
    script(
        &device.join("uiautomator"),
        &format!(
            "if [ ! -e '{r}/dumped' ]; then touch '{r}/dumped'; echo 'ERROR: could not get idle state.' >&2; exit 1; fi\ncat <<'XML'\n{DUMP}\nXML\necho 'UI hierchary dumped to: /dev/tty'\n"
        ),
    );
    script(&device.join("wm"), "echo 'Physical size: 1080x2400'\n");
    let path = std::env::var("PATH").unwrap_or_default();
    // Each test is its own process under nextest; the fake must be the `adb` the host finds.
    std::env::set_var("PATH", format!("{}:{path}", bin.display()));
    let scope = CallScope {
        tool: "android".into(),
        session_id: "s".into(),
        agent: "default".into(),
        workspace: root.clone(),
        grants: Default::default(),
        cancel: Default::default(),
        approved: false,
    };
    let host = NativeHostProvider::new(HostConfig::new(state.path())).scoped(&scope);
    Fake {
        cx: ToolContext::new(&scope, "test", host),
        root,
        _dirs: (ws, state),
    }
}

/// The argv records of one file: calls, each a list of words.
fn records(path: &Path) -> Vec<Vec<String>> {
    let bytes = std::fs::read(path).unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    text.split("\0\n")
        .filter(|r| !r.is_empty())
        .map(|r| r.split('\0').map(str::to_string).collect())
        .collect()
}

fn android() -> Android {
    Android::new(AndroidSettings {
        serial: Some("emulator-5554".into()),
        allow_shell: false,
        dump_retry_delays: Some(vec![Duration::from_millis(10); 3]),
    })
}

/// Android's `input text` decoding: `%s` is a space.
fn input_decode(arg: &str) -> String {
    let mut out: Vec<char> = arg.chars().collect();
    let (mut escape, mut i) = (false, 0);
    while i < out.len() {
        if escape {
            escape = false;
            if out[i] == 's' {
                out[i] = ' ';
                out.remove(i - 1);
                i -= 1;
            }
        }
        if out[i] == '%' {
            escape = true;
        }
        i += 1;
    }
    out.into_iter().collect()
}

#[tokio::test]
async fn typed_text_reaches_the_device_as_one_literal_argument() {
    let f = fake();
    let corpus = [
        "hello world",
        "a;b|c&d",
        "$(touch PWNED)",
        "`touch PWNED`",
        "${HOME} $0",
        "'\"'\"",
        "back\\slash\\",
        "two\nlines",
        "tab\tx",
        "<in >out 2>&1",
        "(x) {y} [z]*?",
        "!~#=^",
        "100%s done",
        "%% % %s",
        "  spaced  ",
        "-n",
        "日本語 😀 ü",
    ];
    let tool = android();
    for text in corpus {
        let _ = std::fs::remove_file(f.root.join("input.argv"));
        let out = tool
            .call(json!({"action": "type", "text": text}), &f.cx)
            .await;
        assert!(out.is_ok(), "{text:?}: {out:?}");
        let calls = records(&f.root.join("input.argv"));
        let mut typed = String::new();
        for call in &calls {
            assert_eq!(call.len(), 2, "{text:?}: input got {call:?}");
            assert_eq!(call[0], "text");
            typed.push_str(&input_decode(&call[1]));
        }
        assert_eq!(typed, text);
    }
    assert!(!f.root.join("PWNED").exists());
    assert!(!f.root.join("out").exists());
    let adb = records(&f.root.join("adb.argv"));
    assert_eq!(
        adb[0],
        [
            "-s",
            "emulator-5554",
            "shell",
            "input",
            "text",
            "hello%sworld"
        ]
    );
}

#[tokio::test]
async fn the_screen_is_read_after_a_retry_with_the_exact_argv() {
    let f = fake();
    let out = android().call(json!({"action": "screen"}), &f.cx).await;
    let v: Value = out
        .map(|o| o.structured.unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(v["package"], "com.chat");
    assert_eq!(v["screen_size"], json!([1080, 2400]));
    assert_eq!(
        v["elements"],
        json!([{"text": "Send", "center": [980, 2250], "action": "tap", "class": "Button", "id": "send", "flags": []}])
    );
    let dump = [
        "-s",
        "emulator-5554",
        "shell",
        "uiautomator",
        "dump",
        "/dev/tty",
    ];
    assert_eq!(
        records(&f.root.join("adb.argv")),
        vec![
            dump.to_vec(),
            dump.to_vec(),
            vec!["-s", "emulator-5554", "shell", "wm", "size"]
        ]
    );
}

#[tokio::test]
async fn taps_and_devices_run_the_exact_argv() {
    let f = fake();
    let tool = android();
    let out = tool
        .call(json!({"action": "tap", "coords": [12, 34]}), &f.cx)
        .await;
    assert!(out.is_ok(), "{out:?}");
    let out = tool.call(json!({"action": "list_devices"}), &f.cx).await;
    assert_eq!(
        out.ok().and_then(|o| o.structured),
        Some(json!({"devices": [{"serial": "emulator-5554", "state": "device", "model": "Fake"}]}))
    );
    assert_eq!(
        records(&f.root.join("adb.argv")),
        vec![
            vec!["-s", "emulator-5554", "shell", "input", "tap", "12", "34"],
            vec!["devices", "-l"]
        ]
    );
    assert_eq!(
        records(&f.root.join("input.argv")),
        vec![vec!["tap", "12", "34"]]
    );
}
