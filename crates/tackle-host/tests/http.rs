//! The HTTP client against a tiny loopback server: SSRF guard, hops, caps, timeouts.

mod common;

use common::{is_denied, Fixture};
use std::time::Duration;
use tackle_protocol::{Endpoint, Grants, HostError, HttpRequest, NetworkGrant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A loopback HTTP/1.1 server with a fixed set of routes; one response per connection.
async fn server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let n = sock.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]).to_string();
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
                let resp = route(&path, port).await;
                let _ = sock.write_all(&resp).await;
                let _ = sock.shutdown().await;
            });
        }
    });
    port
}

async fn route(path: &str, port: u16) -> Vec<u8> {
    let redirect = |to: String| {
        format!("HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    };
    let ok = |body: &str| {
        format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    };
    let text = match path {
        "/hello" | "/allowed/ok" => ok("hello"),
        "/secret" => ok("secret"),
        "/allowed/redirect" => redirect("/secret".into()),
        "/allowed/chain" => redirect(format!("http://127.0.0.1:{port}/allowed/ok")),
        "/loop" => redirect("/loop".into()),
        "/big" => ok(&"x".repeat(100_000)),
        "/slow" => {
            tokio::time::sleep(Duration::from_secs(5)).await;
            ok("late")
        }
        _ => "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_string(),
    };
    text.into_bytes()
}

fn get(url: String) -> HttpRequest {
    HttpRequest {
        method: "GET".into(),
        url,
        headers: vec![("X-Test".into(), "1".into())],
        body: None,
        max_bytes: 1024 * 1024,
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
async fn default_grant_denies_loopback() {
    let port = server().await;
    let f = Fixture::new();
    let host = f.host(Grants::default());
    assert!(is_denied(
        &host
            .http(get(format!("http://127.0.0.1:{port}/hello")))
            .await
    ));
    assert!(is_denied(
        &host
            .http(get(format!("http://localhost:{port}/hello")))
            .await
    ));
    assert!(is_denied(
        &host
            .http(get(format!("http://[::ffff:127.0.0.1]:{port}/hello")))
            .await
    ));
}

#[tokio::test]
async fn numeric_ipv4_spelling_is_denied() {
    let port = server().await;
    let f = Fixture::new();
    let r = f
        .host(Grants::default())
        .http(get(format!("http://2130706433:{port}/hello")))
        .await;
    assert!(is_denied(&r), "{r:?}");
}

#[tokio::test]
async fn allow_private_reaches_loopback() {
    let port = server().await;
    let f = Fixture::new();
    let resp = f
        .host(private())
        .http(get(format!("http://127.0.0.1:{port}/hello")))
        .await
        .unwrap();
    assert_eq!(resp.status, 200);
    assert_eq!(resp.body, b"hello");
    assert!(!resp.truncated);
}

#[tokio::test]
async fn redirect_to_a_disallowed_path_is_refused_at_the_hop() {
    let port = server().await;
    let f = Fixture::new();
    let grants = Grants {
        network: Some(NetworkGrant {
            endpoints: vec![Endpoint {
                host: "127.0.0.1".into(),
                path_prefix: Some("/allowed".into()),
                methods: None,
            }],
            allow_private: true,
        }),
        ..Grants::default()
    };
    let host = f.host(grants);
    match host
        .http(get(format!("http://127.0.0.1:{port}/allowed/redirect")))
        .await
    {
        Err(HostError::Denied(d)) => {
            assert!(
                d.why.contains(&format!("http://127.0.0.1:{port}/secret")),
                "{}",
                d.why
            )
        }
        other => panic!("expected a denial at the hop, got {other:?}"),
    }
    let resp = host
        .http(get(format!("http://127.0.0.1:{port}/allowed/chain")))
        .await
        .unwrap();
    assert_eq!(
        resp.final_url,
        format!("http://127.0.0.1:{port}/allowed/ok")
    );
    assert_eq!(
        resp.redirects,
        vec![format!("http://127.0.0.1:{port}/allowed/ok")]
    );
}

#[tokio::test]
async fn redirects_are_returned_unfollowed_when_asked() {
    let port = server().await;
    let f = Fixture::new();
    let mut req = get(format!("http://127.0.0.1:{port}/allowed/redirect"));
    req.follow_redirects = false;
    let resp = f.host(private()).http(req).await.unwrap();
    assert_eq!(resp.status, 302);
    assert_eq!(resp.header("location"), Some("/secret"));
}

#[tokio::test]
async fn a_redirect_loop_stops_after_ten_hops() {
    let port = server().await;
    let f = Fixture::new();
    let r = f
        .host(private())
        .http(get(format!("http://127.0.0.1:{port}/loop")))
        .await;
    assert!(
        matches!(&r, Err(HostError::Network(m)) if m.contains("redirects")),
        "{r:?}"
    );
}

#[tokio::test]
async fn body_over_the_cap_is_truncated() {
    let port = server().await;
    let f = Fixture::new();
    let mut req = get(format!("http://127.0.0.1:{port}/big"));
    req.max_bytes = 1000;
    let resp = f.host(private()).http(req).await.unwrap();
    assert_eq!(resp.body.len(), 1000);
    assert!(resp.truncated);
}

#[tokio::test]
async fn a_slow_server_times_out() {
    let port = server().await;
    let f = Fixture::new();
    let mut req = get(format!("http://127.0.0.1:{port}/slow"));
    req.timeout = Duration::from_millis(300);
    let started = std::time::Instant::now();
    let r = f.host(private()).http(req).await;
    assert!(matches!(r, Err(HostError::Timeout(_))), "{r:?}");
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn operator_destination_is_trusted_but_its_redirects_are_checked() {
    let port = server().await;
    let f = Fixture::new();
    let mut config = f.config();
    config.operator_hosts = vec![format!("http://127.0.0.1:{port}")];
    let host = f.host_with(config, Grants::default());
    let mut req = get(format!("http://127.0.0.1:{port}/hello"));
    req.operator_configured = true;
    assert_eq!(host.http(req).await.unwrap().body, b"hello");
    let mut req = get(format!("http://127.0.0.1:{port}/allowed/redirect"));
    req.operator_configured = true;
    let r = host.http(req).await;
    assert!(
        matches!(&r, Err(HostError::Denied(d)) if d.why.contains("/secret")),
        "{r:?}"
    );
}

#[tokio::test]
async fn operator_flag_on_an_unlisted_url_is_checked_like_a_model_url() {
    let port = server().await;
    let f = Fixture::new();
    let mut req = get(format!("http://127.0.0.1:{port}/hello"));
    req.operator_configured = true;
    assert!(is_denied(&f.host(Grants::default()).http(req).await));
}

#[tokio::test]
async fn non_http_schemes_and_bad_methods_are_invalid() {
    let f = Fixture::new();
    let host = f.host(private());
    let r = host.http(get("file:///etc/passwd".into())).await;
    assert!(
        matches!(r, Err(HostError::Invalid(_)) | Err(HostError::Denied(_))),
        "{r:?}"
    );
    let mut req = get("http://127.0.0.1:1/".into());
    req.method = "GE T".into();
    assert!(matches!(host.http(req).await, Err(HostError::Invalid(_))));
}

#[tokio::test]
async fn a_public_looking_name_that_resolves_to_loopback_is_denied_at_connect() {
    let port = server().await;
    let f = Fixture::new();
    let mut config = f.config();
    config.dns_overrides = vec![("rebind.example.com".into(), "127.0.0.1".parse().unwrap())];
    let url = format!("http://rebind.example.com:{port}/hello");
    let r = f
        .host_with(config.clone(), Grants::default())
        .http(get(url.clone()))
        .await;
    match r {
        Err(HostError::Denied(d)) => assert!(d.why.contains("127.0.0.1"), "{}", d.why),
        other => panic!("expected a denial naming the address, got {other:?}"),
    }
    // The same name under allow_private connects, to the pinned address.
    let resp = f.host_with(config, private()).http(get(url)).await.unwrap();
    assert_eq!(resp.body, b"hello");
}

#[tokio::test]
async fn tools_cannot_set_host_or_framing_headers() {
    let port = server().await;
    let f = Fixture::new();
    let host = f.host(private());
    for (k, v) in [
        ("Host", "internal.example"),
        ("Transfer-Encoding", "chunked"),
        ("bad header", "x"),
    ] {
        let mut req = get(format!("http://127.0.0.1:{port}/hello"));
        req.headers = vec![(k.into(), v.into())];
        let r = host.http(req).await;
        assert!(matches!(r, Err(HostError::Invalid(_))), "{k}: {r:?}");
    }
}
