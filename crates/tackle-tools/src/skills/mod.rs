//! The `skills` extension: `skill_list`, `skill_search`, `skill_show` over the merged skill
//! catalogue, `find_skills`, `install_skill` against a ClawHub-compatible registry, and, with a
//! store, `skill_save` (into the agent's own store or a bank it may write).
//!
//! Progressive disclosure: listing and searching show names, descriptions and triggers only;
//! a skill's body reaches the model only through `skill_show`. The catalogue merges its
//! sources in order: the `skills.dirs` (workspace directories only when the config names
//! them), then the calling agent's own store, then each bank granted to it by name (the memory
//! bank grants; docs/decisions/0037-skill-sources.md). First name wins (names compared by
//! [`name_key`]: case, NFKC, confusables, separators), the losers are reported, and a skill
//! whose `requires_tools` are not all registered is invisible everywhere. `install_skill` and
//! `skill_save` refuse a name any other source already claims
//! (docs/decisions/0027-skill-names-unique.md).
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
mod save;
mod stored;
#[cfg(test)]
mod tests;

pub use archive::{unpack, ArchiveError, ArchiveFile, ArchiveLimits};
pub use catalogue::{Catalogue, DirSource, Entry, Shadowed, SkillMeta, SkillSource, SourceListing};
pub use file::{parse as parse_skill_file, ParsedSkill, SkillFileError};
pub use names::name_key;
pub use stored::StoredSkills;

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use tackle_protocol::skills::SkillDirs;
use tackle_protocol::{Extension, Tool, ToolContext, ToolError};

/// The extension's name, for `agents[].extensions`.
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
    /// Fixed sources after the directories, in order.
    pub extra_sources: Vec<Arc<dyn SkillSource>>,
    /// The state store's skills (the calling agent's own, then its granted banks), after
    /// every fixed source; `None`: none, and no `skill_save`.
    pub stored: Option<StoredSkills>,
    /// The registry's base URL.
    pub registry_url: String,
    /// The operator wrote `registry_url` in the config: requests to it are trusted as written.
    pub registry_configured: bool,
    /// Reads and writes the skills directories; a fake in tests.
    pub disk: Arc<dyn SkillDirs>,
}

impl SkillsSettings {
    /// No directories, the default registry.
    pub fn new(disk: Arc<dyn SkillDirs>) -> Self {
        Self {
            dirs: Vec::new(),
            extra_sources: Vec::new(),
            stored: None,
            registry_url: DEFAULT_REGISTRY.to_string(),
            registry_configured: false,
            disk,
        }
    }
}

/// Each fixed source's label and what it listed, in order.
type Listings = Arc<Vec<(String, SourceListing)>>;

/// What the tools share: the fixed sources and their cached listings, the stored skills, the
/// registry's cache.
pub(crate) struct Shared {
    settings: SkillsSettings,
    /// The directories, then `extra_sources`.
    sources: Vec<Arc<dyn SkillSource>>,
    /// What `sources` listed when last read: directories are scanned once, and again after an
    /// install. Stored skills are read on every call (they depend on the caller).
    listings: RwLock<Option<Listings>>,
    registry: registry::Registry,
}

/// Where a view's source `i` is.
enum Origin {
    /// `Shared::sources[i]`.
    Fixed(usize),
    /// The store: `self` or a bank's name.
    Stored(String),
}

/// The catalogue one caller sees: the fixed sources, then its own store, then its banks.
pub(crate) struct View {
    pub(crate) catalogue: Catalogue,
    origins: Vec<Origin>,
}

impl View {
    /// The store place (`self` or a bank) source `index` is, if it is one.
    pub(crate) fn place(&self, index: usize) -> Option<&str> {
        match self.origins.get(index) {
            Some(Origin::Stored(place)) => Some(place),
            _ => None,
        }
    }
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
            listings: RwLock::new(None),
            registry,
        }
    }

    /// The fixed sources' listings, read on first use.
    fn fixed(&self) -> Listings {
        if let Ok(guard) = self.listings.read() {
            if let Some(l) = guard.as_ref() {
                return l.clone();
            }
        }
        self.reload_fixed()
    }

    /// Read every fixed source again (after an install, so the new skill is there at once).
    fn reload_fixed(&self) -> Listings {
        let listings: Listings =
            Arc::new(self.sources.iter().map(|s| (s.label(), s.list())).collect());
        // Skipped skill files are the operator's business (stderr), never the model's.
        for w in &Catalogue::merge(listings.as_ref().clone()).warnings {
            tracing::warn!("skills: {w}");
        }
        if let Ok(mut guard) = self.listings.write() {
            *guard = Some(listings.clone());
        }
        listings
    }

    /// The catalogue `cx`'s agent sees (docs/decisions/0037-skill-sources.md).
    pub(crate) async fn view(&self, cx: &ToolContext) -> Result<View, ToolError> {
        self.view_of(self.fixed(), cx).await
    }

    /// As [`Shared::view`], the directories read again first.
    pub(crate) async fn reload(&self, cx: &ToolContext) -> Result<View, ToolError> {
        self.view_of(self.reload_fixed(), cx).await
    }

    async fn view_of(&self, fixed: Listings, cx: &ToolContext) -> Result<View, ToolError> {
        let mut listings = fixed.as_ref().clone();
        let mut origins: Vec<Origin> = (0..listings.len()).map(Origin::Fixed).collect();
        let n_fixed = listings.len();
        if let Some(stored) = &self.settings.stored {
            let access = stored.access(cx).await?;
            for p in stored.listings(&access).await? {
                listings.push((p.label, p.listing));
                origins.push(Origin::Stored(p.place));
            }
        }
        let catalogue = Catalogue::merge(listings);
        // The directories' own warnings went to stderr when they were read; what the store
        // adds (a stored skill hidden by another) is logged, not repeated on every call.
        for s in catalogue
            .shadowed
            .iter()
            .filter(|s| s.entry.source >= n_fixed)
        {
            tracing::debug!(
                "skills: `{}` from {} is hidden by `{}` from {}",
                s.entry.meta.name,
                s.entry.origin(),
                s.by.meta.name,
                s.by.origin()
            );
        }
        Ok(View { catalogue, origins })
    }

    /// The body of `entry`, from the source that listed it in `view`.
    pub(crate) async fn body(
        &self,
        view: &View,
        entry: &Entry,
        cx: &ToolContext,
    ) -> Result<String, ToolError> {
        let gone = || ToolError::failed("the skill's source is gone");
        match view.origins.get(entry.source) {
            Some(Origin::Fixed(i)) => self.sources.get(*i).ok_or_else(gone)?.body(&entry.meta),
            Some(Origin::Stored(place)) => {
                let stored = self.settings.stored.as_ref().ok_or_else(gone)?;
                stored.body(cx, place, &entry.meta).await
            }
            None => Err(gone()),
        }
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
        let mut tools: Vec<Arc<dyn Tool>> = vec![
            Arc::new(local::SkillList::new(self.shared.clone())),
            Arc::new(local::SkillSearch::new(self.shared.clone())),
            Arc::new(local::SkillShow::new(self.shared.clone())),
            Arc::new(install::FindSkills::new(self.shared.clone())),
            Arc::new(install::InstallSkill::new(self.shared.clone())),
        ];
        // Saving needs somewhere to save to.
        if self.shared.settings.stored.is_some() {
            tools.push(Arc::new(save::SkillSave::new(self.shared.clone())));
        }
        tools
    }
}
