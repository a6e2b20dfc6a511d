//! MCP tool pins kept in the state store (docs/decisions/0031-mcp-tool-pinning.md): the
//! store's rows behind the MCP client's [`PinStore`].

pub mod report;

use async_trait::async_trait;
use tackle_mcp::pinning::{Pin, PinError, PinStore, PinnedBy};
use tackle_store::{Store, ToolPin};
use time::OffsetDateTime;

pub struct StorePins(pub Store);

fn row(server: &str, pin: Pin, by: PinnedBy) -> ToolPin {
    ToolPin {
        server: server.to_string(),
        tool: pin.tool,
        digest: pin.digest,
        definition: pin.definition,
        pinned_at: OffsetDateTime::now_utc(),
        pinned_by: by.label(),
    }
}

fn pin(row: ToolPin) -> Pin {
    Pin {
        tool: row.tool,
        digest: row.digest,
        definition: row.definition,
    }
}

fn error(e: tackle_store::StoreError) -> PinError {
    PinError(e.to_string())
}

#[async_trait]
impl PinStore for StorePins {
    async fn pins(&self, server: &str) -> Result<Vec<Pin>, PinError> {
        let rows = self.0.mcp_pins(Some(server)).await.map_err(error)?;
        Ok(rows.into_iter().map(pin).collect())
    }

    async fn pin_if_absent(&self, server: &str, new: Pin) -> Result<Pin, PinError> {
        let kept = self
            .0
            .pin_mcp_tool_if_absent(row(server, new, PinnedBy::FirstUse))
            .await
            .map_err(error)?;
        Ok(pin(kept))
    }

    async fn replace(&self, server: &str, new: Pin, by: PinnedBy) -> Result<(), PinError> {
        self.0
            .set_mcp_pin(row(server, new, by))
            .await
            .map_err(error)
    }
}
