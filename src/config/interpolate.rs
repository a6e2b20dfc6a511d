//! `${VAR}` (and `${VAR:-default}`) in string values, resolved after YAML parsing so an
//! environment value can never change the document's structure.

use serde_json::Value;

/// One string that had `${…}` in it: where (`backends[0].api_key`), what it became, and each
/// value put in (environment values and `:-` defaults). When the string is a credential, each
/// inserted value is one too, wherever it later appears without the rest (`Bearer ${TOKEN}`).
pub struct Substitution {
    pub path: String,
    pub result: String,
    pub inserted: Vec<String>,
}

/// Resolve every `${VAR}` of `tree`; returns what was put where.
pub fn interpolate(
    tree: &mut Value,
    env: &dyn Fn(&str) -> Option<String>,
    warnings: &mut Vec<String>,
) -> Vec<Substitution> {
    let mut done = Vec::new();
    walk(tree, String::new(), env, warnings, &mut done);
    done
}

fn walk(
    v: &mut Value,
    path: String,
    env: &dyn Fn(&str) -> Option<String>,
    warnings: &mut Vec<String>,
    done: &mut Vec<Substitution>,
) {
    match v {
        Value::String(s) if s.contains("${") => {
            let mut inserted = Vec::new();
            *s = substitute(s, &path, env, warnings, &mut inserted);
            done.push(Substitution {
                path,
                result: s.clone(),
                inserted,
            });
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                walk(item, format!("{path}[{i}]"), env, warnings, done);
            }
        }
        Value::Object(map) => {
            for (k, item) in map.iter_mut() {
                let child = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                walk(item, child, env, warnings, done);
            }
        }
        _ => {}
    }
}

fn substitute(
    s: &str,
    path: &str,
    env: &dyn Fn(&str) -> Option<String>,
    warnings: &mut Vec<String>,
    inserted: &mut Vec<String>,
) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        out.push_str(rest.get(..start).unwrap_or(""));
        let after = rest.get(start + 2..).unwrap_or("");
        let Some(end) = after.find('}') else {
            out.push_str(rest.get(start..).unwrap_or(""));
            return out;
        };
        let expr = after.get(..end).unwrap_or("");
        let (name, default) = match expr.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (expr, None),
        };
        match env(name).filter(|v| !v.is_empty()) {
            Some(value) => {
                out.push_str(&value);
                inserted.push(value);
            }
            None => match default {
                Some(d) => {
                    out.push_str(d);
                    inserted.push(d.to_string());
                }
                None => warnings.push(format!("{path}: environment variable {name} is not set (used as `${{{name}}}`); the value is empty")),
            },
        }
        rest = after.get(end + 1..).unwrap_or("");
    }
    out.push_str(rest);
    out
}
