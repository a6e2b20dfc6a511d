//! `memory_banks:` which agents share which memory bank.

use serde::{Deserialize, Serialize};

/// `memory_banks.NAME`: the agents that may read and write one shared bank. Write implies read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryBankConfig {
    #[serde(default)]
    pub read: Vec<String>,
    #[serde(default)]
    pub write: Vec<String>,
}
