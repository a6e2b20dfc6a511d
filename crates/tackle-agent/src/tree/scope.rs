//! Which tools a child may call: always a subset of its parent's. Requested tools outside
//! that subset are refused by name (`invalid_arguments`), never silently dropped, so the model
//! learns what the child cannot do.

use crate::Registry;
use std::collections::BTreeSet;
use tackle_protocol::ToolError;

/// `base` (a template's or peer's own list, `None` = the parent's) ∩ the parent's scope,
/// narrowed to `requested` when given; an entry of `requested` outside it is an error
/// naming it and what is available.
pub fn child_tools(
    who: &str,
    parent: &BTreeSet<String>,
    base: Option<&[String]>,
    requested: Option<&[String]>,
) -> Result<BTreeSet<String>, ToolError> {
    let available: BTreeSet<String> = match base {
        Some(list) if !list.is_empty() => list
            .iter()
            .filter(|t| parent.contains(t.as_str()))
            .cloned()
            .collect(),
        _ => parent.clone(),
    };
    let Some(requested) = requested else {
        return Ok(available);
    };
    let extra: Vec<&str> = requested
        .iter()
        .filter(|t| !available.contains(t.as_str()))
        .map(String::as_str)
        .collect();
    if !extra.is_empty() {
        let names = |it: &mut dyn Iterator<Item = &str>| {
            it.map(|t| format!("`{t}`")).collect::<Vec<_>>().join(", ")
        };
        return Err(ToolError::invalid_arguments(format!(
            "`tools`: {} {} not available to `{who}`; it may use only {}",
            names(&mut extra.iter().copied()),
            if extra.len() == 1 { "is" } else { "are" },
            if available.is_empty() {
                "no tools".to_string()
            } else {
                names(&mut available.iter().map(String::as_str))
            }
        )));
    }
    Ok(requested.iter().cloned().collect())
}

/// `tools` without those that start children (their spec's `spawns_children`). A background
/// task and a `delegate` child get none of them (neither nests); the tree's depth limit bounds
/// the rest. A name the registry does not know is dropped too: it could not be called, and
/// what it would be once registered cannot be told.
pub fn without_spawning(tools: BTreeSet<String>, registry: &Registry) -> BTreeSet<String> {
    tools
        .into_iter()
        .filter(|t| registry.get(t).is_some_and(|e| !e.spec.spawns_children))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    fn list(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_template_tool_the_parent_lacks_is_dropped_from_the_base() {
        let parent = set(&["read_file", "shell"]);
        let got = child_tools("w", &parent, Some(&list(&["read_file", "web_fetch"])), None);
        assert_eq!(got.ok(), Some(set(&["read_file"])));
    }

    #[test]
    fn a_requested_tool_outside_the_template_is_refused_by_name() {
        let parent = set(&["read_file", "shell", "web_fetch"]);
        let err = child_tools(
            "researcher",
            &parent,
            Some(&list(&["read_file", "web_fetch"])),
            Some(&list(&["read_file", "shell"])),
        )
        .err()
        .map(|e| (e.kind, e.message));
        let (kind, message) = err.unwrap_or_else(|| panic!("`shell` was not refused"));
        assert_eq!(kind, tackle_protocol::ErrorKind::InvalidArguments);
        assert!(message.contains("`shell`"), "{message}");
    }

    #[test]
    fn a_requested_subset_narrows() {
        let parent = set(&["read_file", "shell"]);
        let got = child_tools("w", &parent, None, Some(&list(&["shell"])));
        assert_eq!(got.ok(), Some(set(&["shell"])));
    }
}
