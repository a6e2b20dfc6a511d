//! `write_file {path, content}`: create or replace a whole file, atomically (the host does it).

use super::{planned_path, resolve, shown};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use tackle_protocol::{
    ApprovalMode, Capability, Risk, Tool, ToolContext, ToolError, ToolOutput, ToolSpec,
    WriteRequest,
};

/// The `write_file` tool: creates or atomically replaces a whole file.
pub struct WriteFile;

// Arguments of `write_file` (a plain comment, so not sent as the schema's description).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// File path, relative to the workspace or absolute.
    path: String,
    /// The complete new content of the file.
    content: String,
}

#[async_trait]
impl Tool for WriteFile {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "write_file",
            "Create a file or replace its whole content. Missing parent directories are created. \
             To change part of an existing file, prefer edit_file.",
            "fs",
        )
        .risk(Risk::Medium)
        .approval(ApprovalMode::UnlessAutoApproved)
        .parameters(crate::args::schema::<Args>())
    }

    fn planned_capabilities(&self, args: &Value, cx: &ToolContext) -> Vec<Capability> {
        vec![Capability::FileWrite {
            path: planned_path(args, cx, "path", "."),
        }]
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = crate::args::parse(args)?;
        super::non_empty("path", &args.path)?;
        let report = cx
            .host()
            .write(WriteRequest {
                expected: None,
                path: resolve(cx, &args.path),
                data: args.content.into_bytes(),
                create_dirs: true,
            })
            .await?;
        let verb = if report.created {
            "Created"
        } else {
            "Overwrote"
        };
        Ok(ToolOutput::text(format!(
            "{verb} {} ({} bytes written)",
            shown(cx, &report.path),
            report.bytes_written
        ))
        .with_structured(json!({"path": report.path, "bytes_written": report.bytes_written, "created": report.created})))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock_host::MockHost;
    use std::sync::Arc;
    use tackle_protocol::ErrorKind;

    #[tokio::test]
    async fn write_reports_bytes_and_whether_the_file_is_new() {
        let host = Arc::new(MockHost::new().with_file("old.txt", "x"));
        let cx = host.context();
        let created = WriteFile
            .call(json!({"path": "d/new.txt", "content": "héllo"}), &cx)
            .await;
        assert_eq!(
            created.map(|o| o.content),
            Ok("Created d/new.txt (6 bytes written)".to_string())
        );
        let over = WriteFile
            .call(json!({"path": "old.txt", "content": ""}), &cx)
            .await;
        assert_eq!(
            over.map(|o| o.content),
            Ok("Overwrote old.txt (0 bytes written)".to_string())
        );
        assert_eq!(host.file("d/new.txt"), Some("héllo".as_bytes().to_vec()));
        assert_eq!(
            host.capabilities()[0],
            Capability::FileWrite {
                path: "/ws/d/new.txt".into()
            }
        );
    }

    #[tokio::test]
    async fn planned_capability_matches_the_write_it_will_ask_for() {
        let host = Arc::new(MockHost::new());
        let cx = host.context();
        let args = json!({"path": "a/b.txt", "content": "x"});
        let planned = WriteFile.planned_capabilities(&args, &cx);
        let _ = WriteFile.call(args, &cx).await;
        assert_eq!(planned, host.capabilities());
    }

    #[tokio::test]
    async fn unknown_arguments_are_invalid() {
        let host = Arc::new(MockHost::new());
        let out = WriteFile
            .call(
                json!({"path": "a", "content": "x", "mode": 7}),
                &host.context(),
            )
            .await;
        assert_eq!(out.err().map(|e| e.kind), Some(ErrorKind::InvalidArguments));
        assert!(host.capabilities().is_empty());
    }
}
