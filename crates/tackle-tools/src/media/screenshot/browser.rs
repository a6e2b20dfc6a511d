//! Starting and stopping the headless Chromium of one `screenshot` call.
//!
//! The browser is launched so that it cannot reach the network on its own (docs/decisions/0017):
//! every proxied scheme goes to a dead proxy on loopback (loopback included, so a page cannot
//! reach local services around it), host names never resolve, WebRTC may not use UDP, and the
//! background services that phone home are off. What the page needs is answered through the
//! host by [`super::intercept`]; anything that slips past interception dies at the proxy.

use chromiumoxide::browser::{Browser, BrowserConfig};
use chromiumoxide::handler::viewport::Viewport;
use chromiumoxide::Handler;
use futures::StreamExt;
use std::time::Duration;
use tackle_protocol::ToolError;

/// Where every proxied request of the browser goes: nothing useful listens on the discard port.
const DEAD_PROXY: &str = "127.0.0.1:9";

/// Flags that keep the browser off the network and quiet. Unknown feature names are ignored by
/// Chromium, so naming features of several versions is harmless.
const FLAGS: &[(&str, &str)] = &[
    ("proxy-server", DEAD_PROXY),
    // Without this Chromium connects to loopback directly, around the proxy.
    ("proxy-bypass-list", "<-loopback>"),
    // A name the proxy would not see (it is never asked) must not be resolved either.
    ("host-resolver-rules", "MAP * ~NOTFOUND"),
    (
        "force-webrtc-ip-handling-policy",
        "disable_non_proxied_udp",
    ),
    (
        "disable-features",
        "NetworkPrediction,DnsOverHttps,AsyncDns,Prefetch,SpeculationRulesPrefetchProxy,\
         PrefetchProxy,PreloadMediaEngagementData,OptimizationHints,OptimizationGuideModelDownloading,\
         Translate,MediaRouter,DialMediaRouteProvider,AutofillServerCommunication,\
         CertificateTransparencyComponentUpdater,HttpsUpgrades,InterestFeedContentSuggestions",
    ),
    ("password-store", "basic"),
    ("force-color-profile", "srgb"),
    ("lang", "en-US"),
];

const SWITCHES: &[&str] = &[
    "disable-gpu",
    "disable-quic",
    "no-first-run",
    "no-default-browser-check",
    "no-pings",
    "dns-prefetch-disable",
    "disable-background-networking",
    "disable-component-update",
    "disable-sync",
    "disable-default-apps",
    "disable-domain-reliability",
    "disable-breakpad",
    "disable-client-side-phishing-detection",
    "disable-dev-shm-usage",
    "disable-notifications",
    "deny-permission-prompts",
    "block-new-web-contents",
    "metrics-recording-only",
    "use-mock-keychain",
    "disable-background-timer-throttling",
    "disable-renderer-backgrounding",
    "disable-backgrounding-occluded-windows",
];

/// A running browser, its CDP event pump and its throwaway profile. [`Session::close`] ends
/// the process before the profile is removed.
pub(super) struct Session {
    pub(super) browser: Browser,
    pump: tokio::task::JoinHandle<()>,
    profile: tempfile::TempDir,
}

/// Launch `executable` headless with a `width`×`height` viewport, request interception on and
/// a fresh profile. `timeout` bounds each CDP command, a page load included.
pub(super) async fn launch(
    executable: &str,
    width: u32,
    height: u32,
    timeout: Duration,
) -> Result<Session, ToolError> {
    let profile = tempfile::Builder::new()
        .prefix("tackle-screenshot-")
        .tempdir()
        .map_err(|e| ToolError::failed(format!("cannot create the browser's profile: {e}")))?;
    let mut builder = BrowserConfig::builder()
        .chrome_executable(executable)
        .disable_default_args()
        .no_sandbox()
        .user_data_dir(profile.path())
        .window_size(width, height)
        .viewport(Viewport {
            width,
            height,
            device_scale_factor: Some(1.0),
            emulating_mobile: false,
            is_landscape: false,
            has_touch: false,
        })
        .enable_request_intercept()
        .disable_cache()
        .launch_timeout(Duration::from_secs(20))
        .request_timeout(timeout);
    for (key, value) in FLAGS {
        builder = builder.arg((*key, *value));
    }
    for switch in SWITCHES {
        builder = builder.arg(*switch);
    }
    let config = builder
        .build()
        .map_err(|e| ToolError::failed(format!("cannot configure the browser: {e}")))?;
    let (browser, handler) = Browser::launch(config)
        .await
        .map_err(|e| launch_error(executable, &e))?;
    Ok(Session {
        browser,
        pump: tokio::spawn(pump(handler)),
        profile,
    })
}

/// The CDP connection's events must be polled for any command to complete. An error on one
/// message (an event this crate version does not know) is not the end of the connection.
async fn pump(mut handler: Handler) {
    while handler.next().await.is_some() {}
}

fn launch_error(executable: &str, e: &chromiumoxide::error::CdpError) -> ToolError {
    use chromiumoxide::error::CdpError;
    match e {
        CdpError::Io(io) if io.kind() == std::io::ErrorKind::NotFound => {
            ToolError::failed(format!(
            "screenshot is unavailable: no browser at `{executable}`. Install Chromium (Debian: \
             apt-get install chromium) or set `screenshot.chromium_path` in the config"
        ))
        }
        other => ToolError::failed(format!(
            "screenshot is unavailable: the browser at `{executable}` did not start: {}",
            tackle_protocol::text::preview(&other.to_string(), 400)
        )),
    }
}

impl Session {
    /// Ask the browser to quit, kill it if it does not, wait for the process, then remove the
    /// profile (so nothing is still writing into it).
    pub(super) async fn close(mut self) {
        let asked = tokio::time::timeout(Duration::from_secs(3), self.browser.close()).await;
        if !matches!(asked, Ok(Ok(_))) {
            let _ = self.browser.kill().await;
        }
        if tokio::time::timeout(Duration::from_secs(5), self.browser.wait())
            .await
            .is_err()
        {
            let _ = self.browser.kill().await;
            let _ = self.browser.wait().await;
        }
        self.pump.abort();
        let _ = self.profile.close();
    }
}
