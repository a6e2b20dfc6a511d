//! MCP tool pins (docs/decisions/0031-mcp-tool-pinning.md): for each configured MCP server's
//! tool, the digest and canonical definition it had when it was first used or when the
//! operator accepted it. The MCP client compares what a server offers against these rows and
//! quarantines a tool whose definition differs.
//!
//! The store keeps what it is given: the digest and the definition's text are computed by the
//! MCP client, and nothing here interprets them. One row per `(server, tool)`.

use crate::error::StoreError;
use crate::schedules::{from_ms, to_ms};
use crate::sql::{vals, Db, Row};
use crate::Store;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// A pinned tool definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolPin {
    /// The server's name under `mcp_servers`.
    pub server: String,
    /// The tool's name as the server lists it (not the `server__tool` registry name).
    pub tool: String,
    /// `sha256:` and 64 hex digits of the canonical definition.
    pub digest: String,
    /// The canonical JSON the digest was taken of.
    pub definition: String,
    /// When it was pinned.
    #[serde(with = "time::serde::timestamp::milliseconds")]
    pub pinned_at: OffsetDateTime,
    /// Who pinned it: `first use`, or `operator` (`tackle mcp trust`).
    pub pinned_by: String,
}

const COLUMNS: &str = "server, tool, digest, definition, pinned_ms, pinned_by";

impl Store {
    /// The pins of `server` (every server's when `None`), by server then tool. With a shared
    /// engine (`state_url`), every daemon reads and writes the same pins, so a tool accepted
    /// on one machine is accepted on all.
    pub async fn mcp_pins(&self, server: Option<&str>) -> Result<Vec<ToolPin>, StoreError> {
        let server = server.map(str::to_string);
        self.with_db(move |db| {
            let sql = format!(
                "SELECT {COLUMNS} FROM mcp_pins WHERE CAST(?1 AS TEXT) IS NULL OR server = ?1
                 ORDER BY server, tool"
            );
            db.query(&sql, vals![server])?
                .iter()
                .map(row_to_pin)
                .collect()
        })
        .await
    }

    /// Pins `pin` unless its tool is pinned already; returns the pin in force afterwards,
    /// which is another definition when someone (this process or another) pinned first.
    pub async fn pin_mcp_tool_if_absent(&self, pin: ToolPin) -> Result<ToolPin, StoreError> {
        self.with_db(move |db| {
            db.execute(
                &format!(
                    "INSERT INTO mcp_pins ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                     ON CONFLICT (server, tool) DO NOTHING"
                ),
                &pin_vals(&pin),
            )?;
            get(db, &pin.server, &pin.tool)?.ok_or_else(|| StoreError::BadValue {
                what: "MCP tool pin",
                value: format!("{}/{}", pin.server, pin.tool),
            })
        })
        .await
    }

    /// Records `pin`, replacing the tool's earlier pin (the operator accepted a new
    /// definition).
    pub async fn set_mcp_pin(&self, pin: ToolPin) -> Result<(), StoreError> {
        self.with_db(move |db| {
            db.execute(
                &format!(
                    "INSERT INTO mcp_pins ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                     ON CONFLICT (server, tool) DO UPDATE SET digest = excluded.digest,
                       definition = excluded.definition, pinned_ms = excluded.pinned_ms,
                       pinned_by = excluded.pinned_by"
                ),
                &pin_vals(&pin),
            )?;
            Ok(())
        })
        .await
    }
}

/// The values of `pin` in the order of [`COLUMNS`].
fn pin_vals(pin: &ToolPin) -> Vec<crate::sql::Val> {
    vals![
        &pin.server,
        &pin.tool,
        &pin.digest,
        &pin.definition,
        to_ms(pin.pinned_at),
        &pin.pinned_by
    ]
    .to_vec()
}

fn get(db: &mut dyn Db, server: &str, tool: &str) -> Result<Option<ToolPin>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM mcp_pins WHERE server = ?1 AND tool = ?2");
    db.query_opt(&sql, vals![server, tool])?
        .as_ref()
        .map(row_to_pin)
        .transpose()
}

/// A row; a time that is not one is an error of that row, not of the query.
fn row_to_pin(row: &Row) -> Result<ToolPin, StoreError> {
    let ms = row.int(4)?;
    let pinned_at = from_ms(ms).ok_or_else(|| StoreError::BadValue {
        what: "pin time",
        value: ms.to_string(),
    })?;
    Ok(ToolPin {
        server: row.text(0)?,
        tool: row.text(1)?,
        digest: row.text(2)?,
        definition: row.text(3)?,
        pinned_at,
        pinned_by: row.text(5)?,
    })
}
