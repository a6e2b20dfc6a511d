//! `devices:` the `android` and `hardware` tools.

use serde::{Deserialize, Serialize};

/// `devices:` settings of the `android` and `hardware` tools.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DevicesConfig {
    /// The `android` tool (cargo feature `android`): default device and whether `shell` is allowed.
    #[serde(default)]
    pub android: AndroidConfig,
    /// The `hardware` tool (cargo feature `hardware`): baud rate and named serial ports.
    #[serde(default)]
    pub hardware: HardwareConfig,
}

/// `devices.android`: how the `android` tool drives devices over `adb`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AndroidConfig {
    /// `adb -s SERIAL`: the device used when a call names none.
    #[serde(default)]
    pub serial: Option<String>,
    /// Allow the `shell` action (raw commands on the device). Off by default; even on, lines
    /// that chain, substitute, remove recursively, reboot, wipe or format are refused.
    #[serde(default)]
    pub allow_shell: bool,
}

/// `devices.hardware`: the serial boards the `hardware` tool may talk to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HardwareConfig {
    /// Serial baud rate for `connect` (default 115200).
    #[serde(default)]
    pub baud: Option<u32>,
    /// Boards at fixed paths the operator names (udev symlinks, `/dev/serial/by-id/…`, a bench
    /// adapter without USB ids). The model names them by `name`; it never writes a path.
    #[serde(default)]
    pub ports: Vec<HardwarePort>,
}

/// One operator-named serial port.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HardwarePort {
    /// What the model calls it (`device`): letters, digits, `_`, `.`, `-`.
    pub name: String,
    /// The device file (`/dev/…`, `COM3`).
    pub path: String,
    /// A line for `list_devices` (e.g. "bench power controller").
    #[serde(default)]
    pub detail: Option<String>,
    /// The board's CPU, when known (e.g. "ARM Cortex-M4").
    #[serde(default)]
    pub architecture: Option<String>,
}
