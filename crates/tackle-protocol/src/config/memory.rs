//! `memory_banks:` which agents share which memory bank.

use serde::{Deserialize, Serialize};

/// `memory_banks.NAME`: the agents that may read and write one shared bank. Write implies read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryBankConfig {
    /// Agents that may recall from the bank and use its skills.
    #[serde(default)]
    pub read: Vec<String>,
    /// Agents that may also remember into it and `skill_save` there (write implies read).
    #[serde(default)]
    pub write: Vec<String>,
}
