//! `agents:` and `presets:`: who runs, with which model, extensions, grants and workers.

use crate::grants::Grants;
use serde::{Deserialize, Serialize};

/// `agents[]`: one agent (its model, prompt, tools and grants); the first entry is the default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// The agent's name, chosen with `--agent` and named in messages, schedules and memory grants.
    pub name: String,
    /// A name under `backends:`; unset: the preset's, else the first configured backend, else one
    /// discovered from the environment.
    #[serde(default)]
    pub backend: Option<String>,
    /// The model to ask; unset: the preset's, else the first model its backend lists.
    #[serde(default)]
    pub model: Option<String>,
    /// The system prompt; unset: the built-in default prompt.
    #[serde(default)]
    pub system_prompt: Option<String>,
    /// Model turns one run may take, shared by the agent's whole tree of children (default 25).
    #[serde(default)]
    pub max_iterations: Option<u32>,
    /// What the model is shown of each tool (a name under `tool_profiles:`); unset: the preset's,
    /// else full definitions.
    #[serde(default)]
    pub tool_profile: Option<String>,
    /// A name under `presets:`: its fields apply where this agent sets none, and its
    /// `system_prompt` is appended to this agent's.
    #[serde(default)]
    pub preset: Option<String>,
    /// Which extensions' tools this agent gets (`extensions.enable` / `extensions.disable`).
    #[serde(default)]
    pub extensions: ExtensionsConfig,
    /// Overlay, kind by kind, over the resolved tool policies.
    #[serde(default)]
    pub grants: Grants,
    /// Worker templates `spawn_worker` can start by name (`workers[]`).
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
    /// How deep children may nest below the agent when `max_depth` is unset.
    pub const DEFAULT_MAX_DEPTH: u32 = 3;
    /// Children one agent of a tree may run at once when `max_concurrent_children` is unset.
    pub const DEFAULT_MAX_CONCURRENT_CHILDREN: u32 = 3;
}

/// `agents[].extensions`: which extensions are active for one agent; every one by default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtensionsConfig {
    /// When non-empty, only these extensions are active.
    #[serde(default)]
    pub enable: Vec<String>,
    /// Extensions never active for this agent; wins over `enable`.
    #[serde(default)]
    pub disable: Vec<String>,
}

impl ExtensionsConfig {
    /// Whether `extension` is active: listed in `enable` (or `enable` empty) and not in `disable`.
    pub fn is_enabled(&self, extension: &str) -> bool {
        (self.enable.is_empty() || self.enable.iter().any(|e| e == extension))
            && !self.disable.iter().any(|e| e == extension)
    }
}

/// `agents[].workers[]`: a named child template `spawn_worker` starts, within its parent's grants.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerConfig {
    /// The template's name, as `spawn_worker` takes it.
    pub name: String,
    /// The worker's system prompt; unset: the parent's.
    #[serde(default)]
    pub system_prompt: Option<String>,
    /// The tools the worker may use, a subset of its parent's; empty: all of the parent's.
    #[serde(default)]
    pub tools: Vec<String>,
    /// A model of the worker's backend; unset: the parent's model.
    #[serde(default)]
    pub model: Option<String>,
    /// A name under `backends:`; unset: the parent's backend.
    #[serde(default)]
    pub backend: Option<String>,
    /// Model turns asked for the worker; whatever it says, each turn comes out of the tree's one
    /// pool.
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
    /// The model to use; applied only where the entry's backend is this preset's (or it names
    /// none).
    #[serde(default)]
    pub model: Option<String>,
    /// A name under `backends:`.
    #[serde(default)]
    pub backend: Option<String>,
    /// A name under `tool_profiles:`.
    #[serde(default)]
    pub tool_profile: Option<String>,
    /// Model turns for an agent; a spawned child still draws on its tree's one pool.
    #[serde(default)]
    pub max_iterations: Option<u32>,
    /// Appended (after a blank line) to the system prompt of whatever uses the preset.
    #[serde(default)]
    pub system_prompt: Option<String>,
}
