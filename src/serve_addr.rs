//! The address `--http` / `daemon.mcp_http` names: an IP and port, or a host name and port
//! (`localhost:8765`) resolved here. The loopback check that follows applies to what the name
//! resolves to, so a name is never a way around it.

use crate::exit::usage;
use anyhow::Result;
use std::net::SocketAddr;

/// `addr` as a socket address; a host name is resolved, an IPv4 address preferred (what
/// `localhost` users expect to `curl`). `what` names the setting in errors.
pub async fn resolve(addr: &str, what: &str) -> Result<SocketAddr> {
    if let Ok(parsed) = addr.parse::<SocketAddr>() {
        return Ok(parsed);
    }
    let shape = || {
        usage(format!(
            "{what} {addr}: not an address like 127.0.0.1:8765 or localhost:8765"
        ))
    };
    // A port is required: `lookup_host` would otherwise fail with a less helpful message.
    let (host, port) = addr.rsplit_once(':').ok_or_else(shape)?;
    if host.is_empty() || port.parse::<u16>().is_err() {
        return Err(shape());
    }
    let found: Vec<SocketAddr> = tokio::net::lookup_host(addr)
        .await
        .map_err(|e| usage(format!("{what} {addr}: cannot resolve `{host}`: {e}")))?
        .collect();
    found
        .iter()
        .find(|a| a.is_ipv4())
        .or_else(|| found.first())
        .copied()
        .ok_or_else(|| usage(format!("{what} {addr}: `{host}` resolves to no address")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn localhost_resolves_to_loopback_and_bad_shapes_are_refused() {
        let a = resolve("localhost:8765", "--http").await.unwrap();
        assert!(a.ip().is_loopback(), "{a}");
        assert_eq!(a.port(), 8765);
        assert_eq!(
            resolve("127.0.0.1:0", "--http").await.unwrap(),
            "127.0.0.1:0".parse::<SocketAddr>().unwrap()
        );
        for bad in ["localhost", "localhost:http", ":8765", "localhost:99999"] {
            let err = resolve(bad, "--http").await.unwrap_err().to_string();
            assert!(err.contains("localhost:8765"), "{bad}: {err}");
        }
    }
}
