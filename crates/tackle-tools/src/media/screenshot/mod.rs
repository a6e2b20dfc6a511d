//! `screenshot {url}`: a PNG of a web page as headless Chromium renders it.
//!
//! The browser is the operator's (`screenshot.chromium_path`) and never reaches the network
//! itself ([`browser`]): every request it makes is answered through the host ([`intercept`]),
//! so the call's network grant and the SSRF guard decide each image, script and redirect as
//! they would a `web_fetch`. The PNG is written through the host as well (the fs grants).

mod browser;
mod intercept;
mod png;

use async_trait::async_trait;
use chromiumoxide::cdp::browser_protocol::fetch::EventRequestPaused;
use chromiumoxide::cdp::browser_protocol::page::CaptureScreenshotFormat;
use chromiumoxide::page::ScreenshotParams;
use intercept::Gate;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tackle_protocol::config::ScreenshotConfig;
use tackle_protocol::{
    ApprovalMode, Capability, Risk, Tool, ToolContext, ToolError, ToolOutput, ToolSpec,
    WriteRequest,
};

const DEFAULT_TIMEOUT_SECS: u64 = 30;
const MAX_TIMEOUT_SECS: u64 = 120;
const DEFAULT_WIDTH: u32 = 1280;
const DEFAULT_HEIGHT: u32 = 720;
const MIN_SIDE: u32 = 100;
const MAX_SIDE: u32 = 3840;
/// Where screenshots go when no `output_path` is given, inside the workspace.
const DEFAULT_DIR: &str = ".tackle/screenshots";

pub(crate) struct Screenshot {
    config: ScreenshotConfig,
}

impl Screenshot {
    pub(crate) fn new(config: ScreenshotConfig) -> Self {
        Self { config }
    }

    fn executable(&self) -> &str {
        self.config
            .chromium_path
            .as_deref()
            .filter(|p| !p.trim().is_empty())
            .unwrap_or(ScreenshotConfig::DEFAULT_CHROMIUM_PATH)
    }
}

/// Arguments of `screenshot`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The page to capture: an absolute http or https URL.
    url: String,
    /// Where to write the PNG (relative paths are inside the workspace); default
    /// `.tackle/screenshots/<unix-ms>.png`.
    #[serde(default)]
    output_path: Option<String>,
    /// Seconds the page may take to load, its images and scripts included (default 30,
    /// 1 to 120).
    #[serde(default)]
    timeout_secs: Option<u64>,
    /// Viewport width in pixels (default 1280, 100 to 3840).
    #[serde(default)]
    width: Option<u64>,
    /// Viewport height in pixels (default 720, 100 to 3840).
    #[serde(default)]
    height: Option<u64>,
}

/// The arguments checked and clamped.
struct Shot {
    url: url::Url,
    output: PathBuf,
    timeout: Duration,
    width: u32,
    height: u32,
}

fn side(value: Option<u64>, default: u32) -> u32 {
    let clamped = value
        .unwrap_or(u64::from(default))
        .clamp(u64::from(MIN_SIDE), u64::from(MAX_SIDE));
    u32::try_from(clamped).unwrap_or(default)
}

fn default_output() -> String {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or_default();
    format!("{DEFAULT_DIR}/{ms}.png")
}

impl Shot {
    fn parse(args: Args, cx: &ToolContext) -> Result<Self, ToolError> {
        let url = crate::web::net::parse_url(args.url.trim())?;
        let output = match args.output_path.as_deref().map(str::trim) {
            Some("") => {
                return Err(ToolError::invalid_arguments(
                    "`output_path` must not be empty",
                ))
            }
            Some(path) => path.to_string(),
            None => default_output(),
        };
        Ok(Self {
            url,
            output: crate::fs::resolve(cx, &output),
            timeout: Duration::from_secs(
                args.timeout_secs
                    .unwrap_or(DEFAULT_TIMEOUT_SECS)
                    .clamp(1, MAX_TIMEOUT_SECS),
            ),
            width: side(args.width, DEFAULT_WIDTH),
            height: side(args.height, DEFAULT_HEIGHT),
        })
    }

    /// The file and the page, as the policy sees them.
    fn capabilities(&self) -> [Capability; 2] {
        [
            Capability::Network {
                method: "GET".into(),
                url: self.url.to_string(),
            },
            Capability::FileWrite {
                path: self.output.clone(),
            },
        ]
    }
}

/// The path as the reply shows it: relative to the workspace when inside it.
fn shown_path(cx: &ToolContext, path: &std::path::Path) -> String {
    path.strip_prefix(cx.host().workspace())
        .unwrap_or(path)
        .display()
        .to_string()
}

#[async_trait]
impl Tool for Screenshot {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "screenshot",
            "Take a PNG screenshot of a web page (http or https) as headless Chromium renders \
             it, at the given viewport size, and save it to a file. Every request the page makes \
             is subject to the network grant.",
            "media",
        )
        .parameters(crate::args::schema::<Args>())
        .risk(Risk::Medium)
        .approval(ApprovalMode::UnlessAutoApproved)
    }

    fn planned_capabilities(&self, args: &Value, cx: &ToolContext) -> Vec<Capability> {
        let url = args.get("url").and_then(Value::as_str).unwrap_or_default();
        let output = args
            .get("output_path")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| format!("{DEFAULT_DIR}/screenshot.png"));
        vec![
            Capability::Network {
                method: "GET".into(),
                url: url.to_string(),
            },
            Capability::FileWrite {
                path: crate::fs::resolve(cx, &output),
            },
        ]
    }

    fn timeout(&self) -> Option<Duration> {
        // The longest load allowed, plus starting and stopping the browser.
        Some(Duration::from_secs(MAX_TIMEOUT_SECS + 40))
    }

    fn provenance(&self, args: &Value) -> tackle_protocol::Provenance {
        let url = args
            .get("url")
            .and_then(Value::as_str)
            .unwrap_or("a web page");
        tackle_protocol::Provenance::Untrusted(tackle_protocol::text::preview(url, 200))
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = crate::args::parse(args)?;
        let shot = Shot::parse(args, cx)?;
        // Refuse what the grants refuse before starting a browser.
        for capability in shot.capabilities() {
            let decision = cx.host().check(&capability).await;
            if decision.is_denied() {
                return Err(ToolError::denied(decision));
            }
        }
        let session =
            browser::launch(self.executable(), shot.width, shot.height, shot.timeout).await?;
        let captured = tokio::select! {
            res = tokio::time::timeout(shot.timeout + Duration::from_secs(5), capture(&session, &shot, cx)) => {
                res.unwrap_or_else(|_| Err(ToolError::new(
                    tackle_protocol::ErrorKind::Timeout,
                    format!("the page did not load within {} s", shot.timeout.as_secs()),
                )))
            }
            () = cx.cancel.cancelled() => Err(ToolError::failed("cancelled")),
        };
        session.close().await;
        let (image, final_url, refused) = captured?;
        let (width, height) = png::dimensions(&image).ok_or_else(|| {
            ToolError::failed("the browser's screenshot is not a PNG; nothing was written")
        })?;
        let report = cx
            .host()
            .write(WriteRequest {
                path: shot.output.clone(),
                data: image,
                create_dirs: true,
                expected: None,
            })
            .await?;
        let shown = shown_path(cx, &report.path);
        let mut content = format!(
            "Screenshot of {final_url} ({width}×{height}) saved to {shown} ({} bytes).",
            report.bytes_written
        );
        if refused > 0 {
            content.push_str(&format!(
                " {refused} of the page's requests were refused or failed."
            ));
        }
        Ok(ToolOutput::text(content).with_structured(json!({
            "url": final_url,
            "output_path": shown,
            "size_bytes": report.bytes_written,
            "width": width,
            "height": height,
        })))
    }
}

/// Load the page with every request answered through the host, then capture the viewport.
/// Returns the PNG, the URL that was captured and how many requests were refused.
async fn capture(
    session: &browser::Session,
    shot: &Shot,
    cx: &ToolContext,
) -> Result<(Vec<u8>, String, usize), ToolError> {
    let cdp = |e: chromiumoxide::error::CdpError| {
        ToolError::failed(format!(
            "the browser failed: {}",
            tackle_protocol::text::preview(&e.to_string(), 300)
        ))
    };
    let page = session.browser.new_page("about:blank").await.map_err(cdp)?;
    let paused = page
        .event_listener::<EventRequestPaused>()
        .await
        .map_err(cdp)?;
    let main_frame = match page.mainframe().await.map_err(cdp)? {
        Some(frame) => frame,
        None => page.target_id().as_ref().to_string().into(),
    };
    let gate = Gate::new(cx, main_frame, shot.timeout);
    let load = async {
        let loaded = page.goto(shot.url.as_str()).await;
        if let Some(refusal) = gate.refusal() {
            return Err(refusal);
        }
        loaded.map_err(|e| match e {
            chromiumoxide::error::CdpError::Timeout => ToolError::new(
                tackle_protocol::ErrorKind::Timeout,
                format!("the page did not load within {} s", shot.timeout.as_secs()),
            ),
            other => ToolError::failed(format!(
                "the page did not load: {}",
                tackle_protocol::text::preview(&other.to_string(), 300)
            )),
        })?;
        let image = page
            .screenshot(
                ScreenshotParams::builder()
                    .format(CaptureScreenshotFormat::Png)
                    .build(),
            )
            .await
            .map_err(cdp)?;
        let final_url = page
            .url()
            .await
            .ok()
            .flatten()
            .unwrap_or_else(|| shot.url.to_string());
        Ok((image, final_url, gate.refused()))
    };
    tokio::select! {
        res = load => res,
        () = gate.serve(&page, paused) => Err(ToolError::failed("the browser closed the page")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock_host::MockHost;
    use std::sync::Arc;
    use tackle_protocol::ErrorKind;

    fn parse(args: Value) -> Result<Shot, ToolError> {
        let host = Arc::new(MockHost::new());
        let cx = host.context();
        Shot::parse(crate::args::parse(args)?, &cx)
    }

    #[test]
    fn sizes_and_timeouts_are_clamped_and_defaulted() {
        let shot = parse(json!({"url": "https://example.com"})).unwrap();
        assert_eq!((shot.width, shot.height), (1280, 720));
        assert_eq!(shot.timeout, Duration::from_secs(30));
        assert!(shot
            .output
            .to_string_lossy()
            .contains(".tackle/screenshots/"));
        assert!(shot.output.to_string_lossy().ends_with(".png"));
        let shot = parse(json!({
            "url": "http://example.com", "width": 5, "height": 100000, "timeout_secs": 0
        }))
        .unwrap();
        assert_eq!((shot.width, shot.height), (100, 3840));
        assert_eq!(shot.timeout, Duration::from_secs(1));
        let shot = parse(json!({"url": "http://example.com", "timeout_secs": 9999})).unwrap();
        assert_eq!(shot.timeout, Duration::from_secs(120));
    }

    #[test]
    fn only_http_urls_and_real_paths_are_accepted() {
        for url in [
            "file:///etc/passwd",
            "javascript:alert(1)",
            "data:text/html,hi",
            "x",
        ] {
            let err = parse(json!({"url": url})).err().unwrap();
            assert_eq!(err.kind, ErrorKind::InvalidArguments, "{url}");
        }
        let err = parse(json!({"url": "http://a.example", "output_path": " "}))
            .err()
            .unwrap();
        assert_eq!(err.kind, ErrorKind::InvalidArguments);
        let err = parse(json!({"url": "http://a.example", "full_page": true}))
            .err()
            .unwrap();
        assert_eq!(err.kind, ErrorKind::InvalidArguments);
    }

    #[test]
    fn the_catalogue_entry_matches_tools_md() {
        let spec = Screenshot::new(ScreenshotConfig::default()).spec();
        assert_eq!(spec.name, "screenshot");
        assert_eq!(spec.parameters["required"], json!(["url"]));
        for key in ["url", "output_path", "timeout_secs", "width", "height"] {
            assert!(spec.parameters["properties"].get(key).is_some(), "{key}");
        }
    }

    #[test]
    fn the_browser_is_the_configured_one() {
        let tool = Screenshot::new(ScreenshotConfig::default());
        assert_eq!(tool.executable(), "/usr/bin/chromium");
        let tool = Screenshot::new(ScreenshotConfig {
            chromium_path: Some("/opt/chrome/chrome".into()),
        });
        assert_eq!(tool.executable(), "/opt/chrome/chrome");
    }
}
