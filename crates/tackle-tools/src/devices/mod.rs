//! The `devices` extension: `android` (adb through the host's Exec) and `hardware` (boards on
//! USB serial ports). Each tool exists only in builds with its cargo feature (`android`,
//! `hardware`); without them the extension owns no tools.

#[cfg(feature = "android")]
mod android;
#[cfg(feature = "hardware")]
mod hardware;

#[cfg(feature = "android")]
pub use android::Android;
#[cfg(feature = "hardware")]
pub use hardware::Hardware;

use std::sync::Arc;
use std::time::Duration;
use tackle_protocol::config::{DevicesConfig, HardwareConfig, HardwarePort};
use tackle_protocol::{Extension, Tool};

/// What the `devices` tools take from config; the binary fills it.
#[derive(Debug, Clone, Default)]
pub struct DevicesSettings {
    /// Settings of the `android` tool.
    pub android: AndroidSettings,
    /// Settings of the `hardware` tool.
    pub hardware: HardwareSettings,
}

/// What the `android` tool takes from config; the defaults keep the raw shell off.
#[derive(Debug, Clone, Default)]
pub struct AndroidSettings {
    /// `adb -s SERIAL` when a call names no device.
    pub serial: Option<String>,
    /// The raw `shell` action; off unless the operator turns it on.
    pub allow_shell: bool,
    /// Waits between screen-dump attempts; `None` is 1, 2 and 4 s.
    pub dump_retry_delays: Option<Vec<Duration>>,
}

impl AndroidSettings {
    #[cfg_attr(not(feature = "android"), allow(dead_code))]
    pub(crate) fn dump_retry_delays(&self) -> Vec<Duration> {
        self.dump_retry_delays
            .clone()
            .unwrap_or_else(|| [1, 2, 4].into_iter().map(Duration::from_secs).collect())
    }
}

/// What the `hardware` tool takes from config.
#[derive(Debug, Clone, Default)]
pub struct HardwareSettings {
    /// Baud rate `connect` opens a port at (default 115200).
    pub baud: Option<u32>,
    /// Operator-named ports, listed before the discovered ones.
    pub ports: Vec<HardwarePort>,
}

/// What serde cannot check in `devices.hardware`: the key at fault and why.
pub fn check_hardware_config(config: &HardwareConfig) -> Result<(), (String, String)> {
    if config.baud == Some(0) {
        return Err((
            "devices.hardware.baud".into(),
            "a baud rate must be above 0 (e.g. 115200)".into(),
        ));
    }
    let mut seen: Vec<String> = Vec::new();
    for (i, port) in config.ports.iter().enumerate() {
        let name = &port.name;
        if !crate::fs::is_plain_name(name) {
            return Err((
                format!("devices.hardware.ports[{i}].name"),
                format!("`{name}`: a port name is 1-64 letters, digits, `_`, `.` or `-`, starting with a letter or digit"),
            ));
        }
        if seen.contains(&name.to_ascii_lowercase()) {
            return Err((
                format!("devices.hardware.ports[{i}].name"),
                format!("`{name}` names two ports"),
            ));
        }
        seen.push(name.to_ascii_lowercase());
        if port.path.trim().is_empty() || port.path.contains('\0') {
            return Err((
                format!("devices.hardware.ports[{i}].path"),
                "the port's device file, e.g. /dev/serial/by-id/usb-… or COM3".into(),
            ));
        }
    }
    Ok(())
}

impl DevicesSettings {
    /// Copies the `devices:` section of the config into tool settings.
    pub fn from_config(config: &DevicesConfig) -> Self {
        Self {
            android: AndroidSettings {
                serial: config.android.serial.clone().filter(|s| !s.is_empty()),
                allow_shell: config.android.allow_shell,
                dump_retry_delays: None,
            },
            hardware: HardwareSettings {
                baud: config.hardware.baud,
                ports: config.hardware.ports.clone(),
            },
        }
    }
}

/// The `devices` extension.
pub fn extension(settings: DevicesSettings) -> Arc<dyn Extension> {
    Arc::new(Devices { settings })
}

/// Its name, for `extensions.enable` / `disable`.
pub const NAME: &str = "devices";

struct Devices {
    #[cfg_attr(not(any(feature = "android", feature = "hardware")), allow(dead_code))]
    settings: DevicesSettings,
}

impl Extension for Devices {
    fn name(&self) -> &str {
        NAME
    }

    // One push per feature: which tools exist is decided at build time.
    #[allow(clippy::vec_init_then_push)]
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        #[allow(unused_mut)]
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        #[cfg(feature = "android")]
        tools.push(Arc::new(Android::new(self.settings.android.clone())));
        #[cfg(feature = "hardware")]
        tools.push(Arc::new(Hardware::new(self.settings.hardware.clone())));
        tools
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_extension_lists_exactly_the_built_device_tools() {
        let names: Vec<String> = extension(DevicesSettings::default())
            .tools()
            .iter()
            .map(|t| t.spec().name)
            .collect();
        let mut expected = Vec::new();
        if cfg!(feature = "android") {
            expected.push("android");
        }
        if cfg!(feature = "hardware") {
            expected.push("hardware");
        }
        assert_eq!(names, expected);
    }

    fn port(name: &str, path: &str) -> HardwarePort {
        HardwarePort {
            name: name.into(),
            path: path.into(),
            ..Default::default()
        }
    }

    #[test]
    fn hardware_config_refuses_bad_names_duplicates_empty_paths_and_zero_baud() {
        let ok = HardwareConfig {
            baud: Some(9600),
            ports: vec![port("bench", "/dev/ttyACM0"), port("probe-2.b", "COM3")],
        };
        assert_eq!(check_hardware_config(&ok), Ok(()));
        let cases = [
            (vec![port("", "/dev/x")], "ports[0].name"),
            (vec![port("-x", "/dev/x")], "ports[0].name"),
            (vec![port("2341:0043", "/dev/x")], "ports[0].name"),
            (vec![port("a/b", "/dev/x")], "ports[0].name"),
            (vec![port(&"a".repeat(65), "/dev/x")], "ports[0].name"),
            (
                vec![port("a", "/dev/x"), port("A", "/dev/y")],
                "ports[1].name",
            ),
            (vec![port("a", " ")], "ports[0].path"),
        ];
        for (ports, key) in cases {
            let c = HardwareConfig { baud: None, ports };
            let err = check_hardware_config(&c).expect_err(key);
            assert!(err.0.ends_with(key), "{err:?}");
        }
        let zero = HardwareConfig {
            baud: Some(0),
            ports: Vec::new(),
        };
        assert!(check_hardware_config(&zero).is_err());
    }
}
