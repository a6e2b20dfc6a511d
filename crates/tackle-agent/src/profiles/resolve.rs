//! Which mode a tool name gets under one profile.

use globset::{Glob, GlobMatcher};
use tackle_protocol::config::{ProfileMode, ToolProfileConfig};

/// The built-in that shows any tool's full spec (`tackle-tools` system extension).
const DESCRIBE_TOOL: &str = "describe_tool";

/// A profile whose patterns have been checked and compiled once, at config load.
#[derive(Debug, Clone)]
pub struct ToolProfile {
    name: String,
    default: ProfileMode,
    exact: Vec<(String, ProfileMode)>,
    globs: Vec<GlobRule>,
}

#[derive(Debug, Clone)]
struct GlobRule {
    /// The pattern in the form it is matched in (`.` spelled `__`); its length ranks it.
    canonical: String,
    matcher: GlobMatcher,
    mode: ProfileMode,
}

/// A pattern in `tool_profiles.NAME.tools` that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProfileError {
    /// A pattern that does not compile as a glob.
    #[error("profile `{profile}`: pattern `{pattern}` is not a valid glob: {reason}")]
    BadPattern {
        /// The profile's name.
        profile: String,
        /// The pattern as written.
        pattern: String,
        /// The glob compiler's complaint.
        reason: String,
    },
    #[error("profile `{profile}`: a pattern is empty")]
    /// An empty pattern, which would match nothing or everything depending on reading.
    EmptyPattern {
        /// The profile's name.
        profile: String,
    },
}

impl ToolProfile {
    /// The profile every agent without `tool_profile` has: everything in full.
    pub fn full() -> Self {
        Self {
            name: "full".to_string(),
            default: ProfileMode::Full,
            exact: Vec::new(),
            globs: Vec::new(),
        }
    }

    /// Check and compile `config`'s patterns, in the order they are listed.
    pub fn compile(name: &str, config: &ToolProfileConfig) -> Result<Self, ProfileError> {
        let mut exact = Vec::new();
        let mut globs = Vec::new();
        for (pattern, mode) in config.tools.iter() {
            if pattern.is_empty() {
                return Err(ProfileError::EmptyPattern {
                    profile: name.to_string(),
                });
            }
            // Tool names never hold a dot (ToolName), so `ns.tool` can only mean the MCP
            // spelling `ns__tool`; reading it that way makes `github.*` match.
            let canonical = pattern.replace('.', "__");
            if !canonical.contains(['*', '?', '[', '{']) {
                exact.push((canonical, *mode));
                continue;
            }
            let matcher = Glob::new(&canonical)
                .map_err(|e| ProfileError::BadPattern {
                    profile: name.to_string(),
                    pattern: pattern.clone(),
                    reason: e.kind().to_string(),
                })?
                .compile_matcher();
            globs.push(GlobRule {
                canonical,
                matcher,
                mode: *mode,
            });
        }
        Ok(Self {
            name: name.to_string(),
            default: config.default,
            exact,
            globs,
        })
    }

    /// The profile's name in `tool_profiles`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Exact name → longest matching glob (the first listed among equals) → default.
    /// `describe_tool` is the way back to a trimmed tool's schema, so a glob or the default
    /// may hide it but never trims it: `default: summary` must not send it without its
    /// argument. Only its exact name can.
    pub fn mode_for(&self, tool: &str) -> ProfileMode {
        if let Some((_, mode)) = self.exact.iter().find(|(n, _)| n == tool) {
            return *mode;
        }
        match self.glob_or_default(tool) {
            ProfileMode::Brief | ProfileMode::Summary if tool == DESCRIBE_TOOL => ProfileMode::Full,
            mode => mode,
        }
    }

    fn glob_or_default(&self, tool: &str) -> ProfileMode {
        let mut best: Option<&GlobRule> = None;
        for rule in self.globs.iter().filter(|r| r.matcher.is_match(tool)) {
            // Strictly longer only: an equal-length later rule never displaces an earlier one.
            if best.is_none_or(|b| rule.canonical.chars().count() > b.canonical.chars().count()) {
                best = Some(rule);
            }
        }
        best.map_or(self.default, |r| r.mode)
    }
}

impl Default for ToolProfile {
    fn default() -> Self {
        Self::full()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ProfileMode::*;

    fn profile(default: ProfileMode, rules: &[(&str, ProfileMode)]) -> ToolProfile {
        let tools = rules.iter().map(|(p, m)| (*p, *m)).collect();
        ToolProfile::compile("p", &ToolProfileConfig { default, tools }).expect("compiles")
    }

    #[test]
    fn resolution_table() {
        let p = profile(
            Full,
            &[
                ("filesystem.*", Brief),
                ("github.*", Summary),
                ("github__create_issue", Full),
                ("shell", Hidden),
                ("memory__*", Brief),
                ("memory__re*", Summary),
                ("web_*", Brief),
            ],
        );
        let table = [
            ("shell", Hidden),                // exact
            ("shell_extra", Full),            // exact is not a prefix
            ("filesystem__read_file", Brief), // `ns.*` matches the MCP spelling
            ("github__list_issues", Summary), // the seed's own example
            ("github__create_issue", Full),   // exact beats any glob
            ("githubx__tool", Full),          // `github.*` needs the `__` separator
            ("memory__recall", Summary),      // longest glob wins
            ("memory__forget", Brief),        // only the shorter one matches
            ("web_fetch", Brief),             // plain globs for built-ins
            ("read_file", Full),              // default
        ];
        for (tool, want) in table {
            assert_eq!(p.mode_for(tool), want, "{tool}");
        }
    }

    #[test]
    fn both_namespace_spellings_match_mcp_names() {
        for pattern in ["fs.*", "fs__*"] {
            let p = profile(Full, &[(pattern, Summary)]);
            assert_eq!(p.mode_for("fs__read"), Summary, "{pattern}");
            assert_eq!(p.mode_for("fsx"), Full, "{pattern}");
        }
        let dotted_exact = profile(Full, &[("fs.read", Hidden)]);
        assert_eq!(dotted_exact.mode_for("fs__read"), Hidden);
    }

    #[test]
    fn equal_length_globs_tie_to_the_rule_listed_first() {
        // `a*` and `*b` both match `ab` and are equally long: the one written first wins,
        // whichever way round they are written, every time.
        let p = profile(Full, &[("a*", Brief), ("*b", Summary)]);
        assert_eq!(p.mode_for("ab"), Brief);
        let q = profile(Full, &[("*b", Summary), ("a*", Brief)]);
        for _ in 0..10 {
            assert_eq!(q.mode_for("ab"), Summary);
        }
        // The two spellings of one namespace are the same length once read as `__`.
        let p = profile(Full, &[("gh__*", Summary), ("gh.*", Brief)]);
        assert_eq!(p.mode_for("gh__x"), Summary);
        let p = profile(Full, &[("gh.*", Brief), ("gh__*", Summary)]);
        assert_eq!(p.mode_for("gh__x"), Brief);
    }

    #[test]
    fn a_pattern_listed_twice_is_an_error() {
        let tree = serde_json::json!({"tools": {"a*": "brief"}});
        let mut text = tree.to_string();
        text = text.replace("}}", ", \"a*\": \"hidden\"}}");
        let e = serde_json::from_str::<ToolProfileConfig>(&text).expect_err("duplicate");
        assert!(e.to_string().contains("listed twice"), "{e}");
    }

    #[test]
    fn describe_tool_is_never_trimmed_unless_named_exactly() {
        let p = profile(Summary, &[("describe*", Brief)]);
        assert_eq!(p.mode_for("describe_tool"), Full);
        assert_eq!(p.mode_for("calculate"), Summary);
        let hiding = profile(Hidden, &[]);
        assert_eq!(hiding.mode_for("describe_tool"), Hidden);
        let named = profile(Summary, &[("describe_tool", Brief)]);
        assert_eq!(named.mode_for("describe_tool"), Brief);
    }

    #[test]
    fn default_applies_when_nothing_matches() {
        let p = profile(Summary, &[("shell", Full)]);
        assert_eq!(p.mode_for("read_file"), Summary);
        assert_eq!(p.mode_for("shell"), Full);
        assert_eq!(ToolProfile::full().mode_for("anything"), Full);
    }

    #[test]
    fn a_bad_glob_is_an_error_naming_profile_and_pattern() {
        let tools = [("web_[", Brief)].into_iter().collect();
        let e = ToolProfile::compile(
            "compact",
            &ToolProfileConfig {
                default: Full,
                tools,
            },
        )
        .expect_err("bad glob");
        let text = e.to_string();
        assert!(text.contains("compact") && text.contains("web_["), "{text}");
    }
}
