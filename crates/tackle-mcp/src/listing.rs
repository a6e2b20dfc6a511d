//! What `tools/list` says about each tool beyond its schema: a title and the MCP annotations
//! (derived from the tool's risk and approval), and the list cut into pages.

use crate::naming;
use serde_json::{json, Map, Value};
use tackle_protocol::{ApprovalMode, Risk, ToolSpec};

/// Tools per `tools/list` page.
pub(crate) const PAGE_SIZE: usize = 100;

/// The owner of the network tools (`web_fetch`, `http_request`, `web_search`).
const WEB_OWNER: &str = "web";

/// The `title` and `annotations` of a tool, as the MCP tool object carries them.
///
/// - `readOnlyHint`: the tool is Low risk and never needs approval (it reads, it does not
///   change anything).
/// - `destructiveHint` (meaningful only when not read-only): `true` for High risk tools and
///   tools that always need approval; otherwise left out. A Medium tool may well overwrite
///   (`write_file`), and its spec does not say whether it does, so no "only additive" claim is
///   made: the protocol's default for an absent hint is `true`.
/// - `openWorldHint`: the tool reaches beyond this machine: the network tools (owner `web`)
///   and tools passed through from another MCP server (`passes_through`); `false` otherwise.
/// - `title`: the name in words (`read_file` → "Read file"; an MCP server's tool
///   `time__get_current_time` → "time: Get current time").
///
/// The hints describe the tool; whether a call runs is still the dispatcher's decision
/// (policy, grants, approval), whatever a client makes of them.
pub(crate) fn annotations(spec: &ToolSpec, passes_through: bool) -> Value {
    let read_only = spec.risk == Risk::Low && spec.approval == ApprovalMode::Never;
    let mut hints = Map::new();
    hints.insert("title".into(), json!(title(spec, passes_through)));
    hints.insert("readOnlyHint".into(), json!(read_only));
    if !read_only && (spec.risk == Risk::High || spec.approval == ApprovalMode::Always) {
        hints.insert("destructiveHint".into(), json!(true));
    }
    hints.insert(
        "openWorldHint".into(),
        json!(passes_through || spec.owner == WEB_OWNER),
    );
    Value::Object(hints)
}

/// A tool's name in words, for `title`.
pub(crate) fn title(spec: &ToolSpec, passes_through: bool) -> String {
    if passes_through {
        if let Some(rest) = spec
            .name
            .strip_prefix(naming::server_prefix(&spec.owner).as_str())
        {
            return format!("{}: {}", spec.owner, words(rest));
        }
    }
    words(&spec.name)
}

/// `get_current_time` → "Get current time".
fn words(name: &str) -> String {
    let spaced: String = name
        .chars()
        .map(|c| if c == '_' || c == '-' { ' ' } else { c })
        .collect();
    let spaced = spaced.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut chars = spaced.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => name.to_string(),
    }
}

/// A `tools/list` cursor that this server did not hand out.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid cursor {0:?}: pass the nextCursor of the previous tools/list page, or none for the first page")]
pub(crate) struct BadCursor(pub String);

/// The page of `items` that `cursor` starts (none: the first page), and the cursor of the
/// next page when there is one.
///
/// A cursor is the offset of the page's first item. When the list changes between pages the
/// offsets shift (an item may be skipped or listed twice); the server announces such
/// changes with `notifications/tools/list_changed`, after which a client lists again.
pub(crate) fn page<'a, T>(
    items: &'a [T],
    cursor: Option<&str>,
    size: usize,
) -> Result<(&'a [T], Option<String>), BadCursor> {
    let start = match cursor {
        None => 0,
        Some(c) => c
            .parse::<usize>()
            .ok()
            .filter(|&n| n <= items.len() && c == n.to_string())
            .ok_or_else(|| BadCursor(c.chars().take(64).collect()))?,
    };
    let end = start.saturating_add(size.max(1)).min(items.len());
    let next = (end < items.len()).then(|| end.to_string());
    Ok((items.get(start..end).unwrap_or_default(), next))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, owner: &str, risk: Risk, approval: ApprovalMode) -> ToolSpec {
        ToolSpec::new(name, "test", owner)
            .risk(risk)
            .approval(approval)
    }

    #[test]
    fn annotations_follow_risk_approval_and_reach() {
        let read = annotations(
            &spec("read_file", "fs", Risk::Low, ApprovalMode::Never),
            false,
        );
        assert_eq!(
            read,
            json!({"title": "Read file", "readOnlyHint": true, "openWorldHint": false})
        );

        let shell = annotations(
            &spec("shell", "core", Risk::High, ApprovalMode::Always),
            false,
        );
        assert_eq!(
            shell,
            json!({"title": "Shell", "readOnlyHint": false, "destructiveHint": true,
                   "openWorldHint": false})
        );

        // Medium and approved unless auto-approved: not read-only, and no claim either way
        // about destruction (the protocol's default, true, stands).
        let write = annotations(
            &spec(
                "write_file",
                "fs",
                Risk::Medium,
                ApprovalMode::UnlessAutoApproved,
            ),
            false,
        );
        assert_eq!(write["readOnlyHint"], false);
        assert!(write.get("destructiveHint").is_none(), "{write}");

        // Low risk but configured to always ask: destructive as far as a client can tell.
        let asked = annotations(
            &spec("calculate", "system", Risk::Low, ApprovalMode::Always),
            false,
        );
        assert_eq!(asked["readOnlyHint"], false);
        assert_eq!(asked["destructiveHint"], true);

        // Low risk but approval unless auto-approved: not claimed read-only.
        let unless = annotations(
            &spec(
                "calculate",
                "system",
                Risk::Low,
                ApprovalMode::UnlessAutoApproved,
            ),
            false,
        );
        assert_eq!(unless["readOnlyHint"], false);
        assert!(unless.get("destructiveHint").is_none());

        let search = annotations(
            &spec("web_search", "web", Risk::Low, ApprovalMode::Never),
            false,
        );
        assert_eq!(search["readOnlyHint"], true);
        assert_eq!(search["openWorldHint"], true);
        let fetch = annotations(
            &spec(
                "web_fetch",
                "web",
                Risk::Medium,
                ApprovalMode::UnlessAutoApproved,
            ),
            false,
        );
        assert_eq!(fetch["openWorldHint"], true);
        assert_eq!(fetch["readOnlyHint"], false);

        let remote = annotations(
            &spec(
                "time__get_current_time",
                "time",
                Risk::Medium,
                ApprovalMode::UnlessAutoApproved,
            ),
            true,
        );
        assert_eq!(remote["openWorldHint"], true);
        assert_eq!(remote["title"], "time: Get current time");
    }

    #[test]
    fn titles_put_names_in_words() {
        let t = |name: &str, owner: &str, through: bool| {
            title(&spec(name, owner, Risk::Low, ApprovalMode::Never), through)
        };
        assert_eq!(t("get_time", "system", false), "Get time");
        assert_eq!(t("describe_tool", "system", false), "Describe tool");
        assert_eq!(t("a-b__c", "system", false), "A b c");
        assert_eq!(t("git", "dev", false), "Git");
        assert_eq!(t("my-server__do_it", "my-server", true), "my-server: Do it");
        // A server name with characters outside the name alphabet: its sanitized prefix.
        assert_eq!(t("my_srv__x", "my.srv", true), "my.srv: X");
        // A passed-through name that does not start with its owner's prefix: the whole name.
        assert_eq!(t("other__x", "time", true), "Other x");
        assert_eq!(t("_", "x", false), "_");
    }

    #[test]
    fn pages_cover_the_list_once_in_order() {
        let items: Vec<u32> = (0..250).collect();
        let (first, next) = page(&items, None, 100).unwrap();
        assert_eq!(first, &items[..100]);
        assert_eq!(next.as_deref(), Some("100"));
        let (second, next) = page(&items, next.as_deref(), 100).unwrap();
        assert_eq!(second, &items[100..200]);
        let (third, next) = page(&items, next.as_deref(), 100).unwrap();
        assert_eq!(third, &items[200..]);
        assert_eq!(next, None, "the last page has no next cursor");

        // Exactly one page: no cursor.
        let (all, next) = page(&items[..100], None, 100).unwrap();
        assert_eq!(all.len(), 100);
        assert_eq!(next, None);

        let empty: [u32; 0] = [];
        assert_eq!(page(&empty, None, 100).unwrap(), (&empty[..], None));
        // The end of the list is a valid (empty) page: the list may have shrunk meanwhile.
        assert_eq!(
            page(&items, Some("250"), 100).unwrap(),
            (&items[250..], None)
        );
        // A zero page size still moves forward.
        assert_eq!(page(&items, None, 0).unwrap().0.len(), 1);
    }

    #[test]
    fn cursors_this_server_never_gave_are_refused() {
        let items: Vec<u32> = (0..10).collect();
        for bad in [
            "",
            "-1",
            "11",
            "+1",
            "01",
            " 1",
            "1.0",
            "abc",
            "99999999999999999999999",
        ] {
            assert!(page(&items, Some(bad), 100).is_err(), "{bad:?} accepted");
        }
        let long = "x".repeat(10_000);
        let err = page(&items, Some(&long), 100).unwrap_err();
        assert!(err.to_string().len() < 300, "the cursor is quoted bounded");
    }
}
