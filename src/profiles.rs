//! The selected agent's tool profile, compiled from `tool_profiles:` (checked at load).

use anyhow::Result;
use tackle_agent::ToolProfile;
use tackle_protocol::config::{AgentConfig, Config};

/// The profile `agent.tool_profile` names, or everything in full.
pub fn for_agent(config: &Config, agent: Option<&AgentConfig>) -> Result<ToolProfile> {
    let Some(name) = agent.and_then(|a| a.tool_profile.as_deref()) else {
        return Ok(ToolProfile::full());
    };
    // The load check already refused unknown names; this keeps the error if it is bypassed.
    let profile = config
        .tool_profiles
        .get(name)
        .ok_or_else(|| anyhow::anyhow!("no profile named `{name}` under `tool_profiles:`"))?;
    Ok(ToolProfile::compile(name, profile)?)
}
