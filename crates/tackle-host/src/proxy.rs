//! The filtering proxy through which a sandboxed command with a network grant reaches the
//! network. The sandbox has no network of its own; a bridge inside it (the `tackle` binary's
//! hidden `__net-bridge` command) listens on 127.0.0.1:3128 and hands each connection to this
//! proxy over a Unix socket in the session's TMPDIR. Every request is checked like a
//! `web_fetch` URL: the endpoint grant (host, path prefix, method) and the SSRF guard on every
//! address the name resolves to, and the connection goes to a checked address.
//!
//! `CONNECT host:port` (HTTPS and other TLS) is checked as `CONNECT https://host:port/`: an
//! endpoint limited to some methods or to a path prefix cannot be tunnelled, as neither can be
//! seen inside TLS. Plain `http://` requests are checked with their method and path, forwarded
//! with `Connection: close`, one request per connection.

use crate::net::{decide, PinnedResolver, Reach};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tackle_protocol::{HostError, NetworkGrant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixListener, UnixStream};

/// The port the bridge listens on inside the sandbox's own network namespace.
pub(crate) const BRIDGE_PORT: u16 = 3128;

/// The longest request head the proxy reads.
const MAX_HEAD: usize = 16 * 1024;

/// A running proxy for one command; stops (and removes its socket) when dropped.
pub(crate) struct Proxy {
    pub socket: PathBuf,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// Starts a proxy on a fresh socket in `dir` that lets through what `grant` allows.
pub(crate) fn start(
    dir: &Path,
    grant: &NetworkGrant,
    overrides: &[(String, std::net::IpAddr)],
) -> Result<Proxy, HostError> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let socket = dir.join(format!(".tackle-net-{}-{n}.sock", std::process::id()));
    let _ = std::fs::remove_file(&socket);
    let listener = UnixListener::bind(&socket)
        .map_err(|e| HostError::Io(format!("could not start the network proxy: {e}")))?;
    let reach = if grant.allow_private {
        Reach::Private
    } else {
        Reach::Public
    };
    let shared = Arc::new((grant.clone(), PinnedResolver::new(reach, overrides)));
    let task = tokio::spawn(async move {
        while let Ok((conn, _)) = listener.accept().await {
            let shared = Arc::clone(&shared);
            tokio::spawn(async move {
                let (grant, resolver) = &*shared;
                let _ = serve(conn, grant, resolver).await;
            });
        }
    });
    Ok(Proxy { socket, task })
}

/// One proxied connection: read the request head, check it, connect, relay.
async fn serve(
    mut conn: UnixStream,
    grant: &NetworkGrant,
    resolver: &PinnedResolver,
) -> std::io::Result<()> {
    let Some((head, rest)) = read_head(&mut conn).await? else {
        return refuse(
            &mut conn,
            "400 Bad Request",
            "the request head is too long or cut off",
        )
        .await;
    };
    let Some(req) = Request::parse(&head) else {
        return refuse(&mut conn, "400 Bad Request", "not an HTTP proxy request").await;
    };
    let decision = decide(&req.method, &req.url, grant);
    if !decision.is_allowed() {
        let why = format!("{} (grant a network endpoint for this tool)", decision.why);
        return refuse(&mut conn, "403 Forbidden", &why).await;
    }
    let addrs = match resolver.lookup(req.host.clone()).await {
        Ok(a) => a,
        Err(e) => return refuse(&mut conn, "403 Forbidden", &e.to_string()).await,
    };
    let mut upstream = None;
    for a in addrs {
        if let Ok(s) = TcpStream::connect((a.ip(), req.port)).await {
            upstream = Some(s);
            break;
        }
    }
    let Some(mut upstream) = upstream else {
        return refuse(
            &mut conn,
            "502 Bad Gateway",
            "the destination did not answer",
        )
        .await;
    };
    if req.method == "CONNECT" {
        conn.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            .await?;
    } else {
        upstream.write_all(req.forwarded_head().as_bytes()).await?;
    }
    upstream.write_all(&rest).await?;
    tokio::io::copy_bidirectional(&mut conn, &mut upstream).await?;
    Ok(())
}

async fn refuse(conn: &mut UnixStream, status: &str, why: &str) -> std::io::Result<()> {
    let body = format!("tackle network proxy: {why}\n");
    let reply = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    conn.write_all(reply.as_bytes()).await
}

/// The request head (up to the blank line) and whatever followed it in the same reads.
async fn read_head(conn: &mut UnixStream) -> std::io::Result<Option<(String, Vec<u8>)>> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(end + 4);
            return Ok(String::from_utf8(buf).ok().map(|h| (h, rest)));
        }
        if buf.len() > MAX_HEAD {
            return Ok(None);
        }
        let n = conn.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(chunk.get(..n).unwrap_or_default());
    }
}

/// A proxy request: `CONNECT host:port` or `METHOD http://host[:port]/path`.
struct Request {
    method: String,
    /// What the grant is checked against.
    url: String,
    host: String,
    port: u16,
    /// For plain HTTP: the path and query, and the header lines after the request line.
    path: String,
    headers: Vec<String>,
    version: String,
}

impl Request {
    fn parse(head: &str) -> Option<Self> {
        let mut lines = head.split("\r\n");
        let mut first = lines.next()?.split(' ');
        let (method, target, version) = (first.next()?, first.next()?, first.next()?);
        if first.next().is_some() || !version.starts_with("HTTP/1.") {
            return None;
        }
        let headers: Vec<String> = lines
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect();
        if method.eq_ignore_ascii_case("CONNECT") {
            let url = url::Url::parse(&format!("https://{target}/")).ok()?;
            let host = url.host_str()?.trim_matches(['[', ']']).to_string();
            let port = url.port_or_known_default()?;
            return Some(Self {
                method: "CONNECT".into(),
                url: format!("https://{target}/"),
                host,
                port,
                path: String::new(),
                headers,
                version: version.into(),
            });
        }
        let url = url::Url::parse(target).ok()?;
        if url.scheme() != "http" {
            return None;
        }
        let host = url.host_str()?.trim_matches(['[', ']']).to_string();
        let port = url.port_or_known_default()?;
        let mut path = url.path().to_string();
        if let Some(q) = url.query() {
            path.push('?');
            path.push_str(q);
        }
        Some(Self {
            method: method.to_string(),
            url: target.to_string(),
            host,
            port,
            path,
            headers,
            version: version.into(),
        })
    }

    /// The request as the origin server gets it: origin-form target, no proxy headers, one
    /// request per connection (so a second request cannot skip the check).
    fn forwarded_head(&self) -> String {
        let mut out = format!("{} {} {}\r\n", self.method, self.path, self.version);
        for h in &self.headers {
            let name = h
                .split(':')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            if matches!(
                name.as_str(),
                "proxy-connection" | "proxy-authorization" | "connection" | "keep-alive"
            ) {
                continue;
            }
            out.push_str(h);
            out.push_str("\r\n");
        }
        out.push_str("Connection: close\r\n\r\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_and_absolute_form_requests_are_read() {
        let c = Request::parse("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com\r\n\r\n");
        let c = c.expect("a CONNECT request");
        assert_eq!((c.host.as_str(), c.port), ("example.com", 443));
        assert_eq!(c.url, "https://example.com:443/");
        let g = Request::parse("GET http://127.0.0.1:8080/v1/x?y=1 HTTP/1.1\r\nHost: a\r\nProxy-Connection: keep-alive\r\n\r\n")
            .expect("a GET request");
        assert_eq!(
            (g.host.as_str(), g.port, g.path.as_str()),
            ("127.0.0.1", 8080, "/v1/x?y=1")
        );
        let fwd = g.forwarded_head();
        assert!(fwd.starts_with("GET /v1/x?y=1 HTTP/1.1\r\n"), "{fwd}");
        assert!(!fwd.contains("Proxy-Connection") && fwd.ends_with("Connection: close\r\n\r\n"));
        assert!(Request::parse("GET /relative HTTP/1.1\r\n\r\n").is_none());
        assert!(Request::parse("GET ftp://h/ HTTP/1.1\r\n\r\n").is_none());
    }
}
