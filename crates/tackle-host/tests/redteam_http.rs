//! Adversarial HTTP: redirects into private space in every spelling, names that resolve to
//! both public and private addresses, and URL text that parsers read differently.

mod common;

use common::Fixture;
use std::net::IpAddr;
use std::time::Duration;
use tackle_protocol::{Grants, HostError, HttpRequest, NetworkGrant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A loopback server: `/hello` answers `hello`; `/r/<percent-encoded URL>` redirects there.
async fn server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let n = sock.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(buf.get(..n).unwrap_or_default()).to_string();
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
                let echo = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{head}",
                    head.len()
                );
                let resp = match path.strip_prefix("/r/") {
                    _ if path == "/echo" => echo,
                    Some(to) => format!(
                        "HTTP/1.1 302 Found\r\nLocation: {}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                        decode(to)
                    ),
                    None => "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"
                        .to_string(),
                };
                let _ = sock.write_all(resp.as_bytes()).await;
                let _ = sock.shutdown().await;
            });
        }
    });
    port
}

fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let hex = s
            .get(i + 1..i + 3)
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn encode(s: &str) -> String {
    s.bytes().map(|b| format!("%{b:02X}")).collect()
}

fn get(url: String) -> HttpRequest {
    HttpRequest {
        method: "GET".into(),
        url,
        headers: Vec::new(),
        body: None,
        max_bytes: 1024,
        timeout: Duration::from_secs(5),
        follow_redirects: true,
        operator_configured: false,
    }
}

fn private() -> Grants {
    Grants {
        network: Some(NetworkGrant {
            endpoints: Vec::new(),
            allow_private: true,
        }),
        ..Grants::default()
    }
}

#[tokio::test]
async fn redirects_into_loopback_in_any_spelling_are_refused_at_the_hop() {
    let port = server().await;
    let f = Fixture::new();
    let mut config = f.config();
    config.operator_hosts = vec![format!("http://127.0.0.1:{port}")];
    config.dns_overrides = vec![("rebind.test".into(), "127.0.0.1".parse().unwrap())];
    let host = f.host_with(config, Grants::default());
    for to in [
        format!("http://0x7f000001:{port}/hello"),
        format!("http://2130706433:{port}/hello"),
        format!("http://127.1:{port}/hello"),
        format!("http://0:{port}/hello"),
        format!("//127.0.0.1:{port}/hello"),
        "/hello".to_string(),
        "hello".to_string(),
        format!("HTTP://127.0.0.1:{port}/hello"),
        format!("http://[::ffff:127.0.0.1]:{port}/hello"),
        format!("http://[::ffff:7f00:1]:{port}/hello"),
        format!("http://localhost:{port}/hello"),
        format!("http://127.0.0.1.nip.io:{port}/hello"),
        format!("http://rebind.test:{port}/hello"),
        format!("http:\\\\127.0.0.1:{port}\\hello"),
        format!("http://a@127.0.0.1:{port}/hello"),
    ] {
        let mut req = get(format!("http://127.0.0.1:{port}/r/{}", encode(&to)));
        req.operator_configured = true;
        let r = host.http(req).await;
        assert!(matches!(r, Err(HostError::Denied(_))), "{to}: {r:?}");
    }
    for to in [
        "file:///etc/passwd",
        "gopher://127.0.0.1:70/",
        "ftp://127.0.0.1/",
    ] {
        let mut req = get(format!("http://127.0.0.1:{port}/r/{}", encode(to)));
        req.operator_configured = true;
        let r = host.http(req).await;
        assert!(
            matches!(r, Err(HostError::Denied(_)) | Err(HostError::Invalid(_))),
            "{to}: {r:?}"
        );
    }
}

#[tokio::test]
async fn a_name_resolving_to_public_and_private_addresses_is_refused_before_connecting() {
    let port = server().await;
    let f = Fixture::new();
    let public: IpAddr = "93.184.216.34".parse().unwrap();
    let loopback: IpAddr = "127.0.0.1".parse().unwrap();
    let mapped: IpAddr = "::ffff:127.0.0.1".parse().unwrap();
    for overrides in [
        vec![
            ("mixed.test".to_string(), public),
            ("mixed.test".to_string(), loopback),
        ],
        vec![
            ("mixed.test".to_string(), loopback),
            ("mixed.test".to_string(), public),
        ],
        vec![("mixed.test".to_string(), mapped)],
        vec![("MIXED.test".to_string(), loopback)],
    ] {
        let mut config = f.config();
        config.dns_overrides = overrides.clone();
        let r = f
            .host_with(config, Grants::default())
            .http(get(format!("http://mixed.test:{port}/hello")))
            .await;
        match r {
            Err(HostError::Denied(d)) => assert!(d.why.contains("127.0.0.1"), "{}", d.why),
            other => panic!("{overrides:?}: expected a denial, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn the_unspecified_address_stays_refused_under_allow_private() {
    let port = server().await;
    let f = Fixture::new();
    let mut config = f.config();
    config.dns_overrides = vec![("zero.test".into(), "0.0.0.0".parse().unwrap())];
    let host = f.host_with(config, private());
    for url in [
        format!("http://zero.test:{port}/hello"),
        format!("http://0.0.0.0:{port}/hello"),
        format!("http://0:{port}/hello"),
        format!("http://[::]:{port}/hello"),
        format!("http://[::ffff:0.0.0.0]:{port}/hello"),
    ] {
        let r = host.http(get(url.clone())).await;
        assert!(matches!(r, Err(HostError::Denied(_))), "{url}: {r:?}");
    }
}

#[tokio::test]
async fn url_text_that_parsers_read_differently_is_refused_as_written() {
    let port = server().await;
    let f = Fixture::new();
    let host = f.host(private());
    for url in [
        format!("http://127.0.0.1:{port}/hel\tlo"),
        format!("http://127.0.0.1:{port}/hello\n"),
        format!("http://evil.test\\@127.0.0.1:{port}/hello"),
        format!("http://127.0.0.1:{port}?@evil.test/hello"),
    ] {
        let r = host.http(get(url.clone())).await;
        assert!(matches!(r, Err(HostError::Denied(_))), "{url:?}: {r:?}");
    }
    let ok = host
        .http(get(format!("http://127.0.0.1:{port}/hello")))
        .await
        .unwrap();
    assert_eq!(ok.body, b"hello");
}

#[tokio::test]
async fn the_operator_flag_trusts_only_the_exact_origin_written_in_the_config() {
    let port = server().await;
    let f = Fixture::new();
    let mut config = f.config();
    config.operator_hosts = vec![format!("http://127.0.0.1:{port}/search")];
    let host = f.host_with(config, Grants::default());
    for url in [
        format!("http://localhost:{port}/hello"),
        format!("https://127.0.0.1:{port}/hello"),
        format!("http://127.0.0.1:{}/hello", port.wrapping_add(1)),
        format!("http://127.0.0.2:{port}/hello"),
        format!("http://[::1]:{port}/hello"),
    ] {
        let mut req = get(url.clone());
        req.operator_configured = true;
        let r = host.http(req).await;
        assert!(matches!(r, Err(HostError::Denied(_))), "{url}: {r:?}");
    }
    // Another spelling of the same origin is the same destination.
    let mut req = get(format!("http://0x7f000001:{port}/hello"));
    req.operator_configured = true;
    assert_eq!(host.http(req).await.unwrap().body, b"hello");
}

#[tokio::test]
async fn credential_headers_never_follow_a_redirect_to_another_origin() {
    let port = server().await;
    let f = Fixture::new();
    let host = f.host(private());
    let headers: Vec<(String, String)> = [
        ("Authorization", "Bearer tok-a"),
        ("X-Api-Key", "tok-b"),
        ("api-key", "tok-c"),
        ("X-Auth-Token", "tok-d"),
        ("Cookie", "sid=tok-e"),
        ("X-Goog-Api-Key", "tok-f"),
        ("Accept", "text/plain"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let send = |to: String| {
        let mut req = get(format!("http://127.0.0.1:{port}/r/{}", encode(&to)));
        req.headers = headers.clone();
        req.max_bytes = 64 * 1024;
        host.http(req)
    };
    let other = String::from_utf8(
        send(format!("http://localhost:{port}/echo"))
            .await
            .unwrap()
            .body,
    )
    .unwrap();
    assert!(!other.contains("tok-"), "{other}");
    assert!(
        other.to_ascii_lowercase().contains("accept: text/plain"),
        "{other}"
    );
    let same = String::from_utf8(
        send(format!("http://127.0.0.1:{port}/echo"))
            .await
            .unwrap()
            .body,
    )
    .unwrap();
    assert!(same.contains("tok-b") && same.contains("tok-a"), "{same}");
}

#[tokio::test]
async fn headers_that_override_the_checked_method_or_path_are_refused() {
    let port = server().await;
    let f = Fixture::new();
    let host = f.host(private());
    for (k, v) in [
        ("X-HTTP-Method-Override", "DELETE"),
        ("x-http-method", "PUT"),
        ("X-Method-Override", "DELETE"),
        ("X-Original-URL", "/admin"),
        ("X-Rewrite-URL", "/admin"),
    ] {
        let mut req = get(format!("http://127.0.0.1:{port}/hello"));
        req.headers = vec![(k.into(), v.into())];
        let r = host.http(req).await;
        assert!(matches!(r, Err(HostError::Invalid(_))), "{k}: {r:?}");
    }
}
