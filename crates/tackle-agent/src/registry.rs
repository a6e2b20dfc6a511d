//! The tool registry: every tool the agent can call, in a deterministic order.
//!
//! Built-in extensions are checked strictly when the registry is built (a duplicate or
//! invalid name is a bug and an error). Extensions whose tools change at run time (MCP
//! servers) are re-read by [`Registry::refresh`]; there a clash is refused with a warning and
//! the earlier tool keeps its name, never silently overwritten.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};
use tackle_protocol::{Extension, NameError, Tool, ToolCatalog, ToolName, ToolPolicy, ToolSpec};

/// Why a set of extensions cannot make a registry (checked at start-up; a refresh keeps the
/// earlier tool and warns instead).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// Two extensions offer a tool of the same name.
    #[error("tool `{name}` is registered twice (by `{first}` and by `{second}`)")]
    Duplicate {
        /// The tool name both offer.
        name: String,
        /// The extension registered first.
        first: String,
        /// The extension registered second.
        second: String,
    },
    /// An extension offers a tool whose name is not a valid tool name.
    #[error("extension `{extension}`: {source}")]
    InvalidName {
        /// The extension.
        extension: String,
        /// What is wrong with the name.
        source: NameError,
    },
}

/// A registered tool with its spec read once.
pub struct Entry {
    /// The tool itself.
    pub tool: Arc<dyn Tool>,
    /// Its spec, read once at registration (or refresh).
    pub spec: ToolSpec,
    /// The policy it asks for when the operator sets none.
    pub default_policy: ToolPolicy,
    /// Shared with the entry this one replaced when the spec is the same (see `collect`).
    validator: Arc<OnceLock<Result<jsonschema::Validator, InvalidSchema>>>,
}

/// A tool whose argument schema is not a JSON Schema: none of its calls can be validated, so
/// none runs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tool `{tool}` has an invalid schema: {why}")]
pub struct InvalidSchema {
    /// The tool.
    pub tool: String,
    /// The schema compiler's complaint.
    pub why: String,
}

impl Entry {
    fn new(tool: Arc<dyn Tool>) -> Self {
        Self {
            spec: tool.spec(),
            default_policy: tool.default_policy(),
            tool,
            validator: Arc::default(),
        }
    }

    /// The compiled argument schema (compiled on first use, then cached).
    pub fn validator(&self) -> Result<&jsonschema::Validator, InvalidSchema> {
        self.validator
            .get_or_init(|| {
                jsonschema::validator_for(&self.spec.parameters).map_err(|e| InvalidSchema {
                    tool: self.spec.name.clone(),
                    why: e.to_string(),
                })
            })
            .as_ref()
            .map_err(Clone::clone)
    }
}

#[derive(Default)]
struct Snapshot {
    entries: Vec<Arc<Entry>>,
    index: HashMap<String, usize>,
}

/// Every tool of every enabled extension, looked up by exact name; refreshed as MCP servers
/// come and go, without blocking lookups.
pub struct Registry {
    extensions: Vec<Arc<dyn Extension>>,
    snapshot: RwLock<Arc<Snapshot>>,
}

impl Registry {
    /// Build from extensions in order; disabled extensions should not be passed in.
    pub fn new(extensions: Vec<Arc<dyn Extension>>) -> Result<Self, RegistryError> {
        let snapshot = collect(&extensions, true, None)?;
        Ok(Self {
            extensions,
            snapshot: RwLock::new(Arc::new(snapshot)),
        })
    }

    /// Re-read every extension's current tools (MCP servers come and go).
    pub fn refresh(&self) {
        let previous = self.current();
        let Ok(snapshot) = collect(&self.extensions, false, Some(&previous)) else {
            return; // unreachable in lenient mode; keep the old snapshot rather than panic
        };
        if let Ok(mut guard) = self.snapshot.write() {
            *guard = Arc::new(snapshot);
        }
    }

    fn current(&self) -> Arc<Snapshot> {
        match self.snapshot.read() {
            Ok(guard) => Arc::clone(&guard),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// Exact-name lookup.
    pub fn get(&self, name: &str) -> Option<Arc<Entry>> {
        let snap = self.current();
        snap.index
            .get(name)
            .and_then(|&i| snap.entries.get(i))
            .cloned()
    }

    /// Every tool, in registration order.
    pub fn entries(&self) -> Vec<Arc<Entry>> {
        self.current().entries.clone()
    }

    /// Every tool's spec, in registration order (copied: a snapshot, not a live view).
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.current()
            .entries
            .iter()
            .map(|e| e.spec.clone())
            .collect()
    }

    /// The names of every tool, without copying their specs.
    pub fn names(&self) -> Vec<String> {
        self.current()
            .entries
            .iter()
            .map(|e| e.spec.name.clone())
            .collect()
    }

    /// Names close to `name`, best first, for "did you mean".
    pub fn suggestions(&self, name: &str) -> Vec<String> {
        let snap = self.current();
        tackle_protocol::suggest::nearest(
            name,
            snap.entries.iter().map(|e| e.spec.name.as_str()),
            0.75,
        )
    }

    /// An extension's explanation for a name it would own but cannot serve now.
    pub fn unavailable(&self, name: &str) -> Option<String> {
        self.extensions.iter().find_map(|e| e.unavailable(name))
    }
}

impl ToolCatalog for Registry {
    fn spec(&self, name: &str) -> Option<ToolSpec> {
        self.get(name).map(|e| e.spec.clone())
    }

    fn suggest(&self, name: &str) -> Vec<String> {
        self.suggestions(name)
    }
}

/// Every extension's tools now. An entry of `previous` whose tool is unchanged (the same
/// object, or an equal spec) is kept as it is, with its compiled validator: the loop refreshes
/// before every model turn, and recompiling ~50 schemas each time is wasted work.
fn collect(
    extensions: &[Arc<dyn Extension>],
    strict: bool,
    previous: Option<&Snapshot>,
) -> Result<Snapshot, RegistryError> {
    let mut snap = Snapshot::default();
    for ext in extensions {
        for tool in ext.tools() {
            let entry = reuse_or_new(previous, tool);
            let name = entry.spec.name.clone();
            if let Err(source) = ToolName::parse(&name) {
                if strict {
                    return Err(RegistryError::InvalidName {
                        extension: ext.name().to_string(),
                        source,
                    });
                }
                tracing::warn!(extension = ext.name(), "skipping tool: {source}");
                continue;
            }
            if let Some(&i) = snap.index.get(&name) {
                let first = snap
                    .entries
                    .get(i)
                    .map(|e| e.spec.owner.clone())
                    .unwrap_or_default();
                if strict {
                    return Err(RegistryError::Duplicate {
                        name,
                        first,
                        second: ext.name().to_string(),
                    });
                }
                tracing::warn!(
                    "tool `{name}` from `{}` clashes with the one from `{first}`; keeping the first",
                    ext.name()
                );
                continue;
            }
            snap.index.insert(name, snap.entries.len());
            snap.entries.push(entry);
        }
    }
    Ok(snap)
}

fn reuse_or_new(previous: Option<&Snapshot>, tool: Arc<dyn Tool>) -> Arc<Entry> {
    let same_object = previous.and_then(|p| {
        p.entries
            .iter()
            .find(|e| Arc::ptr_eq(&e.tool, &tool))
            .cloned()
    });
    if let Some(entry) = same_object {
        return entry;
    }
    let mut fresh = Entry::new(tool);
    // A new object with the same schema (an MCP server's tools after a re-list): the new
    // tool, the old compiled validator.
    let old = previous.and_then(|p| {
        p.index
            .get(&fresh.spec.name)
            .and_then(|&i| p.entries.get(i))
    });
    if let Some(old) = old.filter(|o| o.spec.parameters == fresh.spec.parameters) {
        fresh.validator = Arc::clone(&old.validator);
    }
    Arc::new(fresh)
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_trait::async_trait;
    use serde_json::Value;
    use tackle_protocol::{ToolContext, ToolError, ToolOutput};

    struct Named(&'static str);

    #[async_trait]
    impl Tool for Named {
        fn spec(&self) -> ToolSpec {
            ToolSpec::new(self.0, "test tool", "test")
        }
        async fn call(&self, _: Value, _: &ToolContext) -> Result<ToolOutput, ToolError> {
            Ok(ToolOutput::text(self.0))
        }
    }

    struct Ext(&'static str, Vec<&'static str>);

    impl Extension for Ext {
        fn name(&self) -> &str {
            self.0
        }
        fn tools(&self) -> Vec<Arc<dyn Tool>> {
            self.1
                .iter()
                .map(|n| Arc::new(Named(n)) as Arc<dyn Tool>)
                .collect()
        }
    }

    fn ext(name: &'static str, tools: Vec<&'static str>) -> Arc<dyn Extension> {
        Arc::new(Ext(name, tools))
    }

    #[test]
    fn duplicate_names_are_refused_naming_both_owners() {
        let err = Registry::new(vec![ext("a", vec!["x"]), ext("b", vec!["x"])])
            .err()
            .expect("duplicate must fail");
        assert_eq!(
            err,
            RegistryError::Duplicate {
                name: "x".into(),
                first: "test".into(),
                second: "b".into()
            }
        );
    }

    #[test]
    fn names_invalid_for_providers_are_refused() {
        assert!(matches!(
            Registry::new(vec![ext("a", vec!["bad.name"])]),
            Err(RegistryError::InvalidName { .. })
        ));
    }

    #[test]
    fn order_is_registration_order() {
        let r =
            Registry::new(vec![ext("a", vec!["zeta", "alpha"]), ext("b", vec!["mid"])]).unwrap();
        let names: Vec<String> = r.specs().into_iter().map(|s| s.name).collect();
        assert_eq!(names, ["zeta", "alpha", "mid"]);
    }

    #[test]
    fn lookup_is_exact() {
        let r = Registry::new(vec![ext("a", vec!["read_file"])]).unwrap();
        assert!(r.get("read_file").is_some());
        assert!(r.get("Read_File").is_none());
        assert!(r.get("read_fil").is_none());
    }

    #[test]
    fn unknown_names_get_close_suggestions() {
        let r = Registry::new(vec![ext("a", vec!["read_file", "write_file", "get_time"])]).unwrap();
        let s = r.suggestions("read_files");
        assert_eq!(s.first().map(String::as_str), Some("read_file"));
        assert!(!r.suggestions("get_tme").is_empty());
        assert!(r.suggestions("zzzzzz").is_empty());
    }

    struct Dynamic(std::sync::Mutex<Vec<&'static str>>);

    impl Extension for Dynamic {
        fn name(&self) -> &str {
            "dyn"
        }
        fn tools(&self) -> Vec<Arc<dyn Tool>> {
            let names = self.0.lock().map(|g| g.clone()).unwrap_or_default();
            names
                .into_iter()
                .map(|n| Arc::new(Named(n)) as Arc<dyn Tool>)
                .collect()
        }
    }

    #[test]
    fn refresh_picks_up_new_tools_and_never_overwrites_an_existing_name() {
        let dynamic = Arc::new(Dynamic(std::sync::Mutex::new(vec![])));
        let r = Registry::new(vec![ext("a", vec!["x"]), dynamic.clone()]).unwrap();
        dynamic.0.lock().unwrap().extend(["x", "srv__y"]);
        r.refresh();
        let names: Vec<String> = r.specs().into_iter().map(|s| s.name).collect();
        assert_eq!(names, ["x", "srv__y"]);
        assert_eq!(r.get("x").unwrap().spec.owner, "test");
        dynamic.0.lock().unwrap().clear();
        r.refresh();
        assert!(r.get("srv__y").is_none());
    }

    #[test]
    fn compiled_validators_survive_a_refresh() {
        let dynamic = Arc::new(Dynamic(std::sync::Mutex::new(vec!["srv__y"])));
        let r = Registry::new(vec![ext("a", vec!["x"]), dynamic.clone()]).unwrap();
        let before: Vec<*const jsonschema::Validator> = ["x", "srv__y"]
            .iter()
            .map(|n| r.get(n).unwrap().validator().unwrap() as *const _)
            .collect();
        r.refresh();
        r.refresh();
        let after: Vec<*const jsonschema::Validator> = ["x", "srv__y"]
            .iter()
            .map(|n| r.get(n).unwrap().validator().unwrap() as *const _)
            .collect();
        assert_eq!(before, after, "a refresh recompiled an unchanged schema");
    }
}
