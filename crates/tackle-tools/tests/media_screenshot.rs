//! `screenshot` end to end: a real headless Chromium behind the real host, in front of local
//! servers. Every request of the page must be decided by the call's network grant: a server
//! the grant does not name must never see a connection, whatever the page embeds.
//!
//! Needs Chromium at `/usr/bin/chromium` (`.ci/browser-peers.sh` installs it); without it the
//! browser tests skip and say so.

#![cfg(feature = "screenshot")]

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tackle_host::{HostConfig, NativeHostProvider};
use tackle_protocol::config::ScreenshotConfig;
use tackle_protocol::{
    CallScope, Endpoint, ErrorKind, Grants, HostProvider, NetworkGrant, Tool, ToolContext,
    ToolError, ToolOutput,
};
use tackle_tools::media::{extension, MediaSettings};
use wiremock::matchers::path;
use wiremock::{Mock, MockServer, ResponseTemplate};

const CHROMIUM: &str = "/usr/bin/chromium";

fn chromium_missing() -> bool {
    if Path::new(CHROMIUM).exists() {
        return false;
    }
    eprintln!("skipped: no Chromium at {CHROMIUM} (run .ci/browser-peers.sh to install it)");
    true
}

struct Env {
    workspace: tempfile::TempDir,
    provider: NativeHostProvider,
    tool: Arc<dyn Tool>,
}

impl Env {
    fn new() -> Self {
        let workspace = tempfile::tempdir().unwrap();
        let provider = NativeHostProvider::new(HostConfig::new(workspace.path().join(".state")));
        let tool = extension(MediaSettings {
            screenshot: ScreenshotConfig {
                chromium_path: Some(CHROMIUM.into()),
            },
            ..MediaSettings::default()
        })
        .tools()
        .into_iter()
        .find(|t| t.spec().name == "screenshot")
        .unwrap();
        Self {
            workspace,
            provider,
            tool,
        }
    }

    fn root(&self) -> PathBuf {
        self.workspace.path().canonicalize().unwrap()
    }

    async fn call(&self, args: Value, grants: Grants) -> Result<ToolOutput, ToolError> {
        let scope = CallScope {
            tool: "screenshot".into(),
            session_id: "screenshot-e2e".into(),
            agent: "default".into(),
            workspace: self.root(),
            grants,
            cancel: Default::default(),
            approved: false,
        };
        let cx = ToolContext::new(&scope, "test", self.provider.scoped(&scope));
        self.tool.call(args, &cx).await
    }
}

/// Only `origin` (host:port), private addresses allowed so that a loopback server can be named.
fn only(origin: &str) -> Grants {
    Grants {
        network: Some(NetworkGrant {
            endpoints: vec![Endpoint {
                host: origin.into(),
                path_prefix: None,
                methods: None,
            }],
            allow_private: true,
        }),
        ..Grants::default()
    }
}

fn origin(server: &MockServer) -> String {
    server.address().to_string()
}

/// A TCP listener that counts every connection made to it and answers none of them usefully:
/// the server the grant does not name.
async fn counting_server() -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                use tokio::io::AsyncWriteExt;
                let body = "GIF89a";
                let reply = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: image/gif\r\nContent-Length: {}\r\n\
                     Access-Control-Allow-Origin: *\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(reply.as_bytes()).await;
            });
        }
    });
    (addr, hits)
}

fn html(body: String) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(body.into_bytes(), "text/html; charset=utf-8")
}

const SVG: &str = r#"<svg xmlns="http://www.w3.org/2000/svg" width="40" height="40"><rect width="40" height="40" fill="blue"/></svg>"#;

async fn page_server(page: String) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(path("/page"))
        .respond_with(html(page))
        .mount(&server)
        .await;
    Mock::given(path("/ok.svg"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(SVG, "image/svg+xml"))
        .mount(&server)
        .await;
    server
}

/// Width and height from a PNG's IHDR chunk, after checking the signature.
fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert!(
        bytes.len() > 24,
        "too short for a PNG: {} bytes",
        bytes.len()
    );
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    assert_eq!(&bytes[12..16], b"IHDR");
    let w = u32::from_be_bytes([bytes[16], bytes[17], bytes[18], bytes[19]]);
    let h = u32::from_be_bytes([bytes[20], bytes[21], bytes[22], bytes[23]]);
    (w, h)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_granted_page_is_captured_at_the_viewport_size() {
    if chromium_missing() {
        return;
    }
    let page = r#"<!doctype html><html><body style="background:#c00">
        <h1>Hello</h1><img src="/ok.svg"></body></html>"#;
    let server = page_server(page.to_string()).await;
    let env = Env::new();
    let url = format!("{}/page", server.uri());
    let out = env
        .call(
            json!({"url": url, "width": 640, "height": 480, "output_path": "shots/a.png"}),
            only(&origin(&server)),
        )
        .await
        .unwrap();
    let s = out.structured.clone().unwrap();
    assert_eq!(s["output_path"], "shots/a.png", "{s}");
    assert_eq!(
        (s["width"].as_u64(), s["height"].as_u64()),
        (Some(640), Some(480))
    );
    assert_eq!(s["url"], url);
    let bytes = std::fs::read(env.root().join("shots/a.png")).unwrap();
    assert_eq!(s["size_bytes"].as_u64(), Some(bytes.len() as u64));
    assert_eq!(png_size(&bytes), (640, 480));
    // The page's own image came through the host: the interception answers, not only refuses.
    let asked: Vec<String> = server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .map(|r| r.url.path().to_string())
        .collect();
    assert!(asked.contains(&"/ok.svg".to_string()), "{asked:?}");

    // Without an output path it lands under .tackle/screenshots, at the default 1280×720.
    let out = env
        .call(json!({"url": url}), only(&origin(&server)))
        .await
        .unwrap();
    let s = out.structured.unwrap();
    let shown = s["output_path"].as_str().unwrap_or_default().to_string();
    assert!(
        shown.starts_with(".tackle/screenshots/") && shown.ends_with(".png"),
        "{shown}"
    );
    let bytes = std::fs::read(env.root().join(&shown)).unwrap();
    assert_eq!(png_size(&bytes), (1280, 720));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_page_embeds_is_decided_by_the_grant_not_the_browser() {
    if chromium_missing() {
        return;
    }
    let (other, hits) = counting_server().await;
    // Every way a page reaches out: images, style, script, frame, fetch, beacon, WebSocket,
    // a preconnect hint, a form target, and a metadata endpoint.
    let page = format!(
        r#"<!doctype html><html><head>
        <link rel="preconnect" href="http://{other}">
        <link rel="dns-prefetch" href="http://{other}">
        <link rel="stylesheet" href="http://{other}/style.css">
        <script src="http://{other}/app.js"></script>
        </head><body style="background:#0a0">
        <img src="http://169.254.169.254/latest/meta-data/">
        <img src="http://127.0.0.1:{port}/x.png">
        <img src="http://localhost:{port}/y.png">
        <img src="http://[::ffff:127.0.0.1]:{port}/z.png">
        <img src="/ok.svg">
        <img src="/bounce.png">
        <iframe src="http://{other}/frame"></iframe>
        <script>
          fetch("http://{other}/fetch").catch(() => {{}});
          try {{ new WebSocket("ws://{other}/ws"); }} catch (e) {{}}
          try {{ navigator.sendBeacon("http://{other}/beacon", "x"); }} catch (e) {{}}
          new Image().src = "http://{other}/js.png";
        </script></body></html>"#,
        port = other.rsplit(':').next().unwrap_or_default(),
    );
    let server = page_server(page).await;
    // A granted URL that redirects an image to the ungranted server: the hop is checked too.
    Mock::given(path("/bounce.png"))
        .respond_with(
            ResponseTemplate::new(302)
                .insert_header("Location", format!("http://{other}/bounced.png")),
        )
        .mount(&server)
        .await;
    let env = Env::new();
    let out = env
        .call(
            json!({"url": format!("{}/page", server.uri()), "output_path": "b.png"}),
            only(&origin(&server)),
        )
        .await
        .unwrap();
    let bytes = std::fs::read(env.root().join("b.png")).unwrap();
    assert_eq!(png_size(&bytes), (1280, 720));
    // Give late requests (the socket, the beacon) time to arrive before counting.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "the ungranted server was reached"
    );
    assert!(out.content.contains("refused"), "{}", out.content);
    let asked: Vec<String> = server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .map(|r| r.url.path().to_string())
        .collect();
    assert!(asked.contains(&"/ok.svg".to_string()), "{asked:?}");
    assert!(asked.contains(&"/bounce.png".to_string()), "{asked:?}");
}

/// `/hop/N` redirects to `/hop/N-1`; `/hop/0` is the page.
async fn redirect_server() -> MockServer {
    let server = MockServer::start().await;
    for n in 1..=8 {
        Mock::given(path(format!("/hop/{n}")))
            .respond_with(
                ResponseTemplate::new(302).insert_header("Location", format!("/hop/{}", n - 1)),
            )
            .mount(&server)
            .await;
    }
    Mock::given(path("/hop/0"))
        .respond_with(html("<html><body>arrived</body></html>".into()))
        .mount(&server)
        .await;
    server
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn six_document_redirects_are_refused_and_five_are_followed() {
    if chromium_missing() {
        return;
    }
    let server = redirect_server().await;
    let env = Env::new();
    let grants = only(&origin(&server));
    let err = env
        .call(
            json!({"url": format!("{}/hop/6", server.uri()), "output_path": "six.png"}),
            grants.clone(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Failed, "{err:?}");
    assert!(
        err.message.contains("redirected more than 5"),
        "{}",
        err.message
    );
    assert!(!env.root().join("six.png").exists());
    let asked: Vec<String> = server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .map(|r| r.url.path().to_string())
        .collect();
    assert!(!asked.contains(&"/hop/0".to_string()), "{asked:?}");

    let out = env
        .call(
            json!({"url": format!("{}/hop/5", server.uri()), "output_path": "five.png"}),
            grants,
        )
        .await
        .unwrap();
    let s = out.structured.unwrap();
    assert_eq!(s["url"], format!("{}/hop/0", server.uri()));
    assert!(env.root().join("five.png").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_to_an_ungranted_server_is_refused_by_the_host() {
    if chromium_missing() {
        return;
    }
    let (other, hits) = counting_server().await;
    let server = MockServer::start().await;
    Mock::given(path("/away"))
        .respond_with(
            ResponseTemplate::new(302).insert_header("Location", format!("http://{other}/in")),
        )
        .mount(&server)
        .await;
    let env = Env::new();
    let err = env
        .call(
            json!({"url": format!("{}/away", server.uri()), "output_path": "away.png"}),
            only(&origin(&server)),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Denied, "{err:?}");
    assert!(
        err.message.contains("matches no allowed endpoint"),
        "{}",
        err.message
    );
    assert_eq!(hits.load(Ordering::SeqCst), 0);
    assert!(!env.root().join("away.png").exists());
}

#[tokio::test]
async fn a_non_http_url_is_refused() {
    let env = Env::new();
    for url in [
        "file:///etc/passwd",
        "javascript:alert(1)",
        "chrome://settings",
        "ftp://a/b",
    ] {
        let err = env
            .call(json!({"url": url}), only("127.0.0.1"))
            .await
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidArguments, "{url}: {err:?}");
    }
}

#[tokio::test]
async fn an_output_path_outside_the_workspace_is_refused_before_any_request() {
    let server = page_server("<html></html>".into()).await;
    let env = Env::new();
    let outside = env.root().with_extension("outside.png");
    for output in [outside.display().to_string(), "../escape.png".to_string()] {
        let err = env
            .call(
                json!({"url": format!("{}/page", server.uri()), "output_path": output}),
                only(&origin(&server)),
            )
            .await
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::Denied, "{output}: {err:?}");
    }
    assert!(!outside.exists());
    let asked = server.received_requests().await.unwrap_or_default();
    assert!(asked.is_empty(), "{asked:?}");
}

#[tokio::test]
async fn an_ungranted_page_is_refused_before_the_browser_starts() {
    let server = page_server("<html></html>".into()).await;
    let env = Env::new();
    let err = env
        .call(
            json!({"url": format!("{}/page", server.uri())}),
            only("127.0.0.1:1"),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Denied, "{err:?}");
    let asked = server.received_requests().await.unwrap_or_default();
    assert!(asked.is_empty(), "{asked:?}");
}

#[tokio::test]
async fn a_missing_browser_is_reported_as_unavailable() {
    let server = page_server("<html></html>".into()).await;
    let workspace = tempfile::tempdir().unwrap();
    let provider = NativeHostProvider::new(HostConfig::new(workspace.path().join(".state")));
    let tool = extension(MediaSettings {
        screenshot: ScreenshotConfig {
            chromium_path: Some("/nonexistent/chromium".into()),
        },
        ..MediaSettings::default()
    })
    .tools()
    .into_iter()
    .find(|t| t.spec().name == "screenshot")
    .unwrap();
    let scope = CallScope {
        tool: "screenshot".into(),
        session_id: "screenshot-e2e".into(),
        agent: "default".into(),
        workspace: workspace.path().canonicalize().unwrap(),
        grants: only(&origin(&server)),
        cancel: Default::default(),
        approved: false,
    };
    let cx = ToolContext::new(&scope, "test", provider.scoped(&scope));
    let err = tool
        .call(json!({"url": format!("{}/page", server.uri())}), &cx)
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Failed);
    assert!(err.message.contains("unavailable"), "{}", err.message);
    assert!(
        err.message.contains("screenshot.chromium_path"),
        "{}",
        err.message
    );
}
