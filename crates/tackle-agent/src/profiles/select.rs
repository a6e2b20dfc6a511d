//! A list of tool-name patterns, as `mcp.serve_tools` gives it: which tools a front end
//! offers. The patterns read as in profiles (`ns.*` = `ns__*`; `*`, `?`, `[…]`, `{a,b}`).

use globset::{Glob, GlobSet, GlobSetBuilder};

/// Tool names a front end offers; every tool when built from no patterns.
#[derive(Debug, Clone)]
pub struct ToolSelection {
    /// `None`: every tool.
    set: Option<GlobSet>,
}

/// A pattern in a tool selection that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("pattern `{pattern}` is not a valid glob: {reason}")]
pub struct SelectionError {
    /// Which pattern, from 0 (0 too when the set as a whole failed).
    pub index: usize,
    /// The pattern as written (all of them, joined, when the set failed).
    pub pattern: String,
    /// The glob compiler's complaint.
    pub reason: String,
}

impl ToolSelection {
    /// Every tool.
    pub fn all() -> Self {
        Self { set: None }
    }

    /// `None` = every tool; otherwise only names matching one of `patterns` (so `[]` = none).
    pub fn compile(patterns: Option<&[String]>) -> Result<Self, SelectionError> {
        let Some(patterns) = patterns else {
            return Ok(Self::all());
        };
        let mut builder = GlobSetBuilder::new();
        for (index, pattern) in patterns.iter().enumerate() {
            // A tool name never holds a dot, so `ns.x` can only mean the MCP name `ns__x`.
            let glob = Glob::new(&pattern.replace('.', "__")).map_err(|e| SelectionError {
                index,
                pattern: pattern.clone(),
                reason: e.kind().to_string(),
            })?;
            builder.add(glob);
        }
        let set = builder.build().map_err(|e| SelectionError {
            index: 0,
            pattern: patterns.join(", "),
            reason: e.to_string(),
        })?;
        Ok(Self { set: Some(set) })
    }

    /// Whether the selection offers `tool`.
    pub fn allows(&self, tool: &str) -> bool {
        self.set.as_ref().is_none_or(|s| s.is_match(tool))
    }
}

impl Default for ToolSelection {
    fn default() -> Self {
        Self::all()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sel(p: &[&str]) -> ToolSelection {
        let v: Vec<String> = p.iter().map(|s| s.to_string()).collect();
        ToolSelection::compile(Some(&v)).expect("compiles")
    }

    #[test]
    fn no_patterns_configured_offers_everything() {
        assert!(ToolSelection::compile(None).expect("all").allows("shell"));
        assert!(sel(&["*"]).allows("github__x"));
    }

    #[test]
    fn an_empty_list_offers_nothing() {
        assert!(!sel(&[]).allows("get_time"));
    }

    #[test]
    fn exact_names_and_namespace_globs_select() {
        let s = sel(&["get_time", "time.*", "read_*"]);
        for yes in ["get_time", "time__now", "read_file"] {
            assert!(s.allows(yes), "{yes}");
        }
        for no in ["shell", "get_time_x", "timex__now", "write_file"] {
            assert!(!s.allows(no), "{no}");
        }
    }

    #[test]
    fn a_bad_pattern_names_its_index() {
        let v = vec!["ok".to_string(), "bad[".to_string()];
        let e = ToolSelection::compile(Some(&v)).expect_err("bad");
        assert_eq!(e.index, 1);
        assert!(e.to_string().contains("bad["), "{e}");
    }
}
