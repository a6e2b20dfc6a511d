//! The `memory` extension: `remember`, `recall`, `list_memory_banks` (an agent's own memory
//! and the shared banks granted to it), `memory` (the workspace's markdown notes) and
//! `longterm_memory` (per-agent entries with categories, importance and pins). All Low risk,
//! no approval.
//!
//! Bank access is decided by the store on every call, from the calling agent's grants
//! (`memory_banks:` in config plus those stored by `tackle memory grant`): a tool passes the
//! bank name the model gave, and the store refuses any it was not granted. Workspace notes
//! are read through `cx.host()` like any other file.

pub(crate) mod banks;
#[cfg(test)]
mod contract_tests;
mod longterm;
mod notes;

pub use banks::{ListMemoryBanks, Recall, Remember};
pub use longterm::LongtermMemory;
pub use notes::WorkspaceNotes;

use std::collections::BTreeMap;
use std::sync::Arc;
use tackle_protocol::config::MemoryBankConfig;
use tackle_protocol::{Decision, Extension, Tool, ToolError};
use tackle_store::{Store, StoreError};

/// The extension's name, for `agents[].extensions`.
pub const NAME: &str = "memory";

/// What the memory tools need: the state store and the operator's bank grants.
#[derive(Clone)]
pub struct MemorySettings {
    /// The state store the entries live in.
    pub store: Store,
    /// The operator's memory-bank grants (`memory_banks:`), by bank name.
    pub banks: BTreeMap<String, MemoryBankConfig>,
}

struct MemoryExtension {
    settings: Arc<MemorySettings>,
}

impl Extension for MemoryExtension {
    fn name(&self) -> &str {
        NAME
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let s = &self.settings;
        vec![
            Arc::new(Remember(Arc::clone(s))),
            Arc::new(Recall(Arc::clone(s))),
            Arc::new(ListMemoryBanks(Arc::clone(s))),
            Arc::new(WorkspaceNotes),
            Arc::new(LongtermMemory(Arc::clone(s))),
        ]
    }
}

/// The `memory` extension: its tools share `settings`.
pub fn extension(settings: MemorySettings) -> Arc<dyn Extension> {
    Arc::new(MemoryExtension {
        settings: Arc::new(settings),
    })
}

/// The store's answer in the kinds the model acts on.
pub(crate) fn store_error(e: StoreError) -> ToolError {
    match e {
        StoreError::UnknownBank { .. } => ToolError::not_found(e.to_string()),
        StoreError::BankReadOnly { ref name } => ToolError::denied(Decision::deny(
            format!("memory_banks.{name}.write"),
            e.to_string(),
        )),
        StoreError::InvalidMemory(m) => ToolError::invalid_arguments(m),
        StoreError::InvalidBankName { .. } | StoreError::InvalidId(_) => {
            ToolError::invalid_arguments(e.to_string())
        }
        other => ToolError::failed(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn settings(banks: &[(&str, &[&str], &[&str])]) -> MemorySettings {
        MemorySettings {
            store: Store::open_in_memory().unwrap(),
            banks: banks
                .iter()
                .map(|(n, r, w)| {
                    (
                        n.to_string(),
                        MemoryBankConfig {
                            read: r.iter().map(|s| s.to_string()).collect(),
                            write: w.iter().map(|s| s.to_string()).collect(),
                        },
                    )
                })
                .collect(),
        }
    }

    #[test]
    fn the_extension_lists_its_five_tools_low_risk_without_approval() {
        let ext = extension(settings(&[]));
        let names: Vec<String> = ext.tools().iter().map(|t| t.spec().name).collect();
        assert_eq!(
            names,
            [
                "remember",
                "recall",
                "list_memory_banks",
                "memory",
                "longterm_memory"
            ]
        );
        for t in ext.tools() {
            let spec = t.spec();
            assert_eq!(spec.owner, "memory");
            assert_eq!(spec.risk, tackle_protocol::Risk::Low, "{}", spec.name);
            assert_eq!(
                spec.approval,
                tackle_protocol::ApprovalMode::Never,
                "{}",
                spec.name
            );
            assert_eq!(
                spec.parameters["additionalProperties"],
                serde_json::Value::Bool(false)
            );
        }
    }
}
