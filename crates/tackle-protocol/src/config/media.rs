//! `transcribe:` and `screenshot:`: the backends of the media tools.

use crate::secret::Secret;
use serde::{Deserialize, Serialize};

/// `transcribe:` the OpenAI-compatible `/audio/transcriptions` server the `transcribe` tool
/// sends audio to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TranscribeConfig {
    /// The API base (`https://api.openai.com/v1` when unset). A base written here is an
    /// operator-written destination: trusted as written (a local server too), still pinned.
    #[serde(default)]
    pub api_base: Option<String>,
    /// Sent as `Authorization: Bearer KEY`; never shown in a result, an error or the audit log.
    #[serde(default)]
    pub api_key: Option<Secret>,
    /// The model to ask for (`whisper-1` when unset).
    #[serde(default)]
    pub model: Option<String>,
    /// Seconds one request may take, upload included (default 60).
    #[serde(default)]
    pub timeout_secs: Option<u64>,
}

impl TranscribeConfig {
    /// The base used when `api_base` is unset.
    pub const DEFAULT_API_BASE: &'static str = "https://api.openai.com/v1";
    /// The model asked for when `model` is unset.
    pub const DEFAULT_MODEL: &'static str = "whisper-1";
    /// Seconds one request may take when `timeout_secs` is unset.
    pub const DEFAULT_TIMEOUT_SECS: u64 = 60;
}

/// `screenshot:` the headless Chromium the `screenshot` tool drives. The browser never reaches
/// the network itself: every request it makes is answered through the host.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScreenshotConfig {
    /// The Chromium (or Chrome) executable (`/usr/bin/chromium` when unset).
    #[serde(default)]
    pub chromium_path: Option<String>,
}

impl ScreenshotConfig {
    /// The browser started when `chromium_path` is unset.
    pub const DEFAULT_CHROMIUM_PATH: &'static str = "/usr/bin/chromium";
}
