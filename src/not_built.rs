//! Extensions a build leaves out with their cargo feature (the edge build,
//! docs/decisions/0039-edge-build.md): their tools are not registered, and naming one gets an
//! answer that says how to get it, as tackle-tools' `gated` does for single tools.

// A build with every extension registers none of this; its test still reads the table.
#![cfg_attr(all(feature = "services", feature = "media"), allow(dead_code))]

use std::sync::Arc;
use tackle_protocol::{Extension, Tool};

/// A tool, the feature of the binary that registers its extension, and whether this build has it.
const LEFT_OUT: &[(&str, &str, bool)] = &[
    ("whatsapp", "services", cfg!(feature = "services")),
    ("gsheets", "services", cfg!(feature = "services")),
    ("stripe", "services", cfg!(feature = "services")),
    ("r8r", "services", cfg!(feature = "services")),
    ("transcribe", "media", cfg!(feature = "media")),
];

/// Why `tool` cannot be called in this build, naming the feature that registers it.
fn not_built(tool: &str) -> Option<String> {
    LEFT_OUT
        .iter()
        .find(|(name, _, built)| *name == tool && !built)
        .map(|(_, feature, _)| {
            format!(
                "`{tool}` is not in this build: its extension is built with the cargo feature \
                 `{feature}` (cargo build --release --features {feature})"
            )
        })
}

/// The extension that answers for them. It owns no tools.
pub fn extension() -> Arc<dyn Extension> {
    Arc::new(NotBuilt)
}

struct NotBuilt;

impl Extension for NotBuilt {
    fn name(&self) -> &str {
        // Not an extension a config can enable or disable, like tackle-tools' `not_built`.
        "not_built_extensions"
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
    fn a_left_out_tool_names_its_feature_and_a_built_one_is_not_answered() {
        for (tool, feature, built) in LEFT_OUT {
            match not_built(tool) {
                Some(why) => {
                    assert!(!built, "{tool} is built, yet answered: {why}");
                    assert!(why.contains(feature) && why.contains(tool), "{why}");
                }
                None => assert!(built, "{tool} is left out, yet not answered"),
            }
        }
        assert_eq!(not_built("read_file"), None);
    }
}
