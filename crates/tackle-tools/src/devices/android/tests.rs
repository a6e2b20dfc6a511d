use super::*;
use crate::mock_host::{exec_ok, MockHost};
use std::sync::Arc;

fn tool(allow_shell: bool) -> Android {
    Android::new(AndroidSettings {
        serial: Some("emulator-5554".into()),
        allow_shell,
        dump_retry_delays: Some(vec![Duration::from_millis(1); 3]),
    })
}

fn argvs(host: &MockHost) -> Vec<Vec<String>> {
    host.exec_requests()
        .into_iter()
        .map(|r| match r.command {
            ExecCommand::Argv { program, args } => {
                assert_eq!(program, "adb");
                args
            }
            ExecCommand::Shell(line) => panic!("a shell line ran: {line}"),
        })
        .collect()
}

async fn call(t: &Android, host: &Arc<MockHost>, args: Value) -> Result<ToolOutput, ToolError> {
    t.call(args, &host.context()).await
}

fn v(ws: &[&str]) -> Vec<String> {
    words(ws)
}

#[tokio::test]
async fn each_action_runs_exactly_its_adb_argv() {
    let cases: Vec<(Value, Vec<Vec<String>>)> = vec![
        (
            json!({"action": "tap", "x": 10, "y": 20}),
            vec![v(&[
                "-s",
                "emulator-5554",
                "shell",
                "input",
                "tap",
                "10",
                "20",
            ])],
        ),
        (
            json!({"action": "tap", "coords": "5, 6", "serial": "192.168.1.5:5555"}),
            vec![v(&[
                "-s",
                "192.168.1.5:5555",
                "shell",
                "input",
                "tap",
                "5",
                "6",
            ])],
        ),
        (
            json!({"action": "long_press", "coords": [1, 2]}),
            vec![v(&[
                "-s",
                "emulator-5554",
                "shell",
                "input",
                "swipe",
                "1",
                "2",
                "1",
                "2",
                "1000",
            ])],
        ),
        (
            json!({"action": "swipe", "x1": 1, "y1": 2, "x2": 3, "y2": 4}),
            vec![v(&[
                "-s",
                "emulator-5554",
                "shell",
                "input",
                "swipe",
                "1",
                "2",
                "3",
                "4",
                "300",
            ])],
        ),
        (
            json!({"action": "type", "text": "hi there; rm"}),
            vec![v(&[
                "-s",
                "emulator-5554",
                "shell",
                "input",
                "text",
                "hi%sthere\\;%srm",
            ])],
        ),
        (
            json!({"action": "back"}),
            vec![v(&[
                "-s",
                "emulator-5554",
                "shell",
                "input",
                "keyevent",
                "KEYCODE_BACK",
            ])],
        ),
        (
            json!({"action": "home"}),
            vec![v(&[
                "-s",
                "emulator-5554",
                "shell",
                "input",
                "keyevent",
                "KEYCODE_HOME",
            ])],
        ),
        (
            json!({"action": "recent"}),
            vec![v(&[
                "-s",
                "emulator-5554",
                "shell",
                "input",
                "keyevent",
                "KEYCODE_APP_SWITCH",
            ])],
        ),
        (
            json!({"action": "enter"}),
            vec![v(&[
                "-s",
                "emulator-5554",
                "shell",
                "input",
                "keyevent",
                "KEYCODE_ENTER",
            ])],
        ),
        (
            json!({"action": "paste"}),
            vec![v(&[
                "-s",
                "emulator-5554",
                "shell",
                "input",
                "keyevent",
                "KEYCODE_PASTE",
            ])],
        ),
        (
            json!({"action": "wake_screen"}),
            vec![v(&[
                "-s",
                "emulator-5554",
                "shell",
                "input",
                "keyevent",
                "KEYCODE_WAKEUP",
            ])],
        ),
        (
            json!({"action": "key_event", "key": "volume_up"}),
            vec![v(&[
                "-s",
                "emulator-5554",
                "shell",
                "input",
                "keyevent",
                "KEYCODE_VOLUME_UP",
            ])],
        ),
        (
            json!({"action": "key_event", "key": "24"}),
            vec![v(&[
                "-s",
                "emulator-5554",
                "shell",
                "input",
                "keyevent",
                "24",
            ])],
        ),
        (
            json!({"action": "launch", "package": "com.example.app"}),
            vec![v(&[
                "-s",
                "emulator-5554",
                "shell",
                "monkey",
                "-p",
                "com.example.app",
                "-c",
                "android.intent.category.LAUNCHER",
                "1",
            ])],
        ),
        (
            json!({"action": "open_url", "url": "https://example.com/a?b=1&c='x'"}),
            vec![v(&[
                "-s",
                "emulator-5554",
                "shell",
                "am",
                "start",
                "-a",
                "android.intent.action.VIEW",
                "-d",
                "'https://example.com/a?b=1&c='\\''x'\\'''",
            ])],
        ),
        (
            json!({"action": "set_clipboard", "text": "a b"}),
            vec![v(&[
                "-s",
                "emulator-5554",
                "shell",
                "am",
                "broadcast",
                "-a",
                "clipper.set",
                "-e",
                "text",
                "'a b'",
            ])],
        ),
        (
            json!({"action": "open_notifications"}),
            vec![v(&[
                "-s",
                "emulator-5554",
                "shell",
                "cmd",
                "statusbar",
                "expand-notifications",
            ])],
        ),
        (
            json!({"action": "open_quick_settings"}),
            vec![v(&[
                "-s",
                "emulator-5554",
                "shell",
                "cmd",
                "statusbar",
                "expand-settings",
            ])],
        ),
    ];
    for (args, expected) in cases {
        let host = Arc::new(MockHost::new());
        for _ in &expected {
            host.reply_exec(Ok(exec_ok(0, "", "")));
        }
        let out = call(&tool(false), &host, args.clone()).await;
        assert!(out.is_ok(), "{args}: {out:?}");
        assert_eq!(argvs(&host), expected, "{args}");
        let planned: Vec<Capability> = tool(false).planned_capabilities(&args, &host.context());
        let planned: Vec<Vec<String>> = planned
            .into_iter()
            .filter_map(|c| match c {
                Capability::Exec { args, .. } => Some(args),
                _ => None,
            })
            .collect();
        assert_eq!(planned, expected, "planned for {args}");
    }
}

#[tokio::test]
async fn bad_arguments_are_refused_before_anything_runs() {
    for args in [
        json!({"action": "tap", "x": 10}),
        json!({"action": "tap", "x": 10001, "y": 1}),
        json!({"action": "tap", "x": -1, "y": 1}),
        json!({"action": "tap", "coords": "1;2"}),
        json!({"action": "tap", "coords": [1]}),
        json!({"action": "swipe", "x1": 1, "y1": 2, "x2": 3}),
        json!({"action": "key_event", "key": "KEYCODE_A;reboot"}),
        json!({"action": "launch", "package": "com.x;id"}),
        json!({"action": "open_url", "url": "javascript:alert(1)"}),
        json!({"action": "open_url", "url": "file:///sdcard/x"}),
        json!({"action": "open_url", "url": "https://x/\nid"}),
        json!({"action": "type"}),
        json!({"action": "type", "text": ""}),
        json!({"action": "tap", "x": 1, "y": 1, "serial": "-H evil"}),
        json!({"action": "tap", "x": 1, "y": 1, "serial": "a b"}),
        json!({"action": "teleport"}),
        json!({"action": "tap", "x": 1, "y": 1, "extra": true}),
    ] {
        let host = Arc::new(MockHost::new());
        let out = call(&tool(true), &host, args.clone()).await;
        assert!(
            out.as_ref()
                .is_err_and(|e| e.kind == ErrorKind::InvalidArguments),
            "{args}: {out:?}"
        );
        assert!(host.exec_requests().is_empty(), "{args}");
    }
}

#[tokio::test]
async fn the_shell_action_is_off_unless_enabled_and_then_checked() {
    let host = Arc::new(MockHost::new());
    let out = call(
        &tool(false),
        &host,
        json!({"action": "shell", "command": "ls"}),
    )
    .await;
    assert!(out.is_err_and(|e| e.kind == ErrorKind::Denied && e.message.contains("allow_shell")));
    for bad in ["ls; reboot", "rm -rf /sdcard", "echo $(id)", "ls\nid"] {
        let out = call(
            &tool(true),
            &host,
            json!({"action": "shell", "command": bad}),
        )
        .await;
        assert!(out.is_err_and(|e| e.kind == ErrorKind::Denied), "{bad}");
    }
    assert!(host.exec_requests().is_empty());
    host.reply_exec(Ok(exec_ok(0, "file.txt\n", "")));
    let out = call(
        &tool(true),
        &host,
        json!({"action": "shell", "command": "ls /sdcard"}),
    )
    .await;
    assert_eq!(out.map(|o| o.content), Ok("file.txt\n".to_string()));
    assert_eq!(
        argvs(&host),
        vec![v(&["-s", "emulator-5554", "shell", "ls /sdcard"])]
    );
}

const DUMP: &str = r#"<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation="0"><node text="OK" class="android.widget.Button" package="com.example" clickable="true" bounds="[0,0][100,50]" /></hierarchy>UI hierchary dumped to: /dev/tty"#;

#[tokio::test]
async fn the_screen_dump_retries_passing_errors_then_reads_the_screen() {
    let host = Arc::new(MockHost::new());
    host.reply_exec(Ok(exec_ok(1, "", "ERROR: could not get idle state.")));
    host.reply_exec(Ok(exec_ok(
        0,
        "ERROR: null root node returned by UiTestAutomationBridge.",
        "",
    )));
    host.reply_exec(Ok(exec_ok(0, DUMP, "")));
    host.reply_exec(Ok(exec_ok(0, "Physical size: 1080x2400\n", "")));
    let out = call(&tool(false), &host, json!({"action": "screen"})).await;
    let structured = out
        .map(|o| o.structured)
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(
        structured,
        Some(json!({
            "package": "com.example",
            "screen_size": [1080, 2400],
            "elements": [{"text": "OK", "center": [50, 25], "action": "tap", "class": "Button", "flags": []}]
        }))
    );
    let dump = v(&[
        "-s",
        "emulator-5554",
        "shell",
        "uiautomator",
        "dump",
        "/dev/tty",
    ]);
    assert_eq!(
        argvs(&host),
        vec![
            dump.clone(),
            dump.clone(),
            dump,
            v(&["-s", "emulator-5554", "shell", "wm", "size"])
        ]
    );
}

#[tokio::test]
async fn the_screen_dump_gives_up_after_three_retries_and_at_once_on_lasting_errors() {
    let host = Arc::new(MockHost::new());
    for _ in 0..4 {
        host.reply_exec(Ok(exec_ok(1, "", "error: device offline")));
    }
    let out = call(&tool(false), &host, json!({"action": "screen"})).await;
    assert!(out.is_err_and(|e| e.message.contains("failed 4 times")));
    assert_eq!(host.exec_requests().len(), 4);

    let host = Arc::new(MockHost::new());
    host.reply_exec(Ok(exec_ok(1, "", "error: no devices/emulators found")));
    let out = call(&tool(false), &host, json!({"action": "screen"})).await;
    assert!(out.is_err_and(|e| e.message.contains("no devices")));
    assert_eq!(host.exec_requests().len(), 1);
}

#[tokio::test]
async fn repeated_taps_show_up_as_alerts_on_the_next_screen() {
    let t = tool(false);
    let host = Arc::new(MockHost::new());
    for _ in 0..3 {
        host.reply_exec(Ok(exec_ok(0, "", "")));
        assert!(call(&t, &host, json!({"action": "tap", "x": 5, "y": 5}))
            .await
            .is_ok());
    }
    host.reply_exec(Ok(exec_ok(0, DUMP, "")));
    host.reply_exec(Ok(exec_ok(0, "Physical size: 100x200", "")));
    let out = call(&t, &host, json!({"action": "screen"})).await;
    let alerts = out
        .ok()
        .and_then(|o| o.structured)
        .map(|s| s["alerts"].clone())
        .unwrap_or_default();
    assert!(
        alerts.to_string().contains("`tap 5,5` was done 3 times"),
        "{alerts}"
    );
}

#[tokio::test]
async fn scroll_swipes_across_the_middle_of_the_screen() {
    let host = Arc::new(MockHost::new());
    host.reply_exec(Ok(exec_ok(0, "Physical size: 1000x2000\n", "")));
    host.reply_exec(Ok(exec_ok(0, "", "")));
    let out = call(&tool(false), &host, json!({"action": "scroll"})).await;
    assert!(out.is_ok(), "{out:?}");
    assert_eq!(
        argvs(&host)[1],
        v(&[
            "-s",
            "emulator-5554",
            "shell",
            "input",
            "swipe",
            "500",
            "1400",
            "500",
            "600",
            "300"
        ])
    );
}

#[tokio::test]
async fn devices_and_clipboard_answers_are_read() {
    let host = Arc::new(MockHost::new());
    host.reply_exec(Ok(exec_ok(
        0,
        "List of devices attached\nemulator-5554          device product:sdk model:Pixel_7 transport_id:1\nR58M offline\n\n",
        "",
    )));
    let t = Android::new(AndroidSettings::default());
    let out = call(&t, &host, json!({"action": "list_devices"})).await;
    assert_eq!(
        out.ok().and_then(|o| o.structured),
        Some(json!({"devices": [
            {"serial": "emulator-5554", "state": "device", "product": "sdk", "model": "Pixel_7", "transport_id": "1"},
            {"serial": "R58M", "state": "offline"}
        ]}))
    );
    assert_eq!(argvs(&host), vec![v(&["devices", "-l"])]);

    host.reply_exec(Ok(exec_ok(0, "Broadcasting: Intent { act=clipper.get }\nBroadcast completed: result=-1, data=\"copied text\"\n", "")));
    let out = call(&t, &host, json!({"action": "get_clipboard"})).await;
    assert_eq!(out.map(|o| o.content), Ok("copied text".to_string()));
}

#[tokio::test]
async fn a_screenshot_is_written_through_the_host() {
    let host = Arc::new(MockHost::new());
    let png = b"\x89PNG\r\n\x1a\nrest";
    let b64 = base64::engine::general_purpose::STANDARD.encode(png);
    host.reply_exec(Ok(exec_ok(0, "", "")));
    host.reply_exec(Ok(exec_ok(0, &format!("{b64}\n"), "")));
    host.reply_exec(Ok(exec_ok(0, "", "")));
    let out = call(
        &tool(false),
        &host,
        json!({"action": "screenshot", "output_path": "shots/a.png"}),
    )
    .await;
    assert!(out.is_ok(), "{out:?}");
    assert_eq!(host.file("shots/a.png").as_deref(), Some(&png[..]));
    assert_eq!(
        argvs(&host)[1],
        v(&["-s", "emulator-5554", "shell", "base64", DEVICE_SCREENSHOT])
    );
}

/// The property names and `required` list the schema always had (written out here, since
/// models and MCP clients rely on them), the bounds, and refusal of an unknown or a missing
/// field with `invalid_arguments`.
mod contract {
    use super::tool;
    use crate::args::contract::{assert_names, assert_refusals};
    use serde_json::json;
    use tackle_protocol::Tool;

    #[test]
    fn the_schema_names_the_properties_and_requirements_it_always_had() {
        let schema = tool(false).spec().parameters;
        assert_names(
            &schema,
            &[
                "action",
                "serial",
                "x",
                "y",
                "coords",
                "x1",
                "y1",
                "x2",
                "y2",
                "duration_ms",
                "direction",
                "text",
                "key",
                "package",
                "url",
                "command",
                "output_path",
            ],
            &["action"],
        );
        assert_eq!(schema["additionalProperties"], json!(false));
        let p = &schema["properties"];
        assert_eq!(
            p["action"]["enum"],
            json!([
                "screen",
                "list_devices",
                "tap",
                "long_press",
                "swipe",
                "scroll",
                "type",
                "clear_field",
                "back",
                "home",
                "recent",
                "enter",
                "key_event",
                "set_clipboard",
                "get_clipboard",
                "paste",
                "launch",
                "open_url",
                "open_notifications",
                "open_quick_settings",
                "screenshot",
                "wake_screen",
                "shell"
            ])
        );
        assert_eq!(
            p["direction"]["enum"],
            json!(["down", "up", "left", "right"])
        );
        for xy in ["x", "y", "x1", "y1", "x2", "y2"] {
            assert_eq!(p[xy]["minimum"], json!(0), "{xy}");
            assert_eq!(p[xy]["maximum"], json!(10_000), "{xy}");
        }
        assert_eq!(p["duration_ms"]["minimum"], json!(1));
        assert_eq!(p["duration_ms"]["maximum"], json!(60_000));
        assert_eq!(p["coords"]["oneOf"].as_array().map(Vec::len), Some(2));
        assert_eq!(p["key"]["pattern"], json!("^[A-Za-z0-9_]+$"));
        assert_eq!(p["package"]["pattern"], json!("^[A-Za-z0-9_.]+$"));
        let accepts = |v| crate::args::contract::accepts(&schema, &v);
        assert!(accepts(json!({"action": "tap", "coords": [10, 20]})));
        assert!(accepts(json!({"action": "tap", "coords": " 10 , 20 "})));
        assert!(!accepts(json!({"action": "tap", "coords": [10]})));
        assert!(!accepts(json!({"action": "tap", "coords": "10;20"})));
        assert!(!accepts(json!({"action": "tap", "x": 10_001})));
    }

    #[tokio::test]
    async fn an_unknown_or_a_missing_field_is_refused() {
        assert_refusals(&tool(false), json!({"action": "home"}), &["action"]).await;
    }
}
