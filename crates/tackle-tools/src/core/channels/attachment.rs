//! A file the `message` tool sends as an attachment (`file`): read whole through the host, so
//! the fs grant and the sandbox decide what may leave the workspace, and capped in size.

use crate::media::file::{read_capped, Cap};
use tackle_protocol::config::ChannelConfig;
use tackle_protocol::{ToolContext, ToolError};

/// The largest file sent. The whole file is held in memory (the host's request carries a byte
/// body), and 20 MiB stays below what each platform takes from a bot with its defaults
/// (Telegram's `sendDocument` 50 MB, a Synapse homeserver's 50 MB, Slack's 1 GB), so a file
/// under the cap is not refused by the platform for its size.
pub(crate) const MAX_FILE_BYTES: u64 = 20 * 1024 * 1024;

/// What takes a file, for the errors that say where one can go.
pub(crate) const TAKES_FILES: &str = "telegram, matrix and slack channels";

/// One file, read and ready to send.
pub(crate) struct Attachment {
    /// Its file name (no directories).
    pub(crate) name: String,
    /// Its media type, from its name (`application/octet-stream` when unknown).
    pub(crate) mime: &'static str,
    pub(crate) data: Vec<u8>,
}

/// Whether a channel of this type sends files.
pub(crate) fn takes_files(config: &ChannelConfig) -> bool {
    matches!(
        config,
        ChannelConfig::Telegram { .. } | ChannelConfig::Matrix { .. } | ChannelConfig::Slack { .. }
    )
}

/// `invalid_arguments` for a file to a channel that cannot take one.
pub(crate) fn not_here(channel: &str, kind: &str) -> ToolError {
    ToolError::invalid_arguments(format!(
        "`file` cannot go to `{channel}` ({kind}): files go to {TAKES_FILES} only"
    ))
}

/// The file `raw` names (relative to the workspace, or absolute), through the host: a path
/// the grant does not allow is refused with the host's own error, before anything is sent.
pub(crate) async fn read(cx: &ToolContext, raw: &str) -> Result<Attachment, ToolError> {
    if raw.trim().is_empty() {
        return Err(ToolError::invalid_arguments("`file` must not be empty"));
    }
    let path = crate::fs::resolve(cx, raw);
    let shown = crate::fs::shown(cx, &path);
    let cap = Cap {
        bytes: MAX_FILE_BYTES,
        label: "20 MiB",
        verb: "the message tool sends",
    };
    let data = read_capped(cx, &path, &shown, &cap).await?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "file".to_string());
    let mime = mime_guess::from_path(&path)
        .first_raw()
        .unwrap_or("application/octet-stream");
    Ok(Attachment { name, mime, data })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock_host::MockHost;
    use std::sync::Arc;
    use tackle_protocol::ErrorKind;

    #[tokio::test]
    async fn a_message_file_is_read_whole_with_its_name_and_type() {
        let host = Arc::new(MockHost::new().with_file("out/report.pdf", b"%PDF-1.7 x".to_vec()));
        let cx = host.context();
        let a = read(&cx, "out/report.pdf").await.unwrap();
        assert_eq!(
            (a.name.as_str(), a.mime, a.data.as_slice()),
            ("report.pdf", "application/pdf", b"%PDF-1.7 x".as_slice())
        );
        let err = read(&cx, " ").await.err().map(|e| e.kind);
        assert_eq!(err, Some(ErrorKind::InvalidArguments));
    }
}
