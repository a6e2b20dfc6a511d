//! Every key the typed config accepts appears in `config.example.yaml` (commented blocks
//! included), so the reference file cannot fall behind the code.
//!
//! The accepted keys are read from the config types themselves, not from a list kept by hand:
//! every config struct denies unknown fields, and serde's refusal of a probe key names the
//! fields the struct does accept (`unknown field `…`, expected one of `a`, `b``). Probing each
//! position of the tree that way walks structs, maps (`NAME:` keys), lists and internally
//! tagged enums (`type: telegram`) down to their leaves.

use super::{example_text, Config};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

/// A key no config struct has; its refusal lists the keys the struct has.
const PROBE: &str = "zz_probe";
/// Deeper than any real nesting; a bound, so a recursive type cannot loop.
const MAX_DEPTH: usize = 16;

/// Keys the code accepts that the example leaves out, each with why. Keep this short: a key
/// belongs in the example unless showing it would mislead.
const NOT_IN_EXAMPLE: &[(&str, &str)] = &[
    (
        "services.r8r.api_base",
        "an alias of services.r8r.url, which the example shows (its services note names it)",
    ),
    (
        "agents[].workers[].max_iterations",
        "accepted but not applied: a worker draws on its tree's one iteration pool",
    ),
];

/// Places that take the same type as one the example documents in full: a key under the first
/// counts as shown when the same key under the second is.
const SAME_AS: &[(&str, &str)] = &[("agents[].grants", "security.tool_policies.*.grants")];

/// What the config accepts at one position.
#[derive(Debug)]
enum Shape {
    /// A value with no keys of its own (a string, a number, an enum, free JSON).
    Leaf,
    Struct(BTreeMap<String, Shape>),
    /// `tag: variant` picks the fields (serde's internally tagged enum).
    Tagged {
        tag: String,
        variants: BTreeMap<String, BTreeMap<String, Shape>>,
    },
    /// Keys the operator names (`agents[].name`-like maps: `tool_policies.shell`).
    Map(Box<Shape>),
    Seq(Box<Shape>),
}

/// One step from the root to a position; `with` is the tag a variant's fields need beside them.
#[derive(Clone)]
enum Step {
    Key {
        key: String,
        with: Option<(String, String)>,
    },
    Index,
}

/// The document that places `inner` at `steps`.
fn place(steps: &[Step], inner: Value) -> Value {
    steps.iter().rev().fold(inner, |inner, step| match step {
        Step::Index => json!([inner]),
        Step::Key { key, with } => {
            let mut map = serde_json::Map::new();
            if let Some((tag, variant)) = with {
                map.insert(tag.clone(), Value::String(variant.clone()));
            }
            map.insert(key.clone(), inner);
            Value::Object(map)
        }
    })
}

/// Serde's complaint about the document, with the path it was at.
fn refusal(doc: Value) -> Option<(String, String)> {
    serde_path_to_error::deserialize::<_, Config>(doc)
        .err()
        .map(|e| (e.path().to_string(), e.inner().to_string()))
}

/// The backquoted names after `expected` in serde's message (`one of `a`, `b`` or `` `a` ``).
fn expected_names(message: &str) -> Option<Vec<String>> {
    if message.ends_with("there are no fields") {
        return Some(Vec::new());
    }
    let (_, list) = message.split_once(", expected ")?;
    Some(
        list.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect(),
    )
}

fn fields(
    steps: &[Step],
    with: Option<(String, String)>,
    names: Vec<String>,
) -> BTreeMap<String, Shape> {
    names
        .into_iter()
        .map(|name| {
            let mut next = steps.to_vec();
            next.push(Step::Key {
                key: name.clone(),
                with: with.clone(),
            });
            let shape = shape_at(&next);
            (name, shape)
        })
        .collect()
}

fn shape_at(steps: &[Step]) -> Shape {
    if steps.len() > MAX_DEPTH {
        return Shape::Leaf;
    }
    let Some((path, message)) = refusal(place(steps, json!({PROBE: 1}))) else {
        return Shape::Leaf;
    };
    if message.starts_with(&format!("unknown field `{PROBE}`")) {
        let names = expected_names(&message).unwrap_or_default();
        return Shape::Struct(fields(steps, None, names));
    }
    if let Some(tag) = message
        .strip_prefix("missing field `")
        .and_then(|m| m.strip_suffix('`'))
    {
        let Some((_, listed)) = refusal(place(steps, json!({tag: PROBE}))) else {
            return Shape::Leaf;
        };
        let mut variants = BTreeMap::new();
        for variant in expected_names(&listed).unwrap_or_default() {
            let with = Some((tag.to_string(), variant.clone()));
            let probe = json!({tag: variant, PROBE: 1});
            let names = refusal(place(steps, probe))
                .and_then(|(_, m)| expected_names(&m))
                .unwrap_or_default();
            variants.insert(variant, fields(steps, with, names));
        }
        return Shape::Tagged {
            tag: tag.to_string(),
            variants,
        };
    }
    if path.ends_with(PROBE) && !message.starts_with("unknown variant") {
        let mut next = steps.to_vec();
        next.push(Step::Key {
            key: "name".into(),
            with: None,
        });
        return Shape::Map(Box::new(shape_at(&next)));
    }
    if message.contains("expected a sequence") {
        let mut next = steps.to_vec();
        next.push(Step::Index);
        return Shape::Seq(Box::new(shape_at(&next)));
    }
    Shape::Leaf
}

/// Every key path the shape accepts: `security.tool_policies.*.grants`, `agents[].name`.
fn accepted(shape: &Shape, at: &str, out: &mut BTreeSet<String>) {
    let key = |k: &str| {
        if at.is_empty() {
            k.to_string()
        } else {
            format!("{at}.{k}")
        }
    };
    match shape {
        Shape::Leaf => {}
        Shape::Struct(fields) => {
            for (name, sub) in fields {
                out.insert(key(name));
                accepted(sub, &key(name), out);
            }
        }
        Shape::Tagged { tag, variants } => {
            out.insert(key(tag));
            for (name, sub) in variants.values().flatten() {
                out.insert(key(name));
                accepted(sub, &key(name), out);
            }
        }
        Shape::Map(sub) => accepted(sub, &key("*"), out),
        Shape::Seq(sub) => accepted(sub, &format!("{at}[]"), out),
    }
}

/// The key paths a document uses, named as [`accepted`] names them.
fn used(shape: &Shape, value: &Value, at: &str, out: &mut BTreeSet<String>) {
    let key = |k: &str| {
        if at.is_empty() {
            k.to_string()
        } else {
            format!("{at}.{k}")
        }
    };
    match (shape, value) {
        (Shape::Struct(fields), Value::Object(map)) => {
            for (name, v) in map {
                out.insert(key(name));
                if let Some(sub) = fields.get(name) {
                    used(sub, v, &key(name), out);
                }
            }
        }
        (Shape::Tagged { tag, variants }, Value::Object(map)) => {
            let variant = map.get(tag).and_then(Value::as_str);
            let fields = variant.and_then(|v| variants.get(v));
            for (name, v) in map {
                out.insert(key(name));
                if let Some(sub) = fields.and_then(|f| f.get(name)) {
                    used(sub, v, &key(name), out);
                }
            }
        }
        (Shape::Map(sub), Value::Object(map)) => {
            for v in map.values() {
                used(sub, v, &key("*"), out);
            }
        }
        (Shape::Seq(sub), Value::Array(items)) => {
            for v in items {
                used(sub, v, &format!("{at}[]"), out);
            }
        }
        _ => {}
    }
}

/// The example with keys commented out inside commented blocks back in too (`#   # preset: x`
/// → `  preset: x`, the key where its `#` was): some keys are shown only that way, so that the uncommented reference the
/// other tests parse stays a working config (a deprecated key, a preset no agent should use).
fn every_key_shown(text: &str) -> String {
    text.lines()
        .map(|line| {
            let body = line.trim_start();
            let indent = line.strip_suffix(body).unwrap_or_default();
            match body.strip_prefix("# ") {
                Some(rest) if is_key_line(rest) => format!("{indent}{rest}"),
                _ => line.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `name: value` or `- name: value`, in the config's snake_case and valid YAML on its own: a
/// key, not prose that happens to start with a word and a colon.
fn is_key_line(text: &str) -> bool {
    let text = text.strip_prefix("- ").unwrap_or(text);
    serde_saphyr::from_str::<Value>(text).is_ok_and(|v| v.is_object())
        && text.split_once(':').is_some_and(|(key, _)| {
            key.starts_with(|c: char| c.is_ascii_lowercase())
                && key
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        })
}

#[test]
fn the_probe_reads_the_config_types_as_they_are() {
    // The walk itself can fail: keys known to exist must come out of it, in their places.
    let mut keys = BTreeSet::new();
    accepted(&shape_at(&[]), "", &mut keys);
    for known in [
        "state_dir",
        "agents[].name",
        "agents[].grants.shell.allow",
        "security.tool_policies.*.grants.network.endpoints[].host",
        "security.shell_denylist",
        "channels.*.type",
        "channels.*.bot_token",
        "tool_profiles.*.default",
    ] {
        assert!(keys.contains(known), "`{known}` not found in {keys:#?}");
    }
    assert!(keys.len() > 100, "{}", keys.len());
}

#[test]
fn every_key_the_config_accepts_is_in_the_example_file() {
    let shape = shape_at(&[]);
    let mut code = BTreeSet::new();
    accepted(&shape, "", &mut code);
    let example: Value = serde_saphyr::from_str(&every_key_shown(&example_text()))
        .unwrap_or_else(|e| panic!("example: {e}"));
    let mut shown = BTreeSet::new();
    used(&shape, &example, "", &mut shown);
    let excused: BTreeSet<&str> = NOT_IN_EXAMPLE.iter().map(|(k, _)| *k).collect();
    let shown_as = |key: &str| {
        shown.contains(key)
            || SAME_AS.iter().any(|(place, documented)| {
                key.strip_prefix(place)
                    .is_some_and(|rest| shown.contains(&format!("{documented}{rest}")))
            })
    };
    let missing: Vec<&String> = code
        .iter()
        .filter(|k| !shown_as(k) && !excused.contains(k.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "{} keys the config accepts are not in config.example.yaml (add each with a one-line \
         comment, or list it in NOT_IN_EXAMPLE with why):\n{}",
        missing.len(),
        missing
            .iter()
            .map(|k| format!("  {k}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    // An exception for a key the example shows, or the code no longer has, is stale.
    for (key, _) in NOT_IN_EXAMPLE {
        assert!(
            code.contains(*key),
            "NOT_IN_EXAMPLE lists `{key}`, which the config does not accept"
        );
        assert!(
            !shown.contains(*key),
            "NOT_IN_EXAMPLE lists `{key}`, which the example shows"
        );
    }
}
