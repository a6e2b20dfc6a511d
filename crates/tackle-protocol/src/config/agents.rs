//! `agents:` and `presets:`: who runs, with which model, extensions, grants and workers.

use crate::grants::Grants;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    pub name: String,
    #[serde(default)]
    pub backend: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub system_prompt: Option<String>,
    #[serde(default)]
    pub max_iterations: Option<u32>,
    #[serde(default)]
    pub tool_profile: Option<String>,
    /// A name under `presets:`: its fields apply where this agent sets none, and its
    /// `system_prompt` is appended to this agent's.
    #[serde(default)]
    pub preset: Option<String>,
    #[serde(default)]
    pub extensions: ExtensionsConfig,
    /// Overlay, kind by kind, over the resolved tool policies.
    #[serde(default)]
    pub grants: Grants,
    #[serde(default)]
    pub workers: Vec<WorkerConfig>,
    /// How deep `spawn_agent` / `spawn_worker` / `delegate` may nest below this agent
    /// (default [`AgentConfig::DEFAULT_MAX_DEPTH`]).
    #[serde(default)]
    pub max_depth: Option<u32>,
    /// How many children one agent of this tree may run at once (default
    /// [`AgentConfig::DEFAULT_MAX_CONCURRENT_CHILDREN`]).
    #[serde(default)]
    pub max_concurrent_children: Option<u32>,
    /// Show this agent its pinned `longterm_memory` entries at the start of each run, inside
    /// a block labelled as remembered data (never as instructions). Off by default.
    #[serde(default)]
    pub inject_pinned_memory: bool,
    /// The other agents this one may plant schedules for (default none). Such a schedule
    /// fires with the grants of both agents intersected, and planting it always asks.
    #[serde(default)]
    pub schedule_for: Vec<String>,
}

impl AgentConfig {
    pub const DEFAULT_MAX_DEPTH: u32 = 3;
    pub const DEFAULT_MAX_CONCURRENT_CHILDREN: u32 = 3;
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtensionsConfig {
    /// When non-empty, only these extensions are active.
    #[serde(default)]
    pub enable: Vec<String>,
    #[serde(default)]
    pub disable: Vec<String>,
}

impl ExtensionsConfig {
    pub fn is_enabled(&self, extension: &str) -> bool {
        (self.enable.is_empty() || self.enable.iter().any(|e| e == extension))
            && !self.disable.iter().any(|e| e == extension)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerConfig {
    pub name: String,
    #[serde(default)]
    pub system_prompt: Option<String>,
    #[serde(default)]
    pub tools: Vec<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub backend: Option<String>,
    #[serde(default)]
    pub max_iterations: Option<u32>,
    /// What the worker's model is shown of each tool (a name under `tool_profiles:`);
    /// unset: its parent's profile.
    #[serde(default)]
    pub tool_profile: Option<String>,
    /// A name under `presets:`: its fields apply where this template sets none, and its
    /// `system_prompt` is appended to the worker's.
    #[serde(default)]
    pub preset: Option<String>,
}

/// `presets.NAME`: what an agent, a worker template or a spawned child takes from the preset
/// where it sets nothing itself. Every key is optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PresetConfig {
    #[serde(default)]
    pub model: Option<String>,
    /// A name under `backends:`.
    #[serde(default)]
    pub backend: Option<String>,
    /// A name under `tool_profiles:`.
    #[serde(default)]
    pub tool_profile: Option<String>,
    #[serde(default)]
    pub max_iterations: Option<u32>,
    /// Appended (after a blank line) to the system prompt of whatever uses the preset.
    #[serde(default)]
    pub system_prompt: Option<String>,
}
