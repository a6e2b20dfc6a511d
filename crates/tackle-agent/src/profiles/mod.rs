//! Tool profiles: how much of each tool's definition the model is shown (config.example.yaml,
//! `tool_profiles:`).
//!
//! A [`ToolProfile`] maps a tool name to a [`ProfileMode`]: exact name first, then the longest
//! matching glob (ties: the rule listed first), then the profile's default. `ns.*` and
//! `ns__*` both match MCP tools named `ns__tool`, because a tool name never contains a dot.
//! [`render`] turns the registry's specs into the [`ToolDef`]s a provider sends; both wire
//! formats (OpenAI, Anthropic) render from those same values.
//!
//! [`ToolSelection`] is the same pattern language as a plain list (`mcp.serve_tools`).
//!
//! Not here: calling. A profile only changes what the model is *shown*; the dispatcher looks
//! tools up in the registry, so a `hidden` tool stays callable (docs/decisions/0012).
//!
//! ```
//! use tackle_agent::ToolProfile;
//! use tackle_protocol::config::{ProfileMode, ToolProfileConfig};
//! let cfg: ToolProfileConfig = serde_json::from_value(serde_json::json!({
//!     "default": "full",
//!     "tools": {"github.*": "summary", "shell": "hidden"}
//! })).unwrap();
//! let profile = ToolProfile::compile("compact", &cfg).unwrap();
//! assert_eq!(profile.mode_for("github__create_issue"), ProfileMode::Summary);
//! assert_eq!(profile.mode_for("shell"), ProfileMode::Hidden);
//! assert_eq!(profile.mode_for("read_file"), ProfileMode::Full);
//! ```
//!
//! [`ToolDef`]: tackle_llm::ToolDef

mod render;
mod resolve;
mod select;

pub use render::{render, render_one};
pub use resolve::{ProfileError, ToolProfile};
pub use select::{SelectionError, ToolSelection};
pub use tackle_protocol::config::ProfileMode;

/// The name a mode has in config and in `tackle tools list`.
pub fn mode_name(mode: ProfileMode) -> &'static str {
    match mode {
        ProfileMode::Full => "full",
        ProfileMode::Brief => "brief",
        ProfileMode::Summary => "summary",
        ProfileMode::Hidden => "hidden",
    }
}
