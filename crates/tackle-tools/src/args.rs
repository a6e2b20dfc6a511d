//! A tool's arguments as one type: its JSON Schema (what the model and MCP clients see) is
//! derived from the same `Args` struct that reads them, so the two cannot disagree, and every
//! tool reads its arguments the same way.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tackle_protocol::ToolError;

/// The JSON Schema of a tool's `Args`, in the shape providers take and the model reads
/// cheaply (see [`for_providers`]).
pub(crate) fn schema<T: JsonSchema>() -> Value {
    let mut schema = derived::<T>();
    for_providers(&mut schema, Nulls::Dropped);
    schema
}

/// [`schema`] for arguments where `null` means something (it clears a value), so an optional
/// field stays "its type or null".
pub(crate) fn schema_with_nulls<T: JsonSchema>() -> Value {
    let mut schema = derived::<T>();
    for_providers(&mut schema, Nulls::Kept);
    schema
}

fn derived<T: JsonSchema>() -> Value {
    schemars::SchemaGenerator::new(schemars::generate::SchemaSettings::draft2020_12())
        .into_root_schema_for::<T>()
        .to_value()
}

/// Whether an optional field's schema also allows `null`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Nulls {
    Dropped,
    Kept,
}

/// Shapes a derived schema for tool definitions:
/// - no `$schema` and `title` keys, which providers do not want;
/// - one object at the top: Anthropic refuses a tool whose schema has `oneOf`, `anyOf` or
///   `allOf` there, so a tagged enum's alternatives are merged into one object (every field of
///   every action, only the fields all actions need required); the enum still reads each
///   action exactly, so a field an action lacks is refused when the call is read;
/// - an optional field is its type, not "its type or null" (what the hand-written schemas
///   said, and fewer tokens on every request), and integer `format`s and `default: null`,
///   which say nothing a model uses, are dropped.
pub(crate) fn for_providers(schema: &mut Value, nulls: Nulls) {
    if let Some(obj) = schema.as_object_mut() {
        obj.remove("$schema");
        obj.remove("title");
    }
    merge_alternatives(schema);
    strip(schema, nulls);
}

fn merge_alternatives(schema: &mut Value) {
    let Some(variants) = schema
        .as_object_mut()
        .and_then(|o| o.remove("oneOf"))
        .and_then(|v| v.as_array().cloned())
    else {
        return;
    };
    let mut properties = serde_json::Map::new();
    let mut required: Option<Vec<Value>> = None;
    for variant in &variants {
        if let Some(props) = variant.get("properties").and_then(Value::as_object) {
            for (name, prop) in props {
                match properties.get_mut(name) {
                    None => {
                        properties.insert(name.clone(), prop.clone());
                    }
                    Some(seen) => widen(seen, prop),
                }
            }
        }
        let needs: Vec<Value> = variant
            .get("required")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        required = Some(match required {
            None => needs,
            Some(all) => all.into_iter().filter(|r| needs.contains(r)).collect(),
        });
    }
    if let Some(obj) = schema.as_object_mut() {
        obj.insert("type".into(), Value::from("object"));
        obj.insert("properties".into(), Value::Object(properties));
        obj.insert(
            "required".into(),
            Value::Array(required.unwrap_or_default()),
        );
        obj.insert("additionalProperties".into(), Value::Bool(false));
    }
}

/// A property two actions both have: its allowed values are those of either (a tag's `const`
/// becomes the list of every action's).
fn widen(seen: &mut Value, other: &Value) {
    let values = |v: &Value| -> Vec<Value> {
        match (v.get("const"), v.get("enum").and_then(Value::as_array)) {
            (Some(c), _) => vec![c.clone()],
            (None, Some(e)) => e.clone(),
            (None, None) => Vec::new(),
        }
    };
    let (mut mine, theirs) = (values(seen), values(other));
    if mine.is_empty() || theirs.is_empty() {
        return;
    }
    for v in theirs {
        if !mine.contains(&v) {
            mine.push(v);
        }
    }
    if let Some(obj) = seen.as_object_mut() {
        obj.remove("const");
        obj.insert("enum".into(), Value::Array(mine));
    }
}

fn strip(schema: &mut Value, nulls: Nulls) {
    match schema {
        Value::Object(obj) => {
            if nulls == Nulls::Dropped {
                drop_null(obj);
            }
            if obj.get("format").and_then(Value::as_str).is_some_and(|f| {
                f.starts_with("int") || f.starts_with("uint") || f == "double" || f == "float"
            }) {
                obj.remove("format");
            }
            for v in obj.values_mut() {
                strip(v, nulls);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| strip(v, nulls)),
        _ => {}
    }
}

/// An optional field as its type alone: `[T, "null"]` becomes `T`, `anyOf: [S, null]` becomes
/// `S`, and `null` leaves its `enum` and `default`.
fn drop_null(obj: &mut serde_json::Map<String, Value>) {
    if let Some(Value::Array(types)) = obj.get("type") {
        let kept: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        if let (Some(only), 2) = (kept.first(), types.len()) {
            if kept.len() == 1 {
                obj.insert("type".into(), only.clone());
                if let Some(Value::Array(values)) = obj.get_mut("enum") {
                    values.retain(|v| !v.is_null());
                }
            }
        }
    }
    // `Option` of a type with its own schema: `anyOf: [that, {type: null}]`.
    if let Some(Value::Array(alternatives)) = obj.get("anyOf") {
        let not_null: Vec<&Value> = alternatives
            .iter()
            .filter(|a| a.get("type").and_then(Value::as_str) != Some("null"))
            .collect();
        if let (Some(only), 2, 1) = (not_null.first(), alternatives.len(), not_null.len()) {
            let only = (*only).clone();
            obj.remove("anyOf");
            if let Value::Object(inner) = only {
                for (k, v) in inner {
                    obj.entry(k).or_insert(v);
                }
            }
        }
    }
    if obj.get("default").is_some_and(Value::is_null) {
        obj.remove("default");
    }
}

/// Reads a tool's arguments, serde's message becoming an `invalid_arguments` the model can act
/// on. The dispatcher validates against the schema first; this is the second line for callers
/// that skip it (tests, other crates).
pub(crate) fn parse<T: DeserializeOwned>(args: Value) -> Result<T, ToolError> {
    serde_json::from_value(args)
        .map_err(|e| ToolError::invalid_arguments(format!("invalid arguments: {e}")))
}

/// [`parse`], the message naming the tool (for tools that share one `Args` reader).
pub(crate) fn parse_for<T: DeserializeOwned>(tool: &str, args: Value) -> Result<T, ToolError> {
    serde_json::from_value(args)
        .map_err(|e| ToolError::invalid_arguments(format!("invalid arguments for `{tool}`: {e}")))
}

/// A per-call hook's answer (`approval_for`, `sink`) decided from the tool's typed `Args`,
/// so the rule is written once against the fields `call` reads, not against JSON keys.
///
/// Fails closed: when `args` do not read as `T` (the schema accepted something the type
/// refuses, such as a number beyond its range, or a field the type does not know yet), the
/// answer is `strictest` — the strictest approval the tool can ask for, or "this is a sink".
/// The hook answers before `call`, which would refuse such arguments, but an unread object
/// must never count as harmless: a lenient guess there would let a call past the person.
pub(crate) fn decide<T: DeserializeOwned, R>(
    args: &Value,
    strictest: R,
    decide: impl FnOnce(T) -> R,
) -> R {
    match <T as serde::Deserialize>::deserialize(args) {
        Ok(typed) => decide(typed),
        Err(_) => strictest,
    }
}

/// Test checks of a tool's argument contract, as the dispatcher sees it: the schema compiles as
/// draft 2020-12, and names the properties the model may send and must send.
#[cfg(test)]
pub(crate) mod contract {
    use crate::mock_host::MockHost;
    use serde_json::Value;
    use std::sync::Arc;
    use tackle_protocol::{ErrorKind, Tool};

    /// An object schema's property names and its `required` list, both sorted.
    pub(crate) fn names(schema: &Value) -> (Vec<String>, Vec<String>) {
        let mut properties: Vec<String> = schema["properties"]
            .as_object()
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        let mut required: Vec<String> = schema["required"]
            .as_array()
            .map(|r| {
                r.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        properties.sort();
        required.sort();
        (properties, required)
    }

    /// Asserts `schema` names exactly `properties` and requires exactly `required`.
    pub(crate) fn assert_names(schema: &Value, properties: &[&str], required: &[&str]) {
        let sorted = |names: &[&str]| {
            let mut v: Vec<String> = names.iter().map(|s| s.to_string()).collect();
            v.sort();
            v
        };
        assert_eq!(
            names(schema),
            (sorted(properties), sorted(required)),
            "{schema:#}"
        );
    }

    /// The tool called `name` among `tools`.
    pub(crate) fn named(tools: Vec<Arc<dyn Tool>>, name: &str) -> Arc<dyn Tool> {
        tools
            .into_iter()
            .find(|t| t.spec().name == name)
            .unwrap_or_else(|| panic!("no tool `{name}`"))
    }

    /// Asserts, for each `(name, properties, required)`, that `tool(name)`'s schema names
    /// exactly those and refuses any other field.
    pub(crate) fn assert_closed(
        tool: impl Fn(&str) -> Arc<dyn Tool>,
        cases: &[(&str, &[&str], &[&str])],
    ) {
        for (name, properties, required) in cases {
            let schema = tool(name).spec().parameters;
            assert_names(&schema, properties, required);
            assert_eq!(schema["additionalProperties"], false, "{name}");
        }
    }

    /// Whether the dispatcher's validator accepts `args` (the schema must compile).
    pub(crate) fn accepts(schema: &Value, args: &Value) -> bool {
        match jsonschema::draft202012::new(schema) {
            Ok(validator) => validator.is_valid(args),
            Err(e) => panic!("schema does not compile: {e}\n{schema:#}"),
        }
    }

    /// Asserts that the validator accepts `valid` but not `valid` plus an unknown field, nor
    /// `valid` without any one of `required`; and that `call`, which tests and other crates
    /// reach without the validator, refuses the same with `invalid_arguments` before asking
    /// the host for anything.
    pub(crate) async fn assert_refusals(tool: &dyn Tool, valid: Value, required: &[&str]) {
        let name = tool.spec().name;
        let schema = tool.spec().parameters;
        assert!(accepts(&schema, &valid), "{name}: {valid}");
        let mut bad = Vec::new();
        let mut unknown = valid.clone();
        unknown["no_such_field"] = Value::Bool(true);
        bad.push(unknown);
        for field in required {
            let mut missing = valid.clone();
            if let Some(obj) = missing.as_object_mut() {
                assert!(
                    obj.remove(*field).is_some(),
                    "{name}: `{field}` not in {valid}"
                );
            }
            bad.push(missing);
        }
        for args in bad {
            assert!(!accepts(&schema, &args), "{name} accepts {args}");
            let host = Arc::new(MockHost::new());
            let out = tool.call(args.clone(), &host.context()).await;
            assert_eq!(
                out.err().map(|e| e.kind),
                Some(ErrorKind::InvalidArguments),
                "{name}: {args}"
            );
            assert!(host.capabilities().is_empty(), "{name}: {args}");
            assert!(host.http_requests().is_empty(), "{name}: {args}");
        }
    }
}
