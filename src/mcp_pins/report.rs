//! Where each MCP tool stands against its pin, as the operator is shown it: the rows of
//! `tackle mcp pins --json` and `GET /v1/mcp/tools`, and the review of a quarantined tool
//! (why, and its offered definition against the pinned one as a diff) that `tackle mcp trust`
//! prints and the console shows. One path for the terminal and the API.

use schemars::JsonSchema;
use serde::Serialize;
use std::collections::BTreeSet;
use tackle_mcp::pinning::{clean::reveal, digest::diff, PinState};
use tackle_mcp::ToolPinStatus;
use tackle_store::ToolPin;
use time::format_description::well_known::Rfc3339;

/// One tool: listed by its server now, or pinned and no longer listed.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PinRow {
    /// The server's name under `mcp_servers`.
    pub server: String,
    /// The tool's name as the server lists it.
    pub tool: String,
    /// The name the model and the policy know it by (`server__tool`).
    pub registry_name: String,
    /// `pinned`, `unpinned`, `off`, `changed`, `renamed`, `unchecked` (the last three are
    /// quarantined), or `not_offered` (pinned, no longer listed).
    pub state: String,
    /// The digest of the definition offered now; none when it is not offered.
    pub digest: Option<String>,
    /// The digest of the pinned definition, if the tool is pinned under this name.
    pub pinned_digest: Option<String>,
    /// `first use`, `operator`, or `operator (API token `NAME`)`.
    pub pinned_by: Option<String>,
    /// When it was pinned (RFC 3339).
    pub pinned_at: Option<String>,
    /// What was cleaned from its description (`2 zero-width characters`); empty for nothing.
    pub removed: String,
    /// Why it is quarantined and how to accept it.
    pub message: Option<String>,
}

impl PinRow {
    pub fn quarantined(&self) -> bool {
        matches!(self.state.as_str(), "changed" | "renamed" | "unchecked")
    }
}

/// One row per offered tool, then one per pin whose tool is not offered now, by server.
pub fn rows(offered: &[ToolPinStatus], stored: &[ToolPin]) -> Vec<PinRow> {
    let pin_of =
        |server: &str, tool: &str| stored.iter().find(|p| p.server == server && p.tool == tool);
    let when = |p: &ToolPin| p.pinned_at.format(&Rfc3339).unwrap_or_default();
    let mut seen = BTreeSet::new();
    let mut rows = Vec::new();
    for s in offered {
        let pin = pin_of(&s.server, &s.tool);
        seen.insert((s.server.clone(), s.tool.clone()));
        rows.push(PinRow {
            server: s.server.clone(),
            tool: s.tool.clone(),
            registry_name: s.registry_name.clone(),
            state: s.state.word().to_string(),
            digest: Some(s.digest.clone()),
            pinned_digest: pin.map(|p| p.digest.clone()),
            pinned_by: pin.map(|p| p.pinned_by.clone()),
            pinned_at: pin.map(when),
            removed: s.removed.clone(),
            message: s.message.clone(),
        });
    }
    for p in stored {
        if seen.contains(&(p.server.clone(), p.tool.clone())) {
            continue;
        }
        rows.push(PinRow {
            server: p.server.clone(),
            tool: p.tool.clone(),
            registry_name: tackle_mcp::naming::registry_name(&p.server, &p.tool),
            state: "not_offered".to_string(),
            digest: None,
            pinned_digest: Some(p.digest.clone()),
            pinned_by: Some(p.pinned_by.clone()),
            pinned_at: Some(when(p)),
            removed: String::new(),
            message: None,
        });
    }
    rows.sort_by(|a, b| a.server.cmp(&b.server));
    rows
}

/// What the operator reviews before accepting a tool.
#[derive(Debug, Clone)]
pub struct Review {
    /// Why it needs accepting: `changed since it was pinned`, …
    pub why: String,
    /// The definition it is compared with (canonical JSON); empty when nothing is pinned.
    pub pinned: String,
    /// A line diff of the pinned and the offered definitions' pretty JSON, hidden
    /// characters written out as `<U+XXXX>`.
    pub diff: String,
}

pub fn review(status: &ToolPinStatus) -> Review {
    let why = match &status.state {
        PinState::Changed { .. } => "changed since it was pinned".to_string(),
        PinState::Renamed { pinned } => format!(
            "offered under a new name with the description of the pinned tool `{}`",
            pinned.tool
        ),
        PinState::Unchecked(why) => format!("its pins could not be read ({why})"),
        _ => "not pinned yet".to_string(),
    };
    let pinned = status
        .state
        .pinned()
        .map(|p| p.definition.clone())
        .unwrap_or_default();
    Review {
        why: reveal(&why),
        diff: reveal(&diff(&pinned, &status.definition)),
        pinned,
    }
}

/// The tool's heading and its review, as `tackle mcp trust` prints it.
pub fn shown(status: &ToolPinStatus) -> String {
    let r = review(status);
    let mut out = format!(
        "MCP server `{}`, tool `{}`: {}\n--- pinned\n+++ offered\n{}",
        status.server, status.tool, r.why, r.diff
    );
    if !status.removed.is_empty() {
        out.push_str(&format!(
            "(removed from what the model is shown: {})\n",
            status.removed
        ));
    }
    reveal(&out)
}
