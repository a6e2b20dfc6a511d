//! `tool_profiles:` how much of each tool's description the model is shown.

use serde::{Deserialize, Serialize};

/// How much of one tool's definition the model is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProfileMode {
    /// The whole description and parameter schema.
    Full,
    /// The first sentence of the description, and the schema without descriptions.
    Brief,
    /// The name only; the model asks `describe_tool` for the rest.
    Summary,
    /// Not sent to the model at all; the tool stays callable.
    Hidden,
}

/// `tool_profiles.NAME`: a mode per tool name or glob, and one for the rest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolProfileConfig {
    /// The mode of tools no rule names (default `full`).
    #[serde(default = "ToolProfileConfig::default_mode")]
    pub default: ProfileMode,
    /// `pattern: mode` rules (`tools:`): exact name first, then the longest matching glob.
    #[serde(default)]
    pub tools: ProfileRules,
}

/// A profile's `pattern: mode` rules in the order they were written: between two equally long
/// globs the first written wins, so the order is part of the meaning and a sorted map would
/// lose it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProfileRules(pub Vec<(String, ProfileMode)>);

impl ProfileRules {
    /// The rules in the order they were written.
    pub fn iter(&self) -> impl Iterator<Item = &(String, ProfileMode)> {
        self.0.iter()
    }

    /// The mode written for exactly `pattern`.
    pub fn get(&self, pattern: &str) -> Option<ProfileMode> {
        self.0.iter().find(|(p, _)| p == pattern).map(|(_, m)| *m)
    }
}

impl<S: Into<String>> FromIterator<(S, ProfileMode)> for ProfileRules {
    fn from_iter<I: IntoIterator<Item = (S, ProfileMode)>>(iter: I) -> Self {
        Self(iter.into_iter().map(|(p, m)| (p.into(), m)).collect())
    }
}

impl Serialize for ProfileRules {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (pattern, mode) in &self.0 {
            map.serialize_entry(pattern, mode)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for ProfileRules {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Rules;
        impl<'de> serde::de::Visitor<'de> for Rules {
            type Value = ProfileRules;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a map of tool name or glob to full, brief, summary or hidden")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                let mut rules = Vec::new();
                while let Some((pattern, mode)) = map.next_entry::<String, ProfileMode>()? {
                    if rules
                        .iter()
                        .any(|(p, _): &(String, ProfileMode)| *p == pattern)
                    {
                        return Err(serde::de::Error::custom(format!(
                            "`{pattern}` is listed twice"
                        )));
                    }
                    rules.push((pattern, mode));
                }
                Ok(ProfileRules(rules))
            }
        }
        deserializer.deserialize_map(Rules)
    }
}

impl ToolProfileConfig {
    fn default_mode() -> ProfileMode {
        ProfileMode::Full
    }
}
