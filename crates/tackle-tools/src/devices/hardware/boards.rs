//! Which boards are attached and what the model may call them. Pure: the ports come from
//! [`super::port::enumerate`] and the operator's config.
//!
//! The model names a device by a name from this inventory or by its USB `VID:PID`, never by a
//! path, so the only files the tool can open are serial ports the enumeration found under the
//! usual names, or ones the operator wrote down.

use serde::Serialize;
use tackle_protocol::config::HardwarePort;

/// A board model the tool knows by its USB ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Board {
    pub name: &'static str,
    pub ids: &'static [(u16, u16)],
    pub architecture: &'static str,
    pub detail: &'static str,
}

/// Boards by the USB ids their serial interface reports. A USB-to-UART bridge chip says nothing
/// about the board behind it, so those rows name the bridge.
pub(super) const BOARDS: &[Board] = &[
    Board {
        name: "arduino-uno",
        ids: &[(0x2341, 0x0043), (0x2341, 0x0001), (0x2a03, 0x0043)],
        architecture: "AVR (ATmega328P)",
        detail: "Arduino Uno",
    },
    Board {
        name: "arduino-mega",
        ids: &[(0x2341, 0x0042), (0x2341, 0x0010)],
        architecture: "AVR (ATmega2560)",
        detail: "Arduino Mega 2560",
    },
    Board {
        name: "arduino-leonardo",
        ids: &[(0x2341, 0x8036), (0x2341, 0x0036)],
        architecture: "AVR (ATmega32U4)",
        detail: "Arduino Leonardo",
    },
    Board {
        name: "stm32-nucleo",
        ids: &[(0x0483, 0x374b), (0x0483, 0x374e), (0x0483, 0x374f)],
        architecture: "ARM Cortex-M (STM32)",
        detail: "ST Nucleo board (ST-LINK virtual COM port)",
    },
    Board {
        name: "stm32-usb-cdc",
        ids: &[(0x0483, 0x5740)],
        architecture: "ARM Cortex-M (STM32)",
        detail: "STM32 firmware's own USB serial port",
    },
    Board {
        name: "raspberry-pi-pico",
        ids: &[(0x2e8a, 0x000a), (0x2e8a, 0x0005)],
        architecture: "ARM Cortex-M0+ (RP2040)",
        detail: "Raspberry Pi Pico (Pico SDK or MicroPython USB serial)",
    },
    Board {
        name: "esp32-s3",
        ids: &[(0x303a, 0x1001)],
        architecture: "Xtensa LX7 (ESP32-S3)",
        detail: "ESP32-S3 native USB serial/JTAG",
    },
    Board {
        name: "esp32",
        ids: &[(0x10c4, 0xea60)],
        architecture: "Xtensa LX6 (ESP32)",
        detail: "ESP32 dev board behind a Silicon Labs CP210x bridge",
    },
    Board {
        name: "teensy",
        ids: &[(0x16c0, 0x0483)],
        architecture: "ARM Cortex-M (Teensy)",
        detail: "PJRC Teensy USB serial",
    },
    Board {
        name: "microbit",
        ids: &[(0x0d28, 0x0204)],
        architecture: "ARM Cortex-M (nRF51/nRF52)",
        detail: "BBC micro:bit (DAPLink serial)",
    },
    Board {
        name: "ch340-serial",
        ids: &[(0x1a86, 0x7523)],
        architecture: "unknown (behind a CH340 USB-UART bridge)",
        detail: "WCH CH340 USB-UART bridge",
    },
    Board {
        name: "ftdi-serial",
        ids: &[(0x0403, 0x6001), (0x0403, 0x6015)],
        architecture: "unknown (behind an FTDI USB-UART bridge)",
        detail: "FTDI USB-UART bridge",
    },
];

/// A serial port the system reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FoundPort {
    pub path: String,
    pub usb: Option<UsbIds>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct UsbIds {
    pub vid: u16,
    pub pid: u16,
    pub product: Option<String>,
    pub manufacturer: Option<String>,
}

/// One device the model may name, as `list_devices` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(super) struct Device {
    pub name: String,
    pub detail: String,
    pub device_path: String,
    pub vid: Option<String>,
    pub pid: Option<String>,
    pub architecture: Option<String>,
    /// The USB ids as numbers, for matching a `VID:PID` (the strings above are for the model).
    #[serde(skip)]
    pub ids: Option<(u16, u16)>,
}

/// The paths boards' USB serial interfaces get: CDC-ACM and USB-serial on Linux, usbmodem and
/// usbserial on macOS, COM ports on Windows. Built-in UARTs (`ttyS*`), consoles and ptys are
/// not boards, and are only reachable when the operator names them.
pub(super) fn is_board_port(path: &str) -> bool {
    let unix = ["/dev/ttyACM", "/dev/ttyUSB"];
    let mac = [
        "/dev/tty.usbmodem",
        "/dev/cu.usbmodem",
        "/dev/tty.usbserial",
        "/dev/cu.usbserial",
    ];
    let rest = unix
        .iter()
        .chain(mac.iter())
        .find_map(|prefix| path.strip_prefix(prefix));
    if let Some(rest) = rest {
        return !rest.is_empty() && !rest.contains('/');
    }
    path.strip_prefix("COM")
        .is_some_and(|n| !n.is_empty() && n.len() <= 3 && n.bytes().all(|b| b.is_ascii_digit()))
}

pub(super) fn hex_id(vid: u16, pid: u16) -> String {
    format!("{vid:04x}:{pid:04x}")
}

/// `2341:0043` (case-insensitive, 1-4 hex digits each).
pub(super) fn parse_vid_pid(s: &str) -> Option<(u16, u16)> {
    let (v, p) = s.trim().split_once(':')?;
    let part = |x: &str| {
        (!x.is_empty() && x.len() <= 4 && x.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| u16::from_str_radix(x, 16).ok())
            .flatten()
    };
    Some((part(v)?, part(p)?))
}

pub(super) fn board_by_ids(vid: u16, pid: u16) -> Option<&'static Board> {
    BOARDS.iter().find(|b| b.ids.contains(&(vid, pid)))
}

pub(super) fn board_by_name(name: &str) -> Option<&'static Board> {
    BOARDS.iter().find(|b| b.name.eq_ignore_ascii_case(name))
}

/// Operator-named ports first, then the discovered board ports in path order, each with a
/// name no other entry has (`arduino-uno`, `arduino-uno-2`, …). A discovered port at an
/// operator-named path is the operator's entry.
pub(super) fn inventory(configured: &[HardwarePort], mut found: Vec<FoundPort>) -> Vec<Device> {
    let mut out: Vec<Device> = configured
        .iter()
        .map(|p| Device {
            name: p.name.clone(),
            detail: p
                .detail
                .clone()
                .unwrap_or_else(|| "operator-configured port".to_string()),
            device_path: p.path.clone(),
            vid: None,
            pid: None,
            architecture: p.architecture.clone(),
            ids: None,
        })
        .collect();
    found.retain(|f| is_board_port(&f.path) && !configured.iter().any(|c| c.path == f.path));
    found.sort_by(|a, b| a.path.cmp(&b.path));
    found.dedup_by(|a, b| a.path == b.path);
    for f in found {
        let board = f.usb.as_ref().and_then(|u| board_by_ids(u.vid, u.pid));
        let base = match (&f.usb, board) {
            (_, Some(b)) => b.name.to_string(),
            (Some(u), None) => hex_id(u.vid, u.pid).replace(':', "-"),
            (None, None) => f
                .path
                .rsplit(['/', '\\'])
                .next()
                .unwrap_or(&f.path)
                .to_string(),
        };
        let taken = |n: &str| out.iter().any(|d| d.name.eq_ignore_ascii_case(n));
        let mut name = base.clone();
        let mut k = 2;
        while taken(&name) {
            name = format!("{base}-{k}");
            k += 1;
        }
        let detail = match (&f.usb, board) {
            (Some(u), b) => {
                let label: Vec<&str> = [u.manufacturer.as_deref(), u.product.as_deref()]
                    .into_iter()
                    .flatten()
                    .collect();
                match (b, label.is_empty()) {
                    (Some(b), true) => b.detail.to_string(),
                    (Some(b), false) => format!("{} ({})", b.detail, label.join(" ")),
                    (None, false) => label.join(" "),
                    (None, true) => "USB serial device".to_string(),
                }
            }
            (None, _) => "serial port".to_string(),
        };
        out.push(Device {
            name,
            detail,
            device_path: f.path,
            vid: f.usb.as_ref().map(|u| format!("{:04x}", u.vid)),
            pid: f.usb.as_ref().map(|u| format!("{:04x}", u.pid)),
            architecture: board.map(|b| b.architecture.to_string()),
            ids: f.usb.as_ref().map(|u| (u.vid, u.pid)),
        });
    }
    out
}

/// The device `device` names: an inventory name, else the first device with that `VID:PID`.
pub(super) fn find<'a>(devices: &'a [Device], device: &str) -> Option<&'a Device> {
    if let Some(d) = devices.iter().find(|d| d.name.eq_ignore_ascii_case(device)) {
        return Some(d);
    }
    let ids = parse_vid_pid(device)?;
    devices.iter().find(|d| d.ids == Some(ids))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usb(path: &str, vid: u16, pid: u16) -> FoundPort {
        FoundPort {
            path: path.into(),
            usb: Some(UsbIds {
                vid,
                pid,
                product: None,
                manufacturer: None,
            }),
        }
    }

    #[test]
    fn only_usual_board_port_names_are_listed() {
        for ok in [
            "/dev/ttyACM0",
            "/dev/ttyUSB12",
            "/dev/tty.usbmodem14101",
            "/dev/cu.usbserial-A50285BI",
            "COM3",
            "COM255",
        ] {
            assert!(is_board_port(ok), "{ok}");
        }
        for no in [
            "/dev/ttyS0",
            "/dev/pts/3",
            "/dev/tty",
            "/dev/ttyACM",
            "/dev/ttyACM0/../sda",
            "/dev/console",
            "COM",
            "COM1x",
            "COM1234",
            "/etc/passwd",
            "/dev/ttyUSB0/x",
        ] {
            assert!(!is_board_port(no), "{no}");
        }
    }

    #[test]
    fn vid_pid_parses_hex_pairs_only() {
        assert_eq!(parse_vid_pid("2341:0043"), Some((0x2341, 0x43)));
        assert_eq!(parse_vid_pid("2E8A:A"), Some((0x2e8a, 0xa)));
        for bad in [
            "2341", "2341:", ":0043", "12345:1", "xyz:1", "1:2:3", "/dev/x",
        ] {
            assert_eq!(parse_vid_pid(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_inventory_names_boards_uniquely_and_lists_operator_ports_first() {
        let configured = vec![HardwarePort {
            name: "bench".into(),
            path: "/dev/serial/by-id/usb-bench".into(),
            detail: None,
            architecture: Some("ARM Cortex-M4".into()),
        }];
        let found = vec![
            usb("/dev/ttyACM1", 0x2341, 0x0043),
            usb("/dev/ttyACM0", 0x2341, 0x0043),
            usb("/dev/ttyUSB0", 0x1234, 0xabcd),
            FoundPort {
                path: "/dev/ttyS0".into(),
                usb: None,
            },
            usb("/dev/serial/by-id/usb-bench", 0x2341, 0x0043),
        ];
        let inv = inventory(&configured, found);
        let names: Vec<&str> = inv.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(
            names,
            ["bench", "arduino-uno", "arduino-uno-2", "1234-abcd"]
        );
        assert_eq!(inv[1].device_path, "/dev/ttyACM0");
        assert_eq!(inv[1].vid.as_deref(), Some("2341"));
        assert_eq!(inv[1].architecture.as_deref(), Some("AVR (ATmega328P)"));
        assert_eq!(inv[3].architecture, None);
        assert_eq!(
            find(&inv, "ARDUINO-UNO-2").map(|d| d.device_path.as_str()),
            Some("/dev/ttyACM1")
        );
        assert_eq!(
            find(&inv, "2341:43").map(|d| d.name.as_str()),
            Some("arduino-uno")
        );
        assert_eq!(
            find(&inv, "1234:ABCD").map(|d| d.name.as_str()),
            Some("1234-abcd")
        );
        for miss in [
            "/dev/ttyACM0",
            "ttyACM0",
            "/dev/serial/by-id/usb-bench",
            "esp32",
            "0000:0000",
        ] {
            assert_eq!(find(&inv, miss), None, "{miss}");
        }
    }

    #[test]
    fn board_names_are_unique_and_no_ids_repeat() {
        let mut ids = Vec::new();
        for (i, b) in BOARDS.iter().enumerate() {
            assert!(BOARDS[..i].iter().all(|o| o.name != b.name), "{}", b.name);
            assert!(parse_vid_pid(b.name).is_none());
            ids.extend_from_slice(b.ids);
        }
        let n = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), n);
    }
}
