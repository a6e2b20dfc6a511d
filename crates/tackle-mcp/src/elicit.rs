//! Elicitation on the client side: a configured server asks the person for input in the
//! middle of a call (`elicitation/create`, form mode).
//!
//! The request is handed to the front end's [`ElicitationHandler`] (set on
//! [`McpOptions`](crate::McpOptions)), named after the server that sent it. Without a handler
//! that can ask, the capability is not declared and every request is declined: nothing is ever
//! accepted on the person's behalf. [`Form`] reads a requested schema into fields that a front
//! end can ask one at a time, with their defaults (SEP-1034) and choices (SEP-1330), and checks
//! each answer against its field.

use async_trait::async_trait;
use serde_json::{Map, Number, Value};

/// What a server asks for: a message and the schema of the answer (an object of primitives).
#[derive(Debug, Clone, PartialEq)]
pub struct ElicitRequest {
    /// The server's question, untrusted text to show as the server's words.
    pub message: String,
    /// The `requestedSchema`, as the server sent it.
    pub schema: Value,
}

/// The person's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitAnswer {
    /// The form, filled in: one value per answered field.
    Accept(Map<String, Value>),
    /// The person said no.
    Decline,
    /// The person dismissed the question (Ctrl-C).
    Cancel,
}

/// Why an elicitation could not be put to anyone.
#[derive(Debug, thiserror::Error)]
pub enum ElicitError {
    /// The requested schema is not a form of primitive fields.
    #[error("the requested schema is not a form that can be asked: {0}")]
    Schema(String),
    /// Nobody can be asked (no terminal, input closed); the request is declined.
    #[error("cannot ask: {0}")]
    Unavailable(String),
}

/// The front end's side of elicitation.
#[async_trait]
pub trait ElicitationHandler: Send + Sync {
    /// Whether this handler can put a question to someone. Only then is the `elicitation`
    /// capability declared to servers.
    fn can_ask(&self) -> bool;

    /// Ask on behalf of `server` (its name under `mcp_servers`).
    async fn elicit(
        &self,
        server: &str,
        request: ElicitRequest,
    ) -> Result<ElicitAnswer, ElicitError>;
}

/// Declines every request; the default when no front end can ask.
pub struct DeclineAll;

#[async_trait]
impl ElicitationHandler for DeclineAll {
    fn can_ask(&self) -> bool {
        false
    }

    async fn elicit(
        &self,
        _server: &str,
        _request: ElicitRequest,
    ) -> Result<ElicitAnswer, ElicitError> {
        Ok(ElicitAnswer::Decline)
    }
}

/// One choice of an enumerated field: the value sent, and the title shown (if any).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// What goes back to the server when it is chosen.
    pub value: String,
    /// What the person is shown instead of `value`, when the schema gives it.
    pub title: Option<String>,
}

impl Choice {
    /// What the person sees for it.
    pub fn label(&self) -> &str {
        self.title.as_deref().unwrap_or(&self.value)
    }
}

/// What kind of answer a field takes.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// A string (`type: string`).
    Text {
        /// The fewest characters an answer may have.
        min_length: Option<u64>,
        /// The most characters an answer may have.
        max_length: Option<u64>,
        /// `email`, `uri`, `date` or `date-time`.
        format: Option<String>,
    },
    /// A number (`type: number`, or `integer`).
    Number {
        /// Only whole numbers are accepted (`type: integer`).
        integer: bool,
        /// The smallest value accepted (inclusive).
        minimum: Option<f64>,
        /// The largest value accepted (inclusive).
        maximum: Option<f64>,
    },
    /// Yes or no (`type: boolean`).
    Boolean,
    /// One of the choices (`enum`, or `oneOf` of `const`/`title`).
    OneOf(Vec<Choice>),
    /// Several of the choices (`type: array` with `items.enum` or `items.anyOf`).
    ManyOf {
        /// What may be chosen.
        choices: Vec<Choice>,
        /// The fewest choices an answer may hold.
        min_items: Option<u64>,
        /// The most choices an answer may hold.
        max_items: Option<u64>,
    },
}

/// One question of the form.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// The property name, the key of the answer.
    pub name: String,
    /// The label to show, when the schema gives one (otherwise `name`).
    pub title: Option<String>,
    /// The schema's explanation of the field, the server's text.
    pub description: Option<String>,
    /// The schema lists it under `required`: the form cannot be sent without it.
    pub required: bool,
    /// What kind of answer it takes, with its limits.
    pub kind: Kind,
    /// The schema's `default`, when it is a valid answer for this field.
    pub default: Option<Value>,
}

/// A requested schema, read into the questions to ask.
#[derive(Debug, Clone, PartialEq)]
pub struct Form {
    /// The questions, in the order to ask them.
    pub fields: Vec<Field>,
}

/// Limits on what is read from a server's schema.
const MAX_FIELDS: usize = 64;
const MAX_CHOICES: usize = 256;

impl Form {
    /// Read `schema` (`{"type": "object", "properties": {…}, "required": […]}`). Fields are in
    /// the order the schema lists its properties (JSON objects keep their order here).
    pub fn from_schema(schema: &Value) -> Result<Self, ElicitError> {
        let bad = |why: &str| ElicitError::Schema(why.to_string());
        let obj = schema.as_object().ok_or_else(|| bad("not an object"))?;
        if let Some(t) = obj.get("type") {
            if t != "object" {
                return Err(bad("its `type` is not `object`"));
            }
        }
        let required: Vec<&str> = obj
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let empty = Map::new();
        let props = match obj.get("properties") {
            None => &empty,
            Some(p) => p
                .as_object()
                .ok_or_else(|| bad("`properties` is not an object"))?,
        };
        if props.len() > MAX_FIELDS {
            return Err(bad("it has too many fields"));
        }
        let mut fields = Vec::with_capacity(props.len());
        for (name, prop) in props {
            fields.push(Field::from_schema(
                name,
                prop,
                required.contains(&name.as_str()),
            )?);
        }
        if let Some(missing) = required.iter().find(|r| !props.contains_key(**r)) {
            return Err(ElicitError::Schema(format!(
                "required field `{missing}` is not among its properties"
            )));
        }
        Ok(Self { fields })
    }
}

fn text_of(v: &Value, key: &str) -> Option<String> {
    v.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
        .map(str::to_string)
}

/// A list of choices a form field cannot offer.
#[derive(Debug, thiserror::Error)]
enum BadChoices {
    #[error("an `enum` value is not a string")]
    EnumNotText,
    #[error("a `{list_key}` entry has no string `const`")]
    NoConst { list_key: String },
}

/// `["a", "b"]` (with optional parallel `enumNames`) or `[{"const": "a", "title": "A"}, …]`.
fn choices(prop: &Value, list_key: &str) -> Option<Result<Vec<Choice>, BadChoices>> {
    if let Some(values) = prop.get("enum").and_then(Value::as_array) {
        let names = prop.get("enumNames").and_then(Value::as_array);
        let out: Option<Vec<Choice>> = values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                Some(Choice {
                    value: v.as_str()?.to_string(),
                    title: names
                        .and_then(|n| n.get(i))
                        .and_then(Value::as_str)
                        .map(str::to_string),
                })
            })
            .collect();
        return Some(out.ok_or(BadChoices::EnumNotText));
    }
    let list = prop.get(list_key).and_then(Value::as_array)?;
    let out: Option<Vec<Choice>> = list
        .iter()
        .map(|c| {
            Some(Choice {
                value: c.get("const")?.as_str()?.to_string(),
                title: text_of(c, "title"),
            })
        })
        .collect();
    Some(out.ok_or_else(|| BadChoices::NoConst {
        list_key: list_key.to_string(),
    }))
}

impl Field {
    fn from_schema(name: &str, prop: &Value, required: bool) -> Result<Self, ElicitError> {
        let bad = |why: String| ElicitError::Schema(format!("field `{name}`: {why}"));
        let ty = prop.get("type").and_then(Value::as_str);
        let uint = |key: &str| prop.get(key).and_then(Value::as_u64);
        let num = |key: &str| prop.get(key).and_then(Value::as_f64);
        let checked = |list: Vec<Choice>| {
            if list.is_empty() || list.len() > MAX_CHOICES {
                Err(bad(format!(
                    "it offers {} choices (1 to {MAX_CHOICES} can be asked)",
                    list.len()
                )))
            } else {
                Ok(list)
            }
        };
        let kind = match ty {
            Some("array") => {
                let items = prop.get("items").unwrap_or(&Value::Null);
                let list = choices(items, "anyOf")
                    .ok_or_else(|| {
                        bad("an array field needs `items` with `enum` or `anyOf`".into())
                    })?
                    .map_err(|e| bad(e.to_string()))?;
                Kind::ManyOf {
                    choices: checked(list)?,
                    min_items: uint("minItems"),
                    max_items: uint("maxItems"),
                }
            }
            Some("string") | None if prop.get("enum").is_some() || prop.get("oneOf").is_some() => {
                let list = choices(prop, "oneOf")
                    .ok_or_else(|| bad("no choices".into()))?
                    .map_err(|e| bad(e.to_string()))?;
                Kind::OneOf(checked(list)?)
            }
            Some("string") => Kind::Text {
                min_length: uint("minLength"),
                max_length: uint("maxLength"),
                format: text_of(prop, "format"),
            },
            Some(t @ ("number" | "integer")) => Kind::Number {
                integer: t == "integer",
                minimum: num("minimum"),
                maximum: num("maximum"),
            },
            Some("boolean") => Kind::Boolean,
            Some(other) => return Err(bad(format!("type `{other}` cannot be asked"))),
            None => return Err(bad("it has no `type`".into())),
        };
        let mut field = Self {
            name: name.to_string(),
            title: text_of(prop, "title"),
            description: text_of(prop, "description"),
            required,
            kind,
            default: None,
        };
        // A default is offered only when it is itself a valid answer.
        field.default = prop
            .get("default")
            .filter(|d| field.check(d).is_ok())
            .cloned();
        Ok(field)
    }

    /// What the person sees as the question's name.
    pub fn label(&self) -> &str {
        self.title.as_deref().unwrap_or(&self.name)
    }

    /// The choices offered, if the field is enumerated.
    pub fn choices(&self) -> Option<&[Choice]> {
        match &self.kind {
            Kind::OneOf(c) => Some(c),
            Kind::ManyOf { choices, .. } => Some(choices),
            _ => None,
        }
    }

    /// The default as the person would type it.
    pub fn default_shown(&self) -> Option<String> {
        let d = self.default.as_ref()?;
        Some(match (d, &self.kind) {
            (Value::Bool(true), _) => "yes".to_string(),
            (Value::Bool(false), _) => "no".to_string(),
            (Value::String(s), Kind::OneOf(c)) => label_of(c, s),
            (Value::Array(items), Kind::ManyOf { choices, .. }) => items
                .iter()
                .filter_map(Value::as_str)
                .map(|s| label_of(choices, s))
                .collect::<Vec<_>>()
                .join(", "),
            (Value::String(s), _) => s.clone(),
            (other, _) => other.to_string(),
        })
    }

    /// A short hint of what is accepted (`yes/no`, `a number from 1 to 5`, …).
    pub fn hint(&self) -> Option<String> {
        match &self.kind {
            Kind::Boolean => Some("yes/no".into()),
            Kind::Number {
                integer,
                minimum,
                maximum,
            } => {
                let what = if *integer {
                    "a whole number"
                } else {
                    "a number"
                };
                Some(match (minimum, maximum) {
                    (Some(lo), Some(hi)) => format!("{what} from {lo} to {hi}"),
                    (Some(lo), None) => format!("{what}, at least {lo}"),
                    (None, Some(hi)) => format!("{what}, at most {hi}"),
                    (None, None) => what.to_string(),
                })
            }
            Kind::Text { format, .. } => format.clone(),
            Kind::OneOf(_) => Some("a number or a value".into()),
            Kind::ManyOf { .. } => Some("numbers or values, separated by commas".into()),
        }
    }

    /// Read what the person typed (not empty) into this field's value, or say what is wrong.
    pub fn parse(&self, input: &str) -> Result<Value, NotAnAnswer> {
        let input = input.trim();
        let value = match &self.kind {
            Kind::Text { .. } => Value::String(input.to_string()),
            Kind::Boolean => match input.to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" => Value::Bool(true),
                "n" | "no" | "false" => Value::Bool(false),
                _ => return Err("answer yes or no".into()),
            },
            Kind::Number { integer: true, .. } => input
                .parse::<i64>()
                .map(Value::from)
                .map_err(|_| "enter a whole number".to_string())?,
            Kind::Number { integer: false, .. } => input
                .parse::<f64>()
                .ok()
                .and_then(Number::from_f64)
                .map(Value::Number)
                .ok_or_else(|| "enter a number".to_string())?,
            Kind::OneOf(choices) => Value::String(pick(choices, input)?),
            Kind::ManyOf { choices, .. } => {
                let mut picked: Vec<Value> = Vec::new();
                for part in input.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                    let v = Value::String(pick(choices, part)?);
                    if !picked.contains(&v) {
                        picked.push(v);
                    }
                }
                Value::Array(picked)
            }
        };
        self.check(&value)?;
        Ok(value)
    }

    /// Is `value` a valid answer for this field?
    pub fn check(&self, value: &Value) -> Result<(), NotAnAnswer> {
        match (&self.kind, value) {
            (
                Kind::Text {
                    min_length,
                    max_length,
                    format,
                },
                Value::String(s),
            ) => {
                let n = s.chars().count() as u64;
                if min_length.is_some_and(|m| n < m) || max_length.is_some_and(|m| n > m) {
                    return Err(NotAnAnswer(match (min_length, max_length) {
                        (Some(lo), Some(hi)) => format!("enter {lo} to {hi} characters"),
                        (Some(lo), None) => format!("enter at least {lo} characters"),
                        (_, Some(hi)) => format!("enter at most {hi} characters"),
                        (None, None) => String::new(),
                    }));
                }
                match format.as_deref() {
                    Some(f) if !format_ok(f, s) => Err(format!("not a valid {f}").into()),
                    _ => Ok(()),
                }
            }
            (Kind::Boolean, Value::Bool(_)) => Ok(()),
            (
                Kind::Number {
                    integer,
                    minimum,
                    maximum,
                },
                Value::Number(n),
            ) => {
                if *integer && n.as_i64().is_none() && n.as_u64().is_none() {
                    return Err("enter a whole number".into());
                }
                let x = n.as_f64().unwrap_or(f64::NAN);
                if minimum.is_some_and(|m| x < m) || maximum.is_some_and(|m| x > m) || x.is_nan() {
                    return Err(NotAnAnswer(
                        self.hint()
                            .unwrap_or_default()
                            .replacen("a ", "enter a ", 1),
                    ));
                }
                Ok(())
            }
            (Kind::OneOf(choices), Value::String(s)) => {
                if choices.iter().any(|c| &c.value == s) {
                    Ok(())
                } else {
                    Err("not one of the choices".into())
                }
            }
            (
                Kind::ManyOf {
                    choices,
                    min_items,
                    max_items,
                },
                Value::Array(items),
            ) => {
                let all_known = items.iter().all(|i| {
                    i.as_str()
                        .is_some_and(|s| choices.iter().any(|c| c.value == s))
                });
                if !all_known {
                    return Err("not among the choices".into());
                }
                let n = items.len() as u64;
                if min_items.is_some_and(|m| n < m) {
                    return Err(format!("pick at least {}", min_items.unwrap_or(0)).into());
                }
                if max_items.is_some_and(|m| n > m) {
                    return Err(format!("pick at most {}", max_items.unwrap_or(0)).into());
                }
                Ok(())
            }
            _ => Err("not a value of this field's type".into()),
        }
    }
}

fn label_of(choices: &[Choice], value: &str) -> String {
    choices
        .iter()
        .find(|c| c.value == value)
        .map(|c| c.label().to_string())
        .unwrap_or_else(|| value.to_string())
}

/// A choice by its number (1-based), its value, or its title (any case).
fn pick(choices: &[Choice], input: &str) -> Result<String, NotAnAnswer> {
    if let Ok(n) = input.parse::<usize>() {
        if let Some(c) = n.checked_sub(1).and_then(|i| choices.get(i)) {
            return Ok(c.value.clone());
        }
    }
    choices
        .iter()
        .find(|c| c.value == input)
        .or_else(|| {
            choices.iter().find(|c| {
                c.value.eq_ignore_ascii_case(input)
                    || c.title
                        .as_deref()
                        .is_some_and(|t| t.eq_ignore_ascii_case(input))
            })
        })
        .map(|c| c.value.clone())
        .ok_or_else(|| {
            NotAnAnswer(format!(
                "`{input}` is not one of the choices (1 to {})",
                choices.len()
            ))
        })
}

/// A light check of the string formats elicitation allows.
fn format_ok(format: &str, s: &str) -> bool {
    let digits = |t: &str, n: usize| t.len() == n && t.bytes().all(|b| b.is_ascii_digit());
    let date = |d: &str| {
        let parts: Vec<&str> = d.split('-').collect();
        matches!(parts.as_slice(), [y, m, day] if digits(y, 4) && digits(m, 2) && digits(day, 2))
    };
    match format {
        "email" => s
            .split_once('@')
            .is_some_and(|(user, host)| !user.is_empty() && host.contains('.') && !s.contains(' ')),
        "uri" => s.split_once(':').is_some_and(|(scheme, rest)| {
            !rest.is_empty()
                && scheme
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        }),
        "date" => date(s),
        "date-time" => s.split_once(['T', 't']).is_some_and(|(d, time)| {
            date(d) && time.len() >= 8 && time.as_bytes().get(2) == Some(&b':')
        }),
        _ => true,
    }
}

/// What is wrong with what the person typed or the client sent for a field, in words they
/// can act on ("enter a whole number").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NotAnAnswer(pub String);

impl From<String> for NotAnAnswer {
    fn from(why: String) -> Self {
        Self(why)
    }
}

impl From<&str> for NotAnAnswer {
    fn from(why: &str) -> Self {
        Self(why.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn form(schema: Value) -> Form {
        Form::from_schema(&schema).unwrap()
    }

    #[test]
    fn fields_keep_their_defaults_requiredness_and_choices() {
        let f = form(json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "title": "Your name", "default": "Ada"},
                "color": {"type": "string", "enum": ["r", "g"], "enumNames": ["Red", "Green"], "default": "g"},
                "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]},
                "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}, "maxItems": 2, "default": ["a"]},
                "count": {"type": "integer", "minimum": 1, "maximum": 5, "default": 9},
                "ok": {"type": "boolean", "default": true}
            },
            "required": ["name", "size"]
        }));
        let by = |n: &str| f.fields.iter().find(|x| x.name == n).unwrap();
        assert!(by("name").required && !by("color").required);
        assert_eq!(by("name").label(), "Your name");
        assert_eq!(by("name").default_shown().as_deref(), Some("Ada"));
        assert_eq!(by("color").default_shown().as_deref(), Some("Green"));
        assert_eq!(by("tags").default_shown().as_deref(), Some("a"));
        assert_eq!(by("ok").default_shown().as_deref(), Some("yes"));
        // A default outside the field's own limits is not offered.
        assert_eq!(by("count").default, None);
        let labels: Vec<&str> = by("size")
            .choices()
            .unwrap()
            .iter()
            .map(Choice::label)
            .collect();
        assert_eq!(labels, ["Small", "Large"]);
    }

    #[test]
    fn answers_are_parsed_and_checked_against_their_field() {
        let f = form(json!({"properties": {
            "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]},
            "tags": {"type": "array", "items": {"anyOf": [{"const": "a"}, {"const": "b"}]}, "maxItems": 1},
            "n": {"type": "number", "minimum": 0},
            "i": {"type": "integer"},
            "mail": {"type": "string", "format": "email", "maxLength": 20},
            "b": {"type": "boolean"}
        }}));
        let by = |n: &str| f.fields.iter().find(|x| x.name == n).unwrap();
        assert_eq!(by("size").parse("2"), Ok(json!("l")));
        assert_eq!(by("size").parse("small"), Ok(json!("s")));
        assert!(by("size").parse("3").is_err());
        assert_eq!(by("tags").parse("b"), Ok(json!(["b"])));
        assert!(by("tags").parse("1, 2").is_err(), "maxItems 1");
        assert_eq!(by("n").parse("2.5"), Ok(json!(2.5)));
        assert!(by("n").parse("-1").is_err());
        assert!(by("n").parse("NaN").is_err());
        assert!(by("i").parse("2.5").is_err());
        assert_eq!(by("i").parse("-7"), Ok(json!(-7)));
        assert!(by("mail").parse("nobody").is_err());
        assert!(by("mail")
            .parse("someone.with.a.long.name@example.org")
            .is_err());
        assert_eq!(by("mail").parse("a@b.io"), Ok(json!("a@b.io")));
        assert_eq!(by("b").parse("No"), Ok(json!(false)));
        assert!(by("b").parse("maybe").is_err());
    }

    #[test]
    fn schemas_that_are_not_forms_are_refused_not_guessed() {
        for bad in [
            json!("x"),
            json!({"type": "array"}),
            json!({"properties": {"a": {"type": "object"}}}),
            json!({"properties": {"a": {}}}),
            json!({"properties": {"a": {"type": "string", "enum": []}}}),
            json!({"properties": {"a": {"type": "string", "enum": [1]}}}),
            json!({"properties": {}, "required": ["ghost"]}),
        ] {
            assert!(Form::from_schema(&bad).is_err(), "{bad}");
        }
        assert!(form(json!({"type": "object"})).fields.is_empty());
    }
}
