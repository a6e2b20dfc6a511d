//! The `skills` extension: `skill_list`, `skill_search`, `skill_show` over the merged skill
//! catalogue, and `find_skills`, `install_skill` against a ClawHub-compatible registry.
//!
//! Progressive disclosure: listing and searching show names, descriptions and triggers only;
//! a skill's body reaches the model only through `skill_show`. The catalogue merges its
//! [`SkillSource`]s in order (the `skills.dirs`, then any further sources such as the agent's
//! store or granted banks), first name wins (names compared by [`name_key`]: case, NFKC,
//! confusables, separators), the losers are reported, and a skill whose `requires_tools` are
//! not all registered is invisible everywhere. `install_skill` refuses a skill whose name any
//! source already claims (docs/decisions/0027-skill-names-unique.md).
//!
//! Disk access goes through a [`SkillDirs`] (implemented by `tackle-host`), the registry
//! through `cx.host().http(..)`; nothing an archive holds is ever run, and installed files
//! are written non-executable.
//!
//! ```
//! use std::sync::Arc;
//! use tackle_tools::skills::{extension, SkillsSettings};
//! # struct NoDisk;
//! # impl tackle_protocol::skills::SkillDirs for NoDisk {
//! #     fn scan(&self, _: &std::path::Path, _: u64) -> tackle_protocol::skills::ScanReport { Default::default() }
//! #     fn read(&self, p: &std::path::Path, _: u64) -> Result<Vec<u8>, tackle_protocol::skills::SkillDirError> {
//! #         Err(tackle_protocol::skills::SkillDirError::Invalid(p.display().to_string())) }
//! #     fn install(&self, _: &tackle_protocol::skills::SkillInstall) -> Result<tackle_protocol::skills::InstallReport, tackle_protocol::skills::SkillDirError> {
//! #         Err(tackle_protocol::skills::SkillDirError::Invalid("read-only".into())) }
//! # }
//! let settings = SkillsSettings::new(Arc::new(NoDisk));
//! let names: Vec<String> = extension(settings).tools().iter().map(|t| t.spec().name).collect();
//! assert_eq!(names, ["skill_list", "skill_search", "skill_show", "find_skills", "install_skill"]);
//! ```

mod archive;
mod catalogue;
mod file;
mod install;
mod local;
mod names;
mod registry;

pub use archive::{unpack, ArchiveError, ArchiveFile, ArchiveLimits};
pub use catalogue::{Catalogue, DirSource, Entry, Shadowed, SkillMeta, SkillSource, SourceListing};
pub use file::{parse as parse_skill_file, ParsedSkill, SkillFileError};
pub use names::name_key;

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use tackle_protocol::skills::SkillDirs;
use tackle_protocol::{Extension, Tool, ToolContext};

pub const NAME: &str = "skills";

/// The registry used when `skills.registry_url` is unset.
pub const DEFAULT_REGISTRY: &str = "https://clawhub.ai";

/// The file an install writes beside the skill; only a directory with it is ever replaced.
pub const MARKER: &str = ".clawhub.json";

/// One configured skills directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillDir {
    /// As the config wrote it, for people.
    pub label: String,
    /// Absolute (relative entries already joined to the workspace, `~` expanded).
    pub path: PathBuf,
}

/// Everything the skills tools need from configuration.
#[derive(Clone)]
pub struct SkillsSettings {
    /// `skills.dirs`, in order; installs go into the first.
    pub dirs: Vec<SkillDir>,
    /// Sources after the directories (the agent's store, granted banks), in order.
    pub extra_sources: Vec<Arc<dyn SkillSource>>,
    /// The registry's base URL.
    pub registry_url: String,
    /// The operator wrote `registry_url` in the config: requests to it are trusted as written.
    pub registry_configured: bool,
    pub disk: Arc<dyn SkillDirs>,
}

impl SkillsSettings {
    /// No directories, the default registry.
    pub fn new(disk: Arc<dyn SkillDirs>) -> Self {
        Self {
            dirs: Vec::new(),
            extra_sources: Vec::new(),
            registry_url: DEFAULT_REGISTRY.to_string(),
            registry_configured: false,
            disk,
        }
    }
}

/// What the five tools share: the sources, the current catalogue, the registry's cache.
pub(crate) struct Shared {
    settings: SkillsSettings,
    sources: Vec<Arc<dyn SkillSource>>,
    catalogue: RwLock<Option<Arc<Catalogue>>>,
    registry: registry::Registry,
}

impl Shared {
    fn new(settings: SkillsSettings) -> Self {
        let mut sources: Vec<Arc<dyn SkillSource>> = settings
            .dirs
            .iter()
            .map(|d| {
                Arc::new(DirSource {
                    label: d.label.clone(),
                    dir: d.path.clone(),
                    disk: settings.disk.clone(),
                }) as Arc<dyn SkillSource>
            })
            .collect();
        sources.extend(settings.extra_sources.iter().cloned());
        let registry =
            registry::Registry::new(&settings.registry_url, settings.registry_configured);
        Self {
            settings,
            sources,
            catalogue: RwLock::new(None),
            registry,
        }
    }

    /// The catalogue, loaded on first use.
    pub(crate) fn catalogue(&self) -> Arc<Catalogue> {
        if let Ok(guard) = self.catalogue.read() {
            if let Some(cat) = guard.as_ref() {
                return cat.clone();
            }
        }
        self.reload()
    }

    /// Read every source again (after an install, so the new skill is there at once).
    pub(crate) fn reload(&self) -> Arc<Catalogue> {
        let cat = Arc::new(Catalogue::load(&self.sources));
        // Skipped skill files are the operator's business (stderr), never the model's.
        for w in &cat.warnings {
            tracing::warn!("skills: {w}");
        }
        if let Ok(mut guard) = self.catalogue.write() {
            *guard = Some(cat.clone());
        }
        cat
    }

    pub(crate) fn source(&self, index: usize) -> Option<&Arc<dyn SkillSource>> {
        self.sources.get(index)
    }
}

/// Is `tool` registered for this call? Without a registry in the context, nothing is.
pub(crate) fn tool_available(cx: &ToolContext) -> impl Fn(&str) -> bool + '_ {
    move |name: &str| cx.catalog().is_ok_and(|c| c.spec(name).is_some())
}

/// The `skills` extension with its five tools.
pub fn extension(settings: SkillsSettings) -> Arc<dyn Extension> {
    Arc::new(SkillsExtension {
        shared: Arc::new(Shared::new(settings)),
    })
}

struct SkillsExtension {
    shared: Arc<Shared>,
}

impl Extension for SkillsExtension {
    fn name(&self) -> &str {
        NAME
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        vec![
            Arc::new(local::SkillList::new(self.shared.clone())),
            Arc::new(local::SkillSearch::new(self.shared.clone())),
            Arc::new(local::SkillShow::new(self.shared.clone())),
            Arc::new(install::FindSkills::new(self.shared.clone())),
            Arc::new(install::InstallSkill::new(self.shared.clone())),
        ]
    }
}
