//! Tools that exist only in builds with a cargo feature (docs/architecture.md, "Tools"; README, "Devices").
//!
//! A tool whose feature is off is listed nowhere: it is not registered, not offered to a model,
//! not served over MCP. Naming it still gets an answer that says how to get it, instead of a
//! bare "unknown tool": the [`extension`] here owns no tools and answers
//! [`Extension::unavailable`] for every gated tool this build lacks.

use std::sync::Arc;
use tackle_protocol::{Extension, Tool};

/// A tool and the cargo feature that builds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GatedTool {
    /// The tool's name as the registry knows it.
    pub tool: &'static str,
    /// The cargo feature of this crate that builds the tool.
    pub feature: &'static str,
    /// Whether this build has the feature.
    pub built: bool,
}

/// Every feature-gated tool, one row each. Adding a gated tool means adding its row here and
/// the feature to this crate's and the binary's `[features]`.
pub const GATED_TOOLS: &[GatedTool] = &[
    GatedTool {
        tool: "android",
        feature: "android",
        built: cfg!(feature = "android"),
    },
    GatedTool {
        tool: "screenshot",
        feature: "screenshot",
        built: cfg!(feature = "screenshot"),
    },
    GatedTool {
        tool: "pdf_read",
        feature: "tool-pdf",
        built: cfg!(feature = "tool-pdf"),
    },
    GatedTool {
        tool: "hardware",
        feature: "hardware",
        built: cfg!(feature = "hardware"),
    },
];

/// The feature that would build `tool`, when this build lacks it.
pub fn missing_feature(tool: &str) -> Option<&'static str> {
    GATED_TOOLS
        .iter()
        .find(|g| g.tool == tool && !g.built)
        .map(|g| g.feature)
}

/// Why `tool` cannot be called in this build, naming the feature that builds it.
pub fn not_built(tool: &str) -> Option<String> {
    missing_feature(tool).map(|feature| {
        format!(
            "`{tool}` is not in this build: it is built with the cargo feature `{feature}` \
             (cargo build --release --features {feature})"
        )
    })
}

/// The extension that answers for gated tools this build lacks. It owns no tools.
pub fn extension() -> Arc<dyn Extension> {
    Arc::new(NotBuilt)
}

struct NotBuilt;

/// Its name is not an extension a config can enable or disable: each gated tool belongs to its
/// own extension (`devices`, `media`) when built.
pub const NAME: &str = "not_built";

impl Extension for NotBuilt {
    fn name(&self) -> &str {
        NAME
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        Vec::new()
    }

    fn unavailable(&self, tool: &str) -> Option<String> {
        not_built(tool)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_without_its_feature_names_the_feature() {
        for g in GATED_TOOLS {
            let why = not_built(g.tool);
            if g.built {
                assert_eq!(why, None, "{} is built", g.tool);
            } else {
                let why = why.unwrap_or_default();
                assert!(why.contains(g.feature), "{why}");
                assert!(why.contains(g.tool), "{why}");
            }
        }
    }

    #[test]
    fn other_names_are_not_answered() {
        assert_eq!(not_built("read_file"), None);
        assert_eq!(not_built("pdf"), None);
        assert_eq!(not_built("pdf_reader"), None);
    }
}
