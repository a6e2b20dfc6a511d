//! Chat channels in a build without the `channels` feature (the edge build,
//! docs/decisions/0039-edge-build.md): the daemon's and `tackle doctor`'s calls into
//! src/channels. A channel with an `inbound:` section stops the daemon's start with a usage
//! error that names the feature; sending to a channel (the `message` tool) is unaffected.

use anyhow::Result;
use std::path::Path;
use std::time::Duration;
use tackle_protocol::config::{ChannelConfig, Config};
use tackle_store::Store;
use tokio_util::sync::CancellationToken;

/// What the daemon and doctor say about a channel they would read.
pub const NOT_BUILT: &str = "this build reads no chat channels (Telegram, Matrix, Slack `inbound:`): build with the `channels` feature (cargo build --release --features channels)";

/// No channel runs in this build.
pub struct Channels;

pub fn start(
    _global: &crate::cli::Global,
    config: &Config,
    _store: &Store,
    _stop: &CancellationToken,
) -> Result<Channels> {
    match config.channels.iter().find(|(_, e)| e.inbound().is_some()) {
        Some((name, _)) => Err(crate::exit::usage(format!(
            "channels.{name}.inbound: {NOT_BUILT}"
        ))),
        None => Ok(Channels),
    }
}

impl Channels {
    pub async fn finish(self, _grace: Duration) {}
}

/// Never built: no value of it exists.
pub enum Unreadable {}

impl Unreadable {
    pub async fn whoami(&self) -> Result<String, std::convert::Infallible> {
        match *self {}
    }
}

pub(crate) fn open(_name: &str, _entry: &ChannelConfig, _state_dir: &Path) -> Result<Unreadable> {
    Err(anyhow::anyhow!(NOT_BUILT))
}
