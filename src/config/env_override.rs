//! `TACKLE_SECTION_KEY=value` overrides (config.example.yaml), e.g. `TACKLE_TOOLS_CODING_TOOLS=true`.
//!
//! The variable name is matched against the known sections (longest first, since section
//! names contain underscores); the rest is the key inside that section. Values are parsed as
//! YAML scalars, so `true`, `42` and `text` get their natural types.

use serde_json::{Map, Value};

/// Top-level scalar keys that can be overridden directly (`TACKLE_STATE_DIR`).
const TOP_LEVEL: &[&str] = &["state_dir", "workspace"];
/// Sections whose scalar keys can be overridden (`TACKLE_TOOLS_CODING_TOOLS`).
const SECTIONS: &[&str] = &[
    "web_search",
    "security",
    "tools",
    "plugins",
    "skills",
    "mcp",
];
/// Variables that are not overrides.
const RESERVED: &[&str] = &["TACKLE_CONFIG", "TACKLE_LOG", "TACKLE_FUZZ_CASES"];

/// One applied override: the variable and the key it set (`tools.timeout_secs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Override {
    pub var: String,
    pub key: String,
}

/// The override that set `key` (a path like `tools.timeout_secs`), or, for an error on a
/// whole section (`unknown field `x``), the one whose field the message names.
pub fn blame<'a>(overrides: &'a [Override], key: &str, message: &str) -> Option<&'a Override> {
    overrides
        .iter()
        .rev()
        .find(|o| key == o.key || key.starts_with(&format!("{}.", o.key)))
        .or_else(|| {
            overrides.iter().rev().find(|o| {
                o.key.split_once('.').is_some_and(|(section, field)| {
                    section == key && message.contains(&format!("`{field}`"))
                })
            })
        })
}

/// Apply every `TACKLE_*` override in `vars` to `tree`; returns which keys were set by which
/// variable, so an invalid value can be blamed on its variable.
pub fn apply_env_overrides(
    tree: &mut Value,
    vars: &[(String, String)],
) -> Result<Vec<Override>, String> {
    let Some(root) = tree.as_object_mut() else {
        return Err("the config file must be a mapping of sections at the top level".to_string());
    };
    let mut applied = Vec::new();
    for (name, raw) in vars {
        let Some(rest) = name.strip_prefix("TACKLE_") else {
            continue;
        };
        if RESERVED.contains(&name.as_str()) {
            continue;
        }
        let key = rest.to_ascii_lowercase();
        if TOP_LEVEL.contains(&key.as_str()) {
            root.insert(key.clone(), scalar(raw));
            applied.push(Override {
                var: name.clone(),
                key,
            });
            continue;
        }
        let mut sections: Vec<&&str> = SECTIONS.iter().collect();
        sections.sort_by_key(|s| std::cmp::Reverse(s.len()));
        let Some((section, field)) = sections.iter().find_map(|s| {
            key.strip_prefix(&format!("{s}_"))
                .filter(|f| !f.is_empty())
                .map(|f| (**s, f.to_string()))
        }) else {
            continue; // not an override (e.g. an unrelated TACKLE_ variable)
        };
        let entry = root
            .entry(section.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        let Some(obj) = entry.as_object_mut() else {
            return Err(format!("{name}: `{section}` in the config file is not a mapping, so `{section}.{field}` cannot be set"));
        };
        obj.insert(field.clone(), scalar(raw));
        applied.push(Override {
            var: name.clone(),
            key: format!("{section}.{field}"),
        });
    }
    Ok(applied)
}

/// Parse a value as a YAML scalar (`true`, `3`, `1.5`, `[a, b]`), falling back to a string.
fn scalar(raw: &str) -> Value {
    serde_saphyr::from_str::<Value>(raw)
        .ok()
        .filter(|v| !v.is_null() || raw.trim().is_empty())
        .unwrap_or_else(|| Value::String(raw.to_string()))
}
