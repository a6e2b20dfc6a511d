//! The skill file (README, "Skills"): YAML front matter between `---` lines, then a Markdown body.

use serde::Deserialize;
use serde_json::Value;

/// The longest skill name accepted.
pub const MAX_NAME_CHARS: usize = 100;

/// Why a skill file was skipped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SkillFileError {
    /// The file is not UTF-8.
    #[error("it is not UTF-8 text")]
    NotText,
    /// The file has no `---` front matter.
    #[error("it has no YAML front matter (a first line `---`, the fields, then a line `---`)")]
    NoFrontMatter,
    /// The front matter is not valid YAML for a skill.
    #[error("its front matter is not valid: {0}")]
    BadFrontMatter(String),
    /// The name is empty, too long, only separators or has control characters.
    #[error("its name {0:?} is empty, too long, only separators or has control characters")]
    BadName(String),
}

/// The front matter fields Tackle uses; the others (`version`, `homepage`, …) are ignored.
#[derive(Debug, Default, Deserialize)]
struct FrontMatter {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    triggers: Option<OneOrMany>,
    #[serde(default, alias = "requires-tools")]
    requires_tools: Option<OneOrMany>,
    #[serde(default)]
    depends: Option<OneOrMany>,
    #[serde(default)]
    metadata: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    fn into_vec(self) -> Vec<String> {
        let v = match self {
            OneOrMany::One(s) => vec![s],
            OneOrMany::Many(v) => v,
        };
        v.into_iter()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    }
}

/// A parsed skill file: its catalogue fields and its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedSkill {
    /// The skill's name.
    pub name: String,
    /// What the skill is for.
    pub description: String,
    /// Words that suggest the skill.
    pub triggers: Vec<String>,
    /// Tools the skill needs (`requires_tools` or `requires-tools`).
    pub requires_tools: Vec<String>,
    /// Skills this one builds on.
    pub depends: Vec<String>,
    /// `metadata.{zeptoclaw|clawdbot|openclaw|clawdis}.os`: empty = every system.
    pub os: Vec<String>,
    /// The markdown after the front matter.
    pub body: String,
}

/// The front matter and the body of `text`, split at the `---` lines.
fn split(text: &str) -> Option<(&str, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if matches!(line.trim_end(), "---" | "...") {
            let yaml = rest.get(..offset)?;
            let body = rest.get(offset + line.len()..).unwrap_or("");
            return Some((yaml, body));
        }
        offset += line.len();
    }
    None
}

/// A YAML error as printable lines: its snippet keeps its line breaks (a one-line squeeze
/// is unreadable), other control characters become spaces (the snippet quotes the file), and
/// it is cut to a few short lines.
fn error_lines(text: &str) -> String {
    const MAX_LINES: usize = 12;
    const MAX_LINE_CHARS: usize = 200;
    let lines: Vec<String> = text
        .trim_end()
        .lines()
        .take(MAX_LINES)
        .map(|l| tackle_protocol::text::preview(l.trim_end(), MAX_LINE_CHARS))
        .collect();
    let mut out = lines.join("\n");
    if text.trim_end().lines().count() > MAX_LINES {
        out.push_str("\n…");
    }
    out
}

/// Parse a skill file; `fallback_name` (the directory or file name) is used when the front
/// matter names none.
pub fn parse(bytes: &[u8], fallback_name: &str) -> Result<ParsedSkill, SkillFileError> {
    parse_from(bytes, fallback_name, fallback_name)
}

/// As [`parse`]; `source` names the file in a YAML error's snippet (`--> source:3:14`), whose
/// line numbers are the file's (the front matter starts on line 2).
pub fn parse_from(
    bytes: &[u8],
    fallback_name: &str,
    source: &str,
) -> Result<ParsedSkill, SkillFileError> {
    let text = std::str::from_utf8(bytes).map_err(|_| SkillFileError::NotText)?;
    let (yaml, body) = split(text).ok_or(SkillFileError::NoFrontMatter)?;
    let fm: FrontMatter = if yaml.trim().is_empty() {
        FrontMatter::default()
    } else {
        serde_saphyr::from_str(yaml).map_err(|e| {
            let rendered = e.render_with_options(serde_saphyr::render_options! {
                line_offset: 1,
                source_name: Some(source),
            });
            SkillFileError::BadFrontMatter(error_lines(&rendered))
        })?
    };
    let name = fm
        .name
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| fallback_name.to_string());
    if name.is_empty()
        || super::names::name_key(&name).is_empty()
        || name.chars().count() > MAX_NAME_CHARS
        || name.chars().any(char::is_control)
    {
        return Err(SkillFileError::BadName(tackle_protocol::text::preview(
            &name, 60,
        )));
    }
    Ok(ParsedSkill {
        name,
        description: fm
            .description
            .map(|d| d.split_whitespace().collect::<Vec<_>>().join(" "))
            .unwrap_or_default(),
        triggers: fm.triggers.map(OneOrMany::into_vec).unwrap_or_default(),
        requires_tools: fm
            .requires_tools
            .map(OneOrMany::into_vec)
            .unwrap_or_default(),
        depends: fm.depends.map(OneOrMany::into_vec).unwrap_or_default(),
        os: fm.metadata.as_ref().map(os_list).unwrap_or_default(),
        body: body.to_string(),
    })
}

/// The first of the known metadata namespaces that names systems.
fn os_list(metadata: &Value) -> Vec<String> {
    ["zeptoclaw", "clawdbot", "openclaw", "clawdis"]
        .iter()
        .filter_map(|ns| metadata.get(ns)?.get("os")?.as_array())
        .next()
        .map(|list| {
            list.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// This system as skill files name systems.
pub fn this_os() -> &'static str {
    match std::env::consts::OS {
        "macos" => "darwin",
        "windows" => "win32",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_fields_and_body_are_split_at_the_dashes() {
        let text = "---\nname: release-checklist\ndescription: >\n  Steps to cut\n  a release\ntriggers: [release, tag]\nrequires_tools: [shell]\nversion: 1.2\n---\n# Release\nRun the tests.\n";
        let s = parse(text.as_bytes(), "dir").unwrap();
        assert_eq!(s.name, "release-checklist");
        assert_eq!(s.description, "Steps to cut a release");
        assert_eq!(s.triggers, ["release", "tag"]);
        assert_eq!(s.requires_tools, ["shell"]);
        assert_eq!(s.body, "# Release\nRun the tests.\n");
    }

    #[test]
    fn the_directory_name_stands_in_for_a_missing_name() {
        let s = parse(b"---\ndescription: d\n---\nbody", "from-dir").unwrap();
        assert_eq!(s.name, "from-dir");
        assert_eq!(s.body, "body");
    }

    #[test]
    fn files_without_valid_front_matter_are_refused_with_the_reason() {
        assert_eq!(
            parse(b"# just markdown", "x"),
            Err(SkillFileError::NoFrontMatter)
        );
        assert_eq!(
            parse(b"---\nname: x\nno closing line", "x"),
            Err(SkillFileError::NoFrontMatter)
        );
        assert!(matches!(
            parse(b"---\nname: [unclosed\n---\n", "x"),
            Err(SkillFileError::BadFrontMatter(_))
        ));
        assert_eq!(parse(b"\xff\xfe", "x"), Err(SkillFileError::NotText));
        assert!(matches!(
            parse(b"---\nname: \"a\\u0007b\"\n---\n", "x"),
            Err(SkillFileError::BadName(_))
        ));
    }

    #[test]
    fn os_comes_from_the_first_metadata_namespace_that_names_it() {
        let text = "---\nname: x\nmetadata:\n  openclaw:\n    os: [darwin]\n  clawdis:\n    os: [linux]\n---\n";
        assert_eq!(parse(text.as_bytes(), "x").unwrap().os, ["darwin"]);
    }

    #[test]
    fn a_single_trigger_string_is_one_trigger() {
        let s = parse(b"---\ntriggers: deploy\n---\n", "x").unwrap();
        assert_eq!(s.triggers, ["deploy"]);
    }
}
