//! Argv templates: `["git", "log", "-n", "{{count}}"]`, filled in one left-to-right pass.
//!
//! Each `{{name}}` is replaced by one declared parameter's value, inside the element that holds
//! it, so every element stays exactly one argv element. Inserted values are never scanned
//! again (a value holding `{{other}}` stays those nine characters), and nothing passes through
//! a shell (docs/decisions/0013-plugins.md).

use serde_json::{Map, Value};

/// The longest single argv element Linux accepts (`MAX_ARG_STRLEN`, 32 pages), minus its NUL.
pub const MAX_ELEMENT_BYTES: usize = 128 * 1024 - 1;
/// The most argument bytes one call may pass in all (well under the kernel's `ARG_MAX`).
pub const MAX_TOTAL_BYTES: usize = 1024 * 1024;

/// One piece of a template element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    /// Text put in as written.
    Literal(String),
    /// A `{{name}}` placeholder, filled from the call's argument `name`.
    Param(String),
}

/// One argv element of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Element {
    pub segments: Vec<Segment>,
    /// A literal `--` came earlier in the template: a value that starts the element may start
    /// with `-` after it (it cannot be read as an option).
    pub after_dashes: bool,
    /// The manifest declared this element code in a language (`"code": {"2": "sh"}`): each
    /// value is put in as one string literal of that language, never as bare text.
    pub language: Option<Language>,
}

/// A language whose string literals a value can be quoted as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    /// POSIX shell: `'…'`, each `'` as `'\''`.
    Sh,
    /// Python 3: `'…'` with every character but letters, digits, space and plain
    /// punctuation written as an escape (`\x27`, `\u00e9`), so no value can end the literal.
    Python,
}

impl Language {
    /// The language a manifest's `code` entry names (`sh`, `python`); `None` if unsupported.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "sh" => Some(Self::Sh),
            "python" => Some(Self::Python),
            _ => None,
        }
    }

    /// The name a manifest uses for the language.
    pub fn name(self) -> &'static str {
        match self {
            Self::Sh => "sh",
            Self::Python => "python",
        }
    }

    /// `value` as one string literal of this language.
    pub fn quote(self, value: &str) -> String {
        match self {
            Self::Sh => format!("'{}'", value.replace('\'', "'\\''")),
            Self::Python => {
                let mut out = String::with_capacity(value.len() + 2);
                out.push('\'');
                for c in value.chars() {
                    if c.is_ascii_alphanumeric() || " _-.,:/+=@%".contains(c) {
                        out.push(c);
                    } else if (c as u32) < 0x100 {
                        out.push_str(&format!("\\x{:02x}", c as u32));
                    } else if (c as u32) < 0x10000 {
                        out.push_str(&format!("\\u{:04x}", c as u32));
                    } else {
                        out.push_str(&format!("\\U{:08x}", c as u32));
                    }
                }
                out.push('\'');
                out
            }
        }
    }
}

impl Element {
    /// The placeholder the element starts with, if it starts with one: the element's first
    /// character then comes from a value (or from what follows an empty one).
    fn leading_param(&self) -> Option<&str> {
        match self.segments.first() {
            Some(Segment::Param(p)) => Some(p),
            _ => None,
        }
    }

    fn params(&self) -> impl Iterator<Item = &str> {
        self.segments.iter().filter_map(|s| match s {
            Segment::Param(p) => Some(p.as_str()),
            Segment::Literal(_) => None,
        })
    }
}

/// Why a template element does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// A `{{` without its `}}`.
    #[error("`{{{{` is not closed by `}}}}`")]
    Unclosed,
    /// A placeholder name that is not an identifier.
    #[error("`{{{{{0}}}}}` is not a placeholder: a name is letters, digits and `_`, not starting with a digit")]
    BadName(String),
}

/// Why a call's arguments cannot fill the template.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FillError {
    /// A value holds a NUL byte, which no argv element can carry.
    #[error("`{param}` contains a NUL byte, which no argument can carry")]
    Nul {
        /// The placeholder whose value is at fault.
        param: String,
    },
    /// A value would start an element with `-` and could be read as an option.
    #[error("`{param}` starts with `-` and would be read as an option; the plugin's command takes it only after a literal `--`")]
    LeadingDash {
        /// The placeholder whose value is at fault.
        param: String,
    },
    /// A value quoted into code starts with `-`.
    #[error("`{param}` starts with `-`; a value quoted into {language} code may not (the code could pass it on as an option)")]
    QuotedDash {
        /// The placeholder whose value is at fault.
        param: String,
        /// The language the value is quoted into.
        language: &'static str,
    },
    /// One filled element is longer than the per-argument cap.
    #[error("argument {index} would be {len} bytes long; one argument may be at most {max} bytes")]
    TooLong {
        /// Index of the element in the template.
        index: usize,
        /// Its filled length, in bytes.
        len: usize,
        /// The cap, in bytes.
        max: usize,
    },
    /// All filled elements together exceed [`MAX_TOTAL_BYTES`].
    #[error("the arguments would be {len} bytes in all; at most {max} bytes are passed")]
    TooMuch {
        /// The filled total, in bytes.
        len: usize,
        /// The cap, in bytes.
        max: usize,
    },
}

/// Parse one element: literal text with `{{name}}` placeholders.
pub fn parse_element(text: &str) -> Result<Vec<Segment>, TemplateError> {
    let mut segments = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let (before, after) = rest.split_at(start);
        if !before.is_empty() {
            segments.push(Segment::Literal(before.to_string()));
        }
        let inner = after.strip_prefix("{{").unwrap_or(after);
        let end = inner.find("}}").ok_or(TemplateError::Unclosed)?;
        let (name, tail) = inner.split_at(end);
        if !is_param_name(name) {
            return Err(TemplateError::BadName(name.to_string()));
        }
        segments.push(Segment::Param(name.to_string()));
        rest = tail.strip_prefix("}}").unwrap_or(tail);
    }
    if !rest.is_empty() {
        segments.push(Segment::Literal(rest.to_string()));
    }
    Ok(segments)
}

fn is_param_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A whole argv template after `argv[0]`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Template {
    /// The argv elements, in order.
    pub elements: Vec<Element>,
}

impl Template {
    /// Build from parsed elements, marking those after a literal `--`.
    pub fn new(parsed: Vec<Vec<Segment>>) -> Self {
        let mut seen_dashes = false;
        let elements = parsed
            .into_iter()
            .map(|segments| {
                let element = Element {
                    after_dashes: seen_dashes,
                    segments,
                    language: None,
                };
                if matches!(element.segments.as_slice(), [Segment::Literal(l)] if l == "--") {
                    seen_dashes = true;
                }
                element
            })
            .collect();
        Self { elements }
    }

    /// Every placeholder name, in order of first appearance.
    pub fn params(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for p in self.elements.iter().flat_map(Element::params) {
            if !out.contains(&p) {
                out.push(p);
            }
        }
        out
    }

    /// The argv after `argv[0]` for these arguments, in one pass. An element naming an
    /// absent (or `null`) argument is dropped whole.
    pub fn fill(&self, args: &Map<String, Value>) -> Result<Vec<String>, FillError> {
        let mut out = Vec::with_capacity(self.elements.len());
        let mut total = 0usize;
        'elements: for element in &self.elements {
            let mut text = String::new();
            for segment in &element.segments {
                match segment {
                    Segment::Literal(l) => text.push_str(l),
                    Segment::Param(p) => match args.get(p) {
                        None | Some(Value::Null) => continue 'elements,
                        Some(v) => {
                            let value = render(v);
                            if value.contains('\0') {
                                return Err(FillError::Nul { param: p.clone() });
                            }
                            match element.language {
                                Some(language) => {
                                    if value.starts_with('-') {
                                        return Err(FillError::QuotedDash {
                                            param: p.clone(),
                                            language: language.name(),
                                        });
                                    }
                                    text.push_str(&language.quote(&value));
                                }
                                None => text.push_str(&value),
                            }
                        }
                    },
                }
            }
            // An element whose first character comes from a value (`{{v}}`, `{{v}}..HEAD`,
            // `{{a}}{{b}}` with `a` empty) is never let become an option.
            if let Some(p) = element.leading_param() {
                if text.starts_with('-') && !element.after_dashes {
                    return Err(FillError::LeadingDash {
                        param: p.to_string(),
                    });
                }
            }
            if text.len() > MAX_ELEMENT_BYTES {
                return Err(FillError::TooLong {
                    index: out.len() + 1,
                    len: text.len(),
                    max: MAX_ELEMENT_BYTES,
                });
            }
            total = total.saturating_add(text.len() + 1);
            if total > MAX_TOTAL_BYTES {
                return Err(FillError::TooMuch {
                    len: total,
                    max: MAX_TOTAL_BYTES,
                });
            }
            out.push(text);
        }
        Ok(out)
    }
}

/// Strings as they are; every other value as compact JSON.
pub(crate) fn render(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn template(parts: &[&str]) -> Template {
        Template::new(parts.iter().map(|p| parse_element(p).unwrap()).collect())
    }

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn a_value_holding_another_placeholder_is_not_rescanned() {
        let t = template(&["{{a}}", "{{b}}", "x{{a}}y"]);
        let out = t.fill(&args(json!({"a": "{{b}}", "b": "B"}))).unwrap();
        assert_eq!(out, ["{{b}}", "B", "x{{b}}y"]);
    }

    #[test]
    fn each_element_stays_one_argument_whatever_the_value_holds() {
        let t = template(&["--msg={{m}}"]);
        let out = t.fill(&args(json!({"m": "a b; rm -rf ~\n$(id)"}))).unwrap();
        assert_eq!(out, ["--msg=a b; rm -rf ~\n$(id)"]);
    }

    #[test]
    fn absent_optional_values_drop_their_elements_and_non_strings_are_compact_json() {
        let t = template(&["-n", "{{count}}", "--since={{since}}", "{{obj}}"]);
        let out = t
            .fill(&args(json!({"count": 5, "obj": {"k": [1, true]}})))
            .unwrap();
        assert_eq!(out, ["-n", "5", r#"{"k":[1,true]}"#]);
    }

    #[test]
    fn leading_dash_is_refused_unless_after_a_literal_double_dash() {
        let plain = template(&["{{p}}"]);
        assert!(matches!(
            plain.fill(&args(json!({"p": "--upload-pack=x"}))),
            Err(FillError::LeadingDash { .. })
        ));
        let guarded = template(&["--", "{{p}}"]);
        assert_eq!(
            guarded.fill(&args(json!({"p": "-rf"}))).unwrap(),
            ["--", "-rf"]
        );
        // Inside an element a value cannot make an option.
        let embedded = template(&["x={{p}}"]);
        assert_eq!(
            embedded.fill(&args(json!({"p": "-rf"}))).unwrap(),
            ["x=-rf"]
        );
    }

    #[test]
    fn nul_and_oversized_values_are_refused() {
        let t = template(&["{{p}}"]);
        assert!(matches!(
            t.fill(&args(json!({"p": "a\u{0}b"}))),
            Err(FillError::Nul { .. })
        ));
        let big = "a".repeat(MAX_ELEMENT_BYTES + 1);
        assert!(matches!(
            t.fill(&args(json!({ "p": big }))),
            Err(FillError::TooLong { .. })
        ));
    }

    #[test]
    fn malformed_placeholders_do_not_parse() {
        assert_eq!(parse_element("{{x"), Err(TemplateError::Unclosed));
        assert!(matches!(
            parse_element("{{a b}}"),
            Err(TemplateError::BadName(_))
        ));
        assert!(matches!(
            parse_element("{{}}"),
            Err(TemplateError::BadName(_))
        ));
        assert_eq!(
            parse_element("{x} }}"),
            Ok(vec![Segment::Literal("{x} }}".into())])
        );
    }
}
