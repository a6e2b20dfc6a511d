//! MCP tool pins (docs/decisions/0031-mcp-tool-pinning.md): for each configured MCP server's
//! tool, the digest and canonical definition it had when it was first used or when the
//! operator accepted it. The MCP client compares what a server offers against these rows and
//! quarantines a tool whose definition differs.
//!
//! The store keeps what it is given: the digest and the definition's text are computed by the
//! MCP client, and nothing here interprets them. One row per `(server, tool)`.

use crate::error::StoreError;
use crate::schedules::{from_ms, to_ms};
use crate::Store;
use rusqlite::{params, Connection, OptionalExtension, Row};
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
    #[serde(with = "time::serde::timestamp::milliseconds")]
    pub pinned_at: OffsetDateTime,
    /// Who pinned it: `first use`, or `operator` (`tackle mcp trust`).
    pub pinned_by: String,
}

const COLUMNS: &str = "server, tool, digest, definition, pinned_ms, pinned_by";

impl Store {
    /// The pins of `server` (every server's when `None`), by server then tool.
    pub async fn mcp_pins(&self, server: Option<&str>) -> Result<Vec<ToolPin>, StoreError> {
        let server = server.map(str::to_string);
        self.with_conn(move |conn| {
            let sql = format!(
                "SELECT {COLUMNS} FROM mcp_pins WHERE ?1 IS NULL OR server = ?1
                 ORDER BY server, tool"
            );
            let mut stmt = conn.prepare_cached(&sql)?;
            let rows = stmt.query_map(params![server], row_to_pin)?;
            rows.map(|r| r?).collect()
        })
        .await
    }

    /// Pins `pin` unless its tool is pinned already; returns the pin in force afterwards,
    /// which is another definition when someone (this process or another) pinned first.
    pub async fn pin_mcp_tool_if_absent(&self, pin: ToolPin) -> Result<ToolPin, StoreError> {
        self.with_conn(move |conn| {
            conn.execute(
                &format!(
                    "INSERT OR IGNORE INTO mcp_pins ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
                ),
                params![
                    pin.server,
                    pin.tool,
                    pin.digest,
                    pin.definition,
                    to_ms(pin.pinned_at),
                    pin.pinned_by
                ],
            )?;
            get(conn, &pin.server, &pin.tool)?.ok_or_else(|| StoreError::BadValue {
                what: "MCP tool pin",
                value: format!("{}/{}", pin.server, pin.tool),
            })
        })
        .await
    }

    /// Records `pin`, replacing the tool's earlier pin (the operator accepted a new
    /// definition).
    pub async fn set_mcp_pin(&self, pin: ToolPin) -> Result<(), StoreError> {
        self.with_conn(move |conn| {
            conn.execute(
                &format!(
                    "INSERT INTO mcp_pins ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                     ON CONFLICT (server, tool) DO UPDATE SET digest = excluded.digest,
                       definition = excluded.definition, pinned_ms = excluded.pinned_ms,
                       pinned_by = excluded.pinned_by"
                ),
                params![
                    pin.server,
                    pin.tool,
                    pin.digest,
                    pin.definition,
                    to_ms(pin.pinned_at),
                    pin.pinned_by
                ],
            )?;
            Ok(())
        })
        .await
    }
}

fn get(conn: &Connection, server: &str, tool: &str) -> Result<Option<ToolPin>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM mcp_pins WHERE server = ?1 AND tool = ?2");
    conn.query_row(&sql, params![server, tool], row_to_pin)
        .optional()?
        .transpose()
}

/// A row; a time that is not one is an error of that row, not of the query.
fn row_to_pin(row: &Row<'_>) -> rusqlite::Result<Result<ToolPin, StoreError>> {
    let ms: i64 = row.get(4)?;
    let Some(pinned_at) = from_ms(ms) else {
        return Ok(Err(StoreError::BadValue {
            what: "pin time",
            value: ms.to_string(),
        }));
    };
    Ok(Ok(ToolPin {
        server: row.get(0)?,
        tool: row.get(1)?,
        digest: row.get(2)?,
        definition: row.get(3)?,
        pinned_at,
        pinned_by: row.get(5)?,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pin(server: &str, tool: &str, digest: &str) -> ToolPin {
        ToolPin {
            server: server.into(),
            tool: tool.into(),
            digest: digest.into(),
            definition: format!("{{\"name\":\"{tool}\"}}"),
            pinned_at: OffsetDateTime::now_utc(),
            pinned_by: "first use".into(),
        }
    }

    #[tokio::test]
    async fn the_first_pin_wins_and_the_operator_replaces_it() {
        let store = Store::open_in_memory().unwrap();
        let kept = store
            .pin_mcp_tool_if_absent(pin("calc", "add", "sha256:a"))
            .await
            .unwrap();
        assert_eq!(kept.digest, "sha256:a");
        // A second first use with another definition does not overwrite the pin.
        let kept = store
            .pin_mcp_tool_if_absent(pin("calc", "add", "sha256:b"))
            .await
            .unwrap();
        assert_eq!(kept.digest, "sha256:a");

        let mut accepted = pin("calc", "add", "sha256:b");
        accepted.pinned_by = "operator".into();
        store.set_mcp_pin(accepted).await.unwrap();
        store
            .pin_mcp_tool_if_absent(pin("other", "add", "sha256:c"))
            .await
            .unwrap();

        let calc = store.mcp_pins(Some("calc")).await.unwrap();
        assert_eq!(calc.len(), 1);
        assert_eq!(calc[0].digest, "sha256:b");
        assert_eq!(calc[0].pinned_by, "operator");
        let all = store.mcp_pins(None).await.unwrap();
        let names: Vec<(&str, &str)> = all
            .iter()
            .map(|p| (p.server.as_str(), p.tool.as_str()))
            .collect();
        assert_eq!(names, [("calc", "add"), ("other", "add")]);
    }
}
