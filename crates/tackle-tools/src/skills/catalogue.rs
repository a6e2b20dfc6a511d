//! The skill catalogue: every source's skills merged in order, first name wins, then gated.
//! Names are compared by [`name_key`] (case, NFKC, confusables, separators), and every loser is
//! kept and reported, never silently dropped (docs/decisions/0027-skill-names-unique.md).
//!
//! A source is anything that lists skills and hands out a body on request: a directory on disk
//! ([`DirSource`]), and, per call, the agent's own store and its granted banks (`stored.rs`),
//! after the directories (docs/decisions/0037-skill-sources.md). Listing never keeps a body:
//! the source reads it when `skill_show` asks, which is the only way a body reaches the model.

use super::file::{self, ParsedSkill};
use super::names::name_key;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use tackle_protocol::skills::{SkillDirs, MAX_SKILL_FILE_BYTES};
use tackle_protocol::ToolError;

/// One skill as the catalogue lists it: everything but its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillMeta {
    /// The skill's name, how it is asked for.
    pub name: String,
    /// What the skill is for, shown in the catalogue.
    pub description: String,
    /// Words that suggest the skill.
    pub triggers: Vec<String>,
    /// Tools the skill needs.
    pub requires_tools: Vec<String>,
    /// Skills this one builds on.
    pub depends: Vec<String>,
    /// Systems it runs on; empty: every system.
    pub os: Vec<String>,
    /// Where the source keeps it (a file path, a row id); only the source reads it.
    pub locator: String,
    /// The name its place gives it (`<entry>/SKILL.md`, `<entry>.md`); empty when the source
    /// has no such names. Within one source, a skill whose place matches its name wins a name
    /// over one whose front matter claims it from elsewhere.
    pub entry: String,
}

impl SkillMeta {
    fn from_parsed(p: ParsedSkill, locator: String, entry: String) -> Self {
        Self {
            name: p.name,
            description: p.description,
            triggers: p.triggers,
            requires_tools: p.requires_tools,
            depends: p.depends,
            os: p.os,
            locator,
            entry,
        }
    }

    /// Whether its place names it (see [`SkillMeta::entry`]).
    fn at_home(&self) -> bool {
        !self.entry.is_empty() && name_key(&self.entry) == name_key(&self.name)
    }
}

/// What one source lists, and why it skipped what it skipped.
#[derive(Debug, Clone, Default)]
pub struct SourceListing {
    /// The skills found.
    pub skills: Vec<SkillMeta>,
    /// Why some were skipped, for people.
    pub warnings: Vec<String>,
}

/// A place skills come from.
pub trait SkillSource: Send + Sync {
    /// How the source is named to people (`~/.config/tackle/skills`, `bank project-alpha`).
    fn label(&self) -> String;
    /// Every skill here, without bodies.
    fn list(&self) -> SourceListing;
    /// The body of a skill this source listed.
    fn body(&self, skill: &SkillMeta) -> Result<String, ToolError>;
}

/// A skills directory: `<dir>/<name>/SKILL.md` and `<dir>/<name>.md`.
pub struct DirSource {
    /// How the directory is named to people.
    pub label: String,
    /// The directory read.
    pub dir: PathBuf,
    /// Reads the directory; a fake in tests.
    pub disk: Arc<dyn SkillDirs>,
}

impl SkillSource for DirSource {
    fn label(&self) -> String {
        self.label.clone()
    }

    fn list(&self) -> SourceListing {
        let scan = self.disk.scan(&self.dir, MAX_SKILL_FILE_BYTES);
        let mut out = SourceListing {
            skills: Vec::new(),
            warnings: scan.warnings,
        };
        for found in scan.found {
            let source = found.path.display().to_string();
            match file::parse_from(&found.bytes, &found.entry, &source) {
                Ok(parsed) => out.skills.push(SkillMeta::from_parsed(
                    parsed,
                    found.path.to_string_lossy().into_owned(),
                    found.entry,
                )),
                Err(e) => out
                    .warnings
                    .push(format!("{}: skipped, {e}", found.path.display())),
            }
        }
        out
    }

    fn body(&self, skill: &SkillMeta) -> Result<String, ToolError> {
        let path = PathBuf::from(&skill.locator);
        let bytes = self
            .disk
            .read(&path, MAX_SKILL_FILE_BYTES)
            .map_err(|e| ToolError::failed(format!("cannot read skill `{}`: {e}", skill.name)))?;
        let fallback = path
            .parent()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let parsed = file::parse(&bytes, &fallback).map_err(|e| {
            ToolError::failed(format!("skill `{}` can no longer be read: {e}", skill.name))
        })?;
        // `<name>/SKILL.md` lives in its own directory; `<name>.md` in the skills dir.
        let base_dir = path.parent().map(PathBuf::from).unwrap_or_default();
        Ok(parsed
            .body
            .replace("{baseDir}", &base_dir.to_string_lossy()))
    }
}

/// One catalogue entry: the skill and which source (by index) it came from.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The skill, without its body.
    pub meta: SkillMeta,
    /// Index of its source in the catalogue's source list.
    pub source: usize,
    /// The source's label, for people.
    pub source_label: String,
}

impl Entry {
    /// Where it was read, for people: the source and, when the source has one, the path.
    pub fn origin(&self) -> String {
        if self.meta.locator.is_empty() {
            self.source_label.clone()
        } else {
            format!("{} ({})", self.source_label, self.meta.locator)
        }
    }
}

/// A skill hidden because an earlier one claims its name.
#[derive(Debug, Clone)]
pub struct Shadowed {
    /// The hidden skill.
    pub entry: Entry,
    /// The skill that holds the name.
    pub by: Entry,
}

/// The merged catalogue of one moment.
#[derive(Debug, Clone, Default)]
pub struct Catalogue {
    /// Visible skills, earliest source first.
    pub entries: Vec<Entry>,
    /// Skills hidden by an earlier one whose name has the same [`name_key`].
    pub shadowed: Vec<Shadowed>,
    /// Problems of the sources, for people.
    pub warnings: Vec<String>,
}

impl Catalogue {
    /// Merge `sources` in order; a name seen before (by [`name_key`]) is shadowed, whatever
    /// the later one says. Within one source a skill whose place names it goes first, so a
    /// file elsewhere in the same directory cannot claim its name by sorting earlier.
    pub fn load(sources: &[Arc<dyn SkillSource>]) -> Self {
        Self::merge(sources.iter().map(|s| (s.label(), s.list())).collect())
    }

    /// As [`Catalogue::load`], over listings already read: `(label, listing)` in precedence
    /// order, an entry's `source` being its listing's index.
    pub fn merge(listings: Vec<(String, SourceListing)>) -> Self {
        let mut cat = Catalogue::default();
        // (source, position in its listing, entry): the order the catalogue shows.
        let mut kept: Vec<(usize, usize, Entry)> = Vec::new();
        // Each kept name's key → its place in `kept`, so a large catalogue loads in one pass.
        let mut holders: HashMap<String, usize> = HashMap::new();
        for (index, (label, listing)) in listings.into_iter().enumerate() {
            cat.warnings.extend(listing.warnings);
            let mut order: Vec<(usize, SkillMeta)> =
                listing.skills.into_iter().enumerate().collect();
            order.sort_by_key(|(pos, m)| (!m.at_home(), *pos));
            for (pos, meta) in order {
                let entry = Entry {
                    meta,
                    source: index,
                    source_label: label.clone(),
                };
                let key = name_key(&entry.meta.name);
                if let Some((_, _, by)) = holders.get(&key).and_then(|i| kept.get(*i)) {
                    cat.warnings.push(format!(
                        "skill `{}` from {} is hidden: `{}` from {} has the same name",
                        entry.meta.name,
                        entry.origin(),
                        by.meta.name,
                        by.origin()
                    ));
                    cat.shadowed.push(Shadowed {
                        entry,
                        by: by.clone(),
                    });
                    continue;
                }
                holders.insert(key, kept.len());
                kept.push((index, pos, entry));
            }
        }
        kept.sort_by_key(|(source, pos, _)| (*source, *pos));
        cat.entries = kept.into_iter().map(|(_, _, e)| e).collect();
        cat
    }

    /// The entry holding `name` (by [`name_key`]), visible or not.
    pub fn holder(&self, name: &str) -> Option<&Entry> {
        let key = name_key(name);
        self.entries.iter().find(|e| name_key(&e.meta.name) == key)
    }

    /// Every skill that claims `name` (by [`name_key`]): the holder and the hidden ones.
    pub fn claimants<'a>(&'a self, name: &str) -> impl Iterator<Item = &'a Entry> + 'a {
        let key = name_key(name);
        self.entries
            .iter()
            .chain(self.shadowed.iter().map(|s| &s.entry))
            .filter(move |e| name_key(&e.meta.name) == key)
    }

    /// The skills that can be used here: every `requires_tools` available, the system among
    /// its `os` (when it names any), every `depends` in the catalogue. The others are invisible.
    pub fn visible(&self, tool_available: &dyn Fn(&str) -> bool) -> Vec<&Entry> {
        let os = file::this_os();
        self.entries
            .iter()
            .filter(|e| {
                let m = &e.meta;
                m.requires_tools.iter().all(|t| tool_available(t))
                    && (m.os.is_empty() || m.os.iter().any(|o| o == os))
                    && m.depends.iter().all(|d| self.holder(d).is_some())
            })
            .collect()
    }
}

/// Does `query` (case-insensitive substring) occur in the name, description or a trigger?
pub fn matches(meta: &SkillMeta, query: &str) -> bool {
    let q = query.trim().to_lowercase();
    if q.is_empty() {
        return true;
    }
    meta.name.to_lowercase().contains(&q)
        || meta.description.to_lowercase().contains(&q)
        || meta.triggers.iter().any(|t| t.to_lowercase().contains(&q))
}

/// Up to three names closest to `name`, best first.
pub fn nearest<'a>(name: &str, names: impl Iterator<Item = &'a str>) -> Vec<String> {
    tackle_protocol::suggest::nearest(name, names, 0.7)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A source with fixed skills and bodies, as a store or bank source would be.
    pub(crate) struct Fixed {
        pub label: &'static str,
        pub skills: Vec<(SkillMeta, &'static str)>,
    }

    impl SkillSource for Fixed {
        fn label(&self) -> String {
            self.label.into()
        }
        fn list(&self) -> SourceListing {
            SourceListing {
                skills: self.skills.iter().map(|(m, _)| m.clone()).collect(),
                warnings: Vec::new(),
            }
        }
        fn body(&self, skill: &SkillMeta) -> Result<String, ToolError> {
            self.skills
                .iter()
                .find(|(m, _)| m.name == skill.name)
                .map(|(_, b)| b.to_string())
                .ok_or_else(|| ToolError::not_found("gone"))
        }
    }

    fn meta(name: &str, requires: &[&str]) -> SkillMeta {
        SkillMeta {
            name: name.into(),
            description: format!("about {name}"),
            triggers: Vec::new(),
            requires_tools: requires.iter().map(|s| s.to_string()).collect(),
            depends: Vec::new(),
            os: Vec::new(),
            locator: String::new(),
            entry: String::new(),
        }
    }

    #[test]
    fn the_first_source_to_name_a_skill_wins() {
        let a: Arc<dyn SkillSource> = Arc::new(Fixed {
            label: "a",
            skills: vec![(meta("deploy", &[]), "A")],
        });
        let b: Arc<dyn SkillSource> = Arc::new(Fixed {
            label: "b",
            skills: vec![(meta("deploy", &[]), "B"), (meta("lint", &[]), "L")],
        });
        let cat = Catalogue::load(&[a, b]);
        let names: Vec<_> = cat
            .entries
            .iter()
            .map(|e| (e.meta.name.as_str(), e.source_label.as_str()))
            .collect();
        assert_eq!(names, [("deploy", "a"), ("lint", "b")]);
        let hidden: Vec<_> = cat
            .shadowed
            .iter()
            .map(|s| {
                (
                    s.entry.meta.name.as_str(),
                    s.entry.source_label.as_str(),
                    s.by.source_label.as_str(),
                )
            })
            .collect();
        assert_eq!(hidden, [("deploy", "b", "a")]);
        assert!(
            cat.warnings
                .iter()
                .any(|w| w.contains("`deploy` from b is hidden")),
            "{:?}",
            cat.warnings
        );
    }

    #[test]
    fn every_spelling_of_a_name_is_shadowed_by_the_first() {
        let a: Arc<dyn SkillSource> = Arc::new(Fixed {
            label: "a",
            skills: vec![(meta("deploy", &[]), "A")],
        });
        let b: Arc<dyn SkillSource> = Arc::new(Fixed {
            label: "b",
            skills: vec![
                (meta("Deploy", &[]), ""),
                (meta("ｄｅｐｌｏｙ", &[]), ""),
                (meta("d\u{0435}ploy", &[]), ""),
                (meta("./deploy", &[]), ""),
                (meta("lint", &[]), ""),
            ],
        });
        let cat = Catalogue::load(&[a, b]);
        let names: Vec<_> = cat.entries.iter().map(|e| e.meta.name.as_str()).collect();
        assert_eq!(names, ["deploy", "lint"]);
        assert_eq!(cat.shadowed.len(), 4);
        assert_eq!(cat.claimants("DEPLOY").count(), 5);
    }

    #[test]
    fn within_a_source_the_skill_its_place_names_wins_over_an_earlier_claim() {
        let mut squatter = meta("deploy", &[]);
        squatter.entry = "aaa".into();
        let mut home = meta("deploy", &[]);
        home.entry = "deploy".into();
        let a: Arc<dyn SkillSource> = Arc::new(Fixed {
            label: "a",
            skills: vec![(squatter, "S"), (home, "H"), (meta("zed", &[]), "")],
        });
        let cat = Catalogue::load(&[a]);
        let kept: Vec<_> = cat
            .entries
            .iter()
            .map(|e| (e.meta.name.as_str(), e.meta.entry.as_str()))
            .collect();
        assert_eq!(kept, [("deploy", "deploy"), ("zed", "")]);
        assert_eq!(cat.shadowed[0].entry.meta.entry, "aaa");
    }

    #[test]
    fn a_skill_missing_a_required_tool_is_invisible() {
        let a: Arc<dyn SkillSource> = Arc::new(Fixed {
            label: "a",
            skills: vec![
                (meta("needs-shell", &["shell"]), ""),
                (meta("needs-nothing", &[]), ""),
                (meta("needs-both", &["shell", "git"]), ""),
            ],
        });
        let cat = Catalogue::load(&[a]);
        let only_shell = |t: &str| t == "shell";
        let names: Vec<_> = cat
            .visible(&only_shell)
            .iter()
            .map(|e| e.meta.name.clone())
            .collect();
        assert_eq!(names, ["needs-shell", "needs-nothing"]);
    }

    #[test]
    fn search_looks_at_names_descriptions_and_triggers_ignoring_case() {
        let mut m = meta("release", &[]);
        m.triggers = vec!["Ship It".into()];
        assert!(matches(&m, "RELEASE"));
        assert!(matches(&m, "about rel"));
        assert!(matches(&m, "ship"));
        assert!(!matches(&m, "deploy"));
    }

    #[test]
    fn nearest_names_come_best_first() {
        let names = ["release-checklist", "review", "deploy"];
        let got = nearest("release", names.iter().copied());
        assert_eq!(got.first().map(String::as_str), Some("release-checklist"));
        assert!(nearest("zzzzzz", names.iter().copied()).is_empty());
    }
}
