//! `android {action, …}`: drive an Android device or emulator with `adb`, run through the
//! host's Exec capability (policy, sandbox, scrubbed environment) like every other program.
//!
//! Every device command is `adb [-s SERIAL] shell …` with a 15 s limit. The device's shell
//! parses the joined arguments again, so everything the model writes is escaped or quoted
//! for it ([`escape`]); the raw `shell` action is off unless the operator enables it.

mod escape;
mod screen;

use crate::fs::resolve;
use async_trait::async_trait;
use base64::Engine as _;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use tackle_protocol::text::preview;
use tackle_protocol::{
    ApprovalMode, Capability, ErrorKind, ExecCommand, ExecRequest, Risk, Tool, ToolContext,
    ToolError, ToolOutput, ToolSpec, WriteRequest,
};

use super::AndroidSettings;

const COMMAND_TIMEOUT: Duration = Duration::from_secs(15);
const MAX_OUTPUT: usize = 1024 * 1024;
/// A base64 PNG of a large screen.
const MAX_SCREENSHOT_OUTPUT: usize = 24 * 1024 * 1024;
const MAX_COORD: i64 = 10_000;
const MAX_DURATION_MS: u64 = 60_000;
const DEVICE_SCREENSHOT: &str = "/sdcard/tackle_screenshot.png";
const URL_SCHEMES: &[&str] = &["http", "https", "tel", "mailto", "market", "geo", "content"];
/// Sessions whose action history is kept; the oldest is forgotten past this.
const MAX_SESSIONS: usize = 64;

/// The `android` tool: drives a device or emulator with `adb` through the host's Exec capability.
pub struct Android {
    settings: AndroidSettings,
    /// Recent actions per session, for the screen result's alerts.
    history: Mutex<HashMap<String, screen::History>>,
}

impl Android {
    /// An `android` tool with the operator's settings.
    pub fn new(settings: AndroidSettings) -> Self {
        Self {
            settings,
            history: Mutex::new(HashMap::new()),
        }
    }
}

// Arguments of `android`; which fields each action reads is in their descriptions.
#[derive(Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
struct Args {
    action: Action,
    /// The device (`adb devices`); default: the configured one, or adb's only device.
    serial: Option<String>,
    /// tap, long_press: x in pixels.
    #[schemars(range(min = 0, max = MAX_COORD))]
    x: Option<i64>,
    /// tap, long_press: y in pixels.
    #[schemars(range(min = 0, max = MAX_COORD))]
    y: Option<i64>,
    /// tap, long_press: [x, y] or "x,y" instead of x and y.
    // `default`: the schema written out below cannot tell schemars the field is optional.
    #[serde(default)]
    #[schemars(schema_with = "coords_schema")]
    coords: Option<Value>,
    /// swipe: start x.
    #[schemars(range(min = 0, max = MAX_COORD))]
    x1: Option<i64>,
    /// swipe: start y.
    #[schemars(range(min = 0, max = MAX_COORD))]
    y1: Option<i64>,
    /// swipe: end x.
    #[schemars(range(min = 0, max = MAX_COORD))]
    x2: Option<i64>,
    /// swipe: end y.
    #[schemars(range(min = 0, max = MAX_COORD))]
    y2: Option<i64>,
    /// long_press (default 1000), swipe (default 300).
    #[schemars(range(min = 1, max = MAX_DURATION_MS))]
    duration_ms: Option<u64>,
    /// scroll: which way the content moves. Default down.
    direction: Option<Direction>,
    /// type: text for the focused field; set_clipboard: the clipboard text.
    text: Option<String>,
    /// key_event: e.g. KEYCODE_VOLUME_UP, VOLUME_UP or 24.
    #[schemars(pattern(r"^[A-Za-z0-9_]+$"))]
    key: Option<String>,
    /// launch: the app's package name.
    #[schemars(pattern(r"^[A-Za-z0-9_.]+$"))]
    package: Option<String>,
    /// open_url: http, https, tel, mailto, market, geo or content URL.
    url: Option<String>,
    /// shell: one device command without ; | ` $ & or newlines.
    command: Option<String>,
    /// screenshot: where the PNG goes in the workspace. Default android_screenshot.png.
    output_path: Option<String>,
}

/// `coords` is either of two shapes, which the action code reads from the raw value; serde
/// has no type that says "a pair, or a string of two numbers" with these bounds, so this one
/// property's schema is written out.
fn coords_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"oneOf": [
        {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": MAX_COORD}, "minItems": 2, "maxItems": 2},
        {"type": "string", "pattern": "^\\s*\\d+\\s*,\\s*\\d+\\s*$"}
    ]})
}

#[derive(Deserialize, Serialize, JsonSchema, Clone, Copy, PartialEq, Eq, Debug, Default)]
#[schemars(inline)]
#[serde(rename_all = "snake_case")]
enum Action {
    #[default]
    Screen,
    ListDevices,
    Tap,
    LongPress,
    Swipe,
    Scroll,
    Type,
    ClearField,
    Back,
    Home,
    Recent,
    Enter,
    KeyEvent,
    SetClipboard,
    GetClipboard,
    Paste,
    Launch,
    OpenUrl,
    OpenNotifications,
    OpenQuickSettings,
    Screenshot,
    WakeScreen,
    Shell,
}

#[derive(Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq, Debug, Default)]
#[schemars(inline)]
#[serde(rename_all = "snake_case")]
enum Direction {
    #[default]
    Down,
    Up,
    Left,
    Right,
}

/// What one action runs on the device, decided before anything runs.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Plan {
    /// Device shell commands run in order; the last one's output is the answer.
    Shell(Vec<Vec<String>>),
    /// `adb devices -l`.
    ListDevices,
    /// A dump and the screen size.
    Screen,
    /// The screen size, then a swipe in `direction`.
    Scroll(Direction),
    /// Capture to the device, fetch as base64, write `output_path` through the host.
    Screenshot(String),
    /// A clipboard broadcast; the answer is the clipboard's text.
    GetClipboard,
}

impl Action {
    /// The name the model writes.
    fn name(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    }
}

fn words(ws: &[&str]) -> Vec<String> {
    ws.iter().map(|w| w.to_string()).collect()
}

fn key(code: &str) -> Vec<String> {
    words(&["input", "keyevent", code])
}

impl Android {
    fn serial<'a>(&'a self, args: &'a Args) -> Result<Option<&'a str>, ToolError> {
        let serial = args.serial.as_deref().or(self.settings.serial.as_deref());
        if let Some(s) = serial {
            let ok = !s.is_empty()
                && !s.starts_with('-')
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_.:-".contains(c));
            if !ok {
                return Err(ToolError::invalid_arguments(format!(
                    "`serial` must be a device serial such as emulator-5554 or 192.168.1.5:5555, got `{}`",
                    preview(s, 60)
                )));
            }
        }
        Ok(serial)
    }

    fn plan(&self, a: &Args) -> Result<Plan, ToolError> {
        let plan = match a.action {
            Action::Screen => Plan::Screen,
            Action::ListDevices => Plan::ListDevices,
            Action::Tap => {
                let (x, y) = point(a)?;
                Plan::Shell(vec![words(&["input", "tap", &x, &y])])
            }
            Action::LongPress => {
                let (x, y) = point(a)?;
                let d = duration(a, 1000).to_string();
                Plan::Shell(vec![words(&["input", "swipe", &x, &y, &x, &y, &d])])
            }
            Action::Swipe => {
                let c = |name: &str, v: Option<i64>| coord(name, v.ok_or_else(|| needs(a, name))?);
                let (x1, y1, x2, y2) = (
                    c("x1", a.x1)?,
                    c("y1", a.y1)?,
                    c("x2", a.x2)?,
                    c("y2", a.y2)?,
                );
                let d = duration(a, 300).to_string();
                Plan::Shell(vec![words(&["input", "swipe", &x1, &y1, &x2, &y2, &d])])
            }
            Action::Scroll => Plan::Scroll(a.direction.unwrap_or_default()),
            Action::Type => {
                let text = a.text.as_deref().ok_or_else(|| needs(a, "text"))?;
                let cmds = escape::input_text_words(text)?
                    .into_iter()
                    .map(|w| vec!["input".to_string(), "text".to_string(), w])
                    .collect();
                Plan::Shell(cmds)
            }
            Action::ClearField => {
                // Jump to the end, then delete backwards: no key clears a field everywhere.
                let mut del = words(&["input", "keyevent"]);
                del.extend(std::iter::repeat_n("KEYCODE_DEL".to_string(), 64));
                Plan::Shell(vec![key("KEYCODE_MOVE_END"), del])
            }
            Action::Back => Plan::Shell(vec![key("KEYCODE_BACK")]),
            Action::Home => Plan::Shell(vec![key("KEYCODE_HOME")]),
            Action::Recent => Plan::Shell(vec![key("KEYCODE_APP_SWITCH")]),
            Action::Enter => Plan::Shell(vec![key("KEYCODE_ENTER")]),
            Action::Paste => Plan::Shell(vec![key("KEYCODE_PASTE")]),
            Action::WakeScreen => Plan::Shell(vec![key("KEYCODE_WAKEUP")]),
            Action::KeyEvent => {
                let k = a.key.as_deref().ok_or_else(|| needs(a, "key"))?;
                Plan::Shell(vec![key(&key_code(k)?)])
            }
            Action::SetClipboard => {
                let text = a.text.as_deref().ok_or_else(|| needs(a, "text"))?;
                if text.contains('\0') {
                    return Err(ToolError::invalid_arguments("`text` holds a NUL character"));
                }
                // Android's shell has no clipboard command; the Clipper app's broadcast is
                // the common way in.
                let quoted = escape::shell_quote(text);
                Plan::Shell(vec![words(&[
                    "am",
                    "broadcast",
                    "-a",
                    "clipper.set",
                    "-e",
                    "text",
                    &quoted,
                ])])
            }
            Action::GetClipboard => Plan::GetClipboard,
            Action::Launch => {
                let p = a.package.as_deref().ok_or_else(|| needs(a, "package"))?;
                let ok = !p.is_empty()
                    && p.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
                if !ok {
                    return Err(ToolError::invalid_arguments(format!(
                        "`package` must match ^[A-Za-z0-9_.]+$, got `{}`",
                        preview(p, 80)
                    )));
                }
                Plan::Shell(vec![words(&[
                    "monkey",
                    "-p",
                    p,
                    "-c",
                    "android.intent.category.LAUNCHER",
                    "1",
                ])])
            }
            Action::OpenUrl => {
                let u = a.url.as_deref().ok_or_else(|| needs(a, "url"))?;
                check_url(u)?;
                let quoted = escape::shell_quote(u);
                Plan::Shell(vec![words(&[
                    "am",
                    "start",
                    "-a",
                    "android.intent.action.VIEW",
                    "-d",
                    &quoted,
                ])])
            }
            Action::OpenNotifications => {
                Plan::Shell(vec![words(&["cmd", "statusbar", "expand-notifications"])])
            }
            Action::OpenQuickSettings => {
                Plan::Shell(vec![words(&["cmd", "statusbar", "expand-settings"])])
            }
            Action::Screenshot => Plan::Screenshot(
                a.output_path
                    .clone()
                    .unwrap_or_else(|| "android_screenshot.png".to_string()),
            ),
            Action::Shell => {
                if !self.settings.allow_shell {
                    return Err(ToolError::new(
                        ErrorKind::Denied,
                        "the android `shell` action is off; the operator enables it with `devices.android.allow_shell: true`",
                    ));
                }
                let c = a.command.as_deref().ok_or_else(|| needs(a, "command"))?;
                escape::check_shell_command(c)?;
                Plan::Shell(vec![vec![c.to_string()]])
            }
        };
        Ok(plan)
    }

    /// `adb [-s SERIAL] shell WORDS…`.
    fn adb_shell(serial: Option<&str>, cmd: &[String]) -> Vec<String> {
        let mut argv = Self::adb(serial);
        argv.push("shell".to_string());
        argv.extend(cmd.iter().cloned());
        argv
    }

    fn adb(serial: Option<&str>) -> Vec<String> {
        match serial {
            Some(s) => vec!["-s".to_string(), s.to_string()],
            None => Vec::new(),
        }
    }

    /// The argvs known before anything runs (scroll's swipe depends on the screen size).
    fn planned_argvs(&self, plan: &Plan, serial: Option<&str>) -> Vec<Vec<String>> {
        let sh = |ws: &[&str]| Self::adb_shell(serial, &words(ws));
        match plan {
            Plan::Shell(cmds) => cmds.iter().map(|c| Self::adb_shell(serial, c)).collect(),
            Plan::ListDevices => vec![words(&["devices", "-l"])],
            Plan::Screen => vec![
                sh(&["uiautomator", "dump", "/dev/tty"]),
                sh(&["wm", "size"]),
            ],
            Plan::Scroll(_) => vec![sh(&["wm", "size"])],
            Plan::Screenshot(_) => vec![
                sh(&["screencap", "-p", DEVICE_SCREENSHOT]),
                sh(&["base64", DEVICE_SCREENSHOT]),
                sh(&["rm", "-f", DEVICE_SCREENSHOT]),
            ],
            Plan::GetClipboard => vec![sh(&["am", "broadcast", "-a", "clipper.get"])],
        }
    }
}

fn needs(a: &Args, field: &str) -> ToolError {
    ToolError::invalid_arguments(format!("{} needs `{field}`", a.action.name()))
}

fn coord(name: &str, v: i64) -> Result<String, ToolError> {
    if (0..=MAX_COORD).contains(&v) {
        Ok(v.to_string())
    } else {
        Err(ToolError::invalid_arguments(format!(
            "`{name}` must be within 0..={MAX_COORD}, got {v}"
        )))
    }
}

/// `x`,`y`, or `coords` as `[x, y]` or `"x,y"`.
fn point(a: &Args) -> Result<(String, String), ToolError> {
    let bad = || {
        ToolError::invalid_arguments(format!(
            "{} needs `x` and `y`, or `coords` as [x, y] or \"x,y\"",
            a.action.name()
        ))
    };
    let (x, y) = match (&a.coords, a.x, a.y) {
        (Some(Value::Array(v)), None, None) if v.len() == 2 => (
            v.first().and_then(Value::as_i64).ok_or_else(bad)?,
            v.get(1).and_then(Value::as_i64).ok_or_else(bad)?,
        ),
        (Some(Value::String(s)), None, None) => {
            let (x, y) = s.split_once(',').ok_or_else(bad)?;
            (
                x.trim().parse().map_err(|_| bad())?,
                y.trim().parse().map_err(|_| bad())?,
            )
        }
        (None, Some(x), Some(y)) => (x, y),
        _ => return Err(bad()),
    };
    Ok((coord("x", x)?, coord("y", y)?))
}

fn duration(a: &Args, default: u64) -> u64 {
    a.duration_ms.unwrap_or(default).clamp(1, MAX_DURATION_MS)
}

/// `^[A-Za-z0-9_]+$`; a bare name gets the `KEYCODE_` prefix `input keyevent` expects.
fn key_code(k: &str) -> Result<String, ToolError> {
    if k.is_empty() || !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(ToolError::invalid_arguments(format!(
            "`key` must match ^[A-Za-z0-9_]+$ (e.g. KEYCODE_VOLUME_UP or 24), got `{}`",
            preview(k, 60)
        )));
    }
    let upper = k.to_ascii_uppercase();
    if upper.chars().all(|c| c.is_ascii_digit()) || upper.starts_with("KEYCODE_") {
        Ok(upper)
    } else {
        Ok(format!("KEYCODE_{upper}"))
    }
}

fn check_url(u: &str) -> Result<(), ToolError> {
    let bad = |why: &str| {
        Err(ToolError::invalid_arguments(format!(
            "`url` {why}, got `{}`",
            preview(u, 80)
        )))
    };
    if u.chars().any(char::is_control) {
        return bad("must not hold control characters");
    }
    let Ok(parsed) = url::Url::parse(u) else {
        return bad("is not a URL");
    };
    if !URL_SCHEMES.contains(&parsed.scheme()) {
        return bad("must be http, https, tel, mailto, market, geo or content");
    }
    Ok(())
}

/// Output that means the device was busy or briefly gone, worth another try.
fn transient(out: &str) -> bool {
    let out = out.to_lowercase();
    [
        "null root node",
        "idle state",
        "device offline",
        "error: closed",
        "device still authorizing",
        "killed",
    ]
    .iter()
    .any(|m| out.contains(m))
}

/// The answer of the Clipper app's `clipper.get`: `… data="TEXT"`.
fn clipboard_text(out: &str) -> Option<String> {
    let (_, rest) = out.split_once("data=\"")?;
    let text = rest.trim_end().strip_suffix('"').unwrap_or(rest);
    Some(text.to_string())
}

/// `adb devices -l`: one device a line after the header.
fn devices(out: &str) -> Value {
    let list: Vec<Value> = out
        .lines()
        .filter(|l| {
            !l.trim().is_empty() && !l.starts_with("List of devices") && !l.starts_with('*')
        })
        .filter_map(|l| {
            let mut parts = l.split_whitespace();
            let serial = parts.next()?;
            let state = parts.next()?;
            let mut d = json!({"serial": serial, "state": state});
            for p in parts {
                if let Some((k, v)) = p.split_once(':') {
                    d[k] = json!(v);
                }
            }
            Some(d)
        })
        .collect();
    json!(list)
}

struct Run<'a> {
    cx: &'a ToolContext,
}

impl Run<'_> {
    /// One adb command; a non-zero exit is an error carrying adb's own words.
    async fn adb(&self, argv: Vec<String>, max_output: usize) -> Result<String, ToolError> {
        let req = ExecRequest {
            command: ExecCommand::Argv {
                program: "adb".into(),
                args: argv.clone(),
            },
            cwd: Some(self.cx.host().workspace().to_path_buf()),
            timeout: COMMAND_TIMEOUT,
            env: Vec::new(),
            stdin: None,
            max_output_bytes: max_output,
            output_lines: None,
            program_sha256: None,
            data_values: Vec::new(),
        };
        let out = self.cx.host().exec(req).await?;
        if out.timed_out {
            return Err(ToolError::new(
                ErrorKind::Timeout,
                format!(
                    "adb {} took over {} s",
                    argv.join(" "),
                    COMMAND_TIMEOUT.as_secs()
                ),
            ));
        }
        if out.exit_code != Some(0) {
            let said = if out.stderr.trim().is_empty() {
                &out.stdout
            } else {
                &out.stderr
            };
            return Err(ToolError::failed(format!(
                "adb {} failed ({}): {}",
                preview(&argv.join(" "), 120),
                out.exit_code
                    .map_or("killed".to_string(), |c| format!("exit {c}")),
                preview(said.trim(), 400)
            )));
        }
        Ok(out.stdout)
    }

    /// The screen dump, tried again after 1, 2 and 4 s while the device answers with a
    /// passing error.
    async fn dump(
        &self,
        argv: Vec<String>,
        delays: &[Duration],
    ) -> Result<screen::Screen, ToolError> {
        let mut attempt = 0;
        loop {
            let result = self.adb(argv.clone(), MAX_OUTPUT).await;
            let failure = match &result {
                Ok(out) => match screen::parse(out) {
                    Ok(s) => return Ok(s),
                    Err(e) if transient(out) => {
                        ToolError::failed(format!("{e}: {}", preview(out.trim(), 200)))
                    }
                    Err(e) => {
                        return Err(ToolError::failed(format!(
                            "{e}: {}",
                            preview(out.trim(), 200)
                        )))
                    }
                },
                Err(e) if e.kind == ErrorKind::Failed && transient(&e.message) => e.clone(),
                Err(e) => return Err(e.clone()),
            };
            let Some(delay) = delays.get(attempt) else {
                return Err(ToolError::failed(format!(
                    "the screen dump failed {} times: {}",
                    attempt + 1,
                    failure.message
                )));
            };
            attempt += 1;
            tokio::time::sleep(*delay).await;
        }
    }
}

#[async_trait]
impl Tool for Android {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "android",
            "Control an Android device or emulator over adb. Start with `screen` to see the \
             foreground app's elements (text, center, action), then act: tap/long_press (x,y or \
             coords), swipe (x1,y1,x2,y2), scroll (direction), type (text into the focused \
             field), clear_field, back/home/recent/enter, key_event (key), set_clipboard/\
             get_clipboard/paste, launch (package), open_url (url), open_notifications, \
             open_quick_settings, screenshot (output_path in the workspace), wake_screen, \
             list_devices. `shell` runs one plain device command when the operator enabled it.",
            "devices",
        )
        .risk(Risk::High)
        .approval(ApprovalMode::Always)
        .parameters(crate::args::schema::<Args>())
    }

    fn planned_capabilities(&self, args: &Value, cx: &ToolContext) -> Vec<Capability> {
        let Ok(a) = serde_json::from_value::<Args>(args.clone()) else {
            return vec![Capability::Exec {
                program: "adb".into(),
                args: Vec::new(),
            }];
        };
        let (Ok(plan), Ok(serial)) = (self.plan(&a), self.serial(&a)) else {
            return vec![Capability::Exec {
                program: "adb".into(),
                args: Vec::new(),
            }];
        };
        let mut caps: Vec<Capability> = self
            .planned_argvs(&plan, serial)
            .into_iter()
            .map(|args| Capability::Exec {
                program: "adb".into(),
                args,
            })
            .collect();
        if let Plan::Screenshot(path) = &plan {
            caps.push(Capability::FileWrite {
                path: resolve(cx, path),
            });
        }
        caps
    }

    fn timeout(&self) -> Option<Duration> {
        // A screen dump may take four tries and their waits.
        Some(COMMAND_TIMEOUT * 6 + Duration::from_secs(7))
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let a: Args = crate::args::parse(args)?;
        let plan = self.plan(&a)?;
        let serial = self.serial(&a)?;
        let run = Run { cx };
        let argvs = self.planned_argvs(&plan, serial);
        let out = match &plan {
            Plan::Shell(_) => {
                let mut last = String::new();
                for argv in argvs {
                    last = run.adb(argv, MAX_OUTPUT).await?;
                }
                let done = format!("{} done", a.action.name());
                if a.action == Action::Shell {
                    ToolOutput::text(last)
                } else {
                    ToolOutput::text(done)
                }
            }
            Plan::ListDevices => {
                let out = run
                    .adb(argvs.into_iter().next().unwrap_or_default(), MAX_OUTPUT)
                    .await?;
                let list = devices(&out);
                ToolOutput::text(list.to_string()).with_structured(json!({"devices": list}))
            }
            Plan::Screen => {
                let mut it = argvs.into_iter();
                let dump_argv = it.next().unwrap_or_default();
                let size_argv = it.next().unwrap_or_default();
                let screen = run
                    .dump(dump_argv, &self.settings.dump_retry_delays())
                    .await?;
                // The size only helps; a device that will not say it still has a screen.
                let size = run
                    .adb(size_argv, MAX_OUTPUT)
                    .await
                    .ok()
                    .and_then(|o| screen::screen_size(&o));
                let alerts = self.alerts(cx);
                let v = screen::render(screen, size, alerts);
                ToolOutput::text(v.to_string()).with_structured(v)
            }
            Plan::Scroll(direction) => {
                let size_argv = argvs.into_iter().next().unwrap_or_default();
                let out = run.adb(size_argv, MAX_OUTPUT).await?;
                let [w, h] = screen::screen_size(&out).ok_or_else(|| {
                    ToolError::failed(format!(
                        "cannot read the screen size from `wm size`: {}",
                        preview(out.trim(), 120)
                    ))
                })?;
                let (cx_, cy) = (w / 2, h / 2);
                // Content moves down when the finger moves up.
                let (x1, y1, x2, y2) = match direction {
                    Direction::Down => (cx_, h * 7 / 10, cx_, h * 3 / 10),
                    Direction::Up => (cx_, h * 3 / 10, cx_, h * 7 / 10),
                    Direction::Right => (w * 7 / 10, cy, w * 3 / 10, cy),
                    Direction::Left => (w * 3 / 10, cy, w * 7 / 10, cy),
                };
                let d = duration(&a, 300);
                let cmd: Vec<String> = ["input".to_string(), "swipe".to_string()]
                    .into_iter()
                    .chain([x1, y1, x2, y2].iter().map(i64::to_string))
                    .chain([d.to_string()])
                    .collect();
                run.adb(Self::adb_shell(serial, &cmd), MAX_OUTPUT).await?;
                ToolOutput::text(format!("scrolled {direction:?}").to_lowercase())
            }
            Plan::Screenshot(path) => {
                let mut it = argvs.into_iter();
                run.adb(it.next().unwrap_or_default(), MAX_OUTPUT).await?;
                let b64 = run
                    .adb(it.next().unwrap_or_default(), MAX_SCREENSHOT_OUTPUT)
                    .await?;
                // Removing the device copy is tidiness; a failure there loses nothing.
                let _ = run.adb(it.next().unwrap_or_default(), MAX_OUTPUT).await;
                let clean: String = b64.chars().filter(|c| !c.is_whitespace()).collect();
                let png = base64::engine::general_purpose::STANDARD
                    .decode(clean.as_bytes())
                    .map_err(|e| {
                        ToolError::failed(format!("the device's screenshot is not base64: {e}"))
                    })?;
                if !png.starts_with(b"\x89PNG") {
                    return Err(ToolError::failed("the device's screenshot is not a PNG"));
                }
                let report = cx
                    .host()
                    .write(WriteRequest {
                        path: resolve(cx, path),
                        data: png,
                        create_dirs: true,
                        expected: None,
                    })
                    .await?;
                ToolOutput::text(format!(
                    "screenshot saved to {} ({} bytes)",
                    report.path.display(),
                    report.bytes_written
                ))
            }
            Plan::GetClipboard => {
                let out = run
                    .adb(argvs.into_iter().next().unwrap_or_default(), MAX_OUTPUT)
                    .await?;
                let text = clipboard_text(&out).ok_or_else(|| {
                    ToolError::failed(format!(
                        "no clipboard text in the answer (is the Clipper app installed?): {}",
                        preview(out.trim(), 200)
                    ))
                })?;
                ToolOutput::text(text)
            }
        };
        self.record(cx, &a);
        Ok(out)
    }
}

impl Android {
    fn with_history<T>(&self, cx: &ToolContext, f: impl FnOnce(&mut screen::History) -> T) -> T {
        let mut map = self.history.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= MAX_SESSIONS && !map.contains_key(&cx.session_id) {
            map.clear();
        }
        f(map.entry(cx.session_id.clone()).or_default())
    }

    fn alerts(&self, cx: &ToolContext) -> Vec<String> {
        self.with_history(cx, |h| h.alerts())
    }

    /// Remember an action (not the looking ones) for the alerts.
    fn record(&self, cx: &ToolContext, a: &Args) {
        let name = a.action.name();
        let sig = match a.action {
            Action::Screen | Action::ListDevices | Action::Screenshot | Action::GetClipboard => {
                return
            }
            Action::Back => "back".to_string(),
            Action::Home => "home".to_string(),
            Action::Recent => "recent".to_string(),
            Action::Tap | Action::LongPress => match point(a) {
                Ok((x, y)) => format!("{name} {x},{y}"),
                Err(_) => name,
            },
            Action::Type | Action::SetClipboard => format!(
                "{name} {}",
                preview(a.text.as_deref().unwrap_or_default(), 40)
            ),
            _ => format!(
                "{name} {}",
                [
                    a.key.as_deref(),
                    a.package.as_deref(),
                    a.url.as_deref(),
                    a.command.as_deref()
                ]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(" ")
            )
            .trim_end()
            .to_string(),
        };
        self.with_history(cx, |h| h.record(sig));
    }
}

#[cfg(test)]
mod tests;
