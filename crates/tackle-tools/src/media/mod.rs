//! The `media` extension: `transcribe` (speech to text through an OpenAI-compatible server);
//! with the cargo feature `tool-pdf`, `pdf_read` (the text of a PDF, parsed locally); with the
//! cargo feature `screenshot`, `screenshot` (a headless Chromium's view of a page).
//! [`crate::gated`] answers for a gated tool this build lacks.
//!
//! Files are read and written through `cx.host()` (the fs grants) and every request goes
//! through `cx.host().http(..)` (grants, DNS pinning, size caps, time limits), the browser's
//! included. A tool whose feature is off is not here at all.
//!
//! ```
//! use tackle_tools::media::{extension, MediaSettings};
//!
//! let media = extension(MediaSettings::default());
//! let names: Vec<String> = media.tools().iter().map(|t| t.spec().name).collect();
//! assert!(names.contains(&"transcribe".to_string()));
//! ```

pub(crate) mod file;
pub(crate) mod multipart;
#[cfg(feature = "tool-pdf")]
mod pdf_read;
#[cfg(feature = "tool-pdf")]
mod pdf_scan;
#[cfg(feature = "tool-pdf")]
mod pdf_text;
#[cfg(feature = "screenshot")]
mod screenshot;
mod transcribe;

use std::sync::Arc;
use tackle_protocol::config::{ScreenshotConfig, TranscribeConfig};
use tackle_protocol::{Extension, Tool};

/// Everything the media tools need from configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MediaSettings {
    /// The `transcribe:` section.
    pub transcribe: TranscribeConfig,
    /// The `screenshot:` section (used only in builds with the `screenshot` feature).
    pub screenshot: ScreenshotConfig,
}

/// The `media` extension with the tools this build has.
pub fn extension(settings: MediaSettings) -> Arc<dyn Extension> {
    Arc::new(MediaExtension {
        settings: Arc::new(settings),
    })
}

struct MediaExtension {
    settings: Arc<MediaSettings>,
}

impl Extension for MediaExtension {
    fn name(&self) -> &str {
        "media"
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let transcribe: Arc<dyn Tool> = Arc::new(transcribe::Transcribe::new(
            self.settings.transcribe.clone(),
        ));
        let screenshot: Option<Arc<dyn Tool>> = screenshot_tool(&self.settings);
        [Some(transcribe), pdf_tool(), screenshot]
            .into_iter()
            .flatten()
            .collect()
    }
}

#[cfg(feature = "tool-pdf")]
fn pdf_tool() -> Option<Arc<dyn Tool>> {
    Some(Arc::new(pdf_read::PdfRead))
}

#[cfg(not(feature = "tool-pdf"))]
fn pdf_tool() -> Option<Arc<dyn Tool>> {
    None
}

#[cfg(feature = "screenshot")]
fn screenshot_tool(settings: &MediaSettings) -> Option<Arc<dyn Tool>> {
    Some(Arc::new(screenshot::Screenshot::new(
        settings.screenshot.clone(),
    )))
}

#[cfg(not(feature = "screenshot"))]
fn screenshot_tool(_: &MediaSettings) -> Option<Arc<dyn Tool>> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use tackle_protocol::{ApprovalMode, Risk};

    #[test]
    fn tools_carry_the_catalogue_risk_and_approval() {
        let media = extension(MediaSettings::default());
        for tool in media.tools() {
            let spec = tool.spec();
            assert_eq!(spec.owner, "media");
            let expected = match spec.name.as_str() {
                "pdf_read" => (Risk::Low, ApprovalMode::Never),
                _ => (Risk::Medium, ApprovalMode::UnlessAutoApproved),
            };
            assert_eq!((spec.risk, spec.approval), expected, "{}", spec.name);
            assert!(tackle_protocol::ToolName::parse(&spec.name).is_ok());
            assert_eq!(
                spec.parameters["additionalProperties"], false,
                "{}",
                spec.name
            );
            assert!(spec.parameters.get("$schema").is_none());
        }
    }
}
