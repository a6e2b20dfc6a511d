//! The HTTP API in a build without the `gateway` feature (the edge build,
//! docs/decisions/0039-edge-build.md): the daemon's calls into src/gateway, each refusing.
//! A `gateway:` section or `tackle daemon --http` stops the start with a usage error that
//! names the feature, rather than a daemon that silently serves nothing.

use crate::cli::Global;
use anyhow::Result;
use std::sync::Arc;
use std::time::Duration;
use tackle_protocol::config::{Config, GatewayConfig};
use tackle_store::Store;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// What the daemon says when asked for the API.
pub const NOT_BUILT: &str = "this build has no gateway (the HTTP API and console of `gateway:` and `tackle daemon --http`): build with the `gateway` feature (cargo build --release --features gateway)";

/// Never built: no value of it exists, so [`serve`] is never reached.
pub enum Gateway {}

pub async fn bind(_cfg: &GatewayConfig) -> Result<TcpListener> {
    Err(crate::exit::usage(format!("tackle daemon: {NOT_BUILT}")))
}

pub fn gateway(
    _global: &Global,
    _config: &Config,
    _cfg: &GatewayConfig,
    _addr: std::net::SocketAddr,
    _store: Store,
) -> Result<Arc<Gateway>> {
    Err(crate::exit::usage(format!("tackle daemon: {NOT_BUILT}")))
}

pub async fn serve(
    gw: Arc<Gateway>,
    _listener: TcpListener,
    _max_body_bytes: usize,
    _stop: CancellationToken,
    _grace: Duration,
) -> Result<()> {
    match *gw {}
}
