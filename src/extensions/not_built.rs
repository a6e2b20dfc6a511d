//! Extensions a build leaves out with their cargo feature (the edge build,
//! docs/decisions/0039-edge-build.md): their tools are not registered, and naming one gets an
//! answer that says how to get it, as tackle-tools' `gated` does for single tools.

use std::sync::Arc;
use tackle_protocol::{Extension, Tool};

/// Why `tool` cannot be called in this build, naming the feature that registers its
/// extension (the catalogue row that lists it).
fn not_built(tool: &str) -> Option<String> {
    super::CATALOGUE
        .iter()
        .filter(|row| !row.is_built())
        .find(|row| row.tools.contains(&tool))
        .and_then(|row| row.feature)
        .map(|feature| {
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
        for row in super::super::CATALOGUE {
            for tool in row.tools {
                match not_built(tool) {
                    Some(why) => {
                        assert!(!row.is_built(), "{tool} is built, yet answered: {why}");
                        let feature = row.feature.unwrap_or_default();
                        assert!(why.contains(feature) && why.contains(tool), "{why}");
                    }
                    None => assert!(row.is_built(), "{tool} is left out, yet not answered"),
                }
            }
        }
        assert_eq!(not_built("read_file"), None);
    }
}
