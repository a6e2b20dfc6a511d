//! How a config error reads: the file's name (not `<input>`), the line and column of the key
//! at fault, "did you mean" for a misspelt key or value, and types in words ("a whole number
//! ≥ 0", not "u32").

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::Spanned;
use std::fmt;

/// A YAML syntax error, its snippet headed by the file's name.
pub fn yaml_error(e: &serde_saphyr::Error, origin: &str) -> String {
    e.render_with_options(serde_saphyr::render_options! {
        source_name: Some(origin),
    })
}

/// Where `key` (as errors show it: `agents[0].max_iterations`) is written in `text`, as
/// 1-based (line, column): the key itself for a mapping entry, the item for a list entry; for
/// a key that is not there, the closest enclosing one that is.
pub fn locate(text: &str, key: &str) -> Option<(u64, u64)> {
    let root: Spanned<Node> = serde_saphyr::from_str(text).ok()?;
    let mut at = None;
    let mut node = &root.value;
    for seg in segments(key) {
        let next = match (node, &seg) {
            (Node::Map(entries), Segment::Key(k)) => entries
                .iter()
                .find(|(name, _)| name.value == *k)
                .map(|(name, value)| (name.referenced, value)),
            (Node::Seq(items), Segment::Index(i)) => {
                items.get(*i).map(|item| (item.referenced, item))
            }
            _ => None,
        };
        let Some((loc, value)) = next else {
            break;
        };
        at = Some(loc);
        node = &value.value;
    }
    at.filter(|l| l.line() > 0).map(|l| (l.line(), l.column()))
}

/// A serde message in the config's words: unknown keys and values with "did you mean", type
/// names spelled out.
pub fn friendly(message: &str) -> String {
    if let Some(out) = unknown(message, "unknown field", "unknown key") {
        return out;
    }
    if let Some(out) = unknown(message, "unknown variant", "unknown value") {
        return out;
    }
    type_words(message)
}

/// `unknown field `x`, expected one of `a`, `b`` → `unknown key `x`; did you mean `a`?`, or
/// the list of what is allowed when nothing is close.
fn unknown(message: &str, serde_words: &str, ours: &str) -> Option<String> {
    let rest = message.strip_prefix(serde_words)?.trim_start();
    let rest = rest.strip_prefix('`')?;
    let (name, rest) = rest.split_once('`')?;
    let expected: Vec<&str> = rest
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| !s.is_empty())
        .collect();
    let near = tackle_protocol::suggest::nearest(name, expected.iter().copied(), 0.8);
    Some(match (near.first(), expected.is_empty()) {
        (Some(best), _) => format!("{ours} `{name}`; did you mean `{best}`?"),
        (None, false) => format!(
            "{ours} `{name}`; expected one of {}",
            expected
                .iter()
                .map(|e| format!("`{e}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        (None, true) => format!("{ours} `{name}`; nothing is expected here"),
    })
}

/// Rust type names in serde's "expected …" as words a config's reader knows.
fn type_words(message: &str) -> String {
    const WORDS: [(&str, &str); 12] = [
        ("u8", "a whole number ≥ 0"),
        ("u16", "a whole number ≥ 0"),
        ("u32", "a whole number ≥ 0"),
        ("u64", "a whole number ≥ 0"),
        ("usize", "a whole number ≥ 0"),
        ("i8", "a whole number"),
        ("i16", "a whole number"),
        ("i32", "a whole number"),
        ("i64", "a whole number"),
        ("isize", "a whole number"),
        ("f32", "a number"),
        ("f64", "a number"),
    ];
    let Some((head, ty)) = message.rsplit_once("expected ") else {
        return message.to_string();
    };
    match WORDS.iter().find(|(rust, _)| *rust == ty.trim()) {
        Some((_, words)) => format!("{head}expected {words}"),
        None => message.to_string(),
    }
}

enum Segment {
    Key(String),
    Index(usize),
}

/// `a.b[0].c` → `a`, `b`, `0`, `c`. A key with a dot in it is not found, which only costs
/// the location.
fn segments(key: &str) -> Vec<Segment> {
    let mut out = Vec::new();
    for part in key.split('.') {
        let (name, mut rest) = part.split_once('[').map_or((part, ""), |(n, r)| (n, r));
        if !name.is_empty() {
            out.push(Segment::Key(name.to_string()));
        }
        while let Some((index, after)) = rest.split_once(']') {
            if let Ok(i) = index.parse() {
                out.push(Segment::Index(i));
            }
            rest = after.strip_prefix('[').unwrap_or(after);
        }
    }
    out
}

/// A YAML tree that keeps where each key and item was written.
enum Node {
    Map(Vec<(Spanned<String>, Spanned<Node>)>),
    Seq(Vec<Spanned<Node>>),
    Leaf,
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

/// A mapping key of any scalar type, as text.
struct KeyText(String);

impl<'de> Deserialize<'de> for KeyText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        Ok(KeyText(match v {
            serde_json::Value::String(s) => s,
            other => other.to_string(),
        }))
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Node, E> {
        Ok(Node::Leaf)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Node, E> {
        Ok(Node::Leaf)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Node, E> {
        Ok(Node::Leaf)
    }
    fn visit_i128<E>(self, _: i128) -> Result<Node, E> {
        Ok(Node::Leaf)
    }
    fn visit_u128<E>(self, _: u128) -> Result<Node, E> {
        Ok(Node::Leaf)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Node, E> {
        Ok(Node::Leaf)
    }
    fn visit_str<E>(self, _: &str) -> Result<Node, E> {
        Ok(Node::Leaf)
    }
    fn visit_bytes<E>(self, _: &[u8]) -> Result<Node, E> {
        Ok(Node::Leaf)
    }
    fn visit_unit<E>(self) -> Result<Node, E> {
        Ok(Node::Leaf)
    }
    fn visit_none<E>(self) -> Result<Node, E> {
        Ok(Node::Leaf)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        Node::deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Spanned<Node>>()? {
            items.push(item);
        }
        Ok(Node::Seq(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<Spanned<KeyText>>()? {
            let value = map.next_value::<Spanned<Node>>()?;
            let name = Spanned {
                value: key.value.0,
                referenced: key.referenced,
                defined: key.defined,
            };
            entries.push((name, value));
        }
        Ok(Node::Map(entries))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "state_dir: /tmp/x\nagents:\n  - name: a\n    max_iterations: 5\n  - name: b\n    max_iteration: 7\n";

    #[test]
    fn keys_and_items_are_found_where_they_are_written() {
        assert_eq!(locate(TEXT, "state_dir"), Some((1, 1)));
        assert_eq!(locate(TEXT, "agents[0].max_iterations"), Some((4, 5)));
        assert_eq!(locate(TEXT, "agents[1].max_iteration"), Some((6, 5)));
        // A key that is not written: the closest enclosing one.
        assert_eq!(locate(TEXT, "agents[1].backend"), locate(TEXT, "agents[1]"));
        assert_eq!(locate("", "a"), None);
        assert_eq!(locate("- [unclosed", "a"), None);
    }

    #[test]
    fn unknown_keys_get_a_suggestion_and_types_read_as_words() {
        let m =
            "unknown field `max_iteration`, expected one of `name`, `backend`, `max_iterations`";
        assert_eq!(
            friendly(m),
            "unknown key `max_iteration`; did you mean `max_iterations`?"
        );
        let m = "unknown field `zzz`, expected `name` or `backend`";
        assert_eq!(
            friendly(m),
            "unknown key `zzz`; expected one of `name`, `backend`"
        );
        assert_eq!(
            friendly("invalid type: string \"lots\", expected u32"),
            "invalid type: string \"lots\", expected a whole number ≥ 0"
        );
        assert_eq!(friendly("something else"), "something else");
    }
}
