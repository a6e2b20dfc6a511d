//! `hardware {action, device?, command?, args?}`: boards on USB serial ports (Arduino, STM32
//! Nucleo, RP2040, ESP32, …) speaking one JSON object per line.
//!
//! The model names a board by its `list_devices` name or its USB `VID:PID`; it never writes a
//! path ([`boards`]). `connect` holds the port for the calling session until `disconnect`
//! (other sessions get "in use"); `send_command` without a connection opens the port for that
//! one exchange.

mod boards;
mod port;

use async_trait::async_trait;
use port::Link;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tackle_protocol::text::preview;
use tackle_protocol::{
    ApprovalMode, ErrorKind, Risk, Tool, ToolContext, ToolError, ToolOutput, ToolSpec,
};

use super::HardwareSettings;

const DEFAULT_BAUD: u32 = 115_200;
/// How long a board has to answer one command.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(5);
/// How long `read_data` listens.
const READ_WINDOW: Duration = Duration::from_secs(1);
/// Ports held open at once, over all sessions.
const MAX_HELD: usize = 16;

/// The `hardware` tool: boards on USB serial ports speaking one JSON object per line.
pub struct Hardware {
    settings: HardwareSettings,
    /// Held ports by device path.
    held: Mutex<HashMap<String, Held>>,
    next_id: AtomicU64,
}

struct Held {
    name: String,
    session: String,
    link: Arc<Mutex<Link>>,
}

// Arguments of `hardware`; which fields each action reads is in their descriptions.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    action: Action,
    /// A name from list_devices (e.g. arduino-uno) or a USB VID:PID (e.g. 2341:0043).
    device: Option<String>,
    /// send_command: the board's command, e.g. gpio_read or gpio_write.
    command: Option<String>,
    /// send_command: the command's arguments, e.g. {"pin": 13, "value": 1}.
    #[schemars(with = "Option<Map<String, Value>>")]
    args: Option<Value>,
}

#[derive(Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq, Debug)]
#[schemars(inline)]
#[serde(rename_all = "snake_case")]
enum Action {
    ListDevices,
    DeviceInfo,
    Connect,
    SendCommand,
    ReadData,
    Disconnect,
}

impl Hardware {
    /// A `hardware` tool with the operator's settings; no port is opened until `connect`.
    pub fn new(settings: HardwareSettings) -> Self {
        Self {
            settings,
            held: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
        }
    }

    fn baud(&self) -> u32 {
        self.settings
            .baud
            .filter(|b| *b > 0)
            .unwrap_or(DEFAULT_BAUD)
    }

    async fn inventory(&self) -> Vec<boards::Device> {
        let found = blocking(|| Ok(port::enumerate())).await.unwrap_or_default();
        boards::inventory(&self.settings.ports, found)
    }

    fn held(&self) -> std::sync::MutexGuard<'_, HashMap<String, Held>> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The device a call names, among the ports this session holds and then the inventory.
    async fn device(&self, a: &Args, cx: &ToolContext) -> Result<(String, String), ToolError> {
        let name = a
            .device
            .as_deref()
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .ok_or_else(|| {
                ToolError::invalid_arguments(
                    "this action needs `device`: a name from list_devices or a USB VID:PID such as 2341:0043",
                )
            })?;
        {
            let held = self.held();
            if let Some((path, h)) = held
                .iter()
                .find(|(_, h)| h.session == cx.session_id && h.name.eq_ignore_ascii_case(name))
            {
                return Ok((h.name.clone(), path.clone()));
            }
        }
        let inv = self.inventory().await;
        match boards::find(&inv, name) {
            Some(d) => Ok((d.name.clone(), d.device_path.clone())),
            None => Err(not_found(name, &inv)),
        }
    }

    /// The held link for `path`, when this session holds it; an error when another does.
    fn held_link(
        &self,
        path: &str,
        cx: &ToolContext,
    ) -> Result<Option<Arc<Mutex<Link>>>, ToolError> {
        match self.held().get(path) {
            Some(h) if h.session == cx.session_id => Ok(Some(h.link.clone())),
            Some(h) => Err(in_use(&h.name)),
            None => Ok(None),
        }
    }

    async fn list_devices(&self) -> ToolOutput {
        let inv = self.inventory().await;
        let list = serde_json::to_value(&inv).unwrap_or_else(|_| json!([]));
        let text = if inv.is_empty() {
            "no boards found: none on a USB serial port (/dev/ttyACM*, /dev/ttyUSB*, usbmodem, usbserial, COM*) and none configured under devices.hardware.ports".to_string()
        } else {
            list.to_string()
        };
        ToolOutput::text(text).with_structured(json!({ "devices": list }))
    }

    async fn device_info(&self, a: &Args) -> Result<ToolOutput, ToolError> {
        let name = a.device.as_deref().map(str::trim).unwrap_or_default();
        if name.is_empty() {
            return Err(ToolError::invalid_arguments(
                "device_info needs `device`: a board name (e.g. arduino-uno) or a USB VID:PID",
            ));
        }
        let inv = self.inventory().await;
        let ids = boards::parse_vid_pid(name);
        let board = boards::board_by_name(name)
            .or_else(|| ids.and_then(|(v, p)| boards::board_by_ids(v, p)));
        let connected: Vec<&boards::Device> = match (board, ids) {
            (_, Some(ids)) => inv.iter().filter(|d| d.ids == Some(ids)).collect(),
            (Some(b), None) => inv
                .iter()
                .filter(|d| d.ids.is_some_and(|ids| b.ids.contains(&ids)))
                .collect(),
            (None, None) => boards::find(&inv, name).into_iter().collect(),
        };
        let info = match board {
            Some(b) => json!({
                "name": b.name,
                "detail": b.detail,
                "architecture": b.architecture,
                "usb_ids": b.ids.iter().map(|(v, p)| boards::hex_id(*v, *p)).collect::<Vec<_>>(),
                "known_board": true,
                "connected": connected,
            }),
            None => match connected.first() {
                Some(d) => json!({
                    "name": d.name,
                    "detail": d.detail,
                    "architecture": d.architecture,
                    "usb_ids": d.ids.map(|(v, p)| vec![boards::hex_id(v, p)]).unwrap_or_default(),
                    "known_board": false,
                    "connected": connected,
                }),
                None => return Err(not_found(name, &inv)),
            },
        };
        Ok(ToolOutput::text(info.to_string()).with_structured(info))
    }

    async fn connect(&self, a: &Args, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let (name, path) = self.device(a, cx).await?;
        if self.held_link(&path, cx)?.is_some() {
            return Ok(ToolOutput::text(format!(
                "{name} is already connected ({path})"
            )));
        }
        if self.held().len() >= MAX_HELD {
            return Err(ToolError::failed(format!(
                "{MAX_HELD} ports are held open already; disconnect one first"
            )));
        }
        let baud = self.baud();
        let p = path.clone();
        let link = blocking(move || Link::open(&p, baud)).await?;
        let mut held = self.held();
        if let Some(h) = held.get(&path) {
            // Another call connected it while this one opened: keep theirs, drop this one.
            return if h.session == cx.session_id {
                Ok(ToolOutput::text(format!(
                    "{name} is already connected ({path})"
                )))
            } else {
                Err(in_use(&h.name))
            };
        }
        held.insert(
            path.clone(),
            Held {
                name: name.clone(),
                session: cx.session_id.clone(),
                link: Arc::new(Mutex::new(link)),
            },
        );
        Ok(ToolOutput::text(format!(
            "connected to {name} ({path}) at {baud} baud"
        )))
    }

    async fn send_command(&self, a: &Args, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let command = check_command(a.command.as_deref())?;
        let cmd_args = match &a.args {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(v @ Value::Object(_)) => v.clone(),
            Some(_) => {
                return Err(ToolError::invalid_arguments(
                    "`args` must be an object, e.g. {\"pin\": 13}",
                ))
            }
        };
        let (name, path) = self.device(a, cx).await?;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed).to_string();
        let mut line = serde_json::to_vec(&json!({"id": id, "cmd": command, "args": cmd_args}))
            .map_err(|e| ToolError::failed(e.to_string()))?;
        line.push(b'\n');
        if line.len() > port::MAX_LINE {
            return Err(ToolError::invalid_arguments(format!(
                "the request is {} bytes; a line is at most {} KB",
                line.len(),
                port::MAX_LINE / 1024
            )));
        }
        let held = self.held_link(&path, cx)?;
        let baud = self.baud();
        let deadline = Instant::now() + ANSWER_TIMEOUT;
        let answer = blocking(move || match held {
            Some(link) => {
                let mut link = link.lock().unwrap_or_else(|p| p.into_inner());
                link.exchange(&id, &line, deadline)
            }
            None => Link::open(&path, baud)?.exchange(&id, &line, deadline),
        })
        .await?;
        render_answer(&name, &command, answer)
    }

    async fn read_data(&self, a: &Args, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let (name, path) = self.device(a, cx).await?;
        let Some(link) = self.held_link(&path, cx)? else {
            return Err(ToolError::failed(format!(
                "{name} is not connected; `connect` it first so nothing it sends is lost"
            )));
        };
        let deadline = Instant::now() + READ_WINDOW;
        let text = blocking(move || {
            let mut link = link.lock().unwrap_or_else(|p| p.into_inner());
            link.drain(deadline)
        })
        .await?;
        Ok(if text.is_empty() {
            ToolOutput::text(format!("{name} sent nothing"))
        } else {
            ToolOutput::text(text)
        })
    }

    async fn disconnect(&self, a: &Args, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let (name, path) = self.device(a, cx).await?;
        let mut held = self.held();
        match held.get(&path) {
            Some(h) if h.session == cx.session_id => {
                held.remove(&path);
                Ok(ToolOutput::text(format!("disconnected {name}")))
            }
            Some(h) => Err(in_use(&h.name)),
            None => Ok(ToolOutput::text(format!("{name} was not connected"))),
        }
    }
}

/// Run port I/O on the blocking pool; a panic there is an error, not a crash.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ToolError::failed(format!("the serial port task failed: {e}")))?
}

/// Command names as boards' firmware dispatches on them: `gpio_read`, `led.on`, `adc-read`.
fn check_command(command: Option<&str>) -> Result<String, ToolError> {
    let c = command.map(str::trim).unwrap_or_default();
    let ok = !c.is_empty()
        && c.len() <= 64
        && c.chars()
            .all(|ch| ch.is_ascii_alphanumeric() || "_.:-".contains(ch));
    if !ok {
        return Err(ToolError::invalid_arguments(format!(
            "`command` must be 1-64 letters, digits, `_`, `.`, `:` or `-` (e.g. gpio_read), got `{}`",
            preview(c, 60)
        )));
    }
    Ok(c.to_string())
}

fn render_answer(name: &str, command: &str, answer: Value) -> Result<ToolOutput, ToolError> {
    match answer.get("ok") {
        Some(Value::Bool(true)) => {
            let result = answer.get("result").cloned().unwrap_or(Value::Null);
            let text = match &result {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            Ok(ToolOutput::text(text).with_structured(json!({ "result": result })))
        }
        Some(Value::Bool(false)) => {
            let why = match answer.get("error") {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => "no reason given".to_string(),
            };
            Err(ToolError::failed(format!(
                "{name} refused `{command}`: {}",
                preview(&why, 500)
            )))
        }
        _ => Err(ToolError::failed(format!(
            "{name} answered `{command}` without a boolean `ok`: {}",
            preview(&answer.to_string(), 200)
        ))),
    }
}

fn not_found(name: &str, inv: &[boards::Device]) -> ToolError {
    let known: Vec<&str> = inv.iter().map(|d| d.name.as_str()).collect();
    let hint = if name.contains(['/', '\\']) {
        " (devices are named, never given as paths)"
    } else {
        ""
    };
    let have = if known.is_empty() {
        "no boards are attached".to_string()
    } else {
        format!("attached: {}", known.join(", "))
    };
    ToolError::new(
        ErrorKind::NotFound,
        format!("no device `{}`{hint}; {have}", preview(name, 60)),
    )
}

fn in_use(name: &str) -> ToolError {
    ToolError::failed(format!("{name} is connected in another session"))
}

#[async_trait]
impl Tool for Hardware {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "hardware",
            "Talk to microcontroller boards on USB serial ports. list_devices shows the attached \
             boards (name, VID:PID, architecture); device_info describes a board by name or \
             VID:PID. connect holds a board's port for this session; send_command sends \
             {command, args} as one JSON line and returns the board's result (5 s limit); \
             read_data returns what the board printed; disconnect releases it. Name boards by \
             their list_devices name or VID:PID.",
            "devices",
        )
        .risk(Risk::High)
        .approval(ApprovalMode::Always)
        .parameters(crate::args::schema::<Args>())
    }

    fn timeout(&self) -> Option<Duration> {
        // Opening a port plus the answer's 5 s.
        Some(ANSWER_TIMEOUT + Duration::from_secs(5))
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let a: Args = crate::args::parse(args)?;
        match a.action {
            Action::ListDevices => Ok(self.list_devices().await),
            Action::DeviceInfo => self.device_info(&a).await,
            Action::Connect => self.connect(&a, cx).await,
            Action::SendCommand => self.send_command(&a, cx).await,
            Action::ReadData => self.read_data(&a, cx).await,
            Action::Disconnect => self.disconnect(&a, cx).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_plain_names() {
        for ok in ["gpio_read", "led.on", "adc-read", "m:1"] {
            assert_eq!(check_command(Some(ok)).ok().as_deref(), Some(ok));
        }
        for bad in ["", " ", "a b", "x\n{\"id\":1}", "rm;x", &"a".repeat(65)] {
            assert!(check_command(Some(bad)).is_err(), "{bad:?}");
        }
        assert!(check_command(None).is_err());
    }

    #[test]
    fn answers_become_results_or_errors() {
        let ok = render_answer(
            "b",
            "gpio_read",
            json!({"id": "1", "ok": true, "result": {"value": 1}}),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ok.structured, Some(json!({"result": {"value": 1}})));
        let refused = render_answer(
            "b",
            "x",
            json!({"id": "1", "ok": false, "error": "no such pin"}),
        )
        .expect_err("refused");
        assert!(
            refused.message.contains("no such pin"),
            "{}",
            refused.message
        );
        assert!(render_answer("b", "x", json!({"id": "1", "ok": "yes"})).is_err());
    }

    /// The property names, `required` list and actions the schema always had (written out
    /// here, since models and MCP clients rely on them), and refusal of an unknown or a
    /// missing field with `invalid_arguments`.
    mod contract {
        use super::super::Hardware;
        use crate::args::contract::{assert_names, assert_refusals};
        use crate::devices::HardwareSettings;
        use serde_json::json;
        use tackle_protocol::Tool;

        #[test]
        fn the_schema_names_the_properties_and_requirements_it_always_had() {
            let schema = Hardware::new(HardwareSettings::default()).spec().parameters;
            assert_names(
                &schema,
                &["action", "device", "command", "args"],
                &["action"],
            );
            assert_eq!(schema["additionalProperties"], json!(false));
            assert_eq!(
                schema["properties"]["action"]["enum"],
                json!([
                    "list_devices",
                    "device_info",
                    "connect",
                    "send_command",
                    "read_data",
                    "disconnect"
                ])
            );
            assert_eq!(schema["properties"]["args"]["type"], json!("object"));
        }

        #[tokio::test]
        async fn an_unknown_or_a_missing_field_is_refused() {
            let tool = Hardware::new(HardwareSettings::default());
            assert_refusals(&tool, json!({"action": "list_devices"}), &["action"]).await;
        }
    }
}
