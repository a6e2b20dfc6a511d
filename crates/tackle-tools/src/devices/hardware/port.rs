//! The one place the `hardware` tool touches serial ports (tests/io_boundary.rs allows this
//! file and no other; docs/decisions/0021-hardware-serial-ports.md says why). Everything here
//! blocks: callers run it on tokio's blocking pool.
//!
//! The protocol is one JSON object per line each way: `{"id","cmd","args"}` out,
//! `{"id","ok","result"|"error"}` back. Boards also print logs and late answers; those lines
//! are kept (bounded) for `read_data` instead of being taken for the answer.

use super::boards::{FoundPort, UsbIds};
use serde_json::Value;
use std::collections::VecDeque;
use std::io::{ErrorKind as IoKind, Read, Write};
use std::time::{Duration, Instant};
use tackle_protocol::{ErrorKind, ToolError};

/// The longest line either way.
pub(super) const MAX_LINE: usize = 64 * 1024;
/// How long one read waits before the loop looks at its deadline again.
const POLL: Duration = Duration::from_millis(50);

/// The board serial ports the system reports.
pub(super) fn enumerate() -> Vec<FoundPort> {
    // Without libudev, serialport scans /sys/class/tty and panics where that directory is
    // missing (some containers); no ports is the true answer there.
    #[cfg(target_os = "linux")]
    if !std::path::Path::new("/sys/class/tty").is_dir() {
        return Vec::new();
    }
    let ports = std::panic::catch_unwind(serialport::available_ports)
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    ports
        .into_iter()
        .map(|p| FoundPort {
            path: p.port_name,
            usb: match p.port_type {
                serialport::SerialPortType::UsbPort(u) => Some(UsbIds {
                    vid: u.vid,
                    pid: u.pid,
                    product: u.product,
                    manufacturer: u.manufacturer,
                }),
                _ => None,
            },
        })
        .collect()
}

/// An open port and what it has said that nobody asked for yet.
pub(super) struct Link {
    port: Box<dyn serialport::SerialPort>,
    /// Bytes of a line not finished yet.
    partial: Vec<u8>,
    /// Complete lines that were not an answer, oldest first, at most [`MAX_LINE`] bytes.
    backlog: VecDeque<String>,
    backlog_bytes: usize,
    /// Inside a line that grew past [`MAX_LINE`]: its bytes are discarded up to its newline.
    skipping: bool,
    /// Overlong lines dropped since `read_data` last said so.
    dropped: usize,
}

impl Link {
    /// Open `path` exclusively (another program holding it gets an error, not a shared port).
    pub fn open(path: &str, baud: u32) -> Result<Link, ToolError> {
        let port = serialport::new(path, baud)
            .timeout(POLL)
            .open()
            .map_err(|e| {
                let busy = matches!(e.kind, serialport::ErrorKind::Io(IoKind::WouldBlock))
                    || e.description.contains("busy")
                    // serialport's flock: another program holds the port exclusively.
                    || e.description.contains("exclusive lock")
                    || e.description.contains("Resource temporarily unavailable");
                let why = if busy {
                    "it is in use by another program".to_string()
                } else {
                    e.description.clone()
                };
                ToolError::failed(format!("cannot open the serial port {path}: {why}"))
            })?;
        Ok(Link {
            port,
            partial: Vec::new(),
            backlog: VecDeque::new(),
            backlog_bytes: 0,
            skipping: false,
            dropped: 0,
        })
    }

    /// Send one request line and wait until `deadline` for the answer carrying `id`.
    pub fn exchange(
        &mut self,
        id: &str,
        line: &[u8],
        deadline: Instant,
    ) -> Result<Value, ToolError> {
        self.write_line(line, deadline)?;
        let mut others = 0usize;
        loop {
            for line in self.read_lines(deadline)? {
                match answer_to(&line, id) {
                    Some(v) => return Ok(v),
                    None => {
                        others += 1;
                        self.keep(line);
                    }
                }
            }
            if Instant::now() >= deadline {
                let dropped = match self.dropped {
                    0 => String::new(),
                    n => format!(", {n} longer than {} KB dropped", MAX_LINE / 1024),
                };
                return Err(ToolError::new(
                    ErrorKind::Timeout,
                    format!(
                        "the device sent no answer with id {id} in time ({others} other line(s) received{dropped}; read_data shows them)"
                    ),
                ));
            }
        }
    }

    /// What the board printed: the kept lines, then whatever arrives until `deadline`, or
    /// until it has been quiet a moment after saying something. At most [`MAX_LINE`] bytes.
    pub fn drain(&mut self, deadline: Instant) -> Result<String, ToolError> {
        let mut out = String::new();
        while let Some(line) = self.backlog.pop_front() {
            self.backlog_bytes -= line.len();
            push_bounded(&mut out, &line);
        }
        let mut quiet_since: Option<Instant> = None;
        while Instant::now() < deadline && out.len() < MAX_LINE {
            let got = self.read_some()?;
            if got == 0 {
                let now = Instant::now();
                let since = *quiet_since.get_or_insert(now);
                if !out.is_empty() && now.duration_since(since) >= POLL * 4 {
                    break;
                }
                continue;
            }
            quiet_since = None;
            for line in self.split_lines() {
                push_bounded(&mut out, &line);
            }
        }
        // A line still being written is part of what the board said.
        if !self.partial.is_empty() && !self.skipping && out.len() < MAX_LINE {
            let rest = String::from_utf8_lossy(&std::mem::take(&mut self.partial)).into_owned();
            push_bounded(&mut out, &rest);
        }
        if self.dropped > 0 {
            let note = format!(
                "[{} line(s) longer than {} KB dropped]",
                std::mem::take(&mut self.dropped),
                MAX_LINE / 1024
            );
            push_bounded(&mut out, &note);
        }
        Ok(out)
    }

    fn write_line(&mut self, line: &[u8], deadline: Instant) -> Result<(), ToolError> {
        let mut rest = line;
        while !rest.is_empty() {
            if Instant::now() >= deadline {
                return Err(ToolError::new(
                    ErrorKind::Timeout,
                    "the device did not take the request in time",
                ));
            }
            match self.port.write(rest) {
                Ok(0) => return Err(gone("wrote nothing")),
                Ok(n) => rest = rest.get(n..).unwrap_or_default(),
                Err(e) if is_retry(&e) => continue,
                Err(e) => return Err(gone(&e.to_string())),
            }
        }
        self.port.flush().map_err(|e| gone(&e.to_string()))
    }

    /// Read until at least one complete line is in or the deadline passes.
    fn read_lines(&mut self, deadline: Instant) -> Result<Vec<String>, ToolError> {
        while Instant::now() < deadline {
            if self.read_some()? > 0 {
                let lines = self.split_lines();
                if !lines.is_empty() {
                    return Ok(lines);
                }
            }
        }
        Ok(Vec::new())
    }

    /// One read of at most a poll interval; 0 when nothing came.
    fn read_some(&mut self) -> Result<usize, ToolError> {
        let mut buf = [0u8; 4096];
        match self.port.read(&mut buf) {
            Ok(n) => {
                self.partial
                    .extend_from_slice(buf.get(..n).unwrap_or_default());
                Ok(n)
            }
            Err(e) if is_retry(&e) => Ok(0),
            Err(e) => Err(gone(&e.to_string())),
        }
    }

    /// Take the complete lines out of `partial` (without `\r\n`). A line longer than
    /// [`MAX_LINE`] is dropped whole and counted, so that its tail is not read as a line of
    /// its own and an answer after it still gets through.
    fn split_lines(&mut self) -> Vec<String> {
        let mut lines = Vec::new();
        while let Some(at) = self.partial.iter().position(|&b| b == b'\n') {
            let mut line: Vec<u8> = self.partial.drain(..=at).collect();
            if std::mem::take(&mut self.skipping) {
                continue;
            }
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            if line.len() > MAX_LINE {
                self.dropped += 1;
                continue;
            }
            lines.push(String::from_utf8_lossy(&line).into_owned());
        }
        if self.partial.len() > MAX_LINE {
            self.partial.clear();
            if !self.skipping {
                self.skipping = true;
                self.dropped += 1;
            }
        }
        lines
    }

    fn keep(&mut self, line: String) {
        if line.trim().is_empty() || line.len() > MAX_LINE {
            return;
        }
        self.backlog_bytes += line.len();
        self.backlog.push_back(line);
        while self.backlog_bytes > MAX_LINE {
            match self.backlog.pop_front() {
                Some(old) => self.backlog_bytes -= old.len(),
                None => break,
            }
        }
    }
}

/// The answer object when `line` is one for `id` (a board may echo the id as a number).
fn answer_to(line: &str, id: &str) -> Option<Value> {
    let v: Value = serde_json::from_str(line.trim()).ok()?;
    let echoed = match v.get("id")? {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    (echoed == id).then_some(v)
}

fn push_bounded(out: &mut String, line: &str) {
    for c in line.chars().chain(['\n']) {
        if out.len() + c.len_utf8() > MAX_LINE {
            return;
        }
        out.push(c);
    }
}

fn is_retry(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        IoKind::TimedOut | IoKind::WouldBlock | IoKind::Interrupted
    )
}

fn gone(why: &str) -> ToolError {
    ToolError::failed(format!(
        "the serial port stopped working ({why}); was the board unplugged? connect again"
    ))
}
