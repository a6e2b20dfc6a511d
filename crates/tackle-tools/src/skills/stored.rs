//! Skills kept in the state store: the calling agent's own, then those of each bank granted to
//! it, read per call because they depend on who calls (docs/decisions/0037-skill-sources.md).
//!
//! A skill bank is a memory bank: the same grants (`memory_banks:` and `tackle memory grant`)
//! and the same access, narrowed to every agent above the caller, so there is one grant model to
//! reason about. The store resolves the bank through that access on every call; naming a bank
//! the agent was not granted finds nothing.

use super::catalogue::{SkillMeta, SourceListing};
use super::file::ParsedSkill;
use crate::memory::banks::access_for;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use tackle_protocol::config::MemoryBankConfig;
use tackle_protocol::{ToolContext, ToolError};
use tackle_store::{MemoryAccess, Store, StoredSkill, SELF_BANK};

/// Where stored skills live and who may reach which bank.
#[derive(Clone)]
pub struct StoredSkills {
    /// The state store the skills live in.
    pub store: Store,
    /// The config's `memory_banks:` (stored grants are read from the store).
    pub banks: BTreeMap<String, MemoryBankConfig>,
}

/// The front matter fields kept beside a stored skill's name and description.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct Meta {
    #[serde(default)]
    pub triggers: Vec<String>,
    #[serde(default)]
    pub requires_tools: Vec<String>,
    #[serde(default)]
    pub depends: Vec<String>,
    #[serde(default)]
    pub os: Vec<String>,
}

impl Meta {
    pub(crate) fn of(p: &ParsedSkill) -> Self {
        Self {
            triggers: p.triggers.clone(),
            requires_tools: p.requires_tools.clone(),
            depends: p.depends.clone(),
            os: p.os.clone(),
        }
    }
}

/// One place's skills as a catalogue source listing.
pub(crate) struct PlaceListing {
    /// `self` or the bank's name.
    pub place: String,
    pub label: String,
    pub listing: SourceListing,
}

/// How a place is named to people: `own store (agent NAME)` or `bank NAME`.
pub(crate) fn label(place: &str, agent: &str) -> String {
    if place == SELF_BANK {
        format!("own store (agent {agent})")
    } else {
        format!("bank {place}")
    }
}

impl StoredSkills {
    /// The caller's access: its own store and granted banks, narrowed to its ancestors'.
    pub(crate) async fn access(&self, cx: &ToolContext) -> Result<MemoryAccess, ToolError> {
        access_for(&self.store, &self.banks, cx).await
    }

    /// Every place `access` may read, in precedence order (own, then banks by name), each
    /// with its skills; places without skills are left out.
    pub(crate) async fn listings(
        &self,
        access: &MemoryAccess,
    ) -> Result<Vec<PlaceListing>, ToolError> {
        let skills = self
            .store
            .stored_skills(access)
            .await
            .map_err(crate::memory::store_error)?;
        let mut out: Vec<PlaceListing> = Vec::new();
        for s in skills {
            if out.last().is_none_or(|last| last.place != s.place) {
                out.push(PlaceListing {
                    label: label(&s.place, access.agent()),
                    place: s.place.clone(),
                    listing: SourceListing::default(),
                });
            }
            let Some(last) = out.last_mut() else { break };
            let name = s.name.clone();
            match to_meta(s) {
                Some(meta) => last.listing.skills.push(meta),
                None => last.listing.warnings.push(format!(
                    "skill `{}` in {}: skipped, its stored fields do not read",
                    tackle_protocol::text::preview(&name, 100),
                    last.label
                )),
            }
        }
        Ok(out)
    }

    /// The body of `skill`, kept in `place` under its name key (its `entry`).
    pub(crate) async fn body(
        &self,
        cx: &ToolContext,
        place: &str,
        skill: &SkillMeta,
    ) -> Result<String, ToolError> {
        let access = self.access(cx).await?;
        self.store
            .stored_skill_body(&access, Some(place), &skill.entry)
            .await
            .map_err(crate::memory::store_error)?
            .ok_or_else(|| {
                ToolError::not_found(format!(
                    "skill `{}` is no longer in {}",
                    skill.name,
                    label(place, access.agent())
                ))
            })
    }
}

/// A stored row as the catalogue lists it: no locator (the place is the whole origin), and
/// its name key as the name its place gives it. `None` when its fields cannot be read.
fn to_meta(s: StoredSkill) -> Option<SkillMeta> {
    // Only `skill_save` writes the column; one that does not read is skipped rather than
    // listed without its `requires_tools`.
    let meta: Meta = serde_json::from_str(&s.meta).ok()?;
    Some(SkillMeta {
        name: s.name,
        description: s.description,
        triggers: meta.triggers,
        requires_tools: meta.requires_tools,
        depends: meta.depends,
        os: meta.os,
        locator: String::new(),
        entry: s.key,
    })
}
