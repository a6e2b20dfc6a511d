use async_trait::async_trait;
use serde_json::{json, Value};
use tackle_protocol::{ToolContext, ToolError, ToolOutput, ToolSpec};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// `get_time`: the current UTC time as RFC 3339.
pub struct GetTime;

#[async_trait]
impl tackle_protocol::Tool for GetTime {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "get_time",
            "Returns the current UTC time as an RFC 3339 timestamp (e.g. 2026-01-31T09:30:00Z). No arguments.",
            super::NAME,
        )
    }

    async fn call(&self, _args: Value, _cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let now = OffsetDateTime::now_utc();
        let text = now
            .format(&Rfc3339)
            .map_err(|e| ToolError::failed(format!("could not format the time: {e}")))?;
        Ok(ToolOutput::text(text.clone()).with_structured(json!({
            "utc": text,
            "unix_seconds": now.unix_timestamp(),
        })))
    }
}
