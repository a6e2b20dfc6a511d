//! A tool spec as one profile mode shows it to the model.

use super::ToolProfile;
use serde_json::{json, Map, Value};
use tackle_llm::ToolDef;
use tackle_protocol::config::ProfileMode;
use tackle_protocol::ToolSpec;

/// The definitions a provider sends for `specs` under `profile`, in registry order (prompt
/// caches depend on it); `hidden` tools are left out.
pub fn render(specs: &[ToolSpec], profile: &ToolProfile) -> Vec<ToolDef> {
    specs
        .iter()
        .filter_map(|s| render_one(s, profile.mode_for(&s.name)))
        .collect()
}

/// One spec under one mode; `None` for `hidden`.
pub fn render_one(spec: &ToolSpec, mode: ProfileMode) -> Option<ToolDef> {
    match mode {
        ProfileMode::Full => Some(ToolDef::from(spec)),
        ProfileMode::Brief => Some(ToolDef {
            name: spec.name.clone(),
            description: first_sentence(&spec.description).to_string(),
            parameters: strip_descriptions(&spec.parameters),
        }),
        ProfileMode::Summary => Some(ToolDef {
            name: spec.name.clone(),
            description: String::new(),
            parameters: json!({"type": "object", "properties": {}}),
        }),
        ProfileMode::Hidden => None,
    }
}

/// Through the first `. ` or `.\n` (the period kept), else the whole text. A period inside
/// parentheses or after `e.g`/`i.e` ends nothing: "the time (e.g. 2026-…)" is one sentence.
fn first_sentence(text: &str) -> &str {
    let mut depth = 0usize;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            '.' if depth == 0 => {
                let ends = matches!(chars.peek(), Some((_, ' ' | '\n')));
                let head = text.get(..i).unwrap_or_default();
                let abbreviation = ["e.g", "i.e"].iter().any(|a| head.ends_with(a));
                if ends && !abbreviation {
                    // `i` is a char boundary and `.` is one byte.
                    return text.get(..=i).unwrap_or(text).trim();
                }
            }
            _ => {}
        }
    }
    text.trim()
}

/// The schema with every `description` removed; names, types, enums and `required` kept.
/// Walks only schema positions, so a *property* called `description` survives.
fn strip_descriptions(schema: &Value) -> Value {
    let Value::Object(obj) = schema else {
        return schema.clone();
    };
    let mut out = Map::new();
    for (key, value) in obj {
        let kept = match key.as_str() {
            "description" => continue,
            "properties" | "$defs" | "definitions" | "patternProperties" => map_values(value),
            "items" | "additionalProperties" | "not" | "contains" | "if" | "then" | "else" => {
                strip_descriptions(value)
            }
            "anyOf" | "oneOf" | "allOf" | "prefixItems" => match value {
                Value::Array(items) => Value::Array(items.iter().map(strip_descriptions).collect()),
                other => other.clone(),
            },
            _ => value.clone(),
        };
        out.insert(key.clone(), kept);
    }
    Value::Object(out)
}

fn map_values(value: &Value) -> Value {
    match value {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), strip_descriptions(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> ToolSpec {
        ToolSpec::new(
            "write_note",
            "Write a note to the store. Overwrites an existing note.\nMore detail.",
            "test",
        )
        .parameters(json!({
                "type": "object",
                "description": "arguments",
                "properties": {
                    "description": {"type": "string", "description": "the note's text"},
                    "kind": {"type": "string", "enum": ["a", "b"], "description": "which kind"},
                    "tags": {"type": "array", "items": {"type": "string", "description": "one tag"}}
                },
                "required": ["description"]
        }))
    }

    #[test]
    fn full_is_the_spec_unchanged() {
        let d = render_one(&spec(), ProfileMode::Full).expect("shown");
        assert_eq!(d, ToolDef::from(&spec()));
    }

    #[test]
    fn brief_keeps_first_sentence_names_types_enums_and_required() {
        let d = render_one(&spec(), ProfileMode::Brief).expect("shown");
        assert_eq!(d.description, "Write a note to the store.");
        assert_eq!(
            d.parameters,
            json!({
                "type": "object",
                "properties": {
                    "description": {"type": "string"},
                    "kind": {"type": "string", "enum": ["a", "b"]},
                    "tags": {"type": "array", "items": {"type": "string"}}
                },
                "required": ["description"]
            })
        );
    }

    #[test]
    fn first_sentence_ends_at_period_space_or_period_newline() {
        assert_eq!(first_sentence("One.\nTwo. Three"), "One.");
        assert_eq!(first_sentence("v1.2 is out. Yes"), "v1.2 is out.");
        assert_eq!(first_sentence("No period"), "No period");
        assert_eq!(first_sentence("Ends here."), "Ends here.");
        assert_eq!(first_sentence("Ünïcode é. Rest"), "Ünïcode é.");
        assert_eq!(
            first_sentence("Returns the time (e.g. 2026-01-01). More."),
            "Returns the time (e.g. 2026-01-01)."
        );
        assert_eq!(
            first_sentence("Pick one, e.g. this. Then"),
            "Pick one, e.g. this."
        );
    }

    #[test]
    fn summary_is_name_only_with_an_empty_object_schema() {
        let d = render_one(&spec(), ProfileMode::Summary).expect("shown");
        assert_eq!(d.name, "write_note");
        assert_eq!(d.description, "");
        assert_eq!(d.parameters, json!({"type": "object", "properties": {}}));
    }

    #[test]
    fn hidden_is_not_rendered() {
        assert!(render_one(&spec(), ProfileMode::Hidden).is_none());
    }
}
