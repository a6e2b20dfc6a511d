//! The `devices` extension: `android` (adb through the host's Exec). The tool exists only in
//! builds with its cargo feature (`android`); without it the extension owns no tools.
//! `hardware` is gated (crates/tackle-tools/src/gated.rs) but not built yet.

#[cfg(feature = "android")]
mod android;

#[cfg(feature = "android")]
pub use android::Android;

use std::sync::Arc;
use std::time::Duration;
use tackle_protocol::config::DevicesConfig;
use tackle_protocol::{Extension, Tool};

/// What the `devices` tools take from config; the binary fills it.
#[derive(Debug, Clone, Default)]
pub struct DevicesSettings {
    pub android: AndroidSettings,
    pub hardware: HardwareSettings,
}

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

#[derive(Debug, Clone, Default)]
pub struct HardwareSettings {
    /// Baud rate `connect` opens a port at (default 115200).
    pub baud: Option<u32>,
}

impl DevicesSettings {
    pub fn from_config(config: &DevicesConfig) -> Self {
        Self {
            android: AndroidSettings {
                serial: config.android.serial.clone().filter(|s| !s.is_empty()),
                allow_shell: config.android.allow_shell,
                dump_retry_delays: None,
            },
            hardware: HardwareSettings {
                baud: config.hardware.baud,
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
    #[cfg_attr(not(feature = "android"), allow(dead_code))]
    settings: DevicesSettings,
}

impl Extension for Devices {
    fn name(&self) -> &str {
        NAME
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        #[cfg(feature = "android")]
        let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Android::new(self.settings.android.clone()))];
        #[cfg(not(feature = "android"))]
        let tools: Vec<Arc<dyn Tool>> = Vec::new();
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
        assert_eq!(names, expected);
    }
}
