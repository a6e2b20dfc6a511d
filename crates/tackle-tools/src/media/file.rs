//! The path rules and the capped whole-file read shared by the media tools.
//!
//! A media tool names one file relative to the workspace (no `..`, no `~`, not absolute); the
//! host then applies the fs grants and resolves links. The file is read through the host in
//! chunks, and refused by its size before any of its bytes are read.

use crate::web::net;
use std::path::{Component, Path, PathBuf};
use tackle_protocol::{ReadRequest, ToolContext, ToolError};

/// Bytes asked of the host per read; the host caps one read below the media limits.
const CHUNK: u64 = 4 * 1024 * 1024;

/// `raw` as a path relative to the workspace, or why it is refused; `field` names the argument.
pub(crate) fn relative_path(raw: &str, field: &str) -> Result<PathBuf, ToolError> {
    if raw.trim().is_empty() {
        return Err(ToolError::invalid_arguments(format!(
            "`{field}` must not be empty"
        )));
    }
    let path = Path::new(raw);
    let relative = path
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if !relative || raw.starts_with('~') {
        return Err(ToolError::invalid_arguments(format!(
            "`{field}` must be relative to the workspace, without `..`: {}",
            tackle_protocol::text::preview(raw, 200)
        )));
    }
    Ok(path.to_path_buf())
}

/// The lower-cased extension of `path`, empty without one.
pub(crate) fn extension_of(path: &Path) -> String {
    path.extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default()
}

/// The largest file a tool takes, and how its messages say so ("transcribe sends").
pub(crate) struct Cap {
    pub(crate) bytes: u64,
    pub(crate) label: &'static str,
    pub(crate) verb: &'static str,
}

impl Cap {
    fn refusal(&self, shown: &str, size: u64) -> ToolError {
        ToolError::failed(format!(
            "{shown} is {}; {} at most {}",
            net::human_size(size),
            self.verb,
            self.label
        ))
    }
}

/// The whole file through the host. Its size is asked first (a read of no bytes), so a file
/// over the cap is refused before any of it is read; a file that grows while it is read is
/// refused too.
pub(crate) async fn read_capped(
    cx: &ToolContext,
    path: &Path,
    shown: &str,
    cap: &Cap,
) -> Result<Vec<u8>, ToolError> {
    let probe = cx
        .host()
        .read(ReadRequest {
            path: path.to_path_buf(),
            offset: 0,
            max_bytes: Some(0),
        })
        .await?;
    if probe.total_size > cap.bytes {
        return Err(cap.refusal(shown, probe.total_size));
    }
    let mut data = Vec::new();
    loop {
        if cx.cancel.is_cancelled() {
            return Err(ToolError::failed("cancelled"));
        }
        let part = cx
            .host()
            .read(ReadRequest {
                path: path.to_path_buf(),
                offset: data.len() as u64,
                max_bytes: Some(CHUNK),
            })
            .await?;
        if part.total_size > cap.bytes {
            return Err(cap.refusal(shown, part.total_size));
        }
        if part.bytes.is_empty() {
            break;
        }
        data.extend_from_slice(&part.bytes);
        if data.len() as u64 >= part.total_size || data.len() as u64 > cap.bytes {
            break;
        }
    }
    if data.len() as u64 > cap.bytes {
        return Err(ToolError::failed(format!(
            "{shown} grew past {} while it was read; {} at most {}",
            cap.label, cap.verb, cap.label
        )));
    }
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock_host::MockHost;
    use std::sync::Arc;
    use tackle_protocol::ErrorKind;

    #[test]
    fn paths_must_be_relative_to_the_workspace() {
        for bad in [
            "",
            " ",
            "/etc/a.pdf",
            "../a.pdf",
            "a/../../b.pdf",
            "~/a.pdf",
        ] {
            let err = relative_path(bad, "path").unwrap_err();
            assert_eq!(err.kind, ErrorKind::InvalidArguments, "{bad}");
            assert!(err.message.contains("`path`"), "{}", err.message);
        }
        assert_eq!(
            relative_path("./docs/a.pdf", "path").unwrap(),
            PathBuf::from("./docs/a.pdf")
        );
        assert_eq!(extension_of(Path::new("a/B.PDF")), "pdf");
        assert_eq!(extension_of(Path::new("pdf")), "");
    }

    const SMALL: Cap = Cap {
        bytes: 10,
        label: "10 bytes",
        verb: "the test reads",
    };

    #[tokio::test]
    async fn a_file_over_the_cap_is_refused_by_its_size() {
        let host = Arc::new(MockHost::new().with_file("big.bin", vec![7u8; 11]));
        let cx = host.context();
        let path = cx.host().workspace().join("big.bin");
        let err = read_capped(&cx, &path, "big.bin", &SMALL)
            .await
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::Failed);
        assert!(
            err.message
                .contains("big.bin is 11 bytes; the test reads at most 10 bytes"),
            "{}",
            err.message
        );
    }

    #[tokio::test]
    async fn a_file_at_the_cap_is_read_whole() {
        let host = Arc::new(MockHost::new().with_file("ok.bin", b"0123456789".to_vec()));
        let cx = host.context();
        let path = cx.host().workspace().join("ok.bin");
        let data = read_capped(&cx, &path, "ok.bin", &SMALL).await.unwrap();
        assert_eq!(data, b"0123456789");
    }
}
